"""A class as an LMS hands it over: Moodle's and Canvas's download layouts, a roster, near-duplicate
ids, uploads that hold no notebook, due dates and late work, and the gradebook files each LMS
imports.

The folders are built here from each LMS's documented naming:

* Moodle, "Download all submissions" (with "Download submissions in folders"): a folder per
  student ``<Full name>_<participant id>_assignsubmission_file_/`` holding the uploaded files;
  without folders, flat files ``<Full name>_<participant id>_assignsubmission_file_<file>``;
* Canvas, "Download Submissions": flat files ``<sortable name>[_LATE]_<user id>_<attachment
  id>_<file>``, a file handed in again under the same name getting ``-1``, ``-2`` ...

Identities and times are checked without running a kernel (:func:`batch.collect` and
:func:`batch.identify`, the steps ``grade`` takes); one real grading checks that bad uploads get
their rows while the rest of the class is graded in the same run.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from attention_lab.grading import batch, gradebook, late, lms, roster, students
from attention_lab.grading.gradebook import canvas_table, moodle_table
from attention_lab.grading.outputs import write_report
from attention_lab.grading.report import Report, SubmissionGrade
from attention_lab.grading.runner import Limits

ROOT = Path(__file__).resolve().parents[2]
STUDENT_NB = ROOT / "notebooks" / "exercises" / "02_mechanics_exercises.ipynb"
DUE = dt.datetime(2026, 3, 1, 23, 59, tzinfo=dt.timezone.utc)


def notebook(student: str | None = None) -> bytes:
    nb = json.loads(STUDENT_NB.read_text())
    if student is not None:
        nb["metadata"]["attention_lab"]["student"] = student
    return json.dumps(nb).encode()


def put(path: Path, data: bytes, when: dt.datetime) -> Path:
    """A file as the LMS's zip extracts it: its bytes and the upload's time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


def scan(folder: Path, **options) -> dict[str, dict]:
    subs, _ = batch.collect(folder)
    batch.identify(subs, **options)
    return {s.rel: s for s in subs}


def write_roster(path: Path, rows: list[list[str]], delimiter: str = ",") -> Path:
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


@pytest.fixture
def moodle(tmp_path) -> Path:
    """Moodle's download, in folders: Jane stored her id with submit, Rob did not, Ana uploaded a
    zip; one flat file from a download without folders."""
    d = tmp_path / "moodle"
    on_time = DUE - dt.timedelta(hours=2)
    put(d / "Jane Doe_12345_assignsubmission_file_" / "02_mechanics_exercises.ipynb",
        notebook("jdoe"), on_time)
    put(d / "Rob Roe_12346_assignsubmission_file_" / "02_mechanics_exercises.ipynb",
        notebook(), DUE + dt.timedelta(hours=30))
    put(d / "Ana Lima_12347_assignsubmission_file_" / "homework.zip", b"PK\x03\x04", on_time)
    return d


@pytest.fixture
def canvas(tmp_path) -> Path:
    """Canvas's download: Jane handed in on time, then again late (the same file name: -1)."""
    d = tmp_path / "canvas"
    put(d / "doejane_22222_900001_02_mechanics_exercises.ipynb", notebook(),
        DUE - dt.timedelta(days=1))
    put(d / "doejane_LATE_22222_900002_02_mechanics_exercises-1.ipynb", notebook(),
        DUE + dt.timedelta(days=2, hours=1))
    put(d / "roerob_22223_900003_report.pdf", b"%PDF-1.4", DUE)
    return d


# ------------------------------------------------------------------ the names
def test_the_lms_naming_is_read_and_other_names_are_not():
    assert lms.parse("Jane Doe_12345_assignsubmission_file_/a.ipynb") == lms.LmsName(
        "Moodle", "12345", "Jane Doe")
    assert lms.parse("Participant_777_assignsubmission_file_/a.ipynb").lms_id == "777"
    assert lms.parse("Jane Doe_12345_assignsubmission_file_a.ipynb").lms_id == "12345"
    late_ = lms.parse("doejane_LATE_22222_900002_02_mechanics_exercises-1.ipynb")
    assert (late_.lms, late_.lms_id, late_.name, late_.late, late_.attempt, late_.attachment) == (
        "Canvas", "22222", "doejane", True, 1, 900002)
    assert lms.parse("doejane_22222_900001_hw.submission.json").late is False
    for plain in ("alice/hw.ipynb", "hw.ipynb", "alice_hw.ipynb", "bob_02_mechanics.ipynb"):
        assert lms.parse(plain) is None, plain


def test_moodle_folders_the_stored_id_wins_and_the_lms_id_is_kept(moodle):
    subs = scan(moodle)
    jane = subs["Jane Doe_12345_assignsubmission_file_/02_mechanics_exercises.ipynb"].meta
    assert (jane["student"], jane["student_source"], jane["lms_id"]) == (
        "jdoe", "notebook metadata", "12345")
    rob = subs["Rob Roe_12346_assignsubmission_file_/02_mechanics_exercises.ipynb"].meta
    assert (rob["student"], rob["student_source"]) == ("12346", "LMS id")
    assert "no --roster" in rob["student_note"]


def test_canvas_files_are_one_student_and_the_late_resubmission_counts(canvas):
    subs = scan(canvas)
    first = subs["doejane_22222_900001_02_mechanics_exercises.ipynb"].meta
    again = subs["doejane_LATE_22222_900002_02_mechanics_exercises-1.ipynb"].meta
    assert first["student"] == again["student"] == "22222"  # not two students
    assert first["superseded_by"] == "doejane_LATE_22222_900002_02_mechanics_exercises-1.ipynb"
    assert again["lms_late"] is True and again["late"] is True  # the LATE tag is kept
    assert again["late_by"] == "late (marked by the LMS)" and first["late"] is False


def test_a_stored_id_reaches_the_same_users_other_files_and_resubmissions_break_ties(tmp_path):
    d = tmp_path / "canvas"
    t = DUE - dt.timedelta(days=1)  # the same time for both: the resubmission number decides
    # attachment ids grow per upload (and sort as text the other way round than as numbers)
    put(d / "doejane_22222_1000001_02_mechanics_exercises-2.ipynb", notebook("jdoe"), t)
    put(d / "doejane_22222_999998_02_mechanics_exercises-1.ipynb", notebook(), t)
    put(d / "doejane_22222_999997_02_mechanics_exercises.ipynb", notebook(), t)
    subs = scan(d)
    assert {s.meta["student"] for s in subs.values()} == {"jdoe"}  # one student, her own id
    counts = [rel for rel, s in subs.items() if not s.meta.get("superseded_by")]
    assert counts == ["doejane_22222_1000001_02_mechanics_exercises-2.ipynb"]


def test_a_roster_maps_lms_ids_to_logins_and_flags_a_claim_of_someone_else(tmp_path, moodle,
                                                                           canvas):
    rows = [["lms_id", "login", "name"], ["12345", "jdoe", "Jane Doe"],
            ["12346", "rroe", "Rob Roe"], ["22222", "jdoe2", "Jane Doe"]]
    r = roster.read(write_roster(tmp_path / "roster.csv", rows, delimiter=";"))
    subs = scan(moodle, roster=r)
    rob = subs["Rob Roe_12346_assignsubmission_file_/02_mechanics_exercises.ipynb"].meta
    assert (rob["student"], rob["student_source"]) == ("rroe", "roster")
    zip_ = subs["Ana Lima_12347_assignsubmission_file_"].meta  # not in the roster: its LMS id
    assert zip_["student"] == "12347"
    # a plain folder of a login in the roster: the roster gives its LMS id and name (both ways)
    put(moodle / "rroe" / "extra.ipynb", notebook(), DUE)
    plain = scan(moodle, roster=r)["rroe/extra.ipynb"].meta
    assert (plain["student_source"], plain["lms_id"], plain["lms_name"]) == (
        "folder", "12346", "Rob Roe")
    # a notebook that claims another student than the LMS user who uploaded it
    put(canvas / "doejane_22222_900009_02_mechanics_exercises-2.ipynb", notebook("rroe"), DUE)
    claim = scan(canvas, roster=r)["doejane_22222_900009_02_mechanics_exercises-2.ipynb"].meta
    assert claim["student"] == "jdoe2" and "says it is from student 'rroe'" in \
        claim["student_note"]


@pytest.mark.parametrize("text,fragment", [
    ("login,name\njdoe,Jane\n", "has no column lms_id"),
    ("lms_id,login,name\n1,jdoe,Jane\n2,jdoe,Jane D\n", "row 3: login 'jdoe' is in row 2 too"),
    ("lms_id,login,name,due\n1,jdoe,Jane,soon\n", "row 2: due 'soon'"),
    ('lms_id,login,name\n1,jdoe,"Jane\n', "--roster: r.csv is not a readable CSV file"),
    ("", "--roster: r.csv is empty"),
])
def test_a_bad_roster_is_one_clear_line(tmp_path, text, fragment):
    (tmp_path / "r.csv").write_text(text)
    with pytest.raises(roster.RosterError, match=fragment):
        roster.read(tmp_path / "r.csv")


def test_a_roster_that_is_not_utf8_or_missing_is_named(tmp_path):
    (tmp_path / "r.csv").write_bytes(b"lms_id,login,name\n1,j\xf6rg,J\xf6rg\n")
    with pytest.raises(roster.RosterError, match="--roster: r.csv is not UTF-8 text"):
        roster.read(tmp_path / "r.csv")
    with pytest.raises(roster.RosterError, match="--roster: cannot read .*missing.csv"):
        roster.read(tmp_path / "missing.csv")


def test_near_duplicate_ids_are_flagged_and_never_merged(tmp_path):
    d = tmp_path / "subs"
    t = DUE - dt.timedelta(days=1)
    put(d / "alice" / "02_mechanics_exercises.ipynb", notebook(), t)
    put(d / "alice " / "02_mechanics_exercises.ipynb", notebook(), t + dt.timedelta(hours=1))
    put(d / "Alice" / "02_mechanics_exercises.ipynb", notebook(), t)
    put(d / "Jose\u0301" / "02_mechanics_exercises.ipynb", notebook(), t)  # decomposed é
    put(d / "Jos\u00e9" / "02_mechanics_exercises.ipynb", notebook(), t)  # composed é
    subs = scan(d)
    ids = {s.meta["student"] for s in subs.values()}
    assert ids == {"alice", "alice ", "Alice", "Jose\u0301", "Jos\u00e9"}  # five students
    assert not any(s.meta.get("superseded_by") for s in subs.values())  # nobody replaced
    assert subs["alice/02_mechanics_exercises.ipynb"].meta["near_duplicates"] == ["Alice",
                                                                                  "alice "]
    assert subs["Jos\u00e9/02_mechanics_exercises.ipynb"].meta["near_duplicates"] == [
        "Jose\u0301"]


def test_the_time_that_counts_is_the_lms_file_time_not_the_students_field(tmp_path):
    from attention_lab.grading import submit

    d = tmp_path / "subs"
    sub = json.loads(notebook("zoe"))
    body = {"format": "attention-lab-submission", "notebook": json.dumps(sub),
            "notebook_name": "02_mechanics_exercises.ipynb", "created": "2020-01-01T00:00:00",
            "results": {}, "package_version": "0"}
    assert hasattr(submit, "main")
    put(d / "zoe" / "early.submission.json", json.dumps(body).encode(), DUE + dt.timedelta(days=3))
    meta = scan(d, deadline=DUE)["zoe/early.submission.json"].meta
    assert meta["submitted"] == (DUE + dt.timedelta(days=3)).isoformat(timespec="seconds")
    assert meta["late_by"] == "3 days"


# ------------------------------------------------------------------ due dates
def test_deadline_extensions_and_the_late_policies(tmp_path, moodle):
    r = roster.read(write_roster(tmp_path / "r.csv", [
        ["lms_id", "login", "name", "due"], ["12346", "rroe", "Rob Roe", "2026-03-05"]]))
    policy = late.Policy.parse("10%/day", None)
    subs = scan(moodle, deadline=DUE, policy=policy)
    rob = subs["Rob Roe_12346_assignsubmission_file_/02_mechanics_exercises.ipynb"].meta
    assert (rob["late"], rob["late_days"], rob["late_by"], rob["late_kept"]) == (
        True, 2, "2 days", pytest.approx(0.8))
    jane = subs["Jane Doe_12345_assignsubmission_file_/02_mechanics_exercises.ipynb"].meta
    assert (jane["late"], jane["late_kept"]) == (False, 1.0)
    extended = scan(moodle, deadline=DUE, policy=policy, roster=r)[
        "Rob Roe_12346_assignsubmission_file_/02_mechanics_exercises.ipynb"].meta
    assert extended["late"] is False and extended["due_source"] == "roster (extension)"
    assert late.Policy.parse(None, "zero").kept(1) == 0.0
    assert late.Policy.parse(None, None).kept(9) == 1.0  # flag only
    assert late.Policy.parse("50%/day", None).kept(3) == 0.0  # never below zero


@pytest.mark.parametrize("penalty, said", [("2.5%/day", "2.5%"), ("0.5%/day", "0.5%"),
                                            ("12.5%/day", "12.5%"), ("10%/day", "10%")])
def test_the_late_policy_names_the_penalty_it_applies(penalty, said):
    """The rule a student reads on the feedback page is the rule applied (0.5%/day is not
    'loses 0%')."""
    policy = late.Policy.parse(penalty, None)
    assert policy.describe() == f"late work loses {said} of its points per day started"
    assert policy.kept(1) == pytest.approx(1 - float(said.rstrip("%")) / 100)


def test_the_late_policy_changes_the_points_and_the_feedback_says_so(tmp_path):
    from attention_lab.grading import feedback
    from attention_lab.grading.report import ExerciseGrade

    g = SubmissionGrade("a.ipynb", None, "graded", meta={
        "student": "rroe", "assignment": "01_intuition", "late": True, "late_by": "2 days",
        "late_kept": 0.8, "submitted": "2026-03-03T01:00:00+00:00",
        "due": "2026-03-01T23:59:00+00:00", "late_policy": late.Policy("per_day", 0.1).describe()})
    g.exercises = {i: ExerciseGrade("pass", "", 1) for i in ("1.1", "1.2", "1.3", "1.4")}
    assert (g.total, g.points) == (4, 3.2)
    page = feedback.render(g)
    assert "Handed in late: 2 days" in page and "loses 10% of its points per day" in page
    assert "<strong>3.2 of 4</strong>" in page


# ------------------------------------------------------------------ the gradebooks
def _report(grades) -> Report:
    return Report("/subs", grades, [], [], 1, Limits(), "2026-01-01T00:00:00+00:00", 1.0, 1)


def test_the_canvas_and_moodle_gradebooks_are_in_their_import_formats():
    from attention_lab.grading.report import ExerciseGrade

    a = SubmissionGrade("x", None, "graded", meta={"student": "jdoe", "assignment": "01_intuition",
                                                    "lms_id": "22222", "lms_name": "Jane Doe"})
    a.exercises = {i: ExerciseGrade("pass", "", 1) for i in ("1.1", "1.2", "1.3", "1.4")}
    b = SubmissionGrade("y", None, "graded", meta={"student": "rroe", "assignment": "01_intuition",
                                                    "late_kept": 0.5})
    b.exercises = {i: ExerciseGrade("pass" if i == "1.1" else "fail", "", 0)
                   for i in ("1.1", "1.2", "1.3", "1.4")}
    rows = canvas_table(_report([a, b]))
    # Canvas: Student, ID, SIS User ID, SIS Login ID, Section, then the assignments; the
    # "Points Possible" row right under the header, as Canvas's own export has it
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                       "Intuition (01_intuition)"]
    assert rows[1][0].strip() == "Points Possible" and rows[1][5] == 4
    assert rows[2] == ["Jane Doe", "22222", "", "jdoe", "", "4"]
    assert rows[3][3:] == ["rroe", "", "0.5"]  # after the late policy
    moodle_rows = moodle_table(_report([a, b]))
    # Moodle: a header, then only students (its import stops at a row it cannot map)
    assert moodle_rows[0] == ["Username", "Full name", "Intuition (01_intuition)"]
    assert [r[0] for r in moodle_rows[1:]] == ["jdoe", "rroe"]


# ------------------------------------------------------------------ bad uploads, graded
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the grader is Linux-only")
def test_uploads_without_a_notebook_get_rows_and_the_rest_is_graded(tmp_path, moodle, canvas,
                                                                    capsys):
    subs = tmp_path / "class"
    shutil.copytree(moodle, subs)
    for p in canvas.iterdir():
        shutil.copy2(p, subs / p.name)
    (subs / "carol").mkdir()
    (subs / "carol" / "essay.pdf").write_text("x")
    (subs / "dan").mkdir()
    out = tmp_path / "out"
    code = batch.main([str(subs), "--out", str(out), "--quiet", "--seed", "3", "--assignment",
                       "2", "--deadline", "2026-03-01T23:59Z", "--cell-timeout", "20"])
    assert code == 0
    text = capsys.readouterr().out
    rows = {r["file"]: r for r in csv.DictReader(open(out / "grades.csv", encoding="utf-8"))}
    empty = {f: r for f, r in rows.items() if r["status"] == "no_notebook"}
    assert set(empty) == {"Ana Lima_12347_assignsubmission_file_", "carol", "dan",
                          "roerob_22223_900003_report.pdf"}
    assert "homework.zip" in empty["Ana Lima_12347_assignsubmission_file_"]["message"]
    assert "essay.pdf" in empty["carol"]["message"] and "empty" in empty["dan"]["message"]
    assert (empty["carol"]["student"], empty["carol"]["student_from"],
            empty["carol"]["counts"]) == ("carol", "folder", "yes")
    graded = [r for r in rows.values() if r["status"] == "graded"]
    assert len(graded) == 4  # everyone else, in the same run
    assert "WARNING: 4 upload(s) hold no notebook" in text
    book = {r["student"]: r for r in csv.DictReader(open(out / "gradebook.csv"))}
    assert book["carol"]["02_mechanics total"] == "0"
    late_row = rows["doejane_LATE_22222_900002_02_mechanics_exercises-1.ipynb"]
    assert late_row["submitted_at"].startswith("2026-03-04")  # (Canvas: its mark counts, as
    assert late_row["late_by"] == "late (marked by the LMS)"  # its zip dates files by the zip)
    assert (out / "lms" / "canvas.csv").is_file() and (out / "lms" / "moodle.csv").is_file()
    report = json.loads((out / "grades.json").read_text())
    assert isinstance(report["submissions"][0]["written"], (int, float))
    assert len(report["grader"]["checks_sha256"]) == 64


def test_write_report_writes_the_lms_gradebooks_and_the_summary(tmp_path):
    from attention_lab.grading.report import ExerciseGrade

    a = SubmissionGrade("x", None, "graded", meta={"student": "jdoe", "assignment": "01_intuition"})
    a.exercises = {i: ExerciseGrade("pass", "", 1) for i in ("1.1", "1.2", "1.3", "1.4")}
    names = {p.name for p in write_report(_report([a]), tmp_path)}
    assert {"lms", "summary.html", "gradebook.csv", "feedback"} <= names
    assert students.near_key(" Alice  B ") == students.near_key("alice b")


def test_the_instructors_page_commands_are_ones_the_commands_accept():
    import re
    import shlex

    page = (ROOT / "docs" / "instructors" / "grading-a-class.md").read_text()
    block = re.search(r"```bash\n(.+?)\n```", page, re.S).group(1)
    lines = [shlex.split(ln)[3:] for ln in block.splitlines()]
    assert {ln[0] for ln in lines} == {"grade", "gradebook"}
    used = set()
    for name, *args in lines:
        parser = batch.build_parser() if name == "grade" else gradebook.build_parser()
        ns = parser.parse_args(args)  # raises SystemExit on an unknown option
        used |= {a for a in args if a.startswith("--")}
        if name == "grade":
            if ns.deadline:
                late.parse_time(ns.deadline)
            late.Policy.parse(ns.late_penalty, ns.late)
    assert {"--roster", "--deadline", "--late-penalty", "--late", "--resume", "--only",
            "--merge"} <= used


def test_grades_csv_shows_the_fraction_kept_that_was_applied(tmp_path):
    """``--late-penalty 2.5%/day``, one day late: 0.975 of the points are kept, and grades.csv
    says 0.975 (not 0.97, which does not give the points column's 5.85 of 6)."""
    from attention_lab.grading.report import ExerciseGrade, write_grades_csv

    g = SubmissionGrade("a.ipynb", None, "graded", meta={
        "student": "rroe", "assignment": "02_mechanics", "late": True, "late_by": "1 day",
        "late_kept": late.Policy.parse("2.5%/day", None).kept(1)})
    g.exercises = {i: ExerciseGrade("pass", "", 1) for i in ("2.1", "2.2", "2.4", "2.5", "2.6",
                                                                "2.7")}
    (row,) = csv.DictReader(io.StringIO(write_grades_csv(_report([g]), tmp_path).read_text()))
    assert (row["points_kept"], row["points"]) == ("0.975", "5.85")


def test_two_lms_users_handing_in_as_one_stored_id_are_flagged(tmp_path):
    """Without a roster the id stored in a notebook wins over the LMS's; when Canvas users
    22222 and 33333 both upload notebooks that say 'jdoe' (one copied the other's file), one
    supersedes the other: the rows say who uploaded what, so the instructor can see it."""
    from attention_lab.grading.report import flags

    d = tmp_path / "canvas"
    put(d / "doejane_22222_900001_02_mechanics_exercises.ipynb", notebook("jdoe"),
        DUE - dt.timedelta(days=1))
    put(d / "roerob_33333_900002_02_mechanics_exercises.ipynb", notebook("jdoe"),
        DUE - dt.timedelta(hours=1))
    subs = scan(d)
    for s in subs.values():
        text = flags(SubmissionGrade(s.rel, None, "graded", meta=s.meta))
        assert "jdoe" in text and "22222" in text and "33333" in text, s.meta


def test_an_upload_beside_the_students_notebook_gets_no_row(tmp_path, moodle, canvas):
    """Moodle's online-text folder of a student whose file folder holds the notebook, and a PDF a
    Canvas student uploaded with the notebook, are no missing notebook (no ``no_notebook`` row,
    no "ask the student" message); a student who uploaded only a PDF still gets one."""
    put(moodle / "Jane Doe_12345_assignsubmission_onlinetext_" / "onlinetext.html", b"<p>hi</p>",
        DUE)
    put(canvas / "doejane_22222_900004_notes.pdf", b"%PDF-1.4", DUE)
    for folder, extra, alone in ((moodle, "Jane Doe_12345_assignsubmission_onlinetext_",
                                  "Ana Lima_12347_assignsubmission_file_"),
                                 (canvas, "doejane_22222_900004_notes.pdf",
                                  "roerob_22223_900003_report.pdf")):
        empty = {rel for rel, s in scan(folder).items() if s.held is not None}
        assert extra not in empty and alone in empty
