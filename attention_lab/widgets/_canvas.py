"""How an explorer's figure reaches the page (:class:`FigureView`): ipympl's widget canvas with
faster PNG frames (:func:`ipympl_canvas`, a :class:`~attention_lab.widgets._fast_canvas.FastCanvas`
outside pyplot: the notebook's matplotlib backend stays as it is), an inline PNG fallback, or
nothing but an Agg canvas (headless tests and benchmarks).
"""

from __future__ import annotations

import html
import itertools

import ipywidgets as W

from .._compat import ipympl as ipympl_compat

#: ``"auto"``: ipympl when importable, else ``"inline"``; ``"agg"``: headless
BACKENDS = ("auto", "ipympl", "inline", "agg")

_figure_numbers = itertools.count(1)
_fallback_announced = False

FALLBACK_NOTE = ("{why}, so this explorer redraws its figure as a picture after every change "
                 "(slower than the live canvas). Install ipympl (pip install -r requirements.txt) "
                 "and restart the kernel for the live canvas.")


def ipympl_canvas(figure):
    """Put ``figure`` on its own ipympl widget canvas (``FastCanvas``), outside pyplot, without
    toolbar, header, footer or resize handle; the notebook's matplotlib backend is untouched."""
    import warnings

    from ipympl.backend_nbagg import FigureManager

    from ._fast_canvas import FastCanvas

    canvas = FastCanvas(figure)
    with warnings.catch_warnings():  # ipympl's Toolbar uses a deprecated traitlets API
        warnings.simplefilter("ignore", DeprecationWarning)
        FigureManager(canvas, next(_figure_numbers))
    for trait in ("header_visible", "footer_visible", "toolbar_visible", "resizable",
                  "capture_scroll"):
        setattr(canvas, trait, False)
    return canvas


def ipympl_unavailable() -> str | None:
    """None when ipympl's widget canvas can be used in this kernel, else why not (not installed,
    or a version the canvas was not tested with: :mod:`attention_lab._compat.ipympl`)."""
    try:
        import ipympl.backend_nbagg  # noqa: F401
    except Exception:  # ImportError, or a broken install
        return "ipympl is not available here"
    return ipympl_compat.tested()


def ipympl_available() -> bool:
    """True when ipympl's widget canvas can be used in this kernel."""
    return ipympl_unavailable() is None


class FigureView:
    """Where an explorer's figure is shown, and how a change reaches it.

    ``backend``: ``"ipympl"`` puts the figure on its own ``FastCanvas`` widget and pushes a frame
    after every change; ``"inline"`` shows an ``ipywidgets.Image`` redrawn as a PNG after every
    change, with a note (:attr:`note`, the first inline view of the session only) saying how to
    get the live canvas; ``"agg"`` draws on the figure's Agg canvas after every change (tests,
    benchmarks); ``"auto"`` is ipympl when importable, else inline. ``png`` returns the current
    figure as PNG bytes.
    """

    def __init__(self, figure, png, backend: str = "auto"):
        global _fallback_announced
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.figure, self._png = figure, png
        self.note: W.HTML | None = None
        self.image: W.Image | None = None
        self._shown = False
        why_not = None
        if backend in ("auto", "ipympl"):
            why_not = ipympl_unavailable()
            if why_not is None:
                ipympl_canvas(figure)
                backend = "ipympl"
            elif backend == "ipympl":
                raise ImportError(f"backend='ipympl' needs ipympl's widget canvas ({why_not}): "
                                  f"pip install ipympl, or pip install -r requirements.txt")
            else:
                backend = "inline"
        if backend == "inline":
            if not _fallback_announced:
                _fallback_announced = True
                note = FALLBACK_NOTE.format(why=why_not or "ipympl is not used")
                self.note = W.HTML(f"<p style='color:#8a5a00'><i>{html.escape(note)}</i></p>")
            self.image = W.Image(format="png")
        self.backend = backend

    @property
    def widget(self):
        """What the explorer's box shows: the live canvas, or an image of the current figure."""
        if self.backend == "ipympl":
            return self.figure.canvas
        if self.image is None:  # agg: a picture of the figure, drawn when asked for
            self.image = W.Image(format="png")
        self.image.value = self._png()
        self._shown = True
        return self.image

    def refresh(self) -> None:
        """Bring the shown figure up to date after its artists changed."""
        if self.backend == "ipympl":
            self.figure.canvas.push_frame()
        elif self.backend == "inline":
            if self._shown:
                self.image.value = self._png()
        else:
            self.figure.canvas.draw()
