"""Voila's internals the demo server (:mod:`attention_lab.demo.server`) builds on.

Voila has no public API for what the server adds, so this module names each hook it uses:

* the handler classes Voila registers (its page, its kernel websocket, its static files), which
  :func:`swap_handlers` replaces by subclasses (matched by class, as Voila lists them);
* its preheated pool: :func:`prepare_pool_item_with` runs a coroutine before Voila prepares a pool
  item (``VoilaKernelManager._initialize``), :func:`in_pool` says whether a pool item is still
  waiting in a pool (``_pools``), :func:`pool_size` is the configured pool size;
* :func:`render_pages_with_bytecode_cache`: every page renderer's exporter gets a Jinja bytecode
  cache (nbconvert's ``_create_environment``; the renderer looks ``VoilaExporter`` up in its
  module);
* :data:`WEBSOCKET_READS_V1_ONLY`: the websocket-protocol workaround's guard (see there);
* :func:`without_tornado_pings`: the kernel websocket with jupyter_server's pings only.

Tested with voila 0.5.13 on jupyter_server 2.21 (requirements.txt); accepts ``>=0.5.13,<0.6``.
Checked at import (:func:`attention_lab._compat.require`).
"""

from __future__ import annotations

from . import accepts, require

ACCEPTS = ("0.5.13", "0.6")
VERSION = require("voila", *ACCEPTS)

# noqa: E402 below: imported once the version is known to be one these names were read from
from jupyter_server.base.handlers import FileFindHandler  # noqa: E402
from voila import notebook_renderer  # noqa: E402
from voila.exporter import VoilaExporter  # noqa: E402
from voila.static_file_handler import (  # noqa: E402
    MultiStaticFileHandler,
    TemplateStaticFileHandler,
)
from voila.tornado.handler import TornadoVoilaHandler as PageHandler  # noqa: E402
from voila.tornado.kernel_websocket_handler import (  # noqa: E402
    VoilaKernelWebsocketHandler as KernelWebsocketHandler,
)

#: Voila's handlers of the page's scripts, styles and widget extensions
STATIC_HANDLERS = (TemplateStaticFileHandler, MultiStaticFileHandler, FileFindHandler)

#: Voila 0.5.8 to 0.5.13 (at least; no release after 0.5.13 tested) read every outgoing binary
#: websocket message as kernel websocket protocol v1 (``read_header_from_binary_message`` in
#: ``voila/tornado/kernel_websocket_handler.py``, added by voila-dashboards/voila#1489,
#: "Support progressive rendering"), whatever protocol the client chose: a client of the legacy
#: protocol (no subprotocol) makes it read its first 8 bytes as an offset count, loop over billions
#: of offsets, and hang the whole server. No upstream issue was found (searched Voila's issues for
#: the function and the symptom). The demo refuses such clients while this is True.
WEBSOCKET_READS_V1_ONLY = accepts("0.5.8", "0.6", VERSION)


def without_tornado_pings(protocol):
    """tornado's websocket protocol (``WebSocketProtocol13``, or None) with its own pings off.

    jupyter_server's ``WebSocketMixin`` (2.21) pings the page every ``ping_interval`` and closes
    the socket when a pong is ``ping_timeout`` late, in milliseconds (30000 and 90000); its
    properties of those names override tornado's, which tornado (6.5 on) passes to the protocol
    for pings of its own, in seconds: a ping every 8 hours, and a warning on the first page
    ('The websocket_ping_timeout (90000) cannot be longer than the websocket_ping_interval
    (30000)'; jupyter-server/jupyter_server#1612). No value is right in both units: the protocol
    gets none (``params``: tornado 6.6), jupyter_server's pings stay.
    """
    if protocol is not None:
        protocol.params.ping_interval = protocol.params.ping_timeout = None
    return protocol


def swap_handlers(handlers: list, swap: dict) -> list:
    """Voila's handler list with each handler class that is a key of ``swap`` replaced by its
    value (Voila's ``init_handlers`` lists ``(pattern, class, *options)``)."""
    return [(h[0], swap.get(h[1], h[1]), *h[2:]) for h in handlers]


def prepare_pool_item_with(manager, before) -> None:
    """Make Voila's preheating kernel manager await ``before(kernel_id)`` each time before it
    prepares a pool item (its page renderer, and its kernel when ``kernel_id`` is None: a refill).
    Does nothing for a manager without a pool (``--preheat_kernel`` off)."""
    prepare = getattr(manager, "_initialize", None)
    if prepare is None:
        return

    async def prepared_after(notebook_path, kernel_id=None, **kwargs):
        await before(kernel_id)
        return await prepare(notebook_path, kernel_id, **kwargs)

    manager._initialize = prepared_after


def in_pool(manager, item) -> bool:
    """Whether ``item`` (the task preparing a pool item) still waits in one of the manager's pools
    (False once a viewer took it)."""
    return any(item in pool for pool in getattr(manager, "_pools", {}).values())


def pool_size(manager) -> int:
    """The pool size Voila was configured with (0 without preheating)."""
    config = getattr(manager.parent, "voila_configuration", None)
    return config.default_pool_size if config is not None and config.preheat_kernel else 0


def render_pages_with_bytecode_cache(cache) -> None:
    """Make every page renderer of this process compile its templates through ``cache`` (a
    ``jinja2.BytecodeCache``): Voila makes a new exporter, with a new Jinja environment, for each
    page it renders."""

    class CachedTemplatesExporter(VoilaExporter):
        def _create_environment(self):
            environment = super()._create_environment()
            environment.bytecode_cache = cache
            return environment

    notebook_renderer.VoilaExporter = CachedTemplatesExporter


__all__ = ["VERSION", "PageHandler", "KernelWebsocketHandler", "STATIC_HANDLERS",
           "WEBSOCKET_READS_V1_ONLY", "swap_handlers", "prepare_pool_item_with", "in_pool",
           "pool_size", "render_pages_with_bytecode_cache", "without_tornado_pings"]
