"""Which assignment and which student a submission is, which one counts, and safe folder names.
No kernels: the functions the grader calls before it runs anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attention_lab.exercises import authoring
from attention_lab.exercises.registry import EXERCISES
from attention_lab.grading import assignments as A
from attention_lab.grading import batch, students, submit
from attention_lab.grading.submissions import Submission, peek

ROOT = Path(__file__).resolve().parents[2]
EXERCISE_NOTEBOOKS = sorted((ROOT / "notebooks" / "exercises").rglob("*_exercises*.ipynb"))


# ------------------------------------------------------------------ assignments
def test_four_assignments_with_their_own_checks_and_points():
    assert list(A.ASSIGNMENTS) == ["01_intuition", "02_mechanics", "03_maths_and_code",
                                   "04_research"]
    a2 = A.ASSIGNMENTS["02_mechanics"]
    assert [ex.id for ex in a2.exercises] == [f"2.{i}" for i in range(1, 8)]
    assert a2.auto_points == 6  # a full level-2 solution scores 6/6, not 6/19
    assert a2.written_points == len(EXERCISES["2.3"].rubric) == 4  # a point per rubric line
    assert sum(len(a.exercises) for a in A.ASSIGNMENTS.values()) == len(EXERCISES)
    assert A.ASSIGNMENTS["01_intuition"].written_points == 0


@pytest.mark.parametrize("text,expected", [("02_mechanics", "02_mechanics"), ("2", "02_mechanics"),
                                           ("02_mechanics_exercises", "02_mechanics"),
                                           (" 04_RESEARCH ", "04_research")])
def test_resolve_the_assignment_option(text, expected):
    assert A.resolve(text).id == expected


def test_an_unknown_assignment_option_lists_the_known_ones():
    with pytest.raises(A.UnknownAssignment, match="02_mechanics, 03_maths_and_code"):
        A.resolve("05_transformers")


@pytest.mark.parametrize("metadata,names,expected,source", [
    ({"attention_lab": {"assignment": "03_maths_and_code"}}, ["anything.ipynb"],
     "03_maths_and_code", "notebook metadata"),
    # metadata first: a renamed file still counts as what it says it is
    ({"attention_lab": {"assignment": "01_intuition"}}, ["02_mechanics_exercises.ipynb"],
     "01_intuition", "notebook metadata"),
    ({}, ["smithjohn_123_4567_02_mechanics_exercises-1.ipynb"], "02_mechanics", "file name"),
    ({}, ["Mechanics homework.ipynb"], "02_mechanics", "file name"),
    ({}, ["upload.submission.json", "04_research_exercises.ipynb"], "04_research", "file name"),
    ({"attention_lab": {"assignment": "99_bogus"}}, ["02_mechanics.ipynb"], "02_mechanics",
     "file name"),
    ({"attention_lab": ["not", "a", "dict"]}, ["homework.ipynb"], None, ""),
    ({}, ["01_intuition_and_02_mechanics.ipynb"], None, ""),
    ({}, ["mechanicsx.ipynb"], None, ""),
])
def test_detect_by_metadata_then_file_name(metadata, names, expected, source):
    found, src, note = A.detect(metadata, *names)
    assert (found.id if found else None, src) == (expected, source)
    if found is None:
        assert note  # the reason is reported
    if metadata.get("attention_lab") == {"assignment": "99_bogus"}:
        assert "99_bogus" in note


def test_every_exercise_notebook_carries_its_assignment_id():
    """In the .ipynb metadata and in the .py header, solutions and student versions alike."""
    assert len(EXERCISE_NOTEBOOKS) == 8
    for ipynb in EXERCISE_NOTEBOOKS:
        expected = ipynb.name.split("_exercises")[0]
        meta = json.loads(ipynb.read_text())["metadata"]
        assert meta["attention_lab"] == {"assignment": expected}, ipynb.name
        assert f"#     assignment: {expected}\n" in ipynb.with_suffix(".py").read_text()
        found, source, _ = A.detect(meta, "renamed.ipynb")
        assert (found.id, source) == (expected, "notebook metadata")


def test_the_assignment_id_survives_the_jupytext_round_trip(tmp_path):
    """With the project's jupytext.toml, writing the text file from the notebook (what JupyterLab
    does on save) keeps the id, and reading it back gives it to the notebook again."""
    shutil.copy(ROOT / "jupytext.toml", tmp_path)
    nb = json.loads((ROOT / "notebooks/exercises/02_mechanics_exercises.ipynb").read_text())
    nb["metadata"].pop("jupytext", None)
    nb["metadata"]["widgets"] = {"state": {}}  # other metadata stays out of the text file
    nb["cells"][1]["metadata"] = {"scrolled": True}
    (tmp_path / "hw.ipynb").write_text(json.dumps(nb))
    from jupytext.cli import jupytext as jupytext_cli

    jupytext_cli(["--to", "py:percent", "--quiet", str(tmp_path / "hw.ipynb")])  # finds the toml
    text = (tmp_path / "hw.py").read_text()
    assert text.startswith("# ---\n# jupyter:\n#   attention_lab:\n"
                           "#     assignment: 02_mechanics\n")
    assert "widgets" not in text and "scrolled" not in text
    import jupytext

    assert jupytext.read(tmp_path / "hw.py").metadata["attention_lab"] == {
        "assignment": "02_mechanics"}


def test_the_authoring_header_is_added_once_and_foreign_headers_are_refused():
    body = "# %%\nx = 1\n"
    once = authoring.with_header(body, "02_mechanics")
    assert authoring.with_header(once, "02_mechanics") == once
    assert authoring.with_header(once, "04_research").count("# ---") == 2
    with pytest.raises(authoring.MarkerError, match="did not write"):
        authoring.with_header("# ---\n# jupyter:\n#   kernelspec: {}\n# ---\n" + body, "x")
    assert authoring.assignment_of(Path("02_mechanics_exercises_solutions.py")) == "02_mechanics"


# ------------------------------------------------------------------ students
def test_student_id_sources_in_order_and_conflicts_noted():
    meta = {"attention_lab": {"student": "alice"}}
    assert students.identify("bob/02_mechanics_exercises.ipynb", meta)[:2] == ("bob", "folder")
    assert "'alice'" in students.identify("bob/hw.ipynb", meta)[2]  # the folder wins, noted
    assert students.identify("bob/x/hw.ipynb", {})[:2] == ("bob", "folder")
    assert students.identify("hw.ipynb", meta) == ("alice", "notebook metadata", "")
    sid, source, note = students.identify("carol_hw.submission.json", {})
    assert (sid, source) == ("carol_hw", "file name") and "file name is used" in note
    bad = {"attention_lab": {"student": "ev\nil"}}
    assert students.identify("dave.ipynb", bad)[:2] == ("dave", "file name")


@pytest.mark.parametrize("value,fragment", [("", "empty"), ("   ", "empty"), ("a\tb", "control"),
                                            ("x" * 201, "longer than 200")])
def test_unusable_student_ids_are_refused(value, fragment):
    with pytest.raises(ValueError, match=fragment):
        students.check_id(value)
    assert students.check_id("  José Núñez ") == "José Núñez"


HOSTILE = ["../../etc/passwd", "a/b", "a\\b", "..", ".", ".hidden", "José Núñez", "名前",
           "con", "NUL", "Alice", "alice", "a b", "a_b", "x" * 200, "C:\\Users", "~root",
           "$(rm -rf ~)", "<script>", "ﬁle", "e\u0301", "\u00e9", "-rf", "@@"]


def test_student_ids_never_reach_a_path_unsanitized(tmp_path):
    names = students.path_names(HOSTILE)
    assert set(names) == set(HOSTILE)
    folded = [n.casefold() for n in names.values()]
    assert len(set(folded)) == len(HOSTILE), "two students would share a folder"
    for sid, name in names.items():
        assert name and len(name) <= 80
        assert "/" not in name and "\\" not in name and "\0" not in name
        assert name not in (".", "..") and not name.startswith((".", "-"))
        assert name.split(".")[0].lower() not in {"con", "nul", "prn", "aux"}
        page = tmp_path / name / "02_mechanics.html"
        page.parent.mkdir()
        page.write_text(sid)
        assert page.resolve().parent.parent == tmp_path.resolve()
    assert names["alice"] != names["Alice"]  # a case-insensitive file system keeps both
    assert students.path_names(["bob"]) == {"bob": "bob"}  # a plain id is its own folder


def test_the_latest_submission_counts_and_the_others_are_listed():
    metas = [{"student": "a", "assignment": "02_mechanics", "submitted": t}
             for t in ("2026-01-02T10:00:00+00:00", "2026-01-03T09:00:00+00:00",
                       "2026-01-01T00:00:00+00:00", "2026-01-05T00:00:00+00:00")]
    metas.append({"student": "a", "assignment": "01_intuition", "submitted": "2026-01-01"})
    metas.append({"student": "b", "assignment": "02_mechanics", "submitted": "2026-01-09"})
    rels = ["a/1.ipynb", "a/2.ipynb", "a/3.ipynb", "a/broken.ipynb", "a/4.ipynb", "b/1.ipynb"]
    students.mark_superseded(metas, rels, [True, True, True, False, True, True])
    # the latest *readable* one counts: a broken upload never replaces a notebook
    assert metas[1]["replaces"] == ["a/broken.ipynb", "a/3.ipynb", "a/1.ipynb"]
    assert [m.get("superseded_by") for m in metas] == ["a/2.ipynb", None, "a/2.ipynb",
                                                       "a/2.ipynb", None, None]


def test_submission_time_is_the_files_never_the_field_the_student_wrote():
    assert students.submitted_at(86400) == ("1970-01-02T00:00:00+00:00",
                                            "file time (as the download set it)")


def test_identify_fills_meta_and_the_assignment_option_overrides(tmp_path):
    nb = json.loads((ROOT / "notebooks/exercises/01_intuition_exercises.ipynb").read_text())
    nb["metadata"]["attention_lab"]["student"] = "zoe"
    data = json.dumps(nb).encode()
    (tmp_path / "hw.ipynb").write_bytes(data)
    sub = Submission(tmp_path / "hw.ipynb", "hw.ipynb", data, "0" * 64)
    batch.identify([sub])
    assert sub.meta["assignment"] == "01_intuition" and sub.meta["student"] == "zoe"
    assert sub.meta["submitted_source"] == "file time (as the download set it)"
    assert [ex.id for ex in batch.exercises_of(sub)] == ["1.1", "1.2", "1.3", "1.4"]
    forced = Submission(tmp_path / "hw.ipynb", "hw.ipynb", data, "0" * 64)
    batch.identify([forced], "02_mechanics")
    assert forced.meta["assignment_source"] == "--assignment"
    assert "looks like 01_intuition" in forced.meta["assignment_note"]
    unknown = Submission(tmp_path / "x.ipynb", "x.ipynb", b"{}", "0" * 64)
    batch.identify([unknown])
    assert unknown.meta["assignment"] is None
    assert len(batch.exercises_of(unknown)) == len(EXERCISES)  # graded against every check


def test_peek_never_raises_on_hostile_bytes():
    for data in (None, b"", b"\xff\xfe", b"[1]", b'{"metadata": 3}', b"[" * 100000,
                 b'{"format": "attention-lab-submission", "notebook": "{"}'):
        assert peek("x.submission.json", data)["metadata"] == {}
        assert peek("x.ipynb", data)["notebook"] is False


# ------------------------------------------------------------------ submit --student
def test_submit_records_the_student_asking_once(tmp_path):
    text = (ROOT / "notebooks/exercises/02_mechanics_exercises.ipynb").read_text()
    nb = json.loads(text)
    assert submit.resolve_student("alice", nb["metadata"]) == ("alice", "--student")
    asked = []
    assert submit.resolve_student(None, nb["metadata"], lambda: asked.append(1) or "bob") == (
        "bob", "typed")
    stored = json.loads(submit.with_student(text, "bob"))
    assert stored["metadata"]["attention_lab"] == {"assignment": "02_mechanics",
                                                   "student": "bob"}
    assert stored["cells"] == nb["cells"]
    assert submit.resolve_student(None, stored["metadata"], lambda: asked.append(1)) == (
        "bob", "the notebook")
    assert asked == [1]  # the second time nothing is asked
    assert submit.resolve_student(None, nb["metadata"], None) == (None, "")
    assert submit.ask_student(lambda prompt: "  carol ") == "carol"
    assert submit.ask_student(lambda prompt: "") is None

    def interrupted(prompt):
        raise EOFError

    assert submit.ask_student(interrupted) is None
    with pytest.raises(ValueError):
        submit.resolve_student("bad\nid", nb["metadata"])


def test_submit_refuses_a_bad_student_id_before_running(tmp_path, capsys):
    shutil.copy(ROOT / "notebooks/exercises/01_intuition_exercises.ipynb", tmp_path / "hw.ipynb")
    before = (tmp_path / "hw.ipynb").read_bytes()
    assert submit.main([str(tmp_path / "hw.ipynb"), "--student", "   "]) == 2
    assert capsys.readouterr().err.strip() == "submit: error: --student: the student id is empty"
    assert (tmp_path / "hw.ipynb").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hw.ipynb"]


def test_a_replacement_resting_on_notebook_metadata_alone_is_flagged(tmp_path):
    """In a flat folder only a notebook's metadata says whose it is, and anyone can write any id
    there: mallory.ipynb saying "alice", handed in after alice.ipynb, replaced Alice's grade with
    only the "superseded" note as its trace. The row that counts and the summary now say so; two
    files of one student folder (the folder says whose they are) are not flagged."""
    from attention_lab.grading.report import Report, SubmissionGrade, course_warnings, flags
    from attention_lab.grading.runner import Limits

    nb = json.loads((ROOT / "notebooks/exercises/01_intuition_exercises.ipynb").read_text())
    nb["metadata"]["attention_lab"]["student"] = "alice"
    data = json.dumps(nb).encode()

    def graded(*rels):
        subs = [Submission(tmp_path / "x.ipynb", rel, data, "0" * 64, mtime=1000 + 100 * i)
                for i, rel in enumerate(rels)]
        batch.identify(subs)
        grades = [SubmissionGrade(s.rel, "0" * 64, "graded") for s in subs]
        for g, s in zip(grades, subs):
            g.meta = s.meta
        return grades, course_warnings(Report("/subs", grades, [], [], 1, Limits(),
                                              "2026-01-01T00:00:00+00:00", 1.0, 1))

    (alice, mallory), warnings = graded("alice.ipynb", "mallory.ipynb")
    assert alice.meta["superseded_by"] == "mallory.ipynb"
    assert ("replaces alice.ipynb on its notebook metadata alone (anyone can write any id "
            "there): check that both are alice's") in flags(mallory)
    assert any(w.startswith("WARNING: 1 submission(s) replace another on notebook metadata "
                            "alone") and w.endswith(": mallory.ipynb") for w in warnings)
    (first, later), warnings = graded("alice/a.ipynb", "alice/b.ipynb")
    assert first.meta["superseded_by"] == "alice/b.ipynb" and flags(later) == ""
    assert not any("metadata alone" in w for w in warnings)


def test_a_student_who_hands_in_many_files_holds_up_no_one(tmp_path):
    """Each file of a batch may take up to --timeout, and every superseded file was run: one
    student handing in hundreds of copies of an assignment (Canvas takes any number of
    attachments) held the class's grades up for hours. Besides the file that counts, only the
    latest earlier ones (batch.EARLIER_GRADED) are graded; the counting row lists the others,
    and the summary warns."""
    import os

    import nbformat

    from attention_lab.grading.report import course_warnings

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("def dot_scores(query, keys):\n    return keys @ query")]
    names = [f"mallory/02_mechanics_exercises_{i:02d}.ipynb" for i in range(12)]
    for i, name in enumerate([*names, "alice/02_mechanics_exercises.ipynb"]):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        nbformat.write(nb, str(tmp_path / name))
        os.utime(tmp_path / name, (1_000_000 + i, 1_000_000 + i))
    report = batch.grade_folder(tmp_path, jobs=1, progress=False, seed=1)
    rows = {g.file: g for g in report.submissions}
    earlier = names[-1 - batch.EARLIER_GRADED:-1]
    assert sorted(rows) == sorted([*earlier, names[-1], "alice/02_mechanics_exercises.ipynb"])
    assert all(rows[n].meta["superseded_by"] == names[-1] for n in earlier)
    assert rows[names[-1]].meta["not_graded"] == names[:-1 - batch.EARLIER_GRADED]
    assert any(w.startswith("WARNING: 1 submission(s) replace more earlier files than are "
                            "graded") and w.endswith(names[-1]) for w in course_warnings(report))


def test_one_lms_user_claiming_many_students_holds_up_no_one(tmp_path):
    """In an LMS download a notebook's stored student id wins over the LMS's, so one Canvas user
    whose many files each claimed another id was many students, every file graded. Each LMS
    user's files of an assignment are bounded like one student's: the latest are graded, the
    user's latest row lists the others."""
    import nbformat

    names = []
    for i in range(8):
        nb = nbformat.v4.new_notebook(metadata={"attention_lab": {"student": f"s{i:02d}"}})
        nb.cells = [nbformat.v4.new_code_cell("def dot_scores(query, keys):\n"
                                              "    return keys @ query")]
        names.append(f"mallory_42_{1000 + i}_02_mechanics_exercises.ipynb")
        nbformat.write(nb, str(tmp_path / names[-1]))
    report = batch.grade_folder(tmp_path, jobs=1, progress=False, seed=1)
    rows = {g.file: g for g in report.submissions}
    assert sorted(rows) == names[-1 - batch.EARLIER_GRADED:]
    assert rows[names[-1]].meta["not_graded"] == names[:-1 - batch.EARLIER_GRADED]
