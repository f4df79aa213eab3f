"""Due dates and late work: when a submission counts as handed in, how late, and what it costs.

The time that counts is the LMS's: the file's modification time as the LMS's download sets it,
or, for Canvas, only its ``_LATE`` mark (Canvas's zip gives every file the time the zip was
made, and the mark follows Canvas's own due dates and extensions). Never a field the student
wrote (``submit``'s ``created`` is shown, not used).

``late_by`` is the time after the due date (``--deadline``, or the roster's ``due`` of that
student), in whole days started (``1`` for a minute late). A policy (``--late-penalty 10%/day``,
``--late zero``, or, by default, ``flag``: shown, not applied) turns it into a fraction of the
points kept: ``10%/day`` keeps ``1 - 0.1 * days`` (never below 0).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass

DAY = 86400.0


def parse_time(text: str) -> _dt.datetime:
    """An ISO 8601 date or time (``2026-03-01``, ``2026-03-01T23:59``, ``...+01:00``) as UTC; a
    date alone means the end of that day, a time without zone UTC."""
    text = text.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            t = _dt.datetime.fromisoformat(text).replace(hour=23, minute=59, second=59)
        else:
            t = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("not an ISO 8601 date or time (like 2026-03-01T23:59+01:00)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.astimezone(_dt.timezone.utc)


@dataclass(frozen=True)
class Policy:
    kind: str = "flag"  # flag | zero | per_day
    per_day: float = 0.0  # fraction lost per day started (per_day)

    @classmethod
    def parse(cls, penalty: str | None, late: str | None) -> "Policy":
        """From ``--late-penalty P%/day`` or ``--late zero|flag``; ``ValueError`` naming the
        option otherwise."""
        if penalty is not None and late not in (None, "flag"):
            raise ValueError("give --late-penalty or --late zero, not both")
        if penalty is not None:
            m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*/\s*day\s*", penalty)
            if not m or not 0 < float(m[1]) <= 100:
                raise ValueError(f"--late-penalty {penalty!r}: expected a percentage per day, "
                                 f"like 10%/day")
            return cls("per_day", float(m[1]) / 100)
        if late in (None, "flag"):
            return cls()
        if late == "zero":
            return cls("zero")
        raise ValueError(f"--late {late!r}: expected zero or flag")

    def kept(self, days: int) -> float:
        """The fraction of the points a submission ``days`` days late keeps."""
        if days <= 0 or self.kind == "flag":
            return 1.0
        if self.kind == "zero":
            return 0.0
        return max(0.0, 1.0 - self.per_day * days)

    def describe(self) -> str:
        return {"flag": "late work is flagged, not penalised", "zero": "late work scores 0",
                "per_day": f"late work loses {round(self.per_day * 100, 4):g}% of its points "
                           f"per day started"}[self.kind]


def lateness(submitted: _dt.datetime, due: _dt.datetime | None, lms_late: bool,
             lms: str | None = None) -> dict:
    """``late`` (bool), ``late_by`` (e.g. ``"2 days"``, ``"late (marked by the LMS)"`` or ``""``)
    and ``late_days`` for a submission at ``submitted``; a file from Canvas (``lms``) is late
    only by Canvas's mark: its zip dates every file by the time the zip was made."""
    if lms == "Canvas":
        due = None
    if due is not None and submitted > due:
        days = math.ceil((submitted - due).total_seconds() / DAY)
        return {"late": True, "late_days": days,
                "late_by": f"{days} day{'s' if days > 1 else ''}"}
    if lms_late and due is None:
        return {"late": True, "late_days": 1, "late_by": "late (marked by the LMS)"}
    return {"late": False, "late_days": 0, "late_by": ""}


__all__ = ["Policy", "parse_time", "lateness", "DAY"]
