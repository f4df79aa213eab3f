"""``FastCanvas``: ipympl's widget canvas, tuned for explorers that redraw on every control change.

Its jobs, each a group of methods below:

- **Frame pacing** (:meth:`~FastCanvas.push_frame`, :meth:`~FastCanvas.draw`): a change draws and
  sends its frame at once when the browser has been idle for ``quiet_seconds``; ipympl's
  ``draw_idle`` first asks the browser, which asks back (one more round trip per change). Changes
  in quick succession (a drag, a held key) keep ipympl's pacing, in which the browser asks for the
  next frame when the last one arrived. A figure unchanged since it was last drawn (nothing pushed,
  not stale) is not drawn again: the frame the browser asks for is made from the pixels it has.
- **The frame** (:meth:`~FastCanvas.get_diff_image`): no frame depends on one the browser may have
  dropped. ipympl's page shows a frame once its PNG is decoded, and a frame that arrives before
  the last one is decoded replaces it unseen; a diff painted over a dropped frame leaves a wrong
  (at first load: a blank) figure. So a frame the browser did not ask for is whole (and not sent
  at all if no pixel changed), and ``settle_seconds`` after a diff frame with nothing since, the
  whole figure is sent once more.
- **Encoding** (:meth:`~FastCanvas.keep_whole_frame`): PNGs by
  :func:`~attention_lab.widgets._png.encode_png`, the same pixels as ipympl's frames in about a
  third of the time; a whole frame of a figure unchanged since its last whole frame is that PNG
  again (a page that opens asks for the whole figure twice; Voila's preheated kernels encode it
  before any viewer arrives).
- **Cooling** (:meth:`~FastCanvas.cool`): ``cool_seconds`` after its last frame an idle figure
  keeps only its last whole frame's PNG and its static layer, compressed; the pixel buffers and
  the labels' rasterised lines are freed and given back to the system. A page that opens gets the
  kept frame; the next change, or anyone asking for the pixels, draws the figure again.

The figure cannot be resized with the mouse: ipympl's front-end switches ``resizable`` on for
every live canvas; the canvas says again that it is off once the browser view is ready.
"""

from __future__ import annotations

import ctypes
import time

import numpy as np
from ipympl.backend_nbagg import Canvas
from matplotlib.backends.backend_agg import FigureCanvasAgg

from .._compat import matplotlib as mpl_compat
from .._compat.ipympl import FrameState
from ..plots._render import forget_text
from ._png import encode_png


class FastCanvas(FrameState, Canvas):
    """ipympl's widget canvas with faster frames for the browser (see the module docstring)."""

    png_compress_level = 1
    quiet_seconds = 0.2
    settle_seconds = 0.4
    cool_seconds = 5.0
    _last_frame = float("-inf")
    _unrequested = False  # the frame being drawn was not asked for by the browser
    _whole_png = None  # the last frame, when it was whole (None after a diff)
    _pushed_undrawn = True  # the explorer pushed a change not drawn yet
    _cold = False  # pixel buffers freed (cool); _whole_png shows the figure as it is

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._timers = {}

    # -- frame pacing ------------------------------------------------------------------------
    def push_frame(self) -> None:
        """Draw the figure for the browser now, or let the browser pace it."""
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
            # the renderer (or, cold, the kept frame) holds the figure as it is: send a frame of
            # it without drawing
            self.frame_pending = True
            self.manager.refresh_all()
            return
        self._pushed_undrawn, self._cold = False, False
        super().draw()

    def _later(self, seconds: float, step) -> None:
        """Run ``step`` once, ``seconds`` after the last call for it (the timer restarts)."""
        timer = self._timers.get(step.__name__)
        if timer is None:
            timer = self._timers[step.__name__] = self.new_timer(interval=int(seconds * 1000))
            timer.single_shot = True
            timer.add_callback(step)
        timer.start()

    # -- the frame: none, whole or a diff ------------------------------------------------------
    def get_diff_image(self):
        if not self.frame_pending:
            return None
        if self._cold:  # unchanged since its whole frame was kept (see draw)
            return self._sent(self._whole_png)
        self._later(self.cool_seconds, self.cool)
        pixels = np.asarray(self.get_renderer().buffer_rgba())  # (H, W, 4) uint8
        buff = pixels.view(np.uint32).squeeze(2)                # (H, W), one pixel each
        shown = self.shown_pixels
        same_shape = shown is not None and buff.shape == shown.shape
        asked_whole = self.whole_frame_asked
        if self._unrequested and not asked_whole and same_shape and np.array_equal(buff, shown):
            self.frame_pending = False
            return None  # nothing new to show
        if asked_whole or self._unrequested or not same_shape or (pixels[:, :, 3] != 255).any():
            return self._sent(self._whole_frame(buff, same_shape))
        return self._sent(self._diff_frame(buff), "diff")

    def _sent(self, png: bytes, mode: str = "full") -> bytes:
        """``png``, the frame about to be sent, booked as sent."""
        self.frame_pending = self.whole_frame_asked = False
        self._last_frame = time.monotonic()
        self.set_image_mode(mode)
        return png

    def _whole_frame(self, buff, same_shape: bool) -> bytes:
        settle = self._timers.get(self._send_whole.__name__)
        if settle is not None:
            settle.stop()
        if not (self._whole_png is not None and same_shape
                and np.array_equal(buff, self.shown_pixels)):
            self.keep_whole_frame()
        return self._whole_png

    def _diff_frame(self, buff) -> bytes:
        """The changed pixels (the others transparent); the whole figure follows once still."""
        shown = self.shown_pixels
        np.multiply(buff, np.not_equal(buff, shown), out=shown)  # (H, W) changed, others 0
        png = encode_png(shown.view(np.uint8).reshape((*shown.shape, 4)), self.png_compress_level)
        np.copyto(shown, buff)  # the frame the browser shows next (no new buffer per frame)
        self._later(self.settle_seconds, self._send_whole)
        self._whole_png = None
        return png

    def _send_whole(self) -> None:
        self.whole_frame_asked = True
        self.draw()

    # -- encoding --------------------------------------------------------------------------------
    def keep_whole_frame(self) -> None:
        """Encode the figure's current pixels (just drawn) as its next whole frame, without
        sending it."""
        self._pushed_undrawn = False
        pixels = np.asarray(self.get_renderer().buffer_rgba())  # (H, W, 4) uint8
        self.shown_pixels = pixels.view(np.uint32).squeeze(2).copy()  # (H, W) uint32
        self._whole_png = encode_png(pixels, self.png_compress_level)

    # -- cooling ---------------------------------------------------------------------------------
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

    def view_ready(self) -> None:
        if not self.resizable:
            self.send_state("resizable")


def _give_back_freed_memory() -> None:
    """Return the free pages of the C heap to the system (glibc's ``malloc_trim``): freed pixel
    buffers otherwise stay in the process's resident memory (glibc keeps them for its next
    allocations)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # another C library
        pass
