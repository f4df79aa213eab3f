"""A grading stopped half-way and picked up again, and time-outs named as such.

* SIGINT (Ctrl-C) or SIGTERM stops ``grade`` long before any time limit would: every kernel it
  started is gone, the scratch folder is removed, the notebooks graded so far are kept in
  ``grades.json``; ``--resume`` then grades only the missing ones, with the same seed, and keeps
  the earlier grades as they were;
* a cell that runs out of time gives ``timeout`` (with the cell and the limit), also when the
  answer it would have defined is not visible to the grader's reading of the cell.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from attention_lab.grading import batch

from _notebook_edits import load

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the grader's sandbox is Linux-only")

ROOT = Path(__file__).resolve().parents[2]
STU2 = ROOT / "notebooks" / "exercises" / "02_mechanics_exercises.ipynb"
SOL2 = ROOT / "notebooks" / "exercises" / "solutions" / "02_mechanics_exercises_solutions.ipynb"


def _looping(path: Path) -> None:
    nb = load(STU2)
    nb.cells.insert(1, nbformat.v4.new_code_cell("while True:\n    pass"))
    nbformat.write(nb, str(path))


def _wait_for(proc, stream, text: str, limit: float = 120.0) -> str:
    """Read ``stream`` (the progress bar on stderr) until ``text`` shows up."""
    os.set_blocking(stream.fileno(), False)
    seen, end = "", time.monotonic() + limit
    while time.monotonic() < end and proc.poll() is None:
        chunk = stream.read()
        if chunk:
            seen += chunk.decode("utf-8", "replace")
            if text in seen:
                return seen
        time.sleep(0.1)
    raise AssertionError(f"never saw {text!r}: {seen[-500:]}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_batch_keeps_what_is_graded_and_resume_grades_the_rest(
        tmp_path, signum):
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    subs.mkdir()
    tmp.mkdir()
    nbformat.write(load(SOL2), str(subs / "a_done.ipynb"))
    _looping(subs / "b_loops.ipynb")
    env = {**os.environ, "TMPDIR": str(tmp)}
    argv = [sys.executable, "-m", "attention_lab", "grade", str(subs), "--out", str(out),
            "--jobs", "2", "--seed", "11", "--cell-timeout", "300", "--timeout", "600"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT)
    try:
        _wait_for(proc, proc.stderr, "1/2")  # a_done is graded, b_loops loops
        family = psutil.Process(proc.pid).children(recursive=True)
        assert family, "the grader started no kernel"
        proc.send_signal(signum)
        time.sleep(0.2)
        proc.send_signal(signum)  # impatient: a second one changes nothing
        # the cell limit is 300 s: returning at all means the signal stopped the batch
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = err.decode()
    assert proc.returncode == 130, err
    assert "--resume" in err
    gone, alive = psutil.wait_procs(family, timeout=5)
    assert not alive, f"left running: {[p.pid for p in alive]}"
    assert list(tmp.iterdir()) == []  # no scratch folder left behind
    first = json.loads((out / "grades.json").read_text())
    assert [s["file"] for s in first["submissions"]] == ["a_done.ipynb"]
    assert not (out / "gradebook.csv").exists()  # nothing to import by mistake
    kept = first["submissions"][0]

    # picked up again: only b_loops is graded (a short cell limit now ends its loop)
    nbformat.write(load(SOL2), str(subs / "c_new.ipynb"))
    assert batch.main([str(subs), "--out", str(out), "--resume", "--quiet", "--jobs", "2",
                       "--cell-timeout", "3"]) == 0
    again = json.loads((out / "grades.json").read_text())
    assert again["grader"]["seed"] == 11  # the interrupted run's seed
    by_file = {s["file"]: s for s in again["submissions"]}
    assert set(by_file) == {"a_done.ipynb", "b_loops.ipynb", "c_new.ipynb"}
    assert by_file["a_done.ipynb"]["seconds"] == kept["seconds"]  # kept, not graded again
    assert by_file["a_done.ipynb"]["exercises"] == kept["exercises"]
    assert by_file["b_loops.ipynb"]["status"] == "graded"
    assert any(c["event"] == "timeout" for c in by_file["b_loops.ipynb"]["cells"])
    rows = list(csv.DictReader(open(out / "grades.csv", encoding="utf-8")))
    assert len(rows) == 3 and (out / "gradebook.csv").is_file()


def test_resume_refuses_another_seed(tmp_path, capsys):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    out.mkdir()
    nbformat.write(load(STU2), str(subs / "a.ipynb"))
    (out / "grades.json").write_text(json.dumps({
        "grader": {"seed": 4, "limits": {}}, "folder": str(subs), "submissions": []}))
    assert batch.main([str(subs), "--out", str(out), "--resume", "--seed", "5"]) == 2
    assert "used --seed 4, not 5" in capsys.readouterr().err


def test_time_outs_are_reported_as_time_outs_with_the_cell_and_the_limit(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    hidden = load(SOL2)  # the answer defined where the grader's reading does not see it
    for cell in hidden.cells:
        if cell.cell_type == "code" and "def softmax_temperature" in cell.source:
            cell.source = f"import time\ntime.sleep(60)\nexec({cell.source!r})"
    nbformat.write(hidden, str(subs / "hidden.ipynb"))
    report = batch.grade_folder(subs, progress=False, seed=2,
                                limits=batch.Limits.for_cells(3, 120))
    (s,) = report.submissions
    g = s.exercises["2.4"]
    assert g.status == "timeout", g
    assert "did not finish in time" in g.message and "per-cell limit" in g.message
    assert "cell " in g.message

    slow = load(STU2)  # the whole-notebook limit runs out in the middle of a cell
    slow.cells.insert(1, nbformat.v4.new_code_cell("import time\ntime.sleep(30)"))
    (subs / "hidden.ipynb").unlink()
    nbformat.write(slow, str(subs / "slow.ipynb"))
    report = batch.grade_folder(subs, progress=False, seed=2,
                                limits=batch.Limits(cell_timeout=20, timeout=4))
    (s,) = report.submissions
    assert s.status == "timeout"
    assert {g.status for g in s.exercises.values()} == {"timeout"}
    assert "whole-notebook limit of 4 s ran out" in s.exercises["2.1"].message


def test_resume_regrades_a_file_whose_assignment_changed(tmp_path):
    """A grade kept by --resume is one of the assignment this run gives the file: after a
    first run that could not tell the assignment (graded against every check), ``--resume
    --assignment 02_mechanics`` must not keep that row's 25 exercises as level 2's."""
    from attention_lab.grading.assignments import ASSIGNMENTS

    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / "homework.ipynb").write_text("{not json")
    first = batch.grade_folder(subs, progress=False, seed=3)
    assert first.submissions[0].assignment is None
    again = batch.grade_folder(subs, progress=False, seed=3, previous=first, resume=True,
                               assignment="02_mechanics")
    (s,) = again.submissions
    level2 = {ex.id for ex in ASSIGNMENTS["02_mechanics"].exercises}
    assert s.assignment == "02_mechanics" and set(s.exercises) == level2
    assert s.out_of == ASSIGNMENTS["02_mechanics"].auto_points


def test_only_does_not_keep_the_old_row_of_a_file_it_regrades(tmp_path):
    """``--only alice`` after the first grading filed alice's file under another id (say her
    Canvas user id, before ``--roster``): the file is regraded as alice's, and its old row is
    not kept beside it (the same work twice in the gradebook, under two ids)."""
    subs = tmp_path / "subs"
    for name in ("alice", "bob"):
        (subs / name).mkdir(parents=True)
        (subs / name / "02_mechanics_exercises.ipynb").write_text("{not json")
    first = batch.grade_folder(subs, progress=False, seed=3)
    first.submissions[0].meta["student"] = "22222"  # alice, as the first grading named her
    again = batch.grade_folder(subs, progress=False, seed=3, previous=first, only={"alice"})
    rows = sorted((s.file, s.student) for s in again.submissions)
    assert rows == [("alice/02_mechanics_exercises.ipynb", "alice"),
                    ("bob/02_mechanics_exercises.ipynb", "bob")]


def test_resume_carries_hand_scores_to_a_resubmission_as_a_regrade_does(tmp_path):
    """alice's written answer was scored; she hands in again (a second file, the same answer).
    Regrading carries her score to the file that now counts, and so must ``--resume`` (which
    keeps the first file's grade): the kept grade becoming superseded must not hide its score."""
    import copy
    import shutil

    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    first_file = subs / "alice" / "02_mechanics_exercises.ipynb"
    shutil.copy(SOL2, first_file)
    os.utime(first_file, (1e9, 1e9))
    first = batch.grade_folder(subs, progress=False, seed=3)
    (g,) = first.submissions
    g.exercises["2.3"].status, g.exercises["2.3"].score = "hand_graded", 3.0  # merged
    again = subs / "alice" / "02_mechanics_exercises_again.ipynb"
    shutil.copy(SOL2, again)
    os.utime(again, (2e9, 2e9))
    for resume in (False, True):
        report = batch.grade_folder(subs, progress=False, seed=3, previous=copy.deepcopy(first),
                                    resume=resume)
        (counted,) = report.counted()
        assert counted.file == "alice/02_mechanics_exercises_again.ipynb"
        assert (counted.exercises["2.3"].status, counted.exercises["2.3"].score) == \
            ("hand_graded", 3.0), f"resume={resume}"


def test_only_with_an_id_no_submission_has_is_an_error_not_a_silent_no_op(tmp_path, capsys):
    """``--only jdeo`` (a typo of jdoe) or ``--only 3`` (a level number) grades nothing: grade
    says so and writes nothing, rather than rewriting the old grading and exiting 0 as if the
    resubmission had been graded."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    (subs / "jdoe").mkdir(parents=True)
    (subs / "jdoe" / "02_mechanics_exercises.ipynb").write_text("{not json")
    assert batch.main([str(subs), "--out", str(out), "--quiet", "--seed", "1"]) == 0
    before = (out / "grades.json").read_bytes()
    capsys.readouterr()
    for wrong in ("jdeo", "3"):
        assert batch.main([str(subs), "--out", str(out), "--quiet", "--only", wrong]) == 2
        err = capsys.readouterr().err
        assert f"--only {wrong}" in err and "02_mechanics" in err and err.count("\n") == 1, err
        assert (out / "grades.json").read_bytes() == before
