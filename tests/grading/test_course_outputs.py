"""What ``grade`` writes for a course and what ``merge`` folds back: written.csv, gradebook.csv,
the feedback pages, and the command line's refusals. No kernels: the grades are built from real
verdicts of the checks (the messages a student sees), judged in this process."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from attention_lab.exercises.judging import cases_for
from attention_lab.exercises.specs.base import STUDENT_SEED, fmt
from attention_lab.exercises.registry import EXERCISES
from attention_lab.exercises.student import evaluate
from attention_lab.grading import batch, feedback, gradebook, merge, written
from attention_lab.grading._csv import csv_text, csv_value
from attention_lab.grading.assignments import ASSIGNMENTS
from attention_lab.grading.outputs import write_report
from attention_lab.grading.report import ExerciseGrade, Report, SubmissionGrade
from attention_lab.grading.runner import Limits

ROOT = Path(__file__).resolve().parents[2]
SEED = 11  # the grader's seed in these tests (not the student seed)
FIXED_SHAPES = {c.args[1].shape for c in cases_for(EXERCISES["2.1"], SEED) if not c.hidden}


def right_dot(query, keys):
    return keys @ query


def scaled_dot(query, keys):
    return keys @ query / np.sqrt(len(query))


def wrong_on_random_cases(query, keys):
    """Right on every fixed edge case, wrong on the grader's random ones."""
    return keys @ query if keys.shape in FIXED_SHAPES else keys @ query + 1


SHIFT = {"derivation": "exp(e+c) = exp(c) exp(e) <img src=x onerror=alert(1)>",
         "consequence": "subtract the max\n\nso nothing overflows"}


def grade_of(student, assignment, answers, *, file=None, meta=None) -> SubmissionGrade:
    """A submission's grade as the grader makes it, from answers judged with the grader's seed."""
    exercises = {}
    for ex in ASSIGNMENTS[assignment].exercises:
        if ex.id not in answers:
            exercises[ex.id] = ExerciseGrade("not_attempted", f"no `{ex.answer_label}` is "
                                                              f"defined", 0, "not attempted")
            continue
        v = evaluate(ex, answers[ex.id], seed=SEED)
        exercises[ex.id] = ExerciseGrade(v.status, v.message, v.score, v.summary,
                                         v.details.get("answer") if not ex.auto else None)
    g = SubmissionGrade(file or f"{student}/{assignment}.ipynb", "0" * 64, "graded",
                        exercises=exercises)
    g.meta = {"student": student, "student_source": "folder", "assignment": assignment,
              "assignment_source": "notebook metadata", **(meta or {})}
    return g


def report_of(*grades) -> Report:
    return Report("/subs", list(grades), [], [], SEED, Limits(), "2026-01-01T00:00:00+00:00",
                  1.0, 2)


@pytest.fixture
def course():
    return report_of(
        grade_of("alice", "02_mechanics", {"2.1": right_dot, "2.2": [0.659, 0.242, 0.099],
                                           "2.3": SHIFT}),
        grade_of("alice", "02_mechanics", {"2.1": scaled_dot}, file="alice/old.ipynb",
                 meta={"superseded_by": "alice/02_mechanics.ipynb"}),
        grade_of("José Núñez/..", "02_mechanics",
                 {"2.1": wrong_on_random_cases, "2.3": {"derivation": "shift"}}),
        grade_of("bob", "01_intuition", {}),
        grade_of("bob", "04_research", {"4.4": {"establishes": "one intervention"}}),
        grade_of("nobody", "02_mechanics", {}, meta={"assignment": None}),  # unknown assignment
    )


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: csv_value(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def write_rows(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


# ------------------------------------------------------------------ written.csv and merge
def test_written_csv_has_one_row_per_written_answer_of_the_counted_submissions(tmp_path, course):
    rows = read_csv(written.write_written_csv(course, tmp_path))
    assert [(r["student"], r["exercise"]) for r in rows] == [
        ("alice", "2.3"), ("bob", "4.4"), ("José Núñez/..", "2.3")]
    first = rows[0]
    assert list(first) == written.COLUMNS
    assert first["points"] == "4" and first["score"] == first["comment"] == ""
    assert first["answer"] == f"[derivation]\n{SHIFT['derivation']}\n\n[consequence]\n" \
                              f"{SHIFT['consequence']}"
    assert first["rubric"].startswith("1. exp(e_i + c)") and first["rubric"].count("\n") == 3


def test_csv_cells_never_run_as_formulas_and_read_back_exactly():
    cells = ["=HYPERLINK(\"x\")", "+1+2", "-rf", "@SUM(A1)", "'quoted", "\tx", "-1", "2.5",
             "plain", ""]
    (row,) = list(csv.reader(io.StringIO(csv_text([cells]))))
    assert [c[:1] for c in row[:6]] == ["'"] * 6 and row[6:] == ["-1", "2.5", "plain", ""]
    assert [csv_value(c) for c in row] == cells


def test_merge_scores_and_comments_idempotently(tmp_path, course):
    rows = read_csv(written.write_written_csv(course, tmp_path))
    rows[0].update(score="3.5", comment="good; say why c may be negative")
    rows[1].update(score="2,5")  # a decimal comma from a spreadsheet
    path = tmp_path / "filled.csv"
    write_rows(path, rows)
    assert written.apply(course, written.read(path)) == 2
    alice = course.counted()[0]
    assert alice.exercises["2.3"].status == "hand_graded" and alice.written == 3.5
    assert alice.exercises["2.3"].comment.startswith("good")
    assert alice.needs_instructor == 0
    assert written.apply(course, written.read(path)) == 0  # again: nothing changes
    assert alice.written == 3.5  # replaced, never added
    # an empty row keeps what an earlier merge gave: nothing lost
    rows[0].update(score="", comment="")
    write_rows(path, rows)
    written.apply(course, written.read(path))
    assert alice.written == 3.5 and alice.exercises["2.3"].comment.startswith("good")


@pytest.mark.parametrize("edit,fragment", [
    (lambda rows: rows[0].update(score="5"), "row 2 (student 'alice', 02_mechanics exercise "
                                             "2.3): score 5 is out of range (0 to 4)"),
    (lambda rows: rows[1].update(score="-1"), "row 3 (student 'bob', 04_research exercise 4.4): "
                                              "score -1 is out of range"),
    (lambda rows: rows[0].update(score="good"), "row 2 (student 'alice', 02_mechanics exercise "
                                                "2.3): score 'good' is not a number"),
    (lambda rows: rows[0].update(score="nan"), "row 2 (student 'alice', 02_mechanics exercise "
                                               "2.3): score nan is out of range"),
    (lambda rows: rows[0].update(exercise="2.9"), "row 2 (student 'alice', 02_mechanics exercise "
                                                  "2.9): no exercise '2.9'"),
    (lambda rows: rows[0].update(exercise="2.1"), "exercise 2.1 is graded automatically"),
    (lambda rows: rows.append(dict(rows[0])), "row 5 (student 'alice', 02_mechanics exercise "
                                              "2.3): the same answer is in row 2 too"),
    (lambda rows: rows[0].update(student="mallory"), "row 2 (student 'mallory', 02_mechanics "
                                                     "exercise 2.3): no submission of student "
                                                     "'mallory' for '02_mechanics' counts"),
    (lambda rows: rows[0].update(exercise="4.4"), "exercise 4.4 is not part of 02_mechanics"),
    (lambda rows: rows[0].update(answer="something else"),
     "row 2 (student 'alice', 02_mechanics exercise 2.3): the answer text differs"),
])
def test_a_bad_row_stops_the_merge_with_the_row_named(tmp_path, course, edit, fragment):
    rows = read_csv(written.write_written_csv(course, tmp_path))
    for r in rows:
        r["score"] = "1"
    edit(rows)
    path = tmp_path / "filled.csv"
    write_rows(path, rows)
    before = [(s.file, {i: (g.status, g.score) for i, g in s.exercises.items()})
              for s in course.submissions]
    with pytest.raises(written.WrittenError) as info:
        written.apply(course, written.read(path), "filled.csv")
    assert fragment in str(info.value) and "\n" not in str(info.value)
    after = [(s.file, {i: (g.status, g.score) for i, g in s.exercises.items()})
             for s in course.submissions]
    assert after == before  # all or nothing


def test_what_a_spreadsheet_does_to_the_file_is_accepted(tmp_path, course):
    rows = read_csv(written.write_written_csv(course, tmp_path))
    rows[0]["score"] = "4"
    rows[0]["answer"] = rows[0]["answer"].replace("\n", "\r\n") + "  "
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\r\n")
    w.writeheader()
    w.writerows(rows)
    (tmp_path / "excel.csv").write_bytes(b"\xef\xbb\xbf" + buf.getvalue().encode())  # BOM
    written.apply(course, written.read(tmp_path / "excel.csv"))
    assert course.counted()[0].written == 4


@pytest.mark.parametrize("content,fragment", [
    (b"", "is empty"), (b"\xff\xfe\x00x", "not UTF-8"),
    (b"student,exercise\nalice,2.3\n", "has no column assignment, score, comment, answer"),
    (b"student,assignment,exercise,score,comment,answer\nalice,02_mechanics\n", "row 2: 2 cells"),
    (b'student,assignment,exercise,score,comment,answer\n"alice,02', "not a readable CSV"),
])
def test_a_malformed_written_csv_is_one_clear_line(tmp_path, content, fragment):
    (tmp_path / "w.csv").write_bytes(content)
    with pytest.raises(written.WrittenError, match=fragment) as info:
        written.read(tmp_path / "w.csv")
    assert "\n" not in str(info.value)


def test_merge_command_rewrites_everything_all_or_nothing(tmp_path, course, capsys):
    out = tmp_path / "grades"
    write_report(course, out)
    rows = read_csv(out / "written.csv")
    rows[0].update(score="3", comment="ok")
    write_rows(out / "written.csv", rows)
    assert merge.main([str(out)]) == 0
    first = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert "merged" in capsys.readouterr().out
    assert read_csv(out / "written.csv")[0]["score"] == "3"
    assert read_csv(out / "gradebook.csv")[0]["02_mechanics written"] == "3"
    assert "Score: <strong>3 of 4 points</strong>" in (out / "feedback/alice/02_mechanics.html"
                                                       ).read_text()
    assert merge.main([str(out)]) == 0  # idempotent: byte for byte
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == first
    rows[0].update(score="7")
    write_rows(tmp_path / "bad.csv", rows)
    assert merge.main([str(out), str(tmp_path / "bad.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "row 2" in err and "nothing was written" in err
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == first
    assert merge.main([str(tmp_path / "nowhere")]) == 2
    assert "run grade first" in capsys.readouterr().err


# ------------------------------------------------------------------ gradebook.csv
def test_gradebook_one_row_per_student_with_totals_and_maxima(tmp_path, course):
    course.counted()[0].exercises["2.3"].status = "hand_graded"
    course.counted()[0].exercises["2.3"].score = 2.5
    text = gradebook.write_gradebook(course, tmp_path).read_text()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["student", "01_intuition auto", "01_intuition total", "01_intuition max",
                       "02_mechanics auto", "02_mechanics written", "02_mechanics total",
                       "02_mechanics max", "04_research auto", "04_research written",
                       "04_research total", "04_research max", "total", "max", "pending"]
    body = {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    assert list(body) == ["alice", "bob", "José Núñez/.."]  # no other row (Moodle stops at one)
    alice = body["alice"]
    assert (alice["02_mechanics auto"], alice["02_mechanics written"],
            alice["02_mechanics total"], alice["02_mechanics max"]) == ("2", "2.5", "4.5", "10")
    assert alice["01_intuition total"] == "" and alice["01_intuition max"] == "4"
    assert (alice["total"], alice["max"], alice["pending"]) == ("4.5", "39", "0")
    bob = body["bob"]
    assert bob["01_intuition auto"] == "0" and bob["04_research written"] == "0"
    assert bob["pending"] == "1" and bob["02_mechanics auto"] == ""
    assert body["José Núñez/.."]["02_mechanics auto"] == "0"  # fails the hidden cases
    assert text.encode()[:3] != b"\xef\xbb\xbf"


# ------------------------------------------------------------------ feedback pages
def test_feedback_pages_per_student_and_assignment(tmp_path, course):
    folder = feedback.write_feedback(course, tmp_path)
    pages = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.html"))
    assert len(pages) == 4 and "alice/02_mechanics.html" in pages
    assert "bob/01_intuition.html" in pages and "bob/04_research.html" in pages
    odd = [p for p in pages if not p.startswith(("alice/", "bob/"))]
    assert len(odd) == 1 and odd[0].startswith("Jos") and odd[0].count("/") == 1
    index = read_csv(folder / "index.csv")
    assert {(r["student"], r["page"]) for r in index} >= {("José Núñez/..", odd[0])}
    assert not any("old.ipynb" in (folder / p).read_text() for p in pages if "alice" in p)


def test_feedback_shows_what_check_shows_and_never_a_reference_or_a_hidden_case(course):
    alice = course.counted()[0]
    page = feedback.render(alice)
    assert '<html lang="en">' in page and page.count("<h1>") == 1
    assert "Checked automatically: <strong>2 of 6 points</strong>" in page
    assert "written answer, waiting for your instructor" in page
    # escaped, never markup: a student's answer cannot inject an element
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    for ex in EXERCISES["2.3"].rubric:
        assert ex.replace("<", "&lt;").replace(">", "&gt;") in page
    assert not any(tag in page for tag in ("<script", "<link", "<img", "<iframe", "url(",
                                           "@import", "http://", "https://"))

    jose = next(s for s in course.counted() if s.student.startswith("Jos"))
    page = feedback.render(jose)
    message = jose.exercises["2.1"].message
    assert jose.exercises["2.1"].status == "fail" and message in page.replace("&#39;", "'")
    assert "one of the grader's own random cases" in message
    for case in cases_for(EXERCISES["2.1"], SEED):
        if case.hidden:  # neither the inputs nor the expected output of a hidden case
            for value in (*case.args, case.args[1] @ case.args[0]):
                assert fmt(value) not in page
    assert 'hint("2.1")' in page.replace("&#34;", '"')

    wrong = feedback.render(report_of(grade_of("eve", "02_mechanics",
                                               {"2.1": scaled_dot})).counted()[0])
    first = cases_for(EXERCISES["2.1"], SEED)[0]
    assert "Minimal failing case" in wrong and fmt(first.args[0]) in wrong  # inputs: public
    assert fmt(first.args[1] @ first.args[0]) not in wrong  # the reference output: never
    solution = (ROOT / "notebooks/exercises/solutions/02_mechanics_exercises_solutions.py")
    assert "keys @ query" in solution.read_text() and "keys @ query" not in wrong


def test_a_hidden_case_shows_its_inputs_only_with_the_students_own_seed():
    ex = EXERCISES["2.1"]
    assert any(c.hidden for c in cases_for(ex, SEED))
    assert not any(c.hidden for c in cases_for(ex, STUDENT_SEED))
    graded = evaluate(ex, wrong_on_random_cases, seed=SEED)
    assert graded.status == "fail" and "Minimal failing case" not in graded.message
    own = evaluate(ex, wrong_on_random_cases, seed=STUDENT_SEED)
    if own.status == "fail":  # check() in the notebook shows the student's own random case
        assert "Minimal failing case: random" in own.message


def test_feedback_is_the_same_for_the_same_grades(tmp_path, course):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = feedback.write_feedback(course, tmp_path / "a")
    b = feedback.write_feedback(course, tmp_path / "b")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)


# ------------------------------------------------------------------ the grade command refuses
def _class(tmp_path) -> Path:
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    shutil.copy(ROOT / "notebooks/exercises/02_mechanics_exercises.ipynb", subs / "alice")
    return subs


@pytest.mark.parametrize("setup,extra,fragment", [
    (lambda s, t: None, ["--assignment", "05_transformers"], "--assignment: unknown assignment "
                                                             "'05_transformers'"),
    (lambda s, t: None, ["--out", "{subs}/grades"], "is inside the submissions folder"),
    (lambda s, t: None, ["--late-penalty", "ten"], "expected a percentage per day"),
    (lambda s, t: None, ["--deadline", "friday"], "--deadline 'friday': not an ISO 8601"),
    (lambda s, t: None, ["--resume"], "--resume: there is no grading in"),
    (lambda s, t: (t / "w.csv").write_text("student,score\n"), ["--merge", "{tmp}/w.csv"],
     "--merge: w.csv has no column assignment"),
    (lambda s, t: None, ["--merge", "{tmp}/missing.csv"], "--merge: cannot read"),
])
def test_grade_refuses_bad_input_before_running_anything(tmp_path, capsys, setup, extra,
                                                         fragment):
    subs = _class(tmp_path)
    setup(subs, tmp_path)
    argv = [str(subs), "--out", str(tmp_path / "out"), "--quiet",
            *[a.format(tmp=tmp_path, subs=subs) for a in extra]]
    assert batch.main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()  # nothing written, not even the folder
    assert not (subs / "grades").exists()


def test_grade_will_not_overwrite_hand_scores_without_merging_them(tmp_path, capsys, course):
    out = tmp_path / "out"
    write_report(course, out)
    rows = read_csv(out / "written.csv")
    rows[0]["score"] = "2"
    write_rows(out / "written.csv", rows)
    before = (out / "written.csv").read_bytes()
    assert batch.main([str(_class(tmp_path)), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "holds 1 hand score(s)" in err and f"--merge {out / 'written.csv'}" in err
    assert (out / "written.csv").read_bytes() == before


def test_grades_json_reads_back_into_the_same_report(tmp_path, course):
    write_report(course, tmp_path)
    again = Report.from_dict(json.loads((tmp_path / "grades.json").read_text()))
    assert again.as_dict() == course.as_dict()


def test_the_summary_flags_what_needs_the_instructor(course):
    from attention_lab.grading.report import summary_table

    course.submissions[3].meta.update(student_source="file name")
    course.submissions[4].meta["student_note"] = "the notebook says it is from student 'x', " \
                                                 "its folder says 'bob'"
    text = summary_table(course)
    assert "WARNING: the assignment of 1 submission(s) is unknown" in text and "nobody/" in text
    assert "1 earlier submission(s) superseded" in text and "alice/old.ipynb" in text
    assert "1 submission(s) carry no student id" in text
    assert "WARNING: 1 notebook(s) claim another student than their folder" in text
    assert "alice / 02_mechanics" in text and "1 written to grade" in text


@pytest.mark.parametrize("main,options", [
    (batch.main, ["--assignment ID", "--merge WRITTEN_CSV", "--seed SEED", "<student>",
                  "--roster CSV", "--deadline WHEN", "--late-penalty P%/day", "--resume",
                  "--only ID"]),
    ("submit", ["--student ID"]),
    (merge.main, ["OUT_DIR", "WRITTEN_CSV"]),
    ("release", ["OUT_DIR", "never the solutions"]),
])
def test_every_new_option_has_help(main, options, capsys):
    from attention_lab.grading import release, submit

    main = {"submit": submit.main, "release": release.main}.get(main, main)
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in options:
        assert option in text, (option, text)


def test_the_course_warnings_name_each_kind_of_submission_to_look_at():
    """One line per kind, with the count and the files (five at most, then ...)."""
    from types import SimpleNamespace

    from attention_lab.grading.report import course_warnings

    def sub(file, status="graded", assignment="02", **meta):
        return SimpleNamespace(file=file, status=status, assignment=assignment, meta=meta)

    subs = [sub("empty", "no_notebook", None), sub("twin", near_duplicates=["x"]),
            sub("late", late=True, late_policy="flag"), sub("what", assignment=None),
            sub("named", student_source="file name"),
            sub("clash", student_note="its folder says bob"), sub("old", superseded_by="new")]
    subs += [sub(f"more{i}", "no_notebook", None) for i in range(5)]
    report = SimpleNamespace(submissions=subs, counted=lambda: subs)
    lines = course_warnings(report)
    assert len(lines) == 7
    assert lines[0].startswith("WARNING: 6 upload(s) hold no notebook") and lines[0].endswith(
        ": empty, more0, more1, more2, more3 ...")
    assert lines[2] == "note: 1 counted submission(s) are late (flag): late"
    assert [ln.rsplit(": ", 1)[1] for ln in lines[1:]] == ["twin", "late", "what", "named",
                                                             "clash", "old"]
    assert course_warnings(SimpleNamespace(submissions=[], counted=lambda: [])) == []


def test_a_student_id_with_a_trailing_space_is_merged_as_its_own(tmp_path, course):
    """``alice `` (a folder named with a trailing space) is another student than ``alice``
    (students.py never merges near-duplicates): her row of written.csv merges into her answer,
    and does not block the class's merge as a second row of alice's."""
    course.submissions.append(grade_of("alice ", "02_mechanics", {"2.3": SHIFT}))
    rows = read_csv(written.write_written_csv(course, tmp_path))
    assert [r["student"] for r in rows].count("alice ") == 1
    for r in rows:
        r["score"] = "2" if r["student"] == "alice " else "1"
    write_rows(tmp_path / "filled.csv", rows)
    written.apply(course, written.read(tmp_path / "filled.csv"))
    scores = {s.student: s.written for s in course.counted() if s.assignment == "02_mechanics"}
    assert scores["alice "] == 2 and scores["alice"] == 1


def test_grade_will_not_drop_merged_hand_scores_of_submissions_it_does_not_grade(
        tmp_path, capsys, course, monkeypatch):
    """The hand scores are merged (in grades.json); then a folder without bob's work (next
    week's download, graded without --only) is graded into the same OUT_DIR: nothing carries
    bob's score over, so grade stops, names it, and writes nothing; it stops before grading
    anything (an instructor of 300 students must not wait for the grading to hear it)."""
    monkeypatch.setattr(batch.Batch, "grade", lambda *a: pytest.fail("a submission was graded"))
    out = tmp_path / "out"
    write_report(course, out)
    rows = read_csv(out / "written.csv")
    for r in rows:
        r["score"] = "1"
    write_rows(out / "written.csv", rows)
    assert merge.main([str(out)]) == 0
    capsys.readouterr()
    before = (out / "grades.json").read_bytes()
    assert batch.main([str(_class(tmp_path)), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "hand score" in err and "bob" in err and "--only" in err and err.count("\n") == 1, err
    assert (out / "grades.json").read_bytes() == before


@pytest.mark.parametrize("status", ["no_notebook", "unreadable", "too_large", "pass", "fail",
                                    "error", "timeout", "not_attempted", "needs_instructor",
                                    "hand_graded"])
def test_every_exercise_status_reads_as_words_on_the_feedback_page(status):
    """A counted upload without a notebook (``--assignment``: the student is in the gradebook)
    gets a page whose exercises say so in words, not '? no_notebook'."""
    from attention_lab.grading import feedback

    g = grade_of("ana", "01_intuition", {})
    g.exercises = {i: ExerciseGrade(status, "", 0) for i in ("1.1", "1.2", "1.3", "1.4")}
    items = feedback.context(g)["exercises"]
    assert items and all(it["mark"] != "?" and "_" not in it["label"] for it in items)


def test_a_download_zip_given_as_the_folder_says_to_unzip_it(tmp_path, capsys):
    """An instructor hands grade the LMS's download as it came (submissions.zip): the answer
    was '... is a file, not a folder of submissions'; it now says it is a zip and how to unpack
    it, and still writes nothing."""
    import zipfile

    with zipfile.ZipFile(tmp_path / "submissions.zip", "w") as z:
        z.writestr("doejane_22222_3333301_02_mechanics_exercises.ipynb", "{}")
    argv = [str(tmp_path / "submissions.zip"), "--out", str(tmp_path / "out"), "--quiet"]
    assert batch.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a zip file" in err and "unzip" in err, err
    assert not (tmp_path / "out").exists()
