"""The site in Chromium, as a student reads it: the students' pages and a notebook page opened
from disk with the network cut off (the site is static). No console error, every image loads,
every explorer shows its stored figure and readout with the note that the sliders need a kernel,
the formulas are typeset, and every internal link (page and anchor) resolves. The build itself
(offline, warnings as errors) is the ``site`` fixture; the launch links and alt texts:
``tests/test_site.py``."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import harness as H

if H.browser_unavailable_reason() and not H.browser_required():
    pytest.skip(H.browser_unavailable_reason(), allow_module_level=True)

STUDENT_PAGES = ["index.html", "students/index.html", "students/notebooks.html",
                 "students/exercises.html", "students/misconceptions.html"]
NOTEBOOK_PAGE = "notebooks/02_mechanics.html"

#: every image of the page: its source, whether it loaded, its alt text
IMAGES_JS = """() => [...document.images].map(i => ({src: i.currentSrc.slice(0, 60),
    loaded: i.complete && i.naturalWidth > 0, alt: i.alt}))"""
#: each explorer shown from its stored outputs: its figure, readout and note, as displayed
EXPLORERS_JS = """() => [...document.querySelectorAll('.al-explorer')].map(e => {
    const img = e.querySelector('img'), r = e.querySelector('.al-readout'),
          n = e.querySelector('.al-note');
    const shown = (el) => !!el && el.getBoundingClientRect().width > 0
                            && getComputedStyle(el).visibility !== 'hidden';
    return {figure: !!img && img.complete && img.naturalWidth > 100 && shown(img),
            readout: r ? r.innerText.trim() : '', readoutShown: shown(r),
            note: n ? n.innerText : ''};
})"""
#: formulas on the page, and how many MathJax typeset (once it has started)
MATH_JS = """async () => {
    if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
    return [document.querySelectorAll('.math').length,
            document.querySelectorAll('.math mjx-container').length];
}"""
#: the page's links and the ids of its elements
LINKS_JS = "() => [...document.querySelectorAll('a[href]')].map(a => a.href)"
IDS_JS = "() => [...document.querySelectorAll('[id]')].map(e => e.id)"


@pytest.fixture(scope="module")
def pages(chromium, site):
    """Each page opened once: {page: (console errors, images, explorers, links, ids,
    (formulas, typeset))}."""
    out, _ = site
    context = chromium.new_context()
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith("file:") else route.abort())
    seen = {}
    try:
        for name in STUDENT_PAGES + [NOTEBOOK_PAGE]:
            page = context.new_page()
            errors = []
            page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc, e=errors: e.append(str(exc)))
            page.goto((out / name).as_uri(), wait_until="load")
            # 'load' has waited for the page's images and scripts; a lazy image still loading is
            # waited for here (not "networkidle", which timed out after 30 s in some runs under load)
            page.wait_for_function("() => [...document.images].every(i => i.complete)")
            seen[name] = (errors, page.evaluate(IMAGES_JS), page.evaluate(EXPLORERS_JS),
                          page.evaluate(LINKS_JS), page.evaluate(IDS_JS), page.evaluate(MATH_JS))
            page.close()
    finally:
        context.close()
    return seen


@pytest.mark.parametrize("name", STUDENT_PAGES + [NOTEBOOK_PAGE])
def test_no_console_error_and_every_image_loads(pages, name):
    errors, images, *_ = pages[name]
    assert not errors, errors
    assert images or name != NOTEBOOK_PAGE
    assert [i for i in images if not i["loaded"]] == []
    assert all(i["alt"] for i in images), [i["src"] for i in images if not i["alt"]]


def test_the_explorers_show_their_stored_figure_and_readout(pages, site):
    _, _, explorers, *_ = pages[NOTEBOOK_PAGE]
    nb = json.loads((H.ROOT / "notebooks" / "02_mechanics.ipynb").read_text(encoding="utf-8"))
    readouts = ["".join(o["data"]["text/plain"]).strip() for c in nb["cells"]
                if c["cell_type"] == "code" for o in c["outputs"]
                if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert [e["readout"] for e in explorers] == readouts and len(readouts) == 5  # 02 places five explorers
    assert all(e["figure"] and e["readoutShown"] for e in explorers), explorers
    assert all("sliders need a running kernel" in e["note"] for e in explorers)


def test_the_formulas_are_typeset_offline(pages):
    """The notebooks' $...$ maths is typeset by the site's own MathJax (the network is cut)."""
    formulas, typeset = pages[NOTEBOOK_PAGE][5]
    assert formulas >= 10 and typeset == formulas


def test_every_internal_link_resolves(pages, site):
    """A link into the site names a file that exists, and its anchor an element of that page."""
    out, _ = site
    ids_of = {}
    for name, (_, _, _, links, ids, _) in pages.items():
        ids_of[(out / name).resolve()] = set(ids)
        for href in links:
            url = urlsplit(href)
            if url.scheme != "file":
                continue
            target = Path(unquote(url.path))
            assert target.is_file(), f"{name} links to a missing {target}"
            if url.fragment and target.suffix == ".html":
                if target.resolve() not in ids_of:
                    import re

                    ids_of[target.resolve()] = set(re.findall(r'\bid="([^"]+)"',
                                                              target.read_text(encoding="utf-8")))
                assert unquote(url.fragment) in ids_of[target.resolve()], \
                    f"{name} links to {target.name}#{url.fragment}, which has no such anchor"
