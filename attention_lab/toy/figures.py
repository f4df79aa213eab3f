"""Figures for the toy model: drawing only. Every number they show is computed elsewhere.

* :class:`ModelFigure`: the model explorer's live figure (a :class:`attention_lab.plots.LivePlot`:
  attention heatmap of one decoded source, the true alignment, the local window, decoded vs
  expected symbols). Built once; :meth:`ModelFigure.update` changes its artists in place.
* :func:`alignment_grid`: heatmaps of several decodings against the true alignment.
* :func:`entropy_plot`, :func:`permutation_plot`, :func:`tau_plot`, :func:`score_scale_plot`,
  :func:`streaming_plot`, :func:`bottleneck_plot`: the research notebook's result figures.

Every function returns a :class:`attention_lab.plots.StaticFigure`: the figure with a text
description made from the numbers it draws (the output's ``text/plain``: the site's alt text, for
screen readers and for students who read before they look). A description shows no timing and no
round-off, so a stored output is the same on every machine.

Colours: the package's one weight scale for weights (:data:`attention_lab.plots.CMAP`, 0 to 1,
darker = larger, colour-blind safe); the alignment marks in orange; right outputs in dark blue,
wrong ones in bold black with a cross (orange text is too faint to read), so colour is never the
only cue.
"""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import LogFormatterSciNotation, MaxNLocator

from .._compat.matplotlib import move_axes
from ..plots import CMAP, LayeredFigure, LivePlot, StaticFigure, add_fast_text, fmt_vec

BLUE, ORANGE, GREY, TEAL = "#24527a", "#d97745", "#5f6b76", "#3a9188"


def _sizes(presentation: bool) -> dict:
    if presentation:
        return {"figsize": (11, 8.5), "font": 18, "title": 20, "tick": 17, "marker": 26}
    return {"figsize": (7.2, 5.6), "font": 10, "title": 11, "tick": 10, "marker": 15}


class ModelFigure(LivePlot):
    """The explorer figure for sources up to ``max_len`` symbols: built once, :meth:`update`
    changes its artists in place.

    On its :class:`attention_lab.plots.LayeredFigure` only the heatmap, the alignment marks, the
    window shading and the title (in a band kept free above the axes) are dynamic; the static
    layer is drawn again when the tick labels change (another source, another decoded output).
    """

    def __init__(self, max_len: int, *, presentation: bool = False, cache: bool = True):
        self.max_len = L = max_len
        self._sizes = z = _sizes(presentation)
        super().__init__(presentation=presentation, cache=cache)
        # the title (up to three lines) lives in a band above the laid-out axes
        band = 3.4 * z["title"] * 1.25 / 72 / z["figsize"][1]
        self.figure.get_layout_engine().set(rect=(0, 0, 1, 1 - band))
        self.ax = ax = self.figure.add_subplot(1, 1, 1)
        # the heatmap: one quadrilateral per (step, position) cell, coloured from the weights
        # (cheaper to redraw than an image resampled to the screen on every update)
        edges = np.arange(L + 1) - 0.5
        self.image = ax.pcolormesh(edges, edges, np.ma.masked_all((L, L)), cmap=CMAP, vmin=0.0,
                                   vmax=1.0, shading="flat")
        ax.set(xlim=(-0.5, L - 0.5), ylim=(L - 0.5, -0.5))
        self.colorbar = self.figure.colorbar(self.image, ax=ax, shrink=0.85)
        self.colorbar.set_label("attention weight", fontsize=z["font"])
        self.colorbar.ax.tick_params(labelsize=z["tick"])
        (self.truth,) = ax.plot([], [], linestyle="none", marker="s", markersize=z["marker"],
                                markerfacecolor="none", markeredgecolor=ORANGE,
                                markeredgewidth=2.0, label="true alignment (position S+1-t)")
        outside = dict(facecolor=GREY, alpha=0.55, hatch="//", edgecolor="white")
        self.left, self.right = (ax.add_patch(Rectangle((-0.5, -0.5), 0, L, visible=False,
                                                        **outside)) for _ in range(2))
        legend_patch = Rectangle((0, 0), 1, 1, label="outside the local window", **outside)
        ax.set_xlabel("source position j = 1..S (symbol)", fontsize=z["font"])
        ax.set_ylabel("output step t: decoded (expected), \u2717 = wrong", fontsize=z["font"])
        self.title = add_fast_text(ax, 0.012, 0.988, "", transform=self.figure.transFigure,
                                   ha="left", va="top", fontsize=z["title"])
        ax.legend(handles=[self.truth, legend_patch], loc="upper center",
                  bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=z["font"] * 0.85, frameon=False)
        self._dyn(self.image, self.left, self.right, self.truth, self.title)
        self.tick_size = z["tick"]
        self._labels = None
        # constrained layout starts from the axes' current positions, so that running it again
        # moves them by fractions of a pixel; starting from these every time makes the layout a
        # function of the labels alone (the same source and output: the same pixels)
        self._start = [(a, a.get_position(original=True).frozen()) for a in self.figure.axes]

    def _make_figure(self, cache: bool) -> LayeredFigure:
        return _figure(self._sizes["figsize"], LayeredFigure, dpi=100, cache=cache)

    def update(self, *, weights, source, output, expected, truth, correct, window_bounds, title):
        """Show one decoding (T output steps over S source positions, T = S here).

        weights (T, S): the attention of each output step, as the heatmap (cells beyond S and T
            stay blank).
        source (str), output (str), expected (str): the source symbols (x tick labels), the
            decoded and the expected output (y tick labels, wrong steps bold with a cross).
        truth (T,): the true alignment, column S-1-t of row t (positions are labelled 1..S),
            marked with orange squares.
        correct (T,) bool: per step, whether the decoded symbol is right.
        window_bounds (first, last) or None: the first and last eligible column (0-based) of a
            local window (first > last: an empty window), shading what lies outside; None: no
            window.
        title (str): up to three lines above the axes.
        """
        w = np.asarray(weights)
        T, S = w.shape
        L = self.max_len
        grid = np.full((L, L), np.nan)
        grid[:T, :S] = w
        self.image.set_array(np.ma.masked_invalid(grid))
        ax = self.ax
        labels = (source, output, expected, tuple(bool(c) for c in correct))
        if labels != self._labels:  # new tick labels: the static layer is drawn again
            self._labels = labels
            for a, position in self._start:
                move_axes(a, position)
            ax.set(xlim=(-0.5, S - 0.5), ylim=(T - 0.5, -0.5))
            ax.set_xticks(range(S), [f"{j}\n{ch}" for j, ch in enumerate(source, 1)],
                          fontsize=self.tick_size)
            ylabels = [f"{t}: {o} ({e})" + ("" if ok else " \u2717") for t, (o, e, ok) in
                       enumerate(zip(output, expected, correct), 1)]
            ax.set_yticks(range(T), ylabels, fontsize=self.tick_size)
            for tick, ok in zip(ax.get_yticklabels(), correct):
                tick.set_color(BLUE if ok else "black")  # orange text: 3.2:1, too faint
                tick.set_fontweight("normal" if ok else "bold")
            self.figure.invalidate_static()
        self.truth.set_data(np.asarray(truth), np.arange(T))
        lo, hi = (0, S - 1) if window_bounds is None else window_bounds  # None: nothing outside
        self.left.set_bounds(-0.5, -0.5, min(lo, S), T)
        self.right.set_bounds(hi + 0.5, -0.5, max(0.0, S - 1 - hi), T)
        self.left.set_visible(lo > 0)
        self.right.set_visible(hi < S - 1)
        self.title.set_text(title)
        self.figure.stale = True


def _figure(figsize, kind=Figure, **kw) -> Figure:
    """A ``kind`` of figure with constrained layout, on an Agg canvas."""
    fig = kind(figsize=figsize, layout="constrained", **kw)
    FigureCanvasAgg(fig)
    return fig


def alignment_grid(examples, *, ncols: int = 3) -> StaticFigure:
    """Heatmaps of decoded examples: each a dict with weights (T, S), source, output, title.
    The true alignment of step t (1-based) is source position S + 1 - t (the reversal)."""
    n = len(examples)
    if n == 0:
        raise ValueError("alignment_grid needs at least one decoded example, got none")
    nrows = int(np.ceil(n / ncols))
    fig = _figure((3.6 * ncols, 3.4 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    image, panels = None, []
    for ax, ex in zip(axes.ravel(), examples):
        w = np.asarray(ex["weights"])
        T, S = w.shape
        on_truth = int((w.argmax(-1) == S - 1 - np.arange(T)).sum())
        panels.append(f"{ex['title']}: source {ex['source']}, decoded {ex['output']}, the "
                      f"darkest cell on the orange square in {on_truth} of {T} rows")
        image = ax.imshow(w, cmap=CMAP, vmin=0, vmax=1, interpolation="nearest")
        ax.plot(S - 1 - np.arange(T), np.arange(T), linestyle="none", marker="s",
                markersize=min(14, 110 / S), markerfacecolor="none", markeredgecolor=ORANGE,
                markeredgewidth=1.5)
        ax.set_xticks(range(S), list(ex["source"]))
        ax.set_yticks(range(T), list(ex["output"]))
        ax.set_title(ex["title"], fontsize=10)
        ax.set(xlabel="source symbol", ylabel="decoded symbol")
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="attention weight")
    description = (f"Figure: {n} heatmaps of attention weights (white 0, darker larger), rows "
                   f"the output steps, columns the source positions, orange squares on the true "
                   f"alignment (the anti-diagonal). " + "; ".join(panels) + ".")
    return StaticFigure(fig, description)


def entropy_plot(table: dict, *, title: str = "") -> StaticFigure:
    """Mean attention entropy against source length, with the uniform bound log S."""
    fig = _figure((9, 3.6))
    a, b = fig.subplots(1, 2)
    S = table["length"]
    a.plot(S, table["mean_entropy"], "o-", color=BLUE, label="model (mean over steps)")
    a.plot(S, np.log(S), "--", color=GREY, label="uniform attention: log S")
    a.set(xlabel="source length S", ylabel="entropy (nats)")
    a.legend(frameon=False)
    b.plot(S, table["normalised"], "o-", color=TEAL)
    b.set(ylim=(0, 1), xlabel="source length S", ylabel="entropy / log S")
    fig.suptitle(title)
    S = np.asarray(S)
    description = (f"Figure{': ' + title if title else ''}, source lengths {S[0]} to {S[-1]}. "
                   f"Left, the mean entropy of the weights in nats, "
                   f"{fmt_vec(table['mean_entropy'], 2)}, beside the dashed curve log S of "
                   f"uniform attention, {fmt_vec(np.log(S), 2)}. Right, the entropy divided by "
                   f"log S, {fmt_vec(table['normalised'], 2)}, on a scale from 0 to 1.")
    return StaticFigure(fig, description)


def permutation_plot(tab: dict) -> StaticFigure:
    """Median output TVD under weight permutations against the maximum attention weight, and
    the other interventions' effects as distributions."""
    fig = _figure((10, 3.8))
    a, b = fig.subplots(1, 2)
    a.scatter(tab["max_weight"], tab["perm_median"], s=14, color=BLUE, alpha=0.7)
    a.set(xlabel="maximum attention weight of the step",
          ylabel="median TVD of the output\nover weight permutations", xlim=(0, 1),
          ylim=(-0.02, 1.02))
    data = [tab["replace"], tab["perm_median"], tab["uniform"]]
    b.boxplot(data, tick_labels=["replace top value\nwith control", "permute weights\n(median)",
                                 "uniform weights"], showfliers=True)
    b.set(ylabel="TVD of the output", ylim=(-0.02, 1.02))
    perm = np.asarray(tab["perm_median"])
    high, low = int((perm >= 0.5).sum()), int((perm <= 0.05).sum())
    medians = "; ".join(f"{name} {np.median(x):.2f}" for name, x in (
        ("top value replaced", tab["replace"]), ("weights permuted", perm),
        ("uniform weights", tab["uniform"])))
    description = (f"Figure: left, a scatter plot of {perm.size} decoder steps, each its largest "
                   f"attention weight (x, 0 to 1) against the median TVD of its output over "
                   f"weight permutations (y, 0 to 1): {high} steps at 0.5 or above, {low} at "
                   f"0.05 or below. Right, box plots of the TVD under three interventions, "
                   f"medians: {medians}.")
    return StaticFigure(fig, description)


def tau_plot(tab: dict) -> StaticFigure:
    """Kendall tau between attention and each importance measure, per step."""
    fig = _figure((6.5, 3.4))
    ax = fig.subplots()
    bins = np.linspace(-1, 1, 21)
    parts = []
    for key, colour, label, words in (("tau_loo", BLUE, "leave-one-out", "blue"),
                                      ("tau_gradient", ORANGE, "gradient", "orange")):
        v = tab[key][np.isfinite(tab[key])]
        if not v.size:  # e.g. explanation_table(gradients=False)
            parts.append(f"{label} ({words}): not computed")
            continue
        ax.hist(v, bins=bins, alpha=0.6, color=colour, label=label)
        parts.append(f"{label} ({words}): {v.size} steps, median {np.median(v):.2f}, from "
                     f"{v.min():.2f} to {v.max():.2f}")
    ax.set(xlabel="Kendall tau with the attention weights (per step)", ylabel="steps")
    ax.legend(frameon=False)
    description = ("Figure: histograms over decoder steps of Kendall's tau (-1 to 1) between "
                   "the attention weights and two importance measures; " + "; ".join(parts)
                   + ".")
    return StaticFigure(fig, description)


class PlainLogFormatter(LogFormatterSciNotation):
    """Labels the ticks matplotlib's log axis labels, as plain numbers (0.6, 2, not 6×10⁻¹)."""

    def __call__(self, x, pos=None):
        return f"{x:g}" if super().__call__(x, pos) else ""


def streaming_plot(sizes, seconds: dict | None, memory: dict) -> StaticFigure:
    """Peak tensor memory against S for each method (dicts name -> list), and on its left the
    latency when ``seconds`` is given (``compare(repeat=0)`` gives ``None``: nothing timed). The
    description names no latency: timings change between runs and machines."""
    panels = {"memory": memory} if seconds is None else {"latency": seconds, "memory": memory}
    fig = _figure((10, 3.6) if seconds is not None else (5.4, 3.6))
    axes = dict(zip(panels, np.atleast_1d(fig.subplots(1, len(panels)))))
    styles = {"materialised": (BLUE, "o-"), "streaming": (ORANGE, "s-"), "sdpa": (TEAL, "^-")}
    units = {"latency": ("latency (ms)", 1e3), "memory": ("peak tensor memory (MiB)", 2 ** -20)}
    for panel, series in panels.items():
        ax, (label, scale) = axes[panel], units[panel]
        for name, y in series.items():
            colour, style = styles.get(name, (GREY, ".-"))
            ax.plot(sizes, np.asarray(y) * scale, style, color=colour, label=name)
        ax.set_xscale("log", base=2)
        ax.set(xlabel="source length S", ylabel=label)
        ax.legend(frameon=False)
    axes["memory"].set_yscale("log")
    axes["memory"].yaxis.set_major_formatter(PlainLogFormatter())
    axes["memory"].yaxis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False))
    sizes = list(sizes)
    peaks = "; ".join(f"{name} {np.asarray(m)[0] / 1024:.0f} K at S = {sizes[0]:,}, "
                      f"{np.asarray(m)[-1] / 1024:.0f} K at S = {sizes[-1]:,}"
                      for name, m in memory.items())
    memory_text = f"peak tensor memory (log scale) against source length S: {peaks}."
    description = ("Figure: " + memory_text if seconds is None else
                   f"Figure: left, the latency in milliseconds of {', '.join(seconds)} against "
                   f"source length S from {sizes[0]:,} to {sizes[-1]:,} (log scale), measured "
                   f"when the notebook ran (the values change between runs and machines, so "
                   f"they are not given here). Right, " + memory_text)
    return StaticFigure(fig, description)


def score_scale_plot(d_k, variance, largest, largest_scaled) -> StaticFigure:
    """Left: the variance of q . k against D_k (log-log) beside the line D_k; right: the mean
    largest softmax weight against D_k, unscaled and scaled by 1/sqrt(D_k)."""
    fig = _figure((9, 3.4))
    a, b = fig.subplots(1, 2)
    d_k = np.asarray(d_k, dtype=float)
    a.plot(d_k, variance, "o-", color=BLUE, label="measured var(q . k)")
    a.plot(d_k, d_k, "--", color=GREY, label="D_k")
    a.set_xscale("log", base=2)
    a.set_yscale("log", base=2)
    a.set(xlabel="key width D_k", ylabel="variance of the score")
    a.legend(frameon=False)
    b.plot(d_k, largest, "o-", color=ORANGE, label="unscaled q . k")
    b.plot(d_k, largest_scaled, "s-", color=TEAL, label="q . k / sqrt(D_k)")
    b.set_xscale("log", base=2)
    b.set(ylim=(0, 1.02), xlabel="key width D_k", ylabel="mean largest weight (16 keys)")
    b.legend(frameon=False)
    widths = ", ".join(f"{d:.0f}" for d in d_k)
    description = (f"Figure: left, the measured variance of q . k, "
                   f"[{', '.join(f'{v:.0f}' for v in variance)}], against the key width D_k = "
                   f"{widths} (log-log), on the dashed line D_k. Right, the mean largest of 16 "
                   f"weights against D_k: unscaled {fmt_vec(largest, 2)}, scaled by "
                   f"1/sqrt(D_k) {fmt_vec(largest_scaled, 2)}.")
    return StaticFigure(fig, description)


def _accuracy_words(lengths, acc) -> str:
    """One model's accuracy curve in words: its two ends, its lowest value and where it first
    falls below 0.9."""
    acc = np.round(np.asarray(acc, float), 2)
    words = f"{acc[0]:.2f} at length {lengths[0]}, {acc[-1]:.2f} at length {lengths[-1]}"
    below = np.flatnonzero(acc < 0.9)
    if below.size:
        words += f", below 0.90 from length {lengths[below[0]]} on" if (
            acc[below[0]:] < 0.9).all() else f", first below 0.90 at length {lengths[below[0]]}"
    else:
        words += f", never below {acc.min():.2f}"
    return words


def bottleneck_plot(table: dict, *, chance: float | None = None) -> StaticFigure:
    """Held-out accuracy against source length for each model of ``table`` (from
    :func:`attention_lab.toy.experiments.accuracy_by_length`): left the share of right output
    symbols, right the share of sequences reversed without a mistake. ``chance``: a guessing
    decoder's symbol accuracy (1 / symbols), drawn as a dashed line."""
    lengths = np.asarray(table["length"])
    names = [k for k in table if k not in ("length", "n")]
    colours, markers = (BLUE, ORANGE, TEAL, GREY), "os^dv"  # each model its own pair (<= 20)
    fig = _figure((9.5, 3.6))
    panels = fig.subplots(1, 2, sharex=True)
    for ax, key, label in zip(panels, ("symbol", "exact"),
                              ("share of output symbols right", "share of sequences right")):
        for i, name in enumerate(names):
            ax.plot(lengths, table[name][key], markers[i % 5] + "-", color=colours[i % 4],
                    label=name, markersize=4)
        ax.set(ylim=(-0.02, 1.02), xlabel="source length S", ylabel=label)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, color="#E6E6E6", linewidth=0.8)
    if chance is not None:
        panels[0].axhline(chance, color=GREY, linestyle="--", linewidth=1,
                          label=f"guessing ({chance:.2f})")
    panels[0].legend(frameon=False, loc="lower left")
    fig.suptitle(f"held-out accuracy against source length ({table['n']} sequences per length)")
    parts = [f"{name}: {_accuracy_words(lengths, table[name]['symbol'])}" for name in names]
    exact = [f"{name}: {_accuracy_words(lengths, table[name]['exact'])}" for name in names]
    description = (f"Figure: held-out accuracy against source length, {lengths[0]} to "
                   f"{lengths[-1]} symbols, {table['n']} sequences per length. Left, the share of "
                   f"output symbols that are right; " + "; ".join(parts) + ". Right, the share of "
                   f"sequences reversed without a mistake; " + "; ".join(exact) + ".")
    return StaticFigure(fig, description)
