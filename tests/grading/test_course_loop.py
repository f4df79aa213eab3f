"""The whole course loop, run from the README's commands: release -> students fill in their
notebooks -> ``submit --student`` -> ``grade`` -> the instructor fills in written.csv -> ``merge``
-> the gradebook and the feedback pages, then a regrade with the same seed gives identical files.

The commands are read from the README ("Instructors: running a course") and run as written, with
the folder and file names replaced by this test's."""

from __future__ import annotations

import csv
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

import _docs

from attention_lab.grading import batch, merge, release, submit
from attention_lab.grading._csv import csv_value
from attention_lab.grading.runner import defined_names
from attention_lab.grading.students import path_names

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the grader's sandbox is Linux-only")

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "notebooks" / "exercises" / "solutions"
COMMANDS = {"release": release.main, "submit": submit.main, "grade": batch.main,
            "merge": merge.main}


def readme_commands() -> list[list[str]]:
    section = _docs.section("instructors/course.md", "Running a course")
    block = re.search(r"```bash\n(.+?)\n```", section, re.S).group(1)
    return [shlex.split(ln)[3:] for ln in block.splitlines()
            if ln.startswith("python -m attention_lab ")]


def run(command: list[str], **replace) -> int:
    """Run one README command (``[name, *args]``) with its placeholders replaced."""
    name, *args = command
    return COMMANDS[name]([str(replace.get(a, a)) for a in args])


def answer_cells(nb, ids_to_names: dict[str, tuple]) -> None:
    """Copy the solution's answer cells for the given names into ``nb`` (a student notebook)."""
    stem = nb.metadata["attention_lab"]["assignment"]
    sol = nbformat.read(next(SOLUTIONS.glob(f"{stem}_exercises_solutions.ipynb")), as_version=4)
    for names in ids_to_names.values():
        src = next(c.source for c in sol.cells if c.cell_type == "code"
                   and defined_names(c.source, names))
        cell = next(c for c in nb.cells if c.cell_type == "code" and defined_names(c.source, names))
        cell.source = src


def set_answer(nb, name: str, source: str) -> None:
    cell = next(c for c in nb.cells if c.cell_type == "code" and defined_names(c.source, [name]))
    cell.source = source


LEVEL2 = {"2.1": ["dot_scores"], "2.2": ["softmax_by_hand"], "2.3": ["shift_invariance"],
          "2.4": ["softmax_temperature"], "2.4, comparison": ["temperature_comparison"],
          "2.5": ["padding_mask"], "2.6": ["masked_softmax"], "2.7": ["local_attention"],
          "2.7, comparison": ["window_comparison"]}
LEVEL1 = {"1.1": ["parts"], "1.2": ["context_vector"], "1.3": ["in_convex_hull"],
          "1.4": ["test_query_dependence"]}


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: csv_value(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def files_of(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.name != "grades.json"}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("course")
    cmd = {c[0]: c for c in readme_commands()}
    assert [c[0] for c in readme_commands()] == ["release", "submit", "grade", "merge"]
    assert "--student" in cmd["submit"] and "--seed" in cmd["grade"]
    bundle, subs, grades = tmp / "bundle", tmp / "submissions", tmp / "grades"
    assert run(cmd["release"], **{"course-bundle/": bundle}) == 0
    given = bundle / "notebooks" / "exercises"

    def student_copy(who: str, stem: str):
        (tmp / "home" / who).mkdir(parents=True, exist_ok=True)
        home = tmp / "home" / who / f"{stem}.ipynb"
        return nbformat.read(given / f"{stem}.ipynb", as_version=4), home

    def hand_in(who: str, nb, path: Path, dest: Path) -> None:
        """Submit, then upload: into a student folder, or flat under the name an LMS gives."""
        nbformat.write(nb, str(path))
        assert run(cmd["submit"], **{"02_mechanics_exercises.ipynb": path, "alice": who}) == 0
        made = path.with_name(path.stem + ".submission.json")
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(made, dest / (made.name if dest != subs else f"{path.parent.name}_{made.name}"))

    subs.mkdir()
    nb, path = student_copy("alice", "02_mechanics_exercises")  # all right, handed in flat
    answer_cells(nb, LEVEL2)
    hand_in("alice", nb, path, subs)
    nb, path = student_copy("bob", "02_mechanics_exercises")  # partly done, one mistake
    answer_cells(nb, {"2.1": LEVEL2["2.1"]})
    set_answer(nb, "masked_softmax", "def masked_softmax(scores, mask):\n"
                                     "    e = np.exp(scores - scores.max(axis=-1, keepdims=True))\n"
                                     "    return e / e.sum(axis=-1, keepdims=True) * mask\n\n"
                                     "def test_masked_softmax(masked_softmax):\n"
                                     "    return True")
    set_answer(nb, "shift_invariance", 'shift_invariance = {"derivation": "exp(e + c) = '
                                       'exp(c) exp(e), and exp(c) cancels", "consequence": ""}')
    hand_in("Bob Ng", nb, path, subs)
    nb, path = student_copy("carol", "02_mechanics_exercises")  # twice, in an LMS folder
    early = nbformat.read(given / "02_mechanics_exercises.ipynb", as_version=4)
    set_answer(early, "dot_scores", "def dot_scores(query, keys):\n    return keys @ query / 2")
    (subs / "carol").mkdir()
    nbformat.write(early, str(subs / "carol" / "attempt1_02_mechanics_exercises.ipynb"))
    os.utime(subs / "carol" / "attempt1_02_mechanics_exercises.ipynb", (1.6e9, 1.6e9))
    answer_cells(nb, {k: v for k, v in LEVEL2.items() if k != "2.3"})
    hand_in("carol", nb, path, subs / "carol")
    nb, path = student_copy("dave", "01_intuition_exercises")  # another assignment
    answer_cells(nb, LEVEL1)
    hand_in("dave", nb, path, subs)

    assert run(cmd["grade"], **{"submissions/": subs, "grades/": grades}) == 0
    graded = {"rows": read_csv(grades / "grades.csv"), "written": read_csv(grades / "written.csv")}
    rows = graded["written"]
    for row in rows:  # the instructor grades the written answers in a spreadsheet
        row["score"], row["comment"] = {"alice": ("3.5", "Clear; say why c may be negative."),
                                        "Bob Ng": ("1", "Only the first step.")}[row["student"]]
    with open(grades / "written.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert run(cmd["merge"], **{"grades/": grades}) == 0
    # regrade the same folder with the same seed, merging the same hand scores
    again = tmp / "again"
    assert batch.main([*(str(subs if a == "submissions/" else again if a == "grades/" else a)
                         for a in cmd["grade"][1:]), "--merge", str(grades / "written.csv")]) == 0
    return {"tmp": tmp, "subs": subs, "grades": grades, "again": again, **graded,
            "gradebook": {r["student"]: r for r in read_csv(grades / "gradebook.csv")}}


def test_submit_recorded_each_student_and_grade_reports_where_ids_came_from(course):
    rows = {r["file"]: r for r in course["rows"]}
    assert set(rows) == {"alice_02_mechanics_exercises.submission.json",
                         "bob_02_mechanics_exercises.submission.json",
                         "carol/attempt1_02_mechanics_exercises.ipynb",
                         "carol/02_mechanics_exercises.submission.json",
                         "dave_01_intuition_exercises.submission.json"}
    by = {(r["student"], r["file"]): r for r in course["rows"]}
    assert {(s, r["student_from"]) for (s, _), r in by.items()} == {
        ("alice", "notebook metadata"), ("Bob Ng", "notebook metadata"), ("carol", "folder"),
        ("dave", "notebook metadata")}
    assert all(r["assignment_from"] == "notebook metadata" for r in course["rows"])
    # the notebooks in the students' folders keep their id for the next submission
    home = nbformat.read(course["tmp"] / "home/dave/01_intuition_exercises.ipynb", as_version=4)
    assert home.metadata["attention_lab"] == {"assignment": "01_intuition", "student": "dave"}


def test_the_latest_submission_counts_and_the_earlier_one_is_listed(course):
    rows = {r["file"]: r for r in course["rows"]}
    early, late = (rows["carol/attempt1_02_mechanics_exercises.ipynb"],
                   rows["carol/02_mechanics_exercises.submission.json"])
    assert (early["counts"], late["counts"]) == ("no", "yes")
    assert (early["total"], late["total"], late["out_of"]) == ("0", "6", "6")


def test_per_assignment_totals_and_the_gradebook(course):
    book = course["gradebook"]
    assert list(book) == ["alice", "Bob Ng", "carol", "dave"]
    alice = book["alice"]
    assert (alice["02_mechanics auto"], alice["02_mechanics written"], alice["02_mechanics total"],
            alice["02_mechanics max"]) == ("6", "3.5", "9.5", "10")
    assert alice["01_intuition total"] == "" and alice["pending"] == "0"
    bob = book["Bob Ng"]
    assert (bob["02_mechanics auto"], bob["02_mechanics written"], bob["total"]) == ("1", "1", "2")
    assert book["carol"]["02_mechanics total"] == "6"
    assert (book["dave"]["01_intuition auto"], book["dave"]["01_intuition max"]) == ("4", "4")
    assert {r["max"] for r in book.values()} == {"14"}


def test_written_answers_went_out_and_came_back(course):
    assert [(r["student"], r["exercise"]) for r in course["written"]] == [
        ("alice", "2.3"), ("Bob Ng", "2.3")]
    merged = read_csv(course["grades"] / "written.csv")
    assert [r["score"] for r in merged] == ["3.5", "1"]


def test_feedback_pages_for_each_student_and_assignment(course):
    folder = course["grades"] / "feedback"
    names = path_names(["alice", "Bob Ng", "carol", "dave"])
    pages = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.html"))
    assert pages == sorted([f"{names['alice']}/02_mechanics.html",
                            f"{names['Bob Ng']}/02_mechanics.html",
                            f"{names['carol']}/02_mechanics.html",
                            f"{names['dave']}/01_intuition.html"])
    assert names["Bob Ng"] != "Bob Ng"
    alice = (folder / "alice/02_mechanics.html").read_text()
    assert "Score: <strong>3.5 of 4 points</strong>" in alice
    assert "Clear; say why c may be negative." in alice
    bob = (folder / names["Bob Ng"] / "02_mechanics.html").read_text()
    assert "without renormalising" in bob and "Only the first step." in bob
    carol = (folder / "carol/02_mechanics.html").read_text()
    assert "attempt1_02_mechanics_exercises.ipynb" in carol  # the earlier one is named


def test_regrading_with_the_same_seed_gives_identical_files(course):
    first, again = files_of(course["grades"]), files_of(course["again"])
    assert sorted(first) == sorted(again)
    assert {"grades.csv", "written.csv", "gradebook.csv"} <= set(first)
    different = [name for name in first if first[name] != again[name]]
    assert different == []
