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
def test_notebook_runs_in_jupyterlab_without_errors(chromium, lab_server, browser_page, notebook):
    page, steps = browser_page
    steps.servers.append(lab_server)
    nb = H.LabNotebook(page, lab_server, notebook.as_posix()).open()
    steps(f"opened {notebook}")
    progress = nb.run_all()
    steps("ran all cells")
    assert nb.errors() == [], f"{notebook}: cells show errors"
    assert progress["pending"] == 0, f"{notebook}: cells did not run: {progress}"
    assert steps.page_errors == [], f"uncaught errors in the page: {steps.page_errors}"


def test_explorer_controls_drive_the_figure_in_jupyterlab(chromium, lab_server, browser_page):
    page, steps = browser_page
    steps.servers.append(lab_server)
    nb = H.LabNotebook(page, lab_server, f"{H.FIXTURE_FOLDER}/explorer.ipynb").open()
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
