"""The level notebooks' predict cells, found in the stored ``.ipynb`` and run in this process (as a
kernel runs them, without predictions) so that every answer cell's :class:`Reveal` is recorded:
its answer, its explanation and what it held back. Shared by the spoiler test and the tests that
check a notebook's claims against what its answer cells compute."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import nbformat
import numpy as np

from attention_lab import predict

NB = Path(__file__).resolve().parent.parent / "notebooks"
LEVEL_STEMS = ("01_intuition", "02_mechanics", "03_maths_and_code", "04_research")


@dataclass(frozen=True)
class Question:
    """A question cell (``# Predict: ...`` comment lines, then ``name = ...``) and the answer cell
    after it (the first code cell that opens ``reveal(name``)."""

    index: int
    name: str
    text: str
    answer_index: int | None


def notebook(stem: str):
    return nbformat.read(NB / f"{stem}.ipynb", as_version=4)


def questions(stem: str) -> list[Question]:
    cells = notebook(stem).cells
    found = []
    for i, c in enumerate(cells):
        m = re.fullmatch(r"((?:#[^\n]*\n)+)(\w+) = \.\.\.\s*", c.source)
        if c.cell_type == "code" and m and m.group(1).startswith("# Predict"):
            name = m.group(2)
            later = [j for j in range(i + 1, len(cells)) if cells[j].cell_type == "code"
                     and re.search(rf"\breveal\({name}\b", cells[j].source)]
            found.append(Question(i, name, m.group(1), later[0] if later else None))
    return found


@lru_cache(maxsize=None)
def reveals(stem: str) -> dict[int, predict.Reveal]:
    """{answer cell index: its Reveal}, from one in-process run of the notebook's code cells
    (magics left out, printing swallowed, numpy's default error handling, figures closed)."""
    import matplotlib.pyplot as plt

    cells = notebook(stem).cells
    if not any(c.cell_type == "code" and "reveal(" in c.source for c in cells):
        return {}
    seen: dict[int, predict.Reveal] = {}
    current = [-1]

    def recording(prediction, **kwargs):
        r = predict.reveal(prediction, **kwargs)
        assert current[0] not in seen, f"{stem}: cell {current[0]} opens two reveals"
        seen[current[0]] = r
        return r

    ns: dict = {"__name__": "__main__"}
    with np.errstate(over="warn", invalid="warn", divide="warn", under="ignore"), \
            warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        for i, cell in enumerate(cells):
            if cell.cell_type != "code":
                continue
            current[0] = i
            src = "\n".join(ln for ln in cell.source.splitlines() if not ln.startswith("%"))
            exec(compile(src, f"{stem}.ipynb, cell {i}", "exec"), ns)
            if "reveal" in ns and ns["reveal"] is predict.reveal:
                ns["reveal"] = recording
    plt.close("all")
    return seen


def text_outputs(cell) -> list[str]:
    """The text a reader sees of a cell's stored outputs (streams, text/plain, text/html)."""
    found = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            found.append(out.get("text", ""))
        for mime in ("text/plain", "text/html", "text/markdown"):
            if mime in out.get("data", {}):
                found.append(str(out["data"][mime]))
    return found
