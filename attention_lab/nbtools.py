"""Maintainer tools for the jupytext notebook pairs.

Every notebook is a pair: ``name.py`` (py:percent text, the file you edit and review) and
``name.ipynb`` (committed with outputs, which nbval re-executes and compares).

    python -m attention_lab.nbtools execute notebooks/02_mechanics.py   # text -> executed .ipynb
    python -m attention_lab.nbtools check                              # every pair in sync?

``execute`` reads the text file, runs it top to bottom in a fresh kernel started in the
notebook's folder (as nbval does), and writes the ``.ipynb`` with its outputs, without timing
metadata or widget state so that re-executing an unchanged notebook changes nothing but images.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def pairs(folder: Path | str = ROOT / "notebooks") -> list[tuple[Path, Path]]:
    """All (ipynb, py) pairs under ``folder``, including notebooks whose partner is missing."""
    folder = Path(folder)
    found = {}
    for p in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" not in p.parts:
            found[p.with_suffix("")] = (p, p.with_suffix(".py"))
    for p in sorted(folder.rglob("*.py")):
        if ".ipynb_checkpoints" not in p.parts and p.with_suffix("") not in found:
            found[p.with_suffix("")] = (p.with_suffix(".ipynb"), p)
    return list(found.values())


def _cells(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def pair_problems(ipynb: Path, py: Path) -> list[str]:
    """Why the two files of a pair disagree (empty list: in sync)."""
    import jupytext

    if not ipynb.exists():
        return [f"{ipynb} is missing (its text partner {py.name} exists)"]
    if not py.exists():
        return [f"{py} is missing (its notebook partner {ipynb.name} exists)"]
    a, b = _cells(jupytext.read(ipynb)), _cells(jupytext.read(py))
    problems = []
    if len(a) != len(b):
        problems.append(f"{ipynb.name} has {len(a)} cells, {py.name} has {len(b)}")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            problems.append(f"cell {i} differs between {ipynb.name} and {py.name}:\n"
                            f"  ipynb: {x[1][:120]!r}\n  py:    {y[1][:120]!r}")
            break
    nb = jupytext.read(ipynb)
    unrun = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and c.source.strip() and c.get("execution_count") is None]
    if unrun:
        problems.append(f"{ipynb.name}: code cell(s) {unrun[:5]} have no stored outputs; run "
                        f"python -m attention_lab.nbtools execute {py}")
    return problems


def execute(py: Path | str, *, timeout: int = 600) -> Path:
    """Execute the text notebook ``py`` in a fresh kernel and write its ``.ipynb`` partner."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    py = Path(py)
    if py.suffix == ".ipynb":
        py = py.with_suffix(".py")
    nb = jupytext.read(py)
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(py.parent)}},
                            record_timing=False, store_widget_state=False, allow_errors=False)
    client.execute()
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        cell["id"] = f"cell-{i}"
    nb.metadata.pop("widgets", None)
    nb.metadata["language_info"] = {"name": "python"}
    out = py.with_suffix(".ipynb")
    nbformat.write(nb, out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attention_lab.nbtools")
    sub = parser.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("execute", help="execute text notebook(s) and write the .ipynb")
    ex.add_argument("paths", nargs="+", type=Path)
    ch = sub.add_parser("check", help="report pairs that are out of sync")
    ch.add_argument("folder", nargs="?", type=Path, default=ROOT / "notebooks")
    args = parser.parse_args(argv)
    if args.cmd == "execute":
        for p in args.paths:
            print(f"executed {execute(p)}")
        return 0
    bad = 0
    for ipynb, py in pairs(args.folder):
        for problem in pair_problems(ipynb, py):
            print(problem)
            bad += 1
    print("all pairs in sync" if not bad else f"{bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
