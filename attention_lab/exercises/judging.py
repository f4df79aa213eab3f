"""Judging the exercises: the verdicts, the judge, and the decoding of what the probe recorded.

The checks themselves (their cases, fixed edge cases from the simplest, so that the first
failure is the minimal failing case, then seeded random ones; and their comparisons against the
package's reference implementations) are the :class:`~.specs.base.Spec` subclasses of
:mod:`.specs`. A declared part of an answer (3.2's policy) reaches its check as
``Spec.declared``.

Judging runs in the checker's own process (:func:`check`, or the grader; never a student's
kernel). A failure names the case, shows its inputs and the student's output and says what is
wrong; it never prints the expected values. The grader's own random cases (any seed but
``STUDENT_SEED``) are *hidden*: a failure on one is described, its inputs and output not shown.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

import numpy as np

from .implementations import Impl, callable_of, is_marker
from .probe import decode, encode
from .registry import Exercise
from .specs import SPECS
from .specs.base import Ambiguous, Case, Reject, describe_type, fmt, with_article


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


def cases_for(ex: Exercise, seed: int) -> list[Case]:
    """The cases of a computational exercise (empty for value and written exercises)."""
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
    if (verdict := _judge_answer_object(ex, record)) is not None:
        return verdict
    calls = record.get("calls", [])
    declared = {ex.answer_names[int(i)]: v for i, v in record.get("values", {}).items()}
    if (verdict := _refused(record)) is not None:
        return verdict
    spec = SPECS[ex.id].bound(declared)
    stub_fns = _stubbed_functions(cases, calls)
    if (verdict := _unwritten_or_undeclared(ex, cases, spec, stub_fns)) is not None:
        return verdict
    failures, ambiguous, outputs = _run_cases(ex, cases, calls, spec, stub_fns)
    printed = sum(int(r.get("printed", 0)) for r in calls if isinstance(r, dict))
    printed_note = (f"\n(Your function printed {printed} characters; the check hides them.)"
                    if printed else "")
    if not failures:
        return _pass_verdict(ex, spec, cases, outputs, printed_note)
    return _fail_verdict(cases, calls, failures, ambiguous, printed_note)


def _judge_answer_object(ex: Exercise, record: dict) -> Verdict | None:
    """The verdict on an answer that was not called case by case (missing, a value, a written
    answer, not a function, ...), or None for a record of calls."""
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
        return Verdict("fail", reason, reason.split("\n")[0])
    if kind == "shape":
        return Verdict("fail", f"pass the answer's parts together, as a tuple: check({ex.id!r}, "
                               f"({label})); got {with_article(str(record.get('what')))}",
                       "wrong answer object")
    if kind == "notcallable":
        val = record.get("value")
        name = ex.answer_names[int(record.get("index", 0))]
        if val is Ellipsis or val is None:
            return Verdict("not_attempted", f"`{name}` is {fmt(val)}, not a function yet",
                           "not attempted")
        call = name if len(ex.answer_names) == 1 else f"({label})"  # every part, in order
        return Verdict("fail", f"`{name}` is {describe_type(val)}; pass the function itself "
                               f"(without calling it): check({ex.id!r}, {call})", "not a function")
    if kind != "calls":
        return Verdict("error", f"unexpected record for {ex.id}", "error")


def _refused(record: dict) -> Verdict | None:
    """An answer that earns no mark whatever its outputs: it called the package's reference, or
    a function handed to another case."""
    why = uses_reference(record)
    if why:
        return Verdict("fail", why, "calls the package's own implementation")
    if record.get("foreign"):
        return Verdict("fail", "your code called a function that the checker had handed to "
                               "another case (kept from an earlier call): it earns no mark; use "
                               "only the arguments each call receives",
                       "reused another case's function")


def _stubbed_functions(cases: list[Case], calls: list[dict]) -> set:
    """The answer's functions that raised NotImplementedError and never returned an output."""
    return {c.fn for c, r in zip(cases, calls)
            if r.get("raised", {}).get("type") == "NotImplementedError"
            and not any(c2.fn == c.fn and "out" in r2 for c2, r2 in zip(cases, calls))}


def _unwritten_or_undeclared(ex: Exercise, cases: list[Case], spec, stub_fns: set):
    """Not attempted when every function is still the stub; the spec's verdict on a declared
    part (3.2's policy) that is missing or wrong; else None."""
    used_fns = {c.fn for c in cases}
    if used_fns and stub_fns == used_fns:
        names = ex.function_names or (ex.answer_label,)
        stubbed = " and ".join(f"`{n}`" for n in names)
        verb = "still raises" if len(names) == 1 else "still raise"
        return Verdict("not_attempted", f"{stubbed} {verb} NotImplementedError "
                                        f"(the stub{'s' * (len(names) > 1)})", "not attempted")
    problem = spec.declaration_problem()
    if problem is not None:
        status, reason = problem
        return Verdict(status, reason, reason.split("\n")[0])


def _run_cases(ex: Exercise, cases: list[Case], calls: list[dict], spec, stub_fns: set):
    """Each case's record against the check: the failures [(status, reason, case index)] (or,
    when none, the right verdicts of a test that never called its implementation), the cases
    whose failure fits several mistakes {case index: Ambiguous}, and the outputs."""
    failures, uninformed, outputs = [], [], []
    ambiguous: dict[int, Ambiguous] = {}
    for i, case in enumerate(cases):
        rec = calls[i] if i < len(calls) else None
        if rec is None:
            if not (failures and failures[-1][0] == "timeout"):
                failures.append(("error", "the time budget for this check ran out before this "
                                          "case", i))
            break
        if "timeout" in rec:
            failures.append(("timeout", f"did not finish within {rec['timeout']:g} s (an endless "
                                        f"loop?)", i))
            break
        outputs.append(rec.get("out"))  # None for a stub or a raise (decode_record)
        try:
            problem = _case_problem(ex, case, rec, spec, stub_fns)
        except Ambiguous as r:
            ambiguous[i] = r
            problem = ("fail", str(r))
        if problem is not None:
            failures.append((*problem, i))
        elif "raised" not in rec and rec.get("called") == 0 and any(
                isinstance(a, Impl) for a in case.args):
            uninformed.append(("fail", f"{_who(ex, case)} gave its verdict without calling the "
                                       f"implementation it was given: a test must run it to "
                                       f"tell a correct one from a broken one", i))
    return failures or uninformed, ambiguous, outputs


def _who(ex: Exercise, case: Case) -> str:
    return "your function" if len(ex.answer_names) == 1 else f"`{ex.answer_names[case.fn]}`"


def _case_problem(ex: Exercise, case: Case, rec: dict, spec, stub_fns: set):
    """What is wrong with one case's record, as (status, reason), or None; a wrong output that
    fits several mistakes raises the spec's :class:`Ambiguous`."""
    name = ex.answer_names[case.fn]
    if rec.get("skipped") == "stub":
        return "fail", f"`{name}` still raises NotImplementedError (the stub)"
    if "raised" in rec:
        if rec["raised"].get("type") == "NotImplementedError" and case.fn in stub_fns:
            return "fail", f"`{name}` is not written yet (it still raises NotImplementedError)"
        if spec.accepts_raise(case, rec["raised"]):
            return None
        note = spec.raise_note(case, rec["raised"])
        return "error", (f"{_who(ex, case)} {_raised_text(rec['raised'])}"
                         + (f" ({note})" if note else ""))
    if rec.get("mutated"):
        names = ", ".join(f"`{case.names[j]}`" for j in rec["mutated"] if j < len(case.names))
        return "fail", (f"{_who(ex, case)} changed its input {names} in place; copy before "
                        f"modifying (a caller, or the next check, would see different numbers)")
    try:
        spec.compare(case, rec.get("out"))
    except Ambiguous:
        raise
    except Reject as r:
        return "fail", str(r)


def _pass_verdict(ex: Exercise, spec, cases: list[Case], outputs: list, printed_note: str):
    """Every case passes: the spec's verdict on a declared part, or a pass with its note."""
    n = len(cases)
    later = spec.judge_declared()
    if later is not None:
        status, reason = later
        names = ex.function_names
        return Verdict(status, f"{reason}\n(Your {' and '.join(names)} "
                               f"pass{'es' if len(names) == 1 else ''} all {n} cases.)"
                       + printed_note, reason.split("\n")[0], {"cases": n})
    try:
        extra = spec.on_pass(cases, outputs)
    except Exception:
        extra = ""
    msg = f"all {n} cases pass (edge cases and seeded random cases)"
    if extra:
        msg += "\n" + extra
    return Verdict("pass", msg + printed_note, "pass", {"cases": n})


def _fail_verdict(cases: list[Case], calls: list[dict], failures: list, ambiguous: dict,
                  printed_note: str) -> Verdict:
    """The headline failure with its case, then up to three other problems."""
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
        body.append(_other_problems(cases, others, reason, ambiguous))
    return Verdict(status, "\n".join(body) + printed_note, reason.split("\n")[0],
                   {"cases": len(cases), "failed": len(failures), "first_failure": case.note})


def _other_problems(cases: list[Case], others: list, reason: str, ambiguous: dict) -> str:
    """The other failing cases: how many, and up to three problems unlike the headline's."""
    def key(text):
        return re.sub(r"[-+]?\d[\d.e+-]*", "#", text)[:60]

    seen = {key(reason)}
    fresh = []
    for _, rs, j in others:
        if j in ambiguous and reason in ambiguous[j].candidates:
            continue  # a case that cannot tell the headline's mistake from another
        if key(rs) not in seen:
            fresh.append((rs, j))
            seen.add(key(rs))
    lines = []
    for rs, j in fresh[:3]:
        short = rs.split("\n")[0]
        lines.append(f"    - {cases[j].note}: {short[:237] + '...' if len(short) > 240 else short}")
    count = f"{len(others)} other case(s) of {len(cases)} fail too"
    if not lines:
        return f"{count}, with the same problem."
    same = len(others) - len(fresh[:3])
    return (f"{count}; other problems:\n" + "\n".join(lines)
            + (f"\n    (and {same} more case(s))" if same else ""))


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
    if not isinstance(value, (str, dict)):
        return Verdict("fail", f"`{ex.answer}` is {describe_type(value)}; write your answer as a "
                               f"dict with the fields {', '.join(names)} (strings)",
                       "wrong answer object")
    answers = {"answer": value} if isinstance(value, str) else value
    texts = {k: v for k, v in answers.items() if isinstance(v, str) and v.strip()}
    if not texts:
        return Verdict("not_attempted", f"every field of `{ex.answer}` is still empty",
                       "not attempted", {"answer": {}})
    words = sum(len(v.split()) for v in texts.values())
    empty = [f for f in names if f not in texts]
    note = (f"{len(names) - len(empty)} of {len(names)} field(s) answered, {words} "
            f"word{'s' * (words != 1)}")
    if empty:
        note += f"; still empty: {', '.join(empty)}"
    if isinstance(value, str):
        note += "; one text: write it in the dict's fields"
    for k in (k for k in texts if k not in names and isinstance(value, dict)):  # still recorded
        close = difflib.get_close_matches(str(k), empty, 1)
        note += f"; {k!r} is not one of its fields" + (
            f" (did you mean {close[0]!r}?)" if close else "")
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


__all__ = ["Verdict", "cases_for", "judge", "encoded_inputs", "decode_record", "BadRecord",
           "REFERENCE_MODULES", "uses_reference", "WRITTEN_MIN_WORDS"]


# ====================================================================== records from the probe
RECORD_KINDS = ("missing", "value", "written", "calls", "shape", "notcallable", "harness_error")


class BadRecord(ValueError):
    pass


def _whole(x) -> bool:
    """A JSON integer (not a bool)."""
    return isinstance(x, int) and not isinstance(x, bool)


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
            if not _whole(index) or not 0 <= index < 8:
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
                if not (_whole(t) or isinstance(t, float)):
                    raise BadRecord("bad timeout")
                d["timeout"] = float(t)
            elif c.get("skipped") == "stub":
                d["skipped"] = "stub"
            else:
                raise BadRecord("a call has no result")
            printed, mutated, called = c.get("printed"), c.get("mutated"), c.get("called")
            if _whole(printed) and printed > 0:
                d["printed"] = printed
            if isinstance(mutated, list) and all(_whole(i) and 0 <= i < 32 for i in mutated):
                d["mutated"] = mutated
            if isinstance(c.get("reference"), list) and c["reference"]:
                d["reference"] = [str(n)[:100] for n in c["reference"][:5]]
            if _whole(called) and called >= 0:
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
