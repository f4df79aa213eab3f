"""The lecture demo in Voila, launched by `python -m attention_lab demo`, in a real browser: no code,
large type, tabs whose controls drive the figures, and a reset button that puts everything back."""

from __future__ import annotations

import pytest

import harness as H
from attention_lab._standin import SCORES

TABS = ["Query", "Temperature", "Mask"]
SCORE_LABELS = {value: label for label, value in SCORES}


if H.browser_unavailable_reason() and not H.browser_required():
    pytest.skip(H.browser_unavailable_reason(), allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

from interactions import (Explorer, control_state, figure, wait_drawn,  # noqa: E402
                          wait_figure_equal)


def open_demo(page, server, steps):
    steps.servers.append(server)
    page.goto(server.url("/"))
    page.locator(".al-demo").wait_for(timeout=90_000)
    page.locator(".al-demo .jupyter-matplotlib-canvas-div canvas").first.wait_for()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.al-standin .al-readout')]"
        ".every(n => n.textContent.trim().length > 0)")
    steps("demo loaded")
    return page.locator(".al-demo")


def tab(page, demo, title: str):
    demo.locator(".lm-TabBar-tab").filter(has_text=title).click()
    root = demo.locator(".al-standin:visible")
    expect(root).to_have_count(1)
    wait_drawn(root)
    return root


def test_demo_shows_tabs_large_and_no_code(chromium, demo_server, browser_page):
    page, steps = browser_page
    demo = open_demo(page, demo_server, steps)
    titles = [t.strip() for t in demo.locator(".lm-TabBar-tab").all_inner_texts()]
    assert titles == TABS
    html = page.content()
    assert "build_demo" not in html and "WeightsExplorer" not in html, "code is shown"
    assert page.locator(".jp-InputArea, .jp-InputPrompt, .cm-editor, .CodeMirror").count() == 0
    font = demo.locator(".widget-label").first.evaluate(
        "e => parseFloat(getComputedStyle(e).fontSize)")
    assert font >= 18, f"controls use {font}px type; a projector needs >= 18px"
    assert figure(demo.locator(".al-standin:visible"))["width"] >= 800
    for title in TABS:
        Explorer(tab(page, demo, title), steps).check_drawn(min_width=800)
        steps(f"tab {title}")
    assert steps.page_errors == []


def test_demo_controls_and_reset_button(chromium, demo_server, browser_page):
    page, steps = browser_page
    demo = open_demo(page, demo_server, steps)
    start, labels, controls = {}, {}, {}
    for title in TABS:
        root = tab(page, demo, title)
        start[title] = figure(root)
        labels[title] = root.locator(".al-readout").inner_text()
        controls[title] = control_state(root)

    query = Explorer(tab(page, demo, "Query"), steps)
    query.check_label()
    query.key_query("ArrowRight", 2)
    query.drag_query(0.8)
    query.choose_score("bilinear  qᵀWk", "bilinear")

    temperature = Explorer(tab(page, demo, "Temperature"), steps)
    temperature.check_label()
    temperature.key_temperature("ArrowLeft", 5)
    temperature.drag_temperature(0.9)

    mask = Explorer(tab(page, demo, "Mask"), steps)
    mask.check_label()
    mask.toggle_source(3)
    mask.toggle_source(1)

    demo.locator(".al-reset button, button.al-reset").first.click()
    expect(demo.locator(".al-status")).to_contain_text("back at its starting value")
    steps("reset clicked")
    for title in TABS:
        root = tab(page, demo, title)
        expect(root.locator(".al-readout")).to_have_text(labels[title])
        wait_figure_equal(root, start[title])
        assert control_state(root) == controls[title], f"tab {title}: controls not reset"
        steps(f"tab {title} after reset")
    # and the starting values are the explorers' defaults
    assert controls["Query"]["sliders"] == ["0.00"]
    assert controls["Query"]["selects"] == [SCORE_LABELS["dot"]]
    assert controls["Temperature"]["sliders"] == ["1.00"]
    assert controls["Mask"]["checkboxes"] == [True] * 5
    assert steps.page_errors == []
