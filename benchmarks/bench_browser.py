"""Browser: from a slider key press to the repainted figure, in JupyterLab and in Voila.

For each target (a notebook cell that shows a figure and its slider) the benchmark opens the notebook
in JupyterLab and in Voila (the Jupyter server's Voila extension), focuses the slider handle and
presses the arrow keys, alternating right and left, with a pause between presses. Times are taken in
the page (performance.now()): from the keydown event to the first animation frame after the figure
was repainted (a drawImage onto the ipympl canvas, or the decoded new <img> of the inline backend).
The baseline, measured in the same run and interleaved press by press, is the same figure rebuilt
through ``interact`` + the inline backend.

Point it at other explorers by adding a :class:`Target` (the cell that shows it, the selector of
the slider handle to press, and the name of its ``interact`` baseline in ``BASELINES``).

Needs Debian's chromium (/usr/bin/chromium); without it the group prints why and measures nothing.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .common import Row

GROUP = "browser"
ORDER = 90
ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 0.060


@dataclass(frozen=True)
class Target:
    name: str        # what the table calls it
    code: str        # the notebook cell that displays the figure and its controls
    slider: str      # Playwright selector of the slider handle that the benchmark presses
    baseline: str    # key of the same figure's interact + inline version in BASELINES


STANDIN = ("from attention_lab._standin import WeightsExplorer\n"
           "explorer = WeightsExplorer(('temperature',), blit={blit})\n"
           "explorer")
STANDIN_SLIDER = ".al-standin .widget-slider .noUi-handle"

TARGETS = [
    Target("stand-in explorer, ipympl, blitting", STANDIN.format(blit=True), STANDIN_SLIDER,
           "standin"),
    Target("stand-in explorer, ipympl, full redraw", STANDIN.format(blit=False), STANDIN_SLIDER,
           "standin"),
    # The real explorers, once attention_lab.widgets has them, e.g.:
    # Target("temperature explorer", "from attention_lab.widgets import TemperatureExplorer\n"
    #        "TemperatureExplorer()", ".widget-slider .noUi-handle", "temperature"),
]

BASELINES = {
    "standin": (
        "%matplotlib inline\n"
        "import ipywidgets as W\n"
        "from attention_lab._standin import LOG_TAU_MAX, LOG_TAU_MIN, LOG_TAU_STEP, draw_static\n"
        "slider = W.FloatLogSlider(value=1.0, base=10, min=LOG_TAU_MIN, max=LOG_TAU_MAX,\n"
        "                          step=LOG_TAU_STEP, description='temperature')\n"
        "slider.add_class('al-bench-slider')\n"
        "W.interact(lambda temperature: draw_static(temperature=temperature), "
        "temperature=slider);"),
}
BASELINE_SLIDER = ".al-bench-slider .noUi-handle"


def _harness():
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    import harness

    return harness


class Probe:
    """One page showing one figure, ready to be pressed."""

    def __init__(self, H, context, server, env: str, path: str, slider: str):
        self.page = context.new_page()
        self.page.set_default_timeout(60_000)
        if env == "JupyterLab":
            H.LabApp(self.page, server).start().open(path).run_all()
        else:
            self.page.goto(server.url(f"/voila/render/{path}"))
        self.handle = self.page.locator(slider).first
        self.handle.wait_for(timeout=120_000)
        self.page.wait_for_timeout(1500)  # the first image arrives after the view is created
        self.page.evaluate(H.REPAINT_HOOK_JS)
        self.figure_ms: list[float] = []
        self.label_ms: list[float] = []

    def press(self, key: str) -> None:
        page = self.page
        page.bring_to_front()
        self.handle.focus()
        page.evaluate("() => { window.__al.paints.length = 0; window.__al.labels.length = 0; }")
        page.keyboard.press(key)
        page.wait_for_function("() => window.__al.paints.some(p => p[0] > window.__al.keydown)",
                               timeout=15_000)
        page.wait_for_timeout(250)  # let the change settle before the next press
        key_t, paints, labels = page.evaluate(
            "() => [window.__al.keydown, window.__al.paints, window.__al.labels]")
        self.figure_ms.append(min(p[1] for p in paints if p[0] > key_t) - key_t)
        later = [p[1] for p in labels if p[0] > key_t]
        if later:
            self.label_ms.append(min(later) - key_t)


def _measure(H, browser, server, env: str, paths: dict, presses: int) -> dict:
    """Median seconds per probe name; the probes are pressed in turn, press by press."""
    context = browser.new_context(viewport=H.VIEWPORT)
    try:
        probes = {name: Probe(H, context, server, env, path, slider)
                  for name, (path, slider) in paths.items()}
        for i in range(presses + 1):  # the first press of each probe is a warm-up
            for probe in probes.values():
                probe.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        out = {}
        for name, probe in probes.items():
            out[name] = statistics.median(probe.figure_ms[1:]) / 1e3
            if len(probe.label_ms) > 1:
                out[f"{name} [label]"] = statistics.median(probe.label_ms[1:]) / 1e3
        return out
    finally:
        context.close()


def run(quick: bool = False) -> list[Row]:
    H = _harness()
    reason = H.browser_unavailable_reason()
    if reason:
        print(f"browser benchmark skipped: {reason}", file=sys.stderr)
        return []
    from playwright.sync_api import sync_playwright

    presses = 10 if quick else 20
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="al-bench-browser-") as tmp:
        work = Path(tmp)
        root = work / "root"
        paths = {}
        for i, t in enumerate(TARGETS):
            H.write_notebook([t.code], root / f"target_{i}.ipynb")
            paths[t.name] = (f"target_{i}.ipynb", t.slider)
        for key, code in BASELINES.items():
            H.write_notebook([code], root / f"baseline_{key}.ipynb")
            paths[f"baseline:{key}"] = (f"baseline_{key}.ipynb", BASELINE_SLIDER)
        with H.jupyter_lab(root, work / "lab") as server, sync_playwright() as p:
            browser = H.launch_chromium(p)
            try:
                for env in ("JupyterLab", "Voila"):
                    print(f"  {env}: {len(paths)} pages, {presses} presses each ...",
                          file=sys.stderr, flush=True)
                    t = _measure(H, browser, server, env, paths, presses)
                    for target in TARGETS:
                        value = t[target.name]
                        rows.append(Row(
                            GROUP, f"{env}: key press -> figure repainted, {target.name} "
                                   f"(median of {presses})",
                            value, "s", t[f"baseline:{target.baseline}"], "interact + inline",
                            "<= 60 ms", value <= GOAL_S))
                    label = t.get(f"{TARGETS[0].name} [label]")
                    if label is not None:
                        rows.append(Row(GROUP, f"{env}: key press -> readout label updated "
                                               f"(widget round trip, no figure)", label, "s",
                                        goal="reported"))
            finally:
                browser.close()
    return rows
