"""The grader against a fourth hostile student: what a student controls besides the kernel (the
names, times and nesting of files and folders, the text of a notebook and of a submission file,
the student id it claims) and a kernel deaf to signals, each in a grading of its own
(``python -m attention_lab grade``, in a subprocess). Each attack must cost at most its own row.

* Text that is not Unicode: Linux hands a file name that is not UTF-8 to Python as lone
  surrogates (``b"\\xff"`` is ``"\\udcff"``), and JSON's ``\\ud800`` escape makes one from the
  bytes of a notebook or of a kernel's message. A lone surrogate cannot be written as UTF-8: one
  such string anywhere in the report stopped the whole batch with a traceback before
  ``grades.csv`` was written (no grade for anyone); one in a cell's source made the job an
  'error' (jupyter_client cannot send it to the kernel). The instructor's round trip
  (``written.csv`` filled in and merged) must still work for everyone.
* A folder nested deeper than Python recurses, a file time past the year 9999, a 40 MB
  ``notebook_name``, and two claimed ids aimed at another student's feedback folder.
* An answer and a cell deaf to the signals that stop them, and outputs that hang the harness.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from attention_lab.grading import sandbox as S

from _notebook_edits import insert_after, load, replace_answer

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="the grader's sandbox is Linux-only"),
              pytest.mark.skipif(bool(S.isolation_problem()),
                                 reason=f"no isolation here: {S.isolation_problem()}")]

ROOT = Path(__file__).resolve().parents[2]
SOL2 = ROOT / "notebooks" / "exercises" / "solutions" / "02_mechanics_exercises_solutions.ipynb"
SEED = 17

#: a written answer and an exception message holding lone surrogates (made in the kernel)
UNICODE_ANSWERS = '''
shift_invariance = {"derivation": "x" + chr(0xD800) + " " + "word " * 12,
                    "consequence": "y" + chr(0xDCFF) + " " + "word " * 12}
'''
RAISES = 'def dot_scores(query, keys):\n    raise ValueError("no" + chr(0xDCFF))'
CELL_RAISES = 'raise KeyError("cell" + chr(0xD800))'


def _grade(sub: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    """``python -m attention_lab grade sub --out tmp_path/out`` (quiet, short limits), its
    scratch in ``tmp_path``."""
    return subprocess.run(
        [sys.executable, "-m", "attention_lab", "grade", str(sub), "--out", str(tmp_path / "out"),
         "--cell-timeout", "20", "--timeout", "120", "--quiet", *extra],
        env={**os.environ, "HOME": str(tmp_path), "TMPDIR": str(tmp_path)},
        capture_output=True, text=True, timeout=600)


def _write_ascii(nb, path: Path) -> None:
    """``nb`` as JSON with ``\\uXXXX`` escapes (a lone surrogate stays one when read back)."""
    path.write_text(json.dumps(nb), encoding="ascii")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile4")
    sub, out = tmp / "subs", tmp / "out"
    sub.mkdir()
    raw = os.fsencode(sub)
    nbformat.write(load(SOL2), str(sub / "honest.ipynb"))
    shutil.copy(SOL2, raw + b"/name_\xff\xfe.ipynb")  # a file name that is not UTF-8
    os.mkdir(raw + b"/folder_\xff")  # a student folder whose name is not UTF-8
    shutil.copy(SOL2, raw + b"/folder_\xff/nb.ipynb")
    meta = insert_after(load(SOL2), "dot_scores", "# a character pasted in halves: \ud800")
    meta.metadata.setdefault("attention_lab", {})["student"] = "al\ud800ice"
    _write_ascii(meta, sub / "metadata_id.ipynb")
    kernel = insert_after(replace_answer(load(SOL2), "dot_scores", RAISES), "shift_invariance",
                          UNICODE_ANSWERS, CELL_RAISES)
    nbformat.write(kernel, str(sub / "kernel_text.ipynb"))
    (Path(os.fsdecode(raw + b"/notes_\xff.txt"))).write_text("not a notebook")  # skipped
    upload = Path(os.fsdecode(raw + b"/Jane Doe_12345_assignsubmission_file_"))
    upload.mkdir()
    Path(os.fsdecode(os.fsencode(upload) + b"/essay_\xff.pdf")).write_bytes(b"%PDF")
    done = subprocess.run(
        [sys.executable, "-m", "attention_lab", "grade", str(sub), "--out", str(out),
         "--jobs", "2", "--cell-timeout", "20", "--timeout", "120", "--seed", str(SEED)],
        env={**os.environ, "HOME": str(tmp), "TMPDIR": str(tmp)},
        capture_output=True, timeout=600, cwd=tmp)
    yield {"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "out": out,
           "tmp": tmp}


def test_text_that_is_not_unicode_costs_at_most_its_own_row(graded):
    assert graded["code"] == 0, graded["stderr"].decode("utf-8", "replace")[-3000:]
    out = graded["out"]
    for path in [*out.glob("*.csv"), *out.glob("*.json"), *out.rglob("*.html")]:
        path.read_bytes().decode("utf-8")  # every file the grader wrote is UTF-8 text
    rows = {r["file"]: r for r in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    assert len(rows) == 6, sorted(rows)
    for file, row in rows.items():
        if file == "Jane Doe_12345_assignsubmission_file_":
            assert row["status"] == "no_notebook", row
        elif file != "kernel_text.ipynb":  # honest notebooks under odd names and ids
            assert (row["status"], row["total"]) == ("graded", row["out_of"]), row
    assert rows["kernel_text.ipynb"]["2.1"] == "error"
    assert rows["kernel_text.ipynb"]["2.3"] == "needs_instructor"


def test_the_written_answers_of_such_a_class_still_merge(graded):
    out = graded["out"]
    text = (out / "written.csv").read_text(encoding="utf-8")
    table = list(csv.reader(io.StringIO(text)))
    header = table[0]
    for row in table[1:]:
        row[header.index("score")] = "1"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(table)
    filled = graded["tmp"] / "filled.csv"
    filled.write_text(buf.getvalue(), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "attention_lab", "merge", str(out), str(filled)],
                          capture_output=True, text=True, errors="replace", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    hand = [e["status"] for s in report["submissions"] for e in s["exercises"].values()
            if e["status"] in ("hand_graded", "needs_instructor")]
    assert hand and set(hand) == {"hand_graded"}, hand


def test_a_folder_nested_deeper_than_python_recurses_is_a_row_of_its_own(tmp_path):
    """A student folder holding 1,500 nested folders (with a notebook at the bottom) beside an
    honest notebook: the old grader's walk of the folder recursed once per level and stopped the
    batch with a RecursionError before grading anything."""
    sub = tmp_path / "subs"
    sub.mkdir()
    nbformat.write(load(SOL2), str(sub / "honest.ipynb"))
    deep = Path("bob", *["d"] * 1500)
    levels = [sub / Path(*deep.parts[:n]) for n in range(1, len(deep.parts) + 1)]
    for level in levels:  # (os.makedirs recurses, and so does shutil.rmtree before Python 3.12:
        level.mkdir()      # the tree is removed here, or pytest's clean-up of old runs fails)
    (sub / deep / "nb.ipynb").write_text("{}")
    try:
        done = _grade(sub, tmp_path)
    finally:
        (sub / deep / "nb.ipynb").unlink()
        for level in reversed(levels):
            level.rmdir()
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["file"]: r for r in csv.DictReader(io.StringIO(
        (tmp_path / "out" / "grades.csv").read_text()))}
    assert rows["honest.ipynb"]["total"] == rows["honest.ipynb"]["out_of"]
    assert rows[str(deep / "nb.ipynb")]["status"] == "unreadable"


def test_a_submission_files_notebook_name_puts_no_megabytes_into_the_report(tmp_path):
    """A ``.submission.json`` names its notebook (``notebook_name``, written by ``submit``, a file
    name of at most 255 bytes); a forged one of 40 MB naming two assignments was quoted whole in
    the row's note: 40 MB in grades.json per such file (and 0.9 GB of the grader's memory)."""
    sub = tmp_path / "subs"
    sub.mkdir()
    nb = load(SOL2)
    nb.metadata.pop("attention_lab", None)  # (so that the file names say the assignment)
    forged = {"format": "attention-lab-submission", "notebook": nbformat.writes(nb),
              "notebook_name": "02_mechanics 03_maths_and_code " * 1_300_000}
    (sub / "x.submission.json").write_text(json.dumps(forged))
    done = _grade(sub, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    report = tmp_path / "out" / "grades.json"
    (row,) = json.loads(report.read_text())["submissions"]
    assert "names several assignments" in row["meta"]["assignment_note"]
    assert report.stat().st_size < 2 ** 20


def test_no_student_id_can_take_another_students_feedback_folder(tmp_path):
    """Without a roster the id a notebook stores is the student's, so a student picks ids. With
    two notebooks, one claiming ``bob`` and one the folder name that ``Bob`` (the victim) gets
    once his id clashes with ``bob`` (``Bob-`` and 8 hex digits of its hash), the old grader gave
    the victim and the second id one feedback folder: index.csv sent both the page written last,
    the victim's grade and written answers to the student who claimed it."""
    import hashlib

    from attention_lab.grading.students import path_names

    sub = tmp_path / "subs"
    sub.mkdir()
    claims = {"victim": "Bob", "a1": "bob", "a2": "Bob-" + hashlib.sha256(b"Bob").hexdigest()[:8]}
    for file, sid in claims.items():
        nb = load(SOL2)
        nb.metadata.setdefault("attention_lab", {})["student"] = sid
        nbformat.write(nb, str(sub / f"{file}.ipynb"))
    done = _grade(sub, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    feedback = tmp_path / "out" / "feedback"
    index = list(csv.DictReader(io.StringIO((feedback / "index.csv").read_text())))
    assert sorted(r["student"] for r in index) == sorted(claims.values())
    assert len({r["page"].casefold() for r in index}) == len(index), index
    for r in index:
        assert f"for student <strong>{r['student']}</strong>" in (feedback / r["page"]).read_text()
    # a name a student must find by brute force (a hash's prefix) costs 2 ** 64 tries, not 2 ** 32
    hashed = path_names(["Bob Smith"])["Bob Smith"]
    assert len(hashed) - hashed.rindex("Bob_Smith") - len("Bob_Smith") >= 17, hashed


def test_a_file_time_past_the_year_9999_is_a_row_of_its_own(tmp_path):
    """A student who hands in a folder sets its files' times (``touch``; a copy that keeps them,
    as nbgrader's exchange and ``cp -a`` do, brings them along); ext4 stops at 2446, but tmpfs
    and btrfs keep any 64-bit time. A notebook dated 2^40 seconds after 1970 (the year 36812)
    stopped the old grader with 'ValueError: year 36812 is out of range' before any grade."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no tmpfs at /dev/shm")
    import tempfile

    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        sub = Path(shm) / "subs"
        (sub / "mallory").mkdir(parents=True)
        (sub / "alice").mkdir()
        nbformat.write(load(SOL2), str(sub / "alice" / "nb.ipynb"))
        nbformat.write(load(SOL2), str(sub / "mallory" / "nb.ipynb"))
        os.utime(sub / "mallory" / "nb.ipynb", (2 ** 40, 2 ** 40))
        if os.stat(sub / "mallory" / "nb.ipynb").st_mtime < 2 ** 40:
            pytest.skip("this tmpfs does not keep such a time")
        done = _grade(sub, tmp_path, "--deadline", "2030-01-01")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(
        (tmp_path / "out" / "grades.csv").read_text()))}
    assert rows["alice"]["total"] == rows["alice"]["out_of"] and rows["alice"]["late_by"] == ""
    assert rows["mallory"]["status"] == "graded" and rows["mallory"]["late_by"]


BLOCKS_SIGNALS = '''
import signal
def dot_scores(query, keys):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGINT, signal.SIGTERM})
    while True:
        pass
'''
IGNORES_SIGNALS = '''
import signal
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
    signal.signal(s, signal.SIG_IGN)
while True:
    pass
'''

#: outputs that hang the harness as it records them: an ndarray subclass whose every way out is an
#: endless loop (its values are right), and an object whose finaliser never returns
STUCK_OUTPUTS = ("softmax_temperature", '''
import numpy as np
_right = softmax_temperature
class Endless(np.ndarray):
    def tolist(self):
        while True:
            pass
    copy = __array__ = __reduce__ = tolist
def softmax_temperature(scores, temperature):
    return _right(scores, temperature).view(Endless)
'''), ("padding_mask", '''
_right_mask = padding_mask
class Haunted:
    def __del__(self):
        while True:
            pass
def padding_mask(lengths, S):
    keep = Haunted()
    return _right_mask(lengths, S)
''')


def test_a_kernel_deaf_to_signals_or_stuck_in_its_outputs_costs_only_its_own_answers(tmp_path):
    """The harness stops a slow answer with SIGALRM and nbclient a slow cell with SIGINT: an
    answer that blocks both and loops, a cell that ignores them and loops, and outputs that loop
    when the harness records them must still end within the limits (the grader replaces the
    kernel), costing only their own answers, beside an honest notebook graded as alone."""
    sub = tmp_path / "subs"
    sub.mkdir()
    nbformat.write(load(SOL2), str(sub / "honest.ipynb"))
    deaf = insert_after(replace_answer(load(SOL2), "dot_scores", BLOCKS_SIGNALS), "dot_scores",
                        IGNORES_SIGNALS)
    for name, source in STUCK_OUTPUTS:
        insert_after(deaf, name, source)
    nbformat.write(deaf, str(sub / "deaf.ipynb"))
    done = subprocess.run(
        [sys.executable, "-m", "attention_lab", "grade", str(sub), "--out", str(tmp_path / "out"),
         "--jobs", "2", "--cell-timeout", "8", "--timeout", "120", "--quiet"],
        env={**os.environ, "HOME": str(tmp_path), "TMPDIR": str(tmp_path)},
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["file"]: r for r in csv.DictReader(io.StringIO(
        (tmp_path / "out" / "grades.csv").read_text()))}
    assert rows["honest.ipynb"]["total"] == rows["honest.ipynb"]["out_of"]
    deaf_row = rows["deaf.ipynb"]
    assert (deaf_row["2.1"], deaf_row["2.5"]) == ("timeout", "timeout"), deaf_row
    assert all(deaf_row[i] == "pass" for i in ("2.2", "2.4", "2.6", "2.7")), deaf_row
