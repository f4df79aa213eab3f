"""What each computational check feeds a student's answer, and how it judges the outputs.

Every check has fixed edge cases (ordered from the simplest, so the first failure is the minimal
failing case) plus seeded random cases. The expected outputs come from the package's reference
implementations (:mod:`attention_lab.scores`, :mod:`~attention_lab.softmax`,
:mod:`~attention_lab.masks`, :mod:`~attention_lab.attention`, :mod:`~attention_lab.cost`).

Judging runs in the checker's own process: student-side inside :func:`check`, grader-side in the
grader (never in a student's kernel). A failure names the case, shows its inputs and the
student's output, and says what is wrong (shape, dtype, NaN, masked mass, row sums, a recognised
mistake such as a softmax over the wrong axis); it never prints the expected values. The
grader's own random cases (any seed but :data:`STUDENT_SEED`) are *hidden*: a failure on one is
described, but its inputs and the output are not shown (they go into the feedback a student
gets back).
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from .. import cost
from ..attention import attend
from ..examples import HULL_VALUES, HULL_WEIGHTS, additive_example, running_example
from ..masks import local_mask, padding_mask
from ..scores import additive_scores, dot_scores
from ..softmax import entropy, softmax
from ..grading.probe import Impl, TooLarge, Unsupported
from .registry import EXERCISES, Exercise

STUDENT_SEED = 20240519


# ====================================================================== cases and verdicts
@dataclass
class Case:
    note: str  # what this case probes, shown to the student
    args: tuple
    names: tuple[str, ...]
    fn: int = 0
    data: dict = field(default_factory=dict)
    hidden: bool = False  # one of the grader's random cases: inputs never shown


@dataclass
class Verdict:
    status: str  # pass | fail | error | timeout | not_attempted | needs_instructor
    message: str
    summary: str
    details: dict = field(default_factory=dict)

    @property
    def score(self):
        if self.status == "needs_instructor":
            return None
        return 1 if self.status == "pass" else 0


# ====================================================================== formatting
def _fmt(x, limit: int = 20) -> str:
    """A short, rounded rendering of an input or output (never the reference)."""
    if isinstance(x, Impl):
        return IMPL_NOTES.get(x.code, "an attention implementation")
    if isinstance(x, (Unsupported, TooLarge)):
        return repr(x)
    if isinstance(x, np.ndarray):
        if x.size > limit:
            return f"array of shape {tuple(x.shape)}, {x.dtype}"
        if x.dtype.kind == "f":
            with np.errstate(all="ignore"):
                shown = np.round(x.astype(np.float64), 3)
            text = np.array2string(shown, precision=3, suppress_small=True, max_line_width=200,
                                   separator=" ")
        else:
            text = np.array2string(x, max_line_width=200, separator=" ")
        text = " ".join(text.split())
        extra = [] if x.dtype == np.float64 else [str(x.dtype)]
        if x.ndim != 1 or x.dtype != np.float64:
            extra.append(f"shape {tuple(x.shape)}")
        return text + (f" ({', '.join(extra)})" if extra else "")
    if isinstance(x, np.generic):
        return _fmt(np.asarray(x))
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_fmt(v, limit) for v in x[:6]) + (", ..." if len(x) > 6 else "")
        return f"({inner})" if isinstance(x, tuple) else f"[{inner}]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt(v, 6)}" for k, v in list(x.items())[:8]) + "}"
    if x is Ellipsis:
        return "..."
    text = repr(x)
    return text if len(text) < 200 else text[:200] + "..."


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def _what(x) -> str:
    """'a list', 'None', 'a dict', ... for messages about the type of a result."""
    if x is None:
        return "None"
    if isinstance(x, Unsupported):
        return _a(x.what)
    if isinstance(x, TooLarge):
        return f"an object of shape {x.shape} (too large to record)"
    if isinstance(x, np.ndarray):
        return f"an array of shape {tuple(x.shape)} and dtype {x.dtype}"
    return _a(type(x).__name__)


# ====================================================================== output helpers
class Reject(Exception):
    """Raised by a comparison with the student-facing reason."""


def to_array(out, what: str = "your result") -> np.ndarray:
    if out is None:
        raise Reject(f"{what}: got None (did you forget `return`?)")
    if out is Ellipsis:
        raise Reject(f"{what}: still `...`")
    if isinstance(out, (Unsupported, TooLarge, dict, str)):
        raise Reject(f"{what}: got {_what(out)}, expected a numpy array")
    if isinstance(out, np.ndarray):
        return out
    try:
        arr = np.asarray(out)
    except Exception:
        raise Reject(f"{what} ({_what(out)}) could not be read as an array") from None
    if arr.dtype == object:
        raise Reject(f"{what} ({_what(out)}) is not a rectangular array of numbers")
    return arr


def numeric(arr: np.ndarray, what: str = "your result") -> np.ndarray:
    if arr.dtype == bool:
        raise Reject(f"{what}: dtype bool, expected numbers")
    if arr.dtype.kind not in "iuf":
        raise Reject(f"{what}: dtype {arr.dtype}, expected real numbers")
    return arr


def expect_shape(arr: np.ndarray, shape: tuple, what: str = "your result", why: str = "") -> None:
    if tuple(arr.shape) != tuple(shape):
        raise Reject(f"{what}: shape {tuple(arr.shape)}, but it should be {tuple(shape)}"
                     + (f" ({why})" if why else ""))


def tolerances(dtype) -> tuple[float, float]:
    name = np.dtype(dtype).name if dtype is not None else "float64"
    if name == "float16":
        return 1e-2, 3e-3
    if name == "float32":
        return 1e-5, 1e-6
    return 1e-7, 1e-9


def close(a, b, dtype=None) -> bool:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    rtol, atol = tolerances(dtype)
    with np.errstate(all="ignore"):
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def first_index(bad: np.ndarray):
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return idx[0] if len(idx) == 1 else idx


def where(bad: np.ndarray) -> str:
    """The first True of ``bad`` for a student: counted from 1, as positions and rows are in the
    notebooks, with numpy's index (from 0) beside it: "position 3 (numpy index 2)"."""
    idx = first_index(bad)
    if isinstance(idx, int):
        return f"position {idx + 1} (numpy index {idx})"
    return f"entry {tuple(i + 1 for i in idx)} counting from 1 (numpy index {list(idx)})"


def diagnose(case: Case, arr, mistakes, dtype=None, ref=None) -> str:
    """The message of the first known mistake whose output matches ``arr`` (and differs from the
    reference), or ''."""
    for make, message in mistakes:
        try:
            with np.errstate(all="ignore"):
                wrong = make(case)
        except Exception:
            continue
        if wrong is None:
            continue
        wrong = np.asarray(wrong, dtype=np.float64)
        if ref is not None and close(wrong, ref, dtype):
            continue
        if close(arr, wrong, dtype):
            return message
    return ""


def value_mismatch(arr, ref, dtype=None, what: str = "your result") -> str:
    a = np.asarray(arr, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    rtol, atol = tolerances(dtype)
    with np.errstate(all="ignore"):
        bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    n = int(bad.sum())
    if a.ndim == 0:
        return f"{what}: not the expected value"
    return (f"{what}: wrong at {n} of {a.size} entries, first at {where(bad)} "
            f"(yours there: {a[np.argwhere(bad)[0][0] if a.ndim == 1 else tuple(np.argwhere(bad)[0])]:.4g})")


def check_weights(arr, ref, *, mask=None, dtype=None, what: str = "the weights",
                  overflow_note: str = "") -> None:
    """Shape, finiteness, exact zeros at masked keys, row sums, then values."""
    arr = numeric(to_array(arr, what), what)
    expect_shape(arr, ref.shape, what, "one weight per key")
    a = arr.astype(np.float64)
    if np.isnan(a).any():
        row = f" in row {int(np.argwhere(np.isnan(a))[0][0]) + 1}" if a.ndim > 1 else ""
        raise Reject(f"{what}: NaN{row} (first at {where(np.isnan(a))})"
                     + (f": {overflow_note}" if overflow_note else ""))
    if np.isinf(a).any():
        raise Reject(f"{what}: an infinity (first at {where(np.isinf(a))})"
                     + (f": {overflow_note}" if overflow_note else ""))
    if (a < 0).any():
        raise Reject(f"{what}: a negative value at {where(a < 0)}; softmax "
                     f"weights are never negative")
    if mask is not None:
        m = np.broadcast_to(mask, a.shape)
        leak = (~m) & (a != 0)
        if leak.any():
            val = a[np.argwhere(leak)[0][0]] if a.ndim == 1 else a[tuple(np.argwhere(leak)[0])]
            tiny = " (a finite fill such as -100 or -1e4 leaves exp(fill - max) > 0; fill with "\
                   "-np.inf, or set masked weights to 0)" if 0 < abs(val) < 1e-6 else ""
            raise Reject(f"masked key at {where(leak)} got weight {val:.3g}, not exactly "
                         f"0{tiny}")
    ref64 = np.asarray(ref, dtype=np.float64)
    if ref64.ndim >= 1:
        S = ref64.shape[-1]
        rs_ref = ref64.reshape(-1, S).sum(axis=1)
        rs = a.reshape(-1, S).sum(axis=1)
        rtol, atol = tolerances(dtype)
        bad = (np.abs(rs_ref - 1) < 1e-6) & ~np.isclose(rs, 1.0, rtol=0, atol=max(atol * 5, 1e-6))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            row = "" if a.ndim == 1 else f"(row {i + 1}) "
            raise Reject(f"{what} {row}sum to {rs[i]:.4g}, not 1")
        if np.any((np.abs(rs_ref) < 1e-12) & (np.abs(rs) > 1e-9)):
            raise Reject(f"{what} of a row with no eligible key should all be 0")
    if not close(a, ref64, dtype):
        raise Reject(value_mismatch(a, ref64, dtype, what))


def _softmax_axis(x, axis):
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - m)
        return e / e.sum(axis=axis, keepdims=True)


def _as_bool(out, what: str = "your result") -> bool:
    if isinstance(out, (bool, np.bool_)):
        return bool(out)
    if isinstance(out, np.ndarray) and out.dtype == bool and out.shape == ():
        return bool(out)
    if isinstance(out, np.ndarray) and out.dtype == bool:
        raise Reject(f"{what} is an array of shape {tuple(out.shape)}; return a single True or "
                     f"False (combine per-entry tests with all() or any())")
    raise Reject(f"{what} is {_what(out)}; return True or False")


def _pair(out, n: int, names: str) -> tuple:
    if not isinstance(out, (tuple, list)) or len(out) != n:
        raise Reject(f"your function returned {_what(out)}; it must return a tuple {names}")
    return tuple(out)


def _int(x, what: str) -> int:
    if isinstance(x, (bool, np.bool_)):
        raise Reject(f"{what} is a bool; expected an integer")
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)) and float(x).is_integer():
        return int(x)
    if isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "iu":
        return int(x)
    raise Reject(f"{what} is {_what(x)}; expected a whole number")


# ====================================================================== specs
class Spec:
    """A computational check: ``fixed()`` edge cases, ``random(rng)`` cases, ``compare``."""

    n_functions = 1
    n_random = 3

    def fixed(self) -> list[Case]:
        return []

    def random(self, rng: np.random.Generator) -> list[Case]:
        return []

    def compare(self, case: Case, out) -> None:  # raises Reject
        raise NotImplementedError

    def cases(self, seed: int, ex_id: str) -> list[Case]:
        rng = np.random.default_rng([seed, zlib.crc32(ex_id.encode())])
        drawn = self.random(rng)
        if seed != STUDENT_SEED:
            for case in drawn:
                case.hidden = True
        return self.fixed() + drawn

    def on_pass(self, cases, outputs) -> str:
        return ""


def _rand(rng, *shape, scale=1.0):
    return np.round(rng.normal(size=shape) * scale, 3)


def _dirichlet(rng, n):
    return rng.dirichlet(np.ones(n))


_RX = running_example()


# ---------------------------------------------------------------- 1.1 parts of the running example
class Parts(Spec):
    FIELDS = ("query", "keys", "values", "scores", "weights", "context")

    def reference(self):
        r = running_example()
        s = r.keys @ r.query
        w = softmax(s)
        return {"query": r.query, "keys": r.keys, "values": r.values, "scores": s, "weights": w,
                "context": w @ r.values}

    def wrong(self, name):
        r = running_example()
        s = r.keys @ r.query
        w = softmax(s)
        e = np.exp(s)
        return {
            "query": [],
            "keys": [(r.values, "it holds the values: keys are what the query is matched against, "
                               "values are what gets returned"),
                     (r.keys.T, "it is transposed: one row per source")],
            "values": [(r.keys, "it holds the keys: keys are matched, values are returned")],
            "scores": [(r.keys @ (r.W.T @ r.query), "these are the bilinear scores q^T W k; the "
                        "running example's scores are the plain dot product"),
                       (s / math.sqrt(3), "these are scaled by 1/sqrt(D_k); the chapter's dot "
                        "product is unscaled"),
                       (w, "these are the weights (after softmax); scores come before it")],
            "weights": [(e, "these are exp(scores) before dividing by their sum"),
                        (s / s.sum(), "you divided the scores by their sum; softmax "
                         "exponentiates first"),
                        (softmax(s, mask=r.valid), "these are the masked weights; the running "
                         "example's weights use all five keys"),
                        (s, "these are the scores; the weights are their softmax")],
            "context": [(w @ r.keys, "it mixes the keys; attention mixes the values"),
                        (r.values.mean(axis=0), "this is the plain average of the values; the "
                         "weights decide the mix"),
                        (w, "these are the weights; the context is their mix of the values")],
        }[name]

    def judge_value(self, value) -> tuple[str, str]:
        if not isinstance(value, dict):
            return "fail", (f"parts is {_what(value)}; expected a dict with the keys "
                            f"{', '.join(self.FIELDS)}")
        missing = [k for k in self.FIELDS if k not in value]
        if len(missing) == len(self.FIELDS):
            return "fail", f"parts has none of the keys {', '.join(self.FIELDS)}"
        ref = self.reference()
        problems = []
        for k in self.FIELDS:
            if k not in value:
                problems.append(f"parts[{k!r}] is missing")
                continue
            v = value[k]
            if v is Ellipsis:
                problems.append(f"parts[{k!r}] is still `...`")
                continue
            try:
                arr = numeric(to_array(v, f"parts[{k!r}]"), f"parts[{k!r}]")
                if tuple(arr.shape) != ref[k].shape:
                    hint = ""
                    for wrong, why in self.wrong(k):
                        if np.shape(wrong) == arr.shape and close(arr, wrong):
                            hint = f": {why}"
                    raise Reject(f"parts[{k!r}] has shape {tuple(arr.shape)} but the running "
                                 f"example's {k} has shape {ref[k].shape}{hint}")
                if not close(arr, ref[k]):
                    for wrong, why in self.wrong(k):
                        if np.shape(wrong) == arr.shape and close(arr, wrong):
                            raise Reject(f"parts[{k!r}] is wrong: {why}")
                    raise Reject(f"parts[{k!r}] = {_fmt(arr)} is not the running example's {k}")
            except Reject as r:
                problems.append(str(r))
        if not problems:
            return "pass", ""
        more = f" (and {len(problems) - 1} more: " + "; ".join(problems[1:3]) + ")" \
            if len(problems) > 1 else ""
        return "fail", problems[0] + more


# ---------------------------------------------------------------- 2.2 softmax by hand
class ByHand(Spec):
    SCORES = np.array([2.0, 1.0, 0.1])

    def judge_value(self, value) -> tuple[str, str]:
        if isinstance(value, (dict, str)) or value is None:
            return "fail", f"softmax_by_hand is {_what(value)}; expected a list of three numbers"
        try:
            arr = numeric(to_array(value, "softmax_by_hand"), "softmax_by_hand")
        except Reject as r:
            return "fail", str(r)
        if arr.shape != (3,):
            return "fail", (f"softmax_by_hand has shape {tuple(arr.shape)}; expected three "
                            f"numbers, one weight per score")
        ref = softmax(self.SCORES)
        a = arr.astype(np.float64)
        wrongs = [(np.exp(self.SCORES), "these look like exp(e_i) before dividing by their sum"),
                  (self.SCORES / self.SCORES.sum(), "you divided the scores by their sum; "
                   "softmax exponentiates each score first"),
                  (ref[::-1], "the weights are in reverse order: the largest score (2.0, first) "
                   "gets the largest weight")]
        if np.all(np.abs(a - ref) <= 1.1e-3):
            return "pass", ""
        for wrong, why in wrongs:
            if np.all(np.abs(a - wrong) <= 2e-2):
                return "fail", f"softmax_by_hand = {_fmt(a)} is wrong: {why}"
        total = a.sum()
        if abs(total - 1) > 3e-3:
            return "fail", (f"softmax_by_hand = {_fmt(a)} sums to {total:.4f}, not 1: the weights "
                            f"of a softmax always add up to 1")
        bad = np.abs(a - ref) > 1.1e-3
        i = int(np.argmax(bad))
        return "fail", (f"softmax_by_hand = {_fmt(a)}: entry {i + 1} (for score "
                        f"{self.SCORES[i]}) is off by more than rounding to three decimals allows")


# ---------------------------------------------------------------- 1.2 context vector
class ContextVector(Spec):
    def fixed(self):
        hv, hw = np.array(HULL_VALUES), np.array(HULL_WEIGHTS[0])
        rng = np.random.default_rng(7)
        sq = np.round(rng.normal(size=(4, 4)), 2)
        return [
            Case("the chapter's convex-hull example: three 2-D values, weights [0.6 0.3 0.1]",
                 (hw, hv), ("weights", "values")),
            Case("one-hot weights pick out one value", (np.array([0.0, 1.0, 0.0]), hv),
                 ("weights", "values")),
            Case("a single source (S=1)", (np.array([1.0]), np.array([[0.2, -1.0, 3.0]])),
                 ("weights", "values")),
            Case("four values of width four (a square values matrix)",
                 (np.array([0.1, 0.2, 0.3, 0.4]), sq), ("weights", "values")),
            Case("the running example's five values (D_v = 3) with its softmax weights",
                 (softmax(_RX.keys @ _RX.query), _RX.values), ("weights", "values")),
            Case("all-zero weights (an all-masked row): the context is 0",
                 (np.zeros(3), hv), ("weights", "values")),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            S, D = int(rng.integers(2, 8)), int(rng.integers(1, 6))
            out.append(Case(f"random: S={S} values of width D_v={D}",
                            (_dirichlet(rng, S), _rand(rng, S, D)), ("weights", "values")))
        return out

    def compare(self, case, out):
        w, V = case.args
        ref = w @ V  # the definition of the context: sum_i w_i v_i
        arr = numeric(to_array(out))
        if arr.shape == V.shape and arr.shape != ref.shape:
            raise Reject(f"your result has shape {arr.shape}, one row per value: you scaled the "
                         f"values but did not add them up")
        expect_shape(arr, ref.shape, "your context", "one entry per value coordinate, D_v")
        if np.isnan(arr.astype(float)).any():
            note = " (dividing by the sum of the weights fails for all-zero weights; the weights " \
                   "already sum to 1 or, for an all-masked row, to 0)" if not w.any() else ""
            raise Reject(f"your context contains NaN{note}")
        if not close(arr, ref):
            why = diagnose(case, arr, [
                (lambda c: (c.args[0][:, None] * c.args[1]).mean(axis=0),
                 "you took the mean of the weighted values; the context is their sum"),
                (lambda c: c.args[1] @ c.args[0] if c.args[1].shape[0] == c.args[1].shape[1]
                 else None, "you computed values @ weights, which mixes the coordinates inside "
                 "each value; the weights index the S values: weights @ values"),
                (lambda c: c.args[1].sum(axis=0), "you added the values up without weighting them"),
                (lambda c: c.args[1].mean(axis=0), "you averaged the values without the weights"),
            ], ref=ref)
            raise Reject(why or value_mismatch(arr, ref, what="your context"))


# ---------------------------------------------------------------- 1.3 coordinate range
class ValueRange(Spec):
    def fixed(self):
        hv = np.array(HULL_VALUES)
        inside = np.array(HULL_WEIGHTS[0]) @ hv
        return [
            Case("the chapter's context 1 (weights [0.6 0.3 0.1]), inside the triangle",
                 (inside, hv), ("context", "values"), data={"expect": True}),
            Case("a context equal to value 2 (one-hot weights): on the boundary, which counts as "
                 "inside", (hv[1].copy(), hv), ("context", "values"), data={"expect": True}),
            Case("a context outside the range in coordinate 1 only",
                 (np.array([1.0, 2.5]), hv), ("context", "values"), data={"expect": False}),
            Case("a context outside the range in coordinate 0 only",
                 (np.array([-0.1, 1.0]), hv), ("context", "values"), data={"expect": False}),
            Case("a single value (S=1) and a context equal to it",
                 (np.array([0.3, -0.2, 0.5]), np.array([[0.3, -0.2, 0.5]])),
                 ("context", "values"), data={"expect": True}),
            Case("a context 1e-12 above the largest value (rounding noise, within the 1e-9 "
                 "tolerance)", (np.array([2.6 + 1e-12, 0.25]), hv), ("context", "values"),
                 data={"expect": True}),
            Case("3-D values and a context 0.01 below the range in the last coordinate",
                 (np.array([0.5, 0.5, -0.01]),
                  np.array([[0.0, 0.0, 0.0], [1.0, 0.2, 0.4], [0.3, 1.0, 0.9]])),
                 ("context", "values"), data={"expect": False}),
        ]

    def random(self, rng):
        out = []
        for i in range(self.n_random + 1):
            S, D = int(rng.integers(3, 7)), int(rng.integers(2, 5))
            V = _rand(rng, S, D)
            c = _dirichlet(rng, S) @ V
            inside = i % 2 == 0
            if not inside:
                k = int(rng.integers(0, D))
                c[k] = V[:, k].max() + float(rng.uniform(0.05, 0.5))
            out.append(Case(f"random: S={S} values of width {D}, a context "
                            f"{'inside' if inside else 'outside'} the range",
                            (c, V), ("context", "values"), data={"expect": inside}))
        return out

    def compare(self, case, out):
        got = _as_bool(out)
        expect = case.data["expect"]
        if got != expect:
            if expect:
                raise Reject("you returned False for a context that lies inside every "
                             "coordinate's range")
            raise Reject("you returned True for a context outside the range of at least one "
                         "coordinate (check every coordinate, against min and max over the S "
                         "values, axis 0)")


# ---------------------------------------------------------------- 1.4 query-dependence test
IMPL_NOTES = {
    "A": "a correct dot-product attention",
    "B": "an attention that ignores the query (uniform weights)",
    "C": "an attention that ignores the query (weights from the key norms)",
    "D": "a correct dot-product attention at temperature 0.5",
    "E": "a correct bilinear attention",
    "F": "an 'attention' that always returns the first value",
}
IMPL_EXPECT = {"A": True, "B": False, "C": False, "D": True, "E": True, "F": False}


class QueryDependence(Spec):
    def fixed(self):
        return [Case(IMPL_NOTES[c], (Impl(c),), ("attend",), data={"expect": IMPL_EXPECT[c]})
                for c in ("A", "B", "C", "D", "E", "F")]

    def compare(self, case, out):
        got = _as_bool(out, "your test's result")
        if got != case.data["expect"]:
            if case.data["expect"]:
                raise Reject(f"your test rejected {IMPL_NOTES[case.args[0].code]}: do your two "
                             f"queries really differ in a direction the keys can see (different "
                             f"score patterns, not just a constant shift)?")
            raise Reject(f"your test accepted {IMPL_NOTES[case.args[0].code]}: it must return "
                         f"False when two different queries retrieve the same context (a test "
                         f"that cannot fail proves nothing)")


# ---------------------------------------------------------------- 2.1 dot scores
class DotScores(Spec):
    def fixed(self):
        rng = np.random.default_rng(11)
        return [
            Case("the chapter's query and its first three keys", (_RX.query, _RX.keys[:3]),
                 ("query", "keys")),
            Case("one key (S=1)", (_RX.query, _RX.keys[:1]), ("query", "keys")),
            Case("keys of width D_k=1", (np.array([2.0]), np.array([[1.0], [-0.5], [0.0], [3.0]])),
                 ("query", "keys")),
            Case("five keys of width two (S=5, D_k=2)",
                 (np.array([0.5, -1.0]), np.round(rng.normal(size=(5, 2)), 2)),
                 ("query", "keys")),
            Case("two keys of width four (S=2, D_k=4)",
                 (np.array([1.0, 0.0, -1.0, 2.0]), np.round(rng.normal(size=(2, 4)), 2)),
                 ("query", "keys")),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            S, D = int(rng.integers(1, 8)), int(rng.integers(1, 7))
            out.append(Case(f"random: S={S} keys of width D_k={D}", (_rand(rng, D), _rand(rng, S, D)),
                            ("query", "keys")))
        return out

    def compare(self, case, out):
        q, K = case.args
        ref = dot_scores(q, K)
        arr = numeric(to_array(out, "your scores"), "your scores")
        if arr.shape == (K.shape[1],) and arr.shape != ref.shape:
            raise Reject(f"your scores have shape {arr.shape}, one per key coordinate: you summed "
                         f"over the keys (axis 0) instead of over each key's coordinates")
        expect_shape(arr, ref.shape, "your scores", "one score per key")
        if not close(arr, ref):
            why = diagnose(case, arr, [
                (lambda c: (c.args[1] @ c.args[0]) / math.sqrt(c.args[1].shape[1]),
                 "your scores are divided by sqrt(D_k); the chapter's dot product is unscaled "
                 "(scaling is the separate 'scaled dot product')"),
                (lambda c: (c.args[1] @ c.args[0]) / (np.linalg.norm(c.args[1], axis=1)
                                                      * np.linalg.norm(c.args[0])),
                 "you divided by the norms (cosine similarity); the dot product does not"),
                (lambda c: (c.args[1] * c.args[0]).sum(axis=0) if c.args[1].shape[0]
                 == c.args[1].shape[1] else None,
                 "you summed over the keys (axis 0) instead of over each key's coordinates"),
                (lambda c: c.args[0] @ c.args[1] if c.args[1].shape[0] == c.args[1].shape[1]
                 else None, "you computed query @ keys, which combines the keys' columns; each "
                 "score pairs the query with one key (a row): keys @ query"),
                (lambda c: softmax(c.args[1] @ c.args[0]),
                 "these are softmax weights; the scores come before the softmax"),
                (lambda c: -(c.args[1] @ c.args[0]), "your scores have the wrong sign"),
            ], ref=ref)
            raise Reject(why or value_mismatch(arr, ref, what="your scores"))


# ---------------------------------------------------------------- 2.4 temperature
def _sm(s, tau=1.0):
    return softmax(np.asarray(s, dtype=np.float64), temperature=tau)


class Temperature(Spec):
    def fixed(self):
        s = _RX.keys @ _RX.query
        return [
            Case("the chapter's dot scores at temperature 1", (s, 1.0), ("scores", "temperature")),
            Case("the chapter's dot scores at temperature 0.5", (s, 0.5),
                 ("scores", "temperature")),
            Case("the chapter's dot scores at temperature 2", (s, 2.0), ("scores", "temperature")),
            Case("scores [1 2 3] at a high temperature (10): nearly uniform",
                 (np.array([1.0, 2.0, 3.0]), 10.0), ("scores", "temperature")),
            Case("two rows of scores (2, 4) at temperature 0.7: each row is one distribution",
                 (np.array([[0.5, -1.0, 2.0, 0.0], [3.0, 1.0, 1.0, -2.0]]), 0.7),
                 ("scores", "temperature")),
            Case("a single key (S=1)", (np.array([0.3]), 0.5), ("scores", "temperature")),
            Case("a 3x3 block of scores at temperature 0.25",
                 (np.array([[0.1, 0.5, -0.2], [1.0, 0.0, 0.3], [-0.4, 0.2, 0.6]]), 0.25),
                 ("scores", "temperature")),
        ]

    def random(self, rng):
        out = []
        for i in range(self.n_random):
            shape = (int(rng.integers(2, 7)),) if i % 2 == 0 else (int(rng.integers(2, 4)),
                                                                   int(rng.integers(2, 6)))
            tau = float(np.round(rng.uniform(0.2, 5.0), 2))
            out.append(Case(f"random: scores of shape {shape} at temperature {tau}",
                            (_rand(rng, *shape), tau), ("scores", "temperature")))
        return out

    def compare(self, case, out):
        s, tau = case.args
        ref = _sm(s, tau)
        try:
            check_weights(out, ref)
        except Reject as r:
            arr = to_array(out) if not isinstance(out, (Unsupported, TooLarge)) else None
            if arr is None or arr.shape != ref.shape or arr.dtype.kind not in "f":
                raise
            why = diagnose(case, arr, [
                (lambda c: _sm(c.args[0] * c.args[1]) if c.args[1] != 1 else None,
                 "your weights match softmax(scores * temperature): the temperature divides the "
                 "scores"),
                (lambda c: _sm(c.args[0]) if c.args[1] != 1 else None,
                 "your weights do not change with the temperature"),
                (lambda c: _softmax_axis(c.args[0] / c.args[1], 0) if c.args[0].ndim > 1 else None,
                 "you normalised over axis 0 (down the columns); each row of scores is one "
                 "distribution over keys: use axis -1"),
            ], ref=ref)
            raise Reject(why or str(r)) from None

    def on_pass(self, cases, outputs):
        lines = []
        for case, out in zip(cases[:3], outputs[:3]):
            w = np.asarray(out, dtype=np.float64)
            lines.append(f"  temperature {case.args[1]:<3}: weights {_fmt(w)}, "
                         f"entropy {float(entropy(w)):.3f} nats")
        return ("Your weights for the chapter's dot scores (lower temperature = sharper):\n"
                + "\n".join(lines))


# ---------------------------------------------------------------- 2.5 padding mask
class PaddingMask(Spec):
    n_random = 2

    def fixed(self):
        return [
            Case("the chapter's batch: lengths 5, 3, 1 and S=5", (np.array([5, 3, 1]), 5),
                 ("lengths", "S")),
            Case("one sequence of length 1, S=1", (np.array([1]), 1), ("lengths", "S")),
            Case("lengths 2 and 4 with S=6: no sequence reaches S", (np.array([2, 4]), 6),
                 ("lengths", "S")),
            Case("lengths 0 and 3, S=3: an empty sequence (an all-masked row)",
                 (np.array([0, 3]), 3), ("lengths", "S")),
            Case("three full sequences, lengths 3, 3, 3 and S=3", (np.array([3, 3, 3]), 3),
                 ("lengths", "S")),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            B, S = int(rng.integers(1, 5)), int(rng.integers(1, 9))
            out.append(Case(f"random: {B} lengths, S={S}",
                            (rng.integers(0, S + 1, size=B), S), ("lengths", "S")))
        return out

    def compare(self, case, out):
        L, S = case.args
        ref = padding_mask(L, S)
        arr = to_array(out, "your mask")
        if arr.dtype != bool:
            raise Reject(f"your mask has dtype {arr.dtype}; return booleans (True = eligible), "
                         f"e.g. from a comparison such as np.arange(S) < lengths[:, None]")
        if arr.shape != ref.shape and arr.ndim == 2 and arr.shape[0] == len(L) \
                and arr.shape[1] == int(L.max(initial=0)):
            raise Reject(f"your mask has shape {arr.shape}: {arr.shape[1]} columns = the longest "
                         f"length, but the mask needs S={S} columns (one per source position)")
        expect_shape(arr, ref.shape, "your mask", "one row per sequence, one column per position")
        if np.array_equal(arr, ref):
            return
        pos = np.arange(S)
        if np.array_equal(arr, ~ref):
            raise Reject("your mask is inverted: True marks padding here, but the convention is "
                         "True = eligible (PyTorch's key_padding_mask is the opposite; convert "
                         "with ~)")
        if np.array_equal(arr, pos <= L[:, None]):
            raise Reject("position j = length is marked eligible: a sequence of length n has "
                         "real positions 0..n-1 (j < length)")
        if np.array_equal(arr, pos < (L[:, None] - 1)):
            raise Reject("the last real position of each sequence is masked: positions 0..n-1 "
                         "are real (j < length)")
        b = int(np.argwhere((arr != ref).any(axis=1))[0][0])
        raise Reject(f"row {b + 1} (length {int(L[b])}) is wrong: yours {_fmt(arr[b])}")


# ---------------------------------------------------------------- 2.6 masked softmax
class MaskedSoftmax(Spec):
    n_random = 2

    def fixed(self):
        s = _RX.keys @ _RX.query
        rng = np.random.default_rng(5)
        b = np.round(rng.normal(size=(3, 5)), 2)
        s3 = np.round(rng.normal(size=(2, 3, 4)), 2)
        m3 = np.array([[[True, True, False, True]], [[False, True, True, False]]])
        return [
            Case("the chapter's five dot scores, keys 4 and 5 masked", (s, _RX.valid.copy()),
                 ("scores", "mask")),
            Case("three rows with lengths 5, 3 and 1 (a padding mask)",
                 (b, padding_mask([5, 3, 1], 5)), ("scores", "mask")),
            Case("no key masked: a plain softmax", (s, np.ones(5, dtype=bool)), ("scores", "mask")),
            Case("a single eligible key (S=1)", (np.array([0.7]), np.array([True])),
                 ("scores", "mask")),
            Case("a masked key with by far the largest score (8.0)",
                 (np.array([0.5, 8.0, -0.3, 1.0]), np.array([True, False, True, True])),
                 ("scores", "mask")),
            Case("scores (2, 3, 4) with a mask (2, 1, 4) that broadcasts over the queries",
                 (s3, m3), ("scores", "mask")),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            T, S = int(rng.integers(1, 4)), int(rng.integers(2, 7))
            m = rng.random((T, S)) < 0.6
            m[np.arange(T), rng.integers(0, S, size=T)] = True
            out.append(Case(f"random: scores ({T}, {S}) with a random mask",
                            (_rand(rng, T, S, scale=2), m), ("scores", "mask")))
        return out

    def compare(self, case, out):
        s, m = case.args
        ref = softmax(s, mask=m)
        try:
            check_weights(out, ref, mask=np.broadcast_to(m, ref.shape))
        except Reject as r:
            try:
                arr = numeric(to_array(out))
            except Reject:
                raise r from None
            if arr.shape != ref.shape:
                raise
            why = diagnose(case, arr, [
                (lambda c: _sm(c.args[0]) * c.args[1],
                 "you masked after the softmax without renormalising: masked keys are 0 but the "
                 "eligible weights no longer sum to 1 (mask before the softmax, or divide by the "
                 "new sum)"),
                (lambda c: softmax(c.args[0], mask=~np.broadcast_to(c.args[1], c.args[0].shape))
                 if (~np.broadcast_to(c.args[1], c.args[0].shape)).any(axis=-1).all() else None,
                 "your weights sit on the masked keys: True means eligible"),
            ], ref=ref)
            raise Reject(why or str(r)) from None


# ---------------------------------------------------------------- 2.7 local window
def _attn_ref(q, K, V, mask):
    return attend(q, K, V, mask=mask)


class LocalWindow(Spec):
    n_random = 2

    def fixed(self):
        q, K, V = _RX.query, _RX.keys, _RX.values
        far = K[4] * 3.0
        names = ("query", "keys", "values", "centre", "half_width")
        return [
            Case("the running example, centre 2, half-width 1 (keys 1-3)", (q, K, V, 2, 1), names),
            Case("centre 0 at the left edge, half-width 1 (keys 0-1)", (q, K, V, 0, 1), names),
            Case("centre 4 at the right edge, half-width 1 (keys 3-4)", (q, K, V, 4, 1), names),
            Case("half-width 0: only the centre key", (q, K, V, 3, 0), names),
            Case("half-width 10, wider than the source: the same as global attention",
                 (q, K, V, 2, 10), names),
            Case("the relevant key (4) lies outside the window around 0 (half-width 1)",
                 (far, K, V, 0, 1), names, data={"demo": True}),
            Case("a window centred outside the source (centre 8, half-width 1): no eligible key, "
                 "so zero weights and a zero context", (q, K, V, 8, 1), names),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            S, Dk, Dv = int(rng.integers(6, 10)), int(rng.integers(2, 5)), int(rng.integers(2, 6))
            c, h = int(rng.integers(0, S)), int(rng.integers(0, 4))
            out.append(Case(f"random: S={S}, D_k={Dk}, D_v={Dv}, centre {c}, half-width {h}",
                            (_rand(rng, Dk), _rand(rng, S, Dk), _rand(rng, S, Dv), c, h),
                            ("query", "keys", "values", "centre", "half_width")))
        return out

    def compare(self, case, out):
        q, K, V, c, h = case.args
        S = K.shape[0]
        mask = local_mask(float(c), float(h), S)
        ref = _attn_ref(q, K, V, mask)
        w, ctx = _pair(out, 2, "(weights, context)")
        warr = numeric(to_array(w, "your weights"), "your weights")
        if warr.ndim == 1 and warr.shape[0] == int(mask.sum()) and warr.shape[0] != S:
            raise Reject(f"your weights have shape {warr.shape}, only the window's keys: return "
                         f"one weight per key (S={S}), 0 outside the window")
        try:
            check_weights(warr, ref.weights, mask=mask, what="your weights")
        except Reject as r:
            if warr.shape == ref.weights.shape:
                pos = np.arange(S)
                why = diagnose(case, warr, [
                    (lambda cs: attend(q, K, V, mask=np.abs(pos - c) < h).weights
                     if (np.abs(pos - c) < h).any() else None,
                     "keys at distance exactly half_width are left out: the window "
                     "|j - centre| <= half_width is inclusive"),
                    (lambda cs: _sm(K @ q) * mask,
                     "you zeroed the weights outside the window after the softmax without "
                     "renormalising"),
                    (lambda cs: _sm(K @ q),
                     "your weights ignore the window (this is global attention)"),
                ], ref=ref.weights)
                raise Reject(why or str(r)) from None
            raise
        carr = numeric(to_array(ctx, "your context"), "your context")
        expect_shape(carr, ref.context.shape, "your context", "one entry per value coordinate")
        if not close(carr, ref.context):
            raise Reject(value_mismatch(carr, ref.context, what="your context")
                         + " (the weights are right: the context is weights @ values)")

    def on_pass(self, cases, outputs):
        for case, out in zip(cases, outputs):
            if case.data.get("demo"):
                q, K, V, c, h = case.args
                g = attend(q, K, V)
                w, ctx = out
                return ("Global versus local when the relevant key lies outside the window: weight "
                        f"on key 4 is {g.weights[4]:.3f} globally and "
                        f"{float(np.asarray(w)[4]):.3f} in your window around {c}; the local "
                        f"context is {float(np.linalg.norm(np.asarray(ctx) - V[4])):.3f} away from "
                        f"value 4, the global one {float(np.linalg.norm(g.context - V[4])):.3f}.")
        return ""


# ---------------------------------------------------------------- 3.1 stable softmax
class StableSoftmax(Spec):
    def fixed(self):
        return [
            Case("small scores [1 2 3]", (np.array([1.0, 2.0, 3.0]),), ("scores",)),
            Case("logits of +1e4: [1e4, 1e4 - 1, 0]", (np.array([1e4, 1e4 - 1, 0.0]),),
                 ("scores",), data={"big": "+"}),
            Case("logits of -1e4: [-1e4, -1e4 + 1, -1e4 + 2]",
                 (np.array([-1e4, -1e4 + 1, -1e4 + 2]),), ("scores",), data={"big": "-"}),
            Case("two rows with very different ranges: [[1e4, 0, -1e4], [-1e4, -1e4, -1e4 + 3]]",
                 (np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4 + 3]]),), ("scores",),
                 data={"big": "rows"}),
            Case("a single score (S=1) of 1e4", (np.array([1e4]),), ("scores",), data={"big": "+"}),
            Case("float16 scores [12, 11, 0]: exp(12) overflows float16 (max 65504)",
                 (np.array([12.0, 11.0, 0.0], dtype=np.float16),), ("scores",),
                 data={"big": "f16"}),
            Case("a -inf score (a masked key) gets weight 0: [0, -inf, 1]",
                 (np.array([0.0, -np.inf, 1.0]),), ("scores",)),
        ]

    def random(self, rng):
        out = []
        for i in range(self.n_random):
            shape = (int(rng.integers(2, 7)),) if i % 2 == 0 else (int(rng.integers(2, 4)),
                                                                   int(rng.integers(2, 6)))
            scale = float(10 ** rng.uniform(0, 3))
            out.append(Case(f"random: scores of shape {shape}, spread about {scale:.0f}",
                            (np.round(rng.normal(size=shape) * scale, 2),), ("scores",)))
        return out

    NOTES = {"+": "exp(1e4) overflows to inf and inf/inf is NaN; subtract each row's maximum "
                  "before exponentiating",
             "-": "exp(-1e4) underflows to 0 and 0/0 is NaN; subtracting each row's maximum makes "
                  "the largest term exp(0) = 1",
             "rows": "subtract each row's own maximum (max over axis -1, keepdims=True), not the "
                     "maximum of the whole array",
             "f16": "in float16 exp overflows above about 11.1; subtract the maximum first"}

    def compare(self, case, out):
        (s,) = case.args
        ref = softmax(s.astype(np.float64))
        arr = to_array(out, "your weights")
        dtype = arr.dtype if arr.dtype.kind == "f" else None
        mask = np.isfinite(s)
        try:
            check_weights(arr, ref, mask=mask, dtype=dtype, what="your weights",
                          overflow_note=self.NOTES.get(case.data.get("big"), ""))
        except Reject as r:
            if arr.shape == ref.shape and arr.dtype.kind == "f" and s.ndim > 1:
                why = diagnose(case, arr, [
                    (lambda c: _softmax_axis(c.args[0], 0),
                     "you normalised over axis 0 (down the columns); softmax runs over the last "
                     "axis, the keys"),
                ], dtype=dtype, ref=ref)
                if why:
                    raise Reject(why) from None
            raise

    def on_pass(self, cases, outputs):
        (s,) = cases[1].args
        from ..softmax import naive_softmax

        return (f"For the scores {_fmt(s)}: the naive formula gives {_fmt(naive_softmax(s))}, "
                f"your stable softmax {_fmt(np.asarray(outputs[1]))}.")


# ---------------------------------------------------------------- 3.2 all-masked row
class SafeMaskedSoftmax(Spec):
    n_random = 2

    def fixed(self):
        s = _RX.keys @ _RX.query
        rng = np.random.default_rng(3)
        b = np.round(rng.normal(size=(3, 5)), 2)
        big16 = np.array([[1e4, -1e4, 5.0, 0.0], [2.0, 1.0, 0.0, -1.0]], dtype=np.float16)
        return [
            Case("the chapter's five scores, keys 4-5 masked (float64)", (s, _RX.valid.copy()),
                 ("scores", "mask")),
            Case("lengths 5, 3 and 0: the last row is all masked (float64)",
                 (b, padding_mask([5, 3, 0], 5)), ("scores", "mask")),
            Case("every key of every row masked", (b[:2, :3].copy(), np.zeros((2, 3), bool)),
                 ("scores", "mask")),
            Case("a single all-masked row (1-D, S=4)", (b[0, :4].copy(), np.zeros(4, bool)),
                 ("scores", "mask")),
            Case("float32 scores, lengths 2 and 0", (b[:2, :4].astype(np.float32),
                                                     padding_mask([2, 0], 4)),
                 ("scores", "mask")),
            Case("float16 scores with logits of +-1e4, lengths 3 and 0",
                 (big16, padding_mask([3, 0], 4)), ("scores", "mask")),
            Case("float16 scores, keys 4-5 masked (no all-masked row)",
                 (s.astype(np.float16), _RX.valid.copy()), ("scores", "mask")),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            T, S = int(rng.integers(2, 5)), int(rng.integers(2, 7))
            m = rng.random((T, S)) < 0.5
            m[int(rng.integers(0, T))] = False
            dt = [np.float64, np.float32][int(rng.integers(0, 2))]
            out.append(Case(f"random: {np.dtype(dt).name} scores ({T}, {S}), at least one "
                            f"all-masked row", (_rand(rng, T, S, scale=3).astype(dt), m),
                            ("scores", "mask")))
        return out

    def compare(self, case, out):
        s, m = case.args
        ref = softmax(s.astype(np.float64), mask=m)
        arr = numeric(to_array(out, "your weights"), "your weights")
        expect_shape(arr, ref.shape, "your weights", "one weight per key")
        dtype = arr.dtype if arr.dtype.kind == "f" else None
        mb = np.broadcast_to(m, ref.shape)
        empty = ~mb.any(axis=-1)
        a = arr.astype(np.float64)
        rows = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a[None]
        erows = empty.reshape(-1) if a.ndim > 1 else np.array([bool(empty)])
        for i in np.flatnonzero(erows):
            row = rows[i]
            row_name = f"row {i + 1}" if a.ndim > 1 else "the row"
            if np.isnan(row).any():
                if s.dtype == np.float16:
                    raise Reject(f"{row_name} has no eligible key and your float16 weights there are "
                                 f"NaN: in float16 a fill such as -1e9 is not representable (the "
                                 f"largest float16 is 65504), it becomes -inf, and a row of -inf "
                                 f"gives 0/0; detect all-masked rows and return zeros")
                raise Reject(f"{row_name} has no eligible key and your weights there are NaN: with a "
                             f"-inf fill every term is exp(-inf) = 0 and 0/0 = NaN; detect "
                             f"all-masked rows and return zeros")
            if np.allclose(row, 1.0 / row.size, atol=1e-3):
                raise Reject(f"{row_name} has no eligible key and your weights there are uniform "
                             f"(1/{row.size} each): a finite fill such as -1e9 makes every masked "
                             f"key equally likely; the declared policy is zeros")
            if np.any(row != 0):
                raise Reject(f"{row_name} has no eligible key; its weights must all be 0, yours are "
                             f"{_fmt(row)}")
        try:
            check_weights(arr, ref, mask=mb, dtype=dtype, what="your weights")
        except Reject as r:
            why = diagnose(case, a, [
                (lambda c: _sm(c.args[0].astype(np.float64)) * c.args[1],
                 "you masked after the softmax without renormalising: the eligible weights no "
                 "longer sum to 1"),
            ], dtype=dtype, ref=ref)
            raise Reject(why or str(r)) from None


# ---------------------------------------------------------------- 3.3 dot and bilinear
class DotBilinear(Spec):
    n_functions = 2
    n_random = 1
    NAMES = ("dot_attention", "bilinear_attention")

    def fixed(self):
        q, K, V, W = _RX.query, _RX.keys, _RX.values, _RX.W
        rng = np.random.default_rng(12)
        r = lambda *s: np.round(rng.normal(size=s), 2)  # noqa: E731
        Wsq = np.array([[1.0, 0.5, 0.0], [-0.3, 0.8, 0.2], [0.6, 0.0, 1.0]])
        dn, bn = ("Q", "K", "V"), ("Q", "K", "V", "W")
        return [
            Case("dot: the running example's query as one target (T=1)", (q[None], K, V), dn, 0),
            Case("dot: T=2 queries, S=4 keys, D_k=3, D_v=5", (r(2, 3), r(4, 3), r(4, 5)), dn, 0),
            Case("dot: one key (S=1), T=3", (r(3, 2), r(1, 2), r(1, 4)), dn, 0),
            Case("bilinear: the running example with the chapter's W (T=1)", (q[None], K, V, W),
                 bn, 1),
            Case("bilinear: W = identity, the same as dot-product attention",
                 (r(2, 3), r(4, 3), r(4, 2), np.eye(3)), bn, 1),
            Case("bilinear: a non-symmetric square W, T=2", (r(2, 3), r(5, 3), r(5, 3), Wsq),
                 bn, 1),
            Case("bilinear: queries of width D_q=2 against keys of width D_k=3, W (2, 3)",
                 (r(2, 2), r(4, 3), r(4, 5), r(2, 3)), bn, 1),
        ]

    def random(self, rng):
        T, S, Dq, Dk, Dv = (int(x) for x in rng.integers(1, 6, size=5))
        return [
            Case(f"dot: random T={T}, S={S}, D_k={Dk}, D_v={Dv}",
                 (_rand(rng, T, Dk), _rand(rng, S, Dk), _rand(rng, S, Dv)), ("Q", "K", "V"), 0),
            Case(f"bilinear: random T={T}, S={S}, D_q={Dq}, D_k={Dk}, D_v={Dv}",
                 (_rand(rng, T, Dq), _rand(rng, S, Dk), _rand(rng, S, Dv), _rand(rng, Dq, Dk)),
                 ("Q", "K", "V", "W"), 1),
        ]

    def compare(self, case, out):
        Q, K, V = case.args[:3]
        W = case.args[3] if case.fn == 1 else None
        ref = attend(Q, K, V) if W is None else attend(Q, K, V, score="bilinear", W=W)
        scores, weights, context = ref.scores, ref.weights, ref.context
        name = self.NAMES[case.fn]
        s, w, c = _pair(out, 3, "(scores, weights, context)")
        sarr = numeric(to_array(s, f"{name}'s scores"), f"{name}'s scores")
        if sarr.shape == scores.shape[::-1] and sarr.shape != scores.shape:
            raise Reject(f"{name}'s scores have shape {sarr.shape} = (S, T): put the queries on the "
                         f"rows, scores (T, S)")
        expect_shape(sarr, scores.shape, f"{name}'s scores", "(T, S): one row per query")
        if not close(sarr, scores):
            mistakes = [(lambda c: Q @ K.T / math.sqrt(K.shape[1]),
                         "your scores are divided by sqrt(D_k); the chapter's dot product is "
                         "unscaled")]
            if W is not None:
                mistakes = [
                    (lambda c: Q @ W.T @ K.T if W.shape[0] == W.shape[1] else None,
                     "your scores use W transposed: with W of shape (D_q, D_k) the score is "
                     "q^T W k, i.e. Q @ W @ K.T"),
                    (lambda c: Q @ K.T if Q.shape[1] == K.shape[1] else None,
                     "your bilinear scores ignore W"),
                ]
            why = diagnose(case, sarr, mistakes, ref=scores)
            raise Reject(why or value_mismatch(sarr, scores, what=f"{name}'s scores"))
        warr = numeric(to_array(w, f"{name}'s weights"), f"{name}'s weights")
        try:
            check_weights(warr, weights, what=f"{name}'s weights")
        except Reject as r:
            if warr.shape == weights.shape and warr.dtype.kind == "f" and weights.shape[0] > 1:
                if close(warr, _softmax_axis(scores, 0)):
                    raise Reject(f"{name}'s weights are normalised over the queries (axis 0); "
                                 f"softmax runs over the keys (axis -1)") from None
            raise
        carr = numeric(to_array(c, f"{name}'s context"), f"{name}'s context")
        expect_shape(carr, context.shape, f"{name}'s context", "(T, D_v)")
        if not close(carr, context):
            raise Reject(value_mismatch(carr, context, what=f"{name}'s context"))

    def on_pass(self, cases, outputs):
        d = np.asarray(outputs[0][0])
        b = np.asarray(outputs[3][0])
        return (f"On the running example both score functions give scores of shape "
                f"{d.shape} (T, S): dot {_fmt(d[0])}, bilinear {_fmt(b[0])}.")


# ---------------------------------------------------------------- 3.4 additive
class Additive(Spec):
    n_random = 2
    NAMES = ("q", "keys", "values", "W_q", "W_k", "v")

    def fixed(self):
        rng = np.random.default_rng(13)
        r = lambda *s: np.round(rng.normal(size=s), 2)  # noqa: E731
        ex = additive_example(19)
        return [
            Case("equal widths D_q = D_k = 3, alignment width A = 4",
                 (r(3), r(5, 3), r(5, 3), r(4, 3), r(4, 3), r(4)), self.NAMES),
            Case("the chapter's example: D_q = 4, D_k = 6, A = 5 (default_rng(19))",
                 (ex.q, ex.source, ex.source, ex.W_q, ex.W_h, ex.v_a), self.NAMES),
            Case("one key (S=1), D_q = 2, D_k = 3", (r(2), r(1, 3), r(1, 2), r(3, 2), r(3, 3), r(3)),
                 self.NAMES),
            Case("alignment width A = 1", (r(3), r(4, 2), r(4, 3), r(1, 3), r(1, 2), r(1)),
                 self.NAMES),
            Case("values of width D_v = 2 (D_v differs from D_k = 4)",
                 (r(3), r(5, 4), r(5, 2), r(6, 3), r(6, 4), r(6)), self.NAMES),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            S, Dq, Dk, Dv, A = (int(x) for x in rng.integers(1, 7, size=5))
            out.append(Case(f"random: S={S}, D_q={Dq}, D_k={Dk}, D_v={Dv}, A={A}",
                            (_rand(rng, Dq), _rand(rng, S, Dk), _rand(rng, S, Dv), _rand(rng, A, Dq),
                             _rand(rng, A, Dk), _rand(rng, A)), self.NAMES))
        return out

    def compare(self, case, out):
        q, K, V, Wq, Wk, v = case.args
        e = additive_scores(q, K, Wq, Wk, v)
        ref_w = _sm(e)
        ref_c = ref_w @ V
        w, c = _pair(out, 2, "(weights, context)")
        warr = numeric(to_array(w, "your weights"), "your weights")
        try:
            check_weights(warr, ref_w, what="your weights")
        except Reject as r:
            if warr.shape == ref_w.shape and warr.dtype.kind == "f":
                why = diagnose(case, warr, [
                    (lambda c: _sm(np.tanh(K @ Wq.T + Wk @ q) @ v)
                     if Wq.shape == Wk.shape and q.shape[0] == K.shape[1] else None,
                     "your scores match the two matrices swapped: the query goes through W_q "
                     "(width D_q) and each key through W_k (width D_k)"),
                    (lambda c: _sm((K @ Wk.T + Wq @ q) @ v),
                     "your scores leave out the tanh: e_i = v . tanh(W_q q + W_k k_i)"),
                    (lambda c: _sm(np.tanh((K @ Wk.T + Wq @ q) @ v)),
                     "you applied tanh after the dot product with v; it comes before"),
                ], ref=ref_w)
                raise Reject(why or str(r)) from None
            raise
        carr = numeric(to_array(c, "your context"), "your context")
        expect_shape(carr, ref_c.shape, "your context", "one entry per value coordinate, D_v")
        if not close(carr, ref_c):
            raise Reject(value_mismatch(carr, ref_c, what="your context"))

    def on_pass(self, cases, outputs):
        return (f"On the chapter's example (query width 4, key width 6) your weights are "
                f"{_fmt(np.asarray(outputs[1][0]))}.")


# ---------------------------------------------------------------- 3.5 batched, right axis
class Batched(Spec):
    n_random = 2

    def fixed(self):
        rng = np.random.default_rng(14)
        r = lambda *s: np.round(rng.normal(size=s), 2)  # noqa: E731
        n = ("Q", "K", "V")
        return [
            Case("one query: B=1, T=1, S=3", (r(1, 1, 2), r(1, 3, 2), r(1, 3, 3)), n),
            Case("the chapter's shapes: B=2, T=3, S=5, D_k=4, D_v=6", (r(2, 3, 4), r(2, 5, 4),
                                                                       r(2, 5, 6)), n),
            Case("T = S = 4: a square score matrix, where a wrong axis keeps the shape",
                 (r(2, 4, 3), r(2, 4, 3), r(2, 4, 2)), n),
            Case("one key (S=1): every weight is 1", (r(3, 2, 2), r(3, 1, 2), r(3, 1, 3)), n),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            B, T, S, Dk, Dv = (int(x) for x in rng.integers(1, 6, size=5))
            out.append(Case(f"random: B={B}, T={T}, S={S}, D_k={Dk}, D_v={Dv}",
                            (_rand(rng, B, T, Dk), _rand(rng, B, S, Dk), _rand(rng, B, S, Dv)),
                            ("Q", "K", "V")))
        return out

    def compare(self, case, out):
        Q, K, V = case.args
        ref = attend(Q, K, V)
        scores, ref_w, ref_c = ref.scores, ref.weights, ref.context
        w, c = _pair(out, 2, "(weights, context)")
        warr = numeric(to_array(w, "your weights"), "your weights")
        try:
            check_weights(warr, ref_w, what="your weights")
        except Reject as r:
            if warr.shape == ref_w.shape and warr.dtype.kind == "f":
                why = diagnose(case, warr, [
                    (lambda c: _softmax_axis(scores, 1),
                     "your softmax runs over the target axis (axis 1): each source position's "
                     "weights sum to 1 across the queries instead of each query's weights across "
                     "the sources (axis -1)"),
                    (lambda c: _softmax_axis(scores, 0),
                     "your softmax runs over the batch axis (axis 0): examples in the batch "
                     "compete with each other; use axis -1"),
                ], ref=ref_w)
                raise Reject(why or str(r)) from None
            raise
        carr = numeric(to_array(c, "your context"), "your context")
        expect_shape(carr, ref_c.shape, "your context", "(B, T, D_v)")
        if not close(carr, ref_c):
            raise Reject(value_mismatch(carr, ref_c, what="your context"))


# ---------------------------------------------------------------- 4.1 score-matrix size
class ScoreSize(Spec):
    n_random = 2
    N = ("batch", "target", "source", "heads")

    def fixed(self):
        return [
            Case("the chapter's case: batch 8, target 64, source 512, 4 heads", (8, 64, 512, 4),
                 self.N),
            Case("everything 1", (1, 1, 1, 1), self.N),
            Case("one head: (B, T, S) or (B, 1, T, S) are both fine", (2, 3, 5, 1), self.N),
            Case("batch 3, target 7, source 11, 2 heads", (3, 7, 11, 2), self.N),
            Case("one query per item: batch 8, target 1, source 512, 4 heads", (8, 1, 512, 4),
                 self.N),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            B, T, S, H = (int(x) for x in rng.integers(1, 40, size=4))
            out.append(Case(f"random: batch {B}, target {T}, source {S}, {H} heads",
                            (B, T, S, H), self.N))
        return out

    def compare(self, case, out):
        B, T, S, H = case.args
        shape, n = _pair(out, 2, "(shape, elements)")
        if not isinstance(shape, (tuple, list, np.ndarray)):
            raise Reject(f"the shape is {_what(shape)}; expected a tuple such as (B, H, T, S)")
        shape = tuple(_int(x, "each entry of the shape") for x in np.asarray(shape).reshape(-1)) \
            if isinstance(shape, np.ndarray) else tuple(_int(x, "each entry of the shape")
                                                        for x in shape)
        count = _int(n, "the element count")
        ref_n = cost.score_matrix_elements(B, T, S, H)
        ok_shapes = {(B, H, T, S)} | ({(B, T, S)} if H == 1 else set())
        if count != ref_n:
            guesses = [(B * T * S, "your count leaves out the heads"),
                       (H * T * S, "your count leaves out the batch"),
                       (T * S, "your count is one T x S score matrix: multiply by the batch and "
                               "the heads"),
                       (B * H * T, "your count leaves out the source length")]
            for val, why in guesses:
                if count == val:
                    raise Reject(f"{why} ({count:,} elements)")
            raise Reject(f"{count:,} is not the number of scores for batch {B}, target {T}, source "
                         f"{S}, {H} heads")
        if shape not in ok_shapes:
            if sorted(shape) == sorted((B, H, T, S)):
                raise Reject(f"your shape {shape} has the right sizes in the wrong order: scores "
                             f"are (B, H, T, S), with the key axis S last")
            raise Reject(f"your shape {shape} is not the score tensor's shape for batch {B}, "
                         f"target {T}, source {S}, {H} heads")

    def on_pass(self, cases, outputs):
        shape, n = outputs[0]
        mib = n * 4 / 2 ** 20
        return (f"Batch 8, target 64, source 512, 4 heads: {tuple(int(x) for x in shape)}, "
                f"{int(n):,} scores ({mib:.0f} MiB in float32, per attention layer).")


# ---------------------------------------------------------------- 4.2 multiply-adds
class MultiplyAdds(Spec):
    n_random = 2
    N = ("T", "S", "D_k", "D_v")

    def fixed(self):
        return [
            Case("everything 1", (1, 1, 1, 1), self.N),
            Case("T=3, S=5, D_k=4, D_v=6 (D_k differs from D_v)", (3, 5, 4, 6), self.N),
            Case("the chapter's sizes: T=64, S=512, D_k = D_v = 64", (64, 512, 64, 64), self.N),
            Case("one query (T=1), S=10, D_k=8, D_v=2", (1, 10, 8, 2), self.N),
            Case("T=7, S=3, D_k=2, D_v=9", (7, 3, 2, 9), self.N),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            T, S, Dk, Dv = (int(x) for x in rng.integers(1, 100, size=4))
            out.append(Case(f"random: T={T}, S={S}, D_k={Dk}, D_v={Dv}", (T, S, Dk, Dv), self.N))
        return out

    def compare(self, case, out):
        T, S, Dk, Dv = case.args
        got = _int(out, "your count")
        ref = cost.attention_flops(T, S, Dk, Dv) // 2
        if got == ref:
            return
        guesses = [(T * S * Dk, "you counted the scores (T S D_k) but not the weighted sum of the "
                                "values (T S D_v)"),
                   (T * S * Dv, "you counted the weighted sum of the values but not the scores"),
                   (2 * ref, "you counted FLOPs (2 per multiply-add); count multiply-adds"),
                   (T * S * Dk * Dv, "you multiplied D_k and D_v; the two steps add up: "
                                     "T S D_k + T S D_v"),
                   (T * S, "T S is the number of scores, not the work to compute them"),
                   ((T + S) * (Dk + Dv), "the work grows with T times S (every query meets every "
                                         "key), not T plus S")]
        for val, why in guesses:
            if got == val:
                raise Reject(f"{why} (you returned {got:,})")
        raise Reject(f"{got:,} is not the number of multiply-adds")


# ---------------------------------------------------------------- 4.3 intervention
class Intervention(Spec):
    n_random = 2
    N = ("query", "keys", "values", "control")

    def fixed(self):
        q, K, V = _RX.query, _RX.keys, _RX.values
        rng = np.random.default_rng(15)
        return [
            Case("the running example, control = the mean of the values",
                 (q, K, V, V.mean(axis=0)), self.N),
            Case("the running example, control = zeros", (q, K, V, np.zeros(3)), self.N),
            Case("one source (S=1)", (q, K[:1], V[:1], np.ones(3)), self.N),
            Case("keys of width 2, values of width 4, control = ones",
                 (np.array([1.0, -0.5]), np.round(rng.normal(size=(6, 2)), 2),
                  np.round(rng.normal(size=(6, 4)), 2), np.ones(4)), self.N),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            S, Dk, Dv = int(rng.integers(2, 8)), int(rng.integers(2, 5)), int(rng.integers(2, 5))
            out.append(Case(f"random: S={S}, D_k={Dk}, D_v={Dv}",
                            (_rand(rng, Dk), _rand(rng, S, Dk), _rand(rng, S, Dv), _rand(rng, Dv)),
                            self.N))
        return out

    def compare(self, case, out):
        q, K, V, ctl = case.args
        before = attend(q, K, V)
        w = before.weights
        pos = int(np.argmax(w))
        V2 = V.copy()
        V2[pos] = ctl
        change = float(np.linalg.norm(attend(q, K, V2).context - before.context))
        p, ch = _pair(out, 2, "(position, change)")
        got_p = _int(p, "the position")
        if got_p != pos:
            if got_p == int(np.argmin(w)):
                raise Reject(f"position {got_p} has the smallest weight; replace the value at the "
                             f"largest weight (argmax)")
            if got_p == pos + 1:
                raise Reject(f"index {got_p} is one too high: return numpy's index of the "
                             f"position, which counts from 0")
            raise Reject(f"position {got_p} is not the position with the largest attention weight")
        try:
            got_c = float(np.asarray(ch, dtype=np.float64).reshape(()))
        except Exception:
            raise Reject(f"the change is {_what(ch)}; expected one number (a norm)") from None
        if not math.isclose(got_c, change, rel_tol=1e-6, abs_tol=1e-12):
            if math.isclose(got_c, change ** 2, rel_tol=1e-6, abs_tol=1e-12):
                raise Reject("your change is the squared distance; use the Euclidean norm "
                             "(np.linalg.norm of the difference)")
            if got_c == 0:
                raise Reject("your change is 0: replacing a value leaves the weights unchanged but "
                             "changes the context; measure the context")
            if K.shape[1] == V.shape[1]:
                K2 = K.copy()
                K2[pos] = ctl
                if math.isclose(got_c, float(np.linalg.norm(_sm(K2 @ q) @ V - w @ V)),
                                rel_tol=1e-6):
                    raise Reject("you replaced the key; the experiment replaces the value")
            raise Reject(f"your change {got_c:.6g} is not the norm of the context difference")

    def on_pass(self, cases, outputs):
        p, ch = outputs[0]
        return (f"Running example: replacing value {int(p)} (the largest weight) by the mean "
                f"value moves the context by {float(ch):.4f}.")


# ---------------------------------------------------------------- 4.6 entropy
class Entropy(Spec):
    n_random = 2

    def fixed(self):
        return [
            Case("uniform weights over five keys", (np.full(5, 0.2),), ("weights",)),
            Case("one-hot weights", (np.array([0.0, 1.0, 0.0, 0.0]),), ("weights",)),
            Case("two eligible keys and two masked zeros: [0.5 0.5 0 0]",
                 (np.array([0.5, 0.5, 0.0, 0.0]),), ("weights",)),
            Case("the running example's softmax weights", (softmax(_RX.keys @ _RX.query),),
                 ("weights",)),
            Case("a batch of rows, the last one all zeros (an all-masked row, zeros policy)",
                 (np.array([[0.7, 0.2, 0.1], [0.0, 0.5, 0.5], [0.0, 0.0, 0.0]]),), ("weights",)),
            Case("a single key (S=1)", (np.array([1.0]),), ("weights",)),
        ]

    def random(self, rng):
        out = []
        for _ in range(self.n_random):
            T, S = int(rng.integers(2, 5)), int(rng.integers(2, 9))
            w = rng.dirichlet(np.ones(S), size=T)
            w[0, 0] = 0.0
            w[0] /= w[0].sum()
            out.append(Case(f"random: {T} weight rows over S={S} keys, one zero weight",
                            (w,), ("weights",)))
        return out

    def compare(self, case, out):
        (w,) = case.args
        ref = entropy(w)
        arr = numeric(to_array(out, "your entropy"), "your entropy")
        if arr.shape != ref.shape:
            if arr.size == 1 and ref.shape == ():
                arr = arr.reshape(())
            else:
                expect_shape(arr, ref.shape, "your entropy", "one entropy per row: the weights' "
                             "shape without the last axis")
        a = arr.astype(np.float64)
        if np.isnan(a).any():
            raise Reject("your entropy is NaN where a weight is 0: 0 * log(0) is NaN in numpy, but "
                         "it must count as 0 (compute the log only where w > 0)")
        if close(a, ref):
            return
        why = diagnose(case, a, [
            (lambda c: entropy(w, base=2), "your entropy is in bits (log base 2); use the natural "
                                           "log (nats)"),
            (lambda c: -entropy(w), "your entropy has the wrong sign: H = -sum w log w >= 0"),
            (lambda c: entropy(w) / np.log(w.shape[-1]) if w.shape[-1] > 1 else None,
             "you divided by log(S) (a normalised entropy); the exercise asks for the entropy in "
             "nats"),
        ], ref=ref)
        raise Reject(why or value_mismatch(a, ref, what="your entropy"))

    def on_pass(self, cases, outputs):
        return (f"Uniform weights: {float(np.asarray(outputs[0])):.3f} nats over 5 keys (log 5); "
                f"over 50 keys log 50 = {math.log(50):.3f}. The running example's weights: "
                f"{float(np.asarray(outputs[3])):.3f} nats.")


SPECS: dict[str, Spec] = {
    "1.1": Parts(), "1.2": ContextVector(), "1.3": ValueRange(), "1.4": QueryDependence(),
    "2.1": DotScores(), "2.2": ByHand(), "2.4": Temperature(), "2.5": PaddingMask(),
    "2.6": MaskedSoftmax(), "2.7": LocalWindow(),
    "3.1": StableSoftmax(), "3.2": SafeMaskedSoftmax(), "3.3": DotBilinear(), "3.4": Additive(),
    "3.5": Batched(),
    "4.1": ScoreSize(), "4.2": MultiplyAdds(), "4.3": Intervention(), "4.6": Entropy(),
}


def cases_for(ex: Exercise, seed: int) -> list[Case]:
    """The cases of a computational exercise (empty for value and written exercises)."""
    spec = SPECS.get(ex.id)
    if spec is None or ex.kind in ("value", "written"):
        return []
    return spec.cases(seed, ex.id)


# ====================================================================== judging
def _case_text(case: Case, out=None, show_out: bool = True) -> str:
    if case.hidden:
        return (f"Failing case: {case.note}, one of the grader's own random cases (its inputs are "
                f"not shown; check() in your notebook tries random cases of its own)")
    lines = [f"Minimal failing case: {case.note}"]
    width = max((len(n) for n in case.names), default=0)
    for name, val in zip(case.names, case.args):
        lines.append(f"    {name:<{width}} = {_fmt(val)}")
    if show_out:
        lines.append(f"    {'yours':<{width}} = {_fmt(out)}")
    return "\n".join(lines)


def _raised_text(r: dict) -> str:
    where = f" ({r.get('where')})" if r.get("where") else ""
    msg = r.get("message", "")
    return f"raised {r.get('type', 'an exception')}{where}" + (f": {msg}" if msg else "")


def _is_blank(v) -> bool:
    return v is None or v is Ellipsis or (isinstance(v, str) and not v.strip())


def judge(ex: Exercise, cases: list[Case], record: dict) -> Verdict:
    """Turn a probe record (decoded) into a verdict. Never raises."""
    try:
        with np.errstate(all="ignore"):
            return _judge(ex, cases, record)
    except Exception as exc:  # a bug in a check must not reach the student as a traceback
        return Verdict("error", f"internal error in the checker for {ex.id} ({type(exc).__name__}: "
                                f"{exc}); please tell your instructor", "checker error")


def _judge(ex: Exercise, cases: list[Case], record: dict) -> Verdict:
    kind = record.get("kind")
    label = ex.answer_label
    if kind == "missing":
        return Verdict("not_attempted", f"no `{label}` is defined", "not attempted")
    if kind == "harness_error":
        return Verdict("error", f"the grader could not evaluate `{label}`: "
                                f"{record.get('message', '')}", "error")
    if ex.kind == "written":
        return _judge_written(ex, record.get("value"))
    if ex.kind == "value":
        value = record.get("value")
        if value is Ellipsis or value is None or (isinstance(value, dict) and value and all(
                v is Ellipsis for v in value.values())):
            return Verdict("not_attempted", f"`{label}` is still `...`", "not attempted")
        status, reason = SPECS[ex.id].judge_value(value)
        if status == "pass":
            return Verdict("pass", "", "pass")
        return Verdict("fail", reason, reason.split(":")[0])
    if kind == "shape":
        return Verdict("fail", f"pass the functions as a tuple ({label}), got "
                               f"{record.get('what')}", "wrong answer object")
    if kind == "notcallable":
        val = record.get("value")
        name = ex.answer_names[int(record.get("index", 0))]
        if val is Ellipsis or val is None:
            return Verdict("not_attempted", f"`{name}` is {_fmt(val)}, not a function yet",
                           "not attempted")
        return Verdict("fail", f"`{name}` is {_what(val)}; pass the function itself (without "
                               f"calling it): check({ex.id!r}, {name})", "not a function")
    if kind != "calls":
        return Verdict("error", f"unexpected record for {ex.id}", "error")

    calls = record.get("calls", [])
    spec = SPECS[ex.id]
    why = uses_reference(record)
    if why:
        return Verdict("fail", why, "calls the package's own implementation")
    stub_fns = {c.fn for c, r in zip(cases, calls)
                if r.get("raised", {}).get("type") == "NotImplementedError"
                and not any(c2.fn == c.fn and "out" in r2 for c2, r2 in zip(cases, calls))}
    used_fns = {c.fn for c in cases}
    if used_fns and stub_fns == used_fns:
        return Verdict("not_attempted", f"`{label}` still raises NotImplementedError (the stub)",
                       "not attempted")
    failures = []  # (status, reason, case index)
    outputs = []
    for i, case in enumerate(cases):
        rec = calls[i] if i < len(calls) else None
        if rec is None:
            if failures and failures[-1][0] == "timeout":
                break
            failures.append(("error", "the time budget for this check ran out before this case",
                             i))
            break
        if rec.get("skipped") == "stub":
            failures.append(("fail", f"`{ex.answer_names[case.fn]}` still raises "
                                     f"NotImplementedError (the stub)", i))
            outputs.append(None)
            continue
        if "timeout" in rec:
            failures.append(("timeout", f"did not finish within {rec['timeout']:g} s (an endless "
                                        f"loop?)", i))
            break
        if "raised" in rec:
            if rec["raised"].get("type") == "NotImplementedError" and case.fn in stub_fns:
                failures.append(("fail", f"`{ex.answer_names[case.fn]}` is not written yet (it "
                                         f"still raises NotImplementedError)", i))
            else:
                failures.append(("error", f"your function {_raised_text(rec['raised'])}", i))
            outputs.append(None)
            continue
        out = rec.get("out")
        outputs.append(out)
        if rec.get("mutated"):
            names = ", ".join(f"`{case.names[j]}`" for j in rec["mutated"] if j < len(case.names))
            failures.append(("fail", f"your function changed its input {names} in place; copy "
                                     f"before modifying (a caller, or the next check, would see "
                                     f"different numbers)", i))
            continue
        try:
            spec.compare(case, out)
        except Reject as r:
            failures.append(("fail", str(r), i))
    n = len(cases)
    printed = sum(int(r.get("printed", 0)) for r in calls if isinstance(r, dict))
    printed_note = (f"\n(Your function printed {printed} characters; the check hides them.)"
                    if printed else "")
    if not failures:
        extra = ""
        try:
            extra = spec.on_pass(cases, outputs)
        except Exception:
            extra = ""
        msg = f"all {n} cases pass (edge cases and seeded random cases)"
        if extra:
            msg += "\n" + extra
        return Verdict("pass", msg + printed_note, "pass", {"cases": n})
    status, reason, i = failures[0]
    case = cases[i]
    rec = calls[i] if i < len(calls) else {}
    show_out = status == "fail" and "out" in rec
    body = [reason, _case_text(case, rec.get("out"), show_out)]
    others = failures[1:]
    if others:
        def key(text):
            return re.sub(r"[-+]?\d[\d.e+-]*", "#", text)[:60]

        seen = {key(reason)}
        fresh = []
        for st, rs, j in others:
            if key(rs) not in seen:
                fresh.append((rs, j))
                seen.add(key(rs))
        lines = []
        for rs, j in fresh[:3]:
            short = rs.split("\n")[0]
            if len(short) > 240:
                short = short[:237] + "..."
            lines.append(f"    - {cases[j].note}: {short}")
        same = len(others) - len(fresh[:3])
        head = f"{len(others)} other case(s) of {n} fail too"
        if lines:
            body.append(f"{head}; other problems:\n" + "\n".join(lines)
                        + (f"\n    (and {same} more case(s))" if same else ""))
        else:
            body.append(f"{head}, with the same problem.")
    summary = reason.split("\n")[0]
    return Verdict(status, "\n".join(body) + printed_note, summary,
                   {"cases": n, "failed": len(failures), "first_failure": case.note})


#: The package's implementations the checks compare answers against. An answer that calls one
#: earns no mark: student-side, ``check`` sees the call (the probe watches these files); in the
#: grader's sandbox they are not even there (grading/kernel_view.py), and using one raises
#: ``ReferenceNotAvailable``.
REFERENCE_MODULES = ("attention_lab.scores", "attention_lab.softmax", "attention_lab.masks",
                     "attention_lab.attention", "attention_lab.cost", "attention_lab.tensor",
                     "attention_lab.streaming", "attention_lab.exercises.checks")


def uses_reference(record: dict) -> str:
    """Why an answer earns no mark because it calls the package's own implementation, or ``""``."""
    for call in record.get("calls", []):
        names = call.get("reference") or []
        if names or call.get("raised", {}).get("type") == "ReferenceNotAvailable":
            what = ", ".join(f"`{n}`" for n in names) or "a part of the package"
            return (f"your answer calls {what}: the package's own implementation, which this "
                    f"check compares answers against, so it earns no mark. Compute the result "
                    f"in your own code.")
    return ""


def _judge_written(ex: Exercise, value) -> Verdict:
    names = [f for f, _ in ex.fields]
    if value is None or value is Ellipsis:
        return Verdict("not_attempted", f"`{ex.answer}` is empty", "not attempted")
    if isinstance(value, str):
        answers = {"answer": value}
    elif isinstance(value, dict):
        answers = {k: v for k, v in value.items()}
    else:
        return Verdict("fail", f"`{ex.answer}` is {_what(value)}; write your answer as a dict with "
                               f"the fields {', '.join(names)} (strings)", "wrong answer object")
    texts = {k: v for k, v in answers.items() if isinstance(v, str) and v.strip()}
    if not texts:
        return Verdict("not_attempted", f"every field of `{ex.answer}` is still empty",
                       "not attempted", {"answer": {}})
    words = sum(len(v.split()) for v in texts.values())
    empty = [f for f in names if f not in texts]
    note = f"{len(texts)} of {len(names)} field(s) answered, {words} words"
    if empty:
        note += f"; still empty: {', '.join(empty)}"
    rubric = "\n".join(f"  - {item}" for item in ex.rubric)
    msg = (f"Recorded for your instructor ({note}). Written answers are never graded "
           f"automatically.\nCompare your answer with the rubric:\n{rubric}")
    return Verdict("needs_instructor", msg, "needs instructor",
                   {"answer": {k: v[:5000] for k, v in texts.items()}, "words": words})


def encoded_inputs(cases: list[Case]) -> list[dict]:
    """The cases as the probe receives them (arguments only: notes and expectations stay here)."""
    from ..grading.probe import encode

    out = []
    for c in cases:
        args = [({"__impl__": a.code} if isinstance(a, Impl) else encode(a)) for a in c.args]
        out.append({"args": args, "fn": c.fn})
    return out


__all__ = ["Case", "Verdict", "SPECS", "cases_for", "judge", "encoded_inputs", "STUDENT_SEED",
           "EXERCISES", "REFERENCE_MODULES", "uses_reference"]


# ====================================================================== records from the probe
RECORD_KINDS = ("missing", "value", "written", "calls", "shape", "notcallable", "harness_error")


class BadRecord(ValueError):
    pass


def decode_record(raw) -> dict:
    """Validate a probe record (parsed JSON) and decode its outputs; ``BadRecord`` if malformed.

    The grader calls this on whatever a student's kernel wrote, so it checks every field it uses
    and never evaluates anything (plain JSON in, numpy arrays out).
    """
    from ..grading.probe import decode

    if not isinstance(raw, dict) or raw.get("kind") not in RECORD_KINDS:
        raise BadRecord("record has no known kind")
    kind = raw["kind"]
    try:
        if kind in ("value", "written"):
            return {"kind": kind, "value": decode(raw.get("value"))}
        if kind == "notcallable":
            index = raw.get("index", 0)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < 8:
                raise BadRecord("bad index")
            return {"kind": kind, "index": index, "value": decode(raw.get("value"))}
        if kind == "shape":
            return {"kind": kind, "what": str(raw.get("what", ""))[:100]}
        if kind == "harness_error":
            return {"kind": kind, "message": str(raw.get("message", ""))[:300]}
        if kind == "missing":
            return {"kind": kind}
        calls = raw.get("calls")
        if not isinstance(calls, list) or len(calls) > 1000:
            raise BadRecord("calls is not a list")
        out = []
        for c in calls:
            if not isinstance(c, dict):
                raise BadRecord("a call is not an object")
            d: dict = {}
            if "out" in c:
                d["out"] = decode(c["out"])
            elif "raised" in c:
                r = c["raised"]
                if not isinstance(r, dict):
                    raise BadRecord("bad exception record")
                d["raised"] = {k: str(r.get(k, ""))[:500] for k in ("type", "message", "where")}
            elif "timeout" in c:
                t = c["timeout"]
                if not isinstance(t, (int, float)) or isinstance(t, bool):
                    raise BadRecord("bad timeout")
                d["timeout"] = float(t)
            elif c.get("skipped") == "stub":
                d["skipped"] = "stub"
            else:
                raise BadRecord("a call has no result")
            printed = c.get("printed", 0)
            if isinstance(printed, int) and not isinstance(printed, bool) and printed > 0:
                d["printed"] = printed
            mutated = c.get("mutated")
            if isinstance(mutated, list) and all(isinstance(i, int) and not isinstance(i, bool)
                                                 and 0 <= i < 32 for i in mutated):
                d["mutated"] = mutated
            reference = c.get("reference")
            if isinstance(reference, list) and reference:
                d["reference"] = [str(n)[:100] for n in reference[:5]]
            out.append(d)
        return {"kind": "calls", "calls": out}
    except BadRecord:
        raise
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        raise BadRecord(f"record could not be decoded: {exc}") from None
