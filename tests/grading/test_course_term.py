"""A term, not a snapshot: a resubmission after the hand scores were merged, one student regraded
alone, another week graded into the same output, the term's gradebook from several gradings,
and the class summary page.

One small class (two students, level 2) is graded once for the module; the tests then change it
the way a term does. Also the smaller promises of written.csv (semicolons, halves)."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pytest

from attention_lab.grading import batch, gradebook, merge, summary, written
from attention_lab.grading.report import ExerciseGrade, Report, SubmissionGrade
from attention_lab.grading.runner import Limits

from _notebook_edits import load, replace_answer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the grader's sandbox is Linux-only")

ROOT = Path(__file__).resolve().parents[2]
SOL1 = ROOT / "notebooks/exercises/solutions/01_intuition_exercises_solutions.ipynb"
SOL2 = ROOT / "notebooks/exercises/solutions/02_mechanics_exercises_solutions.ipynb"
ANSWER = ('shift_invariance = {{"derivation": "{d}", "consequence": "the weights do not '
          'change when every score moves by the same constant c"}}')


def hand_in(folder: Path, derivation: str, wrong_dot: bool = False) -> None:
    import nbformat

    nb = replace_answer(load(SOL2), "shift_invariance", ANSWER.format(d=derivation))
    if wrong_dot:
        replace_answer(nb, "dot_scores", "def dot_scores(query, keys):\n    return keys @ query * 2")
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(folder / "02_mechanics_exercises.ipynb"))


def rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def grades(out: Path) -> dict:
    return {(s["meta"]["student"], s["meta"]["assignment"]): s
            for s in json.loads((out / "grades.json").read_text())["submissions"]}


def grade(*argv) -> int:
    return batch.main([*map(str, argv), "--quiet", "--cell-timeout", "20"])


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("term")
    subs, out = tmp / "week2", tmp / "out"
    hand_in(subs / "alice", "exp(e + c) = exp(c) exp(e) and exp(c) cancels out")
    hand_in(subs / "bob", "the constant factor exp(c) is in the numerator and the sum")
    assert grade(subs, "--out", out, "--seed", "5") == 0
    filled = rows(out / "written.csv")
    for r in filled:
        r["score"], r["comment"] = {"alice": ("3", "good"), "bob": ("2", "half")}[r["student"]]
    with open(out / "written.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(filled[0]))
        w.writeheader()
        w.writerows(filled)
    assert merge.main([str(out)]) == 0
    return {"tmp": tmp, "subs": subs, "out": out, "merged": grades(out)}


def test_a_resubmission_keeps_the_unchanged_hand_scores_and_asks_only_for_the_changed(term,
                                                                                      capsys):
    subs, out = term["subs"], term["out"]
    hand_in(subs / "alice", "dividing by the sum removes the factor exp(c), so nothing moves")
    assert grade(subs, "--out", out, "--seed", "5", "--merge", out / "written.csv") == 0
    assert "1 answer(s) of written.csv changed since they were scored" in capsys.readouterr().out
    now = grades(out)
    alice, bob = now[("alice", "02_mechanics")], now[("bob", "02_mechanics")]
    assert alice["exercises"]["2.3"]["status"] == "needs_instructor"  # changed: asked again
    assert (bob["exercises"]["2.3"]["status"], bob["exercises"]["2.3"]["score"],
            bob["exercises"]["2.3"]["comment"]) == ("hand_graded", 2, "half")  # kept
    again = {r["student"]: r for r in rows(out / "written.csv")}
    assert again["alice"]["score"] == "" and "nothing moves" in again["alice"]["answer"]
    assert again["bob"]["score"] == "2"


def test_one_student_is_regraded_alone_and_the_others_rows_are_kept(term):
    subs, out = term["subs"], term["out"]
    before = grades(out)
    hand_in(subs / "bob", "the constant factor exp(c) is in the numerator and the sum",
            wrong_dot=True)
    assert grade(subs, "--out", out, "--only", "bob") == 0
    now = grades(out)
    assert now[("alice", "02_mechanics")] == before[("alice", "02_mechanics")]  # untouched
    bob = now[("bob", "02_mechanics")]
    was = before[("bob", "02_mechanics")]
    assert (was["exercises"]["2.1"]["status"], bob["exercises"]["2.1"]["status"]) == \
        ("pass", "fail")  # regraded: the new hand-in's mistake is seen
    assert bob["sha256"] != was["sha256"]
    assert bob["exercises"]["2.3"]["score"] == 2  # its unchanged written answer kept its score
    assert json.loads((out / "grades.json").read_text())["grader"]["seed"] == 5


def test_another_week_is_graded_into_the_same_output(term):
    import nbformat

    week1 = term["tmp"] / "week1"
    (week1 / "alice").mkdir(parents=True)
    nbformat.write(load(SOL1), str(week1 / "alice" / "01_intuition_exercises.ipynb"))
    out = term["out"]
    assert grade(week1, "--out", out, "--only", "01_intuition") == 0
    now = grades(out)
    assert set(now) == {("alice", "02_mechanics"), ("bob", "02_mechanics"),
                        ("alice", "01_intuition")}
    book = {r["student"]: r for r in rows(out / "gradebook.csv")}
    assert book["alice"]["01_intuition total"] == "4" and book["bob"]["01_intuition total"] == ""


def test_the_terms_gradebook_combines_gradings(term, tmp_path, capsys):
    out2 = tmp_path / "week4"
    shutil.copytree(term["out"], out2)
    data = json.loads((out2 / "grades.json").read_text())
    data["grader"]["started"] = "2999-01-01T00:00:00+00:00"  # graded after the first
    for s in data["submissions"]:
        if s["meta"]["student"] == "bob":
            s["exercises"]["2.1"]["status"] = "pass"
        else:
            s["meta"]["assignment"] = "04_research" if s["meta"]["assignment"] == \
                "01_intuition" else s["meta"]["assignment"]
    (out2 / "grades.json").write_text(json.dumps(data))
    assert gradebook.main([str(term["out"]), str(out2), "--out", str(tmp_path / "termbook")]) == 0
    assert "bob / 02_mechanics: the grading of 2999" in capsys.readouterr().err
    book = {r["student"]: r for r in rows(tmp_path / "termbook" / "gradebook.csv")}
    assert book["bob"]["02_mechanics auto"] == "6"  # the later grading counts
    assert book["alice"]["01_intuition total"] == "4" and "04_research total" in book["alice"]
    assert (tmp_path / "termbook" / "lms" / "canvas.csv").is_file()


def test_another_folder_never_replaces_a_grading_silently(tmp_path, capsys, monkeypatch):
    """Week 3's download graded into week 2's OUT_DIR without --only replaced week 2's grading
    whole (its rows, feedback pages and the seed that regrades them to the same results) when
    no hand score was merged yet; the grading page's own command block writes a Moodle and a
    Canvas download into the same week2/. It stops now, before grading anything, names the
    grading that is there and what to do; with --only it adds to it as before."""
    week2, week3, out = tmp_path / "week2", tmp_path / "week3", tmp_path / "out"
    hand_in(week2 / "alice", "exp(c) cancels out")
    assert grade(week2, "--out", out, "--seed", "5") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    hand_in(week3 / "bob", "exp(c) cancels out")
    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(batch.Batch, "grade", lambda *a: pytest.fail("a submission was graded"))
        assert grade(week3, "--out", out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(week2) in err and "--only" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert grade(week2, "--out", out, "--seed", "5") == 0  # its own folder: graded again
    assert grade(week3, "--out", out, "--only", "bob") == 0
    assert set(grades(out)) == {("alice", "02_mechanics"), ("bob", "02_mechanics")}


def test_only_and_resume_print_what_they_graded_not_the_whole_class(tmp_path, capsys):
    """``--only bob`` in a class of 300 printed 'graded 301 submission(s) in 2.7 s' and a row
    for every student; ``--resume`` with nothing left to do, 'graded 300 submission(s) in 0.1
    s'. Each now prints the submissions it graded and how many grades it kept."""
    subs, out = tmp_path / "week2", tmp_path / "out"
    for who in ("alice", "bob", "carol"):
        hand_in(subs / who, "exp(c) cancels out")
    assert grade(subs, "--out", out, "--seed", "5") == 0
    capsys.readouterr()
    assert grade(subs, "--out", out, "--only", "bob") == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("graded 1 submission(s) in ") and said[0].endswith(
        "; the grades of 2 other submission(s) kept"), said[0]
    assert [line.split()[0] for line in said[1:] if line.startswith("  ")] == [
        "bob/02_mechanics_exercises.ipynb"], said
    assert grade(subs, "--out", out, "--resume") == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("graded 0 submission(s) in ") and "grades of 3 other" in said[0]
    assert len(grades(out)) == 3


def test_a_bad_grading_folder_is_refused(tmp_path, capsys):
    """A folder without a grading, or a mistyped one, is named as what it is, not as an
    exception's text."""
    assert gradebook.main([str(tmp_path), "--out", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err == (f"gradebook: error: {tmp_path} holds no grades.json; give "
                                       f"folders that grade wrote\n")
    assert gradebook.main([str(tmp_path / "week1"), "--out", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err == (f"gradebook: error: {tmp_path / 'week1'} does not exist; "
                                       f"give folders that grade wrote\n")
    (tmp_path / "grades.csv").write_text("")
    assert gradebook.main([str(tmp_path / "grades.csv"), "--out", str(tmp_path / "t")]) == 2
    assert "grades.csv is not a folder; give folders that grade wrote" in capsys.readouterr().err
    (tmp_path / "grades.json").write_text("{")
    assert gradebook.main([str(tmp_path), "--out", str(tmp_path / "t")]) == 2
    assert "grades.json cannot be read (JSONDecodeError" in capsys.readouterr().err


def test_an_out_that_is_a_file_is_refused(term, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    assert gradebook.main([str(term["out"]), "--out", str(tmp_path / "afile")]) == 2
    assert capsys.readouterr().err == (f"gradebook: error: --out {tmp_path / 'afile'} is a file; "
                                       f"give a folder for the term's gradebook\n")


# ------------------------------------------------------------------ the summary page
def _sub(student, assignment, statuses, message="the weights do not sum to 1"):
    g = SubmissionGrade(f"{student}.ipynb", None, "graded",
                        meta={"student": student, "assignment": assignment})
    g.exercises = {i: ExerciseGrade(st, "" if st == "pass" else message, int(st == "pass"))
                   for i, st in statuses.items()}
    return g


def test_the_summary_page_has_pass_rates_a_histogram_and_the_frequent_messages():
    subs = [_sub("a", "01_intuition", {"1.1": "pass", "1.2": "pass", "1.3": "pass",
                                       "1.4": "pass"}),
            _sub("b", "01_intuition", {"1.1": "pass", "1.2": "fail", "1.3": "fail",
                                       "1.4": "pass"}),
            _sub("c", "01_intuition", {"1.1": "fail", "1.2": "fail", "1.3": "pass",
                                       "1.4": "pass"}, "<script>x</script> wrong axis")]
    report = Report("/s", subs, [], [], 1, Limits(), "now", 0.0, 1)
    (a,) = summary.statistics(report)
    assert [b["count"] for b in a["histogram"]] == [0, 0, 2, 0, 1]  # totals 4, 2, 2
    rate = {e["id"]: (e["rate"], e["messages"]) for e in a["exercises"]}
    assert rate["1.1"][0] == 67 and rate["1.4"] == (100, [])
    assert rate["1.2"][1] == [("the weights do not sum to 1", 1),
                              ("<script>x</script> wrong axis", 1)]
    page = summary.render(report)
    assert "67% (2 of 3)" in page and "<script>" not in page and "&lt;script&gt;" in page
    assert "http" not in page.replace("http-equiv", "")  # opens offline


# ------------------------------------------------------------------ written.csv
def _course() -> Report:
    g = _sub("alice", "02_mechanics", {"2.1": "pass"})
    g.exercises["2.3"] = ExerciseGrade("needs_instructor", "", None, answer={
        "derivation": "exp(c) cancels", "consequence": "nothing moves"})
    return Report("/s", [g], [], [], 1, Limits(), "now", 0.0, 1)


def test_a_semicolon_written_csv_from_a_european_spreadsheet_is_read(tmp_path):
    course = _course()
    table = written.rows(course)
    table[1][written.COLUMNS.index("score")] = "2,5"
    with open(tmp_path / "w.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, delimiter=";").writerows(table)
    assert written.apply(course, written.read(tmp_path / "w.csv")) == 1
    assert course.submissions[0].written == 2.5


def test_scores_are_whole_or_half_points(tmp_path):
    course = _course()
    table = written.rows(course)
    table[1][written.COLUMNS.index("score")] = "2.25"
    with open(tmp_path / "w.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(table)
    with pytest.raises(written.WrittenError, match="2.25 is not a whole or half point"):
        written.read(tmp_path / "w.csv")
