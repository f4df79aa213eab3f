"""JupyterLab in a real browser: every notebook runs without an error and, on torch's generic CPU
kernels and one thread, shows the outputs stored in it (what nbval compares); in the mechanics notebook,
the explorers' controls drive their figures (keyboard, mouse, toggle buttons), their readouts show
the core's numbers, three tasks are reached with the keyboard alone, and every explorer is
accessible (live readout, named figure, named controls), and the local-p explorer's tasks are
reached; in the intuition notebook, the geometry explorer's three; no explorer is cut off on a
laptop's screen or at 200 % zoom; the project's JupyterLab defaults (from the README's command)
keep the news question away."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import harness as H
from _outputs import differences

if H.browser_unavailable_reason() and not H.browser_required():
    pytest.skip(H.browser_unavailable_reason(), allow_module_level=True)

from interactions import Driver, core_check, wait_drawn  # noqa: E402  (needs Playwright)

#: run and then driven by test_explorers_in_the_mechanics_notebook (runs it once, not twice)
INTERACTIVE = Path("02_mechanics.ipynb")
#: run and then driven by test_geometry_explorer_in_the_intuition_notebook
GEOMETRY = Path("01_intuition.ipynb")
NOTEBOOKS = [p for p in H.repo_notebooks() if p not in (INTERACTIVE, GEOMETRY)]


def test_each_repository_notebook_runs_once_here():
    """With nbval, twice in the test command (tests/test_portable_outputs.py counts the rest)."""
    runs = NOTEBOOKS + [INTERACTIVE, GEOMETRY]
    assert sorted(runs) == H.repo_notebooks() and len(set(runs)) == len(runs)


def run_without_errors(nb, steps, notebook) -> None:
    """Run all of ``notebook``: no error, every cell ran, and the outputs are the stored ones."""
    steps(f"opened {notebook}")
    progress = nb.run_all()
    steps("ran all cells")
    assert nb.errors() == [], f"{notebook}: cells show errors"
    assert progress["pending"] == 0, f"{notebook}: cells did not run: {progress}"
    assert steps.page_errors == [], f"uncaught errors in the page: {steps.page_errors}"
    stored = json.loads((H.ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))
    changed = differences(stored, nb.model())
    assert not changed, (f"{notebook}: outputs differ from the stored ones on generic kernels, "
                         f"one thread:\n" + "\n".join(changed))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.as_posix() for p in NOTEBOOKS])
def test_notebook_runs_in_jupyterlab_without_errors(lab_app, lab_steps, notebook):
    nb = lab_app.open(notebook.as_posix())
    try:
        run_without_errors(nb, lab_steps, notebook)
    finally:
        nb.close()


def explorer_in_page(page, steps, name: str) -> Driver:
    """The explorer ``name`` of the open notebook, driven beside its twin after checking its
    starting numbers, tasks, pixels and accessibility."""
    from attention_lab import widgets

    root = page.locator(f".al-explorer-{name}").first
    root.scroll_into_view_if_needed()
    d = Driver(root, widgets.EXPLORERS[name](backend="agg"), steps, check=core_check(name))
    d.check_readout()  # the starting numbers, before anything moved
    d.check_tasks()
    d.check_drawn(min_width=600)
    d.check_accessible()
    return d


def reached(d: Driver, k: int) -> None:
    """Task k (0-based) is met by the twin's state and ticked off in the page."""
    assert d.twin.tasks_met[k], f"{d.title}: the twin's state does not meet task {k + 1}"
    d.check_tasks()  # the page ticked it off, as the twin did
    assert f"Task {k + 1} of {len(d.twin.tasks)} (done)" in d.root.locator(
        ".al-tasks").first.inner_text()


def test_explorers_in_the_mechanics_notebook(lab_app, lab_steps):
    """02_mechanics runs without errors; then its score, temperature, mask and window explorers
    are driven with the keyboard, the mouse and clicks, and the local-p explorer's two tasks are
    reached with the keyboard."""
    assert lab_app.server.listening() == {"127.0.0.1"}
    steps = lab_steps
    nb = lab_app.open(INTERACTIVE.as_posix())
    try:
        run_without_errors(nb, steps, INTERACTIVE)
        page = lab_app.page

        def driver(name):
            return explorer_in_page(page, steps, name)

        # three tasks, keyboard only: each control focused, then keys
        temperature = driver("temperature")
        temperature.press("temperature", "ArrowLeft", 30)   # tau 1 -> 0.25: exp(H) about 2
        reached(temperature, 0)
        mask = driver("mask")
        mask.key_toggle("after_softmax")                     # at valid length 3: the row sum
        reached(mask, 0)
        window = driver("window")
        window.press("centre", "ArrowRight", 5)              # p 5.5 -> 8, onto the target
        window.press("half_width", "ArrowLeft", 1)           # D 1.5 -> 1
        reached(window, 0)
        score = driver("score")
        score.key_choose("score", "bilinear")                # toggle buttons by keyboard

        temperature.press("temperature", "ArrowRight", 3)   # keyboard
        temperature.press("temperature", "ArrowLeft", 1)
        temperature.drag("temperature", 0.85)               # mouse
        temperature.drag("temperature", 1.0)                # the top, off the step grid
        assert math.isclose(temperature.values()["temperature"], 5.0), temperature.values()

        mask.toggle("keep2")                                 # mask a position
        mask.press("length", "ArrowRight", 2)
        mask.toggle("keep2")                                 # and make it eligible again
        mask.toggle("after_softmax")                         # checkbox

        score.drag("q1", 0.2)
        score.choose("score", "additive")

        window.press("centre", "ArrowLeft", 3)               # p = 6.5, between two positions
        window.drag("half_width", 0.0)                       # an empty window: a message

        localp = driver("localp")
        for _ in range(13):  # one key at a time: the twin takes every state the page passes
            localp.press("logit", "ArrowRight", 1)       # (tasks stay reached), to z = 1.3
        localp.press("half_width", "ArrowLeft", 2)       # D = 1: centre about 8.07
        reached(localp, 0)
        localp.press("half_width", "ArrowRight", 2)      # D = 2
        localp.press("logit", "ArrowLeft", 9)            # z = 0.4: centre 6.39, target 8
        reached(localp, 1)
        assert steps.page_errors == [], f"uncaught errors in the page: {steps.page_errors}"
        no_news_question(page, lab_app.server)
    finally:
        nb.close()


def test_geometry_explorer_in_the_intuition_notebook(lab_app, lab_steps):
    """01_intuition runs without errors; then the geometry explorer's three tasks are reached in
    the page (the angle with the keyboard, the length with the mouse); the readouts show the
    core's numbers after every step."""
    nb = lab_app.open(GEOMETRY.as_posix())
    try:
        run_without_errors(nb, lab_steps, GEOMETRY)
        geometry = explorer_in_page(lab_app.page, lab_steps, "geometry")
        geometry.press("angle", "ArrowRight", 41)        # 20° -> 61°: k1 and k2 tie
        reached(geometry, 0)
        geometry.press("angle", "ArrowRight", 9)         # 70°: k2 wins, k1's score positive
        reached(geometry, 1)
        geometry.press("angle", "ArrowLeft", 70)         # 0°, along k1
        geometry.drag("length", 0.9)                     # |q| about 2.7: nearly hard
        reached(geometry, 2)
        assert lab_steps.page_errors == [], f"uncaught errors: {lab_steps.page_errors}"
    finally:
        nb.close()


#: what sticks out of an explorer's output area, or is cut off inside it (a box that clips its
#: content; a box that scrolls it, as a wide readout table does, is fine)
CUT_OFF_JS = """(root) => {
  const area = root.closest('.jp-OutputArea-output').getBoundingClientRect(), found = [];
  const scrolled = (e) => { for (let p = e.parentElement; p && p !== root; p = p.parentElement)
    if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) return true; return false; };
  for (const e of root.querySelectorAll('*')) {
    const style = getComputedStyle(e);
    if (!e.getClientRects().length || style.visibility === 'hidden') continue;
    const what = `${e.tagName} ${e.className} ${(e.textContent || '').trim().slice(0, 30)}`;
    if (e.getBoundingClientRect().right > area.right + 1 && !scrolled(e))
      found.push(`sticks out: ${what}`);
    else if (['hidden', 'clip'].includes(style.overflowX) && e.scrollWidth > e.clientWidth + 1)
      found.push(`cut off: ${what}`);
  }
  return found;
}"""


def test_no_explorer_is_cut_off_on_a_laptop_or_at_200_percent_zoom(lab_app, lab_steps):
    """Every explorer at 1280 x 720 with JupyterLab's file browser open, and at 200 % browser
    zoom (640 x 360 CSS pixels, the side panel closed): nothing sticks out of the notebook or is
    cut off (its figure shrinks to the width there is; a wide readout table may scroll)."""
    from attention_lab import widgets

    page = lab_app.page
    nb = lab_app.open(f"{H.FIXTURE_FOLDER}/explorers.ipynb")
    shell = "window.jupyterapp.shell"
    try:
        assert nb.run_all()["errors"] == 0
        for size, side_panel in (((1280, 720), True), ((640, 360), False)):
            page.set_viewport_size({"width": size[0], "height": size[1]})
            page.evaluate(f"(open) => open ? {shell}.expandLeft() : {shell}.collapseLeft()",
                          side_panel)
            for name in widgets.EXPLORERS:
                root = page.locator(f".al-explorer-{name}").first
                root.scroll_into_view_if_needed()
                wait_drawn(root)
                for _ in range(50):  # the notebook may still be laying out after the resize
                    found = root.evaluate(CUT_OFF_JS)
                    if not found:
                        break
                    page.wait_for_timeout(100)
                lab_steps(f"{name} at {size[0]} x {size[1]}")
                assert not found, f"{name} at {size[0]} x {size[1]}: {found[:5]}"
    finally:
        page.set_viewport_size(H.VIEWPORT)
        page.evaluate(f"{shell}.expandLeft()")
        nb.close()


def no_news_question(page, server) -> None:
    """JupyterLab, started with the README command's environment, has the project's default
    (fetchNews "false": never ask), and no news notification was shown."""
    settings = page.evaluate("""async (url) => (await (await fetch(url)).json())""",
                             server.url("/lab/api/settings/@jupyterlab/apputils-extension:"
                                        "notification"))
    default = settings["schema"]["properties"]["fetchNews"]["default"]  # overrides set defaults
    assert default == "false" and "fetchNews" not in settings["settings"], settings["settings"]
    shown = page.evaluate("() => [...document.querySelectorAll('.Toastify__toast')]"
                          ".map(e => e.textContent)")
    assert not [t for t in shown if "news" in t.lower()], shown


def test_the_kernels_run_generic_cpu_kernels_on_one_thread(lab_app, lab_steps):
    """The kernels of the run-all are the portable ones (so the comparison checks portability)."""
    nb = lab_app.open(f"{H.FIXTURE_FOLDER}/portable.ipynb")
    try:
        nb.run_all()
        lab_steps("ran the portable-kernel fixture")
        assert nb.text_outputs() == ["DEFAULT 1\n"], nb.text_outputs()
    finally:
        nb.close()


def test_error_check_reports_the_failing_cell(lab_app, lab_steps):
    """The notebook check itself can fail: an unexpected error is reported with its cell, a cell
    tagged raises-exception is not, and the cells after the failure count as not run."""
    nb = lab_app.open(f"{H.FIXTURE_FOLDER}/broken.ipynb")
    try:
        progress = nb.run_all()
        lab_steps("ran the broken notebook")
        errors = nb.errors()
        assert len(errors) == 1 and "ZeroDivisionError" in errors[0], errors
        assert errors[0].startswith("cell 3:"), errors
        assert progress["pending"] == 1, progress
    finally:
        nb.close()
