"""Figures: the chapter's six figures (static PNGs) and the live figures of the explorers.

Plots never compute attention. Every function and every ``update(...)`` receives the numbers
(scores, weights, contexts, masks) that the core computed, and only draws them.

Two kinds of figure:

* **Chapter figures** (:func:`overview_figure`, :func:`two_query_heatmap`, :func:`temperature_panels`,
  :func:`mask_figure`, :func:`window_figure`, :func:`hull_figure`) return a :class:`StaticFigure`,
  which a notebook shows as an inline PNG (so GitHub renders it) with a text description generated
  from the numbers it draws (for screen readers, and for students who read before they look).
* **Live figures** (:class:`QueryPlot`, :class:`ScorePlot`, ...) are built once; ``update(...)``
  changes their artists in place (``set_height``, ``set_data``, ``set_array``, ``set_text``), never
  clears an axes and never creates a new figure.

Live figures are fast because of :class:`LayeredFigure`: the parts that do not change (axes, ticks,
labels, titles, static patches) are rendered once and cached as pixels; a draw after an update
restores those pixels and draws only the artists registered as dynamic. Anything that changes a
static part calls :meth:`LayeredFigure.invalidate_static` (changes of size, dpi, axes limits or axes
visibility are detected automatically).

Colours are the Okabe-Ito palette (safe for the common colour-vision deficiencies), heatmaps use
``cividis``, and meaning is never carried by colour alone (hatching marks masked or wrong bars, text
labels name every panel).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from functools import lru_cache

from matplotlib.artist import Artist
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.backend_bases import DrawEvent
from matplotlib.backends.backend_agg import FigureCanvasAgg, get_hinting_flag
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.patches import FancyArrowPatch, Rectangle

#: Okabe-Ito colours by role.
PALETTE = {
    "source": "#0072B2",     # blue
    "query": "#CC79A7",      # reddish purple
    "score": "#E69F00",      # orange
    "weight": "#009E73",     # bluish green
    "context": "#D55E00",    # vermillion
    "wrong": "#D55E00",      # vermillion, always with hatching
    "reference": "#000000",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "masked": "#CFCFCF",
    "grey": "#6E6E6E",
}
CMAP = "cividis"

__all__ = [
    "PALETTE", "CMAP", "LayeredFigure", "StaticFigure", "LivePlot", "QueryPlot", "ScorePlot",
    "TemperaturePlot", "MaskPlot", "WindowPlot", "AxisPlot", "PrecisionPlot", "HullPlot",
    "overview_figure", "two_query_heatmap", "temperature_panels", "mask_figure", "window_figure",
    "hull_figure", "fmt_vec",
]


def fmt_vec(x, digits: int = 3) -> str:
    """``[0.123, 0.361, ...]`` as text, NaN written as ``nan``."""
    x = np.ravel(np.asarray(x, dtype=float))
    # np.round first, so that the text agrees with numpy's printing of np.round(x, digits)
    return "[" + ", ".join("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
                           if not np.isfinite(v) else f"{np.round(v, digits) + 0.0:.{digits}f}"
                           for v in x) + "]"


# --------------------------------------------------------------------------------------------
# The layered figure: static pixels cached, dynamic artists drawn on top
# --------------------------------------------------------------------------------------------

class LayeredFigure(Figure):
    """A Figure whose static part is rendered once and restored from a pixel cache.

    Every draw is layered: the static artists (everything not registered with
    :meth:`add_dynamic`) first, then the dynamic artists in z-order. With an Agg renderer the
    static layer is copied after it is drawn and restored on the next draws while nothing static
    changed (same size, dpi, axes limits, axes visibility and :attr:`static_version`). Saving to a
    file always renders everything.
    """

    def __init__(self, *args, cache: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.cache_enabled = cache
        self._dynamic: list = []
        self.static_version = 0
        self._cache_key = None
        self._cache_region = None
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
        can_cache = (self.cache_enabled and not saving and hasattr(renderer, "restore_region")
                     and hasattr(renderer, "copy_from_bbox"))
        key = self._key(renderer) if can_cache else None
        if can_cache and key == self._cache_key and self._cache_region is not None:
            renderer.restore_region(self._cache_region)
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
                self._cache_region = renderer.copy_from_bbox(self.bbox)
                # the key after drawing: a draw may move axes (colorbars place themselves then)
                self._cache_key = self._key(renderer)
        for a in self._dynamic:
            if a.get_visible():
                a.draw(renderer)
        self.stale = False
        DrawEvent("draw_event", self.canvas, renderer)._process()


# --------------------------------------------------------------------------------------------
# Fast text: labels that change on every update
# --------------------------------------------------------------------------------------------

@lru_cache(maxsize=2048)
def _glyph(ch: str, size: float, weight: str, dpi: float):
    """(coverage bitmap, left bearing, top bearing, advance) of one character, in pixels."""
    font = get_font(findfont(FontProperties(size=size, weight=weight)))
    font.set_size(size, dpi)
    flags = get_hinting_flag()
    font.set_text(ch, 0.0, flags=flags)
    font.draw_glyphs_to_bitmap(antialiased=True)
    coverage = np.array(font.get_image(), dtype=np.uint8)
    descent = font.get_descent() / 64.0
    g = font.load_char(ord(ch), flags=flags)
    advance = g.linearHoriAdvance / 65536.0
    left = g.horiBearingX / 64.0
    top = coverage.shape[0] - descent  # rows above the baseline
    return coverage, left, top, advance


@lru_cache(maxsize=8192)
def _coverage(line: str, size: float, weight: str, dpi: float):
    """(coverage bitmap, rows below the baseline) of one line, composed from cached glyphs.

    Composing cached glyph bitmaps (without kerning) costs a few microseconds per character,
    instead of laying out and rasterising the whole string again for every new number.
    """
    glyphs, pen = [], 0.0
    for ch in line:
        cov, left, top, adv = _glyph(ch, size, weight, dpi)
        glyphs.append((cov, int(round(pen + left)), top))
        pen += adv
    inked = [(c, x, t) for c, x, t in glyphs if c.size]
    if not inked:
        return np.zeros((0, 0), dtype=np.uint8), 0.0
    x0 = min(x for _, x, _ in inked)
    x1 = max(x + c.shape[1] for c, x, _ in inked)
    above = max(int(round(t)) for _, _, t in inked)
    below = max(c.shape[0] - int(round(t)) for c, _, t in inked)
    out = np.zeros((above + below, x1 - x0), dtype=np.uint8)
    for c, x, t in inked:
        r = above - int(round(t))
        region = out[r:r + c.shape[0], x - x0:x - x0 + c.shape[1]]
        np.maximum(region, c[:region.shape[0], :region.shape[1]], out=region)
    return out, float(below)


@lru_cache(maxsize=8192)
def _text_bitmap(line: str, size: float, weight: str, dpi: float, rgba: tuple):
    """(RGBA image, rows below the baseline) of one line of text in one colour."""
    coverage, descent = _coverage(line, size, weight, dpi)
    img = np.empty(coverage.shape + (4,), dtype=np.uint8)
    img[..., :3] = np.round(np.asarray(rgba[:3]) * 255).astype(np.uint8)
    img[..., 3] = np.round(coverage * rgba[3]).astype(np.uint8)
    return img, descent


@lru_cache(maxsize=64)
def _font_extent(size: float, weight: str, dpi: float) -> tuple[float, float]:
    """(ascender, descender) of the font in pixels, for vertical alignment independent of ink."""
    font = get_font(findfont(FontProperties(size=size, weight=weight)))
    px = size * dpi / 72.0 / font.units_per_EM
    return font.ascender * px, -font.descender * px


class FastText(Artist):
    """A single-style text label for values that change on every update.

    Drawing a ``matplotlib.text.Text`` lays out and rasterises every glyph on every draw (2-3 ms per
    label). A FastText rasterises each distinct string once with FreeType, caches the bitmap, and
    afterwards pastes it with ``renderer.draw_image`` (about 0.05 ms). It supports ``ha``
    (left/center/right), ``va`` (baseline/bottom/center/top), several lines, a colour and a
    weight; no rotation, no math text and no background box (use a ``Text`` for those).
    """

    zorder = 3

    def __init__(self, x, y, text: str = "", *, fontsize: float = 10, color="black",
                 ha: str = "left", va: str = "baseline", fontweight: str = "normal",
                 transform=None, zorder=None, linespacing: float = 1.25, box=None):
        super().__init__()
        #: None, or (facecolor, edgecolor): a padded rectangle behind the text
        self._box = None if box is None else (to_rgba(box[0]), to_rgba(box[1]))
        self._xy = (float(x), float(y))
        self._text = str(text)
        self._size = float(fontsize)
        self._weight = str(fontweight)
        self._rgba = tuple(to_rgba(color))
        if ha not in ("left", "center", "right"):
            raise ValueError(f"ha must be left, center or right, got {ha!r}")
        if va not in ("baseline", "bottom", "center", "center_baseline", "top"):
            raise ValueError(f"va must be baseline, bottom, center or top, got {va!r}")
        self._ha, self._va = ha, "center" if va == "center_baseline" else va
        self._linespacing = linespacing
        if transform is not None:
            self.set_transform(transform)
        if zorder is not None:
            self.set_zorder(zorder)

    def get_text(self) -> str:
        return self._text

    def set_text(self, text) -> None:
        text = str(text)
        if text != self._text:
            self._text = text
            self.stale = True

    def get_position(self):
        return self._xy

    def set_position(self, xy) -> None:
        self._xy = (float(xy[0]), float(xy[1]))
        self.stale = True

    def get_color(self):
        return self._rgba

    def set_color(self, color) -> None:
        self._rgba = tuple(to_rgba(color))
        self.stale = True

    def get_fontsize(self) -> float:
        return self._size

    def _layout(self, dpi):
        """[(image, left, bottom)] in display pixels for every line."""
        lines = self._text.split("\n")
        asc, desc = _font_extent(self._size, self._weight, dpi)
        step = self._size * dpi / 72.0 * self._linespacing
        x, y = self.get_transform().transform(self._xy)
        n = len(lines)
        # baseline of the first line, from the vertical alignment of the whole block
        if self._va == "baseline":
            base0 = y
        elif self._va == "top":
            base0 = y - asc
        elif self._va == "bottom":
            base0 = y + desc + (n - 1) * step
        else:  # center
            base0 = y + ((n - 1) * step) / 2 - (asc - desc) / 2
        out = []
        for i, line in enumerate(lines):
            if not line:
                continue
            img, descent = _text_bitmap(line, self._size, self._weight, float(dpi), self._rgba)
            w = img.shape[1]
            left = x if self._ha == "left" else x - w / 2 if self._ha == "center" else x - w
            bottom = base0 - i * step - descent
            out.append((img, int(round(left)), int(round(bottom))))
        return out

    def draw(self, renderer):
        if not self.get_visible() or not self._text:
            self.stale = False
            return
        layout = self._layout(renderer.dpi)
        if self._box is not None and layout:
            self._draw_box(renderer, layout)
        gc = renderer.new_gc()
        try:
            for img, left, bottom in layout:
                if img.size:
                    renderer.draw_image(gc, left, bottom, img[::-1])
        finally:
            gc.restore()
        self.stale = False

    def _draw_box(self, renderer, layout):
        from matplotlib.path import Path
        from matplotlib.transforms import IdentityTransform

        pad = 0.45 * self._size * renderer.dpi / 72.0
        x0 = min(left for _, left, _ in layout) - pad
        x1 = max(left + img.shape[1] for img, left, _ in layout) + pad
        asc, desc = _font_extent(self._size, self._weight, renderer.dpi)
        y0 = min(bottom for _, _, bottom in layout) - pad
        y1 = max(bottom + img.shape[0] for img, _, bottom in layout) + pad
        y0, y1 = min(y0, y1 - asc - desc - 2 * pad), y1
        path = Path([(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)], closed=True)
        gc = renderer.new_gc()
        try:
            gc.set_foreground(self._box[1])
            gc.set_linewidth(1.0)
            renderer.draw_path(gc, path, IdentityTransform(), self._box[0])
        finally:
            gc.restore()

    def get_window_extent(self, renderer=None):
        from matplotlib.transforms import Bbox

        if not self._text or self.figure is None:
            return Bbox.null()
        dpi = self.figure.dpi
        boxes = [Bbox.from_bounds(left, bottom, img.shape[1], img.shape[0])
                 for img, left, bottom in self._layout(dpi)]
        return Bbox.union(boxes) if boxes else Bbox.null()


def _add_fast_text(ax, x, y, s="", **kw) -> FastText:
    t = FastText(x, y, s, **kw)
    ax.add_artist(t)
    t.set_clip_on(False)
    return t


# --------------------------------------------------------------------------------------------
# Styling
# --------------------------------------------------------------------------------------------

class _Style:
    """Font sizes and line widths, scaled up for a projector (``presentation=True``)."""

    def __init__(self, presentation: bool = False):
        self.presentation = presentation
        s = 1.5 if presentation else 1.0
        self.scale = s
        self.fs = 9.5 * s
        self.small = 8.0 * s
        self.title = 10.5 * s
        self.lw = 1.0 * s

    def axes(self, ax, *, title=None, xlabel=None, ylabel=None, grid_y=True):
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        ax.tick_params(labelsize=self.small, length=3 * self.scale)
        if title:
            ax.set_title(title, fontsize=self.title, loc="left")
        if xlabel:
            ax.set_xlabel(xlabel, fontsize=self.fs)
        if ylabel:
            ax.set_ylabel(ylabel, fontsize=self.fs)
        if grid_y:
            ax.yaxis.grid(True, color="#E6E6E6", linewidth=0.8)
            ax.set_axisbelow(True)


def _positions_axis(ax, S: int, style: _Style, label="source position"):
    ax.set_xticks(np.arange(S), [str(i + 1) for i in range(S)])
    ax.set_xlim(-0.6, S - 0.4)
    if label:
        ax.set_xlabel(label, fontsize=style.fs)


#: widest live figure in inches at 100 dpi: fits a JupyterLab output area beside the file browser
LIVE_MAX_WIDTH = 8.8


def _new_figure(size, style: _Style, *, layered: bool, cache: bool = True) -> Figure:
    w, h = size
    if layered and w > LIVE_MAX_WIDTH:
        w, h = LIVE_MAX_WIDTH, h * LIVE_MAX_WIDTH / w
    s = 1.35 if style.presentation else 1.0
    if layered:
        fig = LayeredFigure(figsize=(w * s, h * s), dpi=100, cache=cache)
    else:
        fig = Figure(figsize=(w * s, h * s), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, facecolor="white")
    return buf.getvalue()


class StaticFigure:
    """A finished figure plus its text description; displays as an inline PNG.

    ``text/plain`` of the output is the description, so a reader without the image (a screen
    reader, a terminal, a diff) gets the content in words.
    """

    def __init__(self, figure: Figure, description: str):
        self.figure = figure
        self.description = description

    def png(self) -> bytes:
        return _png(self.figure)

    def save(self, path) -> None:
        self.figure.savefig(path, dpi=self.figure.dpi, facecolor="white")

    def _repr_mimebundle_(self, include=None, exclude=None):
        import base64

        return {"image/png": base64.b64encode(self.png()).decode("ascii"),
                "text/plain": self.description}

    def __repr__(self) -> str:
        return self.description


# --------------------------------------------------------------------------------------------
# Live figures
# --------------------------------------------------------------------------------------------

class Bars(PolyCollection):
    """A group of bars drawn as ONE artist (one draw call instead of one per bar).

    ``set_heights(h)`` moves the tops (NaN or inf draw as height 0), ``set_facecolors(colors)``
    colours each bar, ``heights`` reads them back. Positions, width and bottoms are fixed.
    """

    def __init__(self, x, width=0.7, bottom=0.0, **kwargs):
        self._x = np.asarray(x, dtype=float)
        self._half = width / 2.0
        self._bottom = np.broadcast_to(np.asarray(bottom, dtype=float), self._x.shape).copy()
        self._heights = np.zeros_like(self._x)
        super().__init__(self._verts(), **kwargs)

    def _verts(self):
        x0, x1 = self._x - self._half, self._x + self._half
        b, t = self._bottom, self._bottom + self._heights
        return np.stack([np.stack([x0, b], -1), np.stack([x1, b], -1),
                         np.stack([x1, t], -1), np.stack([x0, t], -1)], axis=1)

    @property
    def heights(self) -> np.ndarray:
        return self._heights.copy()

    def set_heights(self, heights) -> None:
        h = np.asarray(heights, dtype=float).reshape(self._x.shape)
        self._heights = np.where(np.isfinite(h), h, 0.0)
        self.set_verts(self._verts())
        self.stale = True

    def __len__(self) -> int:
        return self._x.size


class LivePlot:
    """Base of the explorers' figures: build once (``_build``), then ``update(...)`` in place."""

    size = (8.0, 3.2)

    def __init__(self, *, presentation: bool = False, cache: bool = True):
        self.style = _Style(presentation)
        self.presentation = presentation
        self.figure = _new_figure(self.size, self.style, layered=True, cache=cache)
        self._messages: dict = {}

    # helpers ------------------------------------------------------------------------------
    def _dyn(self, *artists):
        self.figure.add_dynamic(*artists)
        return artists[0] if len(artists) == 1 else artists

    def _bars(self, ax, n, color, x=None, bottom=0.0, width=0.7, **kw):
        """``n`` bars as one dynamic :class:`Bars` artist."""
        x = np.arange(n) if x is None else x
        kw.setdefault("linewidth", 0.0 if "edgecolor" not in kw else 0.8)
        bars = Bars(x, width=width, bottom=bottom, facecolor=color, **kw)
        ax.add_collection(bars, autolim=False)
        self._dyn(bars)
        return bars

    def _text(self, ax, x, y, s="", dynamic=True, **kw):
        """A label; a dynamic one is a :class:`FastText` (cheap to redraw when it changes)."""
        kw.setdefault("fontsize", self.style.fs)
        if dynamic and "bbox" not in kw and "rotation" not in kw:
            t = _add_fast_text(ax, x, y, s, **kw)
        else:
            t = ax.text(x, y, s, **kw)
        if dynamic:
            self._dyn(t)
        return t

    def _message_box(self, ax, name, y=0.5):
        """A centred message for 'nothing to show' states; hidden until :meth:`message` sets it."""
        t = _add_fast_text(ax, 0.5, y, "", transform=ax.transAxes, ha="center", va="center",
                           fontsize=self.style.fs, color="#222222", zorder=20,
                           box=("#FFF7D6", PALETTE["score"]))
        t.set_visible(False)
        self._dyn(t)
        self._messages[name] = t
        return t

    def add_error_box(self) -> None:
        """A figure-wide message box for unexpected errors (explorers use it)."""
        if "error" in self._messages:
            return
        t = FastText(0.5, 0.5, "", transform=self.figure.transFigure, ha="center",
                     va="center", fontsize=self.style.fs, color="#222222", zorder=50,
                     box=("#FFE9E0", PALETTE["context"]))
        self.figure.add_artist(t)
        t.set_visible(False)
        self._dyn(t)
        self._messages["error"] = t

    def message(self, name: str, text: str | None) -> None:
        """Show ``text`` in the message box ``name`` (None or "" hides it)."""
        t = self._messages[name]
        t.set_text(text or "")
        t.set_visible(bool(text))

    def messages(self) -> dict:
        """The visible messages, name -> text (tests read it)."""
        return {k: t.get_text() for k, t in self._messages.items() if t.get_visible()}

    @staticmethod
    def _set_heights(bars, heights):
        bars.set_heights(heights)

    def png(self) -> bytes:
        """The current figure as PNG bytes (through the cached draw)."""
        from PIL import Image

        canvas = self.figure.canvas
        FigureCanvasAgg.draw(canvas)
        buf = np.asarray(canvas.buffer_rgba())
        out = io.BytesIO()
        Image.fromarray(buf).save(out, format="png")
        return out.getvalue()


class _OverviewDiagram:
    """The chapter's overview diagram (query -> scores -> weights -> context) drawn on one axes.

    Static: the source, query and context boxes and the grey arrows. Dynamic: the score and weight
    labels, the weight boxes' shading and the width of each arrow from a weight to the context.
    """

    def __init__(self, ax, style: _Style, S: int = 5, register=None):
        self.ax, self.style, self.S = ax, style, S
        ax.set_xlim(0, 10)
        ax.set_ylim(0.05, 4.15)
        ax.axis("off")
        fs, small = style.fs, style.small
        grey = PALETTE["grey"]
        step = 6.2 / S
        self.xs = [0.25 + i * step for i in range(S)]
        bw = step * 0.8
        self.score_text, self.weight_text, self.weight_box, self.arrows = [], [], [], []
        for i, x in enumerate(self.xs):
            cx = x + bw / 2
            ax.add_patch(Rectangle((x, 3.25), bw, 0.65, facecolor=PALETTE["source"],
                                   edgecolor="white"))
            ax.text(cx, 3.575, f"source {i + 1}\nkey, value", ha="center", va="center",
                    fontsize=small, color="white")
            ax.add_patch(FancyArrowPatch((cx, 3.2), (cx, 2.55), arrowstyle="-|>",
                                         mutation_scale=10 * style.scale, color=grey, lw=style.lw))
            ax.add_patch(Rectangle((x, 2.0), bw, 0.5, facecolor=PALETTE["score"],
                                   edgecolor="white"))
            self.score_text.append(_add_fast_text(ax, cx, 2.25, "", ha="center", va="center",
                                                  fontsize=small))
            ax.add_patch(FancyArrowPatch((cx, 1.95), (cx, 1.35), arrowstyle="-|>",
                                         mutation_scale=10 * style.scale, color=grey, lw=style.lw))
            self.weight_text.append(_add_fast_text(ax, cx, 1.05, "", ha="center", va="center",
                                                   fontsize=small, zorder=4))
            self.arrows.append([(cx, 0.78), (7.55, 0.62)])
        centres = np.array(self.xs) + bw / 2
        self.weight_box = Bars(centres, width=bw, bottom=0.8, facecolor=PALETTE["weight"],
                               edgecolor="black", linewidth=0.6 * style.lw)
        self.weight_box.set_heights(np.full(S, 0.5))
        ax.add_collection(self.weight_box, autolim=False)
        self.arrows = LineCollection(self.arrows, colors=PALETTE["weight"], alpha=0.85,
                                     capstyle="round")
        ax.add_collection(self.arrows, autolim=False)
        ax.add_patch(Rectangle((7.55, 2.45), 2.1, 0.65, facecolor=PALETTE["query"],
                               edgecolor="white"))
        ax.text(8.6, 2.775, "decoder query q", ha="center", va="center", fontsize=fs,
                color="white")
        for x in self.xs:
            ax.add_patch(FancyArrowPatch((7.5, 2.7), (x + bw / 2 + 0.15, 2.52), arrowstyle="-|>",
                                         mutation_scale=9 * style.scale, color=PALETTE["query"],
                                         alpha=0.55, lw=style.lw))
        ax.add_patch(Rectangle((7.55, 0.3), 2.1, 0.65, facecolor=PALETTE["context"],
                               edgecolor="white"))
        ax.text(8.6, 0.625, "context c", ha="center", va="center", fontsize=fs, color="white")
        ax.text(0.05, 2.25, "scores e", ha="left", va="center", fontsize=small, rotation=90)
        ax.text(0.05, 1.05, "weights α", ha="left", va="center", fontsize=small, rotation=90)
        ax.text(7.0, 1.65, "softmax: weights ≥ 0, sum 1\nc = Σ αᵢ vᵢ (width of line ∝ αᵢ)",
                ha="left", va="center", fontsize=small, color=grey)
        dyn = self.score_text + self.weight_text + [self.weight_box, self.arrows]
        if register is not None:
            register(*dyn)
        self._base_rgba = np.array(to_rgba(PALETTE["weight"]))

    def update(self, scores, weights):
        for t, e in zip(self.score_text, scores):
            t.set_text(f"e = {e:+.2f}")
        w = np.asarray(weights, dtype=float)
        ok = np.isfinite(w)
        wz = np.where(ok, w, 0.0)
        for t, x, good in zip(self.weight_text, w, ok):
            t.set_text(f"α = {x:.2f}" if good else "α = nan")
        colors = np.tile(self._base_rgba, (w.size, 1))
        colors[:, 3] = 0.12 + 0.88 * np.clip(wz, 0, 1)
        self.weight_box.set_facecolor(colors)
        # a zero weight draws no line at all
        self.arrows.set_linewidths(np.where(wz > 0, (0.3 + 9.0 * wz) * self.style.scale, 0.0))


class QueryPlot(LivePlot):
    """Query explorer (notebook 01): overview diagram, weight bars, heatmap row, context vector."""

    size = (10.0, 6.0)

    def __init__(self, values, *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        values = np.asarray(values, dtype=float)
        S, D = values.shape
        fig = self.figure
        self.header = self._text(fig.add_axes([0, 0.955, 1, 0.04]), 0.01, 0.5, "",
                                 va="center", fontsize=st.fs)
        self.header.axes.axis("off")
        ax_d = fig.add_axes([0.005, 0.43, 0.99, 0.52])
        self.diagram = _OverviewDiagram(ax_d, st, S, register=self._dyn)

        ax_w = fig.add_axes([0.065, 0.1, 0.26, 0.25])
        st.axes(ax_w, title="weights α (bars)", ylabel="weight")
        _positions_axis(ax_w, S, st)
        ax_w.set_ylim(0, 1.02)
        self.bars = self._bars(ax_w, S, PALETTE["weight"])

        ax_h = fig.add_axes([0.385, 0.1, 0.24, 0.25])
        st.axes(ax_h, title="weights α (heatmap row)", grid_y=False)
        self.image = ax_h.pcolormesh(np.arange(S + 1) - 0.5, [-0.5, 0.5], np.zeros((1, S)),
                                     cmap=CMAP, vmin=0, vmax=1, edgecolors="white",
                                     linewidth=0.5)
        self._dyn(self.image)
        _positions_axis(ax_h, S, st)
        ax_h.set_ylim(-0.5, 0.5)
        ax_h.set_yticks([])
        cb = fig.colorbar(self.image, ax=ax_h, fraction=0.08, pad=0.03)
        cb.ax.tick_params(labelsize=st.small)

        ax_c = fig.add_axes([0.72, 0.1, 0.26, 0.25])
        st.axes(ax_c, title="context c and the values", ylabel="coordinate value")
        ax_c.set_xticks(np.arange(D), [f"c[{j + 1}]" for j in range(D)])
        ax_c.set_xlim(-0.6, D - 0.4)
        lo, hi = min(0.0, values.min()), max(1.0, values.max())
        ax_c.set_ylim(lo - 0.02, hi + 0.3)
        for j in range(D):
            ax_c.scatter(np.full(S, j) + np.linspace(-0.25, 0.25, S), values[:, j], s=14 * st.scale,
                         color=PALETTE["source"], zorder=3, label="values vᵢ" if j == 0 else None)
        self.context_bars = self._bars(ax_c, D, PALETTE["context"], width=0.65, alpha=0.85,
                                       label="context c")
        ax_c.legend(fontsize=st.small, loc="upper center", frameon=False, ncol=2)
        self._message_box(ax_w, "weights")

    def update(self, *, query, scores, weights, context, temperature, hard=False):
        mode = "hard retrieval (arg max)" if hard else f"soft retrieval, temperature {temperature:.2f}"
        self.header.set_text(f"query q = {fmt_vec(query, 2)}    {mode}")
        self.diagram.update(scores, weights)
        self._set_heights(self.bars, weights)
        self.image.set_array(np.asarray(weights, dtype=float)[None, :])
        self._set_heights(self.context_bars, context)


class ScorePlot(LivePlot):
    """Score explorer (notebook 02): the chosen score function's scores beside the dot product's,
    and the softmax weights."""

    size = (10.0, 3.6)

    def __init__(self, S: int = 5, *, score_limit: float = 3.0, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        fig = self.figure
        ax_s = fig.add_axes([0.065, 0.17, 0.41, 0.63])
        st.axes(ax_s, ylabel="score eᵢ")
        _positions_axis(ax_s, S, st)
        ax_s.set_ylim(-score_limit, score_limit)
        ax_s.axhline(0, color="black", linewidth=0.8 * st.lw)
        self.bars = self._bars(ax_s, S, PALETTE["score"], label="chosen score")
        (self.dot_marks,) = ax_s.plot(np.arange(S), np.zeros(S), linestyle="none", marker="o",
                                      markersize=7 * st.scale, markerfacecolor="none",
                                      markeredgecolor="black", label="dot product qᵀkᵢ")
        self._dyn(self.dot_marks)
        ax_s.legend(fontsize=st.small, loc="lower left", frameon=False, ncol=2,
                    bbox_to_anchor=(0.0, 0.98))
        self.title = self._text(ax_s, 0.0, 1.17, "", transform=ax_s.transAxes,
                                fontsize=st.title)
        ax_w = fig.add_axes([0.575, 0.17, 0.41, 0.63])
        st.axes(ax_w, ylabel="weight αᵢ")
        _positions_axis(ax_w, S, st)
        ax_w.set_ylim(0, 1.02)
        ax_w.set_title("softmax weights of the chosen scores", fontsize=st.title, loc="left",
                       pad=18 * st.scale)
        self.weight_bars = self._bars(ax_w, S, PALETTE["weight"])
        self.sum_text = self._text(ax_w, 0.98, 0.93, "", transform=ax_w.transAxes, ha="right",
                                   fontsize=st.small)
        self._message_box(ax_s, "scores")

    def update(self, *, kind_label, scores, dot_scores, weights):
        self.title.set_text(kind_label)
        clipped = np.clip(np.asarray(scores, float), *self.bars.axes.get_ylim())
        self._set_heights(self.bars, clipped)
        self.dot_marks.set_ydata(np.asarray(dot_scores, float))
        self._set_heights(self.weight_bars, weights)
        self.sum_text.set_text(f"sum = {float(np.sum(weights)):.3f}")
        lim = self.bars.axes.get_ylim()[1]
        big = np.abs(scores) > lim
        self.message("scores", f"score(s) beyond ±{lim:g} are cut at the edge" if big.any() else None)


class TemperaturePlot(LivePlot):
    """Temperature explorer (notebook 02): weights at the chosen temperature against the weights at
    temperature 1, and how concentration (largest weight, effective number of keys) moves with it."""

    size = (10.0, 3.6)

    def __init__(self, reference_weights, grid, grid_max_weight, grid_effective_keys, *,
                 presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        fig = self.figure
        ref = np.asarray(reference_weights, float)
        S = ref.size
        ax_b = fig.add_axes([0.065, 0.17, 0.38, 0.65])
        st.axes(ax_b, ylabel="weight αᵢ(τ)")
        _positions_axis(ax_b, S, st)
        ax_b.set_ylim(0, 1.02)
        self.bars = self._bars(ax_b, S, PALETTE["weight"], label="at τ")
        (ref_marks,) = ax_b.plot(np.arange(S), ref, linestyle="none", marker="_",
                                 markersize=26 * st.scale, markeredgewidth=2 * st.lw,
                                 color="black", label="at τ = 1", zorder=5)
        self._dyn(ref_marks)  # drawn on top of the bars
        # upper right: the weights of positions 4 and 5 stay small at every temperature, so the
        # bars never cover the legend (upper left, position 2's bar reaches 1 as tau -> 0)
        ax_b.legend(fontsize=st.small, frameon=False, loc="upper right", ncol=2)
        self.title = self._text(ax_b, 0.0, 1.06, "", transform=ax_b.transAxes,
                                fontsize=st.fs if presentation else st.title)

        ax_c = fig.add_axes([0.54, 0.17, 0.37, 0.65])
        st.axes(ax_c, xlabel="temperature τ (log scale)")
        ax_c.set_xscale("log")
        grid = np.asarray(grid, float)
        ax_c.set_xlim(grid.min(), grid.max())
        ticks = [t for t in (0.05, 0.1, 0.2, 0.5, 1, 2, 5) if grid.min() <= t <= grid.max()]
        ax_c.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax_c.minorticks_off()
        ax_c.set_ylim(0, 1.02)
        ax_c.plot(grid, grid_max_weight, color=PALETTE["weight"], lw=2 * st.lw,
                  label="largest weight (left axis)")
        ax_c.set_ylabel("largest weight", fontsize=st.fs, color=PALETTE["weight"])
        ax_k = ax_c.twinx()
        ax_k.set_ylim(0.9, S + 0.1)
        ax_k.plot(grid, grid_effective_keys, color=PALETTE["source"], lw=2 * st.lw,
                  linestyle="--", label="effective keys (right axis)")
        ax_k.set_ylabel("effective keys exp(H)", fontsize=st.fs, color=PALETTE["source"])
        ax_k.tick_params(labelsize=st.small)
        ax_k.spines["top"].set_visible(False)
        h1, l1 = ax_c.get_legend_handles_labels()
        h2, l2 = ax_k.get_legend_handles_labels()
        if presentation:  # large type: shorter labels, so that the legend fits above the axes
            l1, l2 = ["largest weight (left)"], ["effective keys (right)"]
        ax_c.legend(h1 + h2, l1 + l2, fontsize=st.small, frameon=False, loc="lower left",
                    bbox_to_anchor=(0.0, 1.0), ncol=2)
        self.vline = self._dyn(ax_c.axvline(1.0, color="black", lw=st.lw, linestyle=":"))
        (self.pt_max,) = ax_c.plot([1.0], [0.0], "o", color=PALETTE["weight"],
                                   markersize=7 * st.scale)
        (self.pt_eff,) = ax_k.plot([1.0], [1.0], "s", color=PALETTE["source"],
                                   markersize=7 * st.scale)
        self._dyn(self.pt_max, self.pt_eff)

    def update(self, *, temperature, weights, max_weight, effective_keys):
        self.title.set_text(f"τ = {temperature:.2f}: largest weight {max_weight:.3f}, "
                            f"≈ {effective_keys:.2f} effective keys")
        self._set_heights(self.bars, weights)
        self.vline.set_xdata([temperature, temperature])
        self.pt_max.set_data([temperature], [max_weight])
        self.pt_eff.set_data([temperature], [effective_keys])


class MaskPlot(LivePlot):
    """Mask explorer (notebook 02): no mask | mask before softmax (right) | mask after softmax
    without renormalising (wrong), with each panel's row sum."""

    size = (10.5, 3.7)

    def __init__(self, unmasked_weights, *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        fig = self.figure
        ref = np.asarray(unmasked_weights, float)
        S = ref.size
        self.S = S
        titles = ["no mask\n", "mask BEFORE softmax\n(right)",
                  "mask AFTER softmax,\nno renormalising (wrong)"]
        xs = [0.06, 0.385, 0.71]
        self.axes = []
        for x, title in zip(xs, titles):
            ax = fig.add_axes([x, 0.2, 0.27, 0.58])
            st.axes(ax, ylabel="weight" if x == xs[0] else None)
            _positions_axis(ax, S, st)
            ax.set_ylim(0, 1.02)
            ax.set_title(title, fontsize=st.title, loc="left", pad=12 * st.scale)
            self.axes.append(ax)
        ax0, ax1, ax2 = self.axes
        ax0.bar(np.arange(S), ref, width=0.7, color=PALETTE["sky"])
        ax0.text(0.98, 0.93, f"sum = {ref.sum():.3f}", transform=ax0.transAxes, ha="right",
                 fontsize=st.small)
        self.before = self._bars(ax1, S, PALETTE["weight"])
        self.after = self._bars(ax2, S, PALETTE["wrong"], hatch="//", edgecolor="white")
        self.sum_before = self._text(ax1, 0.98, 0.93, "", transform=ax1.transAxes, ha="right",
                                     fontsize=st.small)
        self.sum_after = self._text(ax2, 0.98, 0.93, "", transform=ax2.transAxes, ha="right",
                                    fontsize=st.small)
        kw = dict(linestyle="none", marker="x", markersize=8 * st.scale, color="black",
                  markeredgewidth=1.5 * st.lw, clip_on=False)
        self.cross = [self._dyn(ax.plot([], [], **kw)[0]) for ax in self.axes[1:]]
        for ax in self.axes[1:]:
            ax.text(1.0, -0.3, "× = masked", transform=ax.transAxes, ha="right",
                    fontsize=st.small, color=PALETTE["grey"])
        self._message_box(ax1, "before")
        self._message_box(ax2, "after")

    def update(self, *, mask, weights, row_sum, after_weights=None, after_row_sum=None,
               message=None):
        mask = np.asarray(mask, bool)
        masked_x = np.flatnonzero(~mask)
        for line in self.cross:
            line.set_data(masked_x, np.full(masked_x.size, 0.03))
        self._set_heights(self.before, weights)
        self.before.set_facecolor([PALETTE["weight"] if m else PALETTE["masked"] for m in mask])
        s = "nan" if not np.isfinite(row_sum) else f"{row_sum:.3f}"
        self.sum_before.set_text(f"sum = {s}")
        self.message("before", message)
        if after_weights is None:
            self.after.set_visible(False)
            self.sum_after.set_text("")
            self.message("after", "tick 'also mask AFTER softmax'\nto see the wrong order")
        else:
            self.after.set_visible(True)
            self._set_heights(self.after, after_weights)
            self.sum_after.set_text(f"sum = {after_row_sum:.3f}")
            lost = 1.0 - after_row_sum
            self.message("after", f"{lost:.3f} of the mass is lost:\nthe row no longer sums to 1"
                         if lost > 5e-4 else None)


class WindowPlot(LivePlot):
    """Window explorer (notebook 02): ten source positions twice, global (all eligible) and local
    (a window |j - p| <= D), with the weights as bars and the target position starred."""

    size = (10.5, 4.2)

    def __init__(self, S: int = 10, *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        fig = self.figure
        self.S = S
        self.rows = []
        for y in (0.53, 0.06):
            # room above the tallest bar (weight 1) and its star for the row's title
            ax = fig.add_axes([0.02, y, 0.96, 0.42])
            ax.set_xlim(-0.2, S + 0.1)
            ax.set_ylim(-0.05, 1.6)
            ax.axis("off")
            squares = Bars(np.arange(S) + 0.475, width=0.85, bottom=0.0,
                           facecolor=PALETTE["weight"], edgecolor="white", linewidth=1.0)
            squares.set_heights(np.full(S, 0.3))
            ax.add_collection(squares, autolim=False)
            local_row = y < 0.5
            for i in range(S):  # in the local row the squares change, so their labels are dynamic
                self._text(ax, i + 0.475, 0.15, str(i + 1), dynamic=local_row, ha="center",
                           va="center", fontsize=st.small, color="black", zorder=4)
            bars = self._bars(ax, S, PALETTE["source"], x=np.arange(S) + 0.475, bottom=0.36,
                              width=0.5)
            (star,) = ax.plot([], [], linestyle="none", marker="*", markersize=13 * st.scale,
                              color=PALETTE["score"], markeredgecolor="black")
            self._dyn(star)
            title = self._text(ax, 0.0, 1.58, "", fontsize=st.title, va="top")
            self.rows.append(dict(ax=ax, squares=squares, bars=bars, star=star, title=title))
        local = self.rows[1]
        self._dyn(local["squares"])
        local["window"] = self._dyn(local["ax"].add_patch(
            Rectangle((0, -0.04), 1, 0.38, fill=False, edgecolor="black", linewidth=1.6 * st.lw,
                      linestyle="--", zorder=5)))
        self._message_box(local["ax"], "local", y=0.75)
        fig.text(0.99, 0.005, "bar height = weight;  ★ = target;  green square = eligible",
                 ha="right", va="bottom", fontsize=st.small, color=PALETTE["grey"])

    def update(self, *, target, global_weights, local_weights, local_mask, centre, half_width,
               global_title, local_title, message=None):
        S = self.S
        for row, w, title in ((self.rows[0], global_weights, global_title),
                              (self.rows[1], local_weights, local_title)):
            self._set_heights(row["bars"], 0.8 * np.asarray(w, float))
            row["star"].set_data([target + 0.475], [0.36 + 0.8 * float(
                np.nan_to_num(w[target])) + 0.1])
            row["title"].set_text(title)
        self.rows[1]["squares"].set_facecolor(
            [PALETTE["weight"] if m else PALETTE["masked"] for m in local_mask])
        lo = max(centre - half_width, -0.5)
        hi = min(centre + half_width, S - 0.5)
        win = self.rows[1]["window"]
        if hi >= lo:
            win.set_visible(True)
            win.set_x(lo + 0.475 - 0.47)
            win.set_width(hi - lo + 0.94)
        else:
            win.set_visible(False)
        self.message("local", message)


class AxisPlot(LivePlot):
    """Axis explorer (notebook 03): weights of one batch item with softmax over the key axis
    (right) and over the chosen axis, and which sums equal 1."""

    size = (10.5, 3.8)

    def __init__(self, T: int, S: int, *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        fig = self.figure
        self.T, self.S = T, S
        self.images = []
        for x, title in ((0.07, "right: softmax over\nkeys (dim=-1)"), (0.37, "")):
            ax = fig.add_axes([x, 0.2, 0.24, 0.5])
            st.axes(ax, grid_y=False)
            im = ax.pcolormesh(np.arange(S + 1) - 0.5, np.arange(T + 1) - 0.5, np.zeros((T, S)),
                               cmap=CMAP, vmin=0, vmax=1, edgecolors="white", linewidth=0.5)
            ax.set_xlim(-0.5, S - 0.5)
            ax.set_ylim(T - 0.5, -0.5)  # query 1 at the top, as in a matrix
            self._dyn(im)
            ax.set_xticks(np.arange(S), [str(j + 1) for j in range(S)])
            ax.set_yticks(np.arange(T), [str(t + 1) for t in range(T)])
            ax.set_xlabel("key (source) s", fontsize=st.fs)
            ax.set_ylabel("query (target) t", fontsize=st.fs)
            if title:
                ax.set_title(title, fontsize=st.title, loc="left")
            self.images.append(im)
        self.title = self._text(self.images[1].axes, 0.0, 1.03, "", fontsize=st.title,
                                va="bottom",
                                transform=self.images[1].axes.transAxes)
        self.batch_text = self._text(fig.add_axes([0, 0.9, 1, 0.08]), 0.01, 0.5, "",
                                     va="center", fontsize=st.fs)
        self.batch_text.axes.axis("off")
        cb = fig.colorbar(self.images[1], ax=self.images[1].axes, fraction=0.06, pad=0.03)
        cb.ax.tick_params(labelsize=st.small)
        ax_s = fig.add_axes([0.71, 0.2, 0.27, 0.5])
        st.axes(ax_s, ylabel="sum of weights")
        n = T + S + S
        self.groups = (np.arange(T), T + 1 + np.arange(S), T + S + 2 + np.arange(S))
        x = np.concatenate(self.groups)
        ax_s.set_xlim(-0.7, x.max() + 0.7)
        ax_s.set_ylim(0, 2.05)
        ax_s.axhline(1.0, color="black", lw=st.lw, linestyle=":")
        ax_s.set_xticks([self.groups[0].mean(), self.groups[1].mean(), self.groups[2].mean()],
                        ["over keys\n(per query)", "over queries\n(per key)",
                         "over batch\n(query 1)"], fontsize=st.small)
        ax_s.set_title("which sums are 1?", fontsize=st.title, loc="left")
        self.sum_bars = self._bars(ax_s, n, PALETTE["weight"], x=x, width=0.75)
        self._message_box(ax_s, "sums", y=1.42)  # above the title, clear of the bars

    def update(self, *, batch, weights_key, weights_axis, axis_label, sums_keys, sums_queries,
               sums_batch):
        self.batch_text.set_text(f"batch item {batch + 1}: weights (T={self.T}) x (S={self.S})")
        self.images[0].set_array(np.asarray(weights_key, dtype=float))
        self.images[1].set_array(np.asarray(weights_axis, dtype=float))
        self.title.set_text(axis_label)
        values = np.concatenate([sums_keys, sums_queries, sums_batch])
        self.sum_bars.set_heights(np.minimum(values, 2.0))
        self.sum_bars.set_facecolor([PALETTE["weight"] if abs(v - 1.0) < 1e-9 else PALETTE["score"]
                                     for v in values])
        ok_groups = [bool(np.all(np.abs(np.asarray(s) - 1) < 1e-9))
                     for s in (sums_keys, sums_queries, sums_batch)]
        names = ["keys", "queries", "batch"]
        sums_one = [n for n, ok in zip(names, ok_groups) if ok]
        self.message("sums", "sums to 1 over: " + (", ".join(sums_one) if sums_one else "none"))


class PrecisionPlot(LivePlot):
    """Precision explorer (notebook 03): what a typical kernel returns (dtype, fill, naive or
    stable) beside the library's masked softmax with its all-masked policy."""

    size = (10.5, 4.0)

    def __init__(self, S: int = 5, *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        fig = self.figure
        self.S = S
        self.panels = []
        for x, color in ((0.065, PALETTE["score"]), (0.565, PALETTE["weight"])):
            ax = fig.add_axes([x, 0.2, 0.41, 0.52])
            st.axes(ax, ylabel="weight" if x < 0.5 else None)
            _positions_axis(ax, S, st)
            ax.set_ylim(0, 1.1)
            bars = self._bars(ax, S, color)
            flags = [self._text(ax, i, 0.05, "", ha="center", va="bottom", fontsize=st.fs,
                                color=PALETTE["context"], fontweight="bold") for i in range(S)]
            title = self._text(ax, 0.0, 1.08, "", transform=ax.transAxes, fontsize=st.title)
            self.panels.append(dict(ax=ax, bars=bars, flags=flags, title=title))
        kw = dict(linestyle="none", marker="x", markersize=8 * st.scale, color="black",
                  markeredgewidth=1.5 * st.lw, clip_on=False)
        self.cross = [self._dyn(p["ax"].plot([], [], **kw)[0]) for p in self.panels]
        self.info = self._text(fig.add_axes([0, 0.86, 1, 0.13]), 0.01, 0.5, "", va="center",
                               fontsize=st.fs)
        self.info.axes.axis("off")
        self._message_box(self.panels[0]["ax"], "kernel", y=0.6)
        self._message_box(self.panels[1]["ax"], "library", y=0.6)

    def update(self, *, mask, kernel_weights, kernel_title, weights, library_title, info,
               kernel_message=None, library_message=None):
        masked_x = np.flatnonzero(~np.asarray(mask, bool))
        for line in self.cross:
            line.set_data(masked_x, np.full(masked_x.size, 0.03))
        for panel, w, title in ((self.panels[0], kernel_weights, kernel_title),
                                (self.panels[1], weights, library_title)):
            w = np.asarray(w, dtype=float)
            self._set_heights(panel["bars"], np.clip(np.nan_to_num(w, nan=0.0, posinf=1.1), 0, 1.1))
            for t, v in zip(panel["flags"], w):
                t.set_text("" if np.isfinite(v) else ("NaN" if np.isnan(v) else "inf"))
            panel["title"].set_text(title)
        self.info.set_text(info)
        self.message("kernel", kernel_message)
        self.message("library", library_message)


class HullPlot(LivePlot):
    """Hull explorer (notebook 03): three 2-D values, the triangle they span, and the context point
    of the current weights with a line to each value whose width is that value's weight."""

    size = (8.0, 5.4)

    def __init__(self, values, chapter_contexts=(), *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        fig = self.figure
        v = np.asarray(values, float)
        self.values = v
        ax = fig.add_axes([0.09, 0.1, 0.58, 0.8])
        st.axes(ax, xlabel="value coordinate 1", ylabel="value coordinate 2", grid_y=False)
        poly = np.vstack([v, v[:1]])
        ax.fill(poly[:, 0], poly[:, 1], color=PALETTE["sky"], alpha=0.15)
        ax.plot(poly[:, 0], poly[:, 1], color=PALETTE["grey"], linestyle="--", lw=st.lw)
        ax.scatter(v[:, 0], v[:, 1], s=80 * st.scale, color=PALETTE["source"], zorder=4)
        for i, (x, y) in enumerate(v):
            ax.text(x + 0.06, y + 0.08, f"value {i + 1}", fontsize=st.fs)
        for k, c in enumerate(np.asarray(chapter_contexts, float).reshape(-1, 2)):
            ax.scatter([c[0]], [c[1]], s=60 * st.scale, facecolor="none",
                       edgecolor="black", zorder=4, label="chapter's contexts" if k == 0 else None)
        pad = 0.35
        ax.set_xlim(v[:, 0].min() - pad, v[:, 0].max() + pad + 0.3)
        ax.set_ylim(v[:, 1].min() - pad, v[:, 1].max() + pad)
        ax.set_aspect("equal", adjustable="box")
        self.spokes = [self._dyn(ax.plot([], [], color=PALETTE["weight"], alpha=0.7,
                                         solid_capstyle="round")[0]) for _ in range(len(v))]
        (self.point,) = ax.plot([], [], "o", markersize=11 * st.scale, color=PALETTE["context"],
                                markeredgecolor="black", zorder=6, label="context c = αᵀV")
        self._dyn(self.point)
        self.label = self._text(ax, 0, 0, "", fontsize=st.small, zorder=7)
        ax.legend(fontsize=st.small, frameon=False, loc="upper right")
        ax.set_title("the context stays inside the values' triangle", fontsize=st.title,
                     loc="left")
        ax_w = fig.add_axes([0.77, 0.52, 0.2, 0.3])
        st.axes(ax_w, title="weights α")
        ax_w.set_xticks(np.arange(len(v)), [f"v{i + 1}" for i in range(len(v))])
        ax_w.set_xlim(-0.6, len(v) - 0.4)
        ax_w.set_ylim(0, 1.02)
        self.bars = self._bars(ax_w, len(v), PALETTE["weight"])
        self.check = self._text(fig.add_axes([0.72, 0.1, 0.27, 0.3]), 0.05, 0.6, "",
                                fontsize=st.fs, va="center")
        self.check.axes.axis("off")
        self._message_box(ax, "hull", y=0.8)

    def update(self, *, weights, context, inside, message=None):
        w = np.asarray(weights, float)
        c = np.asarray(context, float)
        for line, vert, wi in zip(self.spokes, self.values, w):
            line.set_data([c[0], vert[0]], [c[1], vert[1]])
            line.set_linewidth(0.5 + 10 * float(wi) * self.style.scale)
        self.point.set_data([c[0]], [c[1]])
        self.label.set_position((c[0] + 0.08, c[1] - 0.22))
        self.label.set_text(fmt_vec(w, 2))
        self._set_heights(self.bars, w)
        verdict = ("no mixture" if message else "yes" if np.all(inside) else "NO")
        self.check.set_text(f"context = {fmt_vec(c, 3)}\nweights sum to {w.sum():.3f}\n"
                            f"inside the value range: {verdict}")
        self.message("hull", message)


# --------------------------------------------------------------------------------------------
# The chapter's six figures (static)
# --------------------------------------------------------------------------------------------

def overview_figure(scores, weights, *, presentation=False) -> StaticFigure:
    """Figure 1: the overview diagram (sources -> scores -> softmax weights -> context) drawn
    with the scores and weights of one query."""
    st = _Style(presentation)
    fig = _new_figure((10.0, 3.9), st, layered=False)
    ax = fig.add_axes([0.005, 0.01, 0.99, 0.98])
    d = _OverviewDiagram(ax, st, len(weights))
    d.update(scores, weights)
    top = int(np.nanargmax(weights))
    desc = (f"Figure: five source boxes, each with a key and a value, feed one score each "
            f"(scores {fmt_vec(scores, 2)}); softmax turns the scores into weights "
            f"{fmt_vec(weights, 2)} that sum to 1; every weight sends a line to the context "
            f"vector, thickest from source {top + 1} (weight {weights[top]:.2f}).")
    return StaticFigure(fig, desc)


def two_query_heatmap(weights, row_labels: Sequence[str], *, presentation=False) -> StaticFigure:
    """Figure 2: the weights of two (or more) queries over the same sources as a heatmap."""
    st = _Style(presentation)
    w = np.asarray(weights, float)
    R, S = w.shape
    fig = _new_figure((9.0, 1.3 + 0.75 * R), st, layered=False)
    ax = fig.add_axes([0.26, 0.3, 0.62, 0.55])
    im = ax.imshow(w, cmap=CMAP, vmin=0, vmax=max(0.5, float(w.max())), aspect="auto")
    ax.set_xticks(np.arange(S), [f"source {j + 1}" for j in range(S)], fontsize=st.small)
    ax.set_yticks(np.arange(R), list(row_labels), fontsize=st.small)
    for r in range(R):
        for j in range(S):
            dark = w[r, j] < 0.6 * im.norm.vmax
            ax.text(j, r, f"{w[r, j]:.2f}", ha="center", va="center", fontsize=st.fs,
                    color="white" if dark else "black")
    ax.set_title("same sources, different queries", fontsize=st.title, loc="left")
    cb = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03)
    cb.set_label("attention weight", fontsize=st.small)
    cb.ax.tick_params(labelsize=st.small)
    tops = [f"{lab}: most weight on source {int(np.argmax(row)) + 1} ({row.max():.2f})"
            for lab, row in zip(row_labels, w)]
    desc = (f"Figure: a heatmap with one row per query and one column per source position; "
            f"darker cells are smaller weights. " + "; ".join(tops) + ".")
    return StaticFigure(fig, desc)


def temperature_panels(temperatures, weights, *, presentation=False) -> StaticFigure:
    """Figure 3: the weights of one score vector at several temperatures, one panel each."""
    st = _Style(presentation)
    w = np.asarray(weights, float)
    n, S = w.shape
    fig = _new_figure((3.6 * n, 3.3), st, layered=False)
    axes = fig.subplots(1, n, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, tau, row in zip(axes, temperatures, w):
        st.axes(ax, title=f"temperature {tau:g}")
        _positions_axis(ax, S, st)
        ax.bar(np.arange(S), row, width=0.7, color=PALETTE["weight"])
        for j, v in enumerate(row):
            ax.text(j, v + 0.015, f"{v:.2f}", ha="center", va="bottom", fontsize=st.small)
        ax.set_ylim(0, 0.8)
    axes[0].set_ylabel("attention weight", fontsize=st.fs)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.17, top=0.88, wspace=0.12)
    top = int(np.argmax(w[0]))
    desc = (f"Figure: {n} bar charts of the weights over {S} source positions at temperatures "
            + ", ".join(f"{t:g}" for t in temperatures)
            + f". The ranking is the same in every panel (position {top + 1} highest); its weight "
            f"goes " + ", ".join(f"{v:.3f}" for v in w[:, top])
            + " as the temperature rises, so lower temperature concentrates the weight.")
    return StaticFigure(fig, desc)


def mask_figure(unmasked_weights, masked_weights, valid, *, presentation=False) -> StaticFigure:
    """Figure 4: weights without a mask beside the weights with the ineligible positions masked
    before the softmax."""
    st = _Style(presentation)
    a = np.asarray(unmasked_weights, float)
    b = np.asarray(masked_weights, float)
    valid = np.asarray(valid, bool)
    S = a.size
    fig = _new_figure((9.0, 3.3), st, layered=False)
    axes = fig.subplots(1, 2, sharey=True)
    off = [str(j + 1) for j in np.flatnonzero(~valid)]
    for ax, w, title, color in ((axes[0], a, "no mask", PALETTE["sky"]),
                                (axes[1], b, f"positions {'-'.join(off)} masked",
                                 PALETTE["weight"])):
        st.axes(ax, title=title)
        _positions_axis(ax, S, st)
        ax.bar(np.arange(S), w, width=0.7, color=color)
        for j, v in enumerate(w):
            masked = ax is axes[1] and not valid[j]
            ax.text(j, v + (0.07 if masked else 0.015), "0 (masked)" if masked else f"{v:.3f}",
                    ha="center", va="bottom", fontsize=st.small)
        ax.set_ylim(0, 0.8)
    axes[1].plot(np.flatnonzero(~valid), np.full((~valid).sum(), 0.025), "x", color="black",
                 markersize=9, markeredgewidth=1.6)
    axes[0].set_ylabel("attention weight", fontsize=st.fs)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.17, top=0.88, wspace=0.1)
    desc = (f"Figure: two bar charts over {S} positions. Without a mask the weights are "
            f"{fmt_vec(a)}; with positions {' and '.join(off)} masked before the softmax they get "
            f"exactly 0 and the others are renormalised to {fmt_vec(b)}, which again sum to 1.")
    return StaticFigure(fig, desc)


def window_figure(global_mask, local_mask, *, presentation=False) -> StaticFigure:
    """Figure 5: a ten-position source twice, all eligible (global) and a window (local)."""
    st = _Style(presentation)
    g = np.asarray(global_mask, bool)
    loc = np.asarray(local_mask, bool)
    S = g.size
    fig = _new_figure((9.5, 2.9), st, layered=False)
    on = np.flatnonzero(loc) + 1
    span = f"positions {on.min()}-{on.max()}" if on.size else "no position"
    for y, m, title in ((0.55, g, "Global: every source position is eligible"),
                        (0.05, loc, f"Local: a window around the predicted centre ({span})")):
        ax = fig.add_axes([0.02, y, 0.96, 0.36])
        ax.set_xlim(-0.1, S + 0.05)
        ax.set_ylim(0, 1)
        ax.axis("off")
        for i in range(S):
            ax.add_patch(Rectangle((i, 0.1), 0.85, 0.55,
                                   facecolor=PALETTE["weight"] if m[i] else PALETTE["masked"],
                                   edgecolor="white", hatch=None if m[i] else "//"))
            ax.text(i + 0.425, 0.375, str(i + 1), ha="center", va="center", fontsize=st.fs)
        ax.text(0, 0.95, title, fontsize=st.title, va="top")
    desc = (f"Figure: a line of {S} source positions drawn twice. In the global row all "
            f"{int(g.sum())} are highlighted; in the local row only {span} ({int(loc.sum())} "
            f"positions) are highlighted and the rest are greyed out and hatched.")
    return StaticFigure(fig, desc)


def hull_figure(values, weight_sets, contexts, *, presentation=False) -> StaticFigure:
    """Figure 6: three 2-D values, their triangle, and contexts of given weights inside it."""
    st = _Style(presentation)
    v = np.asarray(values, float)
    W = np.asarray(weight_sets, float)
    C = np.asarray(contexts, float)
    fig = _new_figure((6.2, 5.0), st, layered=False)
    ax = fig.add_axes([0.11, 0.11, 0.85, 0.8])
    st.axes(ax, xlabel="value coordinate 1", ylabel="value coordinate 2", grid_y=False)
    poly = np.vstack([v, v[:1]])
    ax.fill(poly[:, 0], poly[:, 1], color=PALETTE["sky"], alpha=0.15)
    ax.plot(poly[:, 0], poly[:, 1], color=PALETTE["grey"], linestyle="--")
    ax.scatter(v[:, 0], v[:, 1], s=90, color=PALETTE["source"], zorder=3)
    for i, (x, y) in enumerate(v):
        ax.text(x + 0.06, y + 0.06, f"value {i + 1}", fontsize=st.fs)
    markers = ["o", "s", "^", "D"]
    colors = [PALETTE["context"], PALETTE["weight"], PALETTE["query"], PALETTE["score"]]
    for i, (c, w) in enumerate(zip(C, W)):
        ax.scatter(c[0], c[1], s=95, color=colors[i % 4], marker=markers[i % 4], zorder=4,
                   edgecolor="black")
        ax.text(c[0] + 0.07, c[1] - 0.2, f"context {i + 1}: {fmt_vec(w, 2)}", fontsize=st.small)
    ax.set_title("contexts stay inside the values' triangle", fontsize=st.title, loc="left")
    ax.set_aspect("equal")
    pts = "; ".join(f"context {i + 1} at {fmt_vec(c, 3)} from weights {fmt_vec(w, 2)}"
                    for i, (c, w) in enumerate(zip(C, W)))
    desc = (f"Figure: a scatter plot of {len(v)} value vectors as the corners of a dashed "
            f"triangle and {len(C)} contexts inside it: {pts}.")
    return StaticFigure(fig, desc)
