"""jupyter_client internals: the moment the grader's kernel manager
(:mod:`attention_lab.grading.runner`) learns that its kernel's process started (jupyter_client
has no public hook between the launch and the first connection), and the frames of a kernel
message on the wire (the demo's activity watch).

Tested with jupyter_client 8.10 (requirements.txt); accepts ``>=8.10,<9``.
"""

from __future__ import annotations

import json

from . import require

ACCEPTS = ("8.10", "9")
VERSION = require("jupyter_client", *ACCEPTS)


class Launched:
    """Mixin for an ``AsyncKernelManager``: :meth:`launched` runs once the kernel's process has
    started, before the manager connects to it."""

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        await super()._async_launch_kernel(kernel_cmd, **kw)
        self.launched()

    def launched(self) -> None:
        """Called once the kernel's process has started."""


def message_json(parts: list[bytes]) -> tuple[bytes, bytes, bytes]:
    """The JSON of a message's header, parent header and content, from its frames as they come off
    the socket (identities, the delimiter, the signature, then the four dicts)."""
    from jupyter_client.session import DELIM

    at = parts.index(DELIM)
    return parts[at + 2], parts[at + 3], parts[at + 5]


def message_type(header_json: bytes) -> str | None:
    """The ``msg_type`` of a header given as JSON (None in an empty parent header)."""
    return json.loads(header_json).get("msg_type")
