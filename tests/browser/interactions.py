"""Driving an explorer in the page like a person does (keyboard, mouse, clicks, typing) and reading
back what the page shows: the ipympl canvas pixels, the controls and the explorer's readout.

Every explorer in the page has a *twin* in the test process: an explorer of the same class (on an
Agg canvas) whose controls are set to the values that the page's controls must have after each
action. A key press moves a slider by exactly one grid step; a mouse drag lands on the grid point
that the slider then shows. After every action the page's readout text must equal the twin's, which
is computed by the core (``attend``, ``softmax``, the masks, the trained model) for those values,
and the figure's pixels must have changed.

The page finds explorers, controls and readouts by the CSS classes the explorers carry:
``al-explorer-<name>`` on the outer box, ``al-control-<key>`` on each control, ``al-readout`` on
the text readout.
"""

from __future__ import annotations

import math
import re
import sys
import time
from html.parser import HTMLParser

import harness as H
from playwright.sync_api import expect

import ipywidgets as W


#: the class of a pressed toggle button
ACTIVE = re.compile(r"(^|\s)mod-active(\s|$)")


# --- reading the page --------------------------------------------------------------------------

def figure(root) -> dict:
    """Size, pixel hash and inked-pixel count of the ipympl canvas under ``root``."""
    pixels = root.evaluate(H.CANVAS_JS)
    assert pixels is not None, "the explorer shows no ipympl canvas (or it has zero size)"
    return pixels


def wait_drawn(root, timeout: float = 30.0) -> dict:
    """Wait until the canvas holds a whole figure (no transparent pixel) that stopped changing."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        now = root.evaluate(H.CANVAS_JS)
        if now and not now["transparent"] and last and now["hash"] == last["hash"]:
            return now
        last = now
        root.page.wait_for_timeout(150)
    raise AssertionError(f"the figure was not drawn within {timeout:g} s: {last}")


def wait_figure_change(root, before: dict, timeout: float = 15.0) -> dict:
    """Wait until the canvas pixels differ from ``before`` and stop changing; return them."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        now = figure(root)
        if (now["hash"] != before["hash"] and not now["transparent"] and last is not None
                and now["hash"] == last["hash"]):
            return now
        last = now
        root.page.wait_for_timeout(120)
    raise AssertionError(f"the figure's pixels did not change within {timeout:g} s "
                         f"(still {before['hash']}, {before['ink']} inked pixels)")


def wait_figure_equal(root, expected: dict, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    now = figure(root)
    while now["hash"] != expected["hash"] and time.monotonic() < deadline:
        root.page.wait_for_timeout(150)
        now = figure(root)
    assert now["hash"] == expected["hash"], (
        f"the figure did not come back to its starting pixels: {now} != {expected}")
    return now


def control_state(root) -> dict:
    """What every control under ``root`` shows: slider readouts, checkbox and toggle states,
    dropdown choices, text inputs (compared before and after a reset)."""
    return root.evaluate("""(root) => ({
      sliders: [...root.querySelectorAll('.widget-slider .widget-readout')].map(e => e.textContent.trim()),
      checkboxes: [...root.querySelectorAll('input[type=checkbox]')].map(e => e.checked),
      toggles: [...root.querySelectorAll('.widget-toggle-button, .widget-toggle-buttons button')]
                 .map(e => e.classList.contains('mod-active')),
      selects: [...root.querySelectorAll('select')].map(e => e.value),
      texts: [...root.querySelectorAll('input[type=text], input[type=number]')].map(e => e.value),
    })""")


class _Text(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def text_of(html: str) -> str:
    """The text a browser shows for ``html`` (its textContent), whitespace collapsed."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return " ".join("".join(parser.parts).split())


def page_text(locator) -> str:
    return " ".join(locator.evaluate("e => e.textContent").split())


# --- slider grids ------------------------------------------------------------------------------

def _grid(control):
    """(value of grid point k, number of the last grid point) of a slider."""
    if isinstance(control, W.FloatLogSlider):
        last = round((control.max - control.min) / control.step)
        return (lambda k: control.base ** (control.min + k * control.step)), last
    last = round((control.max - control.min) / control.step)
    if isinstance(control, W.IntSlider):
        return (lambda k: int(control.min + k * control.step)), last
    return (lambda k: round(control.min + k * control.step, 12)), last


def grid_index(control, value: float) -> int:
    """The grid point nearest ``value`` (log sliders: nearest on the log scale)."""
    at, last = _grid(control)
    if isinstance(control, W.FloatLogSlider):
        return min(range(last + 1), key=lambda k: abs(math.log(at(k)) - math.log(value)))
    return min(range(last + 1), key=lambda k: abs(at(k) - value))


# --- one explorer in the page -----------------------------------------------------------------

def core_check(name: str):
    """The widget tests' check that an explorer's state is the core's result for its control
    values (``tests/widgets/explorer_checks.py``), for explorer ``name``; None for the trained
    model's explorer (its numbers are the model's, checked in ``tests/widgets/test_model_explorer.py``)."""
    if name == "model":
        return None
    sys.path.insert(0, str(H.ROOT / "tests" / "widgets"))
    from explorer_checks import check_explorer

    return lambda twin: check_explorer(name, twin)


#: focus the first element of an explorer that Tab can reach
_FOCUS_FIRST_JS = """(root) => [...root.querySelectorAll('select, input, button, [tabindex]')]
  .find(e => e.tabIndex >= 0 && !e.disabled && e.getClientRects().length).focus()"""
#: where the keyboard focus is: in which explorer control, in the figure, on the reset button
_FOCUSED_JS = """() => {
  const e = document.activeElement, box = e.getBoundingClientRect(), style = getComputedStyle(e);
  const control = [...(e.closest('[class*="al-control-"]') || {classList: []}).classList]
    .find(c => c.startsWith('al-control-'));
  return {tag: e.tagName, text: (e.getAttribute('aria-label') || e.textContent).trim().slice(0, 40),
          control: control ? control.slice('al-control-'.length) : null,
          inside: !!e.closest('.al-explorer'), figure: !!e.closest('.al-figure'),
          reset: e.classList.contains('al-reset-explorer'),
          visible: box.width > 0 && box.height > 0 && style.visibility !== 'hidden',
          ring: [style.outlineStyle, parseFloat(style.outlineWidth), style.outlineColor]};
}"""


def contrast_on_white(css_colour: str) -> float:
    """The WCAG contrast of a CSS ``rgb(...)``/``rgba(...)`` colour with white (1 to 21)."""
    r, g, b = (float(v) / 255 for v in re.findall(r"[\d.]+", css_colour)[:3])
    lum = sum(w * (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
              for w, c in zip((0.2126, 0.7152, 0.0722), (r, g, b)))
    return 1.05 / (lum + 0.05)


class Driver:
    """The explorer under ``root`` (its ``.al-explorer-<name>`` box) and its ``twin``; ``check``
    (see :func:`core_check`) confirms after every action that the twin holds the core's numbers,
    so that the page's readout is compared with the core's result."""

    def __init__(self, root, twin, steps, title: str = "", check=None):
        self.root, self.twin, self.steps = root, twin, steps
        self.page = root.page
        self.title = title or type(twin).__name__
        self.check = check

    # reading
    def control(self, key: str):
        return self.root.locator(f".al-control-{key}").first

    def readout(self) -> str:
        return page_text(self.root.locator(".al-readout").first)

    def expected(self) -> str:
        return text_of(self.twin.readout.value)

    def check_tasks(self, timeout: float = 10.0) -> None:
        """The page's task box shows the twin's tasks: the same ticks and the same open goal.
        (Reached tasks stay ticked, so after a drag, which passes through values the twin never
        takes, the two may differ: call it where the path cannot matter.)"""
        want = text_of(self.twin.task_box.value)
        box = self.root.locator(".al-tasks").first
        deadline = time.monotonic() + timeout
        got = page_text(box)
        while got != want and time.monotonic() < deadline:
            self.page.wait_for_timeout(100)
            got = page_text(box)
        assert got == want, f"{self.title}: tasks in the page: {got!r}, expected {want!r}"

    def check_accessible(self, timeout: float = 15.0) -> None:
        """The readout and the tasks are polite live regions, the figure an image named by the
        explorer, and every control in Chromium's accessibility tree has a name."""
        readout = self.root.locator(".al-readout .widget-html-content").first
        expect(readout).to_have_attribute("aria-live", "polite", timeout=timeout * 1000)
        expect(readout).to_have_attribute("role", "status")
        if self.twin.show_tasks and self.twin.tasks:  # a task's tick is announced too
            tasks = self.root.locator(".al-tasks .widget-html-content").first
            expect(tasks).to_have_attribute("aria-live", "polite", timeout=timeout * 1000)
            expect(tasks).to_have_attribute("role", "status")
        figure = self.root.locator(".al-figure").first
        expect(figure).to_have_attribute("role", "img")
        expect(figure).to_have_attribute("aria-label", self.twin.accessible_label)
        tree = self.root.aria_snapshot()
        unnamed = [line.strip() for line in tree.splitlines()
                   if re.match(r"\s*- (slider|button|checkbox|combobox|radio|textbox|spinbutton)"
                               r"(:|$|\s*\[)", line)]
        assert not unnamed, f"{self.title}: controls without an accessible name: {unnamed}"
        assert re.search(r'- slider "[^"]+"', tree), f"{self.title}: no named slider:\n{tree}"
        sliders = re.findall(r'- slider "([^"]+)"', tree)  # each has a field to type a value in
        fields = re.findall(r'- textbox "([^"]+)"', tree)
        assert [f"{s}, typed value" for s in sliders] == fields, (sliders, fields)
        self.check_pressed()
        self.check_tab_order()

    def check_pressed(self, timeout: float = 10.0) -> None:
        """Each toggle button tells a screen reader whether it is pressed (not by its shade
        alone): the pressed buttons in Chromium's accessibility tree are the twin's choices."""
        want = []
        for c in self.twin.controls.values():
            if isinstance(c, W.ToggleButtons):
                want.append(dict(zip(c._options_values, c._options_labels))[c.value])
            elif isinstance(c, W.ToggleButton) and c.value:
                want.append(c.description)
        pressed = self.root.get_by_role("button", pressed=True)
        deadline = time.monotonic() + timeout
        while (got := sorted(t.strip() for t in pressed.all_inner_texts())) != sorted(want):
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.title}: pressed buttons in the page {got}, "
                                     f"expected {sorted(want)}")
            self.page.wait_for_timeout(100)

    def check_tab_order(self, limit: int = 60) -> None:
        """Tab, from the explorer's first control, stops at every control and then at the reset
        button, each stop visible with a clear focus ring and none in the figure (ipympl's canvas keeps every key it gets,
        Tab included: a keyboard user who tabbed into it could not leave); after a click on the
        figure, Tab leaves it."""
        self.root.evaluate(_FOCUS_FIRST_JS)
        stops = []
        for _ in range(limit):
            stops.append(self.page.evaluate(_FOCUSED_JS))
            if stops[-1]["reset"] or not stops[-1]["inside"]:
                break
            self.page.keyboard.press("Tab")
        trapped = [s for s in stops if s["figure"]]
        assert not trapped, f"{self.title}: Tab stopped in the figure: {trapped[:2]}"
        assert stops[-1]["reset"], f"{self.title}: Tab did not reach the reset button: {stops}"
        assert all(s["visible"] for s in stops), f"{self.title}: a stop is hidden: {stops}"
        faint = [(s["text"], s["ring"]) for s in stops[1:] if s["ring"][0] in ("none", "hidden")
                 or s["ring"][1] < 2 or contrast_on_white(s["ring"][2]) < 3]
        assert not faint, f"{self.title}: no clear focus ring (2 px, 3:1 on white): {faint}"
        reached = {s["control"] for s in stops}
        missing = [k for k in self.twin.controls if k not in reached]
        assert not missing, f"{self.title}: Tab never reached {missing}: {stops}"
        self.root.locator(".al-figure").first.click(position={"x": 4, "y": 4})  # a mouse user
        self.page.keyboard.press("Tab")
        assert not self.page.evaluate(_FOCUSED_JS)["figure"], f"{self.title}: Tab stays in the figure"

    def check_readout(self, timeout: float = 15.0) -> None:
        """The page's readout shows the twin's numbers (polls until it does)."""
        if self.check is not None:
            self.check(self.twin)
        deadline = time.monotonic() + timeout
        want = self.expected()
        got = self.readout()
        while got != want and time.monotonic() < deadline:
            self.page.wait_for_timeout(100)
            got = self.readout()
        assert got == want, (f"{self.title}: the readout in the page does not show the core's "
                             f"numbers for the controls' values {self.values()}:\n  page: {got}\n"
                             f"  core: {want}")

    def values(self) -> dict:
        return {k: c.value for k, c in self.twin.controls.items()}

    def check_drawn(self, min_width: int = 600) -> dict:
        fig = wait_drawn(self.root)
        assert fig["width"] >= min_width, f"{self.title}: figure only {fig['width']} px wide"
        assert fig["ink"] > 2000, f"{self.title}: the figure looks blank ({fig['ink']} inked px)"
        return fig

    # acting: each action is done in the page and on the twin, then checked
    def _after(self, before: dict, what: str) -> dict:
        self.check_readout()
        self.check_pressed()
        after = wait_figure_change(self.root, before)
        self.steps(f"{self.title}: {what}")
        return after

    def press(self, key: str, arrow: str = "ArrowRight", times: int = 1) -> dict:
        """Focus the slider ``key``'s handle and press ``arrow`` ``times`` times."""
        c = self.twin.controls[key]
        at, last = _grid(c)
        k = grid_index(c, c.value) + times * (1 if arrow in ("ArrowRight", "ArrowUp") else -1)
        k = min(max(k, 0), last)
        before = figure(self.root)
        row = self.control(key)
        row.locator(".noUi-handle").first.focus()
        for _ in range(times):
            self.page.keyboard.press(arrow)
        self._expect_slider(row, at(k))
        c.value = at(k)
        return self._after(before, f"slider {key}: {times} x {arrow}")

    def drag(self, key: str, fraction: float) -> dict:
        """Drag the slider ``key``'s handle with the mouse to ``fraction`` of its track."""
        c = self.twin.controls[key]
        at, last = _grid(c)
        before = figure(self.root)
        row = self.control(key)
        row.scroll_into_view_if_needed()  # the mouse acts at page coordinates
        shown = row.locator(".widget-readout").first
        old = shown.inner_text()
        H.drag_slider(self.page, row.locator(".noUi-handle").first, fraction)
        expect(shown).not_to_have_text(old)
        k = grid_index(c, self._number(shown))
        assert abs(k / last - fraction) <= 0.1, (
            f"{self.title}: dragged {key} to {fraction:.0%} of the track but the slider shows "
            f"{shown.inner_text()} (grid point {k} of {last})")
        self._expect_slider(row, at(k))
        c.value = at(k)
        return self._after(before, f"slider {key} dragged with the mouse to {fraction:.0%}")

    def _number(self, shown, timeout: float = 10.0) -> float:
        """The number a slider's readout shows (it is briefly blank while the page rewrites it)."""
        deadline = time.monotonic() + timeout
        while True:
            text = shown.inner_text().replace("−", "-").strip()
            try:
                return float(text)
            except ValueError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{self.title}: the slider's readout shows {text!r}")
            self.page.wait_for_timeout(100)

    def _expect_slider(self, row, value: float) -> None:
        """The slider's readout shows ``value`` (to the precision it prints)."""
        shown = row.locator(".widget-readout").first
        deadline = time.monotonic() + 10
        while True:
            text = shown.inner_text().replace("−", "-")
            try:
                ok = math.isclose(float(text), value, rel_tol=6e-3, abs_tol=6e-3)
            except ValueError:
                ok = False
            if ok or time.monotonic() > deadline:
                break
            self.page.wait_for_timeout(100)
        assert ok, f"{self.title}: the slider shows {text}, expected {value:.4g}"

    def key_toggle(self, key: str) -> dict:
        """Focus a checkbox or a toggle button and press Space (no mouse)."""
        c = self.twin.controls[key]
        before = figure(self.root)
        box = self.control(key)
        target = box.locator("input") if isinstance(c, W.Checkbox) else box
        target.focus()
        self.page.keyboard.press("Space")
        if isinstance(c, W.Checkbox):
            expect(target).to_be_checked(checked=not c.value)
        c.value = not c.value
        return self._after(before, f"{key} {'on' if c.value else 'off'} with the space bar")

    def key_choose(self, key: str, label: str) -> dict:
        """Focus the button ``label`` of a row of toggle buttons and press Enter (no mouse)."""
        c = self.twin.controls[key]
        value = dict(zip(c._options_labels, c._options_values))[label]
        before = figure(self.root)
        button = self.control(key).locator("button").filter(has_text=label).first
        button.focus()
        self.page.keyboard.press("Enter")
        expect(button).to_have_class(ACTIVE)
        c.value = value
        return self._after(before, f"{key}: chose {label!r} with Enter")

    def toggle(self, key: str) -> dict:
        """Click a toggle button or a checkbox."""
        c = self.twin.controls[key]
        before = figure(self.root)
        box = self.control(key)
        if isinstance(c, W.Checkbox):
            box.locator("input").click()
            expect(box.locator("input")).to_be_checked(checked=not c.value)
        else:
            box.click()
            if c.value:
                expect(box).not_to_have_class(ACTIVE)
            else:
                expect(box).to_have_class(ACTIVE)
        c.value = not c.value
        return self._after(before, f"{key} {'on' if c.value else 'off'}")

    def choose(self, key: str, label: str) -> dict:
        """Pick ``label`` in a dropdown or a row of toggle buttons."""
        c = self.twin.controls[key]
        value = dict(zip(c._options_labels, c._options_values))[label]
        before = figure(self.root)
        box = self.control(key)
        if isinstance(c, W.Dropdown):
            box.locator("select").select_option(label=label)
        else:
            button = box.locator("button").filter(has_text=label).first
            button.click()
            expect(button).to_have_class(ACTIVE)
        c.value = value
        return self._after(before, f"{key}: chose {label!r}")

    def type_text(self, key: str, text: str) -> dict:
        """Type ``text`` into a text box (or combobox) and press Enter."""
        c = self.twin.controls[key]
        before = figure(self.root)
        field = self.control(key).locator("input").first
        field.fill(text)
        field.press("Enter")
        c.value = text
        return self._after(before, f"typed {text!r} into {key}")
