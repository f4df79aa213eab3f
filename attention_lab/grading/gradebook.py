"""``gradebook.csv``: one row per student, the columns an LMS imports (the instructors' guide,
``docs/instructors/outputs.md``, lists them): per assignment with a counted submission, in level
order, its automatic, written, total and maximum points; then ``total``, ``max`` and ``pending``.

Blank, not 0, where a student has no counted submission (an LMS reads blank as "no grade"), and
no row but the header and the students' (Moodle's CSV import stops at a row whose student it
cannot find). Points are after the late policy (:mod:`.late`). ``lms/canvas.csv`` and
``lms/moodle.csv`` hold the same totals in Canvas's and Moodle's import formats
(:func:`canvas_table`, :func:`moodle_table`), with the LMS ids from the roster or the download.
"""

from __future__ import annotations

from pathlib import Path

from ._csv import points_text
from .assignments import ASSIGNMENTS
from .report import Report, write_csv


def table(report: Report) -> list[list]:
    present, by_student, _ = _people(report)
    header = ["student"]
    for a in present:
        header += [f"{a.id} auto"] + ([f"{a.id} written"] if a.written_points else []) \
            + [f"{a.id} total", f"{a.id} max"]
    header += ["total", "max", "pending"]
    course_max = sum(a.points for a in present)
    out = [header]
    for student, grades in by_student.items():
        row: list = [student]
        total, pending = 0.0, 0
        for a in present:
            s = grades.get(a.id)
            if s is None:
                row += [""] * (4 if a.written_points else 3)
                row[-1] = a.points
                continue
            got = s.points
            total += got
            pending += s.needs_instructor
            row += [s.total] + ([points_text(s.written)] if a.written_points else []) \
                + [points_text(got), a.points]
        row += [points_text(total), course_max, pending]
        out.append(row)
    return out


def write_gradebook(report: Report, out: Path) -> Path:
    return write_csv(out / "gradebook.csv", table(report))


def _people(report: Report):
    """(present assignments, {student: {assignment: grade}} sorted by student id, {student:
    (lms id, name)})."""
    counted = report.counted()
    present = [a for a in ASSIGNMENTS.values() if any(s.assignment == a.id for s in counted)]
    by_student: dict[str, dict] = {}
    who: dict[str, tuple] = {}
    for s in sorted(counted, key=lambda s: (s.student.casefold(), s.student)):
        by_student.setdefault(s.student, {})[s.assignment] = s
        if s.meta.get("lms_id") and s.student not in who:
            who[s.student] = (s.meta["lms_id"], s.meta.get("lms_name", ""))
    return present, by_student, who


def canvas_table(report: Report) -> list[list]:
    """Canvas's gradebook import: ``Student, ID, SIS User ID, SIS Login ID, Section`` then a
    column per assignment (a new name makes Canvas create the assignment), with Canvas's
    ``Points Possible`` row under the header; ``ID`` is Canvas's user id (from the roster or
    the download's names), ``SIS Login ID`` the student's login."""
    present, by_student, who = _people(report)
    out = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
            *(f"{a.title} ({a.id})" for a in present)],
           ["    Points Possible", "", "", "", "", *(a.points for a in present)]]
    for student, grades in by_student.items():
        lms_id, name = who.get(student, ("", ""))
        out.append([name or student, lms_id, "", student, "", *_points(grades, present)])
    return out


def moodle_table(report: Report) -> list[list]:
    """Moodle's *Import grades from CSV*: a header row, then one row per student (no other rows:
    Moodle stops at a row it cannot map). Map ``Username`` to the user field "username" and each
    assignment column to its grade item."""
    present, by_student, who = _people(report)
    out = [["Username", "Full name", *(f"{a.title} ({a.id})" for a in present)]]
    for student, grades in by_student.items():
        out.append([student, who.get(student, ("", ""))[1] or student, *_points(grades, present)])
    return out


def _points(grades: dict, present: list) -> list:
    """A student's points per assignment of ``present`` (blank where none counts)."""
    return [points_text(grades[a.id].points) if a.id in grades else "" for a in present]


def write_lms_gradebooks(report: Report, out: Path) -> Path:
    """``lms/canvas.csv`` and ``lms/moodle.csv``: the gradebook in each LMS's import format."""
    folder = out / "lms"
    folder.mkdir(exist_ok=True)  # the term's gradebook is written again into the same TERM_DIR
    write_csv(folder / "canvas.csv", canvas_table(report))
    write_csv(folder / "moodle.csv", moodle_table(report))
    return folder


# ====================================================================== the term
def combine(reports: list[Report]) -> tuple[Report, list[str]]:
    """One report holding the counted submissions of several gradings (weeks, assignments),
    each with the hand scores its grading carries; where two gradings hold the same student
    and assignment, the one started later counts. (report, notes on what was replaced)."""
    chosen: dict[tuple, tuple] = {}
    notes = []
    for r in sorted(reports, key=lambda r: r.started):
        for s in r.counted():
            key = (s.student, s.assignment)
            if key in chosen:
                notes.append(f"{s.student} / {s.assignment}: the grading of {r.started} replaces "
                             f"the one of {chosen[key][0].started}")
            chosen[key] = (r, s)
    subs = [s for _, s in chosen.values()]
    first = min(reports, key=lambda r: r.started)
    return Report("; ".join(r.folder for r in reports), subs, [], [], first.seed, first.limits,
                  first.started, 0.0, 1), notes


def build_parser():
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m attention_lab gradebook",
        description="The term's gradebook: combine several gradings (OUT_DIRs written by grade, "
                    "one per week or assignment, with their merged hand scores) into one "
                    "gradebook.csv, lms/canvas.csv and lms/moodle.csv in --out. Where two "
                    "gradings hold the same student and assignment, the later one counts.")
    parser.add_argument("gradings", metavar="OUT_DIR", nargs="+",
                        help="folders written by grade (each with grades.json)")
    parser.add_argument("--out", required=True, metavar="TERM_DIR",
                        help="folder for the term's gradebook files (created if missing)")
    return parser


def main(argv: list[str] | None = None) -> int:
    import sys

    from .. import _cli
    from .report import UNREADABLE, read_report

    args, code = _cli.parse(build_parser(), argv)
    if args is None:
        return code
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return _cli.fail("gradebook", f"--out {out} is a file; give a folder for the term's "
                                      "gradebook")
    reports = []
    for folder in map(Path, args.gradings):
        path = folder / "grades.json"
        if not path.is_file():
            said = ("holds no grades.json" if folder.is_dir() else
                    "is not a folder" if folder.exists() else "does not exist")
            return _cli.fail("gradebook", f"{folder} {said}; give folders that grade wrote")
        try:
            reports.append(read_report(path))
        except UNREADABLE as exc:
            return _cli.fail("gradebook", f"{path} cannot be read ({type(exc).__name__}: {exc}); "
                                          f"give folders that grade wrote")
    term, notes = combine(reports)
    for n in notes:
        print(f"note: {_cli.shown(n)}", file=sys.stderr)
    try:
        out.mkdir(parents=True, exist_ok=True)
        book, lms_ = write_gradebook(term, out), write_lms_gradebooks(term, out)
    except OSError as exc:
        return _cli.fail("gradebook", f"cannot write {exc.filename or out}: "
                                      f"{exc.strerror or exc}")
    students = len({s.student for s in term.submissions})
    print(f"wrote {book} and {lms_}: {students} student(s), {len(term.submissions)} "
          f"assignment grade(s) from {len(reports)} grading(s)")
    return 0


__all__ = ["table", "write_gradebook", "canvas_table", "moodle_table", "write_lms_gradebooks",
           "combine", "build_parser", "main"]
