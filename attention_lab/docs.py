"""``python -m attention_lab docs OUT_DIR``: build the lab's site, from a checkout.

The site is Sphinx with myst-nb and sphinx-book-theme (configured in ``docs/conf.py``). Nothing is
executed: nbval re-executes the notebooks, the site shows what they stored. This command lays out
the sources in a scratch folder and runs ``sphinx-build -W`` (every warning, such as a broken
cross-reference or a missing image, fails the build):

- the pages of ``docs/``, at the top (and ``README.md``, whose sections some pages include);
- the notebooks of the student bundle (:func:`attention_lab.grading.release.release`: the level
  notebooks with their outputs, the exercise notebooks without solutions or outputs), at their
  repository paths (``notebooks/...``), so the launch buttons point at the right file;
- every stored figure as an image whose alt text is its text description, and every explorer as
  its stored figure and text readout with a note that the sliders need a kernel (a static page
  has no kernel to draw them);
- ``maintainers/benchmark-tables.md``, generated from the result files that
  ``python -m benchmarks.run --save`` writes into ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
DOCS = CHECKOUT / "docs"
RESULTS = CHECKOUT / "benchmarks" / "results"
WIDGET = "application/vnd.jupyter.widget-view+json"
NOTE = ("A picture stored when the notebook last ran: the sliders need a running kernel. Open "
        "the notebook live with the launch button at the top of this page.")


class DocsError(Exception):
    pass


def _img(png: str, alt: str) -> str:
    base64.b64decode(png, validate=True)  # a stored image that is not base64 fails here
    return f'<img src="data:image/png;base64,{png}" alt="{html.escape(alt)}">'


def static_outputs(nb) -> list[int]:
    """Rewrite ``nb``'s stored images, in place, as HTML a page shows without a kernel: a figure
    becomes an image with its text description (the output's ``text/plain``) as alt text; an
    explorer (a widget view stored with its figure and readout) becomes that figure, the readout
    and :data:`NOTE`. Returns the cells whose figure has no description (only matplotlib's
    ``<Figure size ...>``): their alt text says so."""
    undescribed = []
    for n, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = out.get("data", {})
            if "image/png" not in data:
                continue
            text = "".join(data.get("text/plain", "")).strip()
            if not text or text.startswith("<"):
                undescribed.append(n)
                text = f"A figure without a text description yet (cell {n + 1})."
            if WIDGET in data:
                shown = (f'<div class="al-explorer">{_img(data["image/png"], text)}'
                         f'<pre class="al-readout">{html.escape(text)}</pre>'
                         f'<p class="al-note">{NOTE}</p></div>')
            else:
                shown = f'<div class="al-figure">{_img(data["image/png"], text)}</div>'
            out["data"] = {"text/html": shown, "text/plain": text}
    return undescribed


def benchmark_tables(results: Path = RESULTS) -> str:
    """The page of benchmark tables: for each group, the table of the newest result file that
    measured it (with its date, machine and command)."""
    newest: dict[str, dict] = {}
    for path in sorted(results.glob("*.json")):  # names start with the date: oldest first
        record = json.loads(path.read_text(encoding="utf-8"))
        for group in {row["group"] for row in record["rows"]}:
            newest[group] = {**record, "file": path.name}
    lines = ["# Benchmark tables", "",
             "Generated from the newest file in `benchmarks/results/` that measured each group "
             "(`python -m benchmarks.run GROUP --save` writes one); "
             "[how to run them](benchmarks.md).", ""]
    if not newest:
        lines += ["No run is recorded yet.", ""]
    for group, record in sorted(newest.items()):
        header, load = record["columns"], record.get("load_average")
        busy = (f", load average {load[0]:.1f} at the start and {load[1]:.1f} at the end"
                if load else "")
        lines += [f"## {group}", "",
                  f"`{record['command']}` on {record['date']} ({record['machine']}{busy}), "
                  f"`benchmarks/results/{record['file']}`.", "",
                  "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row["shown"]) + " |"
                  for row in record["rows"] if row["group"] == group]
        lines.append("")
    return "\n".join(lines)


def stage(src: Path, bundle: Path) -> dict[str, list[int]]:
    """Lay out the site's sources in the new folder ``src`` from ``docs/`` and the student
    ``bundle``; returns, per notebook, the cells whose figure has no text description."""
    import nbformat

    undescribed = {}
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "__pycache__"))
    shutil.copy2(CHECKOUT / "README.md", src / "README.md")  # pages include its sections
    for nb_path in sorted((bundle / "notebooks").rglob("*.ipynb")):
        rel = nb_path.relative_to(bundle)
        nb = nbformat.read(nb_path, as_version=4)
        if missing := static_outputs(nb):
            undescribed[rel.as_posix()] = missing
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, src / rel)
    (src / "maintainers" / "benchmark-tables.md").write_text(benchmark_tables(),
                                                             encoding="utf-8")
    return undescribed


def build(out: Path) -> tuple[float, dict[str, list[int]]]:
    """Build the HTML site into ``out``; the seconds it took and, per notebook, the cells whose
    figure has no text description. Raises :class:`DocsError` when Sphinx reports a warning or
    an error (its messages are on stderr)."""
    try:
        from sphinx.cmd.build import build_main
    except ModuleNotFoundError:
        raise DocsError("the site needs Sphinx, myst-nb and sphinx-book-theme: "
                        "pip install -r requirements.txt") from None

    from .grading.release import release

    if not (DOCS / "conf.py").is_file():
        raise DocsError("the site's pages are not installed with the package; run this command "
                        "in a checkout of the attention-lab repository")
    if out.exists() and not out.is_dir():
        raise DocsError(f"{out} is a file, not a folder")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attention-lab-docs-") as tmp:
        bundle, src = Path(tmp) / "bundle", Path(tmp) / "src"
        release(bundle)
        undescribed = stage(src, bundle)
        code = build_main(["-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(Path(tmp) / "doctrees"), str(src), str(out)])
    if code:
        raise DocsError(f"sphinx-build reported problems (exit code {code}); see above")
    return time.perf_counter() - start, undescribed


def main(argv: list[str] | None = None) -> int:
    from . import _cli
    from .grading.release import ReleaseError

    parser = argparse.ArgumentParser(
        prog="python -m attention_lab docs",
        description="Build the lab's site (HTML) into OUT_DIR from the stored notebook outputs, "
                    "without executing anything; every Sphinx warning fails the build.")
    parser.add_argument("out", metavar="OUT_DIR", help="where the HTML goes (index.html)")
    args, code = _cli.parse(parser, argv)
    if args is None:
        return code
    try:
        seconds, undescribed = build(Path(args.out))
    except (DocsError, ReleaseError) as exc:
        return _cli.fail("docs", str(exc))
    for name, cells in undescribed.items():
        print(f"docs: warning: {name}: the figures of cells {', '.join(str(n + 1) for n in cells)} "
              f"have no text description (their alt text says so)", file=sys.stderr)
    print(f"built the site into {args.out} in {seconds:.0f} s: open "
          f"{Path(args.out) / 'index.html'}")
    return 0
