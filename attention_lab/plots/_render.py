"""The rendering engine of the live figures: a layered figure and fast labels.

* :class:`LayeredFigure`: static pixels cached, dynamic artists drawn on top (matplotlib's
  blitting).
* :class:`FastText`: a label for values that change on every update, pasted from cached glyph
  bitmaps. It stays because stock ``matplotlib.text.Text`` labels make the explorers' frames
  2.4-6x slower (``python -m benchmarks.run explorers``, the rows "changing labels as stock
  matplotlib Text"; ``docs/maintainers/decisions.md``).
* :class:`Bars`: a group of bars as one artist (one draw call).
* Shared styling: the Okabe-Ito :data:`PALETTE`, :data:`CMAP` (the one colour scale for attention
  weights), :class:`Style` (font sizes, larger for a projector), :func:`new_figure`,
  :func:`positions_axis`, :func:`value_triangle`, :func:`fmt_vec`.

Nothing here knows about attention; :mod:`.live` and :mod:`.chapter` draw with it.
"""

from __future__ import annotations

import zlib
from functools import lru_cache

import numpy as np
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.colors import LinearSegmentedColormap, to_rgba
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.path import Path
from matplotlib.transforms import Bbox, IdentityTransform

from .._compat.matplotlib import glyph_load_flags
from .._format import non_finite_word

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
#: The colour scale of attention weights, everywhere (live figures, chapter figures, the trained
#: model's heatmaps), always from 0 to 1: near-white at 0, through the weight green, to a dark green
#: at 1, so *darker = larger weight*. Its lightness falls steadily, also under deuteranopia and
#: protanopia (tests/widgets/test_colours.py), so the scale reads the same without hue.
CMAP = LinearSegmentedColormap.from_list(
    "attention_weights", ["#F7FBF9", "#7FCDB0", PALETTE["weight"], "#00583F", "#00261B"])


def text_on_weight(w: float) -> str:
    """Black or white: the label colour readable on a cell of weight ``w`` in :data:`CMAP`."""
    return "white" if np.isfinite(w) and w > 0.55 else "black"


def fmt_vec(x, digits: int = 3) -> str:
    """``[0.123, 0.361, ...]`` as text, NaN written as ``nan``."""
    x = np.ravel(np.asarray(x, dtype=float))
    # np.round first, so that the text agrees with numpy's printing of np.round(x, digits)
    return "[" + ", ".join(non_finite_word(v) or f"{np.round(v, digits) + 0.0:.{digits}f}"
                           for v in x) + "]"


# --------------------------------------------------------------------------------------------
# The layered figure: static pixels cached, dynamic artists drawn on top
# --------------------------------------------------------------------------------------------

class LayeredFigure(Figure):
    """A Figure drawn by matplotlib's documented blitting: its static part is rendered once and
    kept as a background, and a draw restores it and draws only the dynamic artists on it.

    The artists registered with :meth:`add_dynamic` are ``animated`` and not ``in_layout``: the
    stock draw and the layout leave them out. On the canvas's Agg renderer, a full draw (the
    static part, then its ``draw_event``) is followed by ``canvas.copy_from_bbox``; the next draws,
    while nothing static changed (same size, dpi, axes limits, axes visibility and
    :attr:`static_version`), are ``canvas.restore_region(background)`` and the dynamic artists
    drawn in z-order (what ``Figure.draw_artist`` does). :meth:`pack_static` keeps the background
    compressed while the figure is idle (a presentation figure's 2-3 MiB in tens of KiB). Saving
    to a file renders everything.
    """

    def __init__(self, *args, cache: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.cache_enabled = cache
        self._dynamic: list = []
        self.static_version = 0
        self._cache_key = None
        self._static = None  # the background (canvas.copy_from_bbox), or None
        self._packed = None  # ... or its pixels compressed (pack_static): (zlib bytes, shape)
        #: how many times the static layer was rendered (tests and benchmarks read it)
        self.static_renders = 0

    def add_dynamic(self, *artists) -> None:
        """Register artists that updates change; they are drawn on top of the static layer."""
        for a in artists:
            if a not in self._dynamic:
                a.set_animated(True)    # left out of the stock draw
                a.set_in_layout(False)  # and of the layout: a function of the static part
                self._dynamic.append(a)
        self._dynamic.sort(key=lambda a: a.get_zorder())

    @property
    def dynamic_artists(self) -> tuple:
        return tuple(self._dynamic)

    def pack_static(self) -> None:
        """Keep the background's pixels compressed until the next draw (an idle figure)."""
        if self._static is not None:
            pixels = np.asarray(self._static)                               # (H, W, 4)
            self._packed, self._static = (zlib.compress(pixels, 1), pixels.shape), None

    def invalidate_static(self) -> None:
        """Call after changing a static artist (a title, a tick label, a static patch)."""
        self.static_version += 1
        self.stale = True

    def _key(self, renderer):
        axes = tuple((ax.get_visible(), ax.viewLim.bounds, ax.bbox.bounds) for ax in self.axes)
        return (renderer.width, renderer.height, self.dpi, self.static_version, axes)

    def _background(self, renderer):
        # the figure's bbox in whole pixels: its float extents may fall short of the last row
        return self.canvas.copy_from_bbox(Bbox.from_bounds(0, 0, renderer.width, renderer.height))

    def draw(self, renderer):
        if not self.get_visible():
            return
        saving = self.canvas.is_saving()
        blit = (self.cache_enabled and not saving
                and renderer is getattr(self.canvas, "renderer", None))  # the canvas's Agg
        fresh = blit and self._key(renderer) == self._cache_key
        if fresh and self._packed is not None:
            data, shape = self._packed  # packed: drawn back as an image, the background again
            gc = renderer.new_gc()
            renderer.draw_image(gc, 0, 0, np.frombuffer(zlib.decompress(data), np.uint8)
                                .reshape(shape)[::-1])
            gc.restore()
            self._static, self._packed = self._background(renderer), None
        elif fresh and self._static is not None:
            self.canvas.restore_region(self._static)
        else:
            # saving, the axes draw animated artists too: hidden there, drawn on top below
            hidden = [a for a in self._dynamic if saving and a.get_visible()]
            for a in hidden:
                a.set_visible(False)
            try:
                super().draw(renderer)  # the static layer; then its draw_event
            finally:
                for a in hidden:
                    a.set_visible(True)
            self.static_renders += 1
            if blit:  # the key after drawing: a draw may move axes (colorbars place themselves)
                self._static, self._packed = self._background(renderer), None
                self._cache_key = self._key(renderer)
        for a in self._dynamic:
            a.draw(renderer)  # Figure.draw_artist(a), on the renderer being drawn
        self.stale = False


# --------------------------------------------------------------------------------------------
# Fast text: labels that change on every update
# --------------------------------------------------------------------------------------------

@lru_cache(maxsize=2048)
def _glyph(ch: str, size: float, weight: str, dpi: float):
    """(coverage bitmap, left bearing, top bearing, advance) of one character, in pixels."""
    font = get_font(findfont(FontProperties(size=size, weight=weight)))
    font.set_size(size, dpi)
    flags = glyph_load_flags()
    font.set_text(ch, 0.0, flags=flags)
    font.draw_glyphs_to_bitmap(antialiased=True)
    coverage = np.array(font.get_image(), dtype=np.uint8)
    descent = font.get_descent() / 64.0
    g = font.load_char(ord(ch), flags=flags)
    advance = g.linearHoriAdvance / 65536.0
    left = g.horiBearingX / 64.0
    top = coverage.shape[0] - descent  # rows above the baseline
    return coverage, left, top, advance


#: lines of text kept rasterised (10-35 KiB each at a projector's size): a value a slider comes
#: back to is pasted, not rasterised again (0.3-0.5 ms a line); bounded, so that a long session
#: does not grow a kernel
TEXT_CACHE_LINES = 256


def forget_text() -> None:
    """Free the rasterised lines (an idle figure); the glyphs they are made of stay cached."""
    _coverage.cache_clear()
    _text_bitmap.cache_clear()


@lru_cache(maxsize=TEXT_CACHE_LINES)
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


@lru_cache(maxsize=TEXT_CACHE_LINES)
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

    Drawing a ``matplotlib.text.Text`` lays out and rasterises every glyph on every draw (a few
    ms per label: ``python -m benchmarks.run explorers``, the "stock matplotlib Text" rows). A
    FastText rasterises each distinct string once with FreeType, caches the bitmap, and afterwards
    pastes it with ``renderer.draw_image`` (about 0.05 ms). It supports ``ha``
    (left/center/right), ``va`` (baseline/bottom/center/top), several lines, a colour, a weight
    and a plain box behind it (``box=(facecolor, edgecolor)``); no rotation and no math text (use
    a ``Text`` for those).
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
        if not self._text or self.figure is None:
            return Bbox.null()
        dpi = self.figure.dpi
        boxes = [Bbox.from_bounds(left, bottom, img.shape[1], img.shape[0])
                 for img, left, bottom in self._layout(dpi)]
        return Bbox.union(boxes) if boxes else Bbox.null()


def add_fast_text(parent, x, y, s="", **kw) -> FastText:
    """A :class:`FastText` added to ``parent`` (an Axes or a Figure), never clipped."""
    t = FastText(x, y, s, **kw)
    parent.add_artist(t)
    t.set_clip_on(False)
    return t


# --------------------------------------------------------------------------------------------
# Styling
# --------------------------------------------------------------------------------------------

class Style:
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


def value_triangle(ax, v, *, size: float, lw=None, zorder: int = 4) -> None:
    """The values ``v`` (n, 2) as points, the polygon they span shaded and outlined."""
    ring = np.vstack([v, v[:1]])
    ax.fill(ring[:, 0], ring[:, 1], color=PALETTE["sky"], alpha=0.15)
    ax.plot(ring[:, 0], ring[:, 1], color=PALETTE["grey"], linestyle="--", lw=lw)
    ax.scatter(v[:, 0], v[:, 1], s=size, color=PALETTE["source"], zorder=zorder)


def positions_axis(ax, S: int, style: Style, label="source position"):
    ax.set_xticks(np.arange(S), [str(i + 1) for i in range(S)])
    ax.set_xlim(-0.6, S - 0.4)
    if label:
        ax.set_xlabel(label, fontsize=style.fs)


#: widest live figure in inches at 100 dpi: fits a JupyterLab output area beside the file browser
LIVE_MAX_WIDTH = 8.8


def new_figure(size, style: Style, *, layered: bool, cache: bool = True) -> Figure:
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

