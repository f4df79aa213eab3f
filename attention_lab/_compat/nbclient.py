"""nbclient's background tasks of a cell, which the grader cancels after a cell timed out.

nbclient leaves a timed-out cell's output poller running (its ``CellTimeoutError`` is a control
signal): it would read the next cell's messages. Its tasks have no handle outside the client, so
they are found by the names of nbclient's coroutines. Tested with nbclient 0.11.0
(requirements.txt); accepts ``>=0.11,<0.12``.
"""

from __future__ import annotations

import asyncio

from . import require

ACCEPTS = ("0.11", "0.12")
VERSION = require("nbclient", *ACCEPTS)

#: nbclient's coroutines that poll for a cell's outputs, its reply and the kernel's life
POLLERS = ("_async_poll_output_msg", "_async_poll_kernel_alive", "_async_poll_for_reply")


def cell_pollers() -> list[asyncio.Task]:
    """nbclient's polling tasks in the running event loop (but the current task)."""
    return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()
            and getattr(t.get_coro(), "__qualname__", "").endswith(POLLERS)]
