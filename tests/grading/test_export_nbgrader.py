"""``release --for nbgrader``, run through the real nbgrader (0.9.6) in a temporary course: the
guide's commands as written (``docs/instructors/routes.md``), a filled-in submission (answers
from the solutions) and a wrong one through ``autograde``, ``generate_feedback`` and ``export``;
the scores compared with the lab's own grader on the same notebooks."""

from __future__ import annotations

import copy
import csv
import html
import json
import subprocess
from pathlib import Path

import pytest

import _routes
from test_course_release import answer_lines

from attention_lab.exercises import EXERCISES, check
from attention_lab.exercises.registry import ASSIGNMENT_IDS, NOTEBOOKS
from attention_lab.grading import release
from attention_lab.grading.assignments import ASSIGNMENTS
from attention_lab.grading.export import nbgrader as export

pytest.importorskip("nbgrader")

ASSIGNMENT = "02_mechanics"
NOTEBOOK = NOTEBOOKS[2]
#: the wrong student's mistakes: the scaled score (not the chapter's) and an off-by-one mask
WRONG = {"answer_2_1": ("return keys @ query", "return keys @ query / np.sqrt(len(query))"),
         "answer_2_5": ("np.arange(S)[None, :] < ", "np.arange(S)[None, :] <= ")}


def _cell(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"] if c["metadata"]["nbgrader"]["grade_id"] == grade_id)


def _kernel_dies(nb: dict) -> dict:
    _cell(nb, "answer_2_1")["source"] = "import os\nos._exit(1)"
    return nb


def _test_cell_renamed(nb: dict) -> dict:
    cell = _cell(nb, "check_2_1")
    cell["metadata"]["nbgrader"]["grade_id"], cell["source"] = "mine", "pass"
    return nb


#: submissions nbgrader's autograde stops on, which the lab's grader grades
NOT_AUTOGRADED = {"carol": _kernel_dies, "dave": _test_cell_renamed}


def cell_text(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])


def filled_in(student_nb: dict, source_nb: dict, wrong: bool) -> dict:
    """A student's copy: the released notebook with each solution cell's answer written in
    (taken from the source notebook, as a student who solved it would type it)."""
    answers = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"])
               for c in source_nb["cells"] if c["metadata"]["nbgrader"]["solution"]}
    nb = copy.deepcopy(student_nb)
    for cell in nb["cells"]:
        gid = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid]
            if wrong and gid in WRONG:
                old, new = WRONG[gid]
                assert old in cell["source"]
                cell["source"] = cell["source"].replace(old, new)
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The guide's nbgrader route in a temporary folder, with two submissions collected."""
    work = tmp_path_factory.mktemp("nbgrader")
    _routes.run("route-nbgrader-release", work)
    course = work / "course"
    source = json.loads((course / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_text())
    student = json.loads((course / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_text())
    for name, wrong in (("alice", False), ("bob", True)):
        folder = course / "submitted" / name / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{NOTEBOOK}.ipynb").write_text(json.dumps(filled_in(student, source, wrong)))
    _routes.run("route-nbgrader-grade", work)
    # two students nbgrader does not autograde (the guide says why), graded after the others
    for name, edit in NOT_AUTOGRADED.items():
        folder = course / "submitted" / name / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{NOTEBOOK}.ipynb").write_text(json.dumps(edit(filled_in(student, source,
                                                                            False))))
        subprocess.run(["nbgrader", "autograde", ASSIGNMENT, "--student", name], cwd=course,
                       capture_output=True, env=_routes.env(), timeout=300)
    _routes.run("route-nbgrader-check", work)
    return course, json.loads((course / "lab-grades" / "grades.json").read_text())


def test_the_student_versions_hold_no_solution_and_the_source_does(course):
    course, _ = course
    answers = answer_lines()
    for level, stem in NOTEBOOKS.items():
        a = ASSIGNMENT_IDS[level]
        released = cell_text(course / "release" / a / f"{stem}.ipynb")
        lines = {ln.strip() for ln in released.splitlines()}
        assert not answers & lines, f"{a}: solution lines in the student version"
        assert not release.leaks(course / "release" / a, release.answer_blocks())
        assert "BEGIN SOLUTION" not in released and "MARK SCHEME" not in released
        for ex in ASSIGNMENTS[a].exercises:
            for line in ex.rubric:
                assert line not in released, f"{ex.id}'s rubric is in the student version"
        # the same detectors find the solutions where they belong: the instructor's source
        src = cell_text(course / "source" / a / f"{stem}.ipynb")
        assert answers & {ln.strip() for ln in src.splitlines()}
        assert all(line in src for ex in ASSIGNMENTS[a].exercises for line in ex.rubric)


def test_every_check_is_an_autograded_test_cell_and_every_written_answer_a_task(course):
    course, _ = course
    for level, stem in NOTEBOOKS.items():
        nb = json.loads((course / "release" / ASSIGNMENT_IDS[level] / f"{stem}.ipynb").read_text())
        meta = {c["metadata"]["nbgrader"]["grade_id"]: (c, c["metadata"]["nbgrader"])
                for c in nb["cells"]}
        assert all(m["locked"] or m["solution"] for _, m in meta.values())
        for ex in ASSIGNMENTS[ASSIGNMENT_IDS[level]].exercises:
            if ex.auto:
                cell, m = meta[export.grade_id("check", ex.id)]
                assert m["grade"] and m["locked"] and m["points"] == ex.points
                assert "".join(cell["source"]).endswith("strict=True)")
            else:
                cell, m = meta[export.grade_id("written", ex.id)]
                assert m["task"] and m["points"] == len(ex.rubric)


def test_autograde_gives_the_scores_of_the_labs_grader(course):
    from nbgrader.api import Gradebook

    course, lab = course
    lab_scores = {s["meta"]["student"]: s["exercises"] for s in lab["submissions"]}
    auto = [ex for ex in ASSIGNMENTS[ASSIGNMENT].exercises if ex.auto]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention-lab") as gb:
        for student in ("alice", "bob"):
            ours = {ex.id: gb.find_grade(export.grade_id("check", ex.id), NOTEBOOK, ASSIGNMENT,
                                         student).score for ex in auto}
            theirs = {ex.id: lab_scores[student][ex.id]["score"] for ex in auto}
            assert ours == theirs, student
    assert set(ours) == {ex.id for ex in auto}
    assert [i for i, s in ours.items() if s == 0] == ["2.1", "2.5"]  # bob's two mistakes
    assert all(s == 1 for s in {ex.id: lab_scores["alice"][ex.id]["score"] for ex in auto}.values())


def test_the_feedback_shows_the_checks_message_for_a_wrong_answer(course):
    course, _ = course
    page = (course / "feedback" / "bob" / ASSIGNMENT / f"{NOTEBOOK}.html").read_text()
    namespace: dict = {}
    exec("import numpy as np\n" + "def dot_scores(query, keys):\n    " + WRONG["answer_2_1"][1],
         namespace)
    expected = check("2.1", namespace["dot_scores"], show=False)
    assert expected.status == "fail"
    for line in expected.message.splitlines()[:2]:
        assert html.escape(line.strip(), quote=False) in page, line
    good = (course / "feedback" / "alice" / ASSIGNMENT / f"{NOTEBOOK}.html").read_text()
    assert "CheckFailed" in page and "CheckFailed" not in good
    # formgrader's copy (the autograded notebook) holds the rubric for the grader
    graded = cell_text(course / "autograded" / "bob" / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    assert all(line in graded for line in EXERCISES["2.3"].rubric)


def test_export_writes_the_csv_with_automatic_and_written_points(course):
    course, _ = course
    rows = {r["student_id"]: r for r in csv.DictReader((course / "grades.csv").open())
            if r["assignment"] == ASSIGNMENT}
    a = ASSIGNMENTS[ASSIGNMENT]
    assert float(rows["alice"]["score"]) == a.auto_points  # written answers: not graded yet
    assert float(rows["bob"]["score"]) == a.auto_points - 2
    assert float(rows["alice"]["max_score"]) == a.points


def test_an_existing_assignment_is_never_overwritten(course, capsys):
    course, _ = course
    before = (course / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_bytes()
    assert release.main(["--for", "nbgrader", str(course)]) == 2
    assert "exists already" in capsys.readouterr().err
    assert (course / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_bytes() == before


def test_solution_regions_keep_the_template_outside_and_the_code_inside():
    text = ("def f(x):\n    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION\n"
            "# BEGIN SOLUTION\n#> y = ...  # a number\ny = 3\n# END SOLUTION")
    assert export.solution_regions(text) == (
        "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
        "y = ...  # a number\n### BEGIN SOLUTION\ny = 3\n### END SOLUTION")


def test_a_courses_own_config_is_left_alone(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    written = export.write_course(tmp_path)
    assert (tmp_path / "nbgrader_config.py").read_text() == "c = get_config()\n"
    assert sorted(p.parent.name for p in written) == sorted(ASSIGNMENT_IDS.values())


def test_where_nbgrader_and_the_labs_grader_disagree_the_guide_says_so(course):
    """A dead kernel or a test cell whose grade_id the student edited stops nbgrader's
    autograde on that notebook: 0 points and no feedback, where the lab's grader grades the
    answers. The guide names both cases and the command that grades the class with the lab's
    grader beside it."""
    from nbgrader.api import Gradebook

    course, lab = course
    labs = {s["meta"]["student"]: sum(e["score"] or 0 for e in s["exercises"].values())
            for s in lab["submissions"]}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention-lab") as gb:
        theirs = {name: gb.find_submission(ASSIGNMENT, name).score for name in labs}
    assert theirs["alice"] == labs["alice"] and theirs["bob"] == labs["bob"]
    assert theirs["carol"] == theirs["dave"] == 0
    assert labs["carol"] == ASSIGNMENTS[ASSIGNMENT].auto_points - 1  # 2.1 died, the rest counts
    assert labs["dave"] == ASSIGNMENTS[ASSIGNMENT].auto_points
    section = _routes.GUIDE.read_text(encoding="utf-8").split("## nbgrader")[1].split("\n## ")[0]
    assert "kernel died" in section and "grade_id" in section
