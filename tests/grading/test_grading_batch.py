"""Batch grading against a corpus of good, broken and hostile submissions.

One grading run (``--jobs 2``) over the whole corpus, shared by the tests below: every file gets
the right status, the good ones grade correctly next to the hostile ones, no submission's bytes
change, nothing a notebook started survives, and a process outside the sandbox cannot be
signalled. Then the command line's errors, the whole-notebook time limit, the decoding of the
records the kernel wrote, and the seams the course features plug into.
"""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from attention_lab.exercises.judging import BadRecord, decode_record
from attention_lab.exercises.registry import EXERCISES, IDS
from attention_lab.grading import batch
from attention_lab.grading import outputs
from attention_lab.grading import report as R
from attention_lab.grading import submit
from attention_lab.grading import submissions as S

from _notebook_edits import insert_after, load, replace_answer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the grader's sandbox is Linux-only")

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "notebooks" / "exercises"
SOL1 = NB / "solutions" / "01_intuition_exercises_solutions.ipynb"
SOL2 = NB / "solutions" / "02_mechanics_exercises_solutions.ipynb"
STU2 = NB / "02_mechanics_exercises.ipynb"
LEVEL2_AUTO = ["2.1", "2.2", "2.4", "2.5", "2.6", "2.7"]
MARK = "777.25"  # an argument no other process on the machine uses
#: exercise 10 (check 2.6) asks for masked_softmax and a test of it, in one cell
TEST_MASKED = """
    def test_masked_softmax(masked_softmax):
        scores = np.array([[0.5, 2.0, -1.0, 3.0]])
        mask = np.array([[True, False, True, True]])
        w = masked_softmax(scores, mask)
        return bool(np.all(w[~mask] == 0) and np.allclose(w.sum(-1), 1))
"""


def _isolated() -> bool:
    from attention_lab.grading.sandbox import isolation_problem

    return not isolation_problem()


# The notebook that deletes files and signals other processes is only safe to run where the
# sandbox contains it (namespaces); elsewhere it is left out and its test is skipped, and the
# site's threat model (docs/design/grading.md) says what the grader does not protect against there.
CONTAINED = _isolated()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    sub = tmp_path_factory.mktemp("submissions")
    out = tmp_path_factory.mktemp("grades")
    sentinel = subprocess.Popen(["sleep", "600"])

    def write(name, nb):
        nbformat.write(nb, str(sub / name))

    write("correct.ipynb", load(SOL2))
    wrong = load(STU2)
    replace_answer(wrong, "dot_scores", """
        import math
        def dot_scores(query, keys):
            return keys @ query / math.sqrt(len(query))
    """)
    replace_answer(wrong, "masked_softmax", """
        def masked_softmax(scores, mask):
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True) * mask
    """ + TEST_MASKED)
    replace_answer(wrong, "softmax_temperature", """
        def softmax_temperature(scores, temperature):
            return np.exp(scores / temperature) / (
    """)
    write("wrong.ipynb", wrong)
    (sub / "malformed.ipynb").write_text('{"cells": [{"cell_type": "code", "source": "x = ')
    (sub / "picture.ipynb").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    (sub / "essay.ipynb").write_text("Dear instructor, here is my homework.\n")
    write("empty.ipynb", nbformat.v4.new_notebook())

    loop = load(SOL2)
    insert_after(loop, "dot_scores", "while True:\n    pass")
    replace_answer(loop, "masked_softmax", """
        def masked_softmax(scores, mask):
            while True:
                try:
                    pass
                except BaseException:
                    pass
    """ + TEST_MASKED)
    write("loop.ipynb", loop)

    crash = load(SOL2)
    insert_after(crash, "dot_scores", "import os\nos._exit(3)")
    replace_answer(crash, "padding_mask", """
        def padding_mask(lengths, S):
            import os
            os._exit(4)
    """)
    write("crash.ipynb", crash)

    deleter = load(SOL2)
    insert_after(deleter, "masked_softmax", f"""
        import glob, os, shutil, signal
        for victim in glob.glob({str(sub)!r} + "/*") + glob.glob({str(out)!r} + "/*"):
            try:
                os.remove(victim)
            except OSError as exc:
                print("could not delete", victim, type(exc).__name__)
        shutil.rmtree("..", ignore_errors=True)
        shutil.rmtree("../..", ignore_errors=True)
        shutil.rmtree(os.path.expanduser("~/.ipython"), ignore_errors=True)
        for target in ({str(sub)!r} + "/evil.ipynb", "/tmp/attention-lab-evil"):
            try:
                open(target, "w").write("{{}}")
            except OSError as exc:
                print("could not write", target, type(exc).__name__)
        for pid in ({sentinel.pid}, os.getppid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError as exc:
                print("could not kill", pid, type(exc).__name__)
    """)
    if CONTAINED:
        write("deleter.ipynb", deleter)

    bomb = load(SOL2)
    insert_after(bomb, "dot_scores", """
        huge = bytearray(64 * 2**30)
    """)
    insert_after(bomb, "padding_mask", """
        def grow():  # untouched pages: the limit is reached at once, however busy the machine
            blocks = []
            while True:
                blocks.append(np.empty(2**23))  # 64 MiB each
        grow()
    """)
    write("membomb.ipynb", bomb)

    loud = load(SOL2)
    insert_after(loud, "dot_scores", """
        print("x" * 30_000_000)
        for i in range(100_000):
            print(i)
    """)
    write("hugeoutput.ipynb", loud)

    tampered = load(STU2)
    replace_answer(tampered, "dot_scores", """
        def dot_scores(query, keys):
            return keys @ query / 2
    """)
    replace_answer(tampered, "masked_softmax", """
        def masked_softmax(scores, mask):
            s = np.where(mask, scores, -np.inf)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
    """ + TEST_MASKED)
    tampered.cells = [c for c in tampered.cells if 'check("2.6"' not in c.source]
    insert_after(tampered, "dot_scores", """
        import glob
        forged = '{"event":"done","id":"2.1","record":{"kind":"value","value":1}}\\n'
        for f in glob.glob("../**/*.jsonl", recursive=True) + glob.glob("/tmp/attention-lab-*/*/out/*.jsonl"):
            try:
                open(f, "a").write(forged)
            except OSError as exc:
                print(type(exc).__name__)
        import attention_lab.exercises as ae
        def check(*args, **kwargs):
            print("✔ pass")
        ae.check = check
        try:  # not there in the grader's kernel
            import attention_lab.exercises.judging as ck
            import attention_lab.exercises.probe as pr
            ck.judge = lambda *a, **k: ck.Verdict("pass", "", "pass")
            pr.probe = lambda *a, **k: {"kind": "value", "value": 1.0}
            pr.run_harness = lambda *a, **k: None
        except ImportError as exc:
            print(type(exc).__name__)
    """)
    write("tampered.ipynb", tampered)

    forker = load(SOL2)
    insert_after(forker, "dot_scores", f"""
        import os, subprocess
        subprocess.Popen(["sleep", "{MARK}"])
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "{MARK}"])
            os._exit(0)
    """)
    write("forker.ipynb", forker)

    # a file made by `submit` (run outside the corpus folder), and a JSON file that is not one
    staging = tmp_path_factory.mktemp("staging")
    nbformat.write(load(SOL1), str(staging / "level1.ipynb"))
    assert submit.main([str(staging / "level1.ipynb"), "--out", str(sub / "level1.submission.json"),
                        "--cell-timeout", "20"]) == 0
    (sub / "fake.submission.json").write_text('{"hello": "world"}')
    (sub / "readme.txt").write_text("not a submission")

    before = {p.name: sha(p) for p in sub.iterdir()}
    code = batch.main([str(sub), "--out", str(out), "--jobs", "2", "--cell-timeout", "3",
                         "--timeout", "90", "--memory-mb", "1024", "--seed", "7", "--quiet"])
    after = {p.name: sha(p) for p in sub.iterdir()}
    report = json.loads((out / "grades.json").read_text())
    with open(out / "grades.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    sentinel_alive = sentinel.poll() is None
    sentinel.kill()
    yield {"code": code, "sub": sub, "out": out, "before": before, "after": after,
           "report": report, "rows": {r["file"]: r for r in rows},
           "subs": {s["file"]: s for s in report["submissions"]}, "sentinel_alive": sentinel_alive}


def statuses(graded, name):
    return {i: e["status"] for i, e in graded["subs"][name]["exercises"].items()}


def test_the_report_is_written_and_the_command_exits_0(graded):
    assert graded["code"] == 0
    assert set(graded["subs"]) == {
        "correct.ipynb", "wrong.ipynb", "malformed.ipynb", "picture.ipynb", "essay.ipynb",
        "empty.ipynb", "loop.ipynb", "crash.ipynb", "membomb.ipynb", "hugeoutput.ipynb",
        "tampered.ipynb", "forker.ipynb", "level1.submission.json",
        "fake.submission.json"} | ({"deleter.ipynb"} if CONTAINED else set())
    assert graded["report"]["skipped"] == ["readme.txt"]
    assert graded["report"]["grader"]["seed"] == 7
    header = list(next(iter(graded["rows"].values())))
    n = len(R.GRADES_COLUMNS)
    assert header[:n] == ["file", "student", "student_from", "lms_id", "assignment",
                          "assignment_from", "counts", "status", "submitted_at", "late_by",
                          "points_kept", "total", "out_of", "written", "written_out_of", "points",
                          "needs_instructor", "flags"]
    assert header[n:n + len(IDS)] == list(IDS) and header[-1] == "message"


def test_no_submission_was_modified_or_deleted(graded):
    assert graded["after"] == graded["before"]
    assert graded["report"]["integrity"] == {"unchanged": True, "changed": []}
    assert not (graded["sub"] / "evil.ipynb").exists()
    assert not Path("/tmp/attention-lab-evil").exists()


def test_correct_notebook(graded):
    st = statuses(graded, "correct.ipynb")
    assert all(st[i] == "pass" for i in LEVEL2_AUTO), st
    assert st["2.3"] == "needs_instructor"
    assert sorted(st) == [f"2.{i}" for i in range(1, 8)]  # its assignment's checks only
    sub = graded["subs"]["correct.ipynb"]
    assert sub["status"] == "graded" and sub["total"] == 6 and sub["needs_instructor"] == 1
    assert sub["out_of"] == 6 and sub["meta"]["assignment"] == "02_mechanics"
    assert sub["exercises"]["2.3"]["answer"]["derivation"].startswith("softmax(e + c)_i")
    assert sub["exercises"]["2.3"]["score"] is None
    assert sub["exercises"]["2.1"]["score"] == 1
    row = graded["rows"]["correct.ipynb"]
    assert row["total"] == "6" and row["out_of"] == "6" and row["2.1"] == "pass"
    assert row["3.1"] == ""  # another assignment's check


def test_wrong_notebook_fails_with_reasons(graded):
    ex = graded["subs"]["wrong.ipynb"]["exercises"]
    assert ex["2.1"]["status"] == "fail" and "sqrt(D_k)" in ex["2.1"]["message"]
    assert ex["2.6"]["status"] == "fail" and "without renormalising" in ex["2.6"]["message"]
    assert ex["2.4"]["status"] == "error" and "raised SyntaxError" in ex["2.4"]["message"]
    assert "defines `softmax_temperature" in ex["2.4"]["message"]
    assert ex["2.5"]["status"] == "not_attempted" and ex["2.3"]["status"] == "not_attempted"
    assert graded["subs"]["wrong.ipynb"]["total"] == 0


@pytest.mark.parametrize("name,fragment", [
    ("malformed.ipynb", "not valid JSON"),
    ("picture.ipynb", "not UTF-8"),
    ("essay.ipynb", "not valid JSON"),
    ("fake.submission.json", "not an attention-lab submission"),
])
def test_unreadable_files(graded, name, fragment):
    sub = graded["subs"][name]
    assert sub["status"] == "unreadable" and fragment in sub["message"]
    assert set(statuses(graded, name).values()) == {"unreadable"}
    assert graded["rows"][name]["status"] == "unreadable"


def test_empty_notebook(graded):
    sub = graded["subs"]["empty.ipynb"]
    assert sub["status"] == "graded" and "no code cells" in sub["message"]
    assert set(statuses(graded, "empty.ipynb").values()) == {"not_attempted"}


def test_infinite_loops(graded):
    sub = graded["subs"]["loop.ipynb"]
    st = statuses(graded, "loop.ipynb")
    assert st["2.6"] == "timeout" and "did not finish within" in sub["exercises"]["2.6"]["message"]
    assert all(st[i] == "pass" for i in LEVEL2_AUTO if i != "2.6"), st
    assert any(c["event"] == "timeout" for c in sub["cells"])


def test_kernel_crash(graded):
    sub = graded["subs"]["crash.ipynb"]
    st = statuses(graded, "crash.ipynb")
    assert st["2.5"] == "error" and "kernel died" in sub["exercises"]["2.5"]["message"]
    assert all(st[i] == "pass" for i in LEVEL2_AUTO if i != "2.5"), st
    assert any(c["event"] == "crash" for c in sub["cells"])
    # kernels: the crash (careful mode is switched on to pin the culprit), the crash cell found,
    # the harness running the crashing answer, the rest (the student's own check cells, which
    # would call the crashing answer too, are not run by the grader)
    assert sub["kernel_starts"] == 4


@pytest.mark.skipif(not CONTAINED, reason="needs namespaces (bubblewrap) to contain the notebook")
def test_file_deleting_and_signalling_notebook_is_contained(graded):
    sub = graded["subs"]["deleter.ipynb"]
    st = statuses(graded, "deleter.ipynb")
    assert all(st[i] == "pass" for i in LEVEL2_AUTO), (st, sub["message"])
    assert graded["sentinel_alive"], "a notebook killed a process outside its sandbox"
    assert sub["sandbox"]["isolation"] == "bubblewrap"
    assert {"pid", "net", "mnt", "user"} <= set(sub["sandbox"]["namespaces"])


def test_memory_bomb(graded):
    sub = graded["subs"]["membomb.ipynb"]
    st = statuses(graded, "membomb.ipynb")
    assert all(st[i] == "pass" for i in LEVEL2_AUTO), (st, sub["message"])
    assert [c["name"] for c in sub["cells"] if c["event"] == "error"] == ["MemoryError"] * 2
    assert sub["sandbox"]["memory_bytes"] == 1024 * 2 ** 20


def test_huge_output(graded):
    st = statuses(graded, "hugeoutput.ipynb")
    assert all(st[i] == "pass" for i in LEVEL2_AUTO), st


def test_tampering_changes_nothing(graded):
    sub = graded["subs"]["tampered.ipynb"]
    ex = sub["exercises"]
    assert ex["2.1"]["status"] == "fail" and "wrong at" in ex["2.1"]["message"]
    assert ex["2.6"]["status"] == "pass"  # the check cell was deleted: graded all the same
    # no results file to append a forged line to: the grader keeps the records (test_grading_
    # hostile.py forges on the channel itself)
    assert sub["message"] == "" and ex["2.1"]["status"] == "fail"


def test_processes_started_by_a_notebook_do_not_survive(graded):
    import psutil

    assert statuses(graded, "forker.ipynb")["2.1"] == "pass"
    left = []
    for p in psutil.process_iter(["cmdline"]):
        if MARK in " ".join(p.info["cmdline"] or []):
            left.append(p.pid)
    assert left == []


def test_submission_file_from_submit(graded):
    sub = graded["subs"]["level1.submission.json"]
    st = statuses(graded, "level1.submission.json")
    assert sub["status"] == "graded" and sub["message"] == ""
    assert all(st[i] == "pass" for i in ("1.1", "1.2", "1.3", "1.4"))


# ------------------------------------------------------------------ without a corpus
def test_whole_notebook_time_limit(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(1.5)") for _ in range(5)]
    nbformat.write(nb, str(tmp_path / "slow.ipynb"))
    report = batch.grade_folder(tmp_path, progress=False, seed=1,
                                  limits=batch.Limits(cell_timeout=5, timeout=3))
    (s,) = report.submissions
    assert s.status == "timeout"
    assert {g.status for g in s.exercises.values()} == {"timeout"}


@pytest.mark.parametrize("argv,fragment", [
    (["{missing}", "--out", "{out}"], "does not exist"),
    (["{file}", "--out", "{out}"], "is a file, not a folder"),
    (["{empty}", "--out", "{out}"], "no submissions in"),
    (["{subs}", "--out", "{file}"], "--out"),
    (["{subs}", "--out", "{out}", "--jobs", "0"], "expected a whole number >= 1"),
    (["{subs}", "--out", "{out}", "--seed", "-1"], "argument --seed: expected a whole number >= 0"),
    (["{subs}", "--out", "{out}", "--timeout", "-3"], "expected a number of seconds > 0"),
    (["{subs}", "--out", "{out}", "--cell-timeout", "soon"], "expected a number of seconds"),
    (["{subs}"], "the following arguments are required: --out"),
    (["{subs}", "--out", "{out}", "--memory-mb", "100"], "--memory-mb below 256"),
])
def test_bad_folder_or_argument(tmp_path, capsys, argv, fragment):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.ipynb").write_text("{}")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    (tmp_path / "afile").write_text("x")
    names = {"missing": tmp_path / "nope", "file": tmp_path / "afile", "empty": tmp_path / "empty",
             "subs": tmp_path / "subs", "out": tmp_path / "out"}
    args = [a.format(**names) for a in argv]
    assert batch.main(args) == 2
    err = capsys.readouterr().err
    assert fragment in err, err
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_submit_errors(tmp_path, capsys):
    assert submit.main([str(tmp_path / "missing.ipynb")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "notes.py").write_text("x = 1")
    assert submit.main([str(tmp_path / "notes.py")]) == 2
    assert "not its .py text twin" in capsys.readouterr().err
    (tmp_path / "bad.ipynb").write_text("{")
    assert submit.main([str(tmp_path / "bad.ipynb")]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert submit.main([str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    nb = tmp_path / "a.ipynb"
    assert submit.output_path(nb, f"{tmp_path}/new/") == tmp_path / "new" / "a.submission.json"
    with pytest.raises(submit.Refused, match="does not exist"):
        submit.output_path(nb, str(tmp_path / "none" / "a.json"))


def test_submit_says_why_an_answer_whose_cell_failed_was_not_checked(tmp_path, capsys):
    """A half-done notebook: a syntax error in the cell of ``dot_scores`` is an error whose
    reason is that cell (as the grader says), never 'error: not attempted'."""
    nb = replace_answer(load(SOL2), "dot_scores",
                        "def dot_scores(query, keys):\n    return keys @ query)")
    nbformat.write(nb, str(tmp_path / "hw.ipynb"))
    assert submit.main([str(tmp_path / "hw.ipynb"), "--cell-timeout", "20"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("2.1 "))
    assert "error" in line and "not attempted" not in line and "SyntaxError" in line, line
    saved = json.loads((tmp_path / "hw.submission.json").read_text())["results"]["2.1"]
    assert saved["status"] == "error" and "SyntaxError" in saved["summary"], saved


def test_submit_says_when_the_notebook_could_not_run_at_all(tmp_path, capsys, monkeypatch):
    """A kernel that cannot start (here: the lab's Python gone from its path) checks nothing: each
    exercise read 'error: error' and the student was told to hand the file in as if the errors
    were theirs. Each line now says the notebook did not run, and the end says nothing was
    checked and that this is no verdict on the answers."""
    nbformat.write(load(SOL1), str(tmp_path / "hw.ipynb"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "gone" / "python"))
    assert submit.main([str(tmp_path / "hw.ipynb"), "--cell-timeout", "20"]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("1.")]
    assert len(lines) == 4, out
    assert all(ln.endswith("error: the notebook did not run") for ln in lines), out
    assert "could not start" in out and "none of your answers was checked" in out, out


@pytest.mark.parametrize("out", ["a.ipynb", "b.ipynb", "handin.json", "handin"])
def test_submit_refuses_an_out_file_the_grader_would_not_read(tmp_path, capsys, out):
    """``--out`` names the file to hand in: a name the grader does not read as a submission file
    (it reads ``*.submission.json`` and ``*.ipynb``, a notebook) is refused before anything is
    run, and never overwrites a notebook (``--out a.ipynb`` replaced the student's own notebook
    by the submission file, which the grader then read as 'not a notebook')."""
    src = ROOT / "notebooks" / "exercises" / "01_intuition_exercises.ipynb"
    for name in ("a.ipynb", "b.ipynb"):
        (tmp_path / name).write_bytes(src.read_bytes())
    assert submit.main([str(tmp_path / "a.ipynb"), "--out", str(tmp_path / out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("submit: error:") and ".submission.json" in err, err
    for name in ("a.ipynb", "b.ipynb"):
        assert (tmp_path / name).read_bytes() == src.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.ipynb", "b.ipynb"]


@pytest.mark.parametrize("raw", [
    None, [], {"kind": "pass"}, {"kind": "calls", "calls": "x"},
    {"kind": "calls", "calls": [{"out": {"__ndarray__": {"dtype": "object", "shape": [1],
                                                         "data": [1]}}}]},
    {"kind": "calls", "calls": [{"out": {"__ndarray__": {"dtype": "float64", "shape": [3],
                                                         "data": [1.0]}}}]},
    {"kind": "calls", "calls": [{"out": {"__pickle__": "gASV"}}]},
    {"kind": "calls", "calls": [{}]},
    {"kind": "value", "value": [1, 2]},
])
def test_malformed_records_are_refused(raw):
    with pytest.raises(BadRecord):
        decode_record(raw)


def test_every_exercise_is_in_the_report_columns():
    assert len(IDS) == len(EXERCISES) == 25


def test_submission_meta_reaches_the_report_and_writers_can_be_added(tmp_path):
    """The seams of the course features: what is known about a submission besides its content
    (``Submission.meta``) is reported with its grade, and every writer of the list runs."""
    grader = batch.Batch(batch.Limits(), 1, tmp_path)
    meta = {"student": "alice", "student_from": "folder"}
    sub = S.Submission(tmp_path / "a.ipynb", "alice/a.ipynb", b"{", "0" * 64, meta=meta)
    g = grader.grade(0, sub)
    assert g.status == "unreadable" and g.as_dict()["meta"] == meta
    report = R.Report(str(tmp_path), [g], [], [], 1, batch.Limits(), "now", 0.0, 1)

    def roster(report, out):
        path = out / "roster.txt"
        path.write_text("\n".join(s.meta["student"] for s in report.submissions))
        return path

    written = outputs.write_report(report, tmp_path / "out",
                                   writers=(*outputs.REPORT_WRITERS, roster))
    assert [p.name for p in written] == ["grades.csv", "grades.json", "written.csv",
                                         "gradebook.csv", "lms", "feedback", "summary.html",
                                         "roster.txt"]
    assert json.loads(written[1].read_text())["submissions"][0]["meta"] == meta
    assert written[-1].read_text() == "alice"
    assert "meta" not in grader.grade(1, S.Submission(
        tmp_path / "b.ipynb", "b.ipynb", None, None, "could not be read")).as_dict()


def test_an_internal_error_grades_the_submissions_exercises_only(tmp_path, monkeypatch):
    """A grader bug fails the submission, not the batch, and its rows are the exercises of the
    submission's assignment, as for any other grade (not a row for every exercise)."""
    def broken(self, index, sub):
        raise RuntimeError("boom")

    monkeypatch.setattr(batch.Batch, "_grade", broken)
    grader = batch.Batch(batch.Limits(), 1, tmp_path)
    sub = S.Submission(tmp_path / "a.ipynb", "a.ipynb", b"{}", "0" * 64,
                       meta={"assignment": "02_mechanics"})
    g = grader.grade(0, sub)
    assert g.status == "error" and "internal grader error: RuntimeError: boom" in g.message
    level2 = {ex_id for ex_id in IDS if ex_id.startswith("2.")}
    assert set(g.exercises) == level2
    assert {e.status for e in g.exercises.values()} == {"error"}
