"""The chapter's 22 exercises: instant checks for students, submission and batch grading.

Students::

    from attention_lab.exercises import check, hint, status
    check("2.1", dot_scores)      # pass / fail (with the reason and a minimal failing case) / not attempted
    hint("2.1")                   # one more hint per call
    status()                      # a table of this notebook's exercises

Hand-in: ``python -m attention_lab submit NOTEBOOK``; grading: ``python -m attention_lab grade
SUBMISSIONS_DIR --out OUT_DIR`` (see :mod:`attention_lab.exercises.grading`).
"""

from __future__ import annotations

from .registry import EXERCISES, IDS, NOTEBOOKS, Exercise, get
from .student import Result, StatusTable, check, hint, reset, status

__all__ = ["check", "hint", "status", "reset", "Result", "StatusTable", "EXERCISES", "IDS",
           "NOTEBOOKS", "Exercise", "get"]
