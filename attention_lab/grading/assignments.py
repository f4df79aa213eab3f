"""Assignments: one exercise notebook (one level) is one assignment.

Every student notebook carries its assignment id in its metadata, ``{"attention_lab":
{"assignment": "02_mechanics"}}`` (written by the authoring tool into the notebooks' text
headers, so it survives the jupytext pair round trip). :func:`detect` tells the assignment of a
submission: from that metadata, else from the file name (an LMS renames uploads, so the id or the
level's name anywhere in the name counts), else it is unknown and the grader says so. An
assignment totals only its own checks: a complete level-2 notebook scores full marks out of the
level-2 checks, not out of all 25.

Points: a computational check is worth its ``points`` (1); a written answer one point per line of
its rubric, scored by hand (:mod:`.written`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..exercises.registry import (ASSIGNMENT_IDS, EXERCISES, LEVEL_TITLES, METADATA_KEY, NOTEBOOKS,
                                   Exercise)


@dataclass(frozen=True)
class Assignment:
    id: str  # "02_mechanics"
    level: int
    title: str  # "Mechanics"
    notebook: str  # "02_mechanics_exercises"

    @property
    def exercises(self) -> list[Exercise]:
        return [ex for ex in EXERCISES.values() if ex.level == self.level]

    @property
    def auto_points(self) -> int:
        return sum(points(ex) for ex in self.exercises if ex.auto)

    @property
    def written_points(self) -> int:
        return sum(points(ex) for ex in self.exercises if not ex.auto)

    @property
    def points(self) -> int:
        return self.auto_points + self.written_points


def points(ex: Exercise) -> int:
    """What an exercise is worth: its ``points`` when checked automatically, one point per rubric
    line when written (graded by hand)."""
    return ex.points if ex.auto else len(ex.rubric)


ASSIGNMENTS: dict[str, Assignment] = {
    ASSIGNMENT_IDS[level]: Assignment(ASSIGNMENT_IDS[level], level, LEVEL_TITLES[level], stem)
    for level, stem in sorted(NOTEBOOKS.items())
}


class UnknownAssignment(ValueError):
    pass


def resolve(text: str) -> Assignment:
    """The assignment named by ``--assignment``: its id (``02_mechanics``), its notebook's name
    (``02_mechanics_exercises``) or its level number (``2``); :class:`UnknownAssignment` with the
    known ids otherwise."""
    key = str(text).strip().lower().removesuffix(".ipynb")
    for a in ASSIGNMENTS.values():
        if key in (a.id, a.notebook, str(a.level), f"{a.level:02d}"):
            return a
    raise UnknownAssignment(f"unknown assignment {text!r}; the assignments are "
                            f"{', '.join(ASSIGNMENTS)} (or their level numbers 1-4)")


def _words(name: str) -> str:
    return "_" + re.sub(r"[^a-z0-9]+", "_", name.lower()) + "_"


def from_file_name(*names: str) -> tuple[Assignment | None, str]:
    """(assignment, note) from file names: the one assignment whose id (``02_mechanics``) or
    level name (``mechanics``) appears in the name as whole words."""
    for name in names:
        if not name:
            continue
        words = _words(name)
        found = [a for a in ASSIGNMENTS.values()
                 if _words(a.id) in words or _words(a.id.split("_", 1)[1]) in words]
        if len(found) == 1:
            return found[0], ""
        if len(found) > 1:
            return None, (f"the file name {name!r} names several assignments "
                          f"({', '.join(a.id for a in found)})")
    return None, ""


def detect(metadata, *names: str) -> tuple[Assignment | None, str, str]:
    """``(assignment or None, source, note)`` for a notebook's ``metadata`` (untrusted: any JSON)
    and its file name(s): the metadata first, then the file names. ``source`` is ``"notebook
    metadata"``, ``"file name"`` or ``""`` (unknown); ``note`` says what was odd."""
    note = ""
    claimed = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    value = claimed.get("assignment") if isinstance(claimed, dict) else None
    if isinstance(value, str) and value in ASSIGNMENTS:
        return ASSIGNMENTS[value], "notebook metadata", ""
    if value is not None:
        note = f"the notebook's metadata names no known assignment ({str(value)[:40]!r})"
    found, why = from_file_name(*names)
    if found is not None:
        return found, "file name", note
    note = "; ".join(n for n in (note, why) if n)
    return None, "", note or "no assignment id in the notebook's metadata and none in its file name"


__all__ = ["ASSIGNMENTS", "Assignment", "METADATA_KEY", "UnknownAssignment", "detect",
           "from_file_name", "points", "resolve"]
