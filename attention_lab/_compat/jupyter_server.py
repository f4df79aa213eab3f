"""jupyter_server's watch of a kernel's activity, with the demo's own handler of each message.

jupyter_server keeps the stream it watches a kernel's IOPub with on the kernel, as
``_activity_stream``, and closes it there when the kernel stops (``stop_watching_activity``):
:func:`watch_activity` opens that stream with another handler. Tested with jupyter_server 2.21
(requirements.txt); accepts ``>=2.21,<3``.
"""

from __future__ import annotations

from . import require

ACCEPTS = ("2.21", "3")
VERSION = require("jupyter_server", *ACCEPTS)


def watch_activity(kernel, on_message) -> None:
    """Call ``on_message(parts)`` with each IOPub message of ``kernel`` (its ZeroMQ frames), on the
    stream jupyter_server closes when the kernel stops."""
    kernel._activity_stream = kernel.connect_iopub()
    kernel._activity_stream.on_recv(on_message)
