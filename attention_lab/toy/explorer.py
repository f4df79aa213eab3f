"""The model explorer: type or choose a source, change the temperature and a local window, and
watch the trained model's decoded output and attention change.

    ex = ModelExplorer()            # the shipped model (additive scores)
    ex                              # displays the controls and the figure
    ex.controls["source"].value = "abcdefghij"
    ex.controls["window"].value = True      # restrict attention to |j - centre| <= half_width
    ex.state["output"], ex.state["correct"] # what the figure shows, as plain values / arrays

Conventions (shared with the other explorers): ``.controls`` maps names to ipywidgets; setting a
control's ``.value`` runs the same code as dragging it. ``.state`` holds the numbers the figure
shows, computed by the model (numpy arrays and strings). ``.figure`` is built once and updated in
place. ``reset()`` restores every control's starting value. ``presentation=True`` uses large fonts
for a projector. The figure is an ipympl canvas when ipympl is installed (created directly, the
notebook's matplotlib backend is not switched), otherwise a PNG image widget redrawn on change.
Callbacks never print; a source the model cannot read is reported in the figure's title.
"""

from __future__ import annotations

import io

import numpy as np

from ..softmax import entropy
from . import data
from .figures import ModelFigure

#: Sources offered in the drop-down (any other string of known symbols can be typed).
EXAMPLES = ("abcdefghij", "abc", "badge", "lkjihgfedcba", "aabbccddee", "fedcbafedcba",
            "cafe", "hijack")
#: The window case of the chapter's exercise 15: at its defaults the window (positions 0..2)
#: hides the source positions that the first seven output steps need.
FAILURE_CASE = {"source": "abcdefghij", "window": True, "centre": 1, "half_width": 1}


class ModelExplorer:
    """Controls + figure + the trained model; see the module docstring."""

    #: shown above the controls in presentation mode
    TITLE = "Trained model: where each output step looks in the source"

    def __init__(self, model=None, *, source: str = "abcdefghij", temperature: float = 1.0,
                 window: bool = False, centre: int = 1, half_width: int = 1,
                 presentation: bool = False):
        import ipywidgets as W

        from .store import load

        self.model = load() if model is None else model
        c = self.model.config
        self.presentation = presentation
        style = {"description_width": "initial"}
        layout = W.Layout(width="420px" if presentation else "340px")
        options = list(EXAMPLES) if source in EXAMPLES else [source, *EXAMPLES]
        self.controls = {
            "source": W.Combobox(value=source, options=options, ensure_option=False,
                                 description=f"source ({c.min_len}-{c.max_len} of "
                                             f"{c.vocab[0]}..{c.vocab[-1]})",
                                 continuous_update=False, style=style, layout=layout),
            "temperature": W.FloatLogSlider(value=temperature, base=10, min=-1, max=1,
                                            step=0.05, description="temperature", style=style,
                                            layout=layout, readout_format=".2f"),
            "window": W.Checkbox(value=window, description="local window", style=style),
            "centre": W.IntSlider(value=centre, min=0, max=c.max_len - 1,
                                  description="window centre", style=style, layout=layout),
            "half_width": W.IntSlider(value=half_width, min=0, max=c.max_len - 1,
                                      description="half-width", style=style, layout=layout),
        }
        for name, w in self.controls.items():
            w.add_class(f"al-control-{name}")
        self._initial = {k: w.value for k, w in self.controls.items()}
        #: the state in words, under the controls (screen readers, the browser tests)
        self.readout = W.HTML()
        self.readout.add_class("al-readout")
        self._widget = None
        self.state: dict = {}
        self.figure = ModelFigure(c.max_len, presentation=presentation)
        self._canvas, self._image = self._make_canvas()
        self._compute()
        self._draw()
        for w in self.controls.values():
            w.observe(self._on_change, names="value")

    # --- core -------------------------------------------------------------------------------
    def _compute(self) -> None:
        """Decode the current source with the current settings into ``self.state``."""
        c = self.model.config
        v = {k: w.value for k, w in self.controls.items()}
        text = str(v["source"]).strip().lower()
        try:
            toks = data.encode(text, c.n_symbols, c.max_len, c.min_len)
        except (ValueError, TypeError) as exc:
            if not self.state:  # the starting source itself is bad: fall back to an example
                self.controls["source"].value = EXAMPLES[0]
                return self._compute()
            self.state["error"] = str(exc)
            self.state["title"] = f"cannot decode: {exc}"
            return
        S = len(toks)
        window = (v["centre"], v["half_width"]) if v["window"] else None
        tokens, lengths = data.pad_batch([toks], c.max_len)
        d = self.model.decode(tokens, lengths, temperature=v["temperature"], window=window)
        weights = d.weights[0, :S, :S].astype(float)
        output = data.decode(d.tokens[0, :S], c.n_symbols)
        expected = text[::-1]
        correct = np.array([o == e for o, e in zip(output, expected)])
        truth = S - 1 - np.arange(S)
        eligible = d.mask[0, 0, :S].copy()
        idx = np.flatnonzero(eligible)
        bounds = (int(idx[0]), int(idx[-1])) if idx.size else (S, S - 1)
        aligned = weights.argmax(-1) == truth
        n_ok = int(correct.sum())
        title = (f"decoded {output}, expected {expected}: {n_ok}/{S} right\n"
                 f"weight peaks on the true position in {int(aligned.sum())}/{S} steps")
        if window is not None:
            outside = ~eligible[truth]
            title += (f"\nwindow {bounds[0]}..{bounds[1]}" if idx.size else "\nempty window")
            title += f": {int(outside.sum())} step(s) need a position outside it"
        self.state = {
            "source": text, "tokens": toks, "output": output, "expected": expected,
            "weights": weights, "scores": d.scores[0, :S, :S].astype(float), "truth": truth,
            "correct": correct, "aligned": aligned, "eligible": eligible,
            "entropy": entropy(weights), "window": window, "window_bounds": bounds,
            "temperature": float(v["temperature"]), "exact": bool(correct.all()),
            "title": title, "error": "",
        }

    def _draw(self) -> None:
        self.figure.update(self.state)
        self.readout.value = self._readout_html()
        if self._canvas is not None:
            self._canvas.push_frame()
        else:
            buf = io.BytesIO()
            self.figure.fig.savefig(buf, format="png", dpi=80)
            self._image.value = buf.getvalue()

    def _on_change(self, change=None) -> None:
        self._compute()
        self._draw()

    # --- public -------------------------------------------------------------------------------
    def reset(self) -> None:
        """Restore every control's starting value (one redraw)."""
        for w in self.controls.values():
            w.unobserve(self._on_change, names="value")
        try:
            for k, w in self.controls.items():
                w.value = self._initial[k]
        finally:
            for w in self.controls.values():
                w.observe(self._on_change, names="value")
        self._on_change()

    def show_failure_case(self) -> None:
        """Set the controls to the window case of exercise 15 (relevant positions outside)."""
        for k, val in FAILURE_CASE.items():
            self.controls[k].value = val

    def _readout_html(self) -> str:
        import html

        s = self.state
        if s.get("error"):
            return (f"<p>cannot decode {html.escape(repr(self.controls['source'].value))}: "
                    f"{html.escape(s['error'])}<br>the figure still shows the source "
                    f"{html.escape(s['source'])}</p>")
        n, S = int(s["correct"].sum()), len(s["source"])
        if s["window"] is None:
            window = "no window"
        elif s["eligible"].any():
            window = f"window {s['window_bounds'][0]}..{s['window_bounds'][1]}"
        else:
            window = "empty window"
        return (f"<p>source {html.escape(s['source'])} → decoded {html.escape(s['output'])} "
                f"(expected {html.escape(s['expected'])}): {n}/{S} right<br>"
                f"temperature {s['temperature']:.2f}, {window}; weight peaks on the true "
                f"position in {int(s['aligned'].sum())}/{S} steps</p>")

    @property
    def widget(self):
        """Controls, the text readout and the figure (built once). In presentation mode the
        controls sit left of the figure (a wide projector), otherwise above it."""
        import ipywidgets as W

        if self._widget is None:
            c = self.controls
            figure = self._canvas if self._canvas is not None else self._image
            if self.presentation:
                side = W.VBox([c["source"], c["temperature"], c["window"], c["centre"],
                               c["half_width"], self.readout],
                              layout=W.Layout(margin="0 28px 0 0", max_width="560px"))
                figure.layout.flex = "0 0 auto"  # its own size, not the whole row
                body = W.Box([side, figure],
                             layout=W.Layout(flex_flow="row wrap", align_items="flex-start"))
                title = W.HTML(f"<b style='font-size:1.3em'>{self.TITLE}</b>")
                title.add_class("al-explorer-title")
                box = W.VBox([title, body])
            else:
                box = W.VBox([c["source"], c["temperature"],
                              W.HBox([c["window"], c["centre"], c["half_width"]]),
                              self.readout, figure])
            box.add_class("al-explorer")
            box.add_class("al-explorer-model")
            self._widget = box
        return self._widget

    def _make_canvas(self):
        import ipywidgets as W

        from ..widgets import ipympl_available, ipympl_canvas

        if not ipympl_available():
            return None, W.Image(format="png")
        # the explorers' canvas: fast frames, no toolbar, not registered with pyplot
        return ipympl_canvas(self.figure.fig), None

    def _ipython_display_(self):
        from IPython.display import display

        bundle = self.widget._repr_mimebundle_()
        bundle["text/plain"] = self._describe()
        display(bundle, raw=True)

    def _describe(self) -> str:
        s = self.state
        return (f"ModelExplorer({self.model.config.score} model): source {s['source']!r} -> "
                f"{s['output']!r}, temperature {s['temperature']:g}, "
                f"window {s['window'] if s['window'] is not None else 'off'}")

    def __repr__(self) -> str:
        return self._describe()
