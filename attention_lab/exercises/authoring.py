"""Maintainer tool: the student exercise notebooks are generated from the instructor solutions.

Each level has one source of truth, ``notebooks/exercises/solutions/<stem>_solutions.py``
(py:percent). Solution code sits between marker lines::

    def double(x):
        # BEGIN SOLUTION
        return 2 * x
        # END SOLUTION

and the student version replaces the block by ``raise NotImplementedError`` (at the marker's
indentation), or by the block's ``#> `` lines, uncommented, when it has any (a stub value such as
``parts = {...}`` or an empty written-answer template). Markdown between
``<!-- BEGIN SOLUTION -->`` and ``<!-- END SOLUTION -->`` appears only in the solutions; a
markdown cell that holds nothing else is left out of the student notebook.

``build`` also gives every exercise notebook (solution and student) its assignment id in a
jupytext header, ``{"attention_lab": {"assignment": "02_mechanics"}}`` in the notebook's
metadata: the grader reads it to tell which assignment a submission is. ``jupytext.toml`` keeps
that one metadata key in the text files (``notebook_metadata_filter = "attention_lab,-all"``), so
it survives the pair round trip, and the executed ``.ipynb`` carries it.

    python -m attention_lab.exercises.authoring build            # write the student .py files
    python -m attention_lab.exercises.authoring build --execute  # ... and execute all eight pairs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._cli import fail
from ..nbtools import CellFailed
from .registry import ASSIGNMENT_IDS, METADATA_KEY, NOTEBOOKS

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "notebooks" / "exercises"
SOLUTIONS = FOLDER / "solutions"
STUB = "raise NotImplementedError  # replace this line with your code"
HEADER = "# ---\n# jupyter:\n#   {key}:\n#     assignment: {id}\n# ---\n\n"


class MarkerError(ValueError):
    pass


def _marker(line: str) -> str | None:
    s = line.strip()
    if s.startswith("#"):
        s = s.lstrip("#").strip()
    if s in ("BEGIN SOLUTION", "<!-- BEGIN SOLUTION -->"):
        return "begin"
    if s in ("END SOLUTION", "<!-- END SOLUTION -->"):
        return "end"
    return None


def student_version(text: str) -> str:
    """The student notebook text for a solution notebook text."""
    out: list[str] = []
    block: list[str] | None = None
    indent = ""
    markdown = False
    for n, line in enumerate(text.splitlines(), 1):
        kind = _marker(line)
        if kind == "begin":
            if block is not None:
                raise MarkerError(f"line {n}: BEGIN SOLUTION inside another solution block")
            block = []
            indent = line[: len(line) - len(line.lstrip())]
            markdown = "<!--" in line
            continue
        if kind == "end":
            if block is None:
                raise MarkerError(f"line {n}: END SOLUTION without BEGIN SOLUTION")
            if not markdown:  # the block's "#> " lines uncommented, or the stub
                out += [b[: len(b) - len(b.lstrip())] + b.strip()[2:].removeprefix(" ")
                        for b in block if b.strip().startswith("#>")] or [indent + STUB]
            block = None
            continue
        if block is not None:
            block.append(line)
        else:
            out.append(line)
    if block is not None:
        raise MarkerError("a solution block is not closed (missing END SOLUTION)")
    return "\n".join(_without_empty_markdown(out)) + "\n"


def _without_empty_markdown(lines: list[str]) -> list[str]:
    """``lines`` less the markdown cells (``# %% [markdown]`` and what follows up to the next
    cell) that hold no text, with the blank line before each dropped cell."""
    starts = [i for i, ln in enumerate(lines) if ln.startswith("# %%")] + [len(lines)]
    keep = list(lines[:starts[0]])
    for a, b in zip(starts, starts[1:]):
        cell = lines[a:b]
        if cell[0].startswith("# %% [markdown]") and not any(
                ln.lstrip("#").strip() for ln in cell[1:]):
            while keep and not keep[-1].strip():
                keep.pop()
            keep.append("")
            continue
        keep.extend(cell)
    return keep


def assignment_of(solution: Path) -> str:
    """The assignment id of a solution notebook, from its file name."""
    stem = solution.name.removesuffix("_solutions.py")
    for level, name in NOTEBOOKS.items():
        if name == stem:
            return ASSIGNMENT_IDS[level]
    raise MarkerError(f"{solution.name} is not the solution of a registered exercise notebook "
                      f"({', '.join(NOTEBOOKS.values())})")


def with_header(text: str, assignment: str) -> str:
    """``text`` (py:percent) starting with the header that carries ``assignment`` (replacing
    an earlier header of this tool)."""
    if text.startswith("# ---\n"):
        end = text.find("\n# ---\n")
        if end < 0 or f"#   {METADATA_KEY}:" not in text[:end]:
            raise MarkerError("the notebook starts with a jupytext header this tool did not write; "
                              "remove it (its metadata is filtered out anyway)")
        text = text[end + len("\n# ---\n"):].lstrip("\n")
    return HEADER.format(key=METADATA_KEY, id=assignment) + text


def solution_files() -> list[Path]:
    return sorted(SOLUTIONS.glob("*_solutions.py"))


def student_path(solution: Path) -> Path:
    return FOLDER / (solution.name.replace("_solutions.py", ".py"))


def build(execute: bool = False) -> list[Path]:
    written = []
    for sol in solution_files():
        text = sol.read_text(encoding="utf-8")
        try:
            headed = with_header(text, assignment_of(sol))
            student = student_version(headed)
        except MarkerError as exc:
            raise MarkerError(f"{sol.name}: {exc}; nothing more was written") from None
        if headed != text:
            sol.write_text(headed, encoding="utf-8")
        dest = student_path(sol)
        dest.write_text(student, encoding="utf-8")
        written.append(dest)
    if execute:
        from ..nbtools import execute as run

        for p in written + solution_files():
            print(f"executed {run(p)}")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attention_lab.exercises.authoring",
        description="The student exercise notebooks are made from the instructor solutions "
                    "(notebooks/exercises/solutions/): edit a solution, then build.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write the student notebooks from the solutions",
                       description="Write notebooks/exercises/NAME.py from each NAME_solutions.py,"
                                   " each solution block replaced by its stub.")
    b.add_argument("--execute", action="store_true",
                   help="then execute the eight exercise pairs (students' and solutions') with "
                        "nbtools")
    args = parser.parse_args(argv)
    try:
        written = build(execute=args.execute)
    except (MarkerError, CellFailed) as exc:
        return fail("authoring", str(exc))
    for p in written:
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
