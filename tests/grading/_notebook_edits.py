"""Edits of a solution notebook for the grading tests: load it, replace the cell that defines an
answer, or insert cells after it (to make a wrong, hostile or honest submission)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat

from attention_lab.grading.runner import defined_names


def load(path: Path):
    return nbformat.read(path, as_version=4)


def _cell_defining(nb, name: str) -> int:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and defined_names(cell.source, [name]):
            return i
    raise AssertionError(f"no cell defines {name}")


def replace_answer(nb, name: str, source: str):
    """``nb`` with the source of the cell that defines ``name`` replaced."""
    nb.cells[_cell_defining(nb, name)].source = textwrap.dedent(source).strip()
    return nb


def insert_after(nb, name: str, *sources: str):
    """``nb`` with one new code cell per source right after the cell that defines ``name``."""
    i = _cell_defining(nb, name)
    for k, src in enumerate(sources):
        nb.cells.insert(i + 1 + k, nbformat.v4.new_code_cell(textwrap.dedent(src).strip()))
    return nb
