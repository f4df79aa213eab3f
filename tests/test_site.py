"""The site (``docs/``, built by ``python -m attention_lab docs``): every notebook a page from
its stored outputs, figures with their descriptions as alt text, explorers as their stored figure
and readout, exercise pages without solutions, launch links to the right file, benchmark tables
from the result files, and warnings that fail the build. The pages in Chromium:
``tests/browser/test_browser_site.py``."""

from __future__ import annotations

import html
import json
import re
import runpy
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import _docs

from attention_lab import docs
from attention_lab.grading import release

ROOT = Path(__file__).resolve().parent.parent
CONF = runpy.run_path(str(ROOT / "docs" / "conf.py"))
LEVELS = ["01_intuition", "02_mechanics", "03_maths_and_code", "04_research"]
EXERCISES = [f"exercises/{n}_exercises" for n in LEVELS]


class _Page(HTMLParser):
    """A page's images (their attributes and the classes around them), links and text."""

    def __init__(self):
        super().__init__()
        self.images, self.links, self.text, self.readouts = [], [], [], []
        self._stack, self._readout = [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = a.get("class", "")
        if tag not in ("img", "br", "meta", "link", "input", "hr"):
            self._stack.append(classes)
        if tag == "img":
            self.images.append({**a, "within": " ".join(self._stack)})
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag == "pre" and "al-readout" in classes:
            self._readout = []

    def handle_endtag(self, tag):
        if tag not in ("img", "br", "meta", "link", "input", "hr") and self._stack:
            self._stack.pop()
        if tag == "pre" and self._readout is not None:
            self.readouts.append("".join(self._readout))
            self._readout = None

    def handle_data(self, data):
        self.text.append(data)
        if self._readout is not None:
            self._readout.append(data)


def parsed(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def stored(stem: str) -> list[tuple[bool, str]]:
    """(is an explorer, text/plain) of every stored image output of ``notebooks/<stem>.ipynb``."""
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return [(docs.WIDGET in o["data"], "".join(o["data"]["text/plain"]).strip())
            for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]
            if "image/png" in o.get("data", {})]


def test_every_level_and_exercise_notebook_is_a_page(site):
    out, _ = site
    for stem in LEVELS + EXERCISES:
        assert (out / "notebooks" / f"{stem}.html").is_file(), stem
    toc = parsed(out / "students" / "notebooks.html").links
    assert all(any(f"notebooks/{s}.html" in h for h in toc) for s in LEVELS)


@pytest.mark.parametrize("stem", LEVELS)
def test_every_figure_has_a_description_and_carries_it_as_alt_text(site, stem):
    """Every stored figure of every level notebook has a text description (never matplotlib's
    ``<Figure size ...>``), and the page shows it as the figure's alt text."""
    figures = stored(stem)
    assert figures, f"{stem} stores no figure"
    missing = [n for n, (_, text) in enumerate(figures, 1) if not text or text.startswith("<")]
    assert not missing, (f"notebooks/{stem}.ipynb: figures {missing} (counted from the top) have "
                         f"no text description: {[figures[n - 1][1] for n in missing]}")
    page = parsed(site[0] / "notebooks" / f"{stem}.html")
    shown = [(("al-explorer" in i["within"]), html.unescape(i["alt"])) for i in page.images
             if i.get("src", "").startswith("data:image/png")]
    assert shown == figures
    assert f"notebooks/{stem}.ipynb: the figures of cells" not in site[1], site[1]


def test_a_figure_without_a_description_is_reported_not_hidden():
    """A figure stored without a description (a new notebook's plain matplotlib figure) is
    reported by the build, and its alt text says so instead of ``<Figure size ...>``."""
    import nbformat

    png = "iVBORw0KGgo="  # any base64
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# a page"),
        nbformat.v4.new_code_cell("plain()", outputs=[nbformat.v4.new_output(
            "display_data", {"image/png": png, "text/plain": "<Figure size 640x480 with 1 Axes>"})]),
        nbformat.v4.new_code_cell("described()", outputs=[nbformat.v4.new_output(
            "display_data", {"image/png": png, "text/plain": "Figure: two bars."})])])
    assert docs.static_outputs(nb) == [1]
    alts = [o["data"]["text/plain"] for c in nb.cells[1:] for o in c.outputs]
    assert alts == ["A figure without a text description yet (cell 2).", "Figure: two bars."]
    assert 'alt="Figure: two bars."' in nb.cells[2].outputs[0]["data"]["text/html"]


@pytest.mark.parametrize("stem", LEVELS)
def test_each_explorer_shows_its_stored_figure_readout_and_the_kernel_note(site, stem):
    page = parsed(site[0] / "notebooks" / f"{stem}.html")
    explorers = [text for explorer, text in stored(stem) if explorer]
    assert explorers, f"{stem} stores no explorer"
    assert [html.unescape(r) for r in page.readouts] == explorers
    assert sum("al-explorer" in i["within"] for i in page.images) == len(explorers)
    assert "".join(page.text).count("the sliders need a running kernel") == len(explorers)


def test_the_exercise_pages_are_the_student_copies(site):
    """No solution block in any page of the site (as text a reader sees) or in its sources, and
    the exercise pages have no outputs stored (the student copies are unrun)."""
    out, _ = site
    blocks = release.answer_blocks()
    assert blocks
    for path in sorted(out.rglob("*.html")):
        text = "\n".join(ln.strip() for ln in html.unescape("".join(parsed(path).text))
                         .splitlines())
        hits = [b.splitlines()[0] for b in blocks if b in text]
        assert not hits, f"{path.relative_to(out)} shows a solution: {hits[0]}"
    assert not release.leaks(out / "_sources", blocks)
    for stem in EXERCISES:
        nb = json.loads((out / "_sources" / "notebooks" / f"{stem}.ipynb").read_text())
        assert not [c for c in nb["cells"] if c.get("outputs")], stem


@pytest.mark.parametrize("stem", ["02_mechanics", "exercises/02_mechanics_exercises"])
def test_launch_links_are_well_formed_and_open_this_notebook(site, stem):
    """Binder and Colab links open the notebook's repository path (untestable here: that the
    services open it; tested: what they are asked to open). No link pulls the repository into a
    JupyterHub (nbgitpuller's git-pull): it would put the solutions in a student's home."""
    links = parsed(site[0] / "notebooks" / f"{stem}.html").links
    repo = urlsplit(CONF["REPOSITORY"])
    owner_repo = repo.path.strip("/")
    path = f"notebooks/{stem}.ipynb"
    assert (ROOT / path).is_file()
    binder = [urlsplit(h) for h in links if h.startswith("https://mybinder.org/")]
    assert len(binder) == 1
    assert binder[0].path == f"/v2/gh/{owner_repo}/{CONF['BRANCH']}"
    assert parse_qs(binder[0].query) == {"urlpath": [f"lab/tree/{path}"]}
    colab = [h for h in links if h.startswith("https://colab.research.google.com/")]
    assert colab == [f"https://colab.research.google.com/github/{owner_repo}/blob/"
                     f"{CONF['BRANCH']}/{path}"]
    assert not [h for h in links if "git-pull" in h], links


def test_benchmark_tables_come_from_the_newest_result_of_each_group(tmp_path):
    from benchmarks import run
    from benchmarks.common import Row
    import datetime

    day = datetime.datetime(2026, 12, 1, 9, 30, tzinfo=datetime.timezone.utc)
    run.save([Row("core", "old figure", 2.0, "s"), Row("docs", "build", 9.0, "s", goal="< 60 s",
                                                       ok=True)], "cmd one", tmp_path, day)
    run.save([Row("core", "new figure", 1.5e-3, "s")], "cmd two", tmp_path,
             day + datetime.timedelta(days=1))
    page = docs.benchmark_tables(tmp_path)
    core = page.split("## core", 1)[1].split("## ", 1)[0]
    assert "| core | new figure | 1.50 ms |" in core and "old figure" not in core
    assert "`cmd two` on 2026-12-02 09:30 UTC" in core
    assert "| docs | build | 9.00 s |  |  | < 60 s | yes |" in page.split("## docs", 1)[1]
    assert "No run is recorded yet." in docs.benchmark_tables(tmp_path / "none")


def test_the_site_shows_the_recorded_results(site):
    """Every group of the committed result files has its table on the site."""
    files = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    assert files, "no benchmark run is recorded in benchmarks/results/"
    groups = {r["group"] for f in files for r in json.loads(f.read_text())["rows"]}
    text = "".join(parsed(site[0] / "maintainers" / "benchmark-tables.html").text)
    for group in groups:
        assert re.search(rf"\b{group}\b", text), group


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::PendingDeprecationWarning")
def test_a_warning_fails_the_build(tmp_path, monkeypatch):
    """A broken cross-reference is a warning, and a warning fails the build (-W)."""
    pages = tmp_path / "docs"
    shutil.copytree(docs.DOCS, pages)
    (pages / "maintainers" / "decisions.md").write_text(
        "# Decisions\n\nSee [a page that is not there](nowhere.md).\n", encoding="utf-8")
    monkeypatch.setattr(docs, "DOCS", pages)
    with pytest.raises(docs.DocsError, match="sphinx-build reported problems"):
        docs.build(tmp_path / "html")


def test_an_out_dir_that_is_a_file_gets_one_line(tmp_path, capsys):
    """``docs OUT_DIR`` with OUT_DIR an existing file: one line saying so, exit code 2, nothing
    built (not Sphinx's 'Application error!' and traceback)."""
    (tmp_path / "site").write_text("")
    assert docs.main([str(tmp_path / "site")]) == 2
    assert capsys.readouterr().err == f"docs: error: {tmp_path / 'site'} is a file, not a folder\n"


def test_what_a_page_sends_to_the_readme_is_there():
    """The README holds the two commands (install and open, install and test) and the map of
    the site; everything else moved into these pages. A page (or the hub's example config) that
    sends the reader to "the README's" anything else sends them nowhere: link the page instead,
    which the build checks."""
    texts = {p.relative_to(ROOT): p.read_text(encoding="utf-8")
             for p in [*sorted(docs.DOCS.rglob("*.md")), ROOT / "jupyterhub_config.py"]}
    stale = [(name, m.group(1)) for name, text in texts.items()
             for m in re.finditer(r"README's\s+(\S+\s+\S+)", text)
             if not re.fullmatch(r"(install|open|test)\s+commands?\W*", m.group(1))]
    stale += [(name, "See the README") for name, text in texts.items() if "See the README" in text]
    assert not stale, stale


def test_the_instructors_pages_name_the_columns_and_statuses_grade_writes():
    """What the outputs page says grades.csv and written.csv hold, in order, and the statuses it
    and the grading page list, are what ``grade`` writes."""
    from attention_lab.grading import report, written

    text = _docs.section("instructors/outputs.md", "grades.csv and grades.json")
    listed = re.search(r"one row per submission: `([^`]+)`", text).group(1)
    assert re.split(r",\s+", listed) == report.GRADES_COLUMNS
    rows = _docs.section("instructors/outputs.md", "written.csv").splitlines()
    assert [c for r in rows if r.startswith("| `") for c in re.findall(r"`(\w+)`", r.split("|")[1])
            ] == written.COLUMNS
    table = _docs.section("instructors/outputs.md", "Statuses")
    assert tuple(re.findall(r"^\| `(\w+)` \|", table, re.M)) == report.STATUSES
    own = table.split("A submission's own status is", 1)[1]
    assert tuple(re.findall(r"`(\w+)`", own)) == report.SUBMISSION_STATUSES
    listed = re.search(r"Each exercise gets a status \((.+?)\)", _docs.page(
        "instructors/grading.md"), re.S).group(1)
    assert tuple(re.findall(r"`(\w+)`", listed)) == report.STATUSES


def test_every_name_of_the_package_a_page_gives_can_be_imported():
    """A name such as ``attention_lab.demo.build_demo`` on a page is one a reader can import
    (the longest importable module, then its attributes)."""
    import importlib

    names = {n for p in docs.DOCS.rglob("*.md")
             for n in re.findall(r"\battention_lab(?:\.\w+)+", p.read_text(encoding="utf-8"))}
    missing = []
    for name in sorted(names):
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ModuleNotFoundError:
                continue
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
        if obj is None:
            missing.append(name)
    assert not missing, missing


def test_the_layout_page_names_every_module_and_subpackage():
    """A maintainer looks a file up in docs/maintainers/layout.md: every module at the top of
    the package and every subpackage has a row."""
    layout = (ROOT / "docs" / "maintainers" / "layout.md").read_text(encoding="utf-8")
    names = [p.name for p in (ROOT / "attention_lab").iterdir()
             if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()]
    assert [n for n in names if f"{n}`" not in layout and f"{n}/`" not in layout] == []
