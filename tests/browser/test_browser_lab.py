"""JupyterLab in a real browser: every notebook runs without an error; in the mechanics notebook,
the explorers' controls drive their figures (keyboard, mouse, toggle buttons) and their readouts
show the core's numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

import harness as H

if H.browser_unavailable_reason() and not H.browser_required():
    pytest.skip(H.browser_unavailable_reason(), allow_module_level=True)

from interactions import Driver, core_check  # noqa: E402  (needs Playwright)

#: run and then driven by test_explorers_in_the_mechanics_notebook (runs it once, not twice)
INTERACTIVE = Path("02_mechanics.ipynb")
NOTEBOOKS = [p for p in H.repo_notebooks() if p != INTERACTIVE]


def run_without_errors(nb, steps, notebook) -> None:
    steps(f"opened {notebook}")
    progress = nb.run_all()
    steps("ran all cells")
    assert nb.errors() == [], f"{notebook}: cells show errors"
    assert progress["pending"] == 0, f"{notebook}: cells did not run: {progress}"
    assert steps.page_errors == [], f"uncaught errors in the page: {steps.page_errors}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.as_posix() for p in NOTEBOOKS])
def test_notebook_runs_in_jupyterlab_without_errors(lab_app, lab_steps, notebook):
    nb = lab_app.open(notebook.as_posix())
    try:
        run_without_errors(nb, lab_steps, notebook)
    finally:
        nb.close()


def test_explorers_in_the_mechanics_notebook(lab_app, lab_steps):
    """02_mechanics runs without errors; then its score, temperature, mask and window explorers
    are driven with the keyboard, the mouse and clicks."""
    from attention_lab import widgets

    assert lab_app.server.listening() == {"127.0.0.1"}
    steps = lab_steps
    nb = lab_app.open(INTERACTIVE.as_posix())
    try:
        run_without_errors(nb, steps, INTERACTIVE)
        page = lab_app.page

        def driver(name):
            root = page.locator(f".al-explorer-{name}").first
            root.scroll_into_view_if_needed()
            d = Driver(root, widgets.EXPLORERS[name](backend="agg"), steps,
                       check=core_check(name))
            d.check_readout()  # the starting numbers, before anything moved
            d.check_drawn(min_width=600)
            return d

        temperature = driver("temperature")
        temperature.press("temperature", "ArrowRight", 3)   # keyboard
        temperature.press("temperature", "ArrowLeft", 1)
        temperature.drag("temperature", 0.85)               # mouse

        mask = driver("mask")
        mask.toggle("keep2")                                 # mask a position
        mask.press("length", "ArrowRight", 2)
        mask.toggle("keep2")                                 # and make it eligible again
        mask.toggle("after_softmax")                         # checkbox

        score = driver("score")
        score.choose("score", "bilinear")                    # another score function
        score.drag("q1", 0.2)
        score.choose("score", "additive")

        window = driver("window")
        window.press("centre", "ArrowLeft", 2)
        window.drag("half_width", 0.0)                       # an empty window: a message
        assert steps.page_errors == [], f"uncaught errors in the page: {steps.page_errors}"
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
