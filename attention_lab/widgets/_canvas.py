"""How an explorer's figure reaches the page: ipympl's widget canvas with faster PNG frames, or
an inline PNG fallback, or nothing but an Agg canvas (headless tests and benchmarks).

* :func:`encode_png`: RGBA pixels as a PNG with unfiltered rows (the frames' encoder).
* ``FastCanvas`` (:func:`ipympl_canvas`): ipympl's Canvas, attached to one figure outside pyplot
  (the notebook's matplotlib backend stays as it is), sending its frames sooner and cheaper.
* :class:`FigureView`: picks the backend and refreshes the figure after a change.
"""

from __future__ import annotations

import ctypes
import html
import itertools
import struct
import time
import zlib
from functools import lru_cache

import ipywidgets as W
import numpy as np

from .._compat import ipympl as ipympl_compat
from .._compat import matplotlib as mpl_compat
from ..plots._render import forget_text

try:  # ISA-L's deflate: 5-7x faster than zlib's at level 1, its output no larger
    from isal.isal_zlib import compress as _deflate
except ImportError:  # a platform without isal's wheels: zlib (slower frames, the same pixels)
    from zlib import compress as _deflate

#: ``"auto"``: ipympl when importable, else ``"inline"``; ``"agg"``: headless
BACKENDS = ("auto", "ipympl", "inline", "agg")

_figure_numbers = itertools.count(1)
_fallback_announced = False

FALLBACK_NOTE = ("{why}, so this explorer redraws its figure as a picture after every change "
                 "(slower than the live canvas). Install ipympl (pip install -r requirements.txt) "
                 "and restart the kernel for the live canvas.")


def encode_png(rgba: np.ndarray, level: int = 1) -> bytes:
    """RGBA pixels ``(H, W, 4)`` (uint8) as a PNG file: rows unfiltered, one zlib stream
    compressed at ``level`` (0-3).

    Pillow tries all five PNG row filters on every row (adaptive filtering), which for the
    explorers' figures costs more than the compression itself; unfiltered rows of these
    flat-coloured figures compress about as well, three times faster. The stream is deflated by
    ISA-L (the ``isal`` package) when installed, else by zlib: a presentation figure's whole
    frame in 1.9 ms instead of 10.5 ms, a slider step's diff frame in 1.0 ms instead of 6.4 ms,
    files no larger (``python -m benchmarks.run explorers``). Any PNG decoder reads it.
    """
    rgba = np.asarray(rgba)
    if rgba.dtype != np.uint8 or rgba.ndim != 3 or rgba.shape[2] != 4:
        raise ValueError(f"rgba must be a uint8 array of shape (H, W, 4), got {rgba.dtype} "
                         f"{rgba.shape}")
    h, w, _ = rgba.shape
    rows = np.empty((h, 1 + 4 * w), dtype=np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) on every row
    rows[:, 1:] = rgba.reshape(h, 4 * w)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)  # 8-bit RGBA, not interlaced
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", _deflate(rows, level)) + chunk(b"IEND", b""))


@lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's ``malloc_trim``, or None (another C library)."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def _give_back_freed_memory() -> None:
    """Return the free pages of the C heap to the system: freed pixel buffers otherwise stay in
    the process's resident memory (glibc keeps them for its next allocations)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@lru_cache(maxsize=None)
def _fast_canvas_class():
    """ipympl's Canvas with faster frames for the browser (see ``FastCanvas``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    class FastCanvas(ipympl_compat.canvas_base()):
        """ipympl's widget canvas, tuned for explorers that redraw on every control change.

        - Frames are PNGs encoded by :func:`encode_png` (level 1, unfiltered rows): the same
          pixels as ipympl's frames in about a third of the time.
        - :meth:`push_frame` draws and sends a frame at once when the browser has been idle for
          ``quiet_seconds``; ipympl's ``draw_idle`` first asks the browser, which asks back (one
          more round trip per change). Changes in quick succession (a drag, a held key) keep
          ipympl's pacing, in which the browser asks for the next frame when the last one arrived.
        - No frame depends on one the browser may have dropped. ipympl's page shows a frame once
          its PNG is decoded, and a frame that arrives before the last one is decoded replaces
          it unseen; a diff frame painted over a dropped one leaves a wrong (at first load: a
          blank) figure. So a frame the browser did not ask for is whole (and not sent at all if
          no pixel changed), and ``settle_seconds`` after a diff frame with nothing since, the
          whole figure is sent once more: once the figure is still, the page shows all of it.
        - A figure that has not changed since it was last drawn is not drawn again: the frame
          the browser asks for is made from the pixels it has (the whole frame sent once a drag
          has settled; a page that opens). Changed means: the explorer pushed a frame since
          (:meth:`push_frame`), or matplotlib marked the figure stale (a resize, a zoom).
        - A whole frame of a figure unchanged since its last whole frame is that frame's PNG
          again, not a new encoding: a page that opens asks for the whole figure twice (its
          first draw request, then a refresh), and :meth:`keep_whole_frame` lets Voila's
          preheated kernels encode it before any viewer arrives.
        - An idle figure is kept small (:meth:`cool`): ``cool_seconds`` after its last frame (and
          after a preheated kernel's warm-up), only its last whole frame's PNG and its static
          layer, compressed, stay; the pixel buffers (the renderer's and the copy of the last
          frame) and the labels' rasterised lines are freed and given back to the system. A
          page that opens gets the kept frame; the next change, or anyone asking for the pixels,
          draws the figure again (the first frame after it is whole).
        - The figure cannot be resized with the mouse: ipympl's front-end switches ``resizable``
          on for every live canvas; the canvas says again that it is off once the browser view
          is ready.
        """

        png_compress_level = 1
        quiet_seconds = 0.2
        settle_seconds = 0.4
        cool_seconds = 5.0
        _last_frame = float("-inf")
        _unrequested = False  # the frame being drawn was not asked for by the browser
        _settle_timer = None
        _whole_png = None  # the last frame, when it was whole (None after a diff)
        _pushed_undrawn = True  # the explorer pushed a change not drawn yet
        _cold = False  # pixel buffers freed (cool); _whole_png shows the figure as it is
        _cool_timer = None

        def push_frame(self) -> None:
            """Draw the figure for the browser now, or let the browser pace it (see above)."""
            self._pushed_undrawn = True
            if (self.syncing_data_url  # no browser view has said it is ready
                    or time.monotonic() - self._last_frame < self.quiet_seconds):
                self.draw_idle()
                return
            self._unrequested = True
            try:
                self.draw()
            finally:
                self._unrequested = False

        def draw(self):
            if not (self._pushed_undrawn or self.figure.stale):
                # the renderer (or, cold, the kept frame) holds the figure as it is: send a
                # frame of it without drawing
                self.frame_pending = True
                self.manager.refresh_all()
                return
            self._pushed_undrawn, self._cold = False, False
            super().draw()

        def get_renderer(self):
            self._warm()
            return super().get_renderer()

        def buffer_rgba(self):
            self._warm()
            return super().buffer_rgba()

        def _warm(self) -> None:
            """Pixels asked for while cold: draw them again (nothing is sent)."""
            if self._cold:
                self._cold = False
                FigureCanvasAgg.draw(self)

        def cool(self) -> None:
            """Free the pixel buffers of a figure whose last whole frame shows it as it is."""
            if self._cold or self._pushed_undrawn or self.figure.stale or self._whole_png is None:
                return
            pack = getattr(self.figure, "pack_static", None)
            if pack is not None:
                pack()
            forget_text()
            mpl_compat.drop_agg_renderer(self)
            self.shown_pixels = None
            mpl_compat.forget_text_renderers(self.figure)
            self._cold = True
            _give_back_freed_memory()

        def _cool_later(self) -> None:
            if self._cool_timer is None:
                self._cool_timer = self.new_timer(interval=int(self.cool_seconds * 1000))
                self._cool_timer.single_shot = True
                self._cool_timer.add_callback(self.cool)
            self._cool_timer.start()  # (re)started: counts from the last frame

        def get_diff_image(self):
            if not self.frame_pending:
                return None
            if self._cold:  # unchanged since its whole frame was kept (see draw)
                self.frame_pending = self.whole_frame_asked = False
                self._last_frame = time.monotonic()
                self.set_image_mode("full")
                return self._whole_png
            self._cool_later()
            pixels = np.asarray(self.get_renderer().buffer_rgba())
            buff = pixels.view(np.uint32).squeeze(2)
            shown = self.shown_pixels
            same_shape = shown is not None and buff.shape == shown.shape
            whole = self.whole_frame_asked
            if self._unrequested and not whole and same_shape and np.array_equal(buff, shown):
                self.frame_pending = False
                return None  # nothing new to show
            self.whole_frame_asked, self.frame_pending = False, False
            self._last_frame = time.monotonic()
            if whole or self._unrequested or not same_shape or (pixels[:, :, 3] != 255).any():
                self.set_image_mode("full")
                if self._settle_timer is not None:
                    self._settle_timer.stop()
                if not (self._whole_png is not None and same_shape
                        and np.array_equal(buff, shown)):
                    self.keep_whole_frame()
                return self._whole_png
            self.set_image_mode("diff")
            np.multiply(buff, np.not_equal(buff, shown), out=shown)  # (H, W) changed, others 0
            png = encode_png(shown.view(np.uint8).reshape((*shown.shape, 4)),
                             self.png_compress_level)
            np.copyto(shown, buff)  # the frame the browser shows next (no new buffer per frame)
            self._settle_later()
            self._whole_png = None
            return png

        def keep_whole_frame(self) -> None:
            """Encode the figure's current pixels (just drawn) as its next whole frame, without
            sending it."""
            self._pushed_undrawn = False
            pixels = np.asarray(self.get_renderer().buffer_rgba())  # (H, W, 4) uint8
            self.shown_pixels = pixels.view(np.uint32).squeeze(2).copy()  # (H, W) uint32
            self._whole_png = encode_png(pixels, self.png_compress_level)

        def _settle_later(self) -> None:
            """Send the whole figure ``settle_seconds`` after the last diff frame (see above)."""
            if self._settle_timer is None:
                self._settle_timer = self.new_timer(interval=int(self.settle_seconds * 1000))
                self._settle_timer.single_shot = True
                self._settle_timer.add_callback(self._send_whole)
            self._settle_timer.start()  # (re)started: counts from the last diff frame

        def _send_whole(self) -> None:
            self.whole_frame_asked = True
            self.draw()

        def view_ready(self) -> None:
            if not self.resizable:
                self.send_state("resizable")

    return FastCanvas


def ipympl_canvas(figure):
    """Put ``figure`` on its own ipympl widget canvas (``FastCanvas``), outside pyplot, without
    toolbar, header, footer or resize handle; the notebook's matplotlib backend is untouched."""
    import warnings

    from ipympl.backend_nbagg import FigureManager

    canvas = _fast_canvas_class()(figure)
    with warnings.catch_warnings():  # ipympl's Toolbar uses a deprecated traitlets API
        warnings.simplefilter("ignore", DeprecationWarning)
        FigureManager(canvas, next(_figure_numbers))
    canvas.header_visible = False
    canvas.footer_visible = False
    canvas.toolbar_visible = False
    canvas.resizable = False
    canvas.capture_scroll = False
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
