"""The lecture demo app: explorers in tabs for a projector, with one reset button.

``notebooks/demo.ipynb`` builds it with :func:`build_demo`, one explorer per tab, and Voila shows
it as a standalone page (:mod:`attention_lab.demo.launch` starts Voila)::

    demo = build_demo({"Query": QueryExplorer(presentation=True),
                       "Temperature": TemperatureExplorer(presentation=True)})
    demo

An explorer is any object with ``.controls`` (a dict name -> ipywidget with a ``.value``) and,
optionally, ``reset()`` and ``.widget`` (what to show; otherwise the explorer itself is shown, as a
widget or through its ``_repr_mimebundle_``). The demo's reset button calls every explorer's
``reset()`` and then puts any control still away from its starting value back.

ipywidgets is imported when an app is built, not when this module is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

#: Large type for a projector, scoped to the demo (``.al-demo``) so that the same notebook opened in
#: JupyterLab changes nothing outside the demo.
PRESENTATION_CSS = """
.al-demo {
  --jp-widgets-font-size: 20px;
  --jp-widgets-inline-height: 38px;
  --jp-widgets-inline-label-width: 170px;
  --jp-widgets-slider-handle-size: 22px;
  --jp-widgets-slider-track-thickness: 6px;
  font-size: 20px;
}
.al-demo .al-demo-title h1 { font-size: 32px; margin: 0; display: inline; }
.al-demo .al-demo-title span { font-size: 22px; margin: 0 0 0 18px; color: #444; }
.al-demo .lm-TabBar-tabLabel, .al-demo .p-TabBar-tabLabel { font-size: 22px; line-height: 38px; }
.al-demo .lm-TabBar-tab, .al-demo .p-TabBar-tab {
  min-width: 170px; min-height: 42px; max-width: none !important; flex: 0 0 auto !important;
  padding: 0 18px; }
.al-demo .al-explorer-title { font-size: 22px; }
.al-demo .widget-readout, .al-demo .widget-label, .al-demo select, .al-demo button,
.al-demo .widget-html-content, .al-demo .widget-checkbox label { font-size: 20px; }
.al-demo input[type="checkbox"] { width: 20px; height: 20px; }
.al-demo .al-readout .widget-html-content { font-size: 17px; }
.al-demo .al-readout td, .al-demo .al-readout th { font-size: 16px; padding: 1px 4px !important; }
"""


def _as_widget(explorer, title: str):
    """What to put in the tab for ``explorer``: its ``.widget``, itself if it is a widget, or an
    Output widget holding its display (``_repr_mimebundle_``)."""
    import ipywidgets as W

    if isinstance(explorer, W.Widget):
        return explorer
    widget = getattr(explorer, "widget", None)
    if isinstance(widget, W.Widget):
        return widget
    if widget is not None:
        raise TypeError(f"explorer {title!r}: .widget must be an ipywidgets widget, got "
                        f"{type(widget).__name__}")
    out = W.Output()
    out.append_display_data(explorer)
    return out


def _controls_of(explorer, title: str) -> dict:
    controls = getattr(explorer, "controls", None)
    if not isinstance(controls, Mapping):
        raise TypeError(f"explorer {title!r} ({type(explorer).__name__}) has no .controls dict "
                        f"(name -> ipywidget); got {type(controls).__name__}")
    for name, control in controls.items():
        if not hasattr(control, "value"):
            raise TypeError(f"explorer {title!r}: control {name!r} is a "
                            f"{type(control).__name__} without a .value")
    return dict(controls)


class Demo:
    """The lecture demo: a title, one tab per explorer and a reset button.

    ``.widget`` is the app; ``.explorers`` maps tab titles to explorers; ``.controls`` maps
    ``"Tab/name"`` to every control; ``.initial`` holds their starting values; :meth:`reset` puts them
    all back; :meth:`changed` lists the controls that are away from their starting value.
    """

    def __init__(self, explorers, *, title: str = "Attention, live",
                 subtitle: str = "query-dependent weighted retrieval"):
        import ipywidgets as W

        items = list(explorers.items()) if isinstance(explorers, Mapping) else list(explorers)
        if not items:
            raise ValueError("build_demo needs at least one explorer (tab title -> explorer)")
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise TypeError("explorers must be a dict {tab title: explorer} or a list of "
                                f"(title, explorer) pairs; got the item {item!r}")
        titles = [t for t, _ in items]
        if len(set(titles)) != len(titles):
            raise ValueError(f"tab titles must be distinct, got {titles}")
        self.explorers = dict(items)
        self.controls = {f"{t}/{name}": c for t, ex in items
                         for name, c in _controls_of(ex, t).items()}
        self.initial = {key: c.value for key, c in self.controls.items()}
        pages = [_as_widget(ex, t) for t, ex in items]
        self.tabs = W.Tab(children=pages, titles=titles)
        self.reset_button = W.Button(description="Reset every control", icon="undo",
                                     button_style="warning",
                                     layout=W.Layout(width="280px", height="44px"))
        self.reset_button.add_class("al-reset")
        self.status = W.HTML(value="", layout=W.Layout(margin="0 16px 0 0"))
        self.status.add_class("al-status")
        self.reset_button.on_click(lambda _b: self.reset())
        for c in self.controls.values():
            c.observe(self._clear_status, names="value")
        style = W.HTML(value=f"<style>{PRESENTATION_CSS}</style>", layout=W.Layout(height="0px"))
        heading = W.HTML(value=f"<h1>{_escape(title)}</h1><span>{_escape(subtitle)}</span>",
                         layout=W.Layout(flex="1 1 auto"))
        heading.add_class("al-demo-title")
        # one row above the tabs: the title, and the reset button where it is always in sight
        header = W.HBox([heading, self.status, self.reset_button],
                        layout=W.Layout(align_items="center", margin="0 0 8px 0"))
        self.widget = W.VBox([style, header, self.tabs])
        self.widget.add_class("al-demo")
        self._resetting = False

    def changed(self) -> list[str]:
        """The controls (``"Tab/name"``) whose value differs from the starting value."""
        return [key for key, c in self.controls.items() if not same_value(c.value,
                                                                          self.initial[key])]

    def reset(self) -> None:
        """Every explorer's ``reset()``, then any control still away from its start is set back."""
        self._resetting = True
        try:
            for ex in self.explorers.values():
                reset = getattr(ex, "reset", None)
                if callable(reset):
                    reset()
            for key in self.changed():
                self.controls[key].value = self.initial[key]
        finally:
            self._resetting = False
        self.status.value = "every control is back at its starting value"

    def _clear_status(self, change) -> None:
        if (not self._resetting and self.status.value
                and not same_value(change["old"], change["new"])):
            self.status.value = ""

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        counts = {t: len(_controls_of(ex, t)) for t, ex in self.explorers.items()}
        tabs = ", ".join(f"{t} ({n} control{'s' * (n != 1)})" for t, n in counts.items())
        return f"Lecture demo: {tabs}; reset button"


def same_value(a, b) -> bool:
    """``a == b``, for floats up to the browser's rounding of a slider value.

    A browser snaps a slider to ``min + k * step`` in its own floating-point arithmetic and sends
    that value back: 0.8 on a grid from -1.5 in steps of 0.05 comes back as 0.7999999999999998.
    That is not a move of the control.
    """
    if (isinstance(a, float) or isinstance(b, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool) and isinstance(a, (int, float)) \
            and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _escape(text: str) -> str:
    import html

    return html.escape(str(text))


def build_demo(explorers, *, title: str = "Attention, live",
               subtitle: str = "query-dependent weighted retrieval") -> Demo:
    """The lecture demo app from ``{tab title: explorer}`` (see :class:`Demo`)."""
    return Demo(explorers, title=title, subtitle=subtitle)

