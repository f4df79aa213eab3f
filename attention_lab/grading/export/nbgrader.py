"""``python -m attention_lab release --for nbgrader COURSE_DIR``: the exercises as nbgrader
assignments.

Writes ``COURSE_DIR/source/<assignment>/<notebook>.ipynb`` for the four exercise notebooks (one
assignment per level, ids as the lab's: ``02_mechanics``) and, when the course has none, an
example ``nbgrader_config.py``. Each notebook is its solution notebook with nbgrader's cell
metadata (``metadata.nbgrader``, schema 3):

* an answer cell (one holding the lab's ``# BEGIN SOLUTION`` blocks) is a *solution* cell; each
  block becomes ``### BEGIN SOLUTION`` / ``### END SOLUTION`` (what ``nbgrader
  generate_assignment`` replaces by its stub), with the block's template lines (``#> ...``) put
  before it, so a student gets the template and nbgrader's ``raise NotImplementedError()``;
* a check of an automatic exercise is an *autograded test* cell worth the exercise's points:
  ``check("2.1", dot_scores, strict=True)``, which raises
  :class:`attention_lab.exercises.CheckFailed` with the check's message unless the answer passes
  (nbgrader scores a test cell 0 when it raises, and its feedback shows the message);
* a written answer gets a *manually graded task* cell before its answer cell, worth one point per
  line of its rubric; the rubric is the task's mark scheme (``### BEGIN MARK SCHEME``), which
  ``generate_assignment`` strips from the student version and formgrader shows the grader. The
  answer stays the lab's template, so the notebook's own ``check`` shows the rubric to a
  student once the answer is long enough, as in the lab;
* every other cell (setup, explanations, the written answers' checks, ``status()``) is locked.

The instructor-only markdown of the solutions (``<!-- BEGIN SOLUTION -->``) is left out. nbgrader
runs the checks in the student's own kernel: it gives no isolation (see the README's threat
model); a hostile class is graded by the lab's own grader or on Gradescope.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ...exercises import authoring
from ...exercises.judging import WRITTEN_MIN_WORDS
from ...exercises.registry import ASSIGNMENT_IDS, EXERCISES, NOTEBOOKS
from ...nbtools import KERNELSPEC
from ..assignments import points

SCHEMA_VERSION = 3
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_MARK, END_MARK = "### BEGIN MARK SCHEME", "### END MARK SCHEME"

CONFIG = '''\
# nbgrader's configuration for the attention-lab course (written by
# python -m attention_lab release --for nbgrader). Edit to taste; see
# https://nbgrader.readthedocs.io/en/stable/configuration/
c = get_config()  # noqa: F821 - provided by nbgrader

c.CourseDirectory.course_id = "attention-lab"
# the assignments (one per level: {assignments}) enter the course database with
# nbgrader generate_assignment; set due dates in formgrader (Manage Assignments)
# the level-4 notebook loads trained models; give each cell time (seconds)
c.Execute.timeout = 300
# the kernel that runs students' notebooks needs the lab installed:
#   pip install -r requirements.txt   (torch's CPU build first, see the lab's README)
'''


class ExportError(Exception):
    pass


def metadata(kind: str, grade_id: str, pts: int | None = None) -> dict:
    """nbgrader's metadata (schema 3) for a cell of ``kind``: ``solution``, ``test``, ``task``
    or ``locked``."""
    meta = {"schema_version": SCHEMA_VERSION, "grade_id": grade_id,
            "grade": kind == "test", "solution": kind == "solution",
            "locked": kind in ("test", "task", "locked")}
    if kind == "task":
        meta["task"] = True
    if kind in ("test", "task"):
        meta["points"] = pts
    return meta


def grade_id(prefix: str, exercise_id: str) -> str:
    """``check_2_1`` for ("check", "2.1"): nbgrader's ids allow letters, digits, ``_`` and ``-``."""
    return f"{prefix}_{exercise_id.replace('.', '_')}"


def solution_regions(source: str) -> str:
    """A code cell's source with each lab solution block as an nbgrader solution region, the
    block's template lines (``#> ...``, uncommented) before the region."""
    out: list[str] = []
    block: list[str] | None = None
    indent = ""
    for line in source.splitlines():
        kind = authoring._marker(line)
        if kind == "begin":
            block, indent = [], line[: len(line) - len(line.lstrip())]
        elif kind == "end":
            stubs = [b for b in block if b.strip().startswith("#>")]
            out += [b[: len(b) - len(b.lstrip())] + b.strip()[2:].removeprefix(" ") for b in stubs]
            out += [indent + BEGIN, *(b for b in block if b not in stubs), indent + END]
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(line)
    if block is not None:
        raise ExportError("a solution block is not closed (missing END SOLUTION)")
    return "\n".join(out)


def without_instructor_text(source: str) -> str:
    """A markdown cell's source without its ``<!-- BEGIN SOLUTION -->`` blocks."""
    out, inside = [], False
    for line in source.splitlines():
        kind = authoring._marker(line)
        if kind is not None:
            inside = kind == "begin"
        elif not inside:
            out.append(line)
    return "\n".join(out).strip("\n")


def check_call(source: str) -> tuple[str, str] | None:
    """``(exercise id, the call's source)`` for a cell that is one call ``check("2.1", ...)``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    call = tree.body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "check" and call.args and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str)):
        return None
    return call.args[0].value, source.strip()


def strict_call(call_source: str) -> str:
    """``check("2.1", f)`` -> ``check("2.1", f, strict=True)``."""
    return re.sub(r"\)\s*$", ", strict=True)", call_source)


def task_text(ex) -> str:
    """The task cell of a written exercise: what the student reads, then the rubric as the
    grader's mark scheme (stripped from the student version)."""
    names = ", ".join(f"`{n}`" for n in ex.answer_names)
    rubric = "\n".join(f"{i}. {line}" for i, line in enumerate(ex.rubric, 1))
    return (f"**Check {ex.id} ({ex.title}) is graded by hand: {points(ex)} points.** Write your "
            f"answer in the fields of {names} below; `check(\"{ex.id}\", ...)` shows the rubric "
            f"once every field holds at least {WRITTEN_MIN_WORDS} words.\n\n"
            f"{BEGIN_MARK}\n"
            f"Rubric for the grader, one point per line:\n\n{rubric}\n"
            f"{END_MARK}")


def source_notebook(level: int):
    """The nbgrader source notebook (an ``nbformat`` notebook) of one level."""
    import jupytext
    import nbformat

    path = authoring.SOLUTIONS / f"{NOTEBOOKS[level]}_solutions.py"
    if not path.exists():
        raise ExportError(f"the export needs a checkout of the repository ({path} is missing)")
    sol = jupytext.read(path)
    exercises = [ex for ex in EXERCISES.values() if ex.level == level]
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"},
                   "attention_lab": dict(sol.metadata.get("attention_lab", {}))}
    ids: set[str] = set()

    def add(cell, kind, gid, pts=None):
        base, k = gid, 1
        while gid in ids:  # a second cell of the same kind and exercise
            k += 1
            gid = f"{base}_{k}"
        ids.add(gid)
        cell.metadata = {"nbgrader": metadata(kind, gid, pts)}
        nb.cells.append(cell)

    for n, cell in enumerate(sol.cells):
        if cell.cell_type == "markdown":
            text = without_instructor_text(cell.source)
            if text:
                add(nbformat.v4.new_markdown_cell(text), "locked", f"text_{n}")
            continue
        if cell.cell_type != "code":
            continue
        call = check_call(cell.source)
        if call is not None and call[0] in EXERCISES and EXERCISES[call[0]].auto:
            ex = EXERCISES[call[0]]
            add(nbformat.v4.new_code_cell(strict_call(call[1])), "test", grade_id("check", ex.id),
                points(ex))
        elif any(authoring._marker(line) == "begin" for line in cell.source.splitlines()):
            answers = [ex for ex in exercises if any(
                re.search(rf"^\s*(def\s+{name}\b|{name}\s*=)", cell.source, re.MULTILINE)
                for name in ex.answer_names)]
            for ex in answers:
                if not ex.auto:
                    add(nbformat.v4.new_markdown_cell(task_text(ex)), "task",
                        grade_id("written", ex.id), points(ex))
            gid = grade_id("answer", answers[0].id) if answers else f"answer_{n}"
            add(nbformat.v4.new_code_cell(solution_regions(cell.source)), "solution", gid)
        else:
            add(nbformat.v4.new_code_cell(cell.source), "locked", f"code_{n}")
    return nb


def assignment_dir(course: Path, level: int) -> Path:
    return Path(course) / "source" / ASSIGNMENT_IDS[level]


def write_course(course: Path) -> list[Path]:
    """Write the four assignments into ``course/source/`` (and an example
    ``nbgrader_config.py`` unless the course has one); the files written. Refuses, writing
    nothing, when one of the four assignment folders exists already (an instructor's edits)."""
    import nbformat

    course = Path(course)
    if course.exists() and not course.is_dir():
        raise ExportError(f"{course} is a file; give the course folder (new or existing)")
    taken = [assignment_dir(course, lv) for lv in NOTEBOOKS if assignment_dir(course, lv).exists()]
    if taken:
        raise ExportError(f"{taken[0]} exists already; remove it or give another course folder "
                          f"(the export never overwrites an assignment)")
    notebooks = {lv: source_notebook(lv) for lv in NOTEBOOKS}
    written = []
    for level, nb in notebooks.items():
        path = assignment_dir(course, level) / f"{NOTEBOOKS[level]}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
        written.append(path)
    config = course / "nbgrader_config.py"
    if not config.exists():
        ids = ", ".join(ASSIGNMENT_IDS.values())
        config.write_text(CONFIG.format(assignments=ids), encoding="utf-8")
        written.append(config)
    return written


__all__ = ["ExportError", "write_course", "source_notebook", "metadata", "solution_regions",
           "CONFIG"]
