"""JupyterLab in a real browser: every notebook runs without an error; an explorer's controls drive
its ipympl figure (keyboard, mouse, checkbox, dropdown)."""

from __future__ import annotations

import pytest

import harness as H

if H.browser_unavailable_reason() and not H.browser_required():
    pytest.skip(H.browser_unavailable_reason(), allow_module_level=True)

from interactions import Explorer  # noqa: E402  (needs Playwright)

NOTEBOOKS = H.repo_notebooks()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.as_posix() for p in NOTEBOOKS])
def test_notebook_runs_in_jupyterlab_without_errors(lab_app, lab_steps, notebook):
    steps = lab_steps
    nb = lab_app.open(notebook.as_posix())
    try:
        steps(f"opened {notebook}")
        progress = nb.run_all()
        steps("ran all cells")
        assert nb.errors() == [], f"{notebook}: cells show errors"
        assert progress["pending"] == 0, f"{notebook}: cells did not run: {progress}"
        assert steps.page_errors == [], f"uncaught errors in the page: {steps.page_errors}"
    finally:
        nb.close()


def test_explorer_controls_drive_the_figure_in_jupyterlab(chromium, lab_server, browser_page):
    assert lab_server.listening() == {"127.0.0.1"}
    page, steps = browser_page
    steps.servers.append(lab_server)
    nb = H.LabApp(page, lab_server).start().open(f"{H.FIXTURE_FOLDER}/explorer.ipynb")
    nb.run_all()
    assert nb.errors() == []
    root = page.locator(".al-standin").first
    ex = Explorer(root, steps)
    ex.check_label()
    ex.check_drawn(min_width=600)
    steps("explorer drawn")
    ex.key_temperature("ArrowRight", 3)      # keyboard: tau 1.00 -> 1.41
    ex.key_temperature("ArrowLeft", 1)       # and back one step
    ex.drag_query(0.6)                       # mouse drag
    ex.key_query("ArrowLeft", 2)
    ex.drag_temperature(0.85)
    ex.toggle_source(2)                      # checkbox: mask a position
    ex.toggle_source(2)                      # and make it eligible again
    ex.toggle_source(5)
    ex.choose_score("bilinear  qᵀWk", "bilinear")  # dropdown
    ex.choose_score("scaled dot  q·k/√3", "scaled_dot")
    assert steps.page_errors == []


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
