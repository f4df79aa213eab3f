"""The grader's side of what a graded kernel sends outside ZeroMQ: its harness conversation and
its stderr, each over a socket pair whose other end the kernel inherits (nothing on disk).

**The conversation** (one per harness cell, :class:`Channel`). The grader drives; the harness
(:func:`.probe.run_harness`) answers, one JSON object per line::

    kernel  {"hello": [ids]}                               the harness cell started
    grader  {"look": {"id", "kind", "names", "called"}}    describe the answer of one exercise
    kernel  {"head": record}                               (probe.answer_of)
    grader  {"call": {"fn", "args", "seconds"}}            one case: its arguments, only now
    kernel  {"ask": key, "rid": n, "args": [...]}          the answer calls the case's function
    grader  {"answer": {"rid": n, "out" | "raised"}}       ... which runs here, in the grader
    kernel  {"result": call record}
    grader  {"end": 1}

So a kernel learns a case only when it is its turn, in this run's order (the batch draws it from
the seed, :mod:`.cases`); the implementations a case hands to a student's test run only here,
and only while that case runs (a call through another case's key is refused and marks the
exercise, ``"foreign"``); the grader counts those calls itself (``"called"``, overwriting any
the kernel sends) and keeps the schedule (:class:`.probe.Schedule`) and the records.

**Bounds.** The grader reads at most ``MAX_BYTES`` from a kernel and no line above
``probe.MAX_MESSAGE_BYTES``; anything that is not the message it waits for (junk, a forged
record, a message out of turn, a line too long) *cuts* the channel: the grader stops reading it
and the exercises it had not recorded get an error saying why. The kernel's stderr
(:class:`KernelLog`) keeps its last ``LOG_TAIL`` bytes and is closed after ``LOG_MAX_BYTES``.
"""

from __future__ import annotations

import json
import secrets
import socket
import time

import numpy as np

from ..exercises import probe
from ..exercises.implementations import callable_of, is_marker

MAX_BYTES = 16 * 2 ** 20  # everything one kernel may send on its channel
MAX_ASKS = 500  # calls of a case's function, per case
#: numbers in the arguments of one such call: its answer (at most 260 KB, 4.3's) fits in a
#: socket's buffer even at Linux's default limit (tested), so the grader's send never waits
MAX_ASK_ELEMENTS = 4_000
LOG_TAIL = 2000
LOG_MAX_BYTES = 2 ** 20


class _Pair:
    """A socket pair: the grader reads its end without blocking, in the job's event loop; the
    kernel inherits the other end (``kernel_fd``, closed here once the kernel has it)."""

    def __init__(self) -> None:
        self.sock, self.kernel_end = socket.socketpair()
        self.sock.setblocking(False)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 2 ** 20)  # (Linux caps it)
        self.kernel_fd = self.kernel_end.fileno()  # the kernel's descriptor number too
        self.loop = None
        self.received = 0

    def attach(self, loop) -> None:
        """Read from now on (the kernel has started: its end is closed here)."""
        self.kernel_end.close()
        self.loop = loop
        loop.add_reader(self.sock.fileno(), self.drain)

    def drain(self) -> None:
        """Read what the kernel sent (also what the loop has not delivered yet)."""
        while self.loop is not None:
            try:
                chunk = self.sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if not chunk:  # the kernel is gone
                self.close()
                return
            self.received += len(chunk)
            self.take(chunk)

    def close(self) -> None:
        if self.loop is not None:
            self.loop.remove_reader(self.sock.fileno())
            self.loop = None
        self.sock.close()
        self.kernel_end.close()


class KernelLog(_Pair):
    """The kernel's stderr (bubblewrap's and the launcher's messages, and whatever the kernel
    writes to its original stderr): its last ``LOG_TAIL`` bytes; closed after
    ``LOG_MAX_BYTES`` (the kernel's next write there fails)."""

    def __init__(self) -> None:
        super().__init__()
        self.last = b""

    def take(self, chunk: bytes) -> None:
        self.last = (self.last + chunk)[-LOG_TAIL:]
        if self.received > LOG_MAX_BYTES:
            self.close()

    def tail(self) -> str:
        """The last line written (what a sandbox that did not start said)."""
        self.drain()
        lines = self.last.decode("utf-8", "replace").strip().splitlines()
        return lines[-1][:300] if lines else "no message"


class Cut(Exception):
    """The kernel sent something the grader did not ask for: the channel is closed."""


class Channel(_Pair):
    """One kernel's harness conversations. ``cases``: the run's cases per exercise id (in run
    order); ``records``: the complete records received, by id; ``started``: the exercises asked
    about, in order; ``current``: the one being asked about now (``None`` between exercises);
    ``problem``: why the channel was cut (``""`` while it is open)."""

    def __init__(self, cases: dict) -> None:
        super().__init__()
        self.cases = cases
        self.buffer = bytearray()
        self.records: dict[str, dict] = {}
        self.started: list[str] = []
        self.current: str | None = None
        self.problem = ""
        self.waiting = ""  # the message expected next: hello | head | result ("" = nothing)
        self.group: list = []
        self.keys: dict = {}  # key -> the function the running case hands over
        self.asked = 0  # calls of it so far

    # ------------------------------------------------------------ a conversation
    def begin(self, group: list, call_seconds: float, total_seconds: float) -> None:
        """The next harness cell asks about the exercises of ``group``."""
        self.group, self.call_seconds, self.total_seconds = list(group), call_seconds, \
            total_seconds
        self.current, self.waiting = None, "hello" if self.loop is not None else ""

    def _next_exercise(self) -> None:
        done = self.group.pop(0) if self.current is not None else None
        if done is not None and done.id not in self.records:
            self.records[done.id] = self.record
        self.current = None
        if not self.group:
            self.waiting = ""
            self._send({"end": 1})
            return
        ex = self.group[0]
        self.current = ex.id
        self.started.append(ex.id)
        fns = [c.fn for c in self.cases.get(ex.id, [])]
        called = sorted(set(fns)) if len(ex.answer_names) > 1 else [0]
        self.waiting = "head"
        self._send({"look": {"id": ex.id, "kind": ex.kind, "names": list(ex.answer_names),
                             "called": called}})

    def _next_case(self) -> None:
        i = self.schedule.next()
        if i is None:
            self.record = {**self.head, "calls": self.schedule.calls}
            if self.foreign:
                self.record["foreign"] = self.foreign
            self._next_exercise()
            return
        case = self.cases[self.current][i]
        self.keys = {}
        args = [self._hand_over(callable_of(a)) if is_marker(a) else probe.encode(a)
                for a in case.args]
        self.asked = 0
        self.waiting = "result"
        self._send({"call": {"fn": case.fn, "args": args,
                             "seconds": self.schedule.seconds(self.call_seconds)}})

    def _hand_over(self, fn) -> dict:
        """A function of the case's, as the kernel gets it: a key only this case may call."""
        key = secrets.token_hex(8)
        self.keys[key] = fn
        return {"__callable__": {"key": key, "name": fn.__name__}}

    def on_head(self, head) -> None:
        if not isinstance(head, dict):
            raise Cut("a description of an answer that is not an object")
        if head.get("kind") != "calls":
            self.record = head
            self._next_exercise()
            return
        self.head = {"kind": "calls", **({"values": head["values"]} if "values" in head
                                         else {})}
        self.foreign = 0
        self.schedule = probe.Schedule([c.fn for c in self.cases.get(self.current, [])],
                                       self.total_seconds, clock=time.monotonic)
        self._next_case()

    def on_result(self, rec) -> None:
        if not isinstance(rec, dict):
            raise Cut("a result that is not an object")
        rec.pop("called", None)
        if self.keys:
            rec["called"] = self.asked
        self.keys = {}
        self.schedule.record(rec)
        self._next_case()

    def on_ask(self, msg: dict) -> None:
        """A call of a function a case handed over: computed here, if it is this case's."""
        if self.waiting != "result":
            raise Cut("a call of the grader's function outside a case")
        self.asked += 1
        fn = self.keys.get(msg.get("ask"))
        if fn is None:
            self.foreign += 1
            answer = {"raised": {"type": "RuntimeError", "message": "this function was handed to "
                                 "another case of the grader's: it cannot be called here"}}
        elif self.asked > MAX_ASKS:
            answer = {"raised": {"type": "RuntimeError",
                                 "message": f"more than {MAX_ASKS} calls in one case"}}
        else:
            answer = _compute(fn, msg.get("args"))
        self._send({"answer": {"rid": msg.get("rid"), **answer}})

    # ------------------------------------------------------------ transport
    def take(self, chunk: bytes) -> None:
        if self.received > MAX_BYTES:
            return self.cut(f"it sent more than {MAX_BYTES // 2 ** 20} MB")
        start = len(self.buffer)
        self.buffer += chunk
        while self.loop is not None:
            end = self.buffer.find(b"\n", start)
            if end < 0:
                if len(self.buffer) > probe.MAX_MESSAGE_BYTES:
                    self.cut(f"a line longer than {probe.MAX_MESSAGE_BYTES // 2 ** 20} MB")
                return
            line = bytes(self.buffer[:end])
            del self.buffer[:end + 1]
            start = 0
            try:
                self.on_message(line)
            except Cut as exc:
                self.cut(str(exc))

    def on_message(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            raise Cut("a line that is not JSON") from None
        if isinstance(msg, dict) and sorted(msg) == ["args", "ask", "rid"]:
            return self.on_ask(msg)
        if not isinstance(msg, dict) or len(msg) != 1:
            raise Cut("a message that is not one of the harness's")
        (kind, body), = msg.items()
        if kind != self.waiting:
            raise Cut(f"a {kind!r} message when the grader expected "
                      f"{self.waiting or 'nothing'}")
        if kind == "hello":
            if body != [ex.id for ex in self.group]:
                raise Cut("a harness started for other exercises")
            self._next_exercise()
        elif kind == "head":
            self.on_head(body)
        else:
            self.on_result(body)

    def _send(self, msg: dict) -> None:
        data = json.dumps(msg, allow_nan=False, separators=(",", ":")).encode() + b"\n"
        try:
            sent = self.sock.send(data)
        except OSError:
            sent = 0
        if sent != len(data):
            raise Cut("it does not read what the grader sends")

    def cut(self, why: str) -> None:
        """Stop reading this kernel's channel, for good."""
        if not self.problem:
            self.problem = f"the notebook interfered with the grader's channel: {why}"
        self.waiting = ""
        self.close()


def _compute(fn, raw_args) -> dict:
    """``fn(*args)`` for a call a kernel asked for: arrays only, at most ``MAX_ASK_ELEMENTS``
    numbers; its output, or the exception it raised (type and message)."""
    try:
        if not isinstance(raw_args, list) or len(raw_args) > 8:
            raise TypeError("the grader's function takes a few arrays")
        args = [probe.decode(a) for a in raw_args]
        if any(isinstance(a, (probe.TooLarge, probe.Unsupported)) for a in args) \
                or sum(np.size(a) for a in args) > MAX_ASK_ELEMENTS:
            raise ValueError(f"the grader's function takes at most {MAX_ASK_ELEMENTS} numbers "
                             f"per call")
        with np.errstate(all="ignore"):
            return {"out": probe.encode(fn(*args))}
    except Exception as exc:
        return {"raised": {"type": type(exc).__name__, "message": str(exc)[:300]}}


__all__ = ["Channel", "KernelLog", "Cut", "MAX_BYTES", "MAX_ASKS", "MAX_ASK_ELEMENTS"]
