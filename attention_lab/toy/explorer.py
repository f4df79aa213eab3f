"""The model explorer: type or choose a source, change the temperature and a local window, and
watch the trained model's decoded output and attention change.

    ex = ModelExplorer()            # the shipped model (additive scores)
    ex                              # displays the controls and the figure
    ex.controls["source"].value = "abcdefghij"
    ex.controls["window"].value = True      # restrict attention to |j - centre| <= half_width
    ex.state.output, ex.state.correct       # what the figure shows

Positions are numbered 1..S in everything a student reads (the controls, the figure's ticks, the
readout), as in notebooks 01-03; the state's arrays are indexed from 0 as numpy arrays are.

It is an :class:`attention_lab.widgets.Explorer` like those of notebooks 01-03, its state
computed by the model and its figure a :class:`~attention_lab.toy.figures.ModelFigure`. A source
the model cannot read is reported in the figure's title and the readout; the figure keeps the last
decoding.
"""

from __future__ import annotations

import html
from dataclasses import replace

import ipywidgets as W
import numpy as np

from ..plots import StaticFigure
from ..softmax import entropy
from ..widgets.base import Explorer, Task, frozen_state, int_slider
from . import data
from .figures import ModelFigure

#: Sources offered in the drop-down (any other string of known symbols can be typed).
EXAMPLES = ("abcdefghij", "abc", "badge", "lkjihgfedcba", "aabbccddee", "fedcbafedcba",
            "cafe", "hijack")
#: The window case of the chapter's exercise 15: the window (positions 1..3) hides the source
#: positions that the first seven output steps need.
FAILURE_CASE = {"source": "abcdefghij", "window": True, "centre": 2, "half_width": 1}


def smallest_covering_half_width(S: int) -> int:
    """The smallest half-width of a window |j - centre| <= h that holds all S positions."""
    return S // 2


def _decodes_ten_with_smallest_window(s) -> bool:
    return (len(s.source) == 10 and s.window is not None and s.exact
            and s.window[1] <= smallest_covering_half_width(10))


def _breaks_while_aligned(s) -> bool:
    return not s.error and s.window is None and not s.exact and bool(s.aligned.all())


def _window_words(window, bounds) -> str:
    """"no window", "window <first>..<last>" (positions 1..S) or "empty window"."""
    if window is None:
        return "no window"
    return f"window {bounds[0]}..{bounds[1]}" if bounds[0] <= bounds[1] else "empty window"


@frozen_state
class ModelState:
    """One decoding of the current source, T = S steps. Arrays are indexed from 0 (numpy);
    ``window`` and ``window_bounds`` are positions 1..S, as the controls and the figure show."""

    source: str
    tokens: list
    output: str
    expected: str
    scores: np.ndarray          # (T, S) before temperature and masks
    weights: np.ndarray         # (T, S)
    context: np.ndarray         # (T, D_v) what each step read
    truth: np.ndarray           # (T,) the true alignment: index S-1-t (position S+1-t, 1-based)
    correct: np.ndarray         # (T,) bool
    aligned: np.ndarray         # (T,) bool: the weight peaks on the true position
    eligible: np.ndarray        # (S,) bool: inside the window (all True without one)
    entropy: np.ndarray         # (T,)
    window: tuple | None        # (centre, half_width) as on the controls, or None
    window_bounds: tuple        # first and last eligible position, 1..S (first > last: empty)
    temperature: float
    exact: bool
    title: str
    error: str                  # why the typed source cannot be decoded ("" when it can)


class ModelExplorer(Explorer):
    """Controls + figure + the trained model; see the module docstring.

    Controls: ``source`` (type or choose 3-12 symbols), ``temperature`` (0.1-10, log), ``window``
    (on / off), ``centre`` (position 1..12) and ``half_width`` (the window keeps the positions j
    with |j - centre| <= half_width).
    """

    title = "Trained model: where each output step looks in the source"
    TASKS = (
        Task("With the local window on, reverse a 10-symbol source correctly using the smallest "
             "half-width that can work.", _decodes_ten_with_smallest_window),
        Task("Without the window, raise the temperature until the output breaks although every "
             "step's largest weight still sits on its true position.", _breaks_while_aligned),
    )

    def __init__(self, model=None, *, source: str = "abcdefghij", temperature: float = 1.0,
                 window: bool = False, centre: int = 2, half_width: int = 1, **options):
        from .store import load

        self.model = load() if model is None else model
        c = self.model.config
        if not c.attends:
            raise ValueError("the model explorer shows a model's attention; this model has none "
                             "(it sees only the encoder's final state)")
        try:  # a starting source the model cannot read: start from an example instead
            data.encode(str(source).strip().lower(), c.n_symbols, c.max_len, c.min_len)
        except (ValueError, TypeError):
            source = EXAMPLES[0]
        self._start_values = dict(source=source, temperature=temperature, window=window,
                                  centre=centre, half_width=half_width)
        super().__init__(**options)

    # --- construction -------------------------------------------------------------------------
    def _make_controls(self):
        c, v = self.model.config, self._start_values
        options = list(EXAMPLES) if v["source"] in EXAMPLES else [v["source"], *EXAMPLES]
        return {
            "source": W.Combobox(value=v["source"], options=options, ensure_option=False,
                                 description=f"source ({c.min_len}-{c.max_len} of "
                                             f"{c.vocab[0]}..{c.vocab[-1]})",
                                 continuous_update=False),
            "temperature": W.FloatLogSlider(value=v["temperature"], base=10, min=-1, max=1,
                                            step=0.05, description="temperature",
                                            readout_format=".2f"),
            "window": W.Checkbox(value=v["window"], description="local window"),
            "centre": int_slider(v["centre"], 1, c.max_len, "window centre"),
            "half_width": int_slider(v["half_width"], 0, c.max_len - 1, "half-width"),
        }

    def _style_controls(self) -> None:
        layout_width = "420px" if self.presentation else "340px"
        for name, w in self.controls.items():
            w.style.description_width = "initial"
            if name != "window":
                w.layout.width = layout_width

    def _controls_box(self):
        c = self.controls
        if self.presentation:
            return W.VBox(list(c.values()))
        return W.VBox([c["source"], c["temperature"],
                       W.HBox([c["window"], c["centre"], c["half_width"]])])

    def _make_plot(self):
        return ModelFigure(self.model.config.max_len, presentation=self.presentation)

    # --- core ---------------------------------------------------------------------------------
    def _compute(self) -> ModelState:
        """Decode the current source with the current settings."""
        c = self.model.config
        v = {k: w.value for k, w in self.controls.items()}
        text = str(v["source"]).strip().lower()
        try:
            toks = data.encode(text, c.n_symbols, c.max_len, c.min_len)
        except (ValueError, TypeError) as exc:  # keep the last decoding, say why
            return replace(self.state, error=str(exc), title=f"cannot decode: {exc}")
        S = len(toks)
        window = (v["centre"], v["half_width"]) if v["window"] else None
        tokens, lengths = data.pad_batch([toks], c.max_len)
        d = self.model.decode(tokens, lengths, temperature=v["temperature"],       # 0-based centre
                              window=None if window is None else (window[0] - 1, window[1]))
        weights = d.weights[0, :S, :S].astype(float)                 # (T, S), T = S
        output = data.decode(d.tokens[0, :S], c.n_symbols)
        expected = text[::-1]
        correct = np.array([o == e for o, e in zip(output, expected)])
        truth = S - 1 - np.arange(S)
        eligible = d.mask[0, 0, :S].copy()
        idx = np.flatnonzero(eligible) + 1                                   # positions 1..S
        bounds = (int(idx[0]), int(idx[-1])) if idx.size else (S + 1, S)
        aligned = (weights.argmax(-1) == truth) & (weights.max(-1) > 0)  # a zero row peaks nowhere
        title = (f"decoded {output}, expected {expected}: {int(correct.sum())}/{S} right\n"
                 f"weight peaks on the true position in {int(aligned.sum())}/{S} steps")
        if window is not None:
            title += (f"\n{_window_words(window, bounds)}: {int((~eligible[truth]).sum())} "
                      f"step(s) need a position outside it")
        return ModelState(
            source=text, tokens=toks, output=output, expected=expected,
            scores=d.scores[0, :S, :S].astype(float), weights=weights,
            context=d.contexts[0, :S].astype(float), truth=truth, correct=correct,
            aligned=aligned, eligible=eligible, entropy=entropy(weights), window=window,
            window_bounds=bounds, temperature=float(v["temperature"]),
            exact=bool(correct.all()), title=title, error="")

    def _show(self, s: ModelState) -> None:
        bounds = None if s.window is None else (s.window_bounds[0] - 1, s.window_bounds[1] - 1)
        self.plot.update(weights=s.weights, source=s.source, output=s.output,
                         expected=s.expected, truth=s.truth, correct=s.correct,
                         window_bounds=bounds, title=s.title)
        self.readout.value = self._readout_html(s)

    def _readout_html(self, s: ModelState) -> str:
        if s.error:
            return (f"<p>cannot decode {html.escape(repr(self.controls['source'].value))}: "
                    f"{html.escape(s.error)}<br>the figure still shows the source "
                    f"{html.escape(s.source)}</p>")
        n, S = int(s.correct.sum()), len(s.source)
        window = _window_words(s.window, s.window_bounds)
        return (f"<p>source {html.escape(s.source)} → decoded {html.escape(s.output)} "
                f"(expected {html.escape(s.expected)}): {n}/{S} right<br>"
                f"temperature {s.temperature:.2f}, {window}; weight peaks on the true "
                f"position in {int(s.aligned.sum())}/{S} steps</p>")

    # --- public -------------------------------------------------------------------------------
    def show_failure_case(self) -> None:
        """Set the controls to the window case of exercise 15 (relevant positions outside):
        :data:`FAILURE_CASE`."""
        self.set(**FAILURE_CASE)

    def still(self) -> StaticFigure:
        """The figure as it stands, as a picture with a text description (a figure a page
        shows without a kernel, like the plots of :mod:`attention_lab.toy.figures`)."""
        s = self.state
        S = len(s.source)
        if s.window is None:
            window = "no window"
        elif s.eligible.any():
            window = (f"the window {s.window_bounds[0]}..{s.window_bounds[1]} (the positions "
                      f"outside it hatched grey; the true position of "
                      f"{int((~s.eligible[s.truth]).sum())} of {S} steps lies outside it)")
        else:
            window = "an empty window (every position hatched grey)"
        wrong = ", ".join(str(t) for t in np.flatnonzero(~s.correct) + 1) or "none"
        description = (f"Figure: the model explorer's heatmap of the {self.model.config.score} "
                       f"model for the source {s.source} at temperature {s.temperature:g} with "
                       f"{window}. It decodes {s.output} (expected {s.expected}): "
                       f"{int(s.correct.sum())} of {S} steps right, wrong steps: {wrong}; the "
                       f"largest weight sits on the true position (orange square) in "
                       f"{int(s.aligned.sum())} of {S} steps.")
        return StaticFigure(self.plot.figure, description)

    def describe(self) -> str:
        s = self.state
        return (f"ModelExplorer({self.model.config.score} model): source {s.source!r} -> "
                f"{s.output!r}, temperature {s.temperature:g}, "
                f"window {s.window if s.window is not None else 'off'}")
