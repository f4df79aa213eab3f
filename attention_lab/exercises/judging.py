"""Judging the exercises: cases, verdicts, the helpers every check uses, the judge, and the
decoding of what the probe recorded.

The checks themselves (what each one feeds a student's answer, and how it compares the outputs)
are the :class:`Spec` subclasses of :mod:`.specs` (``specs/level1.py`` ... ``level4.py``, in
exercise order). Every check has fixed edge cases (ordered from the simplest, so the first
failure is the minimal failing case) plus seeded random cases. The expected outputs come from the
package's reference implementations (:mod:`attention_lab.scores`, :mod:`~attention_lab.softmax`,
:mod:`~attention_lab.masks`, :mod:`~attention_lab.attention`,
:mod:`~attention_lab.analysis.cost`). A *test* answer is run against the implementations of
:data:`IMPL_NOTES`, correct and broken; a part of an answer that declares something (3.2's
all-masked-row policy) reaches the check as :attr:`Spec.declared`.

Judging runs in the checker's own process: student-side inside :func:`check`, grader-side in the
grader (never in a student's kernel). A failure names the case, shows its inputs and the
student's output, and says what is wrong (shape, dtype, NaN, masked mass, row sums, a recognised
mistake such as a softmax over the wrong axis); it never prints the expected values. The
grader's own random cases (any seed but :data:`STUDENT_SEED`) are *hidden*: a failure on one is
described, but its inputs and the output are not shown (they go into the feedback a student
gets back).
"""

from __future__ import annotations

import copy
import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from .implementations import Impl, Readout, callable_of, is_marker
from .probe import TooLarge, Unsupported, decode, encode
from .registry import Exercise

STUDENT_SEED = 20240519

#: The implementations a student's test examines (:func:`.implementations.make_impl`), as a
#: failure message describes them.
IMPL_NOTES = {
    "A": "a correct dot-product attention",
    "B": "an attention that ignores the query (uniform weights)",
    "C": "an attention that ignores the query (weights from the key norms)",
    "D": "a correct dot-product attention at temperature 0.5",
    "E": "a correct bilinear attention",
    "F": "an 'attention' that always returns the first value",
    "G": "a correct masked softmax (-inf fill) whose all-masked rows are all zeros",
    "H": "a correct masked softmax (-inf fill) whose all-masked rows are NaN",
    "I": "a correct masked softmax (-inf fill) that raises ValueError for an all-masked row",
    "J": "a masked softmax that zeroes the masked weights after the softmax without "
         "renormalising",
    "K": "a masked softmax that fills masked scores with -30 (tiny, not zero, weights)",
    "L": "a masked softmax that sets the masked scores to 0 (scores * mask)",
    "M": "a masked softmax that ignores the mask",
    "N": "a masked softmax that fills masked scores with the dtype's finfo.min (all-masked "
         "rows: uniform weights)",
    "O": "a masked softmax that reads the mask inverted (True = masked)",
}


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
def fmt(x, limit: int = 20) -> str:
    """A short, rounded rendering of an input or output (never the reference)."""
    if isinstance(x, Impl):
        return IMPL_NOTES.get(x.code, "an attention implementation")
    if isinstance(x, Readout):
        return repr(x)
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
        return fmt(np.asarray(x))
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(fmt(v, limit) for v in x[:6]) + (", ..." if len(x) > 6 else "")
        return f"({inner})" if isinstance(x, tuple) else f"[{inner}]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {fmt(v, 6)}" for k, v in list(x.items())[:8]) + "}"
    if x is Ellipsis:
        return "..."
    text = repr(x)
    return text if len(text) < 200 else text[:200] + "..."


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def describe_type(x) -> str:
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


class Ambiguous(Reject):
    """The output fits several known mistakes that this case cannot tell apart (a softmax over
    the batch axis and over the target axis agree when B = T = 1). The judge then takes its
    headline from a case that can tell them apart, if one fails."""

    def __init__(self, candidates: list[str]):
        self.candidates = list(candidates)
        first = [c.split(":")[0] for c in self.candidates]
        super().__init__("your result fits more than one known mistake, which this case cannot "
                         "tell apart: " + "; or ".join(first))


def diagnosis(found: list[str]) -> None:
    """Raise the one known mistake of ``found`` as :class:`Reject`, or :class:`Ambiguous` when
    several fit; nothing when none does."""
    distinct = list(dict.fromkeys(found))
    if len(distinct) == 1:
        raise Reject(distinct[0])
    if distinct:
        raise Ambiguous(distinct)


def to_array(out, what: str = "your result") -> np.ndarray:
    if out is None:
        raise Reject(f"{what}: got None (did you forget `return`?)")
    if out is Ellipsis:
        raise Reject(f"{what}: still `...`")
    if isinstance(out, (Unsupported, TooLarge, dict, str)):
        raise Reject(f"{what}: got {describe_type(out)}, expected a numpy array")
    if isinstance(out, np.ndarray):
        return out
    try:
        arr = np.asarray(out)
    except Exception:
        raise Reject(f"{what} ({describe_type(out)}) could not be read as an array") from None
    if arr.dtype == object:
        raise Reject(f"{what} ({describe_type(out)}) is not a rectangular array of numbers")
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
    """The message of the known mistake whose output matches ``arr`` (and differs from the
    reference), or ''. Raises :class:`Ambiguous` when several mistakes match: this case cannot
    say which one was made."""
    found = []
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
            found.append(message)
    if len(set(found)) > 1:
        diagnosis(found)
    return found[0] if found else ""


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


def check_values(out, ref, what: str, shape_why: str) -> np.ndarray:
    """An answer's array: numeric, of ``ref``'s shape (``shape_why`` says why that shape), and
    close to ``ref``; raises :class:`Reject` naming the first wrong entry."""
    arr = numeric(to_array(out, what), what)
    expect_shape(arr, ref.shape, what, shape_why)
    if not close(arr, ref):
        raise Reject(value_mismatch(arr, ref, what=what))
    return arr


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
            tiny = (": exp(fill - max) did not underflow to 0, so the fill is not far enough "
                    "below the eligible scores (as -30 is not); fill with -np.inf, which always "
                    "gives 0, or set masked weights to 0") if 0 < abs(val) < 1e-6 else ""
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


def softmax_axis(x, axis):
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - m)
        return e / e.sum(axis=axis, keepdims=True)


def as_bool(out, what: str = "your result") -> bool:
    if isinstance(out, (bool, np.bool_)):
        return bool(out)
    if isinstance(out, np.ndarray) and out.dtype == bool and out.shape == ():
        return bool(out)
    if isinstance(out, np.ndarray) and out.dtype == bool:
        raise Reject(f"{what} is an array of shape {tuple(out.shape)}; return a single True or "
                     f"False (combine per-entry tests with all() or any())")
    raise Reject(f"{what} is {describe_type(out)}; return True or False")


def as_tuple(out, n: int, names: str) -> tuple:
    if not isinstance(out, (tuple, list)) or len(out) != n:
        raise Reject(f"your function returned {describe_type(out)}; it must return a tuple {names}")
    return tuple(out)


def whole_number(x, what: str) -> int:
    if isinstance(x, (bool, np.bool_)):
        raise Reject(f"{what} is a bool; expected an integer")
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)) and float(x).is_integer():
        return int(x)
    if isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "iu":
        return int(x)
    raise Reject(f"{what} is {describe_type(x)}; expected a whole number")


# ====================================================================== specs
class Spec:
    """A computational check: ``fixed()`` edge cases, ``random(rng)`` cases, ``compare``.

    ``declared``: the answer's declared parts by name (3.2's policy), set by :meth:`bound` when
    an answer is judged; ``declaration_problem`` rejects a declaration before any case, and
    ``accepts_raise`` says when an exception is the declared behaviour."""

    n_random = 3
    declared: dict = {}

    def bound(self, declared: dict) -> Spec:
        """This check for one answer, with the answer's declared parts."""
        spec = copy.copy(self)
        spec.declared = dict(declared)
        return spec

    def declaration_problem(self) -> tuple[str, str] | None:
        """(status, message) when a declared part is missing or not allowed, else None."""
        return None

    def judge_declared(self) -> tuple[str, str] | None:
        """(status, message) when a declared part is wrong, judged once every case passed (2.4's
        comparison); None when it is right or there is none."""
        return None

    def accepts_raise(self, case: Case, raised: dict) -> bool:
        """Whether raising ``raised`` (type, message) is the right answer to ``case``."""
        return False

    def raise_note(self, case: Case, raised: dict) -> str:
        """What to add when an answer raised where it should not have ('' for nothing)."""
        return ""

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


def rand(rng, *shape, scale=1.0):
    return np.round(rng.normal(size=shape) * scale, 3)


def dirichlet(rng, n):
    return rng.dirichlet(np.ones(n))




def cases_for(ex: Exercise, seed: int) -> list[Case]:
    """The cases of a computational exercise (empty for value and written exercises)."""
    from .specs import SPECS

    spec = SPECS.get(ex.id)
    if spec is None or ex.kind in ("value", "written"):
        return []
    return spec.cases(seed, ex.id)


# ====================================================================== judging
def _case_text(case: Case, out=None, show_out: bool = True,
               label: str = "Minimal failing case") -> str:
    if case.hidden:
        return (f"Failing case: {case.note}, one of the grader's own random cases (its inputs are "
                f"not shown; check() in your notebook tries random cases of its own)")
    lines = [f"{label}: {case.note}"]
    width = max((len(n) for n in case.names), default=0)
    for name, val in zip(case.names, case.args):
        lines.append(f"    {name:<{width}} = {fmt(val)}")
    if show_out:
        lines.append(f"    {'yours':<{width}} = {fmt(out)}")
    return "\n".join(lines)


def _raised_text(r: dict) -> str:
    where = f" ({r.get('where')})" if r.get("where") else ""
    msg = r.get("message", "")
    return f"raised {r.get('type', 'an exception')}{where}" + (f": {msg}" if msg else "")


def judge(ex: Exercise, cases: list[Case], record: dict) -> Verdict:
    """Turn a probe record (decoded) into a verdict. Never raises."""
    try:
        with np.errstate(all="ignore"):
            return _judge(ex, cases, record)
    except Exception as exc:  # a bug in a check must not reach the student as a traceback
        return Verdict("error", f"internal error in the checker for {ex.id} ({type(exc).__name__}: "
                                f"{exc}); please tell your instructor", "checker error")


def _judge(ex: Exercise, cases: list[Case], record: dict) -> Verdict:
    from .specs import SPECS

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
        return Verdict("fail", f"pass the answer's parts together, as a tuple: check({ex.id!r}, "
                               f"({label})); got {_a(str(record.get('what')))}",
                       "wrong answer object")
    if kind == "notcallable":
        val = record.get("value")
        name = ex.answer_names[int(record.get("index", 0))]
        if val is Ellipsis or val is None:
            return Verdict("not_attempted", f"`{name}` is {fmt(val)}, not a function yet",
                           "not attempted")
        return Verdict("fail", f"`{name}` is {describe_type(val)}; pass the function itself "
                               f"(without calling it): check({ex.id!r}, {name})", "not a function")
    if kind != "calls":
        return Verdict("error", f"unexpected record for {ex.id}", "error")

    calls = record.get("calls", [])
    declared = {ex.answer_names[int(i)]: v for i, v in record.get("values", {}).items()}
    why = uses_reference(record)
    if why:
        return Verdict("fail", why, "calls the package's own implementation")
    if record.get("foreign"):
        return Verdict("fail", "your code called a function that the checker had handed to "
                               "another case (kept from an earlier call): it earns no mark; use "
                               "only the arguments each call receives",
                       "reused another case's function")
    spec = SPECS[ex.id].bound(declared)
    stub_fns = {c.fn for c, r in zip(cases, calls)
                if r.get("raised", {}).get("type") == "NotImplementedError"
                and not any(c2.fn == c.fn and "out" in r2 for c2, r2 in zip(cases, calls))}
    used_fns = {c.fn for c in cases}
    if used_fns and stub_fns == used_fns:
        stubbed = ", ".join(ex.function_names) or label
        return Verdict("not_attempted", f"`{stubbed}` still raises NotImplementedError (the stub)",
                       "not attempted")
    problem = spec.declaration_problem()
    if problem is not None:
        status, reason = problem
        return Verdict(status, reason, reason.split(":")[0])

    def who(case: Case) -> str:
        return "your function" if len(ex.answer_names) == 1 else f"`{ex.answer_names[case.fn]}`"

    failures = []  # (status, reason, case index)
    ambiguous: dict[int, Ambiguous] = {}  # case index: the mistakes that case cannot tell apart
    uninformed = []  # right verdicts of a test that never called the implementation
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
            elif not spec.accepts_raise(case, rec["raised"]):
                note = spec.raise_note(case, rec["raised"])
                failures.append(("error", f"{who(case)} {_raised_text(rec['raised'])}"
                                          + (f" ({note})" if note else ""), i))
            outputs.append(None)
            continue
        out = rec.get("out")
        outputs.append(out)
        if rec.get("mutated"):
            names = ", ".join(f"`{case.names[j]}`" for j in rec["mutated"] if j < len(case.names))
            failures.append(("fail", f"{who(case)} changed its input {names} in place; copy "
                                     f"before modifying (a caller, or the next check, would see "
                                     f"different numbers)", i))
            continue
        try:
            spec.compare(case, out)
        except Ambiguous as r:
            ambiguous[i] = r
            failures.append(("fail", str(r), i))
            continue
        except Reject as r:
            failures.append(("fail", str(r), i))
            continue
        if rec.get("called") == 0 and any(isinstance(a, Impl) for a in case.args):
            uninformed.append(("fail", f"{who(case)} gave its verdict without calling the "
                                       f"implementation it was given: a test must run it to "
                                       f"tell a correct one from a broken one", i))
    failures = failures or uninformed  # a right verdict on an implementation never called
    n = len(cases)
    printed = sum(int(r.get("printed", 0)) for r in calls if isinstance(r, dict))
    printed_note = (f"\n(Your function printed {printed} characters; the check hides them.)"
                    if printed else "")
    if not failures:
        later = spec.judge_declared()
        if later is not None:
            status, reason = later
            return Verdict(status, f"{reason}\n(Your {ex.function_names[0]} passes all {n} cases.)"
                           + printed_note, reason.split(":")[0], {"cases": n})
        extra = ""
        try:
            extra = spec.on_pass(cases, outputs)
        except Exception:
            extra = ""
        msg = f"all {n} cases pass (edge cases and seeded random cases)"
        if extra:
            msg += "\n" + extra
        return Verdict("pass", msg + printed_note, "pass", {"cases": n})
    # the headline: the first failure, unless it fits several mistakes and a later one does not
    head = next((f for f in failures if f[2] not in ambiguous), failures[0])
    status, reason, i = head
    case = cases[i]
    rec = calls[i] if i < len(calls) else {}
    show_out = status == "fail" and "out" in rec
    label = "Minimal failing case" if head is failures[0] else "Smallest failing case that shows it"
    body = [reason, _case_text(case, rec.get("out"), show_out, label)]
    others = [f for f in failures if f is not head]
    if others:
        def key(text):
            return re.sub(r"[-+]?\d[\d.e+-]*", "#", text)[:60]

        seen = {key(reason)}
        fresh = []
        for st, rs, j in others:
            if j in ambiguous and reason in ambiguous[j].candidates:
                continue  # a case that cannot tell the headline's mistake from another
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
                     "attention_lab.attention", "attention_lab.analysis.cost",
                     "attention_lab.tensor", "attention_lab.streaming",
                     "attention_lab.exercises.judging", "attention_lab.exercises.specs")


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


#: a written answer shows its rubric only once every field holds this many words: the rubric
#: is for comparing an argument with, not for writing one from
WRITTEN_MIN_WORDS = 12


def _judge_written(ex: Exercise, value) -> Verdict:
    names = [f for f, _ in ex.fields]
    if value is None or value is Ellipsis:
        return Verdict("not_attempted", f"`{ex.answer}` is empty", "not attempted")
    if isinstance(value, str):
        answers = {"answer": value}
    elif isinstance(value, dict):
        answers = {k: v for k, v in value.items()}
    else:
        return Verdict("fail", f"`{ex.answer}` is {describe_type(value)}; write your answer as a "
                               f"dict with the fields {', '.join(names)} (strings)",
                       "wrong answer object")
    texts = {k: v for k, v in answers.items() if isinstance(v, str) and v.strip()}
    if not texts:
        return Verdict("not_attempted", f"every field of `{ex.answer}` is still empty",
                       "not attempted", {"answer": {}})
    words = sum(len(v.split()) for v in texts.values())
    empty = [f for f in names if f not in texts]
    note = f"{len(texts)} of {len(names)} field(s) answered, {words} words"
    if empty:
        note += f"; still empty: {', '.join(empty)}"
    thin = [f for f in names if len(texts.get(f, "").split()) < WRITTEN_MIN_WORDS]
    if thin:
        after = (f"The rubric is shown once every field holds an answer of at least "
                 f"{WRITTEN_MIN_WORDS} words (not yet: {', '.join(thin)}): write your argument "
                 f"first, then compare it with the rubric.")
    else:
        after = "Compare your answer with the rubric:\n" + "\n".join(
            f"  - {item}" for item in ex.rubric)
    msg = (f"Recorded for your instructor ({note}). Written answers are never graded "
           f"automatically.\n{after}")
    return Verdict("needs_instructor", msg, "needs instructor",
                   {"answer": {k: v[:5000] for k, v in texts.items()}, "words": words})


def encoded_inputs(cases: list[Case]) -> list[dict]:
    """The cases as the probe receives them (arguments only: notes and expectations stay here).
    A function argument (an :class:`Impl`, a :class:`Readout`) becomes
    ``{"__callable__": {"key": "CASE:ARG", "name"}}``: the caller says what each key calls."""
    def one(i, j, a):
        if is_marker(a):
            return {"__callable__": {"key": f"{i}:{j}", "name": callable_of(a).__name__}}
        return encode(a)

    return [{"args": [one(i, j, a) for j, a in enumerate(c.args)], "fn": c.fn}
            for i, c in enumerate(cases)]


__all__ = ["Case", "Verdict", "Spec", "Reject", "Ambiguous", "diagnosis", "IMPL_NOTES",
           "cases_for", "judge",
           "encoded_inputs", "decode_record", "BadRecord", "STUDENT_SEED", "REFERENCE_MODULES",
           "uses_reference"]


# ====================================================================== records from the probe
RECORD_KINDS = ("missing", "value", "written", "calls", "shape", "notcallable", "harness_error")


class BadRecord(ValueError):
    pass


def decode_record(raw) -> dict:
    """Validate a probe record (parsed JSON) and decode its outputs; ``BadRecord`` if malformed.

    The grader calls this on whatever a student's kernel wrote, so it checks every field it uses
    and never evaluates anything (plain JSON in, numpy arrays out).
    """
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
        values = raw.get("values", {})
        if not isinstance(values, dict) or not all(
                isinstance(k, str) and k.isdigit() and int(k) < 8 for k in values):
            raise BadRecord("bad declared values")
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
            called = c.get("called")
            if isinstance(called, int) and not isinstance(called, bool) and called >= 0:
                d["called"] = called
            out.append(d)
        declared = {k: decode(v) for k, v in values.items()}
        foreign = raw.get("foreign", 0)
        return {"kind": "calls", "calls": out, **({"values": declared} if declared else {}),
                **({"foreign": foreign} if isinstance(foreign, int) and foreign > 0 else {})}
    except BadRecord:
        raise
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        raise BadRecord(f"record could not be decoded: {exc}") from None
