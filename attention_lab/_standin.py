"""A core-only stand-in explorer for the lecture demo and the browser tests (provisional).

The lecture demo (:mod:`attention_lab.demo`) and the browser tests need an ipympl figure driven by
ipywidgets controls. Until the explorers of :mod:`attention_lab.widgets` are wired in, this module
provides one built only from the core: the running example's attention weights as bars, driven by

- ``query``: a slider that moves the query from the chapter's query (0) to ``LATER_QUERY`` (1),
- ``temperature``: a log slider, 0.05 to 5,
- ``score``: a dropdown (dot, scaled dot, bilinear with the chapter's ``W``),
- ``source_1`` ... ``source_5``: one eligibility checkbox per source position (the mask).

It follows the explorer protocol that :func:`attention_lab.demo.build_demo` relies on: ``.controls``
(name -> widget), ``.state`` (the core's :class:`~attention_lab.attention.AttentionResult`),
``.figure`` (a matplotlib Figure on an ipympl canvas, updated in place), ``.widget`` (what to display)
and ``reset()``. Callbacks never print.
"""

from __future__ import annotations

import warnings

import numpy as np

from .attention import AttentionResult, attend
from .examples import LATER_QUERY, running_example

CONTROL_GROUPS = ("query", "temperature", "score", "mask")
SCORES = (("dot  q·k", "dot"), ("scaled dot  q·k/√3", "scaled_dot"), ("bilinear  qᵀWk", "bilinear"))
SCORE_NAMES = {value: label.split("  ")[0] for label, value in SCORES}
#: The temperature slider works on log10(tau): -1.3 .. 0.7 (tau 0.05 .. 5.01) in steps of 0.05, so
#: tau = 1 (exponent 0) is a grid point and each arrow key press multiplies tau by 10**0.05.
LOG_TAU_MIN, LOG_TAU_MAX, LOG_TAU_STEP = -1.3, 0.7, 0.05

BAR_COLOUR = "#0072B2"      # Okabe-Ito blue
MASKED_COLOUR = "#BBBBBB"


def temperature_at(step: int) -> float:
    """The temperature of the log slider ``step`` grid steps above its minimum (as the browser
    computes it: ``10 ** (min + step * 0.05)``)."""
    return 10 ** (LOG_TAU_MIN + step * LOG_TAU_STEP)


def compute(query_mix: float = 0.0, temperature: float = 1.0, score: str = "dot",
            eligible=(True,) * 5) -> AttentionResult:
    """The core's attention for the stand-in's control values (what the figure shows)."""
    ex = running_example()
    query = (1 - query_mix) * ex.query + query_mix * np.array(LATER_QUERY)
    params = {"W": ex.W} if score == "bilinear" else {}
    return attend(query, ex.keys, ex.values, score=score, mask=np.array(eligible, dtype=bool),
                  temperature=temperature, **params)


def readout_text(result: AttentionResult, query_mix: float) -> str:
    """The one-line summary under the figure (plain text; the browser tests compare it)."""
    w = result.weights
    if result.empty_rows:
        tail = "no eligible source: every weight is 0"
    else:
        top = int(np.argmax(w))
        tail = (f"largest weight {w[top]:.3f} on source {top + 1} · "
                f"entropy {float(result.entropy):.3f} nats")
    return (f"query mix {query_mix:.2f} · temperature {result.temperature:.2f} · "
            f"{SCORE_NAMES[result.score]} score · {tail}")


class WeightsFigure:
    """Bars of one weight row, built once; :meth:`update` changes the artists in place."""

    def __init__(self, figure, *, presentation: bool = False, n_sources: int = 5):
        self.figure = figure
        fs = 17 if presentation else 11
        ax = figure.add_subplot()
        x = np.arange(1, n_sources + 1)
        self.bars = ax.bar(x, np.zeros(n_sources), color=BAR_COLOUR, edgecolor="black",
                           linewidth=1)
        self.values = [ax.text(i, 0.0, "", ha="center", va="bottom", fontsize=fs * 0.85)
                       for i in x]
        ax.set_xticks(x, [f"source {i}" for i in x], fontsize=fs * 0.85)
        ax.tick_params(axis="y", labelsize=fs * 0.8)
        ax.set_ylim(0, 1.12)
        ax.set_ylabel("attention weight", fontsize=fs)
        ax.spines[["top", "right"]].set_visible(False)
        self.title = ax.set_title("", fontsize=fs)
        self.message = ax.text(0.5, 0.55, "", transform=ax.transAxes, ha="center", va="center",
                               fontsize=fs, color="#D55E00")
        self.ax = ax

    def update(self, result: AttentionResult) -> None:
        for bar, label, w, ok in zip(self.bars, self.values, result.weights, result.mask):
            bar.set_height(w)
            bar.set_facecolor(BAR_COLOUR if ok else MASKED_COLOUR)
            bar.set_hatch("" if ok else "//")
            label.set_text(f"{w:.3f}" if ok else "masked")
            label.set_y(w + 0.02)
        self.title.set_text(f"{SCORE_NAMES[result.score]} score, temperature "
                            f"{result.temperature:.2f}")
        self.message.set_text("no eligible source:\nevery weight is 0" if result.empty_rows else "")

    @property
    def changing(self) -> list:
        """The artists an update changes (drawn over a cached background when blitting)."""
        return [*self.bars, *self.values, self.title, self.message]


class Blitter:
    """Redraw only the changing artists of a figure over a cached background (ipympl sends the
    changed pixels only). The background is refreshed on every full draw of the canvas."""

    def __init__(self, figure, artists):
        self.figure, self.artists, self.background = figure, list(artists), None
        for a in self.artists:
            a.set_animated(True)
        figure.canvas.mpl_connect("draw_event", self._on_draw)

    def _on_draw(self, _event) -> None:
        canvas = self.figure.canvas
        self.background = canvas.copy_from_bbox(self.figure.bbox)
        self._draw_artists()

    def _draw_artists(self) -> None:
        for a in self.artists:
            self.figure.draw_artist(a)

    def redraw(self) -> None:
        canvas = self.figure.canvas
        if self.background is None:
            canvas.draw()
            return
        canvas.restore_region(self.background)
        self._draw_artists()
        canvas.blit(self.figure.bbox)


def ipympl_figure(figsize, dpi: int = 100):
    """A Figure on its own ipympl canvas widget, outside pyplot (never displayed on its own,
    whatever ``%matplotlib`` backend the notebook uses)."""
    from matplotlib.figure import Figure
    from ipympl.backend_nbagg import Canvas, FigureManager

    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    canvas = Canvas(fig)
    with warnings.catch_warnings():  # ipympl's own toolbar construction warns (traitlets 4.2 API)
        warnings.simplefilter("ignore", DeprecationWarning)
        FigureManager(canvas, num=id(fig))
    canvas.header_visible = False
    canvas.footer_visible = False
    canvas.toolbar_visible = False
    canvas.resizable = False
    return fig


class WeightsExplorer:
    """The running example's weights as bars, driven by the chosen control groups.

    ``controls`` picks which of ``"query"``, ``"temperature"``, ``"score"``, ``"mask"`` are shown
    (the others stay at their starting values); ``presentation=True`` makes fonts and the figure
    large enough for a projector.
    """

    def __init__(self, controls=CONTROL_GROUPS, *, presentation: bool = False, blit: bool = True):
        import ipywidgets as W

        if isinstance(controls, str):
            controls = (controls,)
        controls = tuple(controls)
        unknown = [c for c in controls if c not in CONTROL_GROUPS]
        if unknown or not controls:
            raise ValueError(f"controls must be a non-empty subset of {CONTROL_GROUPS}, "
                             f"got {controls!r}")
        self.presentation = bool(presentation)
        wide = W.Layout(width="620px" if presentation else "480px")
        style = {"description_width": "150px" if presentation else "110px"}
        c: dict[str, W.ValueWidget] = {}
        if "query" in controls:
            c["query"] = W.FloatSlider(value=0.0, min=0.0, max=1.0, step=0.05,
                                       description="query mix", readout_format=".2f",
                                       layout=wide, style=style)
        if "temperature" in controls:
            c["temperature"] = W.FloatLogSlider(value=1.0, base=10, min=LOG_TAU_MIN,
                                                max=LOG_TAU_MAX, step=LOG_TAU_STEP,
                                                description="temperature", readout_format=".2f",
                                                layout=wide, style=style)
        if "score" in controls:
            c["score"] = W.Dropdown(options=SCORES, value="dot", description="score",
                                    layout=wide, style=style)
        if "mask" in controls:
            for i in range(1, 6):
                c[f"source_{i}"] = W.Checkbox(value=True, description=f"source {i}", indent=False,
                                              layout=W.Layout(width="auto"))
        self.controls = c
        self.initial = {name: w.value for name, w in c.items()}
        self.figure = ipympl_figure((9.0, 4.2) if presentation else (6.4, 3.0))
        self.canvas = self.figure.canvas
        self._plot = WeightsFigure(self.figure, presentation=presentation)
        self._blitter = Blitter(self.figure, self._plot.changing) if blit else None
        self.readout = W.HTML(layout=W.Layout(margin="4px 0 0 0"))
        self.readout.add_class("al-readout")
        self._holding = False
        self.state: AttentionResult = compute()
        for w in c.values():
            w.observe(self._changed, names="value")
        sliders = [w for name, w in c.items() if not name.startswith("source_")]
        boxes = [w for name, w in c.items() if name.startswith("source_")]
        rows = sliders + ([W.HBox(boxes, layout=W.Layout(flex_flow="row wrap"))] if boxes else [])
        self.widget = W.VBox([*rows, self.canvas, self.readout])
        self.widget.add_class("al-standin")
        self._update(draw=False)
        # Lay the figure out once, then freeze the layout: a change redraws artists, never the layout
        # (draw_without_rendering: canvas.draw() here would send an image before the browser view
        # exists, which ipympl then mistakes for its embedding snapshot)
        self.figure.draw_without_rendering()
        self.figure.set_layout_engine("none")

    # the values the figure shows, with defaults for the controls that are not shown
    def values(self) -> dict:
        c = self.controls
        return {
            "query_mix": c["query"].value if "query" in c else 0.0,
            "temperature": c["temperature"].value if "temperature" in c else 1.0,
            "score": c["score"].value if "score" in c else "dot",
            "eligible": tuple(c[f"source_{i}"].value if f"source_{i}" in c else True
                              for i in range(1, 6)),
        }

    def _changed(self, _change=None) -> None:
        if not self._holding:
            self._update()

    def _update(self, draw: bool = True) -> None:
        v = self.values()
        self.state = compute(**v)
        self._plot.update(self.state)
        self.readout.value = readout_text(self.state, v["query_mix"])
        if draw:
            # draw()/blit render and send the new image at once (draw_idle() would first ask the
            # browser for a redraw: one more round trip per change)
            if self._blitter is not None:
                self._blitter.redraw()
            else:
                self.figure.canvas.draw()

    def reset(self) -> None:
        """Put every control back to its starting value (one redraw)."""
        self._holding = True
        try:
            for name, value in self.initial.items():
                self.controls[name].value = value
        finally:
            self._holding = False
        self._update()

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return f"WeightsExplorer(controls={list(self.controls)}, {readout_text(self.state, self.values()['query_mix'])})"


def draw_static(query_mix: float = 0.0, temperature: float = 1.0, score: str = "dot",
                presentation: bool = False):
    """Build the same figure from scratch through pyplot (what ``interact`` + the inline backend
    does on every change): the baseline of the browser benchmark."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(9.0, 4.2) if presentation else (6.4, 3.0), layout="constrained")
    WeightsFigure(fig, presentation=presentation).update(
        compute(query_mix=query_mix, temperature=temperature, score=score))
    plt.show()

