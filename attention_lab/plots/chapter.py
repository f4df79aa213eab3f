"""The chapter's six figures, drawn once from the numbers they are given (they compute nothing).

Each function returns a :class:`StaticFigure`, which a notebook shows as an inline PNG (so GitHub
renders it) with a text description generated from the numbers it draws (for screen readers, and
for students who read before they look).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ._render import (CMAP, PALETTE, Style, fmt_vec, new_figure, positions_axis, text_on_weight,
                      value_triangle)
from .live import OverviewDiagram

__all__ = ["StaticFigure", "overview_figure", "two_query_heatmap", "temperature_panels",
           "mask_figure", "window_figure", "hull_figure"]


class StaticFigure:
    """A finished figure plus its text description; displays as an inline PNG.

    ``text/plain`` of the output is the description, so a reader without the image (a screen
    reader, a terminal, a diff) gets the content in words.
    """

    def __init__(self, figure: Figure, description: str):
        self.figure = figure
        self.description = description

    def png(self) -> bytes:
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=self.figure.dpi, facecolor="white")
        return buf.getvalue()

    def save(self, path) -> None:
        self.figure.savefig(path, dpi=self.figure.dpi, facecolor="white")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"image/png": base64.b64encode(self.png()).decode("ascii"),
                "text/plain": self.description}

    def __repr__(self) -> str:
        return self.description


def overview_figure(scores, weights, *, presentation=False) -> StaticFigure:
    """Figure 1: the overview diagram (sources -> scores -> softmax weights -> context) drawn
    with the scores and weights of one query."""
    st = Style(presentation)
    fig = new_figure((10.0, 3.9), st, layered=False)
    ax = fig.add_axes([0.005, 0.01, 0.99, 0.98])
    d = OverviewDiagram(ax, st, len(weights))
    d.update(scores, weights)
    top = int(np.nanargmax(weights))
    desc = (f"Figure: five source boxes, each with a key and a value, feed one score each "
            f"(scores {fmt_vec(scores, 2)}); softmax turns the scores into weights "
            f"{fmt_vec(weights, 2)} that sum to 1; every weight sends a line to the context "
            f"vector, thickest from source {top + 1} (weight {weights[top]:.2f}).")
    return StaticFigure(fig, desc)


def two_query_heatmap(weights, row_labels: Sequence[str], *, presentation=False) -> StaticFigure:
    """Figure 2: the weights of two (or more) queries over the same sources as a heatmap."""
    st = Style(presentation)
    w = np.asarray(weights, float)
    R, S = w.shape
    fig = new_figure((9.0, 1.3 + 0.75 * R), st, layered=False)
    ax = fig.add_axes([0.26, 0.3, 0.62, 0.55])
    im = ax.imshow(w, cmap=CMAP, vmin=0, vmax=1, aspect="auto")  # the one weight scale
    ax.set_xticks(np.arange(S), [f"source {j + 1}" for j in range(S)], fontsize=st.small)
    ax.set_yticks(np.arange(R), list(row_labels), fontsize=st.small)
    for r in range(R):
        for j in range(S):
            ax.text(j, r, f"{w[r, j]:.2f}", ha="center", va="center", fontsize=st.fs,
                    color=text_on_weight(w[r, j]))
    ax.set_title("same sources, different queries", fontsize=st.title, loc="left")
    cb = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03)
    cb.set_label("attention weight", fontsize=st.small)
    cb.ax.tick_params(labelsize=st.small)
    tops = [f"{lab}: most weight on source {int(np.argmax(row)) + 1} ({row.max():.2f})"
            for lab, row in zip(row_labels, w)]
    desc = (f"Figure: a heatmap with one row per query and one column per source position; "
            f"darker cells are larger weights (white 0, darkest green 1). " + "; ".join(tops) + ".")
    return StaticFigure(fig, desc)


def _bar_panels(st, width, rows, titles, colors, labels, left, wspace):
    """Bar charts side by side over the same positions (weights 0-0.8), one per row of ``rows``,
    each bar with a label: ``labels`` per panel, (height above the bar, text) per bar."""
    fig = new_figure((width, 3.3), st, layered=False)
    axes = np.atleast_1d(fig.subplots(1, len(rows), sharey=True))
    for ax, row, title, color, marks in zip(axes, rows, titles, colors, labels):
        st.axes(ax, title=title)
        positions_axis(ax, len(row), st)
        ax.bar(np.arange(len(row)), row, width=0.7, color=color)
        for j, (v, (dy, text)) in enumerate(zip(row, marks)):
            ax.text(j, v + dy, text, ha="center", va="bottom", fontsize=st.small)
        ax.set_ylim(0, 0.8)
    axes[0].set_ylabel("attention weight", fontsize=st.fs)
    fig.subplots_adjust(left=left, right=0.98, bottom=0.17, top=0.88, wspace=wspace)
    return fig, axes


def temperature_panels(temperatures, weights, *, presentation=False) -> StaticFigure:
    """Figure 3: the weights of one score vector at several temperatures, one panel each."""
    st = Style(presentation)
    w = np.asarray(weights, float)
    n, S = w.shape
    fig, _ = _bar_panels(st, 3.6 * n, w, [f"temperature {tau:g}" for tau in temperatures],
                         [PALETTE["weight"]] * n, [[(0.015, f"{v:.2f}") for v in row] for row in w],
                         left=0.07, wspace=0.12)
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
    st = Style(presentation)
    a = np.asarray(unmasked_weights, float)
    b = np.asarray(masked_weights, float)
    valid = np.asarray(valid, bool)
    S = a.size
    off = [str(j + 1) for j in np.flatnonzero(~valid)]
    marks = [[(0.015, f"{v:.3f}") for v in a],
             [(0.015, f"{v:.3f}") if ok else (0.07, "0 (masked)") for v, ok in zip(b, valid)]]
    fig, axes = _bar_panels(st, 9.0, [a, b], ["no mask", f"positions {'-'.join(off)} masked"],
                            [PALETTE["sky"], PALETTE["weight"]], marks, left=0.08, wspace=0.1)
    axes[1].plot(np.flatnonzero(~valid), np.full((~valid).sum(), 0.025), "x", color="black",
                 markersize=9, markeredgewidth=1.6)
    desc = (f"Figure: two bar charts over {S} positions. Without a mask the weights are "
            f"{fmt_vec(a)}; with positions {' and '.join(off)} masked before the softmax they get "
            f"exactly 0 and the others are renormalised to {fmt_vec(b)}, which again sum to 1.")
    return StaticFigure(fig, desc)


def window_figure(global_mask, local_mask, *, presentation=False) -> StaticFigure:
    """Figure 5: a ten-position source twice, all eligible (global) and a window (local)."""
    st = Style(presentation)
    g = np.asarray(global_mask, bool)
    loc = np.asarray(local_mask, bool)
    S = g.size
    fig = new_figure((9.5, 2.9), st, layered=False)
    on = np.flatnonzero(loc) + 1
    span = f"positions {on.min()}-{on.max()}" if on.size else "no position"
    for y, m, title in ((0.55, g, "Global: every source position is eligible"),
                        (0.05, loc, f"Local: a window around the predicted centre ({span})")):
        ax = fig.add_axes([0.02, y, 0.96, 0.36])
        ax.set(xlim=(-0.1, S + 0.05), ylim=(0, 1))
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
    st = Style(presentation)
    v = np.asarray(values, float)
    W = np.asarray(weight_sets, float)
    C = np.asarray(contexts, float)
    fig = new_figure((6.2, 5.0), st, layered=False)
    ax = fig.add_axes([0.11, 0.11, 0.85, 0.8])
    st.axes(ax, xlabel="value coordinate 1", ylabel="value coordinate 2", grid_y=False)
    value_triangle(ax, v, size=90, zorder=3)
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
