"""``summary.html``: the class at a glance, for the instructor before the next lecture.

Written into OUT_DIR beside ``feedback/`` (whose pages and ``index.csv`` go to the students; this
page stays out of that folder, so that no student's folder name can clash with it).

Per assignment: how many submissions count, a histogram of their points (after the late policy;
one bar per whole point, each bar's count written beside it, so it reads without colour or
sight), per exercise the pass rate and the check messages seen most often among the answers
that did not pass. Computed from the counted submissions only (one per student and
assignment). Rendered from ``templates/summary.html`` (Jinja2, every value escaped: messages
can quote a student's output); opens offline and holds no student id.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

from ._csv import NOT_UNICODE
from .assignments import ASSIGNMENTS
from .feedback import html_template
from .report import Report

TOP_MESSAGES = 3


def first_line(message: str) -> str:
    return message.strip().split("\n", 1)[0][:200]


def statistics(report: Report) -> list[dict]:
    """Per assignment with counted submissions: ``n``, ``histogram`` (points -> count, every
    whole point from 0 to the maximum), ``exercises`` (id, title, pass rate, most frequent
    messages with their counts)."""
    counted = report.counted()
    out = []
    for a in ASSIGNMENTS.values():
        subs = [s for s in counted if s.assignment == a.id]
        if not subs:
            continue
        bins = Counter(min(a.points, math.floor(s.points)) for s in subs)
        histogram = [{"points": p, "count": bins.get(p, 0),
                      "width": round(100 * bins.get(p, 0) / len(subs))}
                     for p in range(a.points + 1)]
        exercises = []
        for ex in a.exercises:
            grades = [s.exercises[ex.id] for s in subs if ex.id in s.exercises]
            if not ex.auto:
                scored = [g for g in grades if g.status == "hand_graded"]
                exercises.append({"id": ex.id, "title": ex.title, "auto": False,
                                  "scored": len(scored), "n": len(grades), "messages": []})
                continue
            passed = sum(g.status == "pass" for g in grades)
            seen = Counter(first_line(g.message) or g.status for g in grades
                           if g.status != "pass")
            exercises.append({"id": ex.id, "title": ex.title, "auto": True, "n": len(grades),
                              "passed": passed,
                              "rate": round(100 * passed / len(grades)) if grades else 0,
                              "messages": seen.most_common(TOP_MESSAGES)})
        out.append({"assignment": a, "n": len(subs), "histogram": histogram,
                    "late": sum(bool(s.meta.get("late")) for s in subs),
                    "exercises": exercises})
    return out


def render(report: Report) -> str:
    return html_template("summary.html").render(assignments=statistics(report),
                             graded=len(report.submissions), counted=len(report.counted()))


def write_summary(report: Report, folder: Path) -> Path:
    """Write ``folder/summary.html`` (``folder``: OUT_DIR)."""
    path = Path(folder) / "summary.html"
    path.write_text(render(report), encoding="utf-8", errors=NOT_UNICODE)
    return path


__all__ = ["statistics", "render", "write_summary"]
