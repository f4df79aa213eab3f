"""The chapter's 22 exercises, student side: instant checks, hints and a status table.

Students::

    from attention_lab.exercises import check, hint, status
    check("2.1", dot_scores)      # pass / fail (with the reason and a minimal failing case) / not attempted
    hint("2.1")                   # one more hint per call
    status()                      # a table of this notebook's exercises
    check("2.1", dot_scores, strict=True)  # the raising form, for test cells: CheckFailed unless it passes

The registry (:mod:`.registry`), the judge (:mod:`.judging`), the checks and their reference
cases (:mod:`.specs`, one module per level) and the
exercise notebooks' authoring tool (:mod:`.authoring`) live here too. Hand-in and batch grading
are :mod:`attention_lab.grading` (``python -m attention_lab submit NOTEBOOK``, ``python -m
attention_lab grade SUBMISSIONS_DIR --out OUT_DIR``).
"""

from __future__ import annotations

from .registry import EXERCISES, IDS, NOTEBOOKS, Exercise, get
from .student import CheckFailed, Result, StatusTable, check, hint, reset, status

__all__ = ["check", "hint", "status", "reset", "CheckFailed", "Result", "StatusTable", "EXERCISES", "IDS",
           "NOTEBOOKS", "Exercise", "get"]
