"""``python -m attention_lab release OUT_DIR``: the student bundle, never the solutions.

The answer code is found independently of the authoring markers: every line of a solution
notebook's cells that its student notebook does not have."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from attention_lab.grading import release

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "notebooks" / "exercises"
#: answer lines that the taught material also holds word for word: a generic line of the
#: package's own code (the package has to be in the bundle for the notebooks to run) and a line
#: the level-3 notebook teaches
SHARED = {"w = np.asarray(weights, dtype=float)": ("attention_lab/",),
          "scores = keys @ query": ("notebooks/01_intuition.ipynb",
                                    "notebooks/03_maths_and_code.ipynb")}


def cell_lines(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    return [ln.strip() for c in nb["cells"] for ln in "".join(c["source"]).splitlines()]


def answer_lines() -> set[str]:
    """Lines only the solution notebooks have (code and model answers), minus bare brackets and
    the authoring tool's markers."""
    lines = set()
    for sol in sorted((EXERCISES / "solutions").glob("*_solutions.ipynb")):
        student = EXERCISES / sol.name.replace("_solutions", "")
        lines |= set(cell_lines(sol)) - set(cell_lines(student))
    return {ln for ln in lines if re.search(r"\w", ln) and "SOLUTION" not in ln}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "course-bundle"
    assert release.main([str(out)]) == 0
    return out


def test_the_bundle_holds_what_students_need(bundle):
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    notebooks = [f for f in files if f.endswith(".ipynb")]
    assert notebooks == ["notebooks/01_intuition.ipynb", "notebooks/02_mechanics.ipynb",
                         "notebooks/03_maths_and_code.ipynb", "notebooks/04_research.ipynb",
                         "notebooks/exercises/01_intuition_exercises.ipynb",
                         "notebooks/exercises/02_mechanics_exercises.ipynb",
                         "notebooks/exercises/03_maths_and_code_exercises.ipynb",
                         "notebooks/exercises/04_research_exercises.ipynb"]
    assert {"README.md", "requirements.txt", "pyproject.toml", "attention_lab/grading/submit.py",
            "attention_lab/toy/weights/reversal_dot.pt"} <= set(files)
    assert not [f for f in files if "solution" in f.lower() or "__pycache__" in f
                or f.startswith(("tests/", "benchmarks/"))]
    for nb in notebooks[4:]:
        meta = json.loads((bundle / nb).read_text())["metadata"]
        assert meta["attention_lab"]["assignment"] == Path(nb).name.split("_exercises")[0]
    pins = (bundle / "requirements.txt").read_text()
    assert "torch==" in pins and "-e ." in pins and "pytest" not in pins
    readme = (bundle / "README.md").read_text()
    assert "submit 02_mechanics_exercises.ipynb --student YOUR_ID" in readme
    assert "{{" not in readme and "{%" not in readme


def test_no_answer_code_of_the_solution_notebooks_is_anywhere_in_the_bundle(bundle):
    answers = answer_lines()
    assert len(answers) > 150  # the check has teeth: code lines and model answers
    found = {}
    for path in (p for p in bundle.rglob("*") if p.is_file()):
        text = set(release.searchable_text(path).splitlines())
        for line in answers & text:
            found.setdefault(line, []).append(path.relative_to(bundle).as_posix())
    assert set(found) <= set(SHARED), {k: v for k, v in found.items() if k not in SHARED}
    for line in found:  # and those only where the taught material has them
        assert all(p.startswith(SHARED[line]) for p in found[line]), (line, found[line])


def test_the_guard_refuses_a_bundle_with_a_solution_in_it(tmp_path, monkeypatch, capsys):
    build = release.build

    def careless(dest):
        build(dest)
        shutil.copy(EXERCISES / "solutions" / "02_mechanics_exercises_solutions.ipynb",
                    dest / "notebooks" / "exercises" / "extra.ipynb")

    monkeypatch.setattr(release, "build", careless)
    assert release.main([str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "a solution would be in the bundle (notebooks/exercises/extra.ipynb" in err
    assert sorted(tmp_path.iterdir()) == []  # nothing written, no scratch left


def test_release_refuses_a_used_folder_and_stale_student_notebooks(tmp_path, monkeypatch,
                                                                   capsys):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "notes.txt").write_text("mine")
    assert release.main([str(tmp_path / "used")]) == 2
    assert "is not an empty folder" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "used").iterdir()] == ["notes.txt"]
    stale = tmp_path / "stale.py"
    stale.write_text("# %%\nx = 1\n")
    monkeypatch.setattr(release.authoring, "student_path", lambda sol: stale)
    assert release.main([str(tmp_path / "new")]) == 2
    assert "authoring build --execute" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
