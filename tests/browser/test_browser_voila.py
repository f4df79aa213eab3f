"""The lecture demo in Voila, launched by `python -m attention_lab demo`, in a real browser at
projector size (1920 x 1080): no code, large type, every tab drawn and nothing cut off; its
explorers' controls drive their figures and readouts; the reset button puts every control, readout
and figure (pixel for pixel) back."""

from __future__ import annotations

import re

import time

import pytest

import harness as H

#: tab title -> the explorer's CSS name (``.al-explorer-<name>``)
TABS = {"Query": "query", "Temperature": "temperature", "Mask": "mask", "Window": "window",
        "Score": "score", "Trained model": "model"}

if H.browser_unavailable_reason() and not H.browser_required():
    pytest.skip(H.browser_unavailable_reason(), allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

from interactions import (Driver, control_state, core_check, figure, page_text,  # noqa: E402
                          wait_drawn, wait_figure_equal)


def twin(name: str):
    """The explorer of a tab, in this process (see interactions.Driver)."""
    if name == "model":
        from attention_lab.toy.explorer import ModelExplorer

        return ModelExplorer(presentation=True)
    from attention_lab import widgets

    return widgets.EXPLORERS[name](backend="agg", presentation=True)


@pytest.fixture(scope="module")
def demo(demo_page):
    """The demo page once everything is drawn: the app's root element."""
    page = demo_page
    root = page.locator(".al-demo")
    root.wait_for(timeout=120_000)
    page.locator(".al-demo .jupyter-matplotlib-canvas-div canvas").first.wait_for()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.al-demo .al-readout')]"
        ".every(n => n.textContent.trim().length > 0)", timeout=60_000)
    return root


def tab(demo, title: str):
    """Click the tab ``title``; its explorer once drawn."""
    demo.locator(".lm-TabBar-tab").filter(has_text=title).click()
    root = demo.locator(f".al-explorer-{TABS[title]}")
    expect(root).to_be_visible()
    wait_drawn(root)
    return root


def contrast(*colours: str) -> float:
    """WCAG's contrast ratio of two CSS colours given as 'rgb(r, g, b)'."""
    def luminance(css):
        rgb = [int(v) / 255 for v in re.findall(r"\d+", css)[:3]]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    light, dark = sorted(map(luminance, colours), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_demo_is_big_clear_and_shows_no_code(demo, demo_page, demo_steps):
    page, steps = demo_page, demo_steps
    steps("demo loaded")
    titles = [t.strip() for t in demo.locator(".lm-TabBar-tab").all_inner_texts()]
    assert titles == list(TABS)
    html = page.content()
    shown = demo.inner_text()
    for code in ("build_demo", "import ", "Explorer(", "attention_lab"):
        assert code not in shown, f"code is shown: {code!r}"
    assert "build_demo" not in html, "the page holds the notebook's code"
    assert page.locator(".jp-InputArea, .jp-InputPrompt, .cm-editor, .CodeMirror").count() == 0
    font = demo.locator(".widget-label").first.evaluate(
        "e => parseFloat(getComputedStyle(e).fontSize)")
    assert font >= 18, f"controls use {font}px type; a projector needs >= 18px"
    colours = demo.locator(".al-reset").first.evaluate(
        "e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
    ratio = contrast(*colours)  # white on JupyterLab's warning orange was 2.7:1
    assert ratio >= 4.5, f"the reset button's text has contrast {ratio:.2f}:1 ({colours})"
    for title in TABS:
        root = tab(demo, title)
        label = demo.locator(".lm-TabBar-tab").filter(has_text=title).locator(
            ".lm-TabBar-tabLabel")
        assert label.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), (
            f"the tab title {title!r} is cut off")
        fig = figure(root)
        assert fig["width"] >= 1000 and fig["ink"] > 5000, f"tab {title}: figure {fig}"
        # everything on one 1920 x 1080 screen: no horizontal or vertical scrolling
        box = root.bounding_box()
        canvas = root.locator(".jupyter-matplotlib-canvas-div canvas").first.bounding_box()
        for what, b in (("the tab", box), ("the figure", canvas)):
            assert b["x"] >= 0 and b["x"] + b["width"] <= H.PROJECTOR["width"], (
                f"tab {title}: {what} is cut off at the sides: {b}")
            assert b["y"] >= 0 and b["y"] + b["height"] <= H.PROJECTOR["height"], (
                f"tab {title}: {what} does not fit on the screen: {b}")
        # on a wide screen the figure stands beside the controls, not under them
        control = root.locator("[class*='al-control-']").first.bounding_box()
        assert canvas["x"] >= control["x"] + control["width"], (
            f"tab {title}: the figure is not beside the controls ({canvas} vs {control})")
        assert page_text(root.locator(".al-readout").first), f"tab {title}: no readout"
        steps(f"tab {title}")
    assert page.load_errors == [], f"uncaught errors in the page: {page.load_errors}"


def test_demo_controls_and_reset_button(demo, demo_page, demo_steps):
    page, steps = demo_page, demo_steps
    start = {}
    for title in TABS:
        root = tab(demo, title)
        start[title] = (figure(root), page_text(root.locator(".al-readout").first),
                        control_state(root))

    def driver(title):
        d = Driver(tab(demo, title), twin(TABS[title]), steps, title,
                   check=core_check(TABS[title]))
        d.check_readout()  # the starting numbers
        return d

    query = driver("Query")
    query.press("q1", "ArrowRight", 2)             # keyboard
    query.drag("temperature", 0.3)                  # mouse
    query.choose("retrieval", "hard")
    query.choose("preset", "a later query (-1.0, -0.8, -0.3)")

    temperature = driver("Temperature")
    temperature.press("temperature", "ArrowLeft", 5)
    temperature.drag("temperature", 0.9)

    mask = driver("Mask")
    mask.toggle("keep1")                            # mask a position
    mask.press("length", "ArrowRight", 1)
    mask.toggle("after_softmax")

    window = driver("Window")
    window.drag("centre", 0.8)
    window.press("half_width", "ArrowRight", 2)

    score = driver("Score")
    score.choose("score", "scaled dot")             # another score function
    score.press("q2", "ArrowLeft", 3)

    model = driver("Trained model")
    model.press("temperature", "ArrowRight", 4)
    model.type_text("source", "badge")
    model.toggle("window")

    demo.locator(".al-reset").first.click()
    expect(demo.locator(".al-status")).to_contain_text("back at its starting value")
    steps("reset clicked")
    for title in TABS:
        root = tab(demo, title)
        fig, readout, controls = start[title]
        shown = root.locator(".al-readout").first
        for _ in range(100):
            if page_text(shown) == readout:
                break
            page.wait_for_timeout(100)
        assert page_text(shown) == readout, f"tab {title}: the readout did not come back"
        wait_figure_equal(root, fig)
        assert control_state(root) == controls, f"tab {title}: controls not reset"
        steps(f"tab {title} after reset")
    # and the starting values are the explorers' own (the readouts show their defaults' numbers)
    for title, name in TABS.items():
        fresh = Driver(tab(demo, title), twin(name), steps, title)
        fresh.check_readout(timeout=2)
    assert page.load_errors == [], f"uncaught errors in the page: {page.load_errors}"


def test_the_demo_page_asks_no_host_but_the_demos(chromium, demo_server):
    """A lecture hall without internet, or behind a captive portal whose DNS hangs: Voila's lab
    template linked two Font Awesome stylesheets from cdn.jsdelivr.net, which held the page back
    and made every student's browser ask a third party. Every request of the page goes to the
    demo, and the reset button's icon is still drawn (the Font Awesome Voila bundles)."""
    context = chromium.new_context(viewport=H.PROJECTOR)
    try:
        page = context.new_page()
        asked = []
        page.on("request", lambda r: asked.append(r.url))
        page.goto(demo_server.url("/"))
        page.locator(".al-demo .al-readout").first.wait_for(timeout=120_000)
        own = f"http://127.0.0.1:{demo_server.port}/"
        assert len(asked) > 50 and asked[0].startswith(own)  # the page and its files are seen
        elsewhere = [u for u in asked if not u.startswith((own, f"blob:{own}", "data:"))]
        assert elsewhere == [], f"the demo page asks other hosts: {elsewhere}"
        icon = page.locator(".al-demo .al-reset i.fa-undo")
        assert icon.evaluate("async i => { await document.fonts.ready; "
                             "const font = getComputedStyle(i, '::before').fontFamily; "
                             "return i.getBoundingClientRect().width > 0 && "
                             "[...document.fonts].some(f => font.includes(f.family) "
                             "&& f.status === 'loaded'); }"), "the reset button's icon is not drawn"
    finally:
        context.close()


def test_a_student_with_an_old_link_pastes_the_address_and_gets_the_demo(chromium, demo_server):
    """The link of an earlier lecture (its token is gone) leads to the demo's own page, which asks
    for the token; a wrong one is told, and the address from the board, pasted whole, opens the
    demo."""
    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    try:
        page = context.new_page()
        page.goto(demo_server.url("/", token="an-old-one"))
        field = page.get_by_label(re.compile("token", re.I))
        field.fill("a-typo")
        page.get_by_role("button", name="Open the demo").click()
        expect(page.get_by_role("alert")).to_contain_text("does not open the demo")
        field.fill(f" {demo_server.url('/')} ")  # as copied from the slide
        page.get_by_role("button", name="Open the demo").click()
        page.locator(".al-demo .al-readout").first.wait_for(timeout=120_000)
    finally:
        context.close()


def _kernel_running(server, kernel_id: str) -> bool:
    """Whether the demo runs the kernel ``kernel_id`` (its process and its connection file)."""
    import psutil

    for pid in server.descendants():
        try:
            if any(kernel_id in arg for arg in psutil.Process(pid).cmdline()):
                return True
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return False


def test_a_closed_tab_frees_its_kernel_at_once(chromium, demo_server):
    """A student who closes the tab (or reloads it) gives its kernel back at once, as the
    lecture-hall page says: Voila's page asks for the shutdown as it unloads, with the _xsrf
    cookie it reads from the page, which the page must therefore set (else a 403, and the kernel
    and the viewer's place stay taken until culled)."""
    context = chromium.new_context(viewport=H.PROJECTOR)
    try:
        page = context.new_page()
        page.goto(demo_server.url("/"))
        page.locator(".al-demo .al-readout").first.wait_for(timeout=120_000)
        kernel_id = page.evaluate(
            "() => JSON.parse(document.getElementById('jupyter-config-data').textContent)"
            ".kernelId")
        assert _kernel_running(demo_server, kernel_id)
        page.close(run_before_unload=True)
        for _ in range(100):
            if not _kernel_running(demo_server, kernel_id):
                break
            time.sleep(0.2)
        assert not _kernel_running(demo_server, kernel_id), (
            f"the closed tab's kernel still runs:\n{demo_server.log_tail(10)}")
    finally:
        context.close()


def test_a_page_whose_kernel_is_gone_says_to_reload(chromium, demo_server):
    """A laptop that slept past the cull time, or a demo restarted under an open page: the page
    still moves its sliders, but nothing answers them. It must not show a stale figure as if it
    were live: it says the connection is lost and to reload."""
    import urllib.request

    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    try:
        page = context.new_page()
        page.goto(demo_server.url("/"))
        root = page.locator(".al-explorer-query")
        readout = root.locator(".al-readout").first
        readout.wait_for(timeout=120_000)
        page.wait_for_function("() => document.querySelector('.al-explorer-query .al-readout')"
                               ".textContent.trim().length > 0")
        lost = page.locator(".al-lost")
        handle = root.locator(".al-control-q1 .noUi-handle").first
        shown = readout.inner_text()
        handle.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("t => document.querySelector('.al-explorer-query .al-readout')"
                               ".innerText !== t", arg=shown)
        assert not lost.is_visible()
        # the kernel is shut down as the culler does it
        kernel_id = page.evaluate(
            "() => JSON.parse(document.getElementById('jupyter-config-data').textContent)"
            ".kernelId")
        urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{demo_server.port}/voila/api/shutdown/{kernel_id}",
            method="POST", data=b"", headers={"Authorization": f"token {demo_server.token}"}))
        page.wait_for_timeout(1000)
        handle.focus()
        page.keyboard.press("ArrowRight")
        expect(lost).to_be_visible(timeout=60_000)  # its patience: 30 s
        expect(lost).to_contain_text("Reload the page")
        # legible, and over the demo rather than hidden at its end
        box = lost.bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= 768, box
        assert lost.evaluate("e => parseFloat(getComputedStyle(e).fontSize)") >= 18
    finally:
        context.close()


@pytest.mark.parametrize("screen", [(375, 812), (768, 1024)], ids=["phone", "tablet"])
def test_a_student_on_a_phone_or_tablet_sees_every_control_and_whole_figures(chromium, demo_server,
                                                                             screen):
    """Students follow on their own phones and tablets: on a screen narrower than a figure the
    figure shrinks to the width there is (whole, its proportions kept), and the title bar's reset
    button, the tabs and every control (its slider and its value) stay on the screen."""
    width, height = screen
    context = chromium.new_context(viewport={"width": width, "height": height}, is_mobile=True,
                                   has_touch=True)
    try:
        page = context.new_page()
        page.goto(demo_server.url("/"))
        page.locator(".al-demo .al-readout").first.wait_for(timeout=120_000)
        inside = "e => { const b = e.getBoundingClientRect(); return b.left >= 0 && " \
                 f"b.right <= {width} + 1; }}"
        for locator in (page.locator(".al-demo .al-reset"), *page.locator(
                ".al-demo .lm-TabBar-tab").all()):
            assert locator.evaluate(inside), f"{locator.inner_text()!r} is off the screen"
            assert locator.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), (
                f"{locator.inner_text()!r} is cut off")
        for title, name in TABS.items():
            root = tab(page.locator(".al-demo"), title)
            for canvas in root.locator(".jupyter-matplotlib-canvas-div canvas").all():
                assert canvas.evaluate(inside), f"tab {title}: the figure is cut off"
                shown = canvas.bounding_box()
                drawn = canvas.evaluate("e => e.width / e.height")
                assert abs(shown["width"] / shown["height"] - drawn) < 0.02 * drawn, (
                    f"tab {title}: the figure is distorted")
            for control in root.locator("[class*='al-control-']").all():
                for part in control.locator(".noUi-handle, .widget-readout, select, input").all():
                    if part.is_visible():
                        assert part.evaluate(inside), (
                            f"tab {title}: a part of {control.get_attribute('class')} is off "
                            f"the screen")
    finally:
        context.close()
