"""pyzmq: the sockets a context still holds.

Tested with pyzmq 27.3 (requirements.txt); accepts ``>=27.3,<28``.
"""

from __future__ import annotations

from . import require

ACCEPTS = ("27.3", "28")
VERSION = require("pyzmq", *ACCEPTS)


def open_sockets(context) -> list:
    """The sockets of ``context`` not yet closed (pyzmq keeps them, weakly, to close them at
    ``term``)."""
    return [s for s in list(getattr(context, "_sockets", ())) if not s.closed]
