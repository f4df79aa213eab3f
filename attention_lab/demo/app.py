"""The lecture demo app: explorers in tabs for a projector, with one reset button.

``notebooks/demo.ipynb`` builds it with :func:`build_demo`, one explorer per tab, and Voila shows
it as a standalone page (:mod:`attention_lab.demo.launch` starts Voila)::

    demo = build_demo({"Query": QueryExplorer(presentation=True),
                       "Trained model": later(ModelExplorer, presentation=True)})
    demo

An explorer is any object with ``.controls`` (a dict name -> ipywidget with a ``.value``) and,
optionally, ``reset()`` and ``.widget`` (what to show; otherwise the explorer itself is shown, as a
widget or through its ``_repr_mimebundle_``). The demo's reset button calls every explorer's
``reset()`` and then puts any control still away from its starting value back.

A tab given as :func:`later` (a function and its arguments) is built when a viewer first opens it:
the trained model's tab costs nothing for viewers who never open it. The other explorers are built
with the app and their figures rendered once at once (:meth:`Demo.prerender`), so that in Voila's
preheated kernels this work is done before a viewer arrives and the page's first frames are cheap.

ipywidgets is imported when an app is built, not when this module is.
"""

from __future__ import annotations

import html
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
/* a screen narrower than a figure (a laptop, a tablet, a phone): no control is wider than the
   screen (the figure shrinks by the explorer's own rules, widgets/_a11y.py) */
.al-demo .widget-inline-hbox { max-width: 100%; }
.al-demo .al-header, .al-demo .lm-TabBar-content { flex-wrap: wrap; }
.al-demo .al-header .al-reset { flex: 0 0 auto; }
@media (max-width: 700px) {  /* a phone: each control's name above it, the slider full width */
  .al-demo .widget-inline-hbox { flex-wrap: wrap; height: auto; }
  .al-demo .widget-inline-hbox > .widget-label { width: 100% !important; text-align: left; }
}
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


class Later:
    """A tab's explorer to build when the tab is first opened: ``factory(*args, **kwargs)``."""

    def __init__(self, factory, *args, **kwargs):
        if not callable(factory):
            raise TypeError(f"later() needs a callable that builds the explorer, got "
                            f"{type(factory).__name__}")
        self.factory, self.args, self.kwargs = factory, args, kwargs

    def build(self):
        return self.factory(*self.args, **self.kwargs)

    def __repr__(self) -> str:
        return f"later({getattr(self.factory, '__name__', self.factory)!r})"


def later(factory, *args, **kwargs) -> Later:
    """A tab built on first opening:
    ``"Trained model": later(ModelExplorer, presentation=True)``."""
    return Later(factory, *args, **kwargs)


class Demo:
    """The lecture demo: a title, one tab per explorer and a reset button.

    ``.widget`` is the app; ``.titles`` lists the tabs; ``.explorers`` maps the titles of the tabs
    built so far to their explorers (a :func:`later` tab is built when first opened, or by
    :meth:`explorer`); ``.controls`` maps ``"Tab/name"`` to their controls; ``.initial`` holds the
    controls' starting values; :meth:`reset` puts them all back; :meth:`changed` lists the controls
    that are away from their starting value.
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
        self.titles = titles
        self.explorers: dict = {}
        self.controls: dict = {}
        self.initial: dict = {}
        #: title -> (what builds it, the box that shows it) for the tabs not opened yet
        self._later: dict = {}
        #: title -> the message of the last failure to build a tab (shown in the tab)
        self.errors: dict = {}
        pages = []
        for t, ex in items:
            if isinstance(ex, Later):
                box = W.Box([W.HTML(f"<p>{html.escape(t)} opens when you choose this "
                                    f"tab.</p>")])
                box.add_class("al-later")
                self._later[t] = (ex, box)
                pages.append(box)
            else:
                self._add(t, ex)
                pages.append(_as_widget(ex, t))
        self.tabs = W.Tab(children=pages, titles=titles)
        self.reset_button = W.Button(description="Reset every control", icon="undo",
                                     button_style="warning",
                                     layout=W.Layout(width="280px", height="44px"))
        self.reset_button.style.button_color = "#a84c00"  # white on it 5.7:1 (the orange: 2.7)
        self.reset_button.add_class("al-reset")
        self.status = W.HTML(value="", layout=W.Layout(margin="0 16px 0 0"))
        self.status.add_class("al-status")
        self.reset_button.on_click(lambda _b: self.reset())
        style = W.HTML(value=f"<style>{PRESENTATION_CSS}</style>", layout=W.Layout(height="0px"))
        heading = W.HTML(value=f"<h1>{html.escape(str(title))}</h1>"
                               f"<span>{html.escape(str(subtitle))}</span>",
                         layout=W.Layout(flex="1 1 auto"))
        heading.add_class("al-demo-title")
        # one row above the tabs: the title, and the reset button where it is always in sight
        header = W.HBox([heading, self.status, self.reset_button],
                        layout=W.Layout(align_items="center", margin="0 0 8px 0"))
        header.add_class("al-header")
        from .connection import ConnectionWatch

        # a page whose kernel is gone (culled, the demo restarted) says so and asks for a reload
        self.connection = ConnectionWatch()
        self.widget = W.VBox([style, self.connection, header, self.tabs])
        self.widget.add_class("al-demo")
        self._resetting = False
        self.tabs.observe(self._on_tab, names="selected_index")
        self._on_tab({"new": self.tabs.selected_index or 0})  # the first tab is on screen

    def _add(self, title: str, explorer) -> None:
        controls = _controls_of(explorer, title)
        self.explorers = {t: self.explorers[t] if t != title else explorer
                          for t in self.titles if t in self.explorers or t == title}
        for name, c in controls.items():
            key = f"{title}/{name}"
            self.controls[key] = c
            self.initial[key] = c.value
            c.observe(self._clear_status, names="value")

    def explorer(self, title: str):
        """The explorer of tab ``title``, built now if it is a :func:`later` tab not opened yet.
        A tab that fails to build shows the reason (and is tried again when opened again)."""
        if title in self.explorers:
            return self.explorers[title]
        if title not in self._later:
            raise KeyError(f"no tab {title!r}; the tabs are {self.titles}")
        pending, box = self._later[title]
        try:
            explorer = pending.build()
            widget = _as_widget(explorer, title)
            self._add(title, explorer)
        except Exception as exc:  # shown in the tab; the demo keeps running
            import ipywidgets as W

            self.errors[title] = f"{type(exc).__name__}: {exc}"
            box.children = [W.HTML(f"<p>This tab could not be opened: "
                                   f"{html.escape(self.errors[title])}</p>")]
            raise
        del self._later[title]
        self.errors.pop(title, None)
        box.children = [widget]
        return explorer

    def _on_tab(self, change) -> None:
        index = change["new"]
        if index is not None and self.titles[index] in self._later:
            try:
                self.explorer(self.titles[index])
            except Exception:  # already shown in the tab (a callback must not raise)
                pass

    def prerender(self) -> None:
        """Render every built explorer's figure once, off screen, and keep nothing but the caches.

        A figure's first draw renders its static layer (axes, ticks, labels: 0.1-0.5 s of CPU);
        later draws restore it from a pixel cache (3-12 ms); the live canvas also encodes its
        first whole frame (4-8 ms), which an arriving page asks for twice. Run in Voila's
        preheated kernels, this moves that work from a viewer's arrival to the preheating. The live
        canvases then keep only that frame and the compressed static layer until a viewer moves
        a control (``FastCanvas.cool``).
        """
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        for explorer in self.explorers.values():
            figure = getattr(explorer, "figure", None)
            figure = getattr(figure, "fig", figure)  # the model explorer's figure object
            canvas = getattr(figure, "canvas", None)
            if isinstance(canvas, FigureCanvasAgg):
                # Agg's own draw: renders and fills the caches without sending a frame
                FigureCanvasAgg.draw(canvas)
                if hasattr(canvas, "keep_whole_frame"):  # the live canvas (FastCanvas)
                    canvas.keep_whole_frame()
                    canvas.cool()

    def changed(self) -> list[str]:
        """The controls (``"Tab/name"``) whose value differs from the starting value."""
        from ..widgets.base import same_value

        return [key for key, c in self.controls.items() if not same_value(c.value,
                                                                          self.initial[key])]

    def reset(self) -> None:
        """Every explorer's ``reset()``, then any control still away from its start is set back
        (tabs not opened yet are at their start)."""
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
        from ..widgets.base import same_value

        if (not self._resetting and self.status.value
                and not same_value(change["old"], change["new"])):
            self.status.value = ""

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        tabs = []
        for t in self.titles:
            if t in self.explorers:
                n = len(_controls_of(self.explorers[t], t))
                tabs.append(f"{t} ({n} control{'s' * (n != 1)})")
            else:
                tabs.append(f"{t} (built when opened)")
        return f"Lecture demo: {', '.join(tabs)}; reset button"


def build_demo(explorers, *, title: str = "Attention, live",
               subtitle: str = "query-dependent weighted retrieval",
               prerender: bool = True) -> Demo:
    """The lecture demo app from ``{tab title: explorer or later(...)}`` (see :class:`Demo`);
    ``prerender`` renders the built explorers' figures once (:meth:`Demo.prerender`)."""
    demo = Demo(explorers, title=title, subtitle=subtitle)
    if prerender:
        demo.prerender()
    return demo

