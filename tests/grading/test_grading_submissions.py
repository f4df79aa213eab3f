"""Submission files as untrusted data: what ``submit`` writes and what the grader makes of any
bytes (a clear one-line reason for everything that is not a notebook, never a parser's exception)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import nbformat
import pytest

from _notebook_edits import load, replace_answer
from attention_lab.exercises.registry import IDS
from attention_lab.grading import report as R
from attention_lab.grading import submissions as S
from attention_lab.grading import submit


def test_submission_file_contents_and_tamper_evidence(tmp_path):
    nb_path = tmp_path / "x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), str(nb_path))
    text = nb_path.read_text()

    class G:
        exercises = {i: R.ExerciseGrade("not_attempted", "m", 0, "s") for i in IDS}

    sub = submit.build_submission("x.ipynb", text, G())
    assert sub["format"] == "attention-lab-submission" and sub["notebook"] == text
    assert sub["notebook_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert set(sub["results"]) == set(IDS) and sub["created"].endswith("+00:00")
    data = json.dumps(sub).encode()
    nb, notes = S.parse_submission("x.submission.json", data)
    assert notes == [] and nb.cells == []
    sub["results"]["2.1"]["status"] = "pass"  # a student edits the recorded results
    _, notes = S.parse_submission("x.submission.json", json.dumps(sub).encode())
    assert any("content hash" in n for n in notes)


@pytest.mark.parametrize("data,fragment", [
    (b"", "empty"),
    (b"\xff\xfe\x00", "not UTF-8"),
    (b"[1, 2]", "not a notebook"),
    (b'{"cells": "no"}', "not a notebook"),
    (b'{"cells": []}', "no 'nbformat' version"),
    (b'{"cells": [{"cell_type": "code", "source": 3}], "nbformat": 4, "nbformat_minor": 5, '
     b'"metadata": {}}', "not a readable notebook"),
    (b"[" * 100000, "nested too deeply"),
    # (these two were 'internal grader error' rows: a ValueError, a TypeError)
    (b'{"cells": [], "n": ' + b"9" * 5000 + b"}", "not valid JSON"),
    (b'{"cells": [{"cell_type": "code", "source": [1]}], "nbformat": 4, "nbformat_minor": 5, '
     b'"metadata": {}}', "not a readable notebook"),
])
def test_parse_submission_rejects_clearly(data, fragment):
    with pytest.raises(S.Unreadable, match=fragment):
        S.parse_submission("a.ipynb", data)


STUDENT_NB = Path(__file__).resolve().parents[2] / "notebooks" / "exercises" / \
    "02_mechanics_exercises.ipynb"


def student_notebook(tmp_path, **answers):
    """The level-2 student notebook in ``tmp_path`` with the cells defining ``answers`` replaced."""
    nb = load(STUDENT_NB)
    for name, source in answers.items():
        replace_answer(nb, name, source)
    path = tmp_path / STUDENT_NB.name
    nbformat.write(nb, str(path))
    return path, nb


def test_submit_names_a_broken_cell_as_a_reader_counts_cells_from_the_top(tmp_path, capsys):
    path, nb = student_notebook(tmp_path, padding_mask="def padding_mask(lengths, S)\n    return 1")
    top = 1 + next(i for i, c in enumerate(nb.cells) if "def padding_mask" in c.source)
    assert submit.main([str(path), "--student", "ada"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("2.5"))
    assert f"error: cell {top} raised SyntaxError" in line, line
    # not ipykernel's name for the cell's code ('(1255551527.py, line 1)'), nor cut mid-word
    assert "(line 1 of the cell)" in line and ".py," not in line, line
    assert line.endswith(" ...") and not line.endswith("paddi ..."), line
    assert "first cell to fail" not in out  # said once, on its exercise's line


def test_submitting_twice_with_the_same_id_leaves_the_notebook_alone(tmp_path, capsys):
    """The id is stored once; a second ``--student`` with the same id must not rewrite the
    notebook (JupyterLab would then ask whether to overwrite a file changed on disk)."""
    path, _ = student_notebook(tmp_path)
    assert submit.main([str(path), "--student", "ada"]) == 0
    assert "student id 'ada' recorded" in capsys.readouterr().out
    stored = path.stat().st_mtime_ns, path.read_bytes()
    assert submit.main([str(path), "--student", "ada"]) == 0
    out = capsys.readouterr().out
    assert "recorded" not in out and "student: ada" in out
    assert (path.stat().st_mtime_ns, path.read_bytes()) == stored


def test_submit_warns_when_the_notebook_was_saved_before_the_last_check(tmp_path, capsys,
                                                                        monkeypatch):
    """In JupyterLab a student checks an answer and runs submit before saving: the notebook on
    disk is older than the kernel's work, and submit says so (and not once it is saved)."""
    from attention_lab.exercises import check

    path, _ = student_notebook(tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))  # what jupyter_server gives its kernels
    saved = path.stat().st_mtime - 600
    os.utime(path, (saved, saved))  # saved ten minutes before the check below
    check("2.1", lambda query, keys: keys @ query, show=False)
    assert submit.main([str(path), "--student", "ada"]) == 0
    out = capsys.readouterr().out
    assert "after the notebook was last saved" in out and "(Ctrl+S) and run submit again" in out
    assert "recorded" not in out  # a changed file on disk would make that work harder to save
    assert json.loads(path.with_suffix(".submission.json").read_text())["notebook"].count("ada")
    os.utime(path)  # saved now
    assert submit.main([str(path), "--student", "ada"]) == 0
    out = capsys.readouterr().out
    assert "last saved" not in out and "student id 'ada' recorded" in out


def test_submit_names_the_first_cell_that_raised_even_when_it_defines_no_answer(tmp_path,
                                                                                 capsys):
    """A typo in the set-up cell: the answers that need its names fail with a NameError in their
    own cells; the cell that caused it is named too."""
    path, nb = student_notebook(tmp_path)
    setup = next(i for i, c in enumerate(nb.cells) if "import running_example" in c.source)
    nb.cells[setup].source = nb.cells[setup].source.replace("running_example", "runing_example")
    nbformat.write(nb, str(path))
    assert submit.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert f"cell {setup + 1} raised ImportError: cannot import name 'runing_example'" in out


def test_submit_warns_about_a_notebook_that_names_no_assignment(tmp_path, capsys):
    """Answers copied into a new notebook ('Untitled.ipynb'): neither its metadata nor its name
    says which assignment it is, and the student is told so before uploading it."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "def dot_scores(query, keys):\n    return keys @ query")])
    nbformat.write(nb, str(tmp_path / "Untitled.ipynb"))
    assert submit.main([str(tmp_path / "Untitled.ipynb")]) == 0
    out = capsys.readouterr().out
    assert "no assignment id in the notebook's metadata and none in its file name" in out
    assert "the exercise notebook you were given" in out


def test_a_submission_file_whose_notebook_holds_a_lone_surrogate_is_read():
    """``\\ud800`` in the submission file's JSON makes the notebook text hold a lone surrogate,
    which UTF-8 cannot encode: hashing it was an 'internal grader error' row; it is read (and
    does not match the hash ``submit`` recorded, which it could never have made)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1  # \ud800")])
    text = json.dumps(nb)
    data = json.dumps({"format": S.SUBMISSION_FORMAT, "notebook": text[:-1] + ' ,"x": "\ud800"}',
                       "notebook_sha256": "0"}).encode()
    parsed, notes = S.parse_submission("x.submission.json", data)
    assert parsed.cells[0].source == "x = 1  # ?"
    assert any("does not match its recorded hash" in n for n in notes)
