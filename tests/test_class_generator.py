"""The grading benchmark's class (benchmarks/class_generator.py): a "right" submission carries
every answer of the instructor's solution, although the solutions hold cells the student
notebooks do not (the model answers to the written exercises)."""

from __future__ import annotations

import json

import pytest

from benchmarks import class_generator as C


@pytest.mark.parametrize("stem", sorted(p.stem for p in C.EXERCISES.glob("*.ipynb")))
def test_a_right_submission_has_every_answer_of_the_solution(stem):
    student, answers = C._pair(stem)
    solution = json.loads((C.EXERCISES / "solutions" / f"{stem}_solutions.ipynb").read_text())
    given = {"".join(c["source"]) for c in student["cells"] if c["cell_type"] == "code"}
    needed = {"".join(c["source"]) for c in solution["cells"]
              if c["cell_type"] == "code" and "".join(c["source"]) not in given}
    assert needed and {student["cells"][i]["solution"] for i in answers} == needed
