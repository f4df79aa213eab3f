"""Maintainer tools for the jupytext notebook pairs.

Every notebook is a pair: ``name.py`` (py:percent text, the file you edit and review) and
``name.ipynb`` (committed with outputs, which nbval re-executes and compares).

    python -m attention_lab.nbtools execute notebooks/02_mechanics.py   # text -> executed .ipynb
    python -m attention_lab.nbtools check                              # every pair in sync?

``execute`` reads the text file, runs it top to bottom in a fresh kernel started in the
notebook's folder (as nbval does), and writes the ``.ipynb`` with its outputs, without timing
metadata or widget state, its widget views numbered in order (not the kernel's random model
ids), so that re-executing an unchanged notebook writes the same text outputs.

nbval compares text, not images, so a stored figure could lag behind the code that draws it.
``execute`` therefore records :func:`drawing_hash` (the package's plotting and widget code, less
comments and docstrings) in the notebook's metadata under :data:`FIGURES_KEY`, and ``check``
reports a notebook whose stored images were drawn by other code (:func:`stale_figures`).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import sys
import tokenize
from pathlib import Path

from ._cli import fail

ROOT = Path(__file__).resolve().parent.parent
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

#: the code that draws stored figures and explorer snapshots (folders or files, from ROOT)
DRAWING_CODE = ("attention_lab/plots", "attention_lab/widgets", "attention_lab/toy/figures.py",
                "attention_lab/toy/explorer.py")
#: notebook metadata key of the record (outside ``attention_lab``, which jupytext keeps in text)
FIGURES_KEY = "attention_lab_figures"
_IMAGES = ("image/png", "image/svg+xml", "image/jpeg")
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _code_only(source: str) -> str:
    """``source`` without comments, docstrings, blank lines and trailing spaces: the part of it
    whose change can change a figure (the same text on every Python version)."""
    lines = source.splitlines()
    dropped = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            dropped.update(range(body[0].lineno - 1, body[0].end_lineno))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return "\n".join(ln.rstrip() for i, ln in enumerate(lines)
                     if i not in dropped and ln.strip())


def drawing_hash(root: Path | str = ROOT) -> str:
    """A hash of the drawing code (:data:`DRAWING_CODE` under ``root``), comments and
    docstrings left out: it changes when a figure could be drawn differently."""
    root = Path(root)
    h = hashlib.sha256()
    for entry in DRAWING_CODE:
        base = root / entry
        for f in sorted(base.rglob("*.py")) if base.is_dir() else [base]:
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
            h.update(_code_only(f.read_text(encoding="utf-8")).encode() + b"\0")
    return "sha256:" + h.hexdigest()


def stale_figures(ipynb: Path | str, root: Path | str = ROOT) -> list[str]:
    """Why the stored images of ``ipynb`` may not be what the drawing code draws now (empty: a
    notebook without images, or one executed with the current code)."""
    import nbformat

    ipynb = Path(ipynb)
    nb = nbformat.read(ipynb, as_version=4)
    if not any(mime in out.get("data", {}) for c in nb.cells for out in c.get("outputs", [])
               for mime in _IMAGES):
        return []
    recorded = nb.metadata.get(FIGURES_KEY, {}).get("drawing_code")
    now = drawing_hash(root)
    if recorded == now:
        return []
    why = ("records no drawing code" if recorded is None else
           "was drawn by other plotting or widget code than the package's now")
    return [f"{ipynb.name}: its stored figures may be stale: the notebook {why}; run python -m "
            f"attention_lab.nbtools execute {ipynb.with_suffix('.py')}"]


def pairs(folder: Path | str = ROOT / "notebooks") -> list[tuple[Path, Path]]:
    """All (ipynb, py) pairs under ``folder``, including notebooks whose partner is missing."""
    folder = Path(folder)
    found: dict[Path, tuple[Path, Path]] = {}
    for p in [*sorted(folder.rglob("*.ipynb")), *sorted(folder.rglob("*.py"))]:
        if ".ipynb_checkpoints" not in p.parts:
            found.setdefault(p.with_suffix(""), (p.with_suffix(".ipynb"), p.with_suffix(".py")))
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
    nb = jupytext.read(ipynb)
    a, b = _cells(nb), _cells(jupytext.read(py))
    problems = []
    if len(a) != len(b):
        problems.append(f"{ipynb.name} has {len(a)} cells, {py.name} has {len(b)}")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            problems.append(f"cell {i} differs between {ipynb.name} and {py.name}:\n"
                            f"  ipynb: {x[1][:120]!r}\n  py:    {y[1][:120]!r}")
            break
    unrun = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and c.source.strip() and c.get("execution_count") is None]
    if unrun:
        problems.append(f"{ipynb.name}: code cell(s) {unrun[:5]} have no stored outputs; run "
                        f"python -m attention_lab.nbtools execute {py}")
    return problems + stale_figures(ipynb)


class CellFailed(Exception):
    """A cell of a notebook being executed raised (its ``.ipynb`` is not written)."""


def execute(py: Path | str, *, timeout: int = 600) -> Path:
    """Execute the text notebook ``py`` in a fresh kernel and write its ``.ipynb`` partner
    (:class:`CellFailed` when a cell raises, runs past ``timeout`` seconds or kills the kernel)."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    py = Path(py).with_suffix(".py")  # the text partner of a .ipynb given
    nb = jupytext.read(py)
    nb.metadata["kernelspec"] = KERNELSPEC
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(py.parent)}},
                            record_timing=False, store_widget_state=False, allow_errors=False)
    drawn_with = drawing_hash()  # the code the figures are drawn by, read before they are
    started = [0]  # the cells given to the kernel, in order (nbclient's hook)
    client.on_cell_execute = lambda cell, cell_index: started.append(cell_index)
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        i = started[-1]
        what = (f"ran longer than {timeout} s" if isinstance(exc, CellTimeoutError) else
                "stopped the kernel (it died)" if isinstance(exc, DeadKernelError) else
                f"raised {exc.ename}: {exc.evalue}")
        raise CellFailed(f"{py}: cell {i} ({nb.cells[i].source.splitlines()[0]!r}) {what}; "
                         f"{py.with_suffix('.ipynb').name} was not written") from None
    # one output per stream, however the kernel's writes were chunked on the way (it varies by load)
    CoalesceStreamsPreprocessor().preprocess(nb, {})
    ids: dict[str, str] = {}  # the kernel's random model ids -> ids numbered in order
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        cell["id"] = f"cell-{i}"
        for view in (o.get("data", {}).get(_WIDGET_VIEW) for o in cell.get("outputs", [])):
            if view:
                view["model_id"] = ids.setdefault(view["model_id"], f"{len(ids):032x}")
    nb.metadata.pop("widgets", None)
    nb.metadata["language_info"] = {"name": "python"}  # not the kernel's version, which varies
    nb.metadata[FIGURES_KEY] = {"drawing_code": drawn_with}
    out = py.with_suffix(".ipynb")
    nbformat.write(nb, out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attention_lab.nbtools",
        description="The notebook pairs: NAME.py, the text you edit, and NAME.ipynb, with the "
                    "outputs nbval compares.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("execute", help="execute text notebook(s) and write the .ipynb",
                        description="Run each text notebook top to bottom in a fresh kernel (in "
                                    "its folder) and write its .ipynb with the outputs. Exercise "
                                    "notebooks: python -m attention_lab.exercises.authoring "
                                    "build --execute.")
    ex.add_argument("paths", nargs="+", type=Path, metavar="NAME.py",
                    help="the text notebooks (a .ipynb stands for its .py)")
    ch = sub.add_parser("check", help="report pairs that are out of sync",
                        description="Report every pair whose .py and .ipynb differ, whose code "
                                    "cells have no stored outputs or whose stored figures were "
                                    "drawn by other plotting code; exit code 1 if any.")
    ch.add_argument("folder", nargs="?", type=Path, default=ROOT / "notebooks",
                    help="where to look (default: the checkout's notebooks/)")
    args = parser.parse_args(argv)
    if args.cmd == "execute":
        if missing := [py for py in (p.with_suffix(".py") for p in args.paths) if not py.is_file()]:
            return fail("nbtools", f"{missing[0]} does not exist (execute reads a notebook's text "
                                   "file)")
        try:
            for p in args.paths:
                print(f"executed {execute(p)}")
        except CellFailed as exc:
            return fail("nbtools", str(exc))
        return 0
    if not args.folder.is_dir():
        return fail("nbtools", f"{args.folder} is not a folder")
    problems = [p for ipynb, py in pairs(args.folder) for p in pair_problems(ipynb, py)]
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)" if problems else "all pairs in sync")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
