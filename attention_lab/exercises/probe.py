"""Run a student's answer on given cases and record its raw outputs as plain JSON.

This module is the only exercise code that runs next to the student's code, and it holds nothing
an answer could use: no softmax, no attention, no implementation of anything a check compares
answers against (those stay in the checker's process: ``exercises/implementations.py``).
``check`` imports it; the grader does not import it inside a student's kernel but sends this
file's *source text* in its own harness cell and executes it in a fresh namespace, so it is
self-contained (standard library and numpy only, no import from ``attention_lab``) and a notebook
that monkeypatches ``attention_lab.exercises`` changes nothing. Whatever runs here is untrusted
anyway: the grader reads only the outputs it records (no pickle) and judges them in its own
process.

Records are JSON: arrays become ``{"__ndarray__": {"dtype", "shape", "data"}}`` with NaN and
infinities spelled as strings; exceptions, time-outs and unsupported objects have their own tags.
An argument that is a function (an implementation a student's test examines, the readout layer
of check 4.3) is ``{"__callable__": {"key", "name"}}``; whoever runs the probe says what a key
calls (``callables``): ``check`` a local function, the graded kernel the grader, over its channel.

Two ways in: :func:`probe` (``check``, in the notebook's own process: the cases in a list) and
:func:`run_harness` (the graded kernel: the grader drives, one case at a time, over the job's
channel; see :mod:`attention_lab.grading.channel` for the protocol). Both use :func:`answer_of`,
:class:`Schedule` and :func:`call`, so a notebook's ``check`` and the grader record alike.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import sys
import threading
import time
import warnings

import numpy as np

MAX_ELEMENTS = 100_000  # per record: larger outputs are reported, not stored
MAX_STRING = 20_000
MAX_ITEMS = 10_000
MAX_DEPTH = 12
#: the largest message the harness sends the grader (a larger output is reported as too large)
MAX_MESSAGE_BYTES = 4 * 2 ** 20
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()
_PROBE_GLOBALS = globals()


# ------------------------------------------------------------------ encoding
#: how a record spells the non-finite floats (Python's own spelling: str(x))
NON_FINITE = ("nan", "inf", "-inf")


def _float(x: float):
    x = float(x)
    return x if math.isfinite(x) else str(x)


def _encode_array(arr: np.ndarray, budget: list[int], origin: str = "numpy"):
    arr = np.asarray(arr)  # a subclass (np.matrix: always 2-D) as the plain array it holds
    dtype = arr.dtype.name
    if dtype not in DTYPES:
        return {"__unsupported__": f"array of dtype {arr.dtype}", "repr": _short_repr(arr),
                "shape": [int(n) for n in arr.shape]}
    if arr.size > budget[0]:
        return {"__too_large__": [int(n) for n in arr.shape], "dtype": dtype}
    budget[0] -= arr.size
    data = arr.reshape(-1).tolist()
    if arr.dtype.kind == "f":
        data = [_float(x) for x in data]
    out = {"dtype": dtype, "shape": [int(n) for n in arr.shape], "data": data}
    if origin != "numpy":
        out["origin"] = origin
    return {"__ndarray__": out}


def _short_repr(obj, limit: int = 200) -> str:
    try:
        text = repr(obj)
    except BaseException as exc:  # a hostile or broken __repr__
        text = f"<{type(obj).__name__} whose repr raised {type(exc).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


def _torch_tensor(obj):
    """``obj`` as a numpy array if it is a torch tensor (None if not); a tensor numpy cannot
    hold (bfloat16, sparse) as its ``__unsupported__`` record."""
    torch = sys.modules.get("torch")  # never import torch here
    if torch is not None and isinstance(obj, torch.Tensor):
        try:
            return obj.detach().cpu().numpy()
        except Exception as exc:
            return {"__unsupported__": f"torch tensor that numpy cannot read ({obj.dtype}: "
                                      f"{str(exc)[:80]})", "repr": _short_repr(obj)}
    return None


def encode(obj, budget: list[int] | None = None, depth: int = 0):
    """``obj`` as JSON-able data (see the module docstring)."""
    if budget is None:
        budget = [MAX_ELEMENTS]
    if depth > MAX_DEPTH:
        return {"__unsupported__": "nesting too deep", "repr": ""}
    if obj is None or isinstance(obj, (bool, str)):
        if isinstance(obj, str) and len(obj) > MAX_STRING:
            return {"__str__": obj[:MAX_STRING], "truncated": len(obj)}
        return obj
    if obj is Ellipsis:
        return {"__ellipsis__": True}
    if obj is MISSING:
        return {"__missing__": True}
    if isinstance(obj, int):
        return obj if abs(obj) < 2 ** 63 else {"__bigint__": str(obj)}
    if isinstance(obj, float):
        f = _float(obj)
        return f if isinstance(f, float) else {"__float__": f}
    if isinstance(obj, np.ndarray):
        return _encode_array(obj, budget)
    if isinstance(obj, np.generic):
        if obj.dtype.name in DTYPES:
            enc = _encode_array(np.asarray(obj), budget)
            return {"__npscalar__": enc["__ndarray__"]} if "__ndarray__" in enc else enc
        return {"__unsupported__": f"numpy scalar {obj.dtype}", "repr": _short_repr(obj)}
    as_numpy = _torch_tensor(obj)
    if isinstance(as_numpy, dict):
        return as_numpy
    if as_numpy is not None:
        return _encode_array(as_numpy, budget, origin="torch")
    if isinstance(obj, (list, tuple)):
        if len(obj) > MAX_ITEMS:
            return {"__too_large__": [len(obj)], "dtype": type(obj).__name__}
        budget[0] -= len(obj)
        return {"__seq__": "tuple" if isinstance(obj, tuple) else "list",
                "items": [encode(x, budget, depth + 1) for x in obj]}
    if isinstance(obj, dict):
        if len(obj) > MAX_ITEMS:
            return {"__too_large__": [len(obj)], "dtype": "dict"}
        items = []
        for k, v in obj.items():
            if not isinstance(k, str):
                return {"__unsupported__": f"dict with a {type(k).__name__} key",
                        "repr": _short_repr(obj)}
            items.append([k[:200], encode(v, budget, depth + 1)])
        return {"__dict__": items}
    if callable(obj):
        kind = "function" if hasattr(obj, "__code__") else type(obj).__name__
        return {"__unsupported__": kind, "repr": _short_repr(obj)}
    return {"__unsupported__": type(obj).__name__, "repr": _short_repr(obj)}


# ------------------------------------------------------------------ decoding
class Unsupported:
    """An output the probe could not turn into data (a generator, a function, an object)."""

    def __init__(self, what: str, text: str = "", shape=None):
        self.what, self.text, self.shape = what, text, shape

    def __repr__(self) -> str:
        return f"<{self.what}>"


class TooLarge:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype

    def __repr__(self) -> str:
        return f"<{self.dtype} of shape {self.shape}, too large to record>"


def _decode_array(spec) -> np.ndarray:
    if not isinstance(spec, dict):
        raise ValueError("array record is not an object")
    dtype, shape, data = spec.get("dtype"), spec.get("shape"), spec.get("data")
    if dtype not in DTYPES:
        raise ValueError(f"array dtype {dtype!r} is not allowed")
    if (not isinstance(shape, list) or len(shape) > 32
            or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_ELEMENTS
                       for n in shape)):
        raise ValueError("array shape is malformed")
    if not isinstance(data, list) or len(data) != math.prod(shape):
        raise ValueError("array data does not match its shape")
    if dtype.startswith("float"):
        if not all(x in NON_FINITE if isinstance(x, str) else
                   isinstance(x, (int, float)) and not isinstance(x, bool) for x in data):
            raise ValueError("bad float in array")
        return np.array([float(x) for x in data], dtype=np.float64).astype(dtype).reshape(shape)
    if dtype == "bool":
        if not all(isinstance(x, bool) for x in data):
            raise ValueError("bad bool in array")
        return np.array(data, dtype=bool).reshape(shape)
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in data):
        raise ValueError("bad integer in array")
    return np.array(data, dtype=dtype).reshape(shape)


def decode(data, depth: int = 0, *, callables=None):
    """Inverse of :func:`encode`, strict: anything unexpected raises ``ValueError``.

    ``callables(key, name)`` makes the function a ``{"__callable__": {"key", "name"}}`` argument
    stands for; without it (the grader reading a record) such an argument is refused.
    """
    if depth > MAX_DEPTH + 2:
        raise ValueError("record nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        raise ValueError("bare list in a record")
    if not isinstance(data, dict) or len(data) == 0:
        raise ValueError("malformed record")
    tag = next(iter(data))
    body = data[tag]
    if tag == "__ndarray__":
        return _decode_array(body)
    if tag == "__npscalar__":
        return _decode_array(body)[()]
    if tag == "__seq__":
        items = data.get("items")
        if body not in ("list", "tuple") or not isinstance(items, list):
            raise ValueError("malformed sequence")
        seq = [decode(x, depth + 1, callables=callables) for x in items]
        return tuple(seq) if body == "tuple" else seq
    if tag == "__dict__":
        if not isinstance(body, list):
            raise ValueError("malformed dict")
        out = {}
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                    and len(pair[0]) <= 200):  # (encode cuts a key at 200)
                raise ValueError("malformed dict item")
            out[pair[0]] = decode(pair[1], depth + 1, callables=callables)
        return out
    if tag == "__float__":
        if body not in NON_FINITE:
            raise ValueError("malformed float")
        return float(body)
    if tag == "__bigint__":
        if not (isinstance(body, str) and body.lstrip("-").isdigit() and len(body) < 400):
            raise ValueError("malformed integer")
        return int(body)
    if tag == "__str__":
        if not isinstance(body, str):
            raise ValueError("malformed string")
        return body
    if tag == "__ellipsis__":
        return Ellipsis
    if tag == "__missing__":
        return MISSING
    if tag == "__unsupported__":
        return Unsupported(str(body)[:200], str(data.get("repr", ""))[:300], data.get("shape"))
    if tag == "__too_large__":
        shape = body[:32] if isinstance(body, list) else []  # (as short as encode makes them)
        return TooLarge([int(n) for n in shape if isinstance(n, int) and 0 <= n < 2 ** 63],
                        str(data.get("dtype"))[:40])
    if tag == "__callable__":
        if callables is None or not (isinstance(body, dict) and isinstance(body.get("key"), str)
                                     and isinstance(body.get("name"), str)):
            raise ValueError("a function argument where none is expected")
        return callables(body["key"], body["name"][:40])
    raise ValueError(f"unknown tag {tag[:40]!r}")


# ------------------------------------------------------------------ calling student code
class _TimeLimit(BaseException):
    """Raised inside the student's code when its time is up (a BaseException, so that
    ``except Exception`` in the student's code does not swallow it)."""


_EXPIRED = [False]


def _tracer(frame, event, arg):
    """Installed only once the time is up: raises again at every line of the student's code, so
    even ``except BaseException: pass`` inside a loop cannot keep the call alive (the exception
    raised inside the handler escapes it). The probe's own frames are left alone."""
    if not _EXPIRED[0] or frame.f_globals is _PROBE_GLOBALS:
        return None
    if event in ("line", "call"):
        raise _TimeLimit()
    return _tracer


def _on_alarm(signum, frame):
    _EXPIRED[0] = True
    sys.settrace(_tracer)
    f = frame
    while f is not None:
        if f.f_globals is not _PROBE_GLOBALS:
            f.f_trace = _tracer
            f.f_trace_lines = True
        f = f.f_back
    raise _TimeLimit()


class _CappedText(io.TextIOBase):
    def __init__(self, cap: int = 2000):
        self.cap, self.chars, self.parts = cap, 0, []

    def writable(self) -> bool:
        return True

    def write(self, s) -> int:
        s = str(s)
        if self.chars < self.cap:
            self.parts.append(s[: self.cap - self.chars])
        self.chars += len(s)
        return len(s)

    def text(self) -> str:
        return "".join(self.parts)


def _snapshot(args):
    return [a.copy() if isinstance(a, np.ndarray) else None for a in args]


def _mutated(args, snaps) -> list[int]:
    changed = []
    for i, (a, s) in enumerate(zip(args, snaps)):
        if s is None:
            continue
        try:
            same = a.shape == s.shape and a.dtype == s.dtype and np.array_equal(
                a, s, equal_nan=a.dtype.kind == "f")
        except BaseException:
            same = False
        if not same:
            changed.append(i)
    return changed


def _where(tb) -> str:
    """The innermost traceback line that is not this module: where the student's code failed."""
    here = os.path.abspath(__file__) if "__file__" in globals() else "<attention-lab grader>"
    last = ""
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if os.path.abspath(fname) != here and "attention-lab grader" not in fname:
            last = f"line {tb.tb_lineno} in {tb.tb_frame.f_code.co_name}"
        tb = tb.tb_next
    return last


def _entered(watch, seen: set):
    """A profile function noting ``module.function`` for each call into a file of ``watch`` that
    does not come from another file of ``watch`` (the outermost call only)."""

    def hook(frame, event, arg):
        if (event == "call" and frame.f_code.co_filename in watch and len(seen) < 5
                and (frame.f_back is None or frame.f_back.f_code.co_filename not in watch)):
            seen.add(f"{frame.f_globals.get('__name__', '?')}.{frame.f_code.co_name}"[:100])

    return hook


def call(fn, args: tuple, seconds: float, watch=()) -> dict:
    """Call ``fn(*args)`` with a time limit, prints captured and numpy warnings silenced.

    Returns ``{"out": encoded}``, ``{"raised": {...}}`` or ``{"timeout": seconds}``, plus
    ``"printed"`` (number of characters printed), ``"mutated"`` (indices of array arguments the
    call changed in place) and ``"reference"`` (the functions of the files in ``watch`` that the
    call entered). Never raises (not even for ``SystemExit`` or ``KeyboardInterrupt``).
    """
    use_timer = (threading.current_thread() is threading.main_thread()
                 and hasattr(signal, "setitimer") and seconds and seconds > 0)
    snaps = _snapshot(args)
    printed = _CappedText()
    rec: dict = {}
    old_handler = None
    old_trace = sys.gettrace()
    old_profile = sys.getprofile()
    entered: set = set()
    start = time.perf_counter()

    def disarm():
        if use_timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
        _EXPIRED[0] = False
        if sys.gettrace() is _tracer:
            sys.settrace(old_trace)

    try:
        try:
            if use_timer:
                _EXPIRED[0] = False
                old_handler = signal.signal(signal.SIGALRM, _on_alarm)
                # re-fires every 50 ms until disarmed
                signal.setitimer(signal.ITIMER_REAL, float(seconds), 0.05)
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), \
                    np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if watch:
                    sys.setprofile(_entered(watch, entered))
                try:
                    out = fn(*args)
                finally:
                    if watch:
                        sys.setprofile(old_profile)
                try:
                    rec["out"] = encode(out)
                except Exception as exc:  # the recording failed, not the student's code
                    rec["out"] = {"__unsupported__": f"{type(out).__name__} that could not be "
                                                     f"recorded ({type(exc).__name__})",
                                  "repr": _short_repr(out)}
        finally:
            disarm()
    except _TimeLimit:
        rec = {"timeout": float(seconds)}
    except BaseException as exc:  # the student's exception, whatever it is
        try:
            message = str(exc)
        except BaseException:
            message = "<the exception's message could not be read>"
        rec = {"raised": {"type": type(exc).__name__, "message": message[:500],
                          "where": _where(exc.__traceback__)}}
    finally:
        while True:  # an alarm may still fire between the call and here
            try:
                disarm()
                if use_timer:
                    signal.signal(signal.SIGALRM, old_handler or signal.SIG_DFL)
                break
            except _TimeLimit:
                rec = rec or {"timeout": float(seconds)}
    rec["seconds"] = round(time.perf_counter() - start, 4)
    if printed.chars:
        rec["printed"] = printed.chars
    changed = _mutated(args, snaps)
    if changed:
        rec["mutated"] = changed
    if entered:
        rec["reference"] = sorted(entered)
    return rec


def answer_of(kind: str, obj, n_functions: int, called) -> tuple[dict, list | None]:
    """``(record, functions)`` for an answer ``obj`` of an exercise of ``kind``.

    A missing answer, a value or written answer, a tuple of the wrong length or a part that is
    not callable gives its complete record and ``None``. Otherwise the record holds ``"kind":
    "calls"`` and the parts no case calls (``called``: the indices that are called) as declared
    values (check 3.2's policy), and the functions are those to call.
    """
    if obj is MISSING:
        return {"kind": "missing"}, None
    if kind in ("value", "written"):
        try:
            return {"kind": kind, "value": encode(obj)}, None
        except BaseException as exc:
            return {"kind": kind, "value": {"__unsupported__": type(obj).__name__,
                                            "repr": f"could not be recorded: "
                                                    f"{type(exc).__name__}"}}, None
    if n_functions > 1:
        if not isinstance(obj, (tuple, list)) or len(obj) != n_functions:
            return {"kind": "shape", "what": type(obj).__name__,
                    "length": len(obj) if isinstance(obj, (tuple, list)) else None}, None
        fns = list(obj)
    else:
        fns = [obj]
    for i, fn in enumerate(fns):
        if i in called and not callable(fn):
            return {"kind": "notcallable", "index": i, "value": encode(fn)}, None
    values = {str(i): encode(fn) for i, fn in enumerate(fns) if i not in called}
    return {"kind": "calls", **({"values": values} if values else {})}, fns


class Schedule:
    """Which case of an exercise runs next: every case in order, except that a function whose
    first call raised ``NotImplementedError`` (still the stub) is not called again (its cases are
    recorded as ``{"skipped": "stub"}``), nothing runs after a time-out, and nothing starts once
    ``total_seconds`` have passed. ``fns[i]``: the function case ``i`` calls. Shared by
    ``check`` and the grader (which keeps the schedule in its own process)."""

    def __init__(self, fns: list[int], total_seconds: float, clock=time.perf_counter):
        self.fns, self.clock = list(fns), clock
        self.deadline = clock() + total_seconds
        self.calls: list[dict] = []  # one record per case run or skipped, in case order
        self.stubbed: set[int] = set()
        self.seen: set[int] = set()
        self.over = False

    def next(self) -> int | None:
        """The index of the next case to run, or ``None`` when the exercise is over."""
        while not self.over and len(self.calls) < len(self.fns):
            if self.fns[len(self.calls)] in self.stubbed:
                self.calls.append({"skipped": "stub"})
                continue
            if self.clock() >= self.deadline:
                self.over = True
                break
            return len(self.calls)
        return None

    def seconds(self, call_seconds: float) -> float:
        """The time limit of the next call."""
        return min(call_seconds, max(self.deadline - self.clock(), 0.05))

    def record(self, rec: dict) -> None:
        """The record of the case :meth:`next` gave."""
        which = self.fns[len(self.calls)]
        self.calls.append(rec)
        first = which not in self.seen
        self.seen.add(which)
        if "timeout" in rec:
            self.over = True
        elif first and isinstance(rec.get("raised"), dict) \
                and rec["raised"].get("type") == "NotImplementedError":
            self.stubbed.add(which)


def probe(kind: str, obj, inputs: list, *, n_functions: int = 1, call_seconds: float = 5.0,
          total_seconds: float = 20.0, watch=(), callables=None) -> dict:
    """Evaluate one answer in this process. ``inputs``: encoded cases ``{"args": [...], "fn": i}``.

    Written and value answers are recorded as they are; functions are called on every case the
    :class:`Schedule` gives (:func:`answer_of` says what is called). ``watch``: source files
    whose functions an answer must not call (each call's record names those it entered);
    ``callables``: see :func:`decode`.
    """
    fns_of_cases = [int(inp.get("fn", 0)) for inp in inputs]
    called = set(fns_of_cases) if n_functions > 1 else {0}
    record, fns = answer_of(kind, obj, n_functions, called)
    if fns is None:
        return record
    schedule = Schedule(fns_of_cases, total_seconds)
    while (i := schedule.next()) is not None:
        try:
            args = tuple(decode(a, callables=callables) for a in inputs[i]["args"])
        except Exception as exc:  # cannot happen with the checker's own inputs
            schedule.record({"raised": {"type": "InputError", "message": str(exc)[:200],
                                        "where": ""}})
            continue
        schedule.record(call(fns[fns_of_cases[i]], args, schedule.seconds(call_seconds), watch))
    record["calls"] = schedule.calls
    return record


# ------------------------------------------------------------------ the grader's harness
def _line(payload: dict) -> bytes:
    return (json.dumps(payload, allow_nan=False, separators=(",", ":")) + "\n").encode()


def _bounded(payload: dict) -> bytes:
    """``payload`` as one line, its output replaced by a marker when the line would be longer
    than the grader reads (``MAX_MESSAGE_BYTES``)."""
    data = _line(payload)
    if len(data) <= MAX_MESSAGE_BYTES:
        return data
    body = dict(payload.get("result") or payload.get("head") or {})
    for key in ("out", "value", "values"):
        if key in body:
            body[key] = {"__too_large__": [], "dtype": "output"}
    return _line({next(iter(payload)): body})


class _Link:
    """The kernel's end of the grader's channel (a socket it inherited): one JSON object per
    line each way, the grader asking and the harness answering."""

    def __init__(self, fd: int):
        self.fd, self.buffer, self.asked = fd, b"", 0

    def send(self, payload: dict) -> None:
        view = memoryview(_bounded(payload))
        while view:
            view = view[os.write(self.fd, view):]

    def receive(self) -> dict:
        while b"\n" not in self.buffer:
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise ConnectionError("the grader closed the channel")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def remote(self, key: str, name: str):
        """A function that the grader runs: each call sends its arguments and waits for the
        grader's answer (valid only during the case that handed it over)."""

        def remote(*args):
            self.asked += 1
            rid = self.asked
            ask = {"ask": key, "rid": rid, "args": [encode(a) for a in args]}
            if len(_line(ask)) > MAX_MESSAGE_BYTES:
                raise ValueError(f"{name} takes arguments of at most "
                                 f"{MAX_MESSAGE_BYTES // 2 ** 20} MB here")
            self.send(ask)
            while True:
                answer = self.receive().get("answer")
                if isinstance(answer, dict) and answer.get("rid") == rid:
                    break
            if "raised" in answer:
                kind = {"ValueError": ValueError, "TypeError": TypeError}.get(
                    str(answer["raised"].get("type")), RuntimeError)
                raise kind(str(answer["raised"].get("message", "")))
            return decode(answer.get("out"))

        remote.__name__ = remote.__qualname__ = name
        return remote


def run_harness(user_ns: dict, config: dict) -> None:
    """Answer the grader's questions about the exercises of ``config["exercises"]`` (each
    ``{"id", "kind", "names"}``) over the channel ``config["channel"]`` (a file descriptor).

    Runs inside the student's kernel, after the student's cells. The grader asks for one answer
    at a time (``look``: it is looked up in ``user_ns`` and described by :func:`answer_of`) and
    for one case at a time (``call``: the case's arguments arrive only now), until it says
    ``end``. Nothing here is secret and nothing it sends is trusted: the grader keeps the cases,
    the schedule and the implementations a case hands over, and judges outputs in its own process.
    """
    link = _Link(int(config["channel"]))
    link.send({"hello": [ex["id"] for ex in config["exercises"]]})
    fns: list = []
    while True:
        msg = link.receive()
        if "look" in msg:
            ex = msg["look"]
            try:
                objs = [user_ns.get(n, MISSING) for n in ex["names"]]
                obj = MISSING if any(o is MISSING for o in objs) else (
                    objs[0] if len(objs) == 1 else tuple(objs))
                head, fns = answer_of(ex["kind"], obj, len(objs), set(ex["called"]))
            except BaseException as exc:
                head = {"kind": "harness_error", "message": f"{type(exc).__name__}: {exc}"[:300]}
            link.send({"head": head})
        elif "call" in msg:
            case = msg["call"]
            try:
                args = tuple(decode(a, callables=link.remote) for a in case["args"])
                rec = call(fns[int(case["fn"])], args, float(case["seconds"]))
            except Exception as exc:
                rec = {"raised": {"type": "InputError", "message": str(exc)[:200], "where": ""}}
            link.send({"result": rec})
        else:
            return
