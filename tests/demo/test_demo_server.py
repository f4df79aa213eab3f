"""The demo's server for a lecture hall, end to end without a browser: a preheated kernel (not
culled between its page and the page's connection), its refill (not while a viewer moves
sliders), the viewer limit and its page, the trained model's tab on the shared model (no torch in
the viewer's kernel), culling of a viewer who vanished, the refusal of the websocket protocol that
hangs Voila, and nothing left behind. Viewers
are simulated (benchmarks/viewer.py: the messages a page sends); the page in a real browser is
tested in tests/browser."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import time
from pathlib import Path

import pytest

from attention_lab.demo import server as S

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
import harness as H  # noqa: E402

from benchmarks.viewer import Viewer  # noqa: E402


# ------------------------------------------------------------------------------------------------
# Without a server
# ------------------------------------------------------------------------------------------------


def test_viewers_count_connected_kernels_and_pages_on_their_way():
    clock = [100.0]
    v = S.Viewers(limit=2, pending_seconds=60, clock=lambda: clock[0])
    assert v.admit([]) and v.count([]) == 1          # a page served, not connected yet
    v.connected("k1")
    assert v.count(["k1"]) == 1                       # ... now its kernel counts, once
    assert v.admit(["k1"]) and v.count(["k1"]) == 2
    assert not v.admit(["k1"]) and v.turned_away == 1  # full
    clock[0] += 61                                     # the second page never connected
    assert v.count(["k1"]) == 1 and v.admit(["k1"])
    v.connected("k2")
    assert v.count(["k1", "k2"]) == 2
    assert v.count(["k2"]) == 1                        # k1's kernel ended (shut down, culled)
    assert S.Viewers(limit=0).admit(["a"] * 1000)      # 0: no limit


def test_a_refill_waits_for_a_quiet_room_unless_a_viewer_took_it():
    """On the viewers' clock (moved by hand): the refill waits while viewers are active, starts
    once they have been quiet for ``refill_quiet`` seconds, and at once when a viewer took it."""
    km = S.DemoKernelManager(refill_quiet=0.3)
    item = object()  # what Voila's pool holds for the kernel being started (its task)
    clock = [0.0]

    async def scenario():
        await asyncio.wait_for(km.quiet_room(item), 1)  # no server's viewers: no wait
        km.viewers = S.Viewers(clock=lambda: clock[0])
        km._pools = {"demo.ipynb": [item]}
        km.viewers.active()
        waiting = asyncio.ensure_future(km.quiet_room(item, poll=0.01))
        for _ in range(10):  # viewers moving sliders: a message every 0.05 s of their clock
            clock[0] += 0.05
            km.viewers.active()
            await asyncio.sleep(0.02)
        assert not waiting.done()                       # the room is busy: the refill waits
        clock[0] += 0.29
        await asyncio.sleep(0.05)
        assert not waiting.done()                       # quiet, but not yet long enough
        clock[0] += 0.02
        await asyncio.wait_for(waiting, 2)              # ... and starts once it is quiet
        # a viewer took the pool's item (no preheated kernel was left): it starts although busy
        km.viewers.active()
        waiting = asyncio.ensure_future(km.quiet_room(item, poll=0.01))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        km._pools["demo.ipynb"].remove(item)
        await asyncio.wait_for(waiting, 1)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario()).result()


def test_a_refill_prepares_nothing_before_the_room_is_quiet():
    """Voila's pool item (``_initialize`` without a kernel) waits for a quiet room before Voila
    prepares its page renderer; a restart (a kernel given) does not wait."""
    prepared = []
    clock = [0.0]

    class Preheating(S.DemoKernelManager):  # as Voila's factory subclasses the manager
        async def _initialize(self, notebook_path, kernel_id=None, **kwargs):
            prepared.append((notebook_path, kernel_id, clock[0]))
            return kernel_id

    async def scenario():
        km = Preheating(refill_quiet=0.3)
        km.viewers = S.Viewers(clock=lambda: clock[0])
        km.viewers.active()
        item = asyncio.ensure_future(km._initialize("demo.ipynb"))
        km._pools = {"demo.ipynb": [item]}
        assert await km._initialize("demo.ipynb", "k1") == "k1" and len(prepared) == 1
        await asyncio.sleep(0.1)
        assert len(prepared) == 1                     # the refill has not begun
        clock[0] += 0.31                              # the viewers have been quiet long enough
        await asyncio.wait_for(item, 2)
        assert prepared[1] == ("demo.ipynb", None, 0.31)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario()).result()


def test_a_kernel_that_dies_while_preheating_gives_its_slot_back():
    """A kernel that died while it ran the notebook is restarted by jupyter_client (without the
    notebook): its preheating slot goes to the next kernel at once, not after
    ``preheat_timeout`` (120 s: every other kernel, a viewer's included, waited that long)."""
    from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager

    class Kernel:  # what the manager reads of a kernel: its IOPub and its restarter's callbacks
        def __init__(self):
            self.callbacks = []

        def connect_iopub(self):
            return type("Stream", (), {"on_recv": lambda s, f: None, "closed": lambda s: False,
                                       "close": lambda s: None})()

        def add_restart_callback(self, callback, event="restart"):
            self.callbacks.append((callback, event))

        def restarted(self):  # what jupyter_client's restarter calls when the kernel died
            for callback, event in self.callbacks:
                if event == "restart":
                    callback()

    class Started(AsyncMappingKernelManager):  # a kernel started, as jupyter_server's manager
        async def start_kernel(self, **kwargs):
            kernel_id = f"k{len(self._kernels)}"
            self._kernels[kernel_id] = Kernel()
            return kernel_id

    class Manager(S.DemoKernelManager, Started):
        pass

    async def scenario():
        km = Manager(preheat_slots=1, preheat_timeout=3600)
        first = await km.start_kernel()
        second = asyncio.ensure_future(km.start_kernel())
        await asyncio.sleep(0.3)
        assert not second.done()          # one slot: the first kernel preheats
        km.get_kernel(first).restarted()  # ... and dies
        assert await asyncio.wait_for(second, 10) == "k1"

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario()).result()


def test_the_activity_watch_records_what_jupyter_servers_records(monkeypatch):
    """The lighter IOPub watch (kernel activity and execution state, read by the culler) leaves
    a kernel as jupyter_server's own watch does, message after message."""
    from jupyter_client.session import Session
    from jupyter_server.services.kernels import kernelmanager

    from datetime import datetime, timedelta, timezone

    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    clock = (start + timedelta(seconds=i) for i in range(10**6))  # every reading a new time
    monkeypatch.setattr(kernelmanager, "utcnow", lambda: next(clock))
    monkeypatch.setattr(S, "utcnow", lambda: next(clock))

    class Stream:
        def on_recv(self, callback):
            self.callback = callback

    class Kernel:
        execution_state = "starting"
        session = Session(key=b"a secret")

        def connect_iopub(self):
            self.stream = Stream()
            return self.stream

    km = S.DemoKernelManager()
    theirs, ours = Kernel(), Kernel()
    km._kernels = {"theirs": theirs, "ours": ours}
    kernelmanager.MappingKernelManager.start_watching_activity(km, "theirs")
    km.start_watching_activity("ours")
    session = Session(key=b"a secret")
    execute = session.msg("execute_request", {})
    comm = session.msg("comm_msg", {})
    info = session.msg("kernel_info_request", {})
    messages = [("status", {"execution_state": "starting"}, None),
                ("status", {"execution_state": "busy"}, info),
                ("kernel_info_reply", {}, info),
                ("status", {"execution_state": "idle"}, info),
                ("status", {"execution_state": "busy"}, execute),
                ("stream", {"name": "stdout", "text": "x"}, execute),
                ("display_data", {"data": {}}, None),
                ("status", {"execution_state": "idle"}, execute),
                ("stream", {"name": "stdout", "text": "x"}, None),
                ("status", {"execution_state": "busy"}, comm),
                ("comm_msg", {"comm_id": "c", "data": {}}, comm),
                ("status", {"execution_state": "idle"}, comm)]
    seen = []
    for msg_type, content, parent in messages:
        parts = [b"kernel.iopub", *session.serialize(session.msg(msg_type, content,
                                                                 parent=parent))]
        record = []
        for kernel in (theirs, ours):
            before = getattr(kernel, "last_activity", None)
            kernel.stream.callback(list(parts))
            record.append((kernel.execution_state, kernel.last_activity != before))
        assert record[0] == record[1], (msg_type, parent and parent["header"]["msg_type"])
        seen.append(record[0])
    # the sequence exercised both branches of each rule
    assert {state for state, _ in seen} == {"starting", "idle", "busy"}
    assert {moved for _, moved in seen} == {True, False}


def test_the_page_templates_are_compiled_once_for_every_renderer(monkeypatch):
    """Voila renders each preheated kernel's page with a new exporter (a new Jinja environment):
    the server's compiled templates serve them all (the demo's own template, found as the server
    finds it, through JUPYTER_PATH); a changed source or an environment of the other mode (sync or
    async) compiles anew."""
    import jinja2
    from voila import notebook_renderer
    from voila.paths import collect_template_paths

    from attention_lab.demo import launch

    compiled = []
    real = jinja2.Environment.compile

    def counting(self, source, name=None, *args, **kwargs):
        compiled.append(name)
        return real(self, source, name, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    monkeypatch.setattr(S, "TEMPLATES", S.CompiledTemplates())
    stock = notebook_renderer.VoilaExporter
    monkeypatch.setattr(notebook_renderer, "VoilaExporter", stock)
    S.use_compiled_templates()
    assert notebook_renderer.VoilaExporter is not stock
    assert issubclass(notebook_renderer.VoilaExporter, stock)
    monkeypatch.setenv("JUPYTER_PATH", str(launch.JUPYTER_DATA))
    paths = collect_template_paths(["voila", "nbconvert"], "lecture-demo", prune=True)
    pages = [notebook_renderer.VoilaExporter(template_name="lecture-demo", template_paths=paths)
             .environment.get_template("index.html.j2") for _ in range(3)]
    assert compiled == ["index.html.j2"] and pages[0] is not pages[1]
    assert pages[2].filename.startswith(str(launch.JUPYTER_DATA))

    cache, compiled[:] = S.CompiledTemplates(), []

    def load(source, enable_async=False):
        return jinja2.Environment(loader=jinja2.DictLoader({"t": source}), bytecode_cache=cache,
                                  enable_async=enable_async).get_template("t")

    assert [load(src).render(x=1) for src in ("a{{ x }}", "a{{ x }}", "b{{ x }}")] == [
        "a1", "a1", "b1"]
    assert compiled == ["t", "t"]                      # the second "a" came from the cache
    assert load("b{{ x }}", enable_async=True).environment.is_async and compiled == ["t"] * 3


def test_an_ablation_switches_each_addition_off_and_names_a_wrong_one(monkeypatch):
    """ATTENTION_LAB_DEMO_WITHOUT (the load benchmark's ablation): each named addition is off,
    the others stay on; a name it does not know is an error that lists the known ones."""
    class FakeHandler:  # what the static-file swap wraps
        pass

    def state():
        km = S.DemoKernelManager(refill_quiet=60, preheat_slots=1)
        km.viewers = S.Viewers(clock=lambda: 0.0)
        km.viewers.active()
        item = object()
        km._pools = {"demo.ipynb": [item]}  # as in the refill test above

        async def refill_waits():
            try:
                await asyncio.wait_for(km.quiet_room(item, poll=0.01), 0.05)
                return False
            except asyncio.TimeoutError:
                return True
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waits = pool.submit(asyncio.run, refill_waits()).result()
        return {"preheat-in-turn": km.slot_count() == 1, "quiet-refills": waits}

    monkeypatch.delenv(S.WITHOUT_ENV, raising=False)
    assert state() == {"preheat-in-turn": True, "quiet-refills": True}
    assert not any(S.switched_off(a) for a in S.ADDITIONS)
    for off in ("preheat-in-turn", "quiet-refills"):
        monkeypatch.setenv(S.WITHOUT_ENV, off)
        assert state() == {"preheat-in-turn": off != "preheat-in-turn",
                           "quiet-refills": off != "quiet-refills"}
    monkeypatch.setenv(S.WITHOUT_ENV, "viewer-limit, static-from-memory")
    assert [a for a in S.ADDITIONS if S.switched_off(a)] == ["viewer-limit",
                                                               "static-from-memory"]
    monkeypatch.setenv(S.WITHOUT_ENV, "lean-kernel")  # gone: see the server's docstring
    with pytest.raises(ValueError, match="unknown addition.*lean-kernel.*known: preheat-in-turn"):
        S.switched_off("quiet-refills")


def test_the_full_page_says_what_happened_and_retries():
    page = S.full_page(60, 60, "/?token=t&retry=1")
    assert "The demo is full" in page and "60 viewers are watching" in page
    assert "--max-viewers 60" in page
    assert 'http-equiv="refresh" content="30; url=/?token=t&amp;retry=1"' in page


# ------------------------------------------------------------------------------------------------
# A real server
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    """The demo launched with one preheated kernel, one viewer at most, culling after 3 s."""
    work = tmp_path_factory.mktemp("hall")
    folder = H.scratch_notebooks(work)
    server = H.voila_demo(folder / "demo.ipynb", work / "voila", "--pool", "1",
                          "--max-viewers", "1", "--cull-after", "3")
    server.timeout = 180
    server.start()
    try:
        deadline = time.monotonic() + 180
        while "preheated kernel(s) ready" not in server.log_path.read_text(errors="replace"):
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.5)
        yield server
    finally:
        seen = {p.pid for p in _tree(server)}
        left = server.stop()
        assert left == [], f"processes left behind: {left}"
        assert H.alive(seen) == []


def _tree(server):
    import psutil

    root = psutil.Process(server.proc.pid)
    return [root, *root.children(recursive=True)]


def _kernel_process(server, kernel_id: str):
    """The running process of kernel ``kernel_id``, or None (one that has exited, a zombie not yet
    reaped included, is not running)."""
    import psutil

    for p in _tree(server):
        try:
            if any(kernel_id in arg for arg in p.cmdline()):
                return p
        except (psutil.NoSuchProcess, psutil.AccessDenied):  # ZombieProcess is a NoSuchProcess
            continue
    return None


def _kernel_count(server) -> int:
    """How many kernels the server runs (viewers' and preheated)."""
    import psutil

    count = 0
    for p in _tree(server):
        try:
            count += any(arg.endswith(".json") and "kernel-" in arg for arg in p.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return count


def _get(port: int, path: str, token: str | None = None) -> tuple[int, str]:
    """The status and body of a GET of ``path``; with ``token``, authenticated as the cookie the
    page set authenticates a browser, and redirects followed as a browser follows them."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for _ in range(5 if token else 1):
            conn.request("GET", path, headers={"Authorization": f"token {token}"} if token else {})
            response = conn.getresponse()
            body = response.read().decode("utf-8", "replace")
            if not token or response.status not in (301, 302, 303, 307):
                break
            path = response.getheader("Location")
        return response.status, body
    finally:
        conn.close()


def _websocket_status(port: int, token: str, kernel_id: str, protocol: str = "") -> int:
    """The HTTP status of a kernel websocket upgrade offering ``protocol`` (none: the legacy
    protocol)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", f"/api/kernels/{kernel_id}/channels?token={token}",
                     headers={"Upgrade": "websocket", "Connection": "Upgrade",
                              "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                              "Sec-WebSocket-Version": "13",
                              **({"Sec-WebSocket-Protocol": protocol} if protocol else {})})
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_lecture_hall_server(hall):
    base = f"http://127.0.0.1:{hall.port}"
    # the preheating ended when the kernel had run the notebook (seen on its IOPub): a kernel whose
    # slot the 120 s timeout gave back has no preheating time, and the median would be nan
    import html
    import re

    preheat = re.search(r"preheated kernel\(s\) ready for viewers \((\S+) s of preheating",
                        hall.log_path.read_text())
    assert preheat and preheat.group(1) != "nan", hall.log_tail()
    # the kernels' five channels are unix sockets in a private folder, not TCP ports
    # another account of the machine could connect to (what listens on TCP is ipykernel's own
    # pipe for output of forked processes), and no 'without encryption' warning per kernel
    assert "without encryption" not in hall.log_path.read_text(), hall.log_tail()
    kernels = [p for p in _tree(hall) if "ipykernel" in " ".join(p.cmdline())]
    for p in kernels:
        assert len([c for c in p.net_connections("inet") if c.status == "LISTEN"]) <= 1
        paths = {c.laddr for c in p.net_connections("unix") if "-ipc-" in c.laddr}
        assert len(paths) == 5 and all(Path(a).is_absolute()
                                       and Path(a).parent.stat().st_mode & 0o077 == 0
                                       for a in paths), paths

    async def scenario():
        # the preheated kernel has been idle longer than --cull-after (3 s) when its page arrives,
        # and the page connects 2 s after its HTML (a browser loads its scripts first): the kernel
        # must not be culled in between
        await asyncio.sleep(5)
        first = Viewer(base, hall.token, timeout=120, connect_delay=2)
        assert await first.load(), first.error
        assert await first.move() is not None                    # a slider step repaints
        # the pool's refill waits while the viewer moves sliders, and starts once it stops
        end = time.monotonic() + 5
        while time.monotonic() < end:
            assert await first.move() is not None
            await asyncio.sleep(0.4)
        assert _kernel_count(hall) == 1, "a refill preheated while a viewer moved sliders"
        deadline = time.monotonic() + 30
        while _kernel_count(hall) < 2:
            assert time.monotonic() < deadline, "the pool was not refilled once viewers were quiet"
            await asyncio.sleep(0.2)
        second = Viewer(base, hall.token, timeout=30)
        assert not await second.load() and second.status == 503  # the demo is full
        assert "turned a viewer away: 1 viewer, --max-viewers 1" in hall.log_path.read_text()
        # the full page retries by itself every 30 s: the same viewer, not one more turned away
        status, page = _get(hall.port, f"/?token={hall.token}")
        assert status == 503
        refresh = re.search(r'http-equiv="refresh" content="30; url=([^"]*)"', page)
        status, _ = _get(hall.port, html.unescape(refresh.group(1)))
        assert status == 503
        assert hall.log_path.read_text().count("turned a viewer away") == 2, hall.log_tail()
        # ... and the browser then asks for the page's icon, which the full page does not name
        status, _ = _get(hall.port, "/favicon.ico", hall.token)
        assert status < 400, status
        # the trained model's tab: built on opening, decoded by the shared model, no torch here
        assert await first.open_tab(5, timeout=120) is not None
        kernel = _kernel_process(hall, first.kernel_id)
        assert "libtorch" not in Path(f"/proc/{kernel.pid}/maps").read_text()
        # the older websocket protocol (it hangs Voila 0.5.13) is refused; the server goes on
        assert _websocket_status(hall.port, hall.token, first.kernel_id) == 400
        # a page left open while the demo restarted reconnects with a token (its cookie) this
        # server does not know: refused, with a line, without a traceback
        assert _websocket_status(hall.port, "an-old-one", first.kernel_id, S.V1_PROTOCOL) == 403
        assert await first.move() is not None
        # a laptop closed: no goodbye to the server; the kernel is culled after 3 s idle
        await first.close(shutdown=False)
        deadline = time.monotonic() + 60
        while _kernel_process(hall, first.kernel_id) is not None:
            assert time.monotonic() < deadline, "the vanished viewer's kernel was not culled"
            await asyncio.sleep(0.5)
        # ... and the terminal says so, once the server has ended it (after its process exits)
        while "[demo] a viewer left without closing the page" not in hall.log_path.read_text():
            assert time.monotonic() < deadline, hall.log_tail()
            await asyncio.sleep(0.2)
        # there is room again once the culled kernel's shutdown has finished (its process exits
        # a moment before the server drops it from its kernels)
        deadline = time.monotonic() + 30
        while True:
            newcomer = Viewer(base, hall.token, timeout=150)
            if await newcomer.load():
                break
            assert newcomer.status == 503 and time.monotonic() < deadline, newcomer.error
            await asyncio.sleep(0.5)
        await newcomer.close()                          # a closed tab: shut down at once
        deadline = time.monotonic() + 30
        while _kernel_process(hall, newcomer.kernel_id) is not None:
            assert time.monotonic() < deadline, "a closed page's kernel was not shut down"
            await asyncio.sleep(0.2)

    # a thread of its own: an earlier test's event loop may still be marked running in this one
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario()).result()
    # the instructor's terminal shows none of these lines of an ordinary lecture: 'Notebook
    # demo.ipynb is not trusted' per page rendered (the preheated and the newcomer's), tornado's
    # 'websocket_ping_timeout (90000) cannot be longer' (jupyter_server gives it milliseconds)
    # when the first page opens, 'WARNING | Culling 'idle' kernel' for a viewer who left, a 403
    # (twice) for the favicon a browser asks after the full page, a '503 GET /?token=...' for
    # each viewer turned away (told by the demo's line) and each of their retries every 30 s;
    # nor a traceback for a refused request (an HTML error page jupyter_server could not draw)
    log = hall.log_path.read_text()
    for line in ("is not trusted", "websocket_ping", "Culling", "GET /favicon", "favicon.ico (",
                 "503 GET", "Uncaught exception in write_error"):
        assert line not in log, f"{line!r} on the terminal:\n{hall.log_tail()}"


def test_the_page_files_are_served_from_memory_and_compressed(hall):
    """Voila's scripts and the widget extensions' files: the second request of each is replayed
    from memory, gzip-compressed for a browser (the same bytes once decompressed)."""
    import gzip
    import http.client

    files = ["/voila/static/voila.js",
             "/voila/labextensions/jupyter-matplotlib/package.json",
             "/voila/templates/lab/static/index.css"]
    conn = http.client.HTTPConnection("127.0.0.1", hall.port, timeout=30)
    try:
        for path in files:
            bodies = []
            for encoding in ("identity", "gzip, deflate, br, zstd"):
                conn.request("GET", path, headers={"Accept-Encoding": encoding})
                response = conn.getresponse()
                assert response.status == 200, path
                bodies.append((response.getheader("Content-Encoding"), response.read()))
            (plain_encoding, plain), (encoding, packed) = bodies
            assert plain_encoding is None and encoding == "gzip", path
            assert gzip.decompress(packed) == plain and len(packed) < len(plain), path
        # a file that is not there is refused, without a traceback on the instructor's terminal
        for path in ("/voila/static/no-such-file.js", "/voila/labextensions/no-such-file.js"):
            conn.request("GET", path)
            response = conn.getresponse()
            assert response.status in (403, 404) and b"<" in response.read(), path
        assert "Uncaught exception in write_error" not in hall.log_path.read_text(), (
            hall.log_tail())
    finally:
        conn.close()


def test_the_ablation_rows_put_each_addition_against_the_server_without_it():
    """bench_demo's rows for ``--configs hall ablation`` (made-up rounds): each addition's rows
    hold the hall with everything as the value and the hall without it as the baseline."""
    from benchmarks import bench_demo as B

    assert B.configs_named(["hall", "ablation"]) == ["hall"] + [
        f"hall-without-{a}" for a in S.ADDITIONS]

    def round_(ready, cpu):
        return B.Round(n=10, ready=[ready] * 10, slider=[0.1] * 10, idle_rss_mib=[90.0],
                       cpu_arrival_s=cpu, voila_cpu_arrival_s=cpu / 2, load=(1.0, 1.0))

    results = {"hall": {10: round_(0.5, 0.2)}, "hall-without-quiet-refills": {10: round_(1.0, 0.3)},
               "preheat": {"hall": (3.0, 0.2), "hall-without-quiet-refills": (3.5, 0.4)}}
    rows = {r.what: r for r in B.rows(results)}
    ready = rows["[without-quiet-refills] N=10: page ready p95 (10 arriving in 3 s, simulated)"]
    assert (ready.value, ready.baseline, ready.ratio, ready.baseline_what) == (
        0.5, 1.0, 0.5, "without it")
    server = rows[f"[without-quiet-refills] {B.SERVER_PREHEAT}"]
    assert (server.value, server.baseline) == (0.2, 0.4)
    assert not [w for w in rows if w.startswith("[without-quiet-refills] N=10: USS")]  # not asked
    assert rows[B.SERVER_PREHEAT].value == 0.2 and rows[B.SERVER_PREHEAT].baseline is None
