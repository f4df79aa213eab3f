"""The instructors' guide (``docs/instructors/routes.md``): the lab's own route run as written,
every command block run by a test, and the guide's Gradescope points table as the registry has
it. (The nbgrader and Gradescope blocks run in ``test_export_nbgrader.py`` and
``test_export_gradescope.py``.)"""

from __future__ import annotations

import csv
import re
import shutil

import _routes

from attention_lab.grading.assignments import ASSIGNMENTS, points

RUN_BY = {"route-lab-release": "test_instructor_routes.py",
          "route-lab-grade": "test_instructor_routes.py",
          "route-nbgrader-release": "test_export_nbgrader.py",
          "route-nbgrader-grade": "test_export_nbgrader.py",
          "route-nbgrader-check": "test_export_nbgrader.py",
          "route-gradescope-build": "test_export_gradescope.py",
          "route-gradescope-try": "test_export_gradescope.py"}


def test_every_block_of_the_guide_is_run_by_a_test():
    assert set(_routes.blocks()) == set(RUN_BY)
    here = _routes.ROOT / "tests" / "grading"
    for name, module in RUN_BY.items():
        assert f'_routes.run("{name}"' in (here / module).read_text(), (name, module)


def test_the_labs_own_route_as_written(tmp_path):
    _routes.run("route-lab-release", tmp_path)
    bundle = tmp_path / "student-bundle"
    assert (bundle / "notebooks" / "exercises" / "02_mechanics_exercises.ipynb").exists()
    assert not list(bundle.rglob("*solutions*"))
    # a student's hand-in, collected into one folder per student
    (tmp_path / "submissions" / "alice").mkdir(parents=True)
    shutil.copy(_routes.ROOT / "notebooks" / "exercises" / "solutions" /
                "02_mechanics_exercises_solutions.ipynb",
                tmp_path / "submissions" / "alice" / "02_mechanics_exercises.ipynb")
    _routes.run("route-lab-grade", tmp_path)
    rows = list(csv.DictReader((tmp_path / "grades" / "gradebook.csv").open()))
    assert [r["student"] for r in rows] == ["alice"]
    assert rows[0]["02_mechanics auto"] == str(ASSIGNMENTS["02_mechanics"].auto_points)
    assert (tmp_path / "grades" / "feedback" / "alice" / "02_mechanics.html").exists()


def test_the_guides_gradescope_points_are_the_registrys():
    text = _routes.GUIDE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (\d+) \| (.*) \|$", text, re.M)
    assert {a for a, _, _ in rows} == set(ASSIGNMENTS)
    for a, auto, manual in rows:
        written = [f"{ex.id} ({points(ex)})" for ex in ASSIGNMENTS[a].exercises if not ex.auto]
        assert int(auto) == ASSIGNMENTS[a].auto_points
        assert manual == (", ".join(written) or "none"), a
