"""Feedback to hand back: one HTML page per student and assignment.

``OUT_DIR/feedback/<student>/<assignment>.html`` (``<student>`` is the safe folder name of
:func:`.students.path_names`; ``feedback/index.csv`` maps each student id to its page). A page
shows, for the submission that counts, each exercise's status in words (a symbol and a colour
too, never colour alone) and the message ``check()`` shows, the written answers with their rubric
and, once merged, the instructor's score and comment. It never shows a reference answer or one of
the grader's own random cases (:mod:`attention_lab.exercises.judging` leaves their inputs out of
the messages). The page is rendered from the template ``templates/feedback.html`` (Jinja2, every
value escaped), opens offline (no script, font, image or link outside the page), and is the same
for the same grades (no time stamp), so regrading with the same seed rewrites identical files.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..exercises.student import LABELS
from ._csv import NOT_UNICODE, csv_text, points_text
from .assignments import ASSIGNMENTS, points
from .report import Report, SubmissionGrade
from .students import path_names
from .written import WRITTEN

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: status -> (mark, words, CSS class); the words are what a screen reader reads
STATUS = {k: (mark, words, {"pass": "pass", "not_attempted": "open", "not_checked": "open",
                            "needs_instructor": "written"}.get(k, "fail"))
          for k, (mark, words, _) in LABELS.items()}
STATUS["needs_instructor"] = ("✎", "written answer, waiting for your instructor", "written")
STATUS["hand_graded"] = ("✎", "written answer, graded by your instructor", "written")
STATUS["unreadable"] = ("✘", "the file could not be read", "fail")
STATUS["too_large"] = ("✘", "the file is too large to grade", "fail")
STATUS["no_notebook"] = ("✘", "no notebook was handed in", "fail")


@lru_cache(maxsize=None)
def html_template(name: str):
    """``templates/<name>``, autoescaped (the feedback pages and summary.html)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    return env.get_template(name)


def context(s: SubmissionGrade) -> dict:
    """What the template shows for one counted submission."""
    a = ASSIGNMENTS[s.assignment]
    exercises = []
    for ex in a.exercises:
        g = s.exercises.get(ex.id)
        if g is None:
            continue
        mark, words, css = STATUS.get(g.status, ("?", g.status, "fail"))
        written = not ex.auto and g.status in WRITTEN
        item = {"id": ex.id, "anchor": ex.id.replace(".", "-"), "title": ex.title,
                "chapter": ex.chapter, "mark": mark, "label": words, "css": css,
                "written": written, "max": points(ex), "hint": g.status in ("fail", "error",
                                                                             "timeout")}
        if ex.auto:
            item["points_text"] = f"{points(ex) if g.status == 'pass' else 0} of {points(ex)}"
        elif g.status == "hand_graded":
            item["points_text"] = f"{points_text(g.score)} of {points(ex)}"
        else:
            item["points_text"] = (f"not graded yet (out of {points(ex)})" if written
                                   else f"0 of {points(ex)}")
        item["message"] = "" if written else g.message
        if written:
            fields = [f for f, _ in ex.fields]
            answer = g.answer or {}
            order = fields + sorted(k for k in answer if k not in fields)
            item.update(answer=[(f, answer[f]) for f in order if isinstance(answer.get(f), str)],
                        rubric=list(ex.rubric), scored=g.status == "hand_graded",
                        score=points_text(g.score) if g.score is not None else "",
                        comment=g.comment)
        exercises.append(item)
    written_count = sum(1 for ex in a.exercises if not ex.auto)
    m = s.meta
    return {"assignment": a, "student": s.student, "file": s.file,
            "late_by": m.get("late_by", ""), "submitted": m.get("submitted", ""),
            "due": m.get("due", ""), "late_policy": m.get("late_policy", ""),
            "points": points_text(s.points), "points_max": a.points,
            "replaces": s.meta.get("replaces", []), "notes": s.message,
            "auto": s.total, "auto_max": s.out_of, "written": points_text(s.written),
            "written_max": s.written_out_of, "pending": s.needs_instructor,
            "written_count": written_count,
            "written_scored": any(g.status == "hand_graded" for g in s.exercises.values()),
            "exercises": exercises}


def render(s: SubmissionGrade) -> str:
    return html_template("feedback.html").render(**context(s))


def write_feedback(report: Report, out: Path) -> Path:
    """``out/feedback/``: a page per counted submission and ``index.csv`` (student, assignment,
    page)."""
    folder = out / "feedback"
    folder.mkdir()
    counted = report.counted()
    names = path_names(s.student for s in counted)
    index = [["student", "assignment", "page"]]
    for s in sorted(counted, key=lambda s: (names[s.student], s.assignment)):
        page = folder / names[s.student] / f"{s.assignment}.html"
        page.parent.mkdir(exist_ok=True)
        page.write_text(render(s), encoding="utf-8", errors=NOT_UNICODE)
        index.append([s.student, s.assignment, page.relative_to(folder).as_posix()])
    (folder / "index.csv").write_text(csv_text(index), encoding="utf-8", errors=NOT_UNICODE)
    return folder


__all__ = ["render", "context", "write_feedback", "STATUS"]
