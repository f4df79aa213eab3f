"""The student side: ``check(id, answer)``, ``hint(id)`` and ``status()``.

``check`` runs the answer through the same probe the grader uses (with the fixed student seed,
so a notebook's output is reproducible), judges the recorded outputs, displays the result and
returns it. It never raises, whatever the answer does, unless asked to: ``check(id, answer,
strict=True)`` raises :class:`CheckFailed` (an ``AssertionError``) with the check's message when
the answer does not pass, which is what a test cell of nbgrader or a test runner needs.
"""

from __future__ import annotations

import html
import json
import os
import time
from collections import Counter
from pathlib import Path

from . import probe as _probe
from .implementations import callable_of, is_marker
from .judging import REFERENCE_MODULES, Verdict, cases_for, decode_record, encoded_inputs, judge
from .registry import EXERCISES, LEVEL_TITLES, Exercise, checked_marker, get
from .specs.base import STUDENT_SEED

#: seconds per call of a student's function, and for all calls of one check
CALL_SECONDS = float(os.environ.get("ATTENTION_LAB_CALL_SECONDS", 5))
CHECK_SECONDS = float(os.environ.get("ATTENTION_LAB_CHECK_SECONDS", 30))

LABELS = {
    "pass": ("✔", "pass", "#1b7837"),
    "fail": ("✘", "fail", "#b2182b"),
    "error": ("✘", "fail (your code raised an error)", "#b2182b"),
    "timeout": ("✘", "fail (time limit)", "#b2182b"),
    "not_attempted": ("○", "not attempted", "#6b6b6b"),
    "needs_instructor": ("✎", "needs instructor", "#2166ac"),
    "not_checked": ("·", "not checked yet", "#6b6b6b"),
}

_SESSION: dict[str, Result] = {}
_HINTS_SHOWN: dict[str, int] = {}


def _ipython():
    """The running IPython shell, or None."""
    try:
        from IPython import get_ipython
    except Exception:
        return None
    return get_ipython()


class _Shown:
    """Shows its ``text()`` and ``html()`` once per cell: ``check`` displays the result, and when
    the same object is also the cell's value it is not shown a second time."""

    _shown_in = None

    def __repr__(self) -> str:
        return self.text()

    def _ipython_display_(self):
        count = getattr(_ipython(), "execution_count", None)
        if self._shown_in is not None and self._shown_in == count:
            return
        self._shown_in = count
        from IPython.display import display

        display({"text/plain": self.text(), "text/html": self.html()}, raw=True)

    def show(self) -> None:
        if _ipython() is not None:
            self._ipython_display_()
        else:
            print(self.text())


class CheckFailed(AssertionError):
    """Raised by ``check(..., strict=True)`` when the answer does not pass; its text is the
    check's result (the exercise, the status, the message and the hint line)."""

    def __init__(self, result: "Result"):
        super().__init__(result.text())
        self.result = result


class Result(_Shown):
    """What ``check`` returns: ``status`` (pass, fail, error, timeout, not_attempted,
    needs_instructor), ``message``, and ``passed``."""

    def __init__(self, exercise: Exercise | None, verdict: Verdict, exercise_id: str = ""):
        self.exercise = exercise
        self.id = exercise.id if exercise else exercise_id
        self.status = verdict.status
        self.message = verdict.message
        self.summary = verdict.summary
        self.details = verdict.details

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def __bool__(self) -> bool:
        return self.passed

    def _header(self) -> str:
        mark, label, _ = LABELS.get(self.status, ("?", self.status, "#000"))
        if self.exercise is None:
            return f"{mark} {self.id}: {label}"
        ex = self.exercise
        return f"{mark} {ex.id} {ex.title} ({ex.answer_label}): {label}"

    def _footer(self) -> str:
        if self.exercise is None:
            return ""
        if self.status in ("fail", "error", "timeout"):
            return f'hint("{self.id}") gives a hint.'
        if self.status == "not_attempted" and self.exercise.kind != "written":
            return "Write your answer in the cell above, run it, then run this check again."
        if self.status == "not_attempted":
            return "Fill in the fields above, run the cell, then run this check again."
        return ""

    def text(self) -> str:
        lines = [self._header()]
        lines += ["  " + ln for ln in self.message.splitlines() if ln.strip()]
        foot = self._footer()
        if foot:
            lines.append("  " + foot)
        return "\n".join(lines)

    def html(self) -> str:
        _, _, colour = LABELS.get(self.status, ("?", self.status, "#000"))
        body = html.escape("\n".join(self.message.splitlines()))
        foot = html.escape(self._footer())
        parts = [f'<div style="border-left: 4px solid {colour}; padding: 0.2em 0.8em; '
                 f'margin: 0.3em 0;">',
                 f'<div style="font-weight: bold; color: {colour};">'
                 f"{html.escape(self._header())}</div>"]
        if body:
            parts.append(f'<pre style="white-space: pre-wrap; margin: 0.3em 0;">{body}</pre>')
        if foot:
            parts.append(f"<div><i>{foot}</i></div>")
        parts.append("</div>")
        return "".join(parts)


def _round_trip(record: dict) -> dict:
    """Exactly what the grader does: JSON text out, strict validation and decoding in."""
    return decode_record(json.loads(json.dumps(record, allow_nan=False)))


def _reference_files() -> frozenset:
    """The source files of ``REFERENCE_MODULES`` (found, not imported)."""
    import importlib.util

    files = set()
    for name in REFERENCE_MODULES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin:
            files.add(spec.origin)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            files.update(str(f) for f in Path(folder).glob("*.py"))  # a package's modules
    return frozenset(files)


class _Handed:
    """The functions the cases hand to an answer (``{"__callable__": {"key": "CASE:ARG"}}``),
    made in this process, and how often the answer called those of each case: what the grader
    counts on its side."""

    def __init__(self, cases):
        self.cases, self.calls = cases, {}

    def make(self, key: str, name: str):
        i, j = (int(n) for n in key.split(":"))
        fn = callable_of(self.cases[i].args[j])

        def handed(*args):
            self.calls[i] = self.calls.get(i, 0) + 1
            return fn(*args)

        handed.__name__ = handed.__qualname__ = name
        return handed

    def count(self, record: dict) -> dict:
        for i, rec in enumerate(record.get("calls", [])):
            if any(is_marker(a) for a in self.cases[i].args) and "out" in rec:
                rec["called"] = self.calls.get(i, 0)
        return record


def evaluate(ex: Exercise, answer, *, seed: int = STUDENT_SEED,
             call_seconds: float | None = None, total_seconds: float | None = None) -> Verdict:
    """Probe and judge ``answer`` in this process (no display, no session record)."""
    cases = cases_for(ex, seed)
    handed = _Handed(cases)
    record = _probe.probe(ex.kind, answer, encoded_inputs(cases),
                          n_functions=len(ex.answer_names),
                          call_seconds=CALL_SECONDS if call_seconds is None else call_seconds,
                          total_seconds=CHECK_SECONDS if total_seconds is None else total_seconds,
                          watch=_reference_files(), callables=handed.make)
    return judge(ex, cases, _round_trip(handed.count(record)))


def _verdict(ex: Exercise, answer, seed: int) -> Verdict:
    """The verdict on ``answer``, whatever it does (a check never raises into the notebook)."""
    try:
        if answer is _probe.MISSING:
            answer_text = ex.answer_label if len(ex.answer_names) == 1 else f"({ex.answer_label})"
            return Verdict("not_attempted", f"pass your answer too: check({ex.id!r}, "
                                            f"{answer_text})", "not attempted")
        return evaluate(ex, answer, seed=seed)
    except BaseException as exc:
        return Verdict("error", f"the check could not run ({type(exc).__name__}: {exc})", "error")


def _note_checked() -> None:
    """In a notebook's kernel under JupyterLab, which names the notebook in ``JPY_SESSION_NAME``,
    note when a check last ran: ``submit`` warns when the notebook was saved before that."""
    notebook = os.environ.get("JPY_SESSION_NAME", "")
    if notebook.endswith(".ipynb"):
        try:
            checked_marker(notebook).write_text(str(time.time()), encoding="utf-8")
        except OSError:
            pass


def check(exercise_id, answer=_probe.MISSING, *, show: bool = True,
          seed: int = STUDENT_SEED, strict: bool = False) -> Result:
    """Check ``answer`` for exercise ``exercise_id`` ("2.1"); display and return the result.

    The answer is the object the exercise asks for (a function, a value, a dict of written
    fields). Never raises by default: a stub, an exception, a wrong type, an endless loop
    (stopped after a few seconds) or a print all end up as a readable result.

    ``strict=True`` is the raising form, for a test cell (nbgrader's autograded cells, pytest):
    after displaying the result it raises :class:`CheckFailed`, whose message is the result's
    text, unless the status is ``pass``. A written exercise never passes by itself (it is graded
    by hand), so ``strict=True`` with a written exercise raises at once, saying so.
    """
    try:
        ex = get(exercise_id)
    except KeyError as exc:
        ex, verdict = None, Verdict("fail", str(exc).strip("'\""), "unknown exercise")
    else:
        if strict and not ex.auto:
            raise ValueError(f"check {ex.id!r} is a written answer, graded by hand: it never "
                             f"passes by itself, so check(..., strict=True) cannot be used for it")
        verdict = _verdict(ex, answer, seed)
    res = Result(ex, verdict, str(exercise_id))
    if ex is not None:
        _SESSION[ex.id] = res
        _note_checked()
    if show:
        res.show()
    if strict and not res.passed:
        raise CheckFailed(res)
    return res


def hint(exercise_id) -> None:
    """Print the next hint for an exercise (each call shows one more; then all of them again)."""
    try:
        ex = get(exercise_id)
    except KeyError as exc:
        print(str(exc).strip("'\""))
        return
    if not ex.hints:
        print(f"{ex.id} {ex.title}: no hints for a written exercise; the task is:\n  {ex.task}")
        return
    n = _HINTS_SHOWN.get(ex.id, 0)
    if n >= len(ex.hints):
        print(f"{ex.id}: no more hints; here are all {len(ex.hints)} hints again, and the task.\n"
              + "".join(f"  {i}. {h}\n" for i, h in enumerate(ex.hints, 1)) + f"  Task: {ex.task}")
        return
    _HINTS_SHOWN[ex.id] = n + 1
    print(f"Hint {n + 1} of {len(ex.hints)} for {ex.id} ({ex.answer_label}): {ex.hints[n]}")


class StatusTable(_Shown):
    def __init__(self, rows: list[tuple[Exercise, str]], level=None):
        self.rows, self.level = rows, level

    def counts(self) -> dict[str, int]:
        return dict(Counter(st for _, st in self.rows))

    def text(self) -> str:
        if not self.rows:
            return (f"no level {self.level!r}; the levels are {', '.join(map(str, LEVEL_TITLES))}"
                    f": status(2) lists level 2's exercises")
        head = ("id", "ex.", "exercise", "status")
        body = [(ex.id, str(ex.chapter), ex.title, LABELS[st][1]) for ex, st in self.rows]
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(4)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
        lines += [fmt.format(*r) for r in body]
        auto = [st for ex, st in self.rows if ex.auto]
        lines.append(f"{sum(st == 'pass' for st in auto)} of {len(auto)} checked exercises pass; "
                     f"{sum(st == 'needs_instructor' for _, st in self.rows)} written answer(s) "
                     f"for the instructor.")
        return "\n".join(lines)

    def html(self) -> str:
        rows = []
        for ex, st in self.rows:
            mark, label, colour = LABELS[st]
            rows.append(f"<tr><td>{ex.id}</td><td>{ex.chapter}</td><td>{html.escape(ex.title)}"
                        f"</td><td style=\"color: {colour};\">{mark} {label}</td></tr>")
        summary = html.escape(self.text().splitlines()[-1])
        if not self.rows:
            return f"<p>{summary}</p>"
        return ("<table><thead><tr><th>id</th><th>ex.</th><th>exercise</th><th>status</th></tr>"
                "</thead><tbody>" + "".join(rows) + f"</tbody></table><p>{summary}</p>")


def status(level: int | None = None, *, show: bool = True) -> StatusTable:
    """A table of the exercises of one level (default: the levels checked in this session, or
    all) with their latest result in this session."""
    if level is None:
        levels = sorted({EXERCISES[i].level for i in _SESSION}) or sorted(LEVEL_TITLES)
    else:
        levels = [int(level)] if str(level).isdigit() and int(level) in LEVEL_TITLES else []
    table = StatusTable([(ex, _SESSION[ex.id].status if ex.id in _SESSION else "not_checked")
                         for ex in EXERCISES.values() if ex.level in levels], level)
    if show:
        table.show()
    return table


def reset() -> None:
    """Forget this session's results and hint counters."""
    _SESSION.clear()
    _HINTS_SHOWN.clear()
