"""Explorers: from setting a control's value to the figure drawn on its canvas, against rebuilding
the same figure from scratch on every change (what ``ipywidgets.interact`` does), against the
layered figure of before matplotlib's documented blitting (:class:`CopiedLayers`), and against the
same explorer whose changing labels are stock matplotlib ``Text`` instead of ``FastText``; the
kernel's frames for the browser; and the execution time of each level notebook.

All sides run headless on the Agg canvas and include the same core computation; the candidate
updates artists in place and draws through the cached static layer, the rebuild baseline builds a
new figure, updates it and draws it. Measured interleaved (each value on every side, in a shuffled
order) over a sweep of distinct slider values, so that all see the same load, with the labels'
rasterised lines forgotten before each side's step, so that no side gets another's cache hits.

The blitting rows decided that ``LayeredFigure`` restores its static layer through the canvas's
``copy_from_bbox`` / ``restore_region`` (within 10 % of the hand-copied layer, same pixels); the
``FastText`` rows decide whether its glyph cache (``attention_lab/plots/_render.py``) pays for
itself: it stays only while it buys at least 10 % on the explorers' frames
(``docs/maintainers/decisions.md``).
"""

from __future__ import annotations

import gc
import random
import statistics
import time
import weakref
from pathlib import Path

import zlib

import numpy as np
from matplotlib.backend_bases import DrawEvent
from matplotlib.figure import Figure

from attention_lab._compat import ipympl as ipympl_compat

from .common import Row

GROUP = "explorers"
ORDER = 30
ROOT = Path(__file__).resolve().parent.parent

GOAL_MS = 15.0
GOAL_RATIO = 4.0
RATIO_GOAL = 1.1  # a piece of machinery stays if it buys 10 % on its row (issue 30)
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
        "geometry": ({}, "angle", [int(a) for a in np.linspace(-180, 180, n)]),
        "localp": ({}, "logit", lin(-4.0, 4.0, 0.1)),
        # the trained model: temperature key presses around 1 (the slider's step is 10**0.05)
        "model": ({}, "temperature", [10 ** (0.05 * (k % 7 - 3)) for k in range(n)]),
    }


def make(name: str, **options):
    """An explorer by name, ``"model"`` being the trained model's."""
    if name == "model":
        from attention_lab.toy.explorer import ModelExplorer

        return ModelExplorer(**options)
    from attention_lab import widgets

    return widgets.EXPLORERS[name](**options)


def copied_layers(name: str, **options):
    """``make(name)`` drawing on :class:`CopiedLayers` instead of the blitting LayeredFigure."""
    from unittest import mock

    from attention_lab.plots import _render
    from attention_lab.toy import figures

    with mock.patch.object(_render, "LayeredFigure", CopiedLayers), \
            mock.patch.object(figures, "LayeredFigure", CopiedLayers):
        e = make(name, **options)
    assert isinstance(e.figure, CopiedLayers)
    return e


class CopiedLayers(Figure):
    """The layered figure before matplotlib's documented blitting (a711dad): the static layer's
    Agg buffer copied by hand, restored by a copy, and its draw_event sent on every draw.

    Every draw is layered: the static artists (everything not registered with
    :meth:`add_dynamic`) first, then the dynamic artists in z-order. With an Agg renderer the
    static layer's pixels are copied after it is drawn and restored on the next draws while
    nothing static changed (same size, dpi, axes limits, axes visibility and
    :attr:`static_version`). :meth:`pack_static` keeps them compressed while the figure is idle
    (a presentation figure's 2-3 MiB in tens of KiB); the next draw unpacks them. Saving to a file
    always renders everything.
    """

    def __init__(self, *args, cache: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.cache_enabled = cache
        self._dynamic: list = []
        self.static_version = 0
        self._cache_key = None
        self._static = None  # the static layer's pixels (H, W, 4) uint8, or None
        self._packed = None  # ... or compressed (pack_static): (zlib bytes, shape)
        #: how many times the static layer was rendered (tests and benchmarks read it)
        self.static_renders = 0

    def add_dynamic(self, *artists) -> None:
        """Register artists that updates change; they are drawn on top of the static layer."""
        for a in artists:
            if a not in self._dynamic:
                self._dynamic.append(a)
        self._dynamic.sort(key=lambda a: a.get_zorder())

    @property
    def dynamic_artists(self) -> tuple:
        return tuple(self._dynamic)

    def pack_static(self) -> None:
        """Keep the static layer's pixels compressed until the next draw (an idle figure)."""
        if self._static is not None:
            self._packed = (zlib.compress(self._static, 1), self._static.shape)
            self._static = None

    def _static_pixels(self):
        if self._packed is not None:  # packed by pack_static: unpacked for this draw on
            data, shape = self._packed
            self._static = np.frombuffer(zlib.decompress(data), np.uint8).reshape(shape)
            self._packed = None
        return self._static

    def invalidate_static(self) -> None:
        """Call after changing a static artist (a title, a tick label, a static patch)."""
        self.static_version += 1
        self.stale = True

    def _key(self, renderer):
        axes = tuple((ax.get_visible(), ax.viewLim.bounds, ax.bbox.bounds) for ax in self.axes)
        return (renderer.width, renderer.height, self.dpi, self.static_version, axes)

    def draw(self, renderer):
        if not self.get_visible():
            return
        saving = bool(getattr(self.canvas, "is_saving", lambda: False)())
        can_cache = self.cache_enabled and not saving and hasattr(renderer, "buffer_rgba")
        key = self._key(renderer) if can_cache else None
        static = self._static_pixels() if can_cache and key == self._cache_key else None
        if static is not None:
            np.asarray(renderer.buffer_rgba())[...] = static        # (H, W, 4)
        else:
            visible = [(a, a.get_visible()) for a in self._dynamic]
            for a, _ in visible:
                a.set_visible(False)
            try:
                super().draw(renderer)
            finally:
                for a, v in visible:
                    a.set_visible(v)
            self.static_renders += 1
            if can_cache:
                self._static = np.array(renderer.buffer_rgba())         # (H, W, 4)
                self._packed = None
                # the key after drawing: a draw may move axes (colorbars place themselves then)
                self._cache_key = self._key(renderer)
        for a in self._dynamic:
            if a.get_visible():
                a.draw(renderer)
        self.stale = False
        self.canvas.callbacks.process("draw_event", DrawEvent("draw_event", self.canvas, renderer))


def rebuild_per_change(explorer):
    """Make every change of ``explorer`` build a brand-new figure, fill it and draw it."""
    show = explorer._show

    def rebuild_and_show(state):
        explorer.plot = explorer._make_plot()
        explorer.plot.add_error_box()
        explorer.view.figure = explorer.plot.figure  # the Agg view draws the new figure
        show(state)

    explorer._show = rebuild_and_show
    return explorer


def stock_text(explorer):
    """Draw every changing label of ``explorer`` with a stock matplotlib ``Text`` (laid out and
    rasterised on every draw) instead of ``FastText``'s cached glyphs; same text, place, size,
    colour, alignment and box."""
    from matplotlib.text import Text

    from attention_lab.plots import FastText

    class StockDrawnText(FastText):
        def draw(self, renderer):
            text = self.__dict__.get("_stock")
            if text is None:
                box = (None if self._box is None else
                       dict(boxstyle="square,pad=0.45", facecolor=self._box[0],
                            edgecolor=self._box[1]))
                text = self._stock = Text(*self._xy, "", fontsize=self._size, ha=self._ha,
                                          va=self._va, fontweight=self._weight, bbox=box,
                                          linespacing=self._linespacing,
                                          transform=self.get_transform())
                text.set_figure(self.figure)
            text.set_text(self._text)
            text.set_position(self._xy)
            text.set_color(self._rgba)
            if self.get_visible():
                text.draw(renderer)
            self.stale = False

    labels = [a for a in explorer.figure.dynamic_artists if isinstance(a, FastText)]
    assert labels, f"{type(explorer).__name__} has no FastText label"
    for a in labels:
        a.__class__ = StockDrawnText  # the same object the plot's update() changes
    return explorer


def _time_set(explorer, control, value) -> tuple[float, float]:
    """(wall, CPU) seconds of one control change; CPU time is less sensitive to other load."""
    c = explorer.controls[control]
    t0, c0 = time.perf_counter(), time.process_time()
    c.value = value  # agg backend: recompute, update artists, canvas.draw(), synchronously
    return time.perf_counter() - t0, time.process_time() - c0


def explorer_rows(quick: bool) -> list[Row]:
    from attention_lab.plots._render import forget_text

    n = 9 if quick else 31
    rng = random.Random(0)
    rows, blit_rows, text_rows = [], [], []
    for name, (setup, control, values) in _sweeps(n).items():
        live = make(name, backend="agg")
        rebuild = rebuild_per_change(make(name, backend="agg"))
        stock = stock_text(make(name, backend="agg"))
        copied = copied_layers(name, backend="agg")
        sides = {"live": live, "rebuild": rebuild, "stock": stock, "copied": copied}
        for e in sides.values():
            e.set(**setup)
            for v in values[:3]:  # warm-up: first draws, imports, font caches
                e.controls[control].value = v
        times = {"live": [], "cpu": [], "rebuild": [], "stock": [], "copied": []}
        order = list(sides.items())
        for v in values:  # interleaved: the same value on every side, in a shuffled order
            rng.shuffle(order)
            for how, e in order:
                forget_text()  # no side draws a label another side rasterised (free hits)
                wall, used = _time_set(e, control, v)
                times[how].append(wall)
                if how == "live":
                    times["cpu"].append(used)
            assert np.array_equal(np.asarray(live.canvas.buffer_rgba()),
                                  np.asarray(copied.canvas.buffer_rgba())), f"{name}: pixels differ"
        assert all(e.last_error is None for e in sides.values())
        for e in list(sides.values())[1:]:
            np.testing.assert_allclose(np.asarray(live.state.weights, float),
                                       np.asarray(e.state.weights, float), equal_nan=True)
        t = {k: statistics.median(v) for k, v in times.items()}
        what = f"{type(live).__name__}: set {control!r} -> drawn (Agg), median of {len(values)}"
        rows.append(Row(GROUP, f"{what} (CPU {t['cpu'] * 1e3:.1f} ms)", t["live"], "s",
                        t["rebuild"], "rebuild per change",
                        f"<= {GOAL_MS:g} ms and >= {GOAL_RATIO:g}x faster",
                        t["live"] <= GOAL_MS / 1000 and t["rebuild"] / t["live"] >= GOAL_RATIO))
        blit_rows.append(Row(GROUP, f"{what}, LayeredFigure on matplotlib's blitting (same pixels)",
                             t["live"], "s", t["copied"], "static layer copied by hand",
                             f"<= {RATIO_GOAL:g}x", t["live"] <= RATIO_GOAL * t["copied"]))
        text_rows.append(Row(GROUP, f"{what}, changing labels as stock matplotlib Text",
                             t["stock"], "s", t["live"], "with FastText",
                             f">= {RATIO_GOAL:g}x (FastText stays)",
                             t["stock"] >= RATIO_GOAL * t["live"]))
    return rows + blit_rows + text_rows


def ipympl_rows(quick: bool) -> list[Row]:
    """What the kernel does per frame for the browser, for every explorer at notebook and
    presentation size: a control change, then the frame the browser asked for (draw, diff
    against the last frame, PNG); the explorers' ``FastCanvas`` against ipympl's stock ``Canvas``
    (its webagg diff and Pillow's PNG) on the same explorer, interleaved. A change is paced by
    the browser on both (``draw_idle``: the browser asks back), so both time the same work."""
    import warnings

    from ipympl.backend_nbagg import Canvas, FigureManager

    from attention_lab import widgets

    if not widgets.ipympl_available():
        return []

    def make_live(name, presentation, stock):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            e = make(name, backend="agg" if stock else "ipympl", presentation=presentation)
            if stock:  # ipympl's own canvas; a change asks the browser to draw (draw_idle)
                canvas = Canvas(e.figure)
                FigureManager(canvas, 0)
                e.view.backend, canvas.push_frame = "ipympl", lambda: None
        canvas = e.canvas
        canvas.quiet_seconds = float("inf")  # (FastCanvas) every change paced by the browser
        canvas.syncing_data_url = False  # as once the browser has said 'initialized'
        canvas.send_binary = lambda data: None
        canvas.draw_idle = lambda: None
        return e, canvas

    rows = []
    n = 9 if quick else 31
    for name, (setup, control, values) in _sweeps(n).items():
        for presentation in (False, True):
            pair = {how: make_live(name, presentation, how == "stock")
                    for how in ("fast", "stock")}
            times = {"fast": [], "stock": []}
            for how, (e, canvas) in pair.items():
                e.set(**setup)
                canvas.draw()
            for v in values:  # interleaved: the same values, one instance after the other
                for how, (e, canvas) in pair.items():
                    t0 = time.perf_counter()
                    e.controls[control].value = v
                    canvas.draw()
                    times[how].append(time.perf_counter() - t0)
            assert all(e.last_error is None for e, _ in pair.values())
            fast, stock = statistics.median(times["fast"]), statistics.median(times["stock"])
            size = "presentation" if presentation else "notebook"
            rows.append(Row(GROUP, f"{type(pair['fast'][0]).__name__} ({size} size): set "
                                   f"{control!r} + the browser's frame, FastCanvas", fast, "s",
                            stock, "ipympl's Canvas", ">= 10 % faster", fast <= 0.9 * stock))
    return rows


def png_rows(quick: bool = False) -> list[Row]:
    """The frames' deflate: ISA-L's (``isal``, in the requirements) against zlib's, the fallback,
    on the Query explorer's presentation figure: a whole frame, and the diff frame of one slider
    step; interleaved."""
    import zlib

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from attention_lab.widgets import _png

    e = make("query", backend="agg", presentation=True)
    FigureCanvasAgg.draw(e.canvas)
    before = np.asarray(e.canvas.buffer_rgba()).copy()                     # (H, W, 4)
    e.controls["q1"].value = 0.5
    FigureCanvasAgg.draw(e.canvas)
    after = np.asarray(e.canvas.buffer_rgba()).copy()                      # (H, W, 4)
    diff = np.where((after != before).any(axis=2, keepdims=True), after, 0)  # (H, W, 4)
    isal = _png._deflate
    rows = []
    for what, pixels in (("whole frame", after), ("diff frame of one slider step", diff)):
        times = {"isal": [], "zlib": []}
        for _ in range(15 if quick else 61):
            for how, deflate in (("isal", isal), ("zlib", zlib.compress)):
                _png._deflate = deflate
                t0 = time.perf_counter()
                _png.encode_png(pixels)
                times[how].append(time.perf_counter() - t0)
        _png._deflate = isal
        rows.append(Row(GROUP, f"PNG of the Query explorer's presentation figure, {what}, "
                               f"deflated by {isal.__module__}", statistics.median(times["isal"]),
                        "s", statistics.median(times["zlib"]), "zlib", "reported"))
    return rows


#: run in the kernel once a notebook's cells have run: every live canvas as if its page had opened
#: and asked for a frame of a changed figure
PAGES_OPEN = """
import ctypes, gc, psutil
from attention_lab._compat import ipympl as _compat
from attention_lab.widgets._fast_canvas import FastCanvas
canvases = [o for o in gc.get_objects() if isinstance(o, FastCanvas)]
for c in canvases:  # (a cooled one drawn again: as after a viewer's first change)
    c.syncing_data_url = False
    c.send_binary = lambda data: None
    c.figure.stale = True
    _compat.browser_message(c, {"type": "draw"})
gc.collect()
"""
TRIM = "gc.collect(); ctypes.CDLL('libc.so.6').malloc_trim(0)"
COOL = "for c in canvases: c.cool()\ngc.collect()"
USS = "psutil.Process().memory_full_info().uss"


def kernel_memory(notebook: str) -> dict:
    """A Jupyter kernel that ran ``notebooks/<notebook>.py`` (every code cell) with each live
    canvas's page open: its USS in MiB hot, after giving the C heap's free pages back (what
    cooling does last, without it), and with every figure cooled; and how many canvases."""
    import jupytext
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT / "notebooks"))
    try:
        def run(code: str) -> dict:
            reply = kc.execute_interactive(code, user_expressions={"uss": USS, "n": "len(canvases)"}
                                           if "canvases" in code or code in (TRIM, COOL) else {},
                                           timeout=600, output_hook=lambda msg: None)["content"]
            assert reply["status"] == "ok", (code[:200], reply.get("evalue"))
            return {k: int(v["data"]["text/plain"]) for k, v in
                    reply.get("user_expressions", {}).items()}

        for cell in jupytext.read(ROOT / "notebooks" / f"{notebook}.py").cells:
            if cell.cell_type == "code":
                run(cell.source)
        hot = run(PAGES_OPEN)
        return {"canvases": hot["n"], "hot": hot["uss"] / 2**20,
                "trimmed": run(TRIM)["uss"] / 2**20, "cooled": run(COOL)["uss"] / 2**20}
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


PAUSE_MS = 2500  # reading time between key presses: longer than the cooled canvas's cool_seconds


def first_step_browser_rows(quick: bool = False) -> list[Row]:
    """What cooling costs a student: in JupyterLab (Chromium), the key press -> repaint time of
    the first slider step after a pause, on a Query explorer whose figure cools during the pause
    (``cool_seconds`` 1 s) and on one that never cools, two pages pressed in turn
    (:mod:`benchmarks.bench_browser`'s harness and repaint hook)."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from . import bench_browser

    H = bench_browser._harness()
    if H.browser_unavailable_reason():
        return []
    slider = ".al-explorer-query .al-control-q1 .noUi-handle"
    code = ("from benchmarks.bench_browser import make_explorer\n"
            "e = make_explorer('query'); e.canvas.cool_seconds = {}\ne")
    presses = 8 if quick else 16
    with tempfile.TemporaryDirectory(prefix="al-bench-cool-") as tmp, sync_playwright() as p:
        work = Path(tmp)
        for how, seconds in (("cooled", 1.0), ("hot", 1e6)):
            H.write_notebook([code.format(seconds)], work / "root" / f"{how}.ipynb")
        browser = H.launch_chromium(p)
        try:
            with H.jupyter_lab(work / "root", work / "lab") as server:
                context = browser.new_context(viewport=H.VIEWPORT)
                probes = {how: bench_browser.Probe(H, context, server, "JupyterLab",
                                                   f"{how}.ipynb", slider)
                          for how in ("cooled", "hot")}
                for i in range(presses + 1):  # the first press of each page is a warm-up
                    for probe in probes.values():
                        probe.page.wait_for_timeout(PAUSE_MS)
                        probe.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
                t = {how: statistics.median(pr.figure_ms[1:]) / 1e3 for how, pr in probes.items()}
                for probe in probes.values():
                    probe.close()
                context.close()
        finally:
            browser.close()
    return [Row(GROUP, f"JupyterLab: key press -> figure repainted, first step after "
                       f"{PAUSE_MS / 1000:g} s, QueryExplorer cooled in the pause (median of "
                       f"{presses})", t["cooled"], "s", t["hot"], "never cooled", "reported")]



def cool_rows(quick: bool = False) -> list[Row]:
    """An idle figure cooled (``FastCanvas.cool``): the pixel buffers it holds, hot and cooled,
    and a slider step after a pause (sent at once, whole) on a hot and on a cooled figure,
    interleaved, on the Query explorer's presentation figure on ipympl; and what it saves of a
    whole kernel (:func:`kernel_memory`) after each notebook with explorers."""
    import warnings

    from attention_lab import widgets

    if not widgets.ipympl_available():
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        e = make("query", backend="ipympl", presentation=True)
    canvas, figure = e.canvas, e.figure
    canvas.syncing_data_url = False  # as once the browser has said 'initialized'
    canvas.send_binary = lambda data: None
    ipympl_compat.browser_message(canvas, {"type": "draw"})  # a page's first frame

    renderer = weakref.ref(canvas.get_renderer())  # alive for as long as anything holds it

    def held() -> int:
        gc.collect()
        arrays = (renderer() and np.asarray(renderer().buffer_rgba()), canvas.shown_pixels,
                  figure._static and np.asarray(figure._static))
        return (sum(a.nbytes for a in arrays if a is not None) + len(canvas._whole_png or b"")
                + len(figure._packed[0] if figure._packed else b""))

    hot_bytes = held()
    canvas.cool()
    cold_bytes = held()
    q = e.controls["q1"]
    values = np.linspace(q.min, q.max, 10 if quick else 40)
    times = {"hot": [], "cooled": []}
    for i, v in enumerate(values):
        how = "cooled" if i % 2 else "hot"
        if how == "cooled":
            canvas.cool()
        canvas._last_frame = float("-inf")  # after a pause: drawn and sent at once
        t0 = time.perf_counter()
        q.value = float(v)
        times[how].append(time.perf_counter() - t0)
    rows = [
        Row(GROUP, "Query explorer's presentation figure, idle: pixel buffers and frames held, "
                   "cooled", cold_bytes / 2**20, "MiB", hot_bytes / 2**20, "hot", "reported"),
        Row(GROUP, "Query explorer's presentation figure on ipympl: a slider step after a pause "
                   "(a whole frame), cooled figure", statistics.median(times["cooled"]), "s",
            statistics.median(times["hot"]), "hot figure", "reported"),
    ]
    for notebook in ("01_intuition", "02_mechanics", "03_maths_and_code", "demo"):
        m = kernel_memory(notebook)
        rows.append(Row(GROUP, f"kernel USS after notebooks/{notebook} ({m['canvases']} live "
                               f"canvases, pages open), every figure cooled", m["cooled"], "MiB",
                        m["trimmed"], "hot (C heap trimmed)", ">= 10 % less",
                        m["cooled"] <= 0.9 * m["trimmed"]))
    return rows + first_step_browser_rows(quick)


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
    return (explorer_rows(quick) + ipympl_rows(quick) + png_rows(quick) + cool_rows(quick)
            + notebook_rows())
