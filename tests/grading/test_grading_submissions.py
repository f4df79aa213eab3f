"""Submission files as untrusted data: what ``submit`` writes and what the grader makes of any
bytes (a clear one-line reason for everything that is not a notebook, never a parser's exception)."""

from __future__ import annotations

import hashlib
import json

import nbformat
import pytest

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
])
def test_parse_submission_rejects_clearly(data, fragment):
    with pytest.raises(S.Unreadable, match=fragment):
        S.parse_submission("a.ipynb", data)
