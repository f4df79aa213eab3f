"""ipympl's widget canvas with its frame state behind named attributes.

``FastCanvas`` (:mod:`attention_lab.widgets._fast_canvas`) decides when a frame is drawn and what
it holds. The state it reads and writes is private to matplotlib's WebAgg core, which ipympl's
``Canvas`` extends: whether a frame is waiting to be sent (``_png_is_old``), whether it must be
whole (``_force_full``), the pixels the browser shows (``_last_buff``), and the message of a browser
view that is ready (``_handle_message``). :class:`FrameState` names them.

Tested with ipympl 0.10.0 on matplotlib 3.11 (requirements.txt); accepts ipympl ``>=0.10,<0.11``.
On another ipympl the explorers fall back to the inline picture (:func:`tested`), with a note that
says which version to install.
"""

from __future__ import annotations

from . import UntestedVersion, require

ACCEPTS = ("0.10", "0.11")


def tested() -> str | None:
    """None when the installed ipympl is one this adapter was tested with, else why not (a
    sentence naming the version and what to install). Raises ImportError without ipympl."""
    try:
        require("ipympl", *ACCEPTS)
    except UntestedVersion as exc:
        return str(exc)
    return None


def _renamed(private: str, doc: str) -> property:
    """A public name for the WebAgg core's attribute ``private``, read and written."""
    return property(lambda self: getattr(self, private),
                    lambda self, value: setattr(self, private, value), doc=doc)


class FrameState:
    """Named access to the WebAgg core's frame state: a mixin before ipympl's ``Canvas``."""

    frame_pending = _renamed("_png_is_old", "A frame was drawn (or asked for) and not yet sent.")
    whole_frame_asked = _renamed("_force_full", "The next frame must be whole (not a diff): a "
                                 "resize, a refresh, a new view.")
    shown_pixels = _renamed("_last_buff", "The pixels of the last frame sent, ``(H, W)`` uint32 "
                            "(one RGBA pixel each), or None.")

    def _handle_message(self, object, content, buffers):
        super()._handle_message(object, content, buffers)
        if content.get("type") == "initialized":
            self.view_ready()

    def view_ready(self) -> None:
        """Called once a browser view of the canvas has said it is ready."""


def browser_message(canvas, content: dict) -> None:
    """Hand ``canvas`` a message as its browser view sends it (``{"type": "draw"}``, ...)."""
    canvas._handle_message(canvas, content, [])
