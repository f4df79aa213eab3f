"""The explorers' live figures: built once, then ``update(...)`` changes their artists in place.

Every live figure is a :class:`LivePlot`; its ``update(...)`` takes keyword arguments only, the
numbers the core computed, and never computes attention, clears an axes or creates a figure. Each
``update``'s docstring is the contract between the figure and its explorer.

Colours are the Okabe-Ito palette (safe for the common colour-vision deficiencies), weights in a
heatmap or a shaded box use the one weight scale :data:`CMAP` (0 to 1, darker = larger), and
meaning is never carried by colour alone (hatching marks masked or wrong bars, text labels name
every panel).
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.patches import FancyArrowPatch, Rectangle

from ._render import (CMAP, PALETTE, Bars, LayeredFigure, Style, add_fast_text, fmt_vec,
                      new_figure, positions_axis, text_on_weight, value_triangle)

__all__ = ["LivePlot", "OverviewDiagram", "QueryPlot", "ScorePlot", "TemperaturePlot", "MaskPlot",
           "WindowPlot", "AxisPlot", "PrecisionPlot", "HullPlot", "GeometryPlot", "LocalPPlot"]


class LivePlot:
    """Base of the explorers' figures.

    A subclass builds its axes and artists once in ``__init__`` (static ones as usual, the ones
    that change through :meth:`_dyn`, :meth:`_line`, :meth:`_bars`, :meth:`_text`,
    :meth:`_message_box`) and defines ``update(**numbers)``, which only moves those artists. What
    an explorer relies on: ``figure`` (a :class:`LayeredFigure` on an Agg canvas until the
    explorer gives it another), ``update(...)``, :meth:`add_error_box`, :meth:`message` /
    :meth:`messages` and :meth:`png`.
    """

    #: (width, height) in inches at 100 dpi, before the presentation scale
    size = (8.0, 3.2)

    def __init__(self, *, presentation: bool = False, cache: bool = True):
        self.style = Style(presentation)
        self.figure = self._make_figure(cache)
        self._messages: dict = {}

    def _make_figure(self, cache: bool) -> LayeredFigure:
        """The figure to draw on (a subclass with its own layout overrides this)."""
        return new_figure(self.size, self.style, layered=True, cache=cache)

    def update(self, **numbers) -> None:
        """Show new numbers by changing the dynamic artists in place (each subclass documents
        its keywords)."""
        raise NotImplementedError

    # helpers ------------------------------------------------------------------------------
    def _panel(self, rect, S=None, *, ylim=(0, 1.02), label="source position", names=None,
               **style):
        """An axes at ``rect`` in the :class:`Style` (``style``: its keywords), over ``S``
        positions (ticks 1..S or ``names``, the x label ``label``), with ``ylim``."""
        ax = self.figure.add_axes(rect)
        self.style.axes(ax, **style)
        if S is not None:
            positions_axis(ax, S, self.style, label=label)
        if names is not None:
            ax.set_xticks(np.arange(S), names)
        if ylim is not None:
            ax.set_ylim(*ylim)
        return ax

    def _banner(self, rect, x=0.01, y=0.5, **kw):
        """A dynamic line of text, vertically centred, on a frameless axes of its own."""
        ax = self.figure.add_axes(rect)
        ax.axis("off")
        return self._text(ax, x, y, "", va="center", **kw)

    def _heatmap(self, ax, T, S):
        """A dynamic T x S grid of cells on the weight scale :data:`CMAP`, centred on 0..S-1."""
        return self._dyn(ax.pcolormesh(np.arange(S + 1) - 0.5, np.arange(T + 1) - 0.5,
                                       np.zeros((T, S)), cmap=CMAP, vmin=0, vmax=1,
                                       edgecolors="white", linewidth=0.5))

    def _title(self, ax, y, **kw):
        """A dynamic title at height ``y`` above ``ax`` (in axes coordinates)."""
        kw.setdefault("fontsize", self.style.title)
        return self._text(ax, 0.0, y, "", transform=ax.transAxes, **kw)

    def _sum_label(self, ax, text=""):
        """A row sum in the upper right corner of ``ax``; dynamic unless ``text`` is given."""
        return self._text(ax, 0.98, 0.93, text, dynamic=not text, transform=ax.transAxes,
                          ha="right", fontsize=self.style.small)

    def _colorbar(self, image, ax, **kw):
        cb = self.figure.colorbar(image, ax=ax, **kw)
        cb.ax.tick_params(labelsize=self.style.small)

    def _crosses(self, axes):
        """A dynamic row of crosses on each of ``axes``, for :meth:`_cross_masked`."""
        kw = dict(linestyle="none", marker="x", markersize=8 * self.style.scale, color="black",
                  markeredgewidth=1.5 * self.style.lw, clip_on=False)
        self.cross = [self._line(ax, [], [], **kw) for ax in axes]

    def _cross_masked(self, mask):
        """Crosses at the masked positions (``mask`` (S,) bool: True = eligible)."""
        masked_x = np.flatnonzero(~np.asarray(mask, bool))
        for line in self.cross:
            line.set_data(masked_x, np.full(masked_x.size, 0.03))

    def _value_plane(self, ax, v, size, pad, right=0.0):
        """The values ``v`` (n, 2) as a shaded triangle (:func:`value_triangle`), framed ``pad``
        wide (``right`` more on the right), on equal scales."""
        value_triangle(ax, v, size=size * self.style.scale, lw=self.style.lw)
        ax.set_xlim(v[:, 0].min() - pad, v[:, 0].max() + pad + right)
        ax.set_ylim(v[:, 1].min() - pad, v[:, 1].max() + pad)
        ax.set_aspect("equal", adjustable="box")

    def _spokes(self, ax, values, markersize, label=None, **kw):
        """The context as a point, with a dynamic line to each of ``values`` (n, 2)."""
        self.values = np.asarray(values, float)
        self.spokes = [self._line(ax, [], [], color=PALETTE["weight"], alpha=0.7,
                                  solid_capstyle="round", **kw) for _ in values]
        self.point = self._line(ax, [], [], "o", markersize=markersize * self.style.scale,
                                color=PALETTE["context"], markeredgecolor="black", zorder=6,
                                label=label)

    def _show_spokes(self, context, weights, width):
        """The context point, and its line to value i ``0.5 + width * weights[i]`` wide."""
        for line, vert, wi in zip(self.spokes, self.values, weights):
            line.set_data([context[0], vert[0]], [context[1], vert[1]])
            line.set_linewidth(0.5 + width * float(wi) * self.style.scale)
        self.point.set_data([context[0]], [context[1]])

    def _dyn(self, *artists):
        self.figure.add_dynamic(*artists)
        return artists[0] if len(artists) == 1 else artists

    def _line(self, ax, *args, **kw):
        """A dynamic line, ``ax.plot(*args, **kw)``."""
        return self._dyn(ax.plot(*args, **kw)[0])

    def _star(self, ax):
        """A dynamic star marking the target position."""
        return self._line(ax, [], [], linestyle="none", marker="*",
                          markersize=13 * self.style.scale, color=PALETTE["score"],
                          markeredgecolor="black")

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
            t = add_fast_text(ax, x, y, s, **kw)
        else:
            t = ax.text(x, y, s, **kw)
        if dynamic:
            self._dyn(t)
        return t

    def _message_box(self, ax, name, y=0.5, zorder=20, box=("#FFF7D6", PALETTE["score"])):
        """A centred message for 'nothing to show' states in ``ax`` (an Axes, or the Figure);
        hidden until :meth:`message` sets it."""
        where = getattr(ax, "transAxes", self.figure.transFigure)
        t = add_fast_text(ax, 0.5, y, "", transform=where, ha="center", va="center",
                          fontsize=self.style.fs, color="#222222", zorder=zorder, box=box)
        t.set_visible(False)
        self._messages[name] = self._dyn(t)

    def add_error_box(self) -> None:
        """A figure-wide message box for unexpected errors (explorers use it)."""
        if "error" not in self._messages:
            self._message_box(self.figure, "error", zorder=50, box=("#FFE9E0", PALETTE["context"]))

    def message(self, name: str, text: str | None) -> None:
        """Show ``text`` in the message box ``name`` (None or "" hides it)."""
        t = self._messages[name]
        t.set_text(text or "")
        t.set_visible(bool(text))

    def messages(self) -> dict:
        """The visible messages, name -> text (tests read it)."""
        return {k: t.get_text() for k, t in self._messages.items() if t.get_visible()}

    def png(self) -> bytes:
        """The current figure as PNG bytes (through the cached draw)."""
        from PIL import Image

        canvas = self.figure.canvas
        FigureCanvasAgg.draw(canvas)
        out = io.BytesIO()
        Image.fromarray(np.asarray(canvas.buffer_rgba())).save(out, format="png")
        return out.getvalue()


class OverviewDiagram:
    """The chapter's overview diagram (query -> scores -> weights -> context) drawn on one axes.

    Static: the source, query and context boxes and the grey arrows. Dynamic: the score and weight
    labels, the weight boxes' colour (the weight scale :data:`CMAP`: darker = larger) and the
    width of each arrow from a weight to the context.
    """

    def __init__(self, ax, style: Style, S: int = 5, register=None):
        self.ax, self.style, self.S = ax, style, S
        ax.set(xlim=(0, 10), ylim=(0.05, 4.15))
        ax.axis("off")
        fs, small = style.fs, style.small
        grey = PALETTE["grey"]
        step = 6.2 / S
        self.xs = [0.25 + i * step for i in range(S)]
        bw = step * 0.8

        def box(x, y, w, h, color, label=None, fontsize=fs, ink="white"):
            ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="white"))
            if label:
                ax.text(x + w / 2, y + h / 2, label, ha="center", va="center",
                        fontsize=fontsize, color=ink)

        def arrow(start, end, scale=10, color=grey, **kw):
            ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", color=color, lw=style.lw,
                                         mutation_scale=scale * style.scale, **kw))

        self.score_text, self.weight_text, arrows = [], [], []
        for i, x in enumerate(self.xs):
            cx = x + bw / 2
            box(x, 3.25, bw, 0.65, PALETTE["source"], f"source {i + 1}\nkey, value", small)
            arrow((cx, 3.2), (cx, 2.55))
            box(x, 2.0, bw, 0.5, PALETTE["score"])
            self.score_text.append(add_fast_text(ax, cx, 2.25, "", ha="center", va="center",
                                                  fontsize=small))
            arrow((cx, 1.95), (cx, 1.35))
            self.weight_text.append(add_fast_text(ax, cx, 1.05, "", ha="center", va="center",
                                                   fontsize=small, zorder=4))
            arrows.append([(cx, 0.78), (7.55, 0.62)])
        centres = np.array(self.xs) + bw / 2
        self.weight_box = Bars(centres, width=bw, bottom=0.8, facecolor=CMAP(0.0),
                               edgecolor="black", linewidth=0.6 * style.lw)
        self.weight_box.set_heights(np.full(S, 0.5))
        ax.add_collection(self.weight_box, autolim=False)
        self.arrows = LineCollection(arrows, colors=PALETTE["weight"], alpha=0.85,
                                     capstyle="round")
        ax.add_collection(self.arrows, autolim=False)
        # black on the query's pink and the context's vermillion (white: 3.1:1 and 3.9:1)
        box(7.55, 2.45, 2.1, 0.65, PALETTE["query"], "decoder query q", ink="black")
        for x in self.xs:
            arrow((7.5, 2.7), (x + bw / 2 + 0.15, 2.52), 9, PALETTE["query"], alpha=0.55)
        box(7.55, 0.3, 2.1, 0.65, PALETTE["context"], "context c", ink="black")
        ax.text(0.05, 2.25, "scores e", ha="left", va="center", fontsize=small, rotation=90)
        ax.text(0.05, 1.05, "weights α", ha="left", va="center", fontsize=small, rotation=90)
        ax.text(7.0, 1.65, "softmax: weights ≥ 0, sum 1\nc = Σ αᵢ vᵢ (width of line ∝ αᵢ)",
                ha="left", va="center", fontsize=small, color=grey)
        dyn = self.score_text + self.weight_text + [self.weight_box, self.arrows]
        if register is not None:
            register(*dyn)

    def update(self, scores, weights):
        """Label the diagram with one query's numbers.

        scores (S,): the scores e_i, written as ``e = +0.98`` in the score boxes.
        weights (S,): the weights alpha_i, written as ``alpha = 0.36`` (NaN as ``nan``); they colour
            the weight boxes on the weight scale (darker = larger) and set the width of each line to
            the context (0: no line).
        """
        for t, e in zip(self.score_text, scores):
            t.set_text(f"e = {e:+.2f}")
        w = np.asarray(weights, dtype=float)
        ok = np.isfinite(w)
        wz = np.where(ok, w, 0.0)
        for t, x, good in zip(self.weight_text, w, ok):
            t.set_text(f"α = {x:.2f}" if good else "α = nan")
            t.set_color(text_on_weight(x))
        self.weight_box.set_facecolor(CMAP(np.clip(wz, 0, 1)))
        # a zero weight draws no line at all
        self.arrows.set_linewidths(np.where(wz > 0, (0.3 + 9.0 * wz) * self.style.scale, 0.0))


class QueryPlot(LivePlot):
    """Query explorer (notebook 01): overview diagram, weight bars, heatmap row, context vector."""

    size = (10.0, 6.0)

    def __init__(self, values, *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st, fig = self.style, self.figure
        values = np.asarray(values, dtype=float)
        S, D = values.shape
        self.header = self._banner([0, 0.955, 1, 0.04])
        ax_d = fig.add_axes([0.005, 0.43, 0.99, 0.52])
        self.diagram = OverviewDiagram(ax_d, st, S, register=self._dyn)

        ax_w = self._panel([0.065, 0.1, 0.26, 0.25], S, title="weights α (bars)", ylabel="weight")
        self.bars = self._bars(ax_w, S, PALETTE["weight"])

        ax_h = self._panel([0.385, 0.1, 0.24, 0.25], S, ylim=(-0.5, 0.5),
                           title="weights α (heatmap row)", grid_y=False)
        self.image = self._heatmap(ax_h, 1, S)
        ax_h.set_yticks([])
        self._colorbar(self.image, ax_h, fraction=0.08, pad=0.03)

        lo, hi = min(0.0, values.min()), max(1.0, values.max())
        ax_c = self._panel([0.72, 0.1, 0.26, 0.25], D, ylim=(lo - 0.02, hi + 0.3), label=None,
                           names=[f"c{chr(0x2080 + j + 1)}" for j in range(D)],  # c₁, c₂, ..
                           title="context c and the values", ylabel="coordinate value")
        for j in range(D):
            ax_c.scatter(np.full(S, j) + np.linspace(-0.25, 0.25, S), values[:, j], s=14 * st.scale,
                         color=PALETTE["source"], zorder=3, label="values vᵢ" if j == 0 else None)
        self.context_bars = self._bars(ax_c, D, PALETTE["context"], width=0.65, alpha=0.85,
                                       label="context c")
        ax_c.legend(fontsize=st.small, loc="upper center", frameon=False, ncol=2)
        self._message_box(ax_w, "weights")

    def update(self, *, query, scores, weights, context, temperature, hard=False):
        """Show one query's retrieval.

        query (D_k,): the query q, in the header.
        scores (S,), weights (S,): the scores e_i and weights alpha_i, in the overview diagram;
            the weights also as bars (0-1) and as the heatmap row.
        context (D_v,): the context c, as bars beside the values' coordinates.
        temperature (float): named in the header for soft retrieval.
        hard (bool): True when the weights are the arg max (one-hot), named in the header.
        """
        mode = "hard retrieval (arg max)" if hard else f"soft retrieval, temperature {temperature:.2f}"
        self.header.set_text(f"query q = {fmt_vec(query, 2)}    {mode}")
        self.diagram.update(scores, weights)
        self.bars.set_heights(weights)
        self.image.set_array(np.asarray(weights, dtype=float)[None, :])
        self.context_bars.set_heights(context)


class ScorePlot(LivePlot):
    """Score explorer (notebook 02): the chosen score function's scores beside the dot product's,
    and the softmax weights."""

    size = (10.0, 3.6)

    def __init__(self, S: int = 5, *, score_limit: float = 3.0, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        ax_s = self._panel([0.065, 0.17, 0.41, 0.63], S, ylim=(-score_limit, score_limit),
                           ylabel="score eᵢ")
        ax_s.axhline(0, color="black", linewidth=0.8 * st.lw)
        self.bars = self._bars(ax_s, S, PALETTE["score"], label="chosen score")
        self.dot_marks = self._line(ax_s, np.arange(S), np.zeros(S), linestyle="none",
                                    marker="o", markersize=7 * st.scale, markerfacecolor="none",
                                    markeredgecolor="black", label="dot product qᵀkᵢ")
        ax_s.legend(fontsize=st.small, loc="lower left", frameon=False, ncol=2,
                    bbox_to_anchor=(0.0, 0.98))
        self.title = self._title(ax_s, 1.17)
        ax_w = self._panel([0.575, 0.17, 0.41, 0.63], S, ylabel="weight αᵢ")
        ax_w.set_title("softmax weights of the chosen scores", fontsize=st.title, loc="left",
                       pad=18 * st.scale)
        self.weight_bars = self._bars(ax_w, S, PALETTE["weight"])
        self.sum_text = self._sum_label(ax_w)
        self._message_box(ax_s, "scores")

    def update(self, *, kind_label, scores, dot_scores, weights):
        """Show one score function's scores and their weights.

        kind_label (str): the score function in words (the left panel's title).
        scores (S,): the chosen scores as bars, cut at the panel's edge (+-score_limit) with a
            message saying so.
        dot_scores (S,): the dot-product scores q.k_i, as open circles for comparison.
        weights (S,): softmax of the chosen scores, as bars, with their sum.
        """
        self.title.set_text(kind_label)
        clipped = np.clip(np.asarray(scores, float), *self.bars.axes.get_ylim())
        self.bars.set_heights(clipped)
        self.dot_marks.set_ydata(np.asarray(dot_scores, float))
        self.weight_bars.set_heights(weights)
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
        ref = np.asarray(reference_weights, float)
        S = ref.size
        ax_b = self._panel([0.065, 0.17, 0.38, 0.65], S, ylabel="weight αᵢ(τ)")
        self.bars = self._bars(ax_b, S, PALETTE["weight"], label="at τ")
        self._line(ax_b, np.arange(S), ref, linestyle="none", marker="_",  # on top of the bars
                   markersize=26 * st.scale, markeredgewidth=2 * st.lw, color="black",
                   label="at τ = 1", zorder=5)
        # upper right: the weights of positions 4 and 5 stay small at every temperature, so the
        # bars never cover the legend (upper left, position 2's bar reaches 1 as tau -> 0)
        ax_b.legend(fontsize=st.small, frameon=False, loc="upper right", ncol=2)
        self.title = self._title(ax_b, 1.06, fontsize=st.fs if presentation else st.title)

        ax_c = self._panel([0.54, 0.17, 0.37, 0.65], xlabel="temperature τ (log scale)")
        ax_c.set_xscale("log")
        grid = np.asarray(grid, float)
        ax_c.set_xlim(grid.min(), grid.max())
        ticks = [t for t in (0.05, 0.1, 0.2, 0.5, 1, 2, 5) if grid.min() <= t <= grid.max()]
        ax_c.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax_c.minorticks_off()
        ax_c.plot(grid, grid_max_weight, color=PALETTE["weight"], lw=2 * st.lw,
                  label="largest weight (left axis)")
        ax_c.set_ylabel("largest weight", fontsize=st.fs)  # the legend tells the curves apart
        ax_k = ax_c.twinx()
        ax_k.set_ylim(0.9, S + 0.1)
        ax_k.plot(grid, grid_effective_keys, color=PALETTE["source"], lw=2 * st.lw,
                  linestyle="--", label="effective keys (right axis)")
        ax_k.set_ylabel("effective keys exp(H)", fontsize=st.fs)
        ax_k.tick_params(labelsize=st.small)
        ax_k.spines["top"].set_visible(False)
        h1, l1 = ax_c.get_legend_handles_labels()
        h2, l2 = ax_k.get_legend_handles_labels()
        if presentation:  # large type: shorter labels, so that the legend fits above the axes
            l1, l2 = ["largest weight (left)"], ["effective keys (right)"]
        ax_c.legend(h1 + h2, l1 + l2, fontsize=st.small, frameon=False, loc="lower left",
                    bbox_to_anchor=(0.0, 1.0), ncol=2)
        self.vline = self._dyn(ax_c.axvline(1.0, color="black", lw=st.lw, linestyle=":"))
        self.pt_max = self._line(ax_c, [1.0], [0.0], "o", color=PALETTE["weight"],
                                 markersize=7 * st.scale)
        self.pt_eff = self._line(ax_k, [1.0], [1.0], "s", color=PALETTE["source"],
                                 markersize=7 * st.scale)

    def update(self, *, temperature, weights, max_weight, effective_keys):
        """Show the weights at one temperature.

        temperature (float): tau, marked on the concentration curves (log axis).
        weights (S,): the weights at tau, as bars over the weights at tau = 1.
        max_weight (float), effective_keys (float): the largest weight and exp(entropy) at tau,
            as points on their curves and in the title.
        """
        self.title.set_text(f"τ = {temperature:.2f}: largest weight {max_weight:.3f}, "
                            f"≈ {effective_keys:.2f} effective keys")
        self.bars.set_heights(weights)
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
        ref = np.asarray(unmasked_weights, float)
        S = ref.size
        titles = ["no mask\n", "mask BEFORE softmax\n(right)",
                  "mask AFTER softmax,\nno renormalising (wrong)"]
        xs = [0.06, 0.385, 0.71]
        self.axes = []
        for x, title in zip(xs, titles):
            ax = self._panel([x, 0.2, 0.27, 0.58], S, ylabel="weight" if x == xs[0] else None)
            ax.set_title(title, fontsize=st.title, loc="left", pad=12 * st.scale)
            self.axes.append(ax)
        ax0, ax1, ax2 = self.axes
        ax0.bar(np.arange(S), ref, width=0.7, color=PALETTE["sky"])
        self._sum_label(ax0, f"sum = {ref.sum():.3f}")
        self.before = self._bars(ax1, S, PALETTE["weight"])
        self.after = self._bars(ax2, S, PALETTE["wrong"], hatch="//", edgecolor="white")
        self.sum_before, self.sum_after = self._sum_label(ax1), self._sum_label(ax2)
        self._crosses(self.axes[1:])
        for ax in self.axes[1:]:
            ax.text(1.0, -0.3, "× = masked", transform=ax.transAxes, ha="right",
                    fontsize=st.small, color=PALETTE["grey"])
        self._message_box(ax1, "before")
        self._message_box(ax2, "after")

    def update(self, *, mask, weights, row_sum, after_weights=None, after_row_sum=None,
               message=None):
        """Show one mask's effect.

        mask (S,) bool: True = eligible; masked positions get a cross and grey bars.
        weights (S,): the weights with the mask applied before softmax (zeros when the explorer
            has none to show), with their row sum ``row_sum`` (float, NaN shown as ``nan``).
        after_weights (S,) or None: the weights masked after softmax without renormalising, with
            ``after_row_sum``; None hides that panel and says how to show it. A sum below 1
            says how much mass was lost.
        message (str or None): the message of the 'before' panel (an all-masked row's policy).
        """
        mask = np.asarray(mask, bool)
        self._cross_masked(mask)
        self.before.set_heights(weights)
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
            self.after.set_heights(after_weights)
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
        st, fig = self.style, self.figure
        self.S = S
        self.rows = []
        for y in (0.53, 0.06):
            # room above the tallest bar (weight 1) and its star for the row's title
            ax = fig.add_axes([0.02, y, 0.96, 0.42])
            ax.set(xlim=(-0.2, S + 0.1), ylim=(-0.05, 1.6))
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
            star = self._star(ax)
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
        """Show global and local attention over the positions (all 0-based here).

        target (int): the position that holds what the query needs, starred in both rows.
        global_weights (S,), local_weights (S,): the weights without and with the window, as bars.
        local_mask (S,) bool: the window's eligible positions (green squares, others grey).
        centre (float), half_width (float): the window |j - centre| <= half_width, outlined.
        global_title (str), local_title (str): the rows' titles.
        message (str or None): the local row's message (an empty window), None hides it.
        """
        S = self.S
        for row, w, title in ((self.rows[0], global_weights, global_title),
                              (self.rows[1], local_weights, local_title)):
            row["bars"].set_heights(0.8 * np.asarray(w, float))
            row["star"].set_data([target + 0.475], [0.36 + 0.8 * float(
                np.nan_to_num(w[target])) + 0.1])
            row["title"].set_text(title)
        self.rows[1]["squares"].set_facecolor(
            [PALETTE["weight"] if m else PALETTE["masked"] for m in local_mask])
        lo, hi = max(centre - half_width, -0.5), min(centre + half_width, S - 0.5)
        win = self.rows[1]["window"]
        win.set_visible(hi >= lo)  # an empty window: no outline
        win.set_x(lo + 0.475 - 0.47)
        win.set_width(hi - lo + 0.94)
        self.message("local", message)


class AxisPlot(LivePlot):
    """Axis explorer (notebook 03): weights of one batch item with softmax over the key axis
    (right) and over the chosen axis, and which sums equal 1."""

    size = (10.5, 3.8)

    def __init__(self, T: int, S: int, *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        self.T, self.S = T, S
        self.images = []
        for x, title in ((0.07, "right: softmax over\nkeys (dim=-1)"), (0.37, "")):
            ax = self._panel([x, 0.2, 0.24, 0.5], ylim=None, title=title,
                             xlabel="key (source) s", ylabel="query (target) t", grid_y=False)
            self.images.append(self._heatmap(ax, T, S))
            ax.set(xlim=(-0.5, S - 0.5), ylim=(T - 0.5, -0.5))  # query 1 at the top (a matrix)
            ax.set_xticks(np.arange(S), [str(j + 1) for j in range(S)])
            ax.set_yticks(np.arange(T), [str(t + 1) for t in range(T)])
        self.title = self._title(self.images[1].axes, 1.03, va="bottom")
        self.batch_text = self._banner([0, 0.9, 1, 0.08])
        self._colorbar(self.images[1], self.images[1].axes, fraction=0.06, pad=0.03)
        ax_s = self._panel([0.71, 0.2, 0.27, 0.5], ylim=(0, 2.05), ylabel="sum of weights")
        n = T + S + S
        self.groups = (np.arange(T), T + 1 + np.arange(S), T + S + 2 + np.arange(S))
        x = np.concatenate(self.groups)
        ax_s.set_xlim(-0.7, x.max() + 0.7)
        ax_s.axhline(1.0, color="black", lw=st.lw, linestyle=":")
        ax_s.set_xticks([self.groups[0].mean(), self.groups[1].mean(), self.groups[2].mean()],
                        ["over keys\n(per query)", "over queries\n(per key)",
                         "over batch\n(query 1)"], fontsize=st.small)
        ax_s.set_title("which sums are 1?", fontsize=st.title, loc="left")
        self.sum_bars = self._bars(ax_s, n, PALETTE["weight"], x=x, width=0.75)
        self._message_box(ax_s, "sums", y=1.42)  # above the title, clear of the bars

    def update(self, *, batch, weights_key, weights_axis, axis_label, sums_keys, sums_queries,
               sums_batch):
        """Show one batch item's weights normalised over the key axis and over the chosen axis.

        batch (int): the batch item shown (0-based), in the header.
        weights_key (T, S): that item's weights with softmax over the keys (the right axis).
        weights_axis (T, S): that item's weights with softmax over the chosen axis.
        axis_label (str): the chosen axis in words (the second heatmap's title).
        sums_keys (T,), sums_queries (S,), sums_batch (S,): the weights summed over the keys
            (per query), over the queries (per key) and over the batch (query 1); bars equal to 1
            are green, and a message lists the groups that all sum to 1.
        """
        self.batch_text.set_text(f"batch item {batch + 1}: weights (T={self.T}) x (S={self.S})")
        self.images[0].set_array(np.asarray(weights_key, dtype=float))
        self.images[1].set_array(np.asarray(weights_axis, dtype=float))
        self.title.set_text(axis_label)
        values = np.concatenate([sums_keys, sums_queries, sums_batch])
        self.sum_bars.set_heights(np.minimum(values, 2.0))
        self.sum_bars.set_facecolor([PALETTE["weight"] if abs(v - 1.0) < 1e-9 else PALETTE["score"]
                                     for v in values])
        sums_one = [name for name, s in zip(("keys", "queries", "batch"),
                                            (sums_keys, sums_queries, sums_batch))
                    if np.all(np.abs(np.asarray(s) - 1) < 1e-9)]
        self.message("sums", "sums to 1 over: " + (", ".join(sums_one) if sums_one else "none"))


class PrecisionPlot(LivePlot):
    """Precision explorer (notebook 03): what a typical kernel returns (dtype, fill, naive or
    stable) beside the library's masked softmax with its all-masked policy."""

    size = (10.5, 4.0)

    def __init__(self, S: int = 5, *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st = self.style
        self.panels = []
        for x, color in ((0.065, PALETTE["score"]), (0.565, PALETTE["weight"])):
            ax = self._panel([x, 0.2, 0.41, 0.52], S, ylim=(0, 1.1),
                             ylabel="weight" if x < 0.5 else None)
            bars = self._bars(ax, S, color)
            flags = [self._text(ax, i, 0.05, "", ha="center", va="bottom", fontsize=st.fs,
                                fontweight="bold") for i in range(S)]
            title = self._title(ax, 1.08)
            self.panels.append(dict(ax=ax, bars=bars, flags=flags, title=title))
        self._crosses([p["ax"] for p in self.panels])
        self.info = self._banner([0, 0.86, 1, 0.13])
        self._message_box(self.panels[0]["ax"], "kernel", y=0.6)
        self._message_box(self.panels[1]["ax"], "library", y=0.6)

    def update(self, *, mask, kernel_weights, kernel_title, weights, library_title, info,
               kernel_message=None, library_message=None):
        """Show a low-precision kernel's weights beside the library's.

        mask (S,) bool: True = eligible; masked positions get a cross in both panels.
        kernel_weights (S,): what the typical kernel returned (NaN and inf are flagged above
            their bar); ``kernel_title`` (str) names its dtype and softmax.
        weights (S,): the library's weights (zeros when it raised); ``library_title`` (str).
        info (str): one line about the scores and the fill in the dtype, in the header.
        kernel_message, library_message (str or None): the panels' messages, None hides them.
        """
        self._cross_masked(mask)
        for panel, w, title in ((self.panels[0], kernel_weights, kernel_title),
                                (self.panels[1], weights, library_title)):
            w = np.asarray(w, dtype=float)
            panel["bars"].set_heights(np.clip(np.nan_to_num(w, nan=0.0, posinf=1.1), 0, 1.1))
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
        v = np.asarray(values, float)
        ax = self._panel([0.09, 0.1, 0.58, 0.8], ylim=None, xlabel="value coordinate 1",
                         ylabel="value coordinate 2", grid_y=False)
        self._value_plane(ax, v, 80, pad=0.35, right=0.3)
        for i, (x, y) in enumerate(v):
            ax.text(x + 0.06, y + 0.08, f"value {i + 1}", fontsize=st.fs)
        for k, c in enumerate(np.asarray(chapter_contexts, float).reshape(-1, 2)):
            ax.scatter([c[0]], [c[1]], s=60 * st.scale, facecolor="none",
                       edgecolor="black", zorder=4, label="chapter's contexts" if k == 0 else None)
        self._spokes(ax, v, 11, label="context c = αᵀV")
        self.label = self._text(ax, 0, 0, "", fontsize=st.small, zorder=7)
        ax.legend(fontsize=st.small, frameon=False, loc="upper right")
        ax.set_title("the context stays inside the values' triangle", fontsize=st.title,
                     loc="left")
        ax_w = self._panel([0.77, 0.52, 0.2, 0.3], len(v), label=None, title="weights α",
                           names=[f"v{i + 1}" for i in range(len(v))])
        self.bars = self._bars(ax_w, len(v), PALETTE["weight"])
        self.check = self._banner([0.72, 0.1, 0.27, 0.3], 0.05, 0.6)
        self._message_box(ax, "hull", y=0.8)

    def update(self, *, weights, context, inside, message=None):
        """Show one mixture of the three values.

        weights (3,): the weights alpha_i, as bars, as the label of the context point and as the
            width of the line from the context to each value.
        context (2,): the context c = alpha^T V, as a point in the values' plane.
        inside (2,) bool: per coordinate, whether c lies within the values' range (the verdict).
        message (str or None): a "nothing to mix" message (all weights 0), None hides it.
        """
        w = np.asarray(weights, float)
        c = np.asarray(context, float)
        self._show_spokes(c, w, 10)
        self.label.set_position((c[0] + 0.08, c[1] - 0.22))
        self.label.set_text(fmt_vec(w, 2))
        self.bars.set_heights(w)
        verdict = ("no mixture" if message else "yes" if np.all(inside) else "NO")
        self.check.set_text(f"context = {fmt_vec(c, 3)}\nweights sum to {w.sum():.3f}\n"
                            f"inside the value range: {verdict}")
        self.message("hull", message)


class GeometryPlot(LivePlot):
    """Geometry explorer: 2-D keys as arrows and the query as an arrow; each key's projection on
    the query's line (a dashed drop line to its foot, and as a bar: the score divided by the
    query's length); the weights as bars; the values as points and the context among them."""

    size = (8.8, 4.1)

    def __init__(self, keys, values, *, reach: float = 3.3, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st, fig = self.style, self.figure
        k = np.asarray(keys, float)
        v = np.asarray(values, float)
        self.keys, self.values, self.reach = k, v, reach
        S = len(k)
        self.header = self._text(fig, 0.01, 0.985, "", transform=fig.transFigure, va="top")
        # the keys' plane: keys (static arrows), the query and the projections (dynamic)
        ax = self._panel([0.035, 0.08, 0.37, 0.78], ylim=(-reach, reach), grid_y=False)
        ax.set_xlim(-reach, reach)
        ax.set_aspect("equal", adjustable="box")
        ax.axhline(0, color="#E0E0E0", lw=0.8, zorder=0)
        ax.axvline(0, color="#E0E0E0", lw=0.8, zorder=0)
        ax.set_title("keys kᵢ, the query q and its line", fontsize=st.title, loc="left")
        for i, (x, y) in enumerate(k):
            ax.add_patch(FancyArrowPatch((0, 0), (x, y), arrowstyle="-|>",
                                         mutation_scale=12 * st.scale, color=PALETTE["source"],
                                         lw=1.6 * st.lw, zorder=3))
            r = np.hypot(x, y)
            ax.text(x + 0.25 * x / r, y + 0.25 * y / r, f"k{i + 1}", fontsize=st.fs,
                    color=PALETTE["source"], ha="center", va="center", zorder=4)
        self.line = self._line(ax, [], [], color=PALETTE["query"], lw=0.9 * st.lw,
                               linestyle=":", zorder=1)
        self.drops = LineCollection([np.zeros((2, 2))] * S, colors=PALETTE["grey"],
                                    linestyles="--", linewidths=0.9 * st.lw, zorder=2)
        ax.add_collection(self.drops, autolim=False)
        self.feet = self._line(ax, [], [], linestyle="none", marker="o",
                               markersize=5.5 * st.scale, color=PALETTE["score"],
                               markeredgecolor="black", markeredgewidth=0.6, zorder=5)
        self.arrow = FancyArrowPatch((0, 0), (1, 0), arrowstyle="-|>",
                                     mutation_scale=14 * st.scale, color=PALETTE["query"],
                                     lw=2.4 * st.lw, zorder=6)
        ax.add_patch(self.arrow)
        self.q_label = self._text(ax, 0, 0, "q", fontsize=st.fs, ha="center", va="center",
                                  zorder=7)  # black: the query's pink is 3.1:1 on white
        self._dyn(self.drops, self.arrow)
        self.plane = ax

        # projections and weights, one bar per key
        lim = 1.15 * float(np.hypot(k[:, 0], k[:, 1]).max())
        names = [f"k{i + 1}" for i in range(S)]
        ax_p = self._panel([0.47, 0.56, 0.22, 0.3], S, ylim=(-lim, lim), label=None, names=names,
                           title="projection pᵢ (bars), score eᵢ = |q| pᵢ")
        ax_p.axhline(0, color="black", lw=0.8 * st.lw)
        self.proj_bars = self._bars(ax_p, S, PALETTE["score"])
        self.score_text = [self._text(ax_p, i, 0, "", fontsize=st.small, ha="center",
                                      va="center") for i in range(S)]
        ax_w = self._panel([0.47, 0.1, 0.22, 0.3], S, label=None, names=names,
                           title="weights αᵢ")
        self.weight_bars = self._bars(ax_w, S, PALETTE["weight"])

        # the values' plane: the values, the context and a line to each value per weight
        ax_v = self._panel([0.74, 0.08, 0.25, 0.78], ylim=None, grid_y=False,
                           title="values vᵢ and the context c")
        self._value_plane(ax_v, v, 55, pad=0.45)
        centre = v.mean(0)
        for i, (x, y) in enumerate(v):
            dx, dy = np.array([x, y]) - centre
            r = np.hypot(dx, dy) or 1.0
            ax_v.text(x + 0.28 * dx / r, y + 0.28 * dy / r, f"v{i + 1}", fontsize=st.fs,
                      ha="center", va="center")
        self._spokes(ax_v, v, 10, zorder=3)

    def update(self, *, query, direction, projections, scores, weights, context, title):
        """Show one query against the keys.

        query (2,): the query q, an arrow from the origin (none at length 0).
        direction (2,): the unit vector along q (also at length 0): the line drawn through the
            origin that every key is projected on.
        projections (S,): p_i, the signed length of key i's projection on that line: a dashed
            drop line from the key's tip to its foot p_i * direction, and a bar.
        scores (S,): e_i = |q| p_i, written on the side of the zero line that its bar leaves free.
        weights (S,): the weights alpha_i, as bars and as the width of the line from the context
            to each value.
        context (2,): the context c, a point among the values.
        title (str): the header line.
        """
        q = np.asarray(query, float)
        u = np.asarray(direction, float)
        p = np.asarray(projections, float)
        R = self.reach * 1.5
        self.line.set_data([-R * u[0], R * u[0]], [-R * u[1], R * u[1]])
        feet = p[:, None] * u[None, :]                                   # (S, 2) on q's line
        self.drops.set_segments([np.array([k, f]) for k, f in zip(self.keys, feet)])
        self.feet.set_data(feet[:, 0], feet[:, 1])
        length = float(np.hypot(*q))
        self.arrow.set_visible(length > 0)
        self.arrow.set_positions((0, 0), (q[0], q[1]))
        self.q_label.set_position(tuple(q + 0.3 * u))
        self.proj_bars.set_heights(p)
        lim = self.proj_bars.axes.get_ylim()[1]
        for i, (t, e, pi) in enumerate(zip(self.score_text, scores, p)):
            t.set_text(f"{e:+.2f}")
            t.set_position((i, -0.75 * lim if pi >= 0 else 0.75 * lim))
        w = np.asarray(weights, float)
        self._show_spokes(np.asarray(context, float), w, 9)
        self.weight_bars.set_heights(w)
        self.header.set_text(title)


class LocalPPlot(LivePlot):
    """Local-p explorer: left, the predicted centre against the centre logit (the sigmoid's
    curve); right, the source positions with the window around the centre, the softmax over the
    window alone (open circles), the Gaussian factor at each position (a line) and the local-p
    weights (bars), the target starred."""

    size = (8.8, 3.9)

    def __init__(self, S: int, logit_grid, centre_grid, *, presentation=False, cache=True):
        super().__init__(presentation=presentation, cache=cache)
        st, fig = self.style, self.figure
        self.S = S
        ax_c = self._panel([0.075, 0.17, 0.2, 0.62], ylim=(0.5, S + 0.5), title="predicted centre",
                           xlabel="centre logit z", ylabel="centre pₜ")
        ax_c.plot(logit_grid, np.asarray(centre_grid) + 1, color=PALETTE["query"], lw=1.6 * st.lw)
        ax_c.set_xlim(min(logit_grid), max(logit_grid))
        self.centre_mark = self._line(ax_c, [], [], "o", color=PALETTE["query"],
                                      markeredgecolor="black", markersize=7 * st.scale)

        ax = self._panel([0.36, 0.17, 0.62, 0.62], S, ylim=(0, 1.12), ylabel="weight")
        self.window = Rectangle((0, 0), 0, 1.12, facecolor=PALETTE["sky"], alpha=0.22,
                                edgecolor="none", zorder=0)
        ax.add_patch(self.window)
        self.centre_line = ax.axvline(0, color=PALETTE["query"], linestyle="--",
                                      lw=1.2 * st.lw, zorder=1)
        self.bars = self._bars(ax, S, PALETTE["weight"], label="local-p weight aₜⱼ")
        self.alignment = self._line(ax, [], [], linestyle="none", marker="o",
                                    markerfacecolor="none", markeredgecolor="black",
                                    markersize=7 * st.scale, label="softmax over the window αₜⱼ")
        self.gaussian = self._line(ax, [], [], color=PALETTE["score"], marker=".",
                                   lw=1.2 * st.lw, label="Gaussian factor")
        self.star = self._star(ax)
        self._dyn(self.window, self.centre_line)
        ax.legend(fontsize=st.small, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=3,
                  frameon=False)
        self.title = self._text(fig, 0.01, 0.975, "", transform=fig.transFigure, va="top",
                                fontsize=st.title)
        self._message_box(ax, "window", y=0.6)

    def update(self, *, logit, centre, half_width, target, alignment, gaussian, weights, title,
               message=None):
        """Show one step of local-p (positions 0-based here, labelled 1..S).

        logit (float), centre (float): the centre logit z and the predicted centre p_t (0-based),
            a point on the sigmoid's curve (drawn 1-based) and a dashed line over the positions.
        half_width (float): D; the window |j - p_t| <= D is shaded.
        target (int): the position that holds what the query needs, starred above its bar.
        alignment (S,): the softmax over the window alone, as open circles (masked: none).
        gaussian (S,): exp(-(j - p_t)^2 / (2 sigma^2)) inside the window, 0 outside, as a line.
        weights (S,): their product, the local-p weights, as bars.
        title (str): the line above the figure; message (str or None): an empty window.
        """
        S = self.S
        x = np.arange(S)
        self.centre_mark.set_data([logit], [centre + 1])
        self.centre_line.set_xdata([centre, centre])
        lo, hi = max(centre - half_width, -0.5), min(centre + half_width, S - 0.5)
        self.window.set_x(lo)
        self.window.set_width(max(hi - lo, 0.0))
        a = np.asarray(alignment, float)
        shown = a > 0
        self.alignment.set_data(x[shown], a[shown])
        self.gaussian.set_data(x, np.asarray(gaussian, float))
        w = np.asarray(weights, float)
        self.bars.set_heights(w)
        top = max(float(np.nan_to_num(w[target])), float(np.nan_to_num(a[target])))
        self.star.set_data([target], [min(top + 0.08, 1.06)])
        self.title.set_text(title)
        self.message("window", message)
