"""A simulated viewer of the lecture demo: what a browser page does, without the browser.

One :class:`Viewer` loads the demo page over HTTP (and the static files a real page fetched, when
given, as a browser fetches them: :func:`fetch_files`), connects to its kernel's websocket with
the protocol a browser speaks (Jupyter's kernel websocket protocol v1), asks the kernel for every
widget's state as ipywidgets' page does (``request_states`` on the ``jupyter.widget.control``
comm), and opens every ipympl canvas as ipympl's page code does (``refresh``,
``send_image_mode``, ``initialized``; a ``draw`` request is answered with ``draw``, a ``resize``
with ``refresh``). It is *ready* when the figure of the tab on screen (the first) has arrived:
what a viewer would see. :meth:`Viewer.move` moves a slider of that tab by one step, as a key
press does, and returns the time until the next frame of its figure.

Many viewers run in one asyncio loop (:mod:`benchmarks.bench_demo`); the messages are built with
jupyter_server's own v1 (de)serialisation. 127.0.0.1 only: the benchmark starts the servers.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid

V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"
#: what a browser sends: its HTTP/1.1 connections per server, the encodings it accepts
BROWSER_CONNECTIONS = 6
BROWSER_ENCODINGS = "gzip, deflate, br, zstd"
CONTROL_TARGET = "jupyter.widget.control"
CANVAS_MODEL = "MPLCanvasModel"
_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)


def _http():
    from tornado.httpclient import AsyncHTTPClient

    AsyncHTTPClient.configure(None, max_clients=500)
    return AsyncHTTPClient()


async def fetch_files(base: str, paths, headers: dict,
                      connections: int = BROWSER_CONNECTIONS) -> int:
    """GET every path of ``base`` (``http://HOST:PORT``) as a browser loads a page's files: over
    ``connections`` kept-alive HTTP/1.1 connections, accepting compressed bodies (which are not
    decompressed). Returns the bytes received; raises on a status other than 200."""
    host, port = base.split("//", 1)[1].rsplit(":", 1)
    lines = "".join(f"{k}: {v}\r\n" for k, v in
                    {"Host": f"{host}:{port}", "Accept-Encoding": BROWSER_ENCODINGS,
                     **headers}.items())
    todo = list(reversed(paths))
    received = 0

    async def connection():
        nonlocal received
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while todo:
                path = todo.pop()
                writer.write(f"GET {path} HTTP/1.1\r\n{lines}\r\n".encode())
                head = await reader.readuntil(b"\r\n\r\n")
                status, length = head.split(b" ", 2)[1], _LENGTH.search(head)
                if status != b"200" or length is None:
                    raise RuntimeError(f"GET {path}: {head.splitlines()[0].decode()}, "
                                       f"{'no Content-Length' if length is None else 'not 200'}")
                received += len(await reader.readexactly(int(length.group(1))))
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(min(connections, len(paths)))))
    return received


class Viewer:
    """One page of the demo at ``base`` (``http://127.0.0.1:PORT``) with ``token``.

    ``slider``: the CSS class of the control :meth:`move` moves (in the first tab);
    ``assets``: paths under ``base`` that a real page fetched (scripts, styles), fetched with the
    page; ``timeout``: seconds for loading before :meth:`load` gives up; ``connect_delay``: seconds
    between the page and its websocket (a browser's script loading).
    """

    def __init__(self, base: str, token: str, *, slider: str = "al-control-q1",
                 assets: tuple[str, ...] = (), timeout: float = 120.0,
                 connect_delay: float = 0.0):
        self.base, self.token, self.slider_class = base.rstrip("/"), token, slider
        self.assets, self.timeout = assets, timeout
        self.connect_delay = connect_delay  # seconds between the page and the websocket (a
        # browser loads its scripts first)
        self.session = uuid.uuid4().hex
        self.kernel_id: str | None = None
        self.states: dict = {}
        self.status: int | None = None   # HTTP status of the page (503: the demo is full)
        self.ready_s: float | None = None  # page request -> first frame of the first tab
        self.html_s: float | None = None   # page request -> page received
        self.latencies: list[float] = []   # slider moves: update sent -> next frame
        self.frames: dict[str, int] = {}   # canvas model id -> frames received
        self.error: str | None = None
        #: seconds from the page request to each step of loading (page, files, websocket,
        #: widget states, first frame)
        self.marks: dict[str, float] = {}
        self._ws = None
        self._reader = None
        self._frame_events: dict[str, asyncio.Event] = {}
        self._replies: dict[str, asyncio.Future] = {}
        self._waiting_draw: set[str] = set()

    # -- messages --------------------------------------------------------------------------------
    def _message(self, msg_type: str, content: dict, metadata: dict | None = None) -> bytes:
        from jupyter_server.services.kernels.connection.base import serialize_msg_to_ws_v1

        header = {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "viewer",
                  "session": self.session, "date": "", "version": "5.3"}
        parts = [json.dumps(x).encode() for x in (header, {}, metadata or {}, content)]
        return serialize_msg_to_ws_v1(parts, "shell")

    async def _send(self, msg_type: str, content: dict, metadata: dict | None = None) -> None:
        await self._ws.write_message(self._message(msg_type, content, metadata), binary=True)

    async def _custom(self, comm_id: str, content: dict) -> None:
        await self._send("comm_msg", {"comm_id": comm_id,
                                      "data": {"method": "custom", "content": content}})

    @staticmethod
    def _parse(raw: bytes) -> dict:
        from jupyter_server.services.kernels.connection.base import deserialize_msg_from_ws_v1

        channel, parts = deserialize_msg_from_ws_v1(raw)
        header, parent, _meta, content = (json.loads(p) for p in parts[:4])
        return {"channel": channel, "header": header, "parent": parent, "content": content,
                "buffers": parts[4:]}

    async def _read(self) -> None:
        """Answer the kernel as ipympl's page code does, and record every frame."""
        while True:
            raw = await self._ws.read_message()
            if raw is None:
                return
            if isinstance(raw, str):
                continue
            msg = self._parse(raw)
            kind, content = msg["header"]["msg_type"], msg["content"]
            if kind == "comm_msg":
                data, comm = content.get("data", {}), content.get("comm_id")
                method = data.get("method")
                if method == "update_states":
                    future = self._replies.pop("states", None)
                    if future is not None and not future.done():
                        future.set_result(data.get("states", {}))
                elif method == "custom" and isinstance(data.get("content"), dict):
                    payload = data["content"].get("data")
                    event = json.loads(payload) if isinstance(payload, str) else {}
                    event_type = event.get("type")
                    if event_type == "binary":
                        self.frames[comm] = self.frames.get(comm, 0) + 1
                        self._waiting_draw.discard(comm)
                        self._frame_event(comm).set()
                    elif event_type == "draw" and comm not in self._waiting_draw:
                        self._waiting_draw.add(comm)
                        await self._custom(comm, {"type": "draw"})
                    elif event_type == "resize":
                        await self._custom(comm, {"type": "refresh"})
                elif method == "update" and comm in self.states:
                    self.states[comm]["state"].update(data.get("state", {}))
            elif kind == "comm_open":
                data = content.get("data", {})
                self.states[content["comm_id"]] = {
                    "model_name": data.get("state", {}).get("_model_name"),
                    "state": dict(data.get("state", {}))}

    def _frame_event(self, comm: str) -> asyncio.Event:
        return self._frame_events.setdefault(comm, asyncio.Event())

    # -- the widget tree -------------------------------------------------------------------------
    def _children(self, model_id: str):
        state = self.states.get(model_id, {}).get("state", {})
        for ref in state.get("children", []) or []:
            if isinstance(ref, str) and ref.startswith("IPY_MODEL_"):
                yield ref[len("IPY_MODEL_"):]

    def subtree(self, model_id: str) -> list[str]:
        out, todo = [], [model_id]
        while todo:
            m = todo.pop()
            out.append(m)
            todo.extend(self._children(m))
        return out

    def tab_pages(self) -> list[str]:
        """The model ids of the tab pages, in order."""
        tabs = [m for m, s in self.states.items() if s.get("model_name") == "TabModel"]
        return list(self._children(tabs[0])) if tabs else []

    def find(self, root: str, *, model_name: str | None = None,
             dom_class: str | None = None) -> str | None:
        for m in self.subtree(root):
            s = self.states.get(m, {})
            if model_name and s.get("model_name") != model_name:
                continue
            if dom_class and dom_class not in (s.get("state", {}).get("_dom_classes") or []):
                continue
            return m
        return None

    # -- a viewer's life ---------------------------------------------------------------------------
    async def load(self) -> bool:
        """Load the page like a browser; True once the first tab's figure arrived."""
        from tornado.httpclient import HTTPClientError
        from tornado.websocket import websocket_connect

        http = _http()
        t0 = time.perf_counter()
        try:
            try:
                page = await http.fetch(f"{self.base}/?token={self.token}",
                                        request_timeout=self.timeout)
            except HTTPClientError as exc:
                self.status = exc.code
                self.error = f"HTTP {exc.code}"
                return False
            self.status = page.code
            self.html_s = self.marks["page"] = time.perf_counter() - t0
            text = page.body.decode("utf-8", "replace")
            found = re.search(r'"kernelId":\s*"([0-9a-f-]{36})"', text)
            if not found:
                self.error = "no kernel id in the page"
                return False
            self.kernel_id = found.group(1)
            await asyncio.wait_for(fetch_files(
                self.base, self.assets, {"Authorization": f"token {self.token}"}), self.timeout)
            self.marks["files"] = time.perf_counter() - t0
            await asyncio.sleep(self.connect_delay)
            url = (f"{self.base.replace('http', 'ws', 1)}/api/kernels/{self.kernel_id}/channels"
                   f"?token={self.token}&session_id={self.session}")
            self._ws = await websocket_connect(url, subprotocols=[V1_PROTOCOL],
                                               max_message_size=256 * 2**20)
            self._reader = asyncio.ensure_future(self._read())
            self.marks["websocket"] = time.perf_counter() - t0
            control = uuid.uuid4().hex
            self._replies["states"] = asyncio.get_running_loop().create_future()
            await self._send("comm_open", {"comm_id": control, "target_name": CONTROL_TARGET,
                                           "data": {}}, metadata={"version": "1.0.0"})
            await self._send("comm_msg", {"comm_id": control,
                                          "data": {"method": "request_states"}})
            states = await asyncio.wait_for(self._replies["states"], self.timeout)
            self.marks["states"] = time.perf_counter() - t0
            self.states.update({m: {"model_name": s.get("model_name"), "state": s.get("state", {})}
                                for m, s in states.items()})
            canvases = [m for m, s in self.states.items() if s["model_name"] == CANVAS_MODEL]
            for canvas in canvases:  # every canvas view is created, hidden tabs included
                for kind in ("refresh", "send_image_mode", "initialized"):
                    await self._custom(canvas, {"type": kind})
            pages = self.tab_pages()
            self.canvas = self.find(pages[0], model_name=CANVAS_MODEL) if pages else None
            self.control = self.find(pages[0], dom_class=self.slider_class) if pages else None
            if self.canvas is None:
                self.error = "the first tab shows no canvas"
                return False
            remaining = self.timeout - (time.perf_counter() - t0)
            await asyncio.wait_for(self._frame_event(self.canvas).wait(), max(remaining, 0.1))
            self.ready_s = self.marks["frame"] = time.perf_counter() - t0
            return True
        except Exception as exc:  # a timeout, a refused connection ...
            self.error = f"{type(exc).__name__}: {exc}"[:200]
            return False

    async def move(self, timeout: float = 30.0) -> float | None:
        """Move the slider one step (back at the ends); seconds until the next frame."""
        if self.control is None:
            raise RuntimeError(f"no control {self.slider_class!r} in the first tab")
        state = self.states[self.control]["state"]
        value, step = state["value"], state.get("step") or 1
        up = getattr(self, "_up", True)
        if value + step > state["max"] + 1e-9:
            up = False
        elif value - step < state["min"] - 1e-9:
            up = True
        self._up = up
        new = round(value + (step if up else -step), 10)
        state["value"] = new
        event = self._frame_event(self.canvas)
        event.clear()
        t0 = time.perf_counter()
        await self._send("comm_msg", {"comm_id": self.control, "data": {
            "method": "update", "state": {"value": new}, "buffer_paths": []}})
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except asyncio.TimeoutError:
            return None
        latency = time.perf_counter() - t0
        self.latencies.append(latency)
        return latency

    async def open_tab(self, index: int, timeout: float = 60.0) -> float | None:
        """Choose tab ``index`` (as a click does); seconds until a figure of it arrives."""
        tabs = [m for m, s in self.states.items() if s.get("model_name") == "TabModel"][0]
        before = set(self.states)
        t0 = time.perf_counter()
        await self._send("comm_msg", {"comm_id": tabs, "data": {
            "method": "update", "state": {"selected_index": index}, "buffer_paths": []}})
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            new = [m for m in set(self.states) - before
                   if self.states[m]["model_name"] == CANVAS_MODEL]
            for canvas in new:
                if not self.frames.get(canvas):
                    for kind in ("refresh", "send_image_mode", "initialized"):
                        await self._custom(canvas, {"type": kind})
                    try:
                        await asyncio.wait_for(self._frame_event(canvas).wait(),
                                               deadline - time.perf_counter())
                    except asyncio.TimeoutError:
                        return None
                return time.perf_counter() - t0
            await asyncio.sleep(0.02)
        return None

    async def close(self, shutdown: bool = True) -> None:
        """Leave: the page's unload asks Voila to shut the kernel down (``shutdown=False``: the
        viewer vanishes, as a closed laptop does, and only culling frees the kernel)."""
        if self._ws is not None:
            self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
        if shutdown and self.kernel_id:
            try:
                await _http().fetch(f"{self.base}/voila/api/shutdown/{self.kernel_id}",
                                    method="POST", body=b"", request_timeout=30,
                                    headers={"Authorization": f"token {self.token}"})
            except Exception:
                pass
