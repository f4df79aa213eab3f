"""Written answers graded by hand: ``written.csv`` out, the instructor's scores back in.

``grade`` writes ``OUT_DIR/written.csv``, one row per written answer of every submission that
counts (columns :data:`COLUMNS`). The instructor fills in ``score`` (0 to ``points``: one point
per rubric line, halves allowed, nothing finer) and ``comment``, then folds them back in::

    python -m attention_lab merge OUT_DIR                  # OUT_DIR/written.csv into OUT_DIR
    python -m attention_lab grade SUBMISSIONS --out OUT_DIR --merge FILE   # regrade, then merge

and grades.json, grades.csv, gradebook.csv, the feedback pages and written.csv itself are
rewritten with the scores. Merging is idempotent (the same file twice gives the same outputs) and
all or nothing: a row with an unknown student or exercise, a score that is not a number in range,
an answer text that differs from the answer graded now, or a second row for the same answer stops
the merge with a one-line error naming the row, and nothing is written. A row left without score
and comment changes nothing (an earlier merged score stays); nothing is counted twice, because a
score replaces the answer's score rather than adding to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..exercises.registry import EXERCISES
from ._csv import NOT_UNICODE, csv_value, points_text, read_rows
from .assignments import points
from .report import Report, write_csv

#: the statuses of a written answer to score by hand (before and after its score is merged)
WRITTEN = ("needs_instructor", "hand_graded")

COLUMNS = ["student", "assignment", "exercise", "title", "points", "score", "comment", "answer",
           "rubric"]
REQUIRED = ("student", "assignment", "exercise", "score", "comment", "answer")


class WrittenError(ValueError):
    """A problem with written.csv; the message names the row."""


def answer_text(ex, answer: dict | None) -> str:
    """A written answer as one text: each field under its name, in the exercise's order."""
    answer = answer or {}
    order = [f for f, _ in ex.fields] + sorted(k for k in answer if k not in dict(ex.fields))
    blocks = [f"[{f}]\n{answer[f].strip()}" for f in order
              if isinstance(answer.get(f), str) and answer[f].strip()]
    return "\n\n".join(blocks)


def _same_text(a: str, b: str) -> bool:
    """Equal up to what a spreadsheet may do to a cell (line endings, trailing spaces) and what
    written.csv made of text that is not Unicode (:data:`._csv.NOT_UNICODE`)."""
    def norm(t):
        t = t.encode("utf-8", NOT_UNICODE).decode("utf-8")
        return "\n".join(ln.rstrip() for ln in t.splitlines()).strip()
    return norm(a) == norm(b)


def rows(report: Report) -> list[list]:
    """The rows of written.csv (header first)."""
    out = [COLUMNS]
    for s in sorted(report.counted(), key=lambda s: (s.student.casefold(), s.student,
                                                     s.assignment)):
        for i, g in s.exercises.items():
            ex = EXERCISES[i]
            if ex.auto or g.status not in WRITTEN:
                continue
            rubric = "\n".join(f"{n}. {line}" for n, line in enumerate(ex.rubric, 1))
            out.append([s.student, s.assignment, i, ex.title, points(ex),
                        "" if g.score is None else points_text(g.score), g.comment,
                        answer_text(ex, g.answer), rubric])
    return out


def write_written_csv(report: Report, out: Path) -> Path:
    return write_csv(out / "written.csv", rows(report))


@dataclass
class Row:
    number: int  # as a spreadsheet numbers it: the header is row 1
    student: str
    assignment: str
    exercise: str
    score: float | None
    comment: str
    answer: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.student, self.assignment, self.exercise

    def where(self, name: str) -> str:
        return f"{name} row {self.number} (student {self.student!r}, {self.assignment} " \
               f"exercise {self.exercise})"


def _score(text: str, where: str, max_points: int | None) -> float | None:
    text = text.strip()
    if not text:
        return None
    if "," in text and "." not in text:
        text = text.replace(",", ".")  # a decimal comma from a spreadsheet
    try:
        value = float(text)
    except ValueError:
        raise WrittenError(f"{where}: score {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or (max_points is not None and value > max_points):
        raise WrittenError(f"{where}: score {text} is out of range (0 to {max_points})")
    if value * 2 != int(value * 2):
        raise WrittenError(f"{where}: score {text} is not a whole or half point (scores are "
                           f"0, 0.5, 1, 1.5, ...)")
    return value


def read(path: Path) -> list[Row]:
    """The rows of a written.csv, checked on their own (columns, exercise ids, score range,
    one row per answer); :class:`WrittenError` naming the first bad row otherwise."""
    name = Path(path).name
    records = read_rows(path, WrittenError)
    if not records:
        raise WrittenError(f"{name} is empty (expected the header {','.join(COLUMNS)})")
    header = [h.strip().lower() for h in records[0]]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise WrittenError(f"{name} has no column {', '.join(missing)} (expected the header "
                           f"{','.join(COLUMNS)}; is it the written.csv that grade wrote?)")
    col = {c: header.index(c) for c in REQUIRED}
    out, seen = [], {}
    for n, rec in enumerate(records[1:], start=2):
        if not any(cell.strip() for cell in rec):
            continue
        if len(rec) != len(header):
            raise WrittenError(f"{name} row {n}: {len(rec)} cells, the header has {len(header)}")
        get = {c: csv_value(rec[i]) for c, i in col.items()}
        # the student id as written: "alice " (a folder's name) is not "alice" (students.py)
        row = Row(n, get["student"], get["assignment"].strip(), get["exercise"].strip(),
                  None, get["comment"].strip(), get["answer"])
        where = row.where(name)
        ex = EXERCISES.get(row.exercise)
        if ex is None:
            raise WrittenError(f"{where}: no exercise {row.exercise!r}")
        if ex.auto:
            raise WrittenError(f"{where}: exercise {row.exercise} is graded automatically, "
                               f"not by hand")
        row.score = _score(get["score"], where, points(ex))
        if row.key in seen:
            raise WrittenError(f"{where}: the same answer is in row {seen[row.key]} too")
        seen[row.key] = n
        out.append(row)
    return out


def _answers(report: Report) -> dict:
    """``{(student, assignment, exercise): grade}`` over the submissions that count."""
    return {(s.student, s.assignment, i): g for s in report.counted()
            for i, g in s.exercises.items()}


def _differs(row: Row, g) -> bool:
    """The answer text of ``row`` differs from the answer ``g`` holds."""
    return not _same_text(row.answer, answer_text(EXERCISES[row.exercise], g.answer))


def carry(report: Report, previous: Report) -> int:
    """Give each written answer of ``report`` still waiting for a score the hand score and
    comment ``previous`` (an earlier grading) has for the same student, assignment and exercise,
    when the answer's text is the same: a resubmission is scored again only where an answer
    changed. The number of answers carried over."""
    before = _answers(previous)
    carried = 0
    for key, g in _answers(report).items():
        o = before.get(key)
        if (g.status != "needs_instructor" or o is None or o.status not in WRITTEN
                or (o.score is None and not o.comment)):
            continue
        ex = EXERCISES[key[2]]
        if _same_text(answer_text(ex, g.answer), answer_text(ex, o.answer)):
            g.status, g.score, g.comment = o.status, o.score, o.comment
            carried += 1
    return carried


def changed_answers(report: Report, rows_: list[Row]) -> list[Row]:
    """The rows whose answer text differs from the answer graded now (resubmitted answers)."""
    answers = _answers(report)
    return [row for row in rows_ if (g := answers.get(row.key)) is not None
            and g.status in WRITTEN and _differs(row, g)]


def check(report: Report, rows_: list[Row], name: str = "written.csv") -> None:
    """Check every row against ``report``; :class:`WrittenError` for the first that does not fit
    (with how many more do not)."""
    counted = {(s.student, s.assignment) for s in report.counted()}
    answers = _answers(report)
    problems = []
    for row in rows_:
        where, g = row.where(name), answers.get(row.key)
        if (row.student, row.assignment) not in counted:
            problems.append(f"{where}: no submission of student {row.student!r} for "
                            f"{row.assignment!r} counts in this grading")
        elif g is None:
            problems.append(f"{where}: exercise {row.exercise} is not part of {row.assignment}")
        elif g.status not in WRITTEN:
            problems.append(f"{where}: this submission has no written answer to score for "
                            f"{row.exercise} (its status is {g.status})")
        elif _differs(row, g):
            problems.append(f"{where}: the answer text differs from the answer graded now (the "
                            f"submission changed, or the cell was edited); take the row from the "
                            f"new written.csv")
    if problems:
        more = f" (and {len(problems) - 1} more problem row(s))" if len(problems) > 1 else ""
        raise WrittenError(problems[0] + more)


def apply(report: Report, rows_: list[Row], name: str = "written.csv",
          skip_changed: bool = False) -> int:
    """Fold checked rows into ``report`` (after :func:`check`); the number of answers changed.
    ``skip_changed``: rows of answers changed since (:func:`changed_answers`) are left out
    instead of refused; their answers wait for a score in the new written.csv."""
    if skip_changed:
        stale = {id(r) for r in changed_answers(report, rows_)}
        rows_ = [r for r in rows_ if id(r) not in stale]
    check(report, rows_, name)
    answers = _answers(report)
    changed = 0
    for row in rows_:
        g = answers[row.key]
        if row.score is None and not row.comment:
            continue  # an empty row keeps what an earlier merge gave
        before = (g.status, g.score, g.comment)
        if row.score is not None:
            g.status, g.score = "hand_graded", row.score
        g.comment = row.comment
        changed += before != (g.status, g.score, g.comment)
    return changed
