"""LMS downloads as current LMS versions and real classes make them: Moodle 4.1+ folder names,
Canvas names of students with accented names, a zip re-packed on a Mac (``__MACOSX``).

The names follow each LMS's own code: Moodle's ``mod_assign\\downloader`` (4.1+) names a
student's folder ``clean_filename(prefix . '_' . subtype . '_' . type)``, without the trailing
``_`` of Moodle 3.x; Canvas's ``ContentZipper`` keeps Unicode word characters of the sortable
name (``[[:word:]]``), so ``Müller, José`` gives ``müllerjosé``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from attention_lab.grading import batch, lms, roster

ROOT = Path(__file__).resolve().parents[2]
STUDENT_NB = ROOT / "notebooks" / "exercises" / "02_mechanics_exercises.ipynb"
DUE = dt.datetime(2026, 3, 1, 23, 59, tzinfo=dt.timezone.utc)


def notebook() -> bytes:
    return json.dumps(json.loads(STUDENT_NB.read_text())).encode()


def put(path: Path, data: bytes, when: dt.datetime) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


def scan(folder: Path, **options) -> dict:
    subs, _ = batch.collect(folder)
    batch.identify(subs, **options)
    return {s.rel: s for s in subs}


def test_moodle_4_folders_without_the_trailing_underscore_are_moodle_folders(tmp_path):
    assert lms.parse("Jane Doe_12345_assignsubmission_file/a.ipynb") == lms.LmsName(
        "Moodle", "12345", "Jane Doe")
    assert lms.moodle_folder("Participant_777_assignsubmission_file").lms_id == "777"
    d = tmp_path / "moodle"
    put(d / "Jane Doe_12345_assignsubmission_file" / "02_mechanics_exercises.ipynb", notebook(),
        DUE)
    put(d / "Rob Roe_12346_assignsubmission_file" / "homework.zip", b"PK\x03\x04", DUE)
    (tmp_path / "r.csv").write_text("lms_id,login,name\n12345,jdoe,Jane Doe\n12346,rroe,Rob\n")
    subs = scan(d, roster=roster.read(tmp_path / "r.csv"))
    jane = subs["Jane Doe_12345_assignsubmission_file/02_mechanics_exercises.ipynb"].meta
    assert (jane["student"], jane["student_source"], jane["lms_id"]) == ("jdoe", "roster",
                                                                         "12345")
    rob = subs["Rob Roe_12346_assignsubmission_file"].meta  # no notebook: still Rob's row
    assert (rob["student"], rob["student_source"]) == ("rroe", "roster")


def test_canvas_names_of_students_with_accents_are_canvas_names(tmp_path):
    got = lms.parse("müllerjosé_LATE_22222_900002_02_mechanics_exercises-1.ipynb")
    assert (got.lms, got.lms_id, got.name, got.late, got.attempt) == (
        "Canvas", "22222", "müllerjosé", True, 1)
    nfd = "mu\u0308llerjose\u0301_22222_900001_02_mechanics_exercises.ipynb"  # a Mac's unzip
    assert lms.parse(nfd).lms_id == "22222"
    d = tmp_path / "canvas"
    put(d / "müllerjosé_22222_900001_02_mechanics_exercises.ipynb", notebook(),
        DUE - dt.timedelta(days=1))
    put(d / "müllerjosé_LATE_22222_900002_02_mechanics_exercises-1.ipynb", notebook(),
        DUE + dt.timedelta(days=1))
    subs = scan(d)
    assert {s.meta["student"] for s in subs.values()} == {"22222"}  # one student, not two
    assert [rel for rel, s in subs.items() if not s.meta.get("superseded_by")] == [
        "müllerjosé_LATE_22222_900002_02_mechanics_exercises-1.ipynb"]


def test_a_zip_packed_on_a_mac_gives_no_student_named_macosx(tmp_path):
    d = tmp_path / "subs"
    put(d / "alice" / "02_mechanics_exercises.ipynb", notebook(), DUE)
    put(d / "__MACOSX" / "alice" / "._02_mechanics_exercises.ipynb", b"\x00\x05\x16\x07", DUE)
    subs = scan(d)
    assert list(subs) == ["alice/02_mechanics_exercises.ipynb"]


def _graded(out: Path) -> Path:
    from attention_lab.grading.outputs import write_report
    from attention_lab.grading.report import ExerciseGrade, Report, SubmissionGrade
    from attention_lab.grading.runner import Limits

    a = SubmissionGrade("x", None, "graded", meta={"student": "jdoe", "assignment": "01_intuition"})
    a.exercises = {i: ExerciseGrade("pass", "", 1) for i in ("1.1", "1.2", "1.3", "1.4")}
    write_report(Report("/subs", [a], [], [], 1, Limits(), "2026-01-01T00:00:00+00:00", 1.0, 1),
                 out)
    return out


def test_an_output_that_cannot_be_written_is_one_clear_line(tmp_path, monkeypatch, capsys):
    """An OUT_DIR the instructor may not write to (another user's, a read-only share), or a
    full disk: merge and gradebook say so in one line, exit code 2, no traceback."""
    from attention_lab.grading import gradebook, merge, outputs

    out = _graded(tmp_path / "week2")

    def refused(*args, dir=None, **kw):
        raise PermissionError(13, "Permission denied", str(dir))

    monkeypatch.setattr(outputs.tempfile, "mkdtemp", refused)
    assert merge.main([str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "merge: error: cannot write" in err, err
    assert "Permission denied" in err and str(out) in err

    def refused_csv(path, rows):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(gradebook, "write_csv", refused_csv)
    assert gradebook.main([str(out), "--out", str(tmp_path / "term")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gradebook: error: cannot write" in err, err
    assert str(tmp_path / "term" / "gradebook.csv") in err


def test_canvas_gradebook_export_and_moodle_worksheet_ids_work_as_the_roster(tmp_path):
    """The class list an instructor has at hand is the LMS's own export: Canvas's gradebook
    export (a byte-order mark, ``Student`` is the name, ``SIS Login ID`` the login, a
    ``Points Possible`` row and a ``Manual Posting`` row under the header), or ids copied from
    Moodle's grading worksheet (``Participant 12345``)."""
    (tmp_path / "canvas.csv").write_text(
        '\ufeff"Student","ID","SIS User ID","SIS Login ID","Section","Week 2 (901)",'
        '"Current Points"\n'
        ',,,,,"Manual Posting",\n'
        '"    Points Possible",,,,,"6.00","(read only)"\n'
        '"Müller, José",22222,S1,jmuller,"Sec 1",,\n'
        '"O\'Brien, Seán",22223,S2,sobrien,"Sec 1",5,5\n', encoding="utf-8")
    r = roster.read(tmp_path / "canvas.csv")
    assert [(s.lms_id, s.login, s.name) for s in r.students] == [
        ("22222", "jmuller", "Müller, José"), ("22223", "sobrien", "O'Brien, Seán")]
    (tmp_path / "moodle.csv").write_text("lms_id,login,name\nParticipant 12345,jdoe,Jane Doe\n")
    assert roster.read(tmp_path / "moodle.csv").by_lms_id["12345"].login == "jdoe"


def test_a_download_unpacked_into_a_folder_of_its_own_keeps_its_students(tmp_path):
    """A Mac's Archive Utility unpacks ``submissions.zip`` into ``submissions/``: graded from
    the folder above, the class was one student named ``submissions`` (the latest file
    counting, everyone else superseded)."""
    d = tmp_path / "week2"
    put(d / "submissions" / "doejane_22222_900001_02_mechanics_exercises.ipynb", notebook(),
        DUE - dt.timedelta(days=1))
    put(d / "submissions" / "roerob_22223_900002_02_mechanics_exercises.ipynb", notebook(),
        DUE - dt.timedelta(hours=1))
    put(d / "moodle" / "Ana Lima_12347_assignsubmission_file_" / "02_mechanics_exercises.ipynb",
        notebook(), DUE)
    subs = scan(d)
    assert sorted(s.meta["student"] for s in subs.values()) == ["12347", "22222", "22223"]
    assert not any(s.meta.get("superseded_by") for s in subs.values())
    for plain in ("alice/02_mechanics_exercises.ipynb", "alice/hw_2_3_final.ipynb"):
        assert lms.parse(plain) is None, plain  # a plain folder stays its student's


def test_canvas_anonymous_grading_names_are_canvas_names(tmp_path):
    """With anonymous grading Canvas writes ``anon_<anonymous id>`` (5 base58 characters) for
    the name and user id: a student's file and its LATE resubmission are one student."""
    got = lms.parse("LATE_anon_Ab3xY_900002_02_mechanics_exercises-1.ipynb")
    assert (got.lms, got.lms_id, got.late, got.attempt, got.attachment) == (
        "Canvas", "anon_Ab3xY", True, 1, 900002)
    d = tmp_path / "canvas"
    put(d / "anon_Ab3xY_900001_02_mechanics_exercises.ipynb", notebook(), DUE)
    put(d / "LATE_anon_Ab3xY_900002_02_mechanics_exercises-1.ipynb", notebook(),
        DUE + dt.timedelta(days=1))
    put(d / "anon_Qw9Zk_900003_02_mechanics_exercises.ipynb", notebook(), DUE)
    subs = scan(d)
    assert sorted({s.meta["student"] for s in subs.values()}) == ["anon_Ab3xY", "anon_Qw9Zk"]
    assert subs["anon_Ab3xY_900001_02_mechanics_exercises.ipynb"].meta["superseded_by"] == \
        "LATE_anon_Ab3xY_900002_02_mechanics_exercises-1.ipynb"


def test_an_upload_without_a_notebook_is_dated_by_its_files_not_by_the_unzip(tmp_path):
    """A zip holds its files' times, not always its folders' (Moodle's has no folder entries):
    the folder of an upload without a notebook is as new as the unzip. Its row is dated by the
    newest file it holds, so it is not "278 days late"."""
    d = tmp_path / "moodle"
    put(d / "Ana Lima_12347_assignsubmission_file" / "hw.zip", b"PK\x03\x04",
        DUE - dt.timedelta(hours=3))
    put(d / "Ana Lima_12347_assignsubmission_file" / "notes.pdf", b"%PDF",
        DUE - dt.timedelta(hours=2))
    (ana,) = scan(d, deadline=DUE).values()
    assert ana.meta["submitted"] == (DUE - dt.timedelta(hours=2)).isoformat(timespec="seconds")
    assert ana.meta["late"] is False


def test_canvas_lateness_is_canvas_mark_not_the_time_its_zip_was_made(tmp_path):
    """Canvas writes its zip with rubyzip and gives no entry a time (ContentZipper#
    add_attachment_to_zip), so every file carries the time the zip was made, not the upload's.
    Downloaded a day after the deadline, every file was late; with ``--late zero`` the whole
    class scored 0. Canvas's own ``_LATE`` mark (its due dates, extensions included) decides."""
    from attention_lab.grading import late

    d = tmp_path / "canvas"
    made = DUE + dt.timedelta(days=1, hours=2)  # the download
    put(d / "doejane_22222_900001_02_mechanics_exercises.ipynb", notebook(), made)
    put(d / "roerob_LATE_22223_900002_02_mechanics_exercises.ipynb", notebook(), made)
    subs = scan(d, deadline=DUE, policy=late.Policy.parse(None, "zero"))
    jane = subs["doejane_22222_900001_02_mechanics_exercises.ipynb"].meta
    rob = subs["roerob_LATE_22223_900002_02_mechanics_exercises.ipynb"].meta
    assert (jane["late"], jane["late_kept"]) == (False, 1.0)
    assert (rob["late"], rob["late_by"], rob["late_kept"]) == (True, "late (marked by the LMS)",
                                                               0.0)


def test_a_canvas_export_without_sis_logins_files_grades_under_canvas_user_ids(tmp_path):
    """A Canvas without an SIS (or its Test Student) exports rows with an empty SIS Login ID:
    the roster stopped at the first ('row 2: no login'); such a student is filed under the
    Canvas user id, as a download without a roster files them, and Canvas's import matches
    that ID."""
    (tmp_path / "canvas.csv").write_text(
        'Student,ID,SIS User ID,SIS Login ID,Section\n'
        '    Points Possible,,,,\n'
        '"Doe, Jane",22222,,,Sec 1\n'
        '"Student, Test",99999,,,Sec 1\n', encoding="utf-8")
    r = roster.read(tmp_path / "canvas.csv")
    assert [(s.lms_id, s.login) for s in r.students] == [("22222", "22222"), ("99999", "99999")]
    (tmp_path / "bad.csv").write_text("lms_id,login,name\n,,Jane Doe\n")
    with __import__("pytest").raises(roster.RosterError, match="row 2: no login"):
        roster.read(tmp_path / "bad.csv")


def test_moodle_grading_worksheet_is_a_roster_as_downloaded(tmp_path):
    """Moodle's *Download grading worksheet* is the one Moodle export that carries the
    participant ids of its download's names: ``Identifier`` ("Participant 12345"), ``Full
    name`` and the site's identity fields (``Email address`` by default). It was refused ('has
    no column lms_id, login'); it reads as it is now, the e-mail address as the login."""
    (tmp_path / "worksheet.csv").write_text(
        '\ufeffIdentifier,"Full name","Email address",Status,Grade,"Maximum Grade",'
        '"Grade can be changed","Last modified (submission)","File submissions",'
        '"Last modified (grade)","Feedback comments"\n'
        '"Participant 12345","Jane Doe",jdoe@uni.example,"Submitted for grading",,100.00,Yes,'
        '"Sunday, 1 March 2026, 10:00 PM",02_mechanics_exercises.ipynb,-,\n', encoding="utf-8")
    r = roster.read(tmp_path / "worksheet.csv")
    assert [(s.lms_id, s.login, s.name) for s in r.students] == [
        ("12345", "jdoe@uni.example", "Jane Doe")]
    d = tmp_path / "moodle"
    put(d / "Jane Doe_12345_assignsubmission_file" / "02_mechanics_exercises.ipynb", notebook(),
        DUE)
    (jane,) = scan(d, roster=r).values()
    assert (jane.meta["student"], jane.meta["student_source"]) == ("jdoe@uni.example", "roster")
    # with the site's username shown too, the username is the login
    (tmp_path / "w2.csv").write_text('Identifier,Full name,Username,Email address\n'
                                     'Participant 12345,Jane Doe,jdoe,jdoe@uni.example\n')
    assert roster.read(tmp_path / "w2.csv").by_lms_id["12345"].login == "jdoe"


def test_an_lms_user_missing_from_the_roster_is_warned_about(tmp_path, capsys):
    """Graded with --roster, an upload of an LMS user the roster lacks (a late enrolment, a
    roster exported before the last students joined) was filed under the LMS id, or the id
    its notebook stores, without a word: its row reached lms/moodle.csv as participant id
    12349, which Moodle's import cannot map (it stops the whole import there). The summary
    warns now and the row's flags say why."""
    import csv

    d = tmp_path / "moodle"
    put(d / "Jane Doe_12345_assignsubmission_file" / "02_mechanics_exercises.ipynb", notebook(),
        DUE)
    put(d / "Tom Vu_12349_assignsubmission_file" / "02_mechanics_exercises.ipynb", notebook(),
        DUE)
    (tmp_path / "r.csv").write_text("lms_id,login,name\n12345,jdoe,Jane Doe\n")
    out = tmp_path / "out"
    assert batch.main([str(d), "--out", str(out), "--roster", str(tmp_path / "r.csv"),
                       "--quiet", "--seed", "1"]) == 0
    said = capsys.readouterr().out
    warning = [line for line in said.splitlines() if "not in the roster" in line]
    assert len(warning) == 1 and warning[0].startswith("WARNING: 1 ") and "Tom Vu_12349" in \
        warning[0], said
    with open(out / "grades.csv", newline="", encoding="utf-8") as fh:
        flags = {r["student"]: r["flags"] for r in csv.DictReader(fh)}
    assert "not in the roster" in flags["12349"] and flags["jdoe"] == "", flags
