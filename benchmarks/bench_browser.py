"""Browser: from a slider key press to the repainted figure, in JupyterLab and in Voila.

For each of the lecture demo's explorers (:data:`TARGETS`) the benchmark opens a notebook that shows
it, in JupyterLab at notebook size and in Voila at presentation size (standalone Voila started by the
lecture demo's launcher, ``python -m attention_lab demo --notebook ...``, one server per page), focuses the slider handle and presses the arrow keys, alternating right and left, with a pause
between presses. Times are taken in the page (performance.now()): from the keydown event to the
first animation frame after the figure was repainted (a drawImage onto the ipympl canvas, or the
decoded new <img> of the inline backend), and to the update of the explorer's text readout. The
baseline, measured beside each explorer and interleaved press by press, is the same figure rebuilt
through ``interact`` + the inline backend (:func:`interact_baseline`).

Add an explorer by adding a :class:`Target` (a name for the table, the explorer's key, the control
whose slider is pressed). Needs Debian's chromium (/usr/bin/chromium); without it the group prints
why and measures nothing.
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
    """One explorer and the slider the benchmark presses."""

    name: str        # what the table calls it
    explorer: str    # key of attention_lab.widgets.EXPLORERS, or "model" (the trained model's)
    control: str     # the control whose slider handle is pressed

    def code(self, presentation: bool) -> str:
        """The notebook cell that displays the explorer (as in the level notebooks; in
        presentation mode as in the lecture demo)."""
        return (f"from benchmarks.bench_browser import make_explorer\n"
                f"make_explorer({self.explorer!r}, presentation={presentation})")

    def baseline_code(self, presentation: bool) -> str:
        """The same figure through ``interact`` + the inline backend."""
        return ("%matplotlib inline\n"
                "from benchmarks.bench_browser import interact_baseline\n"
                f"interact_baseline({self.explorer!r}, {self.control!r}, "
                f"presentation={presentation})")

    @property
    def slider(self) -> str:
        css = "model" if self.explorer == "model" else self.explorer
        return f".al-explorer-{css} .al-control-{self.control} .noUi-handle"


#: the lecture demo's explorers, each with the slider a lecturer moves most
TARGETS = [
    Target("QueryExplorer, q[1]", "query", "q1"),
    Target("TemperatureExplorer, temperature", "temperature", "temperature"),
    Target("MaskExplorer, valid length", "mask", "length"),
    Target("WindowExplorer, window centre", "window", "centre"),
    Target("ScoreExplorer, q[2]", "score", "q2"),
    Target("ModelExplorer (trained model), temperature", "model", "temperature"),
]
BASELINE_SLIDER = ".al-bench-slider .noUi-handle"
#: JupyterLab shows the explorers as the level notebooks do; Voila as the lecture demo does
PRESENTATION = {"JupyterLab": False, "Voila": True}


def make_explorer(name: str, presentation: bool = False, **kwargs):
    """An explorer by name (``"model"``: the trained model's), as the notebooks make them."""
    if name == "model":
        from attention_lab.toy.explorer import ModelExplorer

        return ModelExplorer(presentation=presentation, **kwargs)
    from attention_lab import widgets

    return widgets.EXPLORERS[name](presentation=presentation, **kwargs)


def _copy_slider(proto):
    import ipywidgets as W

    keys = ["value", "min", "max", "step", "description", "readout_format"]
    if isinstance(proto, W.FloatLogSlider):
        keys.append("base")
    slider = type(proto)(**{k: getattr(proto, k) for k in keys}, continuous_update=True)
    slider.add_class("al-bench-slider")
    return slider


def interact_baseline(name: str, control: str, presentation: bool = False):
    """``ipywidgets.interact`` with the inline backend, drawing the explorer's figure: every change
    builds a new figure from scratch, fills it with the core's numbers and shows it as a PNG
    (what a notebook without the explorers does). Runs in the benchmark's kernel."""
    import ipywidgets as W
    from IPython.display import display

    ex = make_explorer(name, presentation, backend="agg")
    ex.view.refresh = lambda: None  # the explorer only computes; the new figure is drawn below

    def show(**values):
        ex.controls[control].value = values[control]  # the core's (or the model's) numbers
        ex.plot = ex._make_plot()
        ex.plot.add_error_box()
        ex._show(ex.state)
        display(ex.plot.figure)

    W.interact(show, **{control: _copy_slider(ex.controls[control])})


def _harness():
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    import harness

    return harness


class Probe:
    """One page showing one figure, ready to be pressed."""

    def __init__(self, H, context, server, env: str, path: str, slider: str):
        self.page = context.new_page()
        self.page.set_default_timeout(180_000)
        self.notebook = self.voila = None
        if env == "JupyterLab":
            self.notebook = H.LabApp(self.page, server).start().open(path)
            self.notebook.run_all()
        else:  # ``server`` is the folder of the notebooks: the demo launcher serves this one
            notebook = Path(server) / path
            self.voila = H.voila_demo(notebook, Path(server).parent / f"voila-{notebook.stem}").start()
            self._load_voila_page()
        self.handle = self.page.locator(slider).first
        self.handle.wait_for(timeout=180_000)
        self.page.wait_for_timeout(1500)  # the first image arrives after the view is created
        self.page.evaluate(H.REPAINT_HOOK_JS)
        self.figure_ms: list[float] = []
        self.label_ms: list[float] = []

    def _load_voila_page(self, tries: int = 5) -> None:
        """Open the Voila page; reload it (a new kernel) when it never finishes loading. Voila 0.5
        now and then waits forever for a notebook whose cell shows an ``interact`` (the baseline):
        the kernel is idle, the page never loads (as in voila-dashboards/voila#1428)."""
        for attempt in range(1, tries + 1):
            try:
                self.page.goto(self.voila.url("/"), timeout=20_000)  # loads in 3-5 s
                return
            except Exception as e:  # playwright's TimeoutError
                if attempt == tries or "Timeout" not in type(e).__name__:
                    raise
                print(f"    Voila page did not load in 20 s, reloading ({attempt}/{tries - 1})",
                      file=sys.stderr, flush=True)

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

    def close(self) -> None:
        try:
            if self.notebook is not None:
                self.notebook.close()  # shuts its kernel down
            self.page.close()
        finally:
            if self.voila is not None:
                self.voila.stop()  # Voila and its kernel


def _measure(H, browser, server, env: str, paths: dict, presses: int) -> dict:
    """Median seconds per probe name. Each target is measured beside its baseline (two pages,
    pressed in turn, press by press), then both pages are closed with their kernels (and, for
    Voila, their servers). The Jupyter server's Voila extension (``/voila/render/...``) was not
    used: on this machine it regularly never executed the second notebook opened beside another."""
    viewport = {"width": 1920, "height": 1080} if PRESENTATION[env] else H.VIEWPORT
    out = {}
    for target in TARGETS:
        names = [target.name, f"baseline:{target.name}"]
        context = browser.new_context(viewport=viewport)
        probes = {}
        try:
            for name in names:
                probes[name] = Probe(H, context, server, env, *paths[name])
            for i in range(presses + 1):  # the first press of each probe is a warm-up
                for probe in probes.values():
                    probe.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
            for name, probe in probes.items():
                out[name] = statistics.median(probe.figure_ms[1:]) / 1e3
                if len(probe.label_ms) > 1:
                    out[f"{name} [label]"] = statistics.median(probe.label_ms[1:]) / 1e3
        finally:
            for probe in probes.values():
                try:
                    probe.close()
                except Exception:
                    pass
            context.close()
    return out


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
        pages = {}
        for env, presentation in PRESENTATION.items():
            pages[env] = {}
            for i, t in enumerate(TARGETS):
                path = f"{env.lower()}_target_{i}.ipynb"
                H.write_notebook([t.code(presentation)], root / path)
                pages[env][t.name] = (path, t.slider)
                path = f"{env.lower()}_baseline_{i}.ipynb"
                H.write_notebook([t.baseline_code(presentation)], root / path)
                pages[env][f"baseline:{t.name}"] = (path, BASELINE_SLIDER)
        with sync_playwright() as p:
            browser = H.launch_chromium(p)
            try:
                for env, paths in pages.items():
                    size = "presentation size" if PRESENTATION[env] else "notebook size"
                    print(f"  {env}: {len(paths)} pages, {presses} presses each ...",
                          file=sys.stderr, flush=True)
                    if env == "JupyterLab":
                        with H.jupyter_lab(root, work / "lab") as server:
                            t = _measure(H, browser, server, env, paths, presses)
                    else:
                        t = _measure(H, browser, root, env, paths, presses)
                    for target in TARGETS:
                        value = t[target.name]
                        rows.append(Row(
                            GROUP, f"{env}: key press -> figure repainted, {target.name} "
                                   f"({size}, median of {presses})",
                            value, "s", t[f"baseline:{target.name}"], "interact + inline",
                            "<= 60 ms", value <= GOAL_S))
                    for target in TARGETS:
                        label = t.get(f"{target.name} [label]")
                        if label is not None:
                            rows.append(Row(GROUP, f"{env}: key press -> readout text updated, "
                                                   f"{target.name} (widget round trip + core)",
                                            label, "s", goal="reported"))
            finally:
                browser.close()
    return rows
