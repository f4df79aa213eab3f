"""Driving an explorer in the page like a person does (keyboard, mouse, clicks) and reading back what
the page shows: the ipympl canvas pixels, the slider readouts and the explorer's readout label.

The expected readout label is computed in the test process by the same core functions
(``attention_lab._standin.compute`` / ``readout_text``) from the values the controls must have:
a key press moves a slider by exactly one step, so the browser's value is known.
"""

from __future__ import annotations

import time

import harness as H
from playwright.sync_api import expect

from attention_lab._standin import compute, readout_text, temperature_at


def slider(root, description: str):
    """The ipywidgets slider (its whole row) whose description is ``description``."""
    return root.locator(".widget-slider").filter(
        has=root.page.locator(".widget-label", has_text=description)).first


def handle(row):
    return row.locator(".noUi-handle").first


def readout(row) -> str:
    return row.locator(".widget-readout").first.inner_text().strip()


def figure(root) -> dict:
    """Size, pixel hash and inked-pixel count of the explorer's ipympl canvas."""
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
        root.page.wait_for_timeout(150)
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


class Explorer:
    """The stand-in explorer under ``root`` and the control values the page should show."""

    def __init__(self, root, steps):
        self.root, self.page, self.steps = root, root.page, steps
        self.values = {"query_mix": 0.0, "temperature": 1.0, "score": "dot",
                       "eligible": [True] * 5}
        self.temperature_step = 26  # the log slider's grid position of tau = 1

    def expected_label(self) -> str:
        v = dict(self.values, eligible=tuple(self.values["eligible"]))
        return readout_text(compute(**v), v["query_mix"])

    def label(self):
        return self.root.locator(".al-readout")

    def check_label(self) -> None:
        expect(self.label()).to_have_text(self.expected_label(), timeout=15_000)

    def check_drawn(self, min_width: int = 600) -> dict:
        fig = wait_drawn(self.root)
        assert fig["width"] >= min_width, f"figure only {fig['width']} px wide"
        assert fig["ink"] > 2000, f"the figure looks blank ({fig['ink']} inked pixels)"
        return fig

    # each action: do it, check the label shows the core's numbers and the pixels changed
    def _after(self, before: dict, what: str) -> dict:
        self.check_label()
        after = wait_figure_change(self.root, before)
        self.steps(what)
        return after

    def key_temperature(self, key: str, presses: int) -> dict:
        before = figure(self.root)
        row = slider(self.root, "temperature")
        handle(row).focus()
        for _ in range(presses):
            self.page.keyboard.press(key)
        self.temperature_step += presses * (1 if key in ("ArrowRight", "ArrowUp") else -1)
        self.values["temperature"] = temperature_at(self.temperature_step)
        expect(row.locator(".widget-readout")).to_have_text(f"{self.values['temperature']:.2f}")
        return self._after(before, f"temperature slider: {presses} x {key}")

    def key_query(self, key: str, presses: int) -> dict:
        before = figure(self.root)
        row = slider(self.root, "query mix")
        handle(row).focus()
        for _ in range(presses):
            self.page.keyboard.press(key)
        step = 0.05 * presses * (1 if key in ("ArrowRight", "ArrowUp") else -1)
        self.values["query_mix"] = round(self.values["query_mix"] + step, 2)
        expect(row.locator(".widget-readout")).to_have_text(f"{self.values['query_mix']:.2f}")
        return self._after(before, f"query slider: {presses} x {key}")

    def drag_query(self, fraction: float) -> dict:
        before = figure(self.root)
        row = slider(self.root, "query mix")
        old = readout(row)
        H.drag_slider(self.page, handle(row), fraction)
        expect(row.locator(".widget-readout")).not_to_have_text(old)
        self.values["query_mix"] = float(readout(row))  # a multiple of the 0.05 step
        assert abs(self.values["query_mix"] - fraction) <= 0.1, (
            f"dragged to {fraction:.0%} of the track but the slider reads {readout(row)}")
        return self._after(before, f"query slider dragged with the mouse to {fraction:.0%}")

    def drag_temperature(self, fraction: float) -> dict:
        before = figure(self.root)
        row = slider(self.root, "temperature")
        old = readout(row)
        H.drag_slider(self.page, handle(row), fraction)
        expect(row.locator(".widget-readout")).not_to_have_text(old)
        # the value is 10**(min + k * step) for the grid step k nearest the drop point: find k
        shown = float(readout(row))
        k = min(range(41), key=lambda j: abs(temperature_at(j) - shown))
        self.temperature_step, self.values["temperature"] = k, temperature_at(k)
        return self._after(before, f"temperature slider dragged with the mouse to {fraction:.0%}")

    def toggle_source(self, i: int) -> dict:
        before = figure(self.root)
        box = self.root.locator(".widget-checkbox").filter(has_text=f"source {i}").locator("input")
        was = box.is_checked()
        box.click()
        expect(box).to_be_checked(checked=not was)
        self.values["eligible"][i - 1] = not was
        return self._after(before, f"source {i} checkbox {'cleared' if was else 'ticked'}")

    def choose_score(self, label: str, value: str) -> dict:
        before = figure(self.root)
        select = self.root.locator(".widget-dropdown").filter(
            has=self.page.locator(".widget-label", has_text="score")).locator("select")
        select.select_option(label=label)
        self.values["score"] = value
        return self._after(before, f"score dropdown: {label}")

