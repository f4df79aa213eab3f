"""``release --for gradescope``: the autograder zip in Gradescope's documented format, its
``run_autograder`` run locally against a folder laid out as Gradescope's ``/autograder`` (the
guide's commands as written), for a full solution, a wrong answer, an unreadable notebook, an
endless loop and an empty submission; every ``results.json`` checked against the fields of
Gradescope's autograder specification."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest

import _routes
from _notebook_edits import insert_after, load, replace_answer

from attention_lab.exercises import check
from attention_lab.grading.assignments import ASSIGNMENTS, points
from attention_lab.grading.export import gradescope

SOLUTIONS = _routes.ROOT / "notebooks" / "exercises" / "solutions"
LEVEL2 = SOLUTIONS / "02_mechanics_exercises_solutions.ipynb"
AUTO = [ex for ex in ASSIGNMENTS["02_mechanics"].exercises if ex.auto]
WRITTEN = [ex for ex in ASSIGNMENTS["02_mechanics"].exercises if not ex.auto]
SCALED = "def dot_scores(query, keys):\n    return keys @ query / np.sqrt(len(query))"

#: Gradescope's results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/):
#: the fields it defines, and the values its enumerations allow
RESULT_FIELDS = {"score": (int, float), "execution_time": (int, float), "output": str,
                 "output_format": str, "test_output_format": str, "test_name_format": str,
                 "visibility": str, "stdout_visibility": str, "extra_data": dict,
                 "tests": list, "leaderboard": list}
TEST_FIELDS = {"score": (int, float), "max_score": (int, float), "status": str, "name": str,
               "name_format": str, "number": str, "output": str, "output_format": str,
               "tags": list, "visibility": str, "extra_data": dict}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def spec_problems(results) -> list[str]:
    found = [f"{k}: unknown field or wrong type" for k, v in results.items()
             if k not in RESULT_FIELDS or not isinstance(v, RESULT_FIELDS[k])]
    if "score" not in results and not all("score" in t for t in results.get("tests", [])):
        found.append("no score for the submission nor for every test")
    for k in ("visibility", "stdout_visibility"):
        if results.get(k, "visible") not in VISIBILITY:
            found.append(f"{k} {results[k]!r}")
    for i, t in enumerate(results.get("tests", [])):
        found += [f"test {i}: {k}: unknown field or wrong type" for k, v in t.items()
                  if k not in TEST_FIELDS or not isinstance(v, TEST_FIELDS[k])]
        missing = {"name", "score", "max_score", "output", "visibility"} - set(t)
        found += [f"test {i}: no {k}" for k in sorted(missing)]
        if not missing and not 0 <= t["score"] <= max(t["max_score"], 0):
            found.append(f"test {i}: score {t['score']} outside 0..{t['max_score']}")
        if t.get("visibility", "visible") not in VISIBILITY:
            found.append(f"test {i}: visibility {t['visibility']!r}")
        if t.get("status", "passed") not in ("passed", "failed"):
            found.append(f"test {i}: status {t['status']!r}")
    if "tests" in results and "score" in results:
        if results["score"] != sum(t["score"] for t in results["tests"]):
            found.append("the score is not the sum of the tests' scores")
    return found


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """The guide's build, and its local try-out with the level-2 solution notebook."""
    work = tmp_path_factory.mktemp("gradescope")
    _routes.run("route-gradescope-build", work)
    shutil.copy(LEVEL2, work / "student-notebook.ipynb")
    proc = _routes.run("route-gradescope-try", work)
    return work, proc


def run_autograder(work: Path, name: str, files: dict, limits: dict | None = None) -> dict:
    """Run the unzipped ``run_autograder`` against a new root ``work/name`` whose submission
    folder holds ``files`` (name: bytes); its results.json."""
    root = work / name
    shutil.copytree(work / "try" / "source", root / "source")
    if limits:
        (root / "source" / "lab" / "autograder.json").write_text(json.dumps(limits))
    (root / "submission").mkdir()
    for fname, data in files.items():
        (root / "submission" / fname).write_bytes(data)
    subprocess.run([str(root / "source" / "run_autograder")], check=True, capture_output=True,
                   env={**_routes.env(), gradescope.ROOT_ENV: str(root)}, timeout=300)
    results = json.loads((root / "results" / "results.json").read_text())
    assert spec_problems(results) == []
    return results


def notebook_bytes(nb) -> bytes:
    return nbformat.writes(nb).encode()


def test_the_zip_has_setup_and_run_autograder_at_its_root_and_no_solution(autograder):
    work, _ = autograder
    with zipfile.ZipFile(work / "autograder.zip") as zf:
        names = zf.namelist()
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        setup = zf.read("setup.sh").decode()
    assert {"setup.sh", "run_autograder"} <= set(names)
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert not [n for n in names if "solution" in n.lower()]
    assert {"lab/attention_lab/grading/namespaces.py",  # the autograder grades: its sandbox
            "lab/attention_lab/grading/export/gradescope.py"} <= set(names)
    assert not gradescope_leaks(work / "try" / "source")
    # torch's CPU build, the version requirements.txt pins, before the other requirements
    pin = next(ln for ln in (_routes.ROOT / "requirements.txt").read_text().splitlines()
               if ln.startswith("torch=="))
    cpu = next(i for i, ln in enumerate(setup.splitlines()) if "download.pytorch.org/whl/cpu" in ln)
    assert pin in setup.splitlines()[cpu]
    assert cpu < next(i for i, ln in enumerate(setup.splitlines()) if "-r requirements.txt" in ln)
    assert subprocess.run(["bash", "-n", "-c", setup]).returncode == 0
    # the guide's limits are stored in the zip
    assert json.loads((work / "try" / "source" / "lab" / "autograder.json").read_text()) == {
        "cell_timeout": 60.0, "timeout": 600.0}


def gradescope_leaks(folder: Path) -> list[str]:
    from attention_lab.grading import release

    return release.leaks(folder, release.answer_blocks())


def test_a_full_solution_scores_full_marks(autograder):
    work, proc = autograder
    results = json.loads((work / "try" / "results" / "results.json").read_text())
    assert spec_problems(results) == []
    assert results["score"] == sum(points(ex) for ex in AUTO) == 6
    by_id = {t["number"]: t for t in results["tests"]}
    assert set(by_id) == {ex.id for ex in AUTO + WRITTEN}
    assert all(by_id[ex.id]["score"] == by_id[ex.id]["max_score"] == points(ex)
               and by_id[ex.id]["status"] == "passed" for ex in AUTO)
    # written answers: for Gradescope's manual questions, 0 of 0 points, tagged, no rubric shown
    for ex in WRITTEN:
        t = by_id[ex.id]
        assert t["score"] == t["max_score"] == 0 and t["tags"] == ["manual"]
        assert not any(line in t["output"] for line in ex.rubric)
    assert '"score": 6' in proc.stdout  # the guide's `cat` shows it


def test_a_wrong_answer_scores_0_on_its_exercise_with_the_checks_message(autograder):
    work, _ = autograder
    nb = replace_answer(load(LEVEL2), "dot_scores", SCALED)
    results = run_autograder(work, "wrong", {"02_mechanics_exercises.ipynb": notebook_bytes(nb)})
    by_id = {t["number"]: t for t in results["tests"]}
    assert by_id["2.1"]["score"] == 0 and by_id["2.1"]["status"] == "failed"
    namespace: dict = {}
    exec("import numpy as np\n" + SCALED, namespace)
    expected = check("2.1", namespace["dot_scores"], show=False).message.splitlines()[0]
    assert expected in by_id["2.1"]["output"]
    assert results["score"] == 5 and all(by_id[ex.id]["score"] == 1 for ex in AUTO[1:])


def test_an_unreadable_notebook_gets_score_0_and_says_why(autograder):
    work, _ = autograder
    results = run_autograder(work, "unreadable",
                             {"02_mechanics_exercises.ipynb": b'{"cells": [ not json'})
    assert results["score"] == 0
    assert "unreadable" in results["output"] and "02_mechanics_exercises.ipynb" in results["output"]
    assert all(t["score"] == 0 for t in results["tests"])


def test_an_empty_submission_gets_score_0_and_says_what_to_upload(autograder):
    work, _ = autograder
    results = run_autograder(work, "empty", {"notes.txt": b"I forgot the notebook"})
    assert results["score"] == 0 and results["tests"] == []
    assert "no notebook" in results["output"]


def test_an_endless_loop_ends_within_the_limits(autograder):
    work, _ = autograder
    nb = insert_after(replace_answer(load(LEVEL2), "dot_scores",
                                     "def dot_scores(query, keys):\n    while True:\n        pass"),
                      "softmax_by_hand", "while True:\n    pass")
    results = run_autograder(work, "loop", {"02_mechanics_exercises.ipynb": notebook_bytes(nb)},
                             limits={"cell_timeout": 5, "timeout": 60})
    by_id = {t["number"]: t for t in results["tests"]}
    assert by_id["2.1"]["score"] == 0 and "time limit" in by_id["2.1"]["output"]
    assert all(by_id[ex.id]["score"] == 1 for ex in AUTO[1:])  # the rest is graded


@pytest.mark.parametrize("name, problem", [("autograder.tar", "does not end in .zip"),
                                           ("taken.zip", "exists")])
def test_a_bad_zip_name_is_a_one_line_error_and_nothing_is_written(tmp_path, capsys, name,
                                                                   problem):
    from attention_lab.grading import release

    (tmp_path / "taken.zip").write_bytes(b"an earlier autograder")
    assert release.main(["--for", "gradescope", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("release: error:") and problem in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.zip"]
    assert (tmp_path / "taken.zip").read_bytes() == b"an earlier autograder"


def test_two_notebooks_of_one_assignment_in_one_submission_count_once():
    """A Gradescope submission is one student's: two uploaded copies of the level-2 notebook
    (no stored student id, so the grader names each by its file) score the assignment once,
    not 12 of 6, and the output says which file counted."""
    def sub(file, submitted):
        return {"file": file, "status": "graded", "message": "",
                "meta": {"student": file.removesuffix(".ipynb"), "assignment": "02_mechanics",
                         "submitted": submitted},
                "exercises": {ex.id: {"status": "pass" if ex.auto else "needs_instructor",
                                      "message": ""} for ex in AUTO + WRITTEN}}
    grades = {"submissions": [sub("02_mechanics_exercises.ipynb", "2026-03-01T10:00:00+00:00"),
                              sub("old copy.ipynb", "2026-03-01T09:00:00+00:00")]}
    results = gradescope.results_from(grades)
    assert spec_problems(results) == []
    assert results["score"] == 6
    assert sorted(t["number"] for t in results["tests"]) == sorted(ex.id for ex in AUTO + WRITTEN)
    assert "old copy.ipynb" in results["output"] and "not counted" in results["output"]


def test_run_autograder_works_where_gradescope_puts_it(autograder):
    """Gradescope copies ``run_autograder`` to ``/autograder/run_autograder`` (the zip itself is
    in ``/autograder/source``) and runs it there, from ``/autograder``: it must still find the
    lab and write ``results/results.json``."""
    work, _ = autograder
    root = work / "as-gradescope"
    shutil.copytree(work / "try" / "source", root / "source")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    shutil.copy(LEVEL2, root / "submission" / "02_mechanics_exercises.ipynb")
    proc = subprocess.run([str(root / "run_autograder")], cwd=root, capture_output=True,
                          text=True, env={**_routes.env(), gradescope.ROOT_ENV: str(root)},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert spec_problems(results) == [] and results["score"] == 6


def test_a_macos_zip_upload_says_nothing_wrong_about_a_graded_notebook(tmp_path):
    """A zip made by macOS' Finder, which Gradescope unpacks into the submission folder, holds
    ``__MACOSX/`` (AppleDouble files ``._NAME``) beside the notebook: the notebook is graded, and
    the student is not told that ``__MACOSX`` is a notebook that is none of the lab's, nor to
    'the notebook itself must be handed in'."""
    submission = tmp_path / "submission"
    (submission / "hw").mkdir(parents=True)
    shutil.copy(LEVEL2, submission / "hw" / "02_mechanics_exercises.ipynb")
    (submission / "__MACOSX" / "hw").mkdir(parents=True)
    (submission / "__MACOSX" / "hw" / "._02_mechanics_exercises.ipynb").write_bytes(
        b"\x00\x05\x16\x07 AppleDouble")
    results = gradescope.grade(tmp_path, {"cell_timeout": 60, "timeout": 600})
    assert spec_problems(results) == []
    assert results["score"] == 6
    assert "__MACOSX" not in results.get("output", "")
    assert "must be handed in" not in results.get("output", "")
    assert "none of the lab's exercise notebooks" not in results.get("output", "")


def test_an_upload_without_a_notebook_tells_the_student_not_the_instructor(tmp_path):
    """A folder named like a notebook (``hw.ipynb/``, from a zip) holding a PDF: the student
    reads what is wrong in words meant for them, not 'ask the student to ...'."""
    (tmp_path / "submission" / "hw.ipynb").mkdir(parents=True)
    (tmp_path / "submission" / "hw.ipynb" / "report.pdf").write_bytes(b"%PDF-1.4")
    results = gradescope.grade(tmp_path, {"cell_timeout": 60, "timeout": 600})
    assert spec_problems(results) == [] and results["score"] == 0
    assert "no notebook in this upload" in results["output"]
    assert "the notebook itself must be handed in" in results["output"]
    assert "ask the student" not in results["output"]


def test_notebooks_of_two_assignments_in_one_upload_never_score_beyond_one_assignment():
    """One zip serves the four assignments, and Gradescope's autograder score is out of one
    assignment's points: a student who uploads the level-2 and the level-3 notebooks (say their
    whole exercises folder) must not get 11 of the 6 points, with no word about it."""
    def sub(file, assignment):
        exercises = ASSIGNMENTS[assignment].exercises
        return {"file": file, "status": "graded", "message": "",
                "meta": {"student": "s1", "assignment": assignment, "submitted": None},
                "exercises": {ex.id: {"status": "pass" if ex.auto else "needs_instructor",
                                      "message": ""} for ex in exercises}}
    results = gradescope.results_from({"submissions": [
        sub("02_mechanics_exercises.ipynb", "02_mechanics"),
        sub("03_maths_and_code_exercises.ipynb", "03_maths_and_code")]})
    assert spec_problems(results) == []
    assert results["score"] <= max(sum(points(ex) for ex in a.exercises if ex.auto)
                                   for a in ASSIGNMENTS.values())
    assert results["score"] == 0
    assert "02_mechanics" in results["output"] and "03_maths_and_code" in results["output"]


def test_the_guide_has_gradescope_stop_the_autograder_after_the_graders_own_time_limit():
    """Gradescope stops an autograder after 10 minutes unless the assignment's settings give it
    more (its troubleshooting page), and stopped, it writes no results.json: the student gets 0
    and no message. The guide's --timeout 600 is those 10 minutes, before the autograder has
    started its kernel or written its results, so the guide must say to raise that setting."""
    text = _routes.GUIDE.read_text(encoding="utf-8")
    section = text[text.index("## Gradescope"):]
    seconds = float(re.search(r"--timeout (\d+)", _routes.blocks()["route-gradescope-build"])[1])
    found = re.search(r"Autograder Settings[^.]*?timeout[^.]*?(\d+) minutes", section)
    assert found, "the guide does not say to raise Gradescope's autograder timeout"
    assert int(found[1]) * 60 > seconds + 60


def test_the_whole_exercises_folder_scores_the_one_notebook_worked_on(tmp_path):
    """A student who uploads their whole exercises folder (the level-2 notebook done, the other
    three as they came) gets the level-2 score; each untouched notebook is named as not
    counted. Two worked-on assignments still score 0 (the test above)."""
    submission = tmp_path / "submission"
    submission.mkdir()
    shutil.copy(LEVEL2, submission / "02_mechanics_exercises.ipynb")
    for stem in ("01_intuition", "03_maths_and_code", "04_research"):
        shutil.copy(SOLUTIONS.parent / f"{stem}_exercises.ipynb", submission)
    results = gradescope.grade(tmp_path, {"cell_timeout": 60, "timeout": 600})
    assert spec_problems(results) == []
    assert results["score"] == sum(points(ex) for ex in AUTO)
    assert {t["name"].split()[0] for t in results["tests"]} == {
        ex.id for ex in ASSIGNMENTS["02_mechanics"].exercises}
    for stem in ("01_intuition", "03_maths_and_code", "04_research"):
        assert f"{stem}_exercises.ipynb: not counted: not attempted" in results["output"]


@pytest.mark.parametrize("name, data", [("notes.pdf", b"%PDF-1.4"),
                                        ("._02_mechanics_exercises.ipynb", b"\x00\x05\x16\x07")])
def test_an_upload_without_a_readable_notebook_is_not_called_another_notebook(tmp_path, name,
                                                                              data):
    """An upload holding only a PDF, or only the AppleDouble file of a Mac zip, scores 0 and says
    what it held or why it could not be read, never that 'the notebook is none of the lab's
    exercise notebooks' (it is no notebook at all)."""
    submission = tmp_path / "submission"
    (submission / "hw").mkdir(parents=True)
    (submission / "hw" / name).write_bytes(data)
    results = gradescope.grade(tmp_path, {"cell_timeout": 60, "timeout": 600})
    assert spec_problems(results) == [] and results["score"] == 0
    assert results["output"] and "none of the lab's exercise notebooks" not in results["output"]


@pytest.mark.parametrize("name", ["02_mechanics_exercises.py", "homework.zip"])
def test_an_upload_of_a_script_or_a_zip_names_what_was_uploaded(tmp_path, name):
    """A student who uploads the notebook's jupytext script or a zip of it reads which file the
    autograder found and that the notebook itself is needed, not only 'no notebook in the
    submission' (which reads as if the upload were lost)."""
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / name).write_bytes(b"# %%\nimport numpy as np\n")
    results = gradescope.grade(tmp_path, {"cell_timeout": 60, "timeout": 600})
    assert spec_problems(results) == [] and results["score"] == 0
    assert name in results["output"] and "the notebook itself" in results["output"]


def test_where_the_container_refuses_the_sandbox_the_output_and_the_guide_say_so(autograder,
                                                                                 tmp_path):
    """Docker's default seccomp profile refuses the namespaces bubblewrap needs, so in
    Gradescope's container the lab's sandbox may not run: the notebook's code then runs beside
    the autograder without it (as root, it could rewrite results.json: as a user of its own
    where others can run the grader's Python). The autograder still grades, its
    output (which students do not see) says the kernels ran without isolation, and the guide
    quotes that line and says what it means, so an instructor's first test upload tells."""
    work, _ = autograder
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "bwrap").write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    (tmp_path / "bin" / "bwrap").chmod(0o755)
    root = work / "no-sandbox"
    shutil.copytree(work / "try" / "source", root / "source")
    (root / "submission").mkdir()
    shutil.copy(LEVEL2, root / "submission" / "02_mechanics_exercises.ipynb")
    env = _routes.env()
    proc = subprocess.run([str(root / "source" / "run_autograder")], capture_output=True,
                          text=True, timeout=300, env={**env, gradescope.ROOT_ENV: str(root),
                                                       "PATH": f"{tmp_path / 'bin'}:{env['PATH']}"})
    results = json.loads((root / "results" / "results.json").read_text())
    assert spec_problems(results) == [] and results["score"] == 6
    note = "note: kernels run without isolation"
    assert note in proc.stdout + proc.stderr
    section = " ".join(_routes.GUIDE.read_text(encoding="utf-8").split("## Gradescope")[1].split())
    assert note in section and "results.json" in section.split(note)[1][:600]
