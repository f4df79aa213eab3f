"""jupyter_client internals: the grader's kernel client and manager
(:mod:`attention_lab.grading.runner`), and the frames of a kernel message on the wire (the demo's
activity watch).

Tested with jupyter_client 8.10 (requirements.txt); accepts ``>=8.10,<9``.
"""

from __future__ import annotations

import json

from . import require

ACCEPTS = ("8.10", "9")
VERSION = require("jupyter_client", *ACCEPTS)


def connected_socket(client, channel: str, identity=None):
    """A new socket of ``client`` connected to the kernel's ``channel`` (``"iopub"``, ...), not yet
    wrapped in a channel: the caller may set its options (a subscription) first."""
    return client._create_connected_socket(channel, identity=identity)


def kernel_info_received(client, reply: dict) -> None:
    """Let ``client`` take in a ``kernel_info_reply`` (the kernel's protocol version), as its own
    ``wait_for_ready`` does."""
    client._handle_kernel_info_reply(reply)


async def is_alive(client) -> bool:
    """Whether the kernel behind ``client`` is alive (its manager's, else the heartbeat's say)."""
    return await client._async_is_alive()


def set_kernel_spec(manager, spec) -> None:
    """Give ``manager`` its kernel spec directly (without looking one up by name)."""
    manager._kernel_spec = spec


class Launched:
    """Mixin for an ``AsyncKernelManager``: :meth:`launched` runs once the kernel's process has
    started, before the manager connects to it."""

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        await super()._async_launch_kernel(kernel_cmd, **kw)
        self.launched()

    def launched(self) -> None:
        """Called once the kernel's process has started."""


def kernel_pid(manager) -> int:
    """The process id of the kernel ``manager`` launched (its local provisioner's process)."""
    return manager.provisioner.process.pid


def message_json(parts: list[bytes]) -> tuple[bytes, bytes, bytes]:
    """The JSON of a message's header, parent header and content, from its frames as they come off
    the socket (identities, the delimiter, the signature, then the four dicts)."""
    from jupyter_client.session import DELIM

    at = parts.index(DELIM)
    return parts[at + 2], parts[at + 3], parts[at + 5]


def message_type(header_json: bytes) -> str | None:
    """The ``msg_type`` of a header given as JSON (None in an empty parent header)."""
    return json.loads(header_json).get("msg_type")
