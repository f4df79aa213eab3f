"""The exercise notebooks: student versions are generated from the instructor solutions, place
every exercise of their level with a stub and a check cell, and their stored outputs (which nbval
re-executes and compares) show every check passing in the solutions and every exercise 'not
attempted' in the student versions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import _docs

from attention_lab.exercises import EXERCISES, NOTEBOOKS
from attention_lab.exercises.authoring import (FOLDER, STUB, MarkerError, solution_files,
                                               student_path, student_version)
from attention_lab.exercises.registry import by_level

LEVELS = sorted(NOTEBOOKS)


def outputs_text(ipynb: Path) -> list[str]:
    nb = json.loads(ipynb.read_text())
    texts = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts = []
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")) or "".join(
                out.get("data", {}).get("text/plain", "")))
        texts.append("\n".join(parts))
    return texts


def test_four_solution_notebooks_and_their_student_versions():
    sols = solution_files()
    assert [p.name for p in sols] == [f"{NOTEBOOKS[lv]}_solutions.py" for lv in LEVELS]
    for sol in sols:
        student = student_path(sol)
        assert student.read_text() == student_version(sol.read_text()), (
            f"{student.name} is out of date: run python -m attention_lab.exercises.authoring build")
        for p in (sol, student):
            assert p.with_suffix(".ipynb").exists()


@pytest.mark.parametrize("level", LEVELS)
def test_each_exercise_of_the_level_has_a_stub_and_a_check(level):
    text = (FOLDER / f"{NOTEBOOKS[level]}.py").read_text()
    sol = (FOLDER / "solutions" / f"{NOTEBOOKS[level]}_solutions.py").read_text()
    assert "Instructor solutions" in sol and "Instructor solutions" not in text
    assert "BEGIN SOLUTION" not in text and "#>" not in text
    positions = []
    for ex in by_level(level):
        call = f'check("{ex.id}", ' + (f"({', '.join(ex.answer_names)})" if len(ex.answer_names) > 1
                                       else ex.answer) + ")"
        assert call in text, call
        assert re.search(rf"\(checks? (\d\.\d and )?{re.escape(ex.id)}\b", text), ex.id
        assert f"Exercise {ex.chapter} " in text
        positions.append(text.index(call))
        for name in ex.answer_names:
            assert (f"def {name}(" in text) or (f"{name} = " in text), name
    assert positions == sorted(positions), "checks appear in the registry's order"
    functions = sum(len(ex.function_names) for ex in by_level(level)
                    if ex.kind in ("function", "test"))
    assert text.count(STUB) == functions
    assert text.rstrip().endswith("status()")


@pytest.mark.parametrize("level", LEVELS)
def test_stored_outputs_show_solutions_passing_and_students_not_attempted(level):
    sol = outputs_text(FOLDER / "solutions" / f"{NOTEBOOKS[level]}_solutions.ipynb")
    stu = outputs_text(FOLDER / f"{NOTEBOOKS[level]}.ipynb")
    for ex in by_level(level):
        head = f"{ex.id} {ex.title} ({ex.answer_label}): "
        want = "needs instructor" if ex.kind == "written" else "pass"
        assert any(t.startswith("✔ " + head + want) or t.startswith("✎ " + head + want)
                   for t in sol), (ex.id, want)
        assert any(t.startswith("○ " + head + "not attempted") for t in stu), ex.id
    n_auto = sum(ex.auto for ex in by_level(level))
    assert f"{n_auto} of {n_auto} checked exercises pass" in sol[-1]
    assert f"0 of {n_auto} checked exercises pass" in stu[-1]


def test_marker_errors():
    with pytest.raises(MarkerError, match="not closed"):
        student_version("x = 1\n# BEGIN SOLUTION\ny = 2\n")
    with pytest.raises(MarkerError, match="without BEGIN"):
        student_version("# END SOLUTION\n")
    with pytest.raises(MarkerError, match="inside another"):
        student_version("# BEGIN SOLUTION\n# BEGIN SOLUTION\n")


def test_student_version_stubs():
    sol = ("def f(x):\n    # BEGIN SOLUTION\n    return x\n    # END SOLUTION\n"
           "# BEGIN SOLUTION\n#> value = ...\nvalue = 3\n# END SOLUTION\n"
           "# %% [markdown]\n# text\n# <!-- BEGIN SOLUTION -->\n# secret\n# <!-- END SOLUTION -->\n")
    assert student_version(sol) == (f"def f(x):\n    {STUB}\nvalue = ...\n"
                                    "# %% [markdown]\n# text\n")


def test_every_exercise_is_placed_in_exactly_one_notebook():
    seen = {}
    for level in LEVELS:
        text = (FOLDER / f"{NOTEBOOKS[level]}.py").read_text()
        for ex_id in EXERCISES:
            if f'check("{ex_id}"' in text:
                seen.setdefault(ex_id, []).append(level)
    assert seen == {i: [EXERCISES[i].level] for i in EXERCISES}


def test_the_sites_table_maps_every_chapter_exercise_to_its_notebook_and_checks():
    section = _docs.section("students/exercises.md", "Exercises")
    rows = [ln for ln in section.splitlines() if re.match(r"\| \d+ \|", ln)]
    assert len(rows) == 22
    for n, row in enumerate(rows, 1):
        cells = [c.strip() for c in row.strip("|").split("|")]
        exs = [ex for ex in EXERCISES.values() if ex.chapter == n]
        assert cells[0] == str(n)
        assert cells[2] == f"`{NOTEBOOKS[exs[0].level]}`"
        assert re.findall(r"`(\d\.\d)`", cells[3]) == [ex.id for ex in exs]
        for ex in exs:
            assert f"`{ex.answer_label}`" in cells[3]


@pytest.mark.parametrize("level", LEVELS)
def test_the_hand_in_line_can_be_followed_as_written(level):
    """A student types the header's command in JupyterLab's terminal, which opens in the lab's
    top folder with no venv on its PATH: the line says to save first, where to run it, and that
    the Python is the README's."""
    text = (FOLDER / f"{NOTEBOOKS[level]}.py").read_text()
    header = re.split(r"^# %%$", text, flags=re.M)[0]  # up to the first code cell
    for said in ("Ctrl+S", "in `notebooks/exercises/`", f"submit {NOTEBOOKS[level]}.ipynb",
                 "README"):
        assert said in header, said


def test_the_hand_in_command_runs_with_the_python_path_the_header_gives(tmp_path):
    """The header's command from `notebooks/exercises/`, `../../.venv/bin/python -m attention_lab
    submit ...`, makes the lab's Python a path through the student's folder (`.../exercises/../..
    /.venv/bin/python`). The grading kernel starts in a sandbox where that folder is not mounted:
    the path must still lead to the Python, or every exercise is 'error' and the kernel never
    starts. Here the same kind of path, relative, leads from the scratch folder to this test's Python."""
    import os
    import subprocess
    import sys

    from attention_lab.grading.sandbox import isolation_problem

    if isolation_problem() and os.environ.get("ATTENTION_LAB_REQUIRE_SANDBOX") != "1":
        pytest.skip(f"no sandbox here: {isolation_problem()}")
    folder = tmp_path / "notebooks" / "exercises"
    folder.mkdir(parents=True)
    name = f"{NOTEBOOKS[2]}.ipynb"
    (folder / name).write_bytes((FOLDER / name).read_bytes())
    python = os.path.relpath(sys.executable, folder)  # ../../../.., as typed: Python keeps it
    assert python.startswith("../") and os.path.samefile(folder / python, sys.executable)
    out = subprocess.run([python, "-m", "attention_lab", "submit", name, "--student", "ada"],
                         cwd=folder, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "could not start" not in out.stdout, out.stdout
    statuses = [ln for ln in out.stdout.splitlines() if re.match(r"2\.\d ", ln)]
    assert len(statuses) == 7 and not any("error" in ln for ln in statuses), out.stdout
