"""The grades of a batch and the files ``grade`` writes from them.

:class:`SubmissionGrade` (one row: a status per exercise, with the message a student sees) and
:class:`Report` (the batch: grades, seed, limits, integrity); :func:`write_report` runs every
writer of ``REPORT_WRITERS`` (today ``grades.csv`` and ``grades.json``; further outputs such as
feedback or a gradebook are further writers) and :func:`summary_table` is what the command prints.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..exercises.registry import EXERCISES, IDS

if TYPE_CHECKING:
    from .runner import Limits

STATUSES = ("pass", "fail", "error", "not_attempted", "timeout", "unreadable", "needs_instructor")
SUBMISSION_STATUSES = ("graded", "unreadable", "timeout", "error")


@dataclass
class ExerciseGrade:
    status: str
    message: str
    score: int | None
    summary: str = ""
    answer: dict | None = None

    def as_dict(self) -> dict:
        d = {"status": self.status, "score": self.score, "message": self.message}
        if self.answer is not None:
            d["answer"] = self.answer
        return d


@dataclass
class SubmissionGrade:
    file: str
    sha256: str | None
    status: str
    message: str = ""
    exercises: dict = field(default_factory=dict)
    seconds: float = 0.0
    attempts: int = 0
    sandbox: dict = field(default_factory=dict)
    cells: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)  # Submission.meta

    @property
    def total(self) -> int:
        return sum(1 for g in self.exercises.values() if g.status == "pass")

    @property
    def needs_instructor(self) -> int:
        return sum(1 for g in self.exercises.values() if g.status == "needs_instructor")

    def as_dict(self) -> dict:
        d = {"file": self.file, "sha256": self.sha256, "status": self.status,
             "message": self.message, "total": self.total,
             "out_of": sum(1 for ex in EXERCISES.values() if ex.auto),
             "needs_instructor": self.needs_instructor,
             "seconds": round(self.seconds, 2), "kernel_starts": self.attempts,
             "cells": self.cells, "sandbox": self.sandbox,
             "exercises": {i: g.as_dict() for i, g in self.exercises.items()}}
        if self.meta:
            d["meta"] = self.meta
        return d


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

    def as_dict(self) -> dict:
        import attention_lab

        return {
            "grader": {"package_version": attention_lab.__version__,
                       "python": platform.python_version(), "seed": self.seed,
                       "started": self.started, "seconds": round(self.seconds, 2),
                       "jobs": self.jobs,
                       "limits": {"cell_timeout": self.limits.cell_timeout,
                                  "timeout": self.limits.timeout,
                                  "memory_mb": self.limits.memory_mb,
                                  "call_seconds": self.limits.call_seconds,
                                  "check_seconds": self.limits.check_seconds,
                                  "file_size_mb": self.limits.fsize_mb,
                                  "scratch_mb": self.limits.scratch_mb,
                                  "max_tasks": self.limits.max_tasks},
                       "isolation": self.isolation},
            "folder": self.folder,
            "exercises": [{"id": ex.id, "chapter": ex.chapter, "title": ex.title,
                           "kind": ex.kind, "answer": ex.answer_label,
                           "points": ex.points if ex.auto else None}
                          for ex in EXERCISES.values()],
            "submissions": [s.as_dict() for s in self.submissions],
            "skipped": self.skipped,
            "integrity": {"unchanged": not self.changed, "changed": self.changed},
        }


def write_grades_csv(report: Report, out: Path) -> Path:
    """``grades.csv``: one row per submission, one column per check id."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    auto = sum(1 for ex in EXERCISES.values() if ex.auto)
    w.writerow(["file", "status", "total", "out_of", "needs_instructor", *IDS, "message"])
    for s in report.submissions:
        w.writerow([s.file, s.status, s.total, auto, s.needs_instructor,
                    *[s.exercises[i].status for i in IDS], s.message.replace("\n", " ")[:500]])
    path = out / "grades.csv"
    _atomic_write(path, buf.getvalue())
    return path


def write_grades_json(report: Report, out: Path) -> Path:
    """``grades.json``: everything in :meth:`Report.as_dict`."""
    path = out / "grades.json"
    _atomic_write(path, json.dumps(report.as_dict(), indent=1, ensure_ascii=False,
                                   default=str) + "\n")
    return path


#: What ``grade`` writes into OUT_DIR, in order: functions ``(report, out) -> path written``.
REPORT_WRITERS = (write_grades_csv, write_grades_json)


def write_report(report: Report, out: Path, writers=REPORT_WRITERS) -> list[Path]:
    """Run every writer on ``report`` (creating ``out``); the paths written, in order."""
    out.mkdir(parents=True, exist_ok=True)
    return [write(report, out) for write in writers]


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def summary_table(report: Report) -> str:
    counts: dict[str, int] = {}
    for s in report.submissions:
        counts[s.status] = counts.get(s.status, 0) + 1
    lines = [f"graded {len(report.submissions)} submission(s) in {report.seconds:.1f} s "
             f"({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))})"]
    width = max([len(s.file) for s in report.submissions] + [4])
    auto = sum(1 for ex in EXERCISES.values() if ex.auto)
    for s in report.submissions:
        lines.append(f"  {s.file:<{width}}  {s.status:<10}  {s.total:>2}/{auto}"
                     + (f"  {s.needs_instructor} written" if s.needs_instructor else "")
                     + (f"  ({s.message[:80]})" if s.message else ""))
    if report.changed:
        lines.append(f"WARNING: {len(report.changed)} submission file(s) changed during grading: "
                     + ", ".join(c["file"] for c in report.changed))
    return "\n".join(lines)
