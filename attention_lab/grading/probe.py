"""Run a student's answer on given inputs and record its raw outputs as plain JSON.

This module is the only exercise code that runs next to the student's code. It is
self-contained (standard library and numpy only, no import from ``attention_lab``) because the
grader does not import it inside a student's kernel: it sends this file's *source text* in its
own harness cell and executes it in a fresh namespace, so a notebook that monkeypatches
``attention_lab.exercises`` changes nothing. Whatever runs here is untrusted anyway: the grader
reads only the outputs it records (no pickle) and judges them in its own process.

Records are JSON: arrays become ``{"__ndarray__": {"dtype", "shape", "data"}}`` with NaN and
infinities spelled as strings; exceptions, time-outs and unsupported objects have their own tags.
Inputs may name an implementation for a student's test to examine (``{"__impl__": code}``) or a
readout layer for a student's function to call (``{"__readout__": {arrays}}``); the kernel turns
them into callables (:func:`make_impl`, :func:`make_readout`), the grader into markers.
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

FORMAT = 1
MAX_ELEMENTS = 1_000_000  # per record: larger outputs are reported, not stored
MAX_STRING = 20_000
MAX_ITEMS = 10_000
MAX_DEPTH = 12
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()
_PROBE_GLOBALS = globals()


# ------------------------------------------------------------------ encoding
def _float(x: float):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _encode_array(arr: np.ndarray, budget: list[int], origin: str = "numpy"):
    dtype = arr.dtype.name
    if dtype not in DTYPES:
        return {"__unsupported__": f"array of dtype {arr.dtype}", "repr": _short_repr(arr),
                "shape": [int(n) for n in arr.shape]}
    if arr.size > budget[0]:
        return {"__too_large__": [int(n) for n in arr.shape], "dtype": dtype}
    budget[0] -= arr.size
    flat = arr.reshape(-1)
    if arr.dtype.kind == "f":
        data = [_float(x) for x in flat.tolist()]
    else:
        data = flat.tolist()
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
    torch = __import__("sys").modules.get("torch")  # never import torch here
    if torch is not None and isinstance(obj, torch.Tensor):
        return obj.detach().cpu().numpy()
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


class Impl:
    """An implementation handed to a student's test (checks 1.4, 2.6, 3.2), by code letter."""

    def __init__(self, code: str):
        self.code = code

    def __repr__(self) -> str:
        return f"Impl({self.code!r})"


READOUT_PARAMS = ("h", "W_c", "b_c", "W_o", "b_o")


class Readout:
    """A readout layer handed to a student's function (check 4.3): its parameters (numpy arrays
    named as :data:`READOUT_PARAMS`); :func:`make_readout` makes the callable."""

    def __init__(self, params: dict):
        self.params = params

    def __repr__(self) -> str:
        h, W_o = self.params["h"], self.params["W_o"]
        return f"Readout(decoder state of width {h.shape[0]}, {W_o.shape[0]} output symbols)"


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
        vals = []
        for x in data:
            if isinstance(x, str):
                if x not in ("nan", "inf", "-inf"):
                    raise ValueError("bad float in array")
                vals.append(float(x))
            elif isinstance(x, (int, float)) and not isinstance(x, bool):
                vals.append(float(x))
            else:
                raise ValueError("bad float in array")
        return np.array(vals, dtype=np.float64).astype(dtype).reshape(shape)
    if dtype == "bool":
        if not all(isinstance(x, bool) for x in data):
            raise ValueError("bad bool in array")
        return np.array(data, dtype=bool).reshape(shape)
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in data):
        raise ValueError("bad integer in array")
    return np.array(data, dtype=dtype).reshape(shape)


def decode(data, depth: int = 0, *, impls: bool = False):
    """Inverse of :func:`encode`, strict: anything unexpected raises ``ValueError``.

    ``impls=True`` turns ``{"__impl__": code}`` into a callable attention (only inside the kernel
    that runs a student's test); otherwise into an :class:`Impl` marker.
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
        seq = [decode(x, depth + 1, impls=impls) for x in items]
        return tuple(seq) if body == "tuple" else seq
    if tag == "__dict__":
        if not isinstance(body, list):
            raise ValueError("malformed dict")
        out = {}
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise ValueError("malformed dict item")
            out[pair[0]] = decode(pair[1], depth + 1, impls=impls)
        return out
    if tag == "__float__":
        if body not in ("nan", "inf", "-inf"):
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
        shape = body if isinstance(body, list) else []
        return TooLarge([int(n) for n in shape if isinstance(n, int)], str(data.get("dtype")))
    if tag == "__impl__":
        if not isinstance(body, str) or body not in IMPL_CODES:
            raise ValueError("unknown implementation code")
        return make_impl(body) if impls else Impl(body)
    if tag == "__readout__":
        if not isinstance(body, dict) or sorted(body) != sorted(READOUT_PARAMS):
            raise ValueError("malformed readout")
        params = {k: _decode_array(v.get("__ndarray__") if isinstance(v, dict) else None)
                  for k, v in body.items()}
        return make_readout(params) if impls else Readout(params)
    raise ValueError(f"unknown tag {tag[:40]!r}")


# ------------------------------------------------------------------ implementations for tests
#: Implementations handed to a student's test: ``attend(query, keys, values) -> context`` (codes
#: A-F, check 1.4) and ``masked_softmax(scores, mask) -> weights`` (codes G-O, checks 2.6 and
#: 3.2). Neutral codes; which of them a correct test must accept is decided by the grader, not here.
IMPL_CODES = tuple("ABCDEFGHIJKLMNO")


def _softmax(e, axis=-1):
    e = e - np.max(e, axis=axis, keepdims=True)
    w = np.exp(e)
    return w / w.sum(axis=axis, keepdims=True)


def _attend(code: str):
    def attend(query, keys, values):
        q = np.asarray(query, dtype=float)
        K = np.asarray(keys, dtype=float)
        V = np.asarray(values, dtype=float)
        if q.ndim != 1 or K.ndim != 2 or V.ndim != 2 or K.shape[1] != q.shape[0] \
                or V.shape[0] != K.shape[0]:
            raise ValueError(
                f"attend(query, keys, values) takes query (D,), keys (S, D) and values (S, D_v); "
                f"got shapes {q.shape}, {K.shape}, {V.shape}")
        if code == "A":
            e = K @ q
        elif code == "B":
            e = np.zeros(K.shape[0])
        elif code == "C":
            e = np.sqrt((K * K).sum(axis=1))
        elif code == "D":
            e = (K @ q) / 0.5
        elif code == "E":
            D = q.shape[0]
            W = np.eye(D) + 0.5 * np.roll(np.eye(D), 1, axis=1)
            e = K @ (W.T @ q)
        else:  # "F"
            return V[0].copy()
        return _softmax(e) @ V

    return attend


def _masked_softmax(code: str):
    def masked_softmax(scores, mask):
        s = np.asarray(scores, dtype=float)
        m = np.broadcast_to(np.asarray(mask, dtype=bool), s.shape)
        empty = ~m.any(axis=-1, keepdims=True)                    # rows without an eligible key
        with np.errstate(all="ignore"):
            if code in ("G", "H", "I"):                            # -inf fill
                if code == "I" and empty.any():
                    raise ValueError("a row has no eligible key (policy: raise)")
                w = _softmax(np.where(m, s, -np.inf))             # NaN in empty rows
                return np.where(empty, 0.0, w) if code == "G" else w
            if code == "J":                                        # mask after the softmax
                return _softmax(s) * m
            if code == "K":                                        # a finite fill of -30
                return _softmax(np.where(m, s, -30.0))
            if code == "L":                                        # masked scores set to 0
                return _softmax(s * m)
            if code == "M":                                        # the mask ignored
                return _softmax(s)
            if code == "N":                                        # the dtype's finfo.min
                return _softmax(np.where(m, s, np.finfo(s.dtype).min))
            return _softmax(np.where(m, -np.inf, s))               # "O": the mask inverted

    return masked_softmax


def make_impl(code: str):
    """The callable of one of :data:`IMPL_CODES`, named as a student's test receives it."""
    fn = _attend(code) if code in "ABCDEF" else _masked_softmax(code)
    fn.__qualname__ = fn.__name__
    return fn


def make_readout(params: dict):
    """``readout(context) -> probabilities``: the toy model's layers after the context, with its
    decoder state ``h`` held fixed: ``softmax(W_o tanh(W_c [h; c] + b_c) + b_o)``. ``context`` is
    one (D_v,) or several (N, D_v); the result (C,) or (N, C)."""
    h, W_c, b_c, W_o, b_o = (np.asarray(params[k], dtype=float) for k in READOUT_PARAMS)

    def readout(context):
        c = np.asarray(context, dtype=float)
        if c.shape[-1:] != (W_c.shape[1] - h.shape[0],):
            raise ValueError(f"readout takes a context of width {W_c.shape[1] - h.shape[0]}, "
                             f"got shape {c.shape}")
        hc = np.concatenate([np.broadcast_to(h, c.shape[:-1] + h.shape), c], axis=-1)
        return _softmax(np.tanh(hc @ W_c.T + b_c) @ W_o.T + b_o)

    return readout


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
                rec["out"] = encode(out)
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


def probe(kind: str, obj, inputs: list, *, n_functions: int = 1, call_seconds: float = 5.0,
          total_seconds: float = 20.0, watch=()) -> dict:
    """Evaluate one answer. ``inputs``: encoded cases ``{"args": [...], "fn": i}``.

    Written and value answers are recorded as they are; functions are called on every case
    (stopping after a time-out, and skipping a function whose first call raised
    ``NotImplementedError``: it is still the stub). In an answer of several parts, a part that no
    case calls is a declaration (check 3.2's policy): it is recorded as a value, under
    ``"values"``. ``watch``: source files whose functions an answer must not call (each call's
    record names those it entered).
    """
    if obj is MISSING:
        return {"kind": "missing"}
    if kind in ("value", "written"):
        try:
            return {"kind": kind, "value": encode(obj)}
        except BaseException as exc:
            return {"kind": kind, "value": {"__unsupported__": type(obj).__name__,
                                            "repr": f"could not be recorded: {type(exc).__name__}"}}
    if n_functions > 1:
        if not isinstance(obj, (tuple, list)) or len(obj) != n_functions:
            return {"kind": "shape", "what": type(obj).__name__,
                    "length": len(obj) if isinstance(obj, (tuple, list)) else None}
        fns = list(obj)
    else:
        fns = [obj]
    called = {int(inp.get("fn", 0)) for inp in inputs} if n_functions > 1 else {0}
    for i, fn in enumerate(fns):
        if i in called and not callable(fn):
            return {"kind": "notcallable", "index": i, "value": encode(fn)}
    values = {str(i): encode(fn) for i, fn in enumerate(fns) if i not in called}
    calls: list = []
    stubbed: set[int] = set()
    seen: set[int] = set()
    deadline = time.perf_counter() + total_seconds
    for inp in inputs:
        which = int(inp.get("fn", 0))
        if which in stubbed:
            calls.append({"skipped": "stub"})
            continue
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            break
        try:
            args = tuple(decode(a, impls=True) for a in inp["args"])
        except Exception as exc:  # cannot happen with the grader's own inputs
            calls.append({"raised": {"type": "InputError", "message": str(exc)[:200], "where": ""}})
            continue
        rec = call(fns[which], args, min(call_seconds, max(remaining, 0.05)), watch)
        calls.append(rec)
        first = which not in seen
        seen.add(which)
        if "timeout" in rec:
            break
        if first and rec.get("raised", {}).get("type") == "NotImplementedError":
            stubbed.add(which)
    return {"kind": "calls", "calls": calls, **({"values": values} if values else {})}


# ------------------------------------------------------------------ the grader's harness
def _line(payload: dict) -> str:
    return json.dumps(payload, allow_nan=False, separators=(",", ":")) + "\n"


def run_harness(user_ns: dict, config: dict) -> None:
    """Probe every exercise named in ``config`` and append result lines to a file.

    Runs inside the student's kernel, after the student's cells. ``config``: ``inputs`` (paths of
    the grader's encoded cases, one per exercise), ``results`` (path to append to), ``exercises``
    (list of ``{"id", "kind", "names"}``), ``call_seconds``, ``total_seconds``. Each exercise
    writes a ``start`` line before its answer runs and a ``done`` line after, so the grader knows
    which answer was running if the kernel dies. Nothing here is secret: the student's code can
    write lines too, and gains nothing by it (the grader judges outputs, not claims).
    """
    with open(config["results"], "a", encoding="utf-8") as out:
        for ex, inputs_path in zip(config["exercises"], config["inputs"]):
            out.write(_line({"event": "start", "id": ex["id"]}))
            out.flush()  # the grader reads the file after the kernel is gone: flush is enough
            names = ex["names"]
            objs = [user_ns.get(n, MISSING) for n in names]
            if any(o is MISSING for o in objs):
                obj = MISSING
            else:
                obj = objs[0] if len(objs) == 1 else tuple(objs)
            try:
                inputs = []
                if obj is not MISSING:
                    with open(inputs_path, encoding="utf-8") as fh:
                        inputs = json.load(fh).get(ex["id"], [])
                record = probe(ex["kind"], obj, inputs, n_functions=len(names),
                               call_seconds=config["call_seconds"],
                               total_seconds=config["total_seconds"])
                text = _line({"event": "done", "id": ex["id"], "record": record})
            except BaseException as exc:
                text = _line({"event": "done", "id": ex["id"],
                              "record": {"kind": "harness_error",
                                         "message": f"{type(exc).__name__}: {exc}"[:300]}})
            out.write(text)
            out.flush()
