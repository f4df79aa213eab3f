"""The grades of a batch: :class:`SubmissionGrade` (one row: a status per exercise of its
assignment, with the message a student sees, and what is known about it in ``meta``: assignment,
student, whether it counts) and :class:`Report` (the batch: grades, seed, limits, integrity; read
back from grades.json by :meth:`Report.from_dict`), its own files (``grades.csv``,
``grades.json``) and :func:`summary_table`, what the command prints. Every file ``grade`` writes
is written by :func:`.outputs.write_report`.
"""

from __future__ import annotations

import json
import platform
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .._cli import shown
from ..exercises.registry import EXERCISES, IDS
from ._csv import NOT_UNICODE, csv_text, points_text
from .assignments import ASSIGNMENTS, points

if TYPE_CHECKING:
    from .runner import Limits

STATUSES = ("pass", "fail", "error", "not_attempted", "timeout", "unreadable", "too_large",
            "no_notebook", "needs_instructor", "hand_graded")
SUBMISSION_STATUSES = ("graded", "unreadable", "too_large", "no_notebook", "timeout", "error")
#: the fields of :class:`.runner.Limits` grades.json records (``fsize_mb`` as ``file_size_mb``)
STORED_LIMITS = ("cell_timeout", "timeout", "memory_mb", "call_seconds", "check_seconds",
                 "fsize_mb", "scratch_mb", "max_tasks", "grader_seconds")


@dataclass
class ExerciseGrade:
    status: str
    message: str
    score: float | None  # automatic: 1/0; written: None until scored by hand (hand_graded)
    summary: str = ""
    answer: dict | None = None
    comment: str = ""  # the instructor's, merged from written.csv

    def as_dict(self) -> dict:
        d = {"status": self.status, "score": self.score, "message": self.message}
        if self.answer is not None:
            d["answer"] = self.answer
        if self.comment:
            d["comment"] = self.comment
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "ExerciseGrade":
        return cls(d["status"], d.get("message", ""), d.get("score"), "", d.get("answer"),
                   d.get("comment", ""))


def counts(meta: dict) -> bool:
    """True when the submission of ``meta`` (:attr:`SubmissionGrade.meta`) goes into the
    gradebook: student and assignment known, and not superseded by a later submission."""
    return bool(meta.get("student") and meta.get("assignment") and not meta.get("superseded_by"))


@dataclass
class SubmissionGrade:
    file: str
    sha256: str | None
    status: str
    message: str = ""
    exercises: dict = field(default_factory=dict)  # id -> ExerciseGrade, its assignment's only
    seconds: float = 0.0
    attempts: int = 0
    sandbox: dict = field(default_factory=dict)
    cells: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)  # Submission.meta: assignment, student, ...
    grader_seconds: float = 0.0  # the grader's own CPU time on this submission (its thread)

    @property
    def student(self) -> str | None:
        return self.meta.get("student")

    @property
    def assignment(self) -> str | None:
        return self.meta.get("assignment")

    @property
    def counts(self) -> bool:
        return counts(self.meta)

    @property
    def total(self) -> int:
        """Points of the automatic checks passed."""
        return sum(points(EXERCISES[i]) for i, g in self.exercises.items()
                   if g.status == "pass" and EXERCISES[i].auto)

    @property
    def out_of(self) -> int:
        return sum(points(EXERCISES[i]) for i in self.exercises if EXERCISES[i].auto)

    @property
    def written(self) -> float:
        """Points given by hand so far."""
        return sum(g.score for g in self.exercises.values()
                   if g.status == "hand_graded" and g.score is not None)

    @property
    def written_out_of(self) -> int:
        return sum(points(EXERCISES[i]) for i in self.exercises if not EXERCISES[i].auto)

    @property
    def kept(self) -> float:
        """The fraction of its points the late policy leaves this submission (1 when on time)."""
        return float(self.meta.get("late_kept", 1.0))

    @property
    def points(self) -> float:
        """Automatic plus hand points, after the late policy (:mod:`.late`)."""
        return round((self.total + self.written) * self.kept, 2)

    @property
    def needs_instructor(self) -> int:
        """Written answers still waiting for a score."""
        return sum(1 for g in self.exercises.values() if g.status == "needs_instructor")

    def as_dict(self) -> dict:
        d = {"file": self.file, "sha256": self.sha256, "status": self.status,
             "message": self.message, "total": self.total, "out_of": self.out_of,
             "written": self.written, "written_out_of": self.written_out_of,
             "points": self.points, "needs_instructor": self.needs_instructor,
             "seconds": round(self.seconds, 2), "kernel_starts": self.attempts,
             "grader_cpu_seconds": round(self.grader_seconds, 3),
             "cells": self.cells, "sandbox": self.sandbox,
             "exercises": {i: g.as_dict() for i, g in self.exercises.items()}}
        if self.meta:
            d["meta"] = self.meta
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "SubmissionGrade":
        return cls(d["file"], d.get("sha256"), d["status"], d.get("message", ""),
                   {i: ExerciseGrade.from_dict(e) for i, e in d.get("exercises", {}).items()},
                   d.get("seconds", 0.0), d.get("kernel_starts", 0), d.get("sandbox", {}),
                   d.get("cells", []), d.get("meta", {}), d.get("grader_cpu_seconds", 0.0))


@dataclass
class Report:
    folder: str
    submissions: list
    skipped: list
    changed: list
    seed: int
    limits: Limits
    started: str
    seconds: float
    jobs: int
    isolation: dict = field(default_factory=dict)  # the batch's sandbox, or why there is none
    fresh: object = field(default=None, compare=False)  # indices of the submissions this run
    # graded (None: all), for what grade prints

    def counted(self) -> list[SubmissionGrade]:
        """The submissions that go into the gradebook (one per student and assignment)."""
        return [s for s in self.submissions if s.counts]

    def as_dict(self) -> dict:
        import attention_lab

        return {
            "grader": {"package_version": attention_lab.__version__,
                       "checks_sha256": checks_hash(),
                       "python": platform.python_version(), "seed": self.seed,
                       "started": self.started, "seconds": round(self.seconds, 2),
                       "jobs": self.jobs,
                       "limits": {("file_size_mb" if k == "fsize_mb" else k):
                                  getattr(self.limits, k) for k in STORED_LIMITS},
                       "isolation": self.isolation},
            "folder": self.folder,
            "assignments": [{"id": a.id, "title": a.title, "notebook": a.notebook,
                             "exercises": [ex.id for ex in a.exercises],
                             "auto_points": a.auto_points, "written_points": a.written_points}
                            for a in ASSIGNMENTS.values()],
            "exercises": [{"id": ex.id, "chapter": ex.chapter, "title": ex.title,
                           "kind": ex.kind, "answer": ex.answer_label, "points": points(ex),
                           "graded": "automatically" if ex.auto else "by hand"}
                          for ex in EXERCISES.values()],
            "submissions": [s.as_dict() for s in self.submissions],
            "skipped": self.skipped,
            "integrity": {"unchanged": not self.changed, "changed": self.changed},
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Report":
        """A report read back from grades.json (what ``merge`` starts from)."""
        from .runner import Limits

        g = d["grader"]
        stored = {("fsize_mb" if k == "file_size_mb" else k): v for k, v in g["limits"].items()}
        limits = Limits(**{k: v for k, v in stored.items() if k in Limits.__dataclass_fields__})
        return cls(d["folder"], [SubmissionGrade.from_dict(s) for s in d["submissions"]],
                   d.get("skipped", []), d.get("integrity", {}).get("changed", []), g["seed"],
                   limits, g.get("started", ""), g.get("seconds", 0.0), g.get("jobs", 1),
                   g.get("isolation", {}))


def files_sha256(files) -> str:
    """A hash of ``files``, ``(path, name)`` pairs in order: each name and the file's bytes."""
    import hashlib

    h = hashlib.sha256()
    for path, name in files:
        h.update(name.encode() + b"\0" + Path(path).read_bytes() + b"\0")
    return h.hexdigest()


def checks_hash() -> str:
    """A hash of the source of every module that decides a grade (the exercises' specs, the
    judging, the cases and the probe): two gradings with the same hash used the same checks."""
    import attention_lab

    pkg = Path(attention_lab.__file__).resolve().parent
    parts = sorted([*pkg.glob("exercises/*.py"), *pkg.glob("exercises/specs/*.py"),
                    pkg / "grading" / "cases.py"])
    return files_sha256((p, p.relative_to(pkg).as_posix()) for p in parts)


GRADES_COLUMNS = ["file", "student", "student_from", "lms_id", "assignment", "assignment_from",
                  "counts", "status", "submitted_at", "late_by", "points_kept", "total", "out_of",
                  "written", "written_out_of", "points", "needs_instructor", "flags"]


def flags(s: SubmissionGrade) -> str:
    """What an instructor should look at in this row, in words (near-duplicate ids, a claim of
    another student, an LMS user the roster lacks, one stored id handed in by two LMS users, a
    replacement only the notebook's own metadata vouches for); lateness has its own columns."""
    m, out = s.meta, []
    if m.get("near_duplicates"):
        out.append("near-duplicate of student id " + ", ".join(map(repr, m["near_duplicates"])))
    if any(k in m.get("student_note", "") for k in ("says it is from student",
                                                     "not in the roster")):
        out.append(m["student_note"])
    if m.get("replaces_on_metadata"):
        out.append(f"replaces {', '.join(m['replaces'])} on its notebook metadata alone (anyone "
                   f"can write any id there): check that both are {m['student']}'s")
    return "; ".join(out)


def write_grades_csv(report: Report, out: Path) -> Path:
    """``grades.csv``: one row per submission (superseded ones too), one column per check id
    (blank for the checks of other assignments)."""
    rows = [[*GRADES_COLUMNS, *IDS, "message"]]
    for s in report.submissions:
        m = s.meta
        rows.append([s.file, m.get("student", ""), m.get("student_source", ""),
                     m.get("lms_id", ""), m.get("assignment", ""), m.get("assignment_source", ""),
                     "yes" if s.counts else "no", s.status, m.get("submitted", ""),
                     m.get("late_by", ""), f"{round(s.kept, 4):g}", s.total, s.out_of,
                     points_text(s.written), s.written_out_of, points_text(s.points),
                     s.needs_instructor, flags(s),
                     *[s.exercises[i].status if i in s.exercises else "" for i in IDS],
                     s.message.replace("\n", " ")[:500]])
    return write_csv(out / "grades.csv", rows)


def write_csv(path: Path, rows) -> Path:
    """Write ``rows`` to ``path`` as the grader writes CSV (:func:`._csv.csv_text`)."""
    path.write_text(csv_text(rows), encoding="utf-8", errors=NOT_UNICODE)
    return path


def write_grades_json(report: Report, out: Path) -> Path:
    """``grades.json``: everything in :meth:`Report.as_dict`."""
    path = out / "grades.json"
    path.write_text(json.dumps(report.as_dict(), indent=1, ensure_ascii=False, default=str)
                    + "\n", encoding="utf-8", errors=NOT_UNICODE)
    return path


def read_report(path: Path) -> Report:
    """The report of a ``grades.json``; raises one of :data:`UNREADABLE` for a file that is
    missing, broken or not one that ``grade`` wrote."""
    return Report.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


UNREADABLE = (OSError, ValueError, KeyError, TypeError)


def summary_table(report: Report) -> str:
    """What ``grade`` prints: a line per submission it graded (``--only`` and ``--resume``
    keep the others' grades and say how many). File names, student ids and messages come
    from the students: every one is escaped (``_cli.shown``)."""
    subs = [s for i, s in enumerate(report.submissions) if report.fresh is None
            or i in report.fresh]  # (--only, --resume: what this run graded)
    counts = Counter(s.status for s in subs)
    kept = len(report.submissions) - len(subs)
    lines = [f"graded {len(subs)} submission(s) in {report.seconds:.1f} s"
             + (f" ({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))})" if subs else "")
             + (f"; the grades of {kept} other submission(s) kept" if kept else "")]
    width = max([len(shown(s.file)) for s in subs] + [4])
    for s in subs:
        who = shown(f"{s.student or '?'} / {s.assignment or '?'}")
        lines.append(f"  {shown(s.file):<{width}}  {who[:40]:<40}  {s.status:<10}  "
                     f"{s.total:>2}/{s.out_of}"
                     + (f"  {s.needs_instructor} written to grade" if s.needs_instructor else "")
                     + ("" if s.counts or not s.assignment or not s.student
                        else "  (superseded)")
                     + (f"  ({shown(s.message[:80])})" if s.message else ""))
    lines += course_warnings(report)
    if report.changed:
        lines.append(f"WARNING: {len(report.changed)} submission file(s) changed during grading: "
                     + ", ".join(shown(c["file"]) for c in report.changed))
    return "\n".join(lines)


def course_warnings(report: Report) -> list[str]:
    """What an instructor must look at before the gradebook goes to the LMS."""
    subs = report.submissions
    checks = [
        ([s for s in subs if s.status == "no_notebook"],
         "WARNING: {n} upload(s) hold no notebook (a row each, status no_notebook; the rest was "
         "graded)"),
        ([s for s in subs if s.meta.get("near_duplicates")],
         "WARNING: {n} submission(s) have a student id that nearly equals another (case, spaces "
         "or Unicode; kept apart, never merged)"),
        ([s for s in report.counted() if s.meta.get("late")],
         "note: {n} counted submission(s) are late ({policy})"),
        ([s for s in subs if s.status not in ("unreadable", "too_large", "no_notebook")
          and not s.assignment],
         "WARNING: the assignment of {n} submission(s) is unknown (graded against every check, "
         "left out of the gradebook; grade them with --assignment ID)"),
        ([s for s in subs if s.meta.get("student_source") == "file name"],
         "note: {n} submission(s) carry no student id and are not in a student folder; their "
         "file name is used as the id"),
        ([s for s in subs if "not in the roster" in s.meta.get("student_note", "")],
         "WARNING: {n} submission(s) come from LMS users not in the roster (filed under the id "
         "their notebook stores, else the LMS id, which Moodle's import cannot map; add them to "
         "the roster and grade again)"),
        ([s for s in subs if "its folder says" in s.meta.get("student_note", "")],
         "WARNING: {n} notebook(s) claim another student than their folder (the folder counts)"),
        ([s for s in subs if s.meta.get("replaces_on_metadata")],
         "WARNING: {n} submission(s) replace another on notebook metadata alone (a notebook can "
         "name any student; see the flags column)"),
        ([s for s in subs if s.meta.get("not_graded")],
         "WARNING: {n} submission(s) replace more earlier files than are graded (only the "
         "latest earlier ones are; grades.json lists the others under not_graded)"),
        ([s for s in subs if s.meta.get("superseded_by")],
         "note: {n} earlier submission(s) superseded by a later one of the same student and "
         "assignment (graded, not counted)"),
    ]
    return [text.format(n=len(found), policy=found[0].meta.get("late_policy", "")) + ": "
            + ", ".join(shown(s.file) for s in found[:5]) + (" ..." if len(found) > 5 else "")
            for found, text in checks if found]
