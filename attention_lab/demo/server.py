"""The demo's Voila server for a lecture hall: preheated kernels, a viewer limit, culling.

``python -m attention_lab demo`` runs ``python -m attention_lab.demo.server NOTEBOOK [options]``
(:func:`attention_lab.demo.launch.voila_command` builds Voila's options). It is Voila with eight
additions, each for a measured need; the rows that keep each one, against the server without it,
are in docs/maintainers/decisions.md (``python -m benchmarks.bench_demo --configs hall ablation``):

- **Preheating one kernel at a time, in order** (:class:`DemoKernelManager`). Voila's pool
  (``--preheat_kernel=True --pool_size=P``) starts all P kernels at once; each costs 2-5 s of CPU,
  so they finish together, late, and a refill wave competes with every viewer's slider. Here
  ``preheat_slots`` kernels (default: half the cores) preheat at a time, first started first ready.
- **Refills wait for a quiet room** (:meth:`DemoKernelManager.quiet_room`): a refill starts once no
  page was requested and no page sent a message for ``refill_quiet`` seconds (default 3), or at
  once when a viewer has already taken it.
- **A viewer limit** (:class:`GatedVoilaHandler`, ``--DemoVoila.max_viewers=N``): the N+1-th viewer
  gets a page that says the demo is full and retries by itself (HTTP 503).
- **Culling** is jupyter_server's (``--MappingKernelManager.cull_idle_timeout``): it catches
  viewers that vanished (Voila shuts a kernel down when its page closes normally). The terminal
  gets a line of the demo's own for it, not jupyter_server's warning.
- **Page templates compiled once** (:class:`CompiledTemplates`), shared by the new exporter Voila
  makes for each preheated kernel's page.
- **Websocket protocol v1 only** (:class:`DemoKernelWebsocketHandler`) on the versions of Voila
  that hang the whole server on a client of the older protocol
  (:data:`attention_lab._compat.voila.WEBSOCKET_READS_V1_ONLY`); browsers speak v1.
- **The page's files from memory** (:mod:`attention_lab.demo.static`), gzip-compressed once.
- **A lighter watch of kernel activity** (:meth:`DemoKernelManager.record_activity`).

``ATTENTION_LAB_DEMO_WITHOUT`` (:func:`switched_off`) turns each addition but culling and the
websocket check off, for the ablation. Lean kernels (ipykernel without its debugger and input
history) went that way: 8 % less memory per kernel, under the 10 % an addition must buy.

Everything else (tokens, the pool itself) is Voila's, configured on the command line; the page's
template, ``lecture-demo`` (``attention_lab/demo/jupyter``, found through JUPYTER_PATH), is Voila's
``lab`` without the stylesheets it links from another host; the login page an address without
the token leads to is the demo's own (``pages/login.html``).
What of Voila, jupyter_server and jupyter_client is not public API is named in
:mod:`attention_lab._compat` (``voila``, ``jupyter_server``, ``jupyter_client``), which checks
their versions.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import html
import json
import logging
import os
import re
import sys
import time
from collections import deque
from datetime import datetime, timezone
from pathlib import Path

import jinja2
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from jupyter_server.utils import url_path_join
from tornado import web
from traitlets import Float, Int
from voila.app import Voila

from .._compat import jupyter_client as jc_compat
from .._compat import jupyter_server as js_compat
from .._compat import voila as voila_compat
from .static import from_memory

V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"
#: the kernel id in the page Voila sends (its page config, which the page's scripts read)
KERNEL_ID = re.compile(r'"kernelId":\s*"([0-9a-f-]{36})"')
#: the key under which the server's :class:`Viewers` sit in the tornado settings
VIEWERS = "attention_lab_viewers"
#: the additions an ablation may switch off, by the names ``ATTENTION_LAB_DEMO_WITHOUT`` takes
ADDITIONS = ("preheat-in-turn", "quiet-refills", "viewer-limit", "compiled-templates",
             "static-from-memory", "light-activity-watch")
WITHOUT_ENV = "ATTENTION_LAB_DEMO_WITHOUT"
#: the lines of Voila's log an ordinary lecture would print (by their format), which the demo
#: leaves out: one per page rendered (Voila runs the notebook afresh, so the trust of its stored
#: outputs plays no part) and one per culled kernel (the demo tells it: see
#: :meth:`DemoKernelManager.cull_kernel_if_idle`)
QUIET = ("Notebook %s is not trusted",
         "Culling '%s' kernel '%s' (%s) with %d connections due to %s seconds of inactivity.")
#: the demo's own versions of jupyter_server's pages (its login and error pages)
PAGES = str(Path(__file__).resolve().parent / "pages")


def switched_off(addition: str) -> bool:
    """Whether ``addition`` (one of :data:`ADDITIONS`) is switched off for an ablation: named in
    the comma-separated ``ATTENTION_LAB_DEMO_WITHOUT``; an unknown name there is an error."""
    off = {w.strip() for w in os.environ.get(WITHOUT_ENV, "").split(",") if w.strip()}
    if off - set(ADDITIONS):
        raise ValueError(f"{WITHOUT_ENV}: unknown addition(s) {sorted(off - set(ADDITIONS))}; "
                         f"known: {', '.join(ADDITIONS)}")
    return addition in off


def utcnow() -> datetime:
    """Now, as jupyter_server's culler reads a kernel's last activity (an aware UTC time)."""
    return datetime.now(timezone.utc)


def tell_instructor(message: str) -> None:
    """One line for the instructor's terminal (Voila itself logs only warnings)."""
    print(f"[demo] {message}", file=sys.stderr, flush=True)


class Viewers:
    """Who is watching: kernels that a page connected to, plus pages served less than
    ``pending_seconds`` ago whose kernel has not connected yet (a page connects within a second or
    two; one that never does stops counting after that time). ``clock``: seconds, as
    ``time.monotonic`` (which it is but in tests)."""

    def __init__(self, limit: int = 0, pending_seconds: float = 60.0, clock=time.monotonic):
        self.limit = limit  # 0: no limit
        self.pending_seconds = pending_seconds
        self.clock = clock
        self.kernels: set[str] = set()
        self.pending: deque[float] = deque()
        self.turned_away = 0
        self.last_activity = float("-inf")  # clock() of the last page or message

    def active(self) -> None:
        """A page was requested or a page sent its kernel a message (a slider moved...)."""
        self.last_activity = self.clock()

    def quiet_for(self) -> float:
        """Seconds since the last page request or message from a page."""
        return self.clock() - self.last_activity

    def count(self, live_kernels) -> int:
        """The number of viewers, given the ids of the kernels still running."""
        self.kernels &= set(live_kernels)
        now = self.clock()
        while self.pending and now - self.pending[0] > self.pending_seconds:
            self.pending.popleft()
        return len(self.kernels) + len(self.pending)

    def admit(self, live_kernels, retry: bool = False) -> bool:
        """Count a new page in if there is room; False if the demo is full (``retry``: the full
        page asking again, a viewer turned away already)."""
        if self.limit and self.count(live_kernels) >= self.limit:
            self.turned_away += not retry
            return False
        self.pending.append(self.clock())
        return True

    def connected(self, kernel_id: str) -> None:
        """A page's kernel connected: it is a viewer now, no longer a pending page."""
        if kernel_id not in self.kernels:
            self.kernels.add(kernel_id)
            if self.pending:
                self.pending.popleft()


def full_page(viewers: int, limit: int, again: str) -> str:
    """The page a viewer gets when the demo is full: what happened, and that it retries (at the
    URL ``again``)."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="30; url={html.escape(again)}">
<title>The demo is full</title>
<style>body {{ font: 22px/1.5 system-ui, sans-serif; max-width: 44em; margin: 4em auto;
padding: 0 1em; color: #222; }} h1 {{ font-size: 34px; }}</style></head>
<body class="al-demo-full">
<h1>The demo is full</h1>
<p>{viewers} viewers are watching, the most this machine serves
(<code>--max-viewers {limit}</code>).</p>
<p>This page tries again by itself every 30 seconds; you get in as soon as someone leaves.
You can also follow the demo on the projector.</p>
</body></html>
"""


class DemoKernelManager(AsyncMappingKernelManager):
    """jupyter_server's kernel manager whose kernels preheat at most ``preheat_slots`` at a time.

    A kernel takes a slot before it starts and gives it back once it has run the notebook (an
    ``execute_request`` answered and no other one begun within half a second), died, or spent
    ``preheat_timeout`` seconds. Waiting kernels start in the order they asked (asyncio's semaphore
    is first come, first served), so Voila's pool fills front to back: the kernel a viewer takes
    is the one that is ready soonest.
    """

    preheat_slots = Int(1, config=True, help="kernels that may preheat at the same time")
    preheat_timeout = Float(120.0, config=True,
                         help="seconds after which a kernel gives its preheating slot back anyway")
    refill_quiet = Float(3.0, config=True,
                         help="a pool kernel starts only after viewers have been quiet (no page "
                              "requested, no message from a page) this many seconds, unless a "
                              "viewer has already taken it")

    #: who is watching (set by :class:`DemoVoila`); None: refills do not wait
    viewers: Viewers | None = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._slots: asyncio.Semaphore | None = None
        self.preheat_seconds: list[float] = []  # each kernel's preheating, start to notebook run
        self.preheated = 0  # kernels preheated for Voila's pool

        async def quiet_first(kernel_id):
            # a refill (no kernel yet) waits before Voila prepares its page renderer and starts
            # its kernel: both cost the server's CPU while viewers arrive
            if kernel_id is None:
                await self.quiet_room(asyncio.current_task())

        voila_compat.prepare_pool_item_with(self, quiet_first)

    def slot_count(self) -> int:
        """Kernels that may preheat at once (all of them in the ablation without this)."""
        return 10**6 if switched_off("preheat-in-turn") else max(1, self.preheat_slots)

    async def start_kernel(self, **kwargs):
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.slot_count())
        for_pool = (kwargs.get("env") or {}).get("VOILA_PREHEAT") == "True"
        await self._slots.acquire()
        started = time.monotonic()
        try:
            kernel_id = await super().start_kernel(**kwargs)
            idle = self._watch_executions(kernel_id)
        except BaseException:
            self._slots.release()
            raise
        asyncio.ensure_future(self._release_when_preheated(kernel_id, idle, started, for_pool))
        return kernel_id

    def start_watching_activity(self, kernel_id: str) -> None:
        """jupyter_server's watch of a kernel's IOPub, for culling, reading less of each message:
        see :meth:`record_activity`."""
        if switched_off("light-activity-watch"):
            return super().start_watching_activity(kernel_id)
        kernel = self.get_kernel(kernel_id)
        kernel.reason = ""
        kernel.last_activity = utcnow()
        js_compat.watch_activity(kernel, functools.partial(self.record_activity, kernel))

    def record_activity(self, kernel, parts: list[bytes]) -> None:
        """What jupyter_server records of an IOPub message (the kernel's last activity and its
        execution state), from the JSON of its header and parent header (and the content of a
        status message) only. jupyter_server's own watch checks each message's signature and
        parses every date in it, ~15 % of the server's CPU while a class arrives (py-spy); the
        messages come from the kernel's own IOPub socket, and the websocket relays them to the
        page unchecked anyway."""
        header, parent, content = jc_compat.message_json(parts)
        msg_type, parent_type = jc_compat.message_type(header), jc_compat.message_type(parent)
        if (self.track_message_type(msg_type) or self.track_message_type(parent_type)
                or kernel.execution_state == "busy"):
            self.last_kernel_activity = kernel.last_activity = utcnow()
        if msg_type == "status":
            state = json.loads(content)["execution_state"]
            if self.track_message_type(parent_type):
                kernel.execution_state = state
            elif kernel.execution_state == "starting" and state != "starting":
                kernel.execution_state = "idle"

    async def cull_kernel_if_idle(self, kernel_id: str) -> None:
        """jupyter_server's culling, told in a line of the demo's own: the kernel of a viewer who
        left is ended by design (``--cull-after``), not as a warning (:data:`QUIET` drops
        jupyter_server's line)."""
        await super().cull_kernel_if_idle(kernel_id)
        if kernel_id not in self:
            tell_instructor(f"a viewer left without closing the page: their kernel ended after "
                            f"{self.cull_idle_timeout} s idle")

    async def quiet_room(self, task, poll: float = 0.2) -> None:
        """Return once viewers have been quiet for ``refill_quiet`` seconds, or once ``task`` (the
        pool item being prepared) is no longer in Voila's pool: a viewer took it and waits for
        it."""
        if self.viewers is None or switched_off("quiet-refills"):
            return
        while self.viewers.quiet_for() < self.refill_quiet:
            if not voila_compat.in_pool(self, task):
                return
            await asyncio.sleep(poll)

    def _watch_executions(self, kernel_id: str) -> dict:
        """Listen on the kernel's IOPub for the end of each execution; returns a dict whose
        ``"at"`` is the time the last execution ended (None while one runs or none ran) and whose
        ``"died"`` turns True when the kernel died (jupyter_client restarts it, without the
        notebook)."""
        kernel = self.get_kernel(kernel_id)
        stream = kernel.connect_iopub()
        state = {"at": None, "stream": stream, "died": False}
        kernel.add_restart_callback(lambda: state.update(died=True), "restart")

        def on_message(parts):
            # only status messages are deserialized (a preheating sends hundreds of comm_open)
            _, fed = kernel.session.feed_identities(parts)
            if json.loads(fed[1])["msg_type"] != "status":
                return
            msg = kernel.session.deserialize(fed)
            if msg["parent_header"].get("msg_type") == "execute_request":
                busy = msg["content"]["execution_state"] == "busy"
                state["at"] = None if busy else time.monotonic()

        stream.on_recv(on_message)
        return state

    async def _release_when_preheated(self, kernel_id: str, idle: dict, started: float,
                                      for_pool: bool) -> None:
        try:
            while (time.monotonic() - started < self.preheat_timeout and kernel_id in self
                   and not idle["died"]):
                if idle["at"] is not None and time.monotonic() - idle["at"] > 0.5:
                    self.preheat_seconds.append(time.monotonic() - started)
                    break
                await asyncio.sleep(0.1)
        finally:
            self._slots.release()
            stream = idle["stream"]
            if not stream.closed():
                stream.close()
        if for_pool:
            self.preheated += 1
            if self.preheated == voila_compat.pool_size(self):
                times = sorted(self.preheat_seconds) or [float("nan")]
                tell_instructor(f"{self.preheated} preheated kernel(s) ready for viewers "
                                f"({times[len(times) // 2]:.1f} s of preheating each, median)")


class GatedVoilaHandler(voila_compat.PageHandler):
    """Voila's page handler behind the viewer limit.

    It also marks the kernel a page gets as active at that moment. A preheated kernel has been idle
    since its preheating, often for minutes, and its page connects seconds after receiving the HTML
    (a browser loads its scripts first): without this, the culler could shut the kernel down in
    between (found by the load benchmark's Chromium pages with ``--cull-after 30``).

    And it sets the ``_xsrf`` cookie, which Voila's page reads to ask for its kernel's shutdown
    when it closes; Voila's own handler never sets it, so that request was refused (403, '_xsrf'
    argument missing; voila-dashboards/voila#1458) and a closed tab's kernel and viewer's place
    stayed taken until culled.
    """

    _kernel_seen = False

    def write(self, chunk):
        if not self._kernel_seen and isinstance(chunk, (str, bytes)):
            text = chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else chunk
            found = KERNEL_ID.search(text)
            if found:
                self._kernel_seen = True
                with contextlib.suppress(KeyError):
                    kernel = self.kernel_manager.get_kernel(found.group(1))
                    kernel.last_activity = utcnow()
        return super().write(chunk)

    @web.authenticated
    async def get(self, path=None):
        viewers: Viewers = self.settings[VIEWERS]
        viewers.active()
        self.xsrf_token  # noqa: B018 (sets the _xsrf cookie: see the class docstring)
        retry = self.get_query_argument("retry", None) is not None  # the full page's own
        if not path and not viewers.admit(self.kernel_manager.list_kernel_ids(), retry):
            count = viewers.count(self.kernel_manager.list_kernel_ids())
            if not retry:
                tell_instructor(f"turned a viewer away: {count} viewer{'s' * (count != 1)}, "
                                f"--max-viewers {viewers.limit} ({viewers.turned_away} turned "
                                f"away so far)")
            self.set_status(503)
            self.set_header("Retry-After", "30")
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("Cache-Control", "no-store")
            uri = self.request.uri
            self.finish(full_page(count, viewers.limit,
                                  uri if retry else f"{uri}{'&' if '?' in uri else '?'}retry=1"))
            return
        await super().get(path)


class DemoKernelWebsocketHandler(voila_compat.KernelWebsocketHandler):
    """Voila's kernel websocket, for protocol v1 clients only on the versions of Voila that hang
    on others (:data:`attention_lab._compat.voila.WEBSOCKET_READS_V1_ONLY`); counts the page's
    kernel as a viewer once it connects."""

    async def get(self, kernel_id):
        offered = [p.strip() for p in self.request.headers.get("Sec-WebSocket-Protocol", "")
                   .split(",")]
        if voila_compat.WEBSOCKET_READS_V1_ONLY and V1_PROTOCOL not in offered:
            raise web.HTTPError(400, f"this server speaks the kernel websocket protocol "
                                     f"{V1_PROTOCOL} only")
        await super().get(kernel_id)

    def get_websocket_protocol(self):
        # jupyter_server pings the page (every 30 s; the socket closed after 90 s without an
        # answer, which frees a vanished viewer's kernel for culling); tornado's own pings read
        # the same two settings in seconds and warned about them (see voila_compat)
        return voila_compat.without_tornado_pings(super().get_websocket_protocol())

    async def open(self, kernel_id):
        await super().open(kernel_id)
        self.settings[VIEWERS].connected(kernel_id)
        self.settings[VIEWERS].active()

    def on_message(self, message):
        self.settings[VIEWERS].active()
        return super().on_message(message)


class NoIcon(web.RequestHandler):
    """``/favicon.ico``, which a browser asks for after a page that names no icon (the full page):
    no icon, and no line on the instructor's terminal (Voila redirected it to its files, which
    refused it: a 403, logged twice)."""

    def get(self):
        self.set_status(204)
        self.set_header("Cache-Control", "max-age=86400")


class CompiledTemplates(jinja2.BytecodeCache):
    """Jinja's compiled templates kept in memory and shared by every Jinja environment of the
    server (keyed by template, source checksum and the environment's async mode)."""

    def __init__(self):
        self.codes: dict = {}

    def load_bytecode(self, bucket) -> None:
        found = self.codes.get((bucket.environment.is_async, bucket.key))
        if found is not None and found[0] == bucket.checksum:
            bucket.code = found[1]

    def dump_bytecode(self, bucket) -> None:
        self.codes[(bucket.environment.is_async, bucket.key)] = (bucket.checksum, bucket.code)


#: the server's compiled page templates
TEMPLATES = CompiledTemplates()


def use_compiled_templates() -> None:
    """Make Voila render every page (each preheated kernel's) with :data:`TEMPLATES`."""
    voila_compat.render_pages_with_bytecode_cache(TEMPLATES)


class DemoVoila(Voila):
    """Voila with the demo's handlers (see the module docstring)."""

    name = "voila"  # Voila's own config files and log name
    max_viewers = Int(0, config=True, help="viewers served at the same time (0: no limit)")

    def init_settings(self):
        settings = super().init_settings()
        self.log.addFilter(lambda r: r.msg not in QUIET)
        # a page that says the demo is full (the viewer turned away is told as a line of the
        # demo's own) is not also logged as an error, nor each of its retries every 30 s
        logging.getLogger("tornado.access").addFilter(lambda r: not (r.args and r.args[0] == 503))
        settings[VIEWERS] = Viewers(0 if switched_off("viewer-limit") else self.max_viewers)
        # the server's pages of the demo's own (pages/: the login page a wrong token or an old
        # link leads to, the page of a refused request) before jupyter_server's; Voila's page
        # renderer has a Jinja environment of its own
        server_pages = settings["jinja2_env"]
        server_pages.loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(PAGES),
                                                  server_pages.loader])
        self.kernel_manager.viewers = settings[VIEWERS]
        return settings

    def init_handlers(self):
        swap = {voila_compat.PageHandler: GatedVoilaHandler,
                voila_compat.KernelWebsocketHandler: DemoKernelWebsocketHandler}
        if not switched_off("static-from-memory"):
            swap.update({h: from_memory(h) for h in voila_compat.STATIC_HANDLERS})
        return [(url_path_join(self.server_url, "favicon.ico"), NoIcon),
                *voila_compat.swap_handlers(super().init_handlers(), swap)]


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if not switched_off("compiled-templates"):
        use_compiled_templates()
    DemoVoila.launch_instance(argv=argv)


if __name__ == "__main__":
    main()
