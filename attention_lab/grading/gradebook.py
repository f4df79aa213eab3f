"""``gradebook.csv``: one row per student, the columns an LMS imports.

Columns (only for the assignments that have at least one counted submission, in level order):

* ``student``: the student id (see :mod:`.students` for where it comes from);
* per assignment ``A``: ``A auto`` (points of the automatic checks), ``A written`` (points given
  by hand so far; only for assignments with written answers), ``A total`` (the two added) and
  ``A max`` (the most ``A total`` can be). A student without a counted submission for ``A`` has
  blank cells there (an LMS reads blank as "no grade", not as 0);
* ``total`` and ``max``: over all the assignments in the file; ``pending``: written answers not
  yet scored (merge written.csv until it reads 0 everywhere).

One header row, then one row per student, sorted by id, nothing else: Moodle's CSV import stops at
a row whose student it cannot find, so the file holds no extra rows (no "points possible" row).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._csv import csv_text, points_text
from .assignments import ASSIGNMENTS

if TYPE_CHECKING:
    from .report import Report


def table(report: Report) -> list[list]:
    counted = report.counted()
    present = [a for a in ASSIGNMENTS.values() if any(s.assignment == a.id for s in counted)]
    header = ["student"]
    for a in present:
        header += [f"{a.id} auto"] + ([f"{a.id} written"] if a.written_points else []) \
            + [f"{a.id} total", f"{a.id} max"]
    header += ["total", "max", "pending"]
    by_student: dict[str, dict] = {}
    for s in counted:
        by_student.setdefault(s.student, {})[s.assignment] = s
    course_max = sum(a.points for a in present)
    out = [header]
    for student in sorted(by_student, key=lambda x: (x.casefold(), x)):
        row: list = [student]
        total, pending = 0.0, 0
        for a in present:
            s = by_student[student].get(a.id)
            if s is None:
                row += [""] * (4 if a.written_points else 3)
                row[-1] = a.points
                continue
            got = s.total + s.written
            total += got
            pending += s.needs_instructor
            row += [s.total] + ([points_text(s.written)] if a.written_points else []) \
                + [points_text(got), a.points]
        row += [points_text(total), course_max, pending]
        out.append(row)
    return out


def write_gradebook(report: Report, out: Path) -> Path:
    path = out / "gradebook.csv"
    path.write_text(csv_text(table(report)), encoding="utf-8")
    return path


__all__ = ["table", "write_gradebook"]
