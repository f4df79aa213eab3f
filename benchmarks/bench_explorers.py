"""Explorers: from setting a control's value to the figure drawn on its canvas, against rebuilding
the same figure from scratch on every change (what ``ipywidgets.interact`` does); and the execution
time of each level notebook.

Both sides run headless on the Agg canvas and include the same core computation; the candidate
updates artists in place and draws through the cached static layer, the baseline builds a new
figure, updates it and draws it. Measured interleaved (candidate, baseline, candidate, ...) over a
sweep of distinct slider values, so that both see the same load and text caches get no free hits.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from .common import Row

GROUP = "explorers"
ORDER = 30
ROOT = Path(__file__).resolve().parent.parent

GOAL_MS = 15.0
GOAL_RATIO = 4.0
NOTEBOOK_GOAL_S = 20.0


def _sweeps(n: int) -> dict:
    """explorer name -> (setup values, control name, values to sweep)."""
    lin = lambda lo, hi, step: [round(lo + step * round(k), 10) for k in  # noqa: E731
                                np.linspace(0, (hi - lo) / step, n)]
    return {
        "query": ({}, "q1", lin(-1.5, 1.5, 0.05)),
        "score": ({"score": "bilinear"}, "q2", lin(-1.5, 1.5, 0.05)),
        "temperature": ({}, "temperature", list(np.geomspace(0.05, 5, n))),
        "mask": ({"after_softmax": True}, "length", [k % 6 for k in range(n)]),
        "window": ({}, "centre", lin(1.0, 10.0, 0.5)),
        "axis": ({}, "axis", [(-1, -2, 0)[k % 3] for k in range(n)]),
        "precision": ({"length": 2}, "scale", list(np.geomspace(1, 1e4, n))),
        "hull": ({}, "w1", lin(0.0, 1.0, 0.01)),
    }


def _rebuilding(cls):
    """The same explorer, but every change builds a brand-new figure, fills it and draws it."""

    class Rebuild(cls):
        def _show(self, state):
            self.plot = self._make_plot()
            self.plot.add_error_box()
            super()._show(state)

        def _draw_now(self):
            self.plot.figure.canvas.draw()

    Rebuild.__name__ = f"Rebuild{cls.__name__}"
    return Rebuild


def _time_set(explorer, control, value) -> tuple[float, float]:
    """(wall, CPU) seconds of one control change; CPU time is less sensitive to other load."""
    c = explorer.controls[control]
    t0, c0 = time.perf_counter(), time.process_time()
    c.value = value  # agg backend: recompute, update artists, canvas.draw(), synchronously
    return time.perf_counter() - t0, time.process_time() - c0


def explorer_rows(quick: bool) -> list[Row]:
    from attention_lab import widgets

    n = 9 if quick else 31
    rows = []
    for name, (setup, control, values) in _sweeps(n).items():
        cls = widgets.EXPLORERS[name]
        live = cls(backend="agg")
        rebuild = _rebuilding(cls)(backend="agg")
        for e in (live, rebuild):
            e.set(**setup)
            for v in values[:3]:  # warm-up: first draws, imports, font caches
                e.controls[control].value = v
        fast, slow, cpu = [], [], []
        for v in values:
            wall, used = _time_set(live, control, v)
            fast.append(wall)
            cpu.append(used)
            slow.append(_time_set(rebuild, control, v)[0])
        assert live.last_error is None and rebuild.last_error is None
        np.testing.assert_allclose(np.asarray(live.state.weights, float),
                                   np.asarray(rebuild.state.weights, float), equal_nan=True)
        t_fast, t_slow = statistics.median(fast), statistics.median(slow)
        rows.append(Row(GROUP, f"{cls.__name__}: set {control!r} -> drawn (Agg), median of "
                               f"{len(values)} (CPU {statistics.median(cpu) * 1e3:.1f} ms)",
                        t_fast, "s", t_slow, "rebuild per change",
                        f"<= {GOAL_MS:g} ms and >= {GOAL_RATIO:g}x faster",
                        t_fast <= GOAL_MS / 1000 and t_slow / t_fast >= GOAL_RATIO))
    return rows


def ipympl_rows(quick: bool) -> list[Row]:
    """What the kernel does per frame for the browser: draw, diff against the last frame, PNG;
    the explorers' canvas against ipympl's own frame encoding (Pillow, adaptive row filters),
    interleaved. The model explorer's baseline is its figure before the layered redraw
    (a full constrained-layout redraw and ipympl's encoding)."""
    import warnings

    from ipympl.backend_nbagg import Canvas

    from attention_lab import widgets

    if not widgets.ipympl_available():
        return []
    def make(name, presentation, stock):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if name == "model":
                from attention_lab.toy.explorer import ModelExplorer

                e = ModelExplorer(presentation=presentation)
                canvas = e._canvas
                canvas.figure.cache_enabled = not stock
            else:
                e = widgets.EXPLORERS[name](backend="ipympl", presentation=presentation)
                canvas = e.canvas
        canvas.syncing_data_url = False  # as once the browser has said 'initialized'
        canvas.send_binary = lambda data: None
        canvas.draw_idle = lambda: None
        if stock:
            canvas.get_diff_image = lambda: Canvas.get_diff_image(canvas)
        return e, canvas

    rows = []
    n = 9 if quick else 31
    sweeps = _sweeps(n)
    # the model: temperature key presses around 1 (the slider's step is 10**0.05)
    sweeps["model"] = ({}, "temperature", [10 ** (0.05 * (k % 7 - 3)) for k in range(n)])
    for name, (setup, control, values) in sweeps.items():
        if name not in ("query", "temperature", "mask", "model"):
            continue
        for presentation in (False, True):
            pair = {how: make(name, presentation, how == "stock") for how in ("fast", "stock")}
            times = {"fast": [], "stock": []}
            for how, (e, canvas) in pair.items():
                for k, v in setup.items():
                    e.controls[k].value = v
                canvas.draw()
            for v in values:  # interleaved: the same values, one instance after the other
                for how, (e, canvas) in pair.items():
                    e.controls[control].value = v
                    t0 = time.perf_counter()
                    canvas.draw()
                    times[how].append(time.perf_counter() - t0)
            fast, stock = statistics.median(times["fast"]), statistics.median(times["stock"])
            e = pair["fast"][0]
            size = "presentation" if presentation else "notebook"
            what = ("full redraw + ipympl's PNG frames" if name == "model"
                    else "ipympl's PNG frames")
            rows.append(Row(GROUP, f"{type(e).__name__} ({size} size) on ipympl: canvas.draw() + "
                                   f"frame for the browser", fast, "s", stock, what, "reported"))
    return rows


def notebook_rows() -> list[Row]:
    import jupytext
    from nbclient import NotebookClient

    rows = []
    for stem in ("01_intuition", "02_mechanics", "03_maths_and_code"):
        path = ROOT / "notebooks" / f"{stem}.py"
        nb = jupytext.read(path)
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}
        client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}})
        t0 = time.perf_counter()
        client.execute()
        t = time.perf_counter() - t0
        rows.append(Row(GROUP, f"execute notebooks/{stem} (fresh kernel, all cells)", t, "s",
                        goal=f"<= {NOTEBOOK_GOAL_S:g} s", ok=t <= NOTEBOOK_GOAL_S))
    return rows


def run(quick: bool = False) -> list[Row]:
    return explorer_rows(quick) + ipympl_rows(quick) + notebook_rows()
