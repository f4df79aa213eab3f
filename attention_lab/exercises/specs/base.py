"""What every check is built from: the cases (:class:`Case`), the check itself (:class:`Spec`,
subclassed once per exercise in :mod:`.level1` ... :mod:`.level4`), the rejection of an output
(:class:`Reject`, with the helpers that say what is wrong with it) and the short rendering of an
input or output in a message (:func:`fmt`). The judge that runs them is
:mod:`attention_lab.exercises.judging`.
"""

from __future__ import annotations

import copy
import zlib
from dataclasses import dataclass, field

import numpy as np

from ...examples import running_example
from ..implementations import Impl, Readout
from ..probe import TooLarge, Unsupported

STUDENT_SEED = 20240519
#: the chapter's running example, which many cases use (never modified)
RX = running_example()

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


# ====================================================================== formatting
def fmt(x, limit: int = 20) -> str:
    """A short, rounded rendering of an input or output (never the reference)."""
    if isinstance(x, Impl):
        return IMPL_NOTES.get(x.code, "an attention implementation")
    if isinstance(x, (Readout, Unsupported, TooLarge)):
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


def with_article(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def describe_type(x) -> str:
    """'a list', 'None', 'a dict', ... for messages about the type of a result."""
    if x is None:
        return "None"
    if isinstance(x, Unsupported):
        return with_article(x.what)
    if isinstance(x, TooLarge):
        return f"an object of shape {x.shape} (too large to record)"
    if isinstance(x, np.ndarray):
        return f"an array of shape {tuple(x.shape)} and dtype {x.dtype}"
    return with_article(type(x).__name__)


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


def _text(text: str, what: str) -> Reject:
    """Numbers written as text ("0.5", ["0.5", "0.3"])."""
    shown = repr(text if len(text) <= 30 else text[:27] + "...")
    return Reject(f"{what}: got text ({shown}) where numbers belong: write numbers without quotes")


def to_array(out, what: str = "your result") -> np.ndarray:
    if out is None:
        raise Reject(f"{what}: got None (did you forget `return`?)")
    if out is Ellipsis:
        raise Reject(f"{what}: still `...`")
    if isinstance(out, str):
        raise _text(out, what)
    if isinstance(out, (Unsupported, TooLarge, dict)):
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


def numeric(out, what: str = "your result") -> np.ndarray:
    """``out`` as an array of real numbers (:func:`to_array`), else :class:`Reject`."""
    arr = to_array(out, what)
    if arr.dtype == bool:
        raise Reject(f"{what}: dtype bool, expected numbers")
    if arr.dtype.kind in "US":
        raise _text(str(arr.flat[0]) if arr.size else "", what)
    if arr.dtype.kind not in "iuf":
        raise Reject(f"{what}: dtype {arr.dtype}, expected real numbers")
    return arr


def expect_shape(arr: np.ndarray, shape: tuple, what: str = "your result", why: str = "") -> None:
    if tuple(arr.shape) != tuple(shape):
        raise Reject(f"{what}: shape {tuple(arr.shape)}, but it should be {tuple(shape)}"
                     + (f" ({why})" if why else ""))


def tolerances(dtype) -> tuple[float, float]:
    """(rtol, atol) for an answer computed in ``dtype`` (None: float64)."""
    name = np.dtype(dtype).name if dtype is not None else "float64"
    return {"float16": (1e-2, 3e-3), "float32": (1e-5, 1e-6)}.get(name, (1e-7, 1e-9))


def close(a, b, dtype=None) -> bool:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    rtol, atol = tolerances(dtype)
    with np.errstate(all="ignore"):
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def where(bad: np.ndarray) -> str:
    """The first True of ``bad`` for a student: counted from 1, as positions and rows are in the
    notebooks, with numpy's index (from 0) beside it: "position 3 (numpy index 2)"."""
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    if len(idx) == 1:
        return f"position {idx[0] + 1} (numpy index {idx[0]})"
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


def less_precise(arr, dtype=None) -> bool:
    """``arr`` holds floats of less precision than ``dtype`` (None: float64)."""
    low = np.asarray(arr).dtype
    return low.kind == "f" and low.itemsize < np.dtype(dtype or np.float64).itemsize


def value_mismatch(arr, ref, dtype=None, what: str = "your result") -> str:
    low, want = np.asarray(arr).dtype, np.dtype(dtype or np.float64)
    if less_precise(arr, dtype) and close(arr, ref, low):
        return (f"{what}: {low} numbers, right to {low}'s precision but not to {want}'s, which "
                f"this check asks for: compute in {want} (in torch, torch.{want}; .float() "
                f"and torch.FloatTensor make float32)")
    a = np.asarray(arr, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    rtol, atol = tolerances(dtype)
    with np.errstate(all="ignore"):
        bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    n = int(bad.sum())
    if a.ndim == 0:
        return f"{what}: not the expected value"
    return (f"{what}: wrong at {n} of {a.size} entries, first at {where(bad)} "
            f"(yours there: {a[tuple(np.argwhere(bad)[0])]:.4g})")


def values_or_mistake(case: Case, arr, ref, mistakes, what: str, note: str = "") -> None:
    """``arr`` close to ``ref``, else :class:`Reject` with the known mistake it matches
    (:func:`diagnose`) or its first wrong entry (and ``note``)."""
    if not close(arr, ref):
        raise Reject(diagnose(case, arr, mistakes, ref=ref)
                     or value_mismatch(arr, ref, what=what) + note)


def check_values(out, ref, what: str, shape_why: str, note: str = "") -> np.ndarray:
    """An answer's array: numeric, of ``ref``'s shape (``shape_why`` says why that shape), and
    close to ``ref``; raises :class:`Reject` naming the first wrong entry (and ``note``)."""
    arr = numeric(out, what)
    expect_shape(arr, ref.shape, what, shape_why)
    values_or_mistake(None, arr, ref, [], what, note)
    return arr


def check_weights(arr, ref, *, mask=None, dtype=None, what: str = "the weights",
                  overflow_note: str = "") -> None:
    """Shape, finiteness, exact zeros at masked keys, row sums, then values."""
    arr = numeric(arr, what)
    expect_shape(arr, ref.shape, what, "one weight per key")
    a = arr.astype(np.float64)
    note = f": {overflow_note}" if overflow_note else ""
    if np.isnan(a).any():
        row = f" in row {int(np.argwhere(np.isnan(a))[0][0]) + 1}" if a.ndim > 1 else ""
        raise Reject(f"{what}: NaN{row} (first at {where(np.isnan(a))}){note}")
    if np.isinf(a).any():
        raise Reject(f"{what}: an infinity (first at {where(np.isinf(a))}){note}")
    if (a < 0).any():
        raise Reject(f"{what}: a negative value at {where(a < 0)}; softmax "
                     f"weights are never negative")
    if mask is not None:
        m = np.broadcast_to(mask, a.shape)
        leak = (~m) & (a != 0)
        if leak.any():
            val = a[tuple(np.argwhere(leak)[0])]
            tiny = (": exp(fill - max) did not underflow to 0, so the fill is not far enough "
                    "below the eligible scores (as -30 is not); fill with -np.inf, which always "
                    "gives 0, or set masked weights to 0") if 0 < abs(val) < 1e-6 else ""
            raise Reject(f"masked key at {where(leak)} got weight {val:.3g}, not exactly "
                         f"0{tiny}")
    ref64 = np.asarray(ref, dtype=np.float64)
    if less_precise(arr, dtype) and not close(a, ref64, dtype):  # before its row sums show it
        raise Reject(value_mismatch(arr, ref64, dtype, what))
    if ref64.ndim >= 1:
        S = ref64.shape[-1]
        rs_ref = ref64.reshape(-1, S).sum(axis=1)
        rs = a.reshape(-1, S).sum(axis=1)
        rtol, atol = tolerances(dtype)
        bad = (np.abs(rs_ref - 1) < 1e-6) & ~np.isclose(rs, 1.0, rtol=0, atol=max(atol * 5, 1e-6))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            row = "" if a.ndim == 1 else f"(row {i + 1}) "
            total = f"{rs[i]:.4g}"
            if total == "1":  # off by less than four significant digits show
                total = f"{rs[i]:.8g}"
            raise Reject(f"{what} {row}sum to {total}, not 1")
        if np.any((np.abs(rs_ref) < 1e-12) & (np.abs(rs) > 1e-9)):
            raise Reject(f"{what} of a row with no eligible key should all be 0")
    if not close(a, ref64, dtype):
        raise Reject(value_mismatch(arr, ref64, dtype, what))


def weights_or_mistake(case: Case, arr, ref, mistakes, *, dtype=None, floats: bool = False,
                       **check) -> None:
    """:func:`check_weights`; when it rejects an array of ``ref``'s shape (of floats, if
    ``floats``), the reason is the known mistake the array matches (:func:`diagnose`), if any."""
    try:
        check_weights(arr, ref, dtype=dtype, **check)
    except Reject as r:
        if np.shape(arr) != ref.shape or (floats and arr.dtype.kind != "f"):
            raise
        raise Reject(diagnose(case, arr, mistakes, dtype=dtype, ref=ref) or str(r)) from None


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
        got = describe_type(out) + (f" of {len(out)} item{'s' * (len(out) != 1)}"
                                    if isinstance(out, (tuple, list)) else "")
        raise Reject(f"your function returned {got}; it must return a tuple of {n}, {names}")
    return tuple(out)


def judge_test_answer(case: Case, out, expect: bool, hint_accept: str, hint_reject: str) -> None:
    """Compare a student's test's verdict on the implementation ``case.args[0]``."""
    got = as_bool(out, "your test's result")
    if got == expect:
        return
    note = IMPL_NOTES[case.args[0].code]
    if expect:
        raise Reject(f"your test rejected {note}: {hint_accept}")
    raise Reject(f"your test accepted {note}: {hint_reject}")


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
    NAMES: tuple[str, ...] = ()  # the arguments of a case made by :meth:`case`

    def case(self, note: str, *args, fn: int = 0, **data) -> Case:
        """A case of the answer's function ``fn``, its arguments named :attr:`NAMES`."""
        return Case(note, args, self.NAMES, fn, data)

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

    def declared_dict(self, name: str, keys, todo: str, fields: str):
        """``(the declared dict name, None)`` when it has exactly ``keys``, else ``(None,
        ("fail", why))``: still `...` (``todo``: what to record) or not such a dict (``fields``:
        its keys)."""
        comp = self.declared.get(name)
        if comp is Ellipsis or comp is None:
            return None, ("fail", f"{name} is still `...`: {todo}")
        if not isinstance(comp, dict) or sorted(comp) != sorted(keys):
            return None, ("fail", f"{name} is {describe_type(comp)}"
                          + (f" with the keys {sorted(comp)}" if isinstance(comp, dict) else "")
                          + f"; write a dict with the keys {fields}")
        return comp, None

    def accepts_raise(self, case: Case, raised: dict) -> bool:
        """Whether raising ``raised`` (type, message) is the right answer to ``case``."""
        return False

    def raise_note(self, case: Case, raised: dict) -> str:
        """What to add when an answer raised where it should not have ('' for nothing)."""
        return ""

    def fixed(self) -> list[Case]:
        return []

    def random(self, rng: np.random.Generator) -> list[Case]:
        """``n_random`` seeded cases, one per :meth:`random_case` call (in order: one stream)."""
        cases = (self.random_case(rng, i) for i in range(self.n_random))
        return [c for c in cases if c is not None]

    def random_case(self, rng: np.random.Generator, i: int) -> Case | None:
        """Random case ``i``; None for a check without random cases."""
        return None

    def hidden(self, rng: np.random.Generator) -> list[Case]:
        """The grader's random cases (any seed but ``STUDENT_SEED``): :meth:`random`'s."""
        return self.random(rng)

    def compare(self, case: Case, out) -> None:  # raises Reject
        raise NotImplementedError

    def cases(self, seed: int, ex_id: str) -> list[Case]:
        rng = np.random.default_rng([seed, zlib.crc32(ex_id.encode())])
        if seed == STUDENT_SEED:
            return self.fixed() + self.random(rng)
        drawn = self.hidden(rng)
        for case in drawn:
            case.hidden = True
        return self.fixed() + drawn

    def on_pass(self, cases, outputs) -> str:
        """A note for a pass ('' for none). Called only once every case passed and
        :meth:`judge_declared` accepted the declared parts; if it raises, the pass has no note."""
        return ""


def rand(rng, *shape, scale=1.0):
    return np.round(rng.normal(size=shape) * scale, 3)


def rounded(seed):
    """``r(*shape)``: normal draws of ``default_rng(seed)`` rounded to two decimals (the fixed
    cases' arrays); ``seed`` may be a generator, whose stream ``r`` then draws from."""
    rng = np.random.default_rng(seed)
    return lambda *shape: np.round(rng.normal(size=shape), 2)


def scores_shape(rng, i: int) -> tuple[int, ...]:
    """The shape of random case ``i``'s scores: a vector (S,) for even i, else rows (T, S)."""
    return (int(rng.integers(2, 7)),) if i % 2 == 0 else (int(rng.integers(2, 4)),
                                                          int(rng.integers(2, 6)))

