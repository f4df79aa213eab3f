"""A stored figure never lags behind the code that draws it. nbval compares text, not images, so
``nbtools execute`` records a hash of the drawing code in each notebook and ``nbtools check``
(and the pair test of test_repo.py) reports a notebook whose images were drawn by other code."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from attention_lab import nbtools

ROOT = nbtools.ROOT
FIGURED = ROOT / "notebooks" / "04_research.ipynb"  # heatmaps, plots and explorer snapshots


def drawing_code_copy(tmp_path: Path) -> Path:
    """The package's drawing code, copied to ``tmp_path`` as it lies under ROOT."""
    for entry in nbtools.DRAWING_CODE:
        src, dst = ROOT / entry, tmp_path / entry
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dst)
    return tmp_path


def test_every_stored_figure_was_drawn_by_the_current_code():
    notebooks = [ipynb for ipynb, _ in nbtools.pairs(ROOT / "notebooks") if ipynb.exists()]
    problems = [p for ipynb in notebooks for p in nbtools.stale_figures(ipynb)]
    assert not problems, "\n".join(problems)
    recorded = [nbformat.read(p, as_version=4).metadata.get(nbtools.FIGURES_KEY) for p in notebooks
                if p.stem in ("01_intuition", "02_mechanics", "03_maths_and_code", "04_research")]
    assert recorded and all(recorded), "a level notebook records no drawing code"


def test_a_figure_drawn_by_older_code_is_caught(tmp_path):
    """The copy of today's code draws 04's figures; change the weight colour scale in the copy
    (as the palette change that left 04's heatmaps in viridis did) and 04 is reported stale."""
    root = drawing_code_copy(tmp_path)
    assert nbtools.stale_figures(FIGURED, root=root) == []
    render = root / "attention_lab" / "plots" / "_render.py"
    text = render.read_text()
    assert "CMAP = " in text
    render.write_text(text.replace("CMAP = ", "CMAP = 'viridis' or ", 1))
    problems = nbtools.stale_figures(FIGURED, root=root)
    assert len(problems) == 1 and "drawn by other plotting or widget code" in problems[0]
    assert "nbtools execute" in problems[0] and "04_research.py" in problems[0]


def test_a_new_drawing_file_makes_figures_stale_but_comments_and_docstrings_do_not(tmp_path):
    root = drawing_code_copy(tmp_path)
    live = root / "attention_lab" / "plots" / "live.py"
    text = live.read_text()
    assert text.startswith('"""')  # a module docstring, reworded below
    live.write_text("# a new comment\n" + text.replace('"""', '"""Reworded. ', 1)
                    + "\n\n# a comment at the end\n")
    assert nbtools.stale_figures(FIGURED, root=root) == []
    (root / "attention_lab" / "widgets" / "extra.py").write_text("COLOUR = 'red'\n")
    assert nbtools.stale_figures(FIGURED, root=root)


def test_a_notebook_with_images_and_no_record_is_stale_one_without_images_is_not(tmp_path):
    nb = nbformat.read(FIGURED, as_version=4)
    nb.metadata.pop(nbtools.FIGURES_KEY)
    nbformat.write(nb, tmp_path / "old.ipynb")
    assert "records no drawing code" in nbtools.stale_figures(tmp_path / "old.ipynb")[0]
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            for mime in nbtools._IMAGES:
                out.get("data", {}).pop(mime, None)
    nbformat.write(nb, tmp_path / "text_only.ipynb")
    assert nbtools.stale_figures(tmp_path / "text_only.ipynb") == []


def test_execute_records_the_code_the_figures_were_drawn_by(tmp_path):
    py = tmp_path / "tiny.py"
    py.write_text("# %%\nimport matplotlib.pyplot as plt\n\nplt.figure(figsize=(1, 1))\n"
                  "plt.plot([0, 1])\nplt.show()\n")
    out = nbtools.execute(py, timeout=120)
    nb = nbformat.read(out, as_version=4)
    assert nb.metadata[nbtools.FIGURES_KEY] == {"drawing_code": nbtools.drawing_hash()}
    assert any("image/png" in o.get("data", {}) for o in nb.cells[0].outputs)
    assert nbtools.stale_figures(out) == []


def test_execute_stores_one_output_per_stream_however_the_kernel_chunked_it(tmp_path):
    """A stored notebook does not depend on how the kernel's writes were chunked (it varies by
    load): consecutive writes to stdout are one output."""
    py = tmp_path / "chunks.py"
    py.write_text("# %%\nimport time\n\nfor part in 'abc':\n"
                  "    print(part, flush=True)\n    time.sleep(0.2)\n")
    out = nbtools.execute(py, timeout=120)
    outputs = nbformat.read(out, as_version=4).cells[0].outputs
    assert [(o.output_type, o.name, o.text) for o in outputs] == [("stream", "stdout", "a\nb\nc\n")]


def test_executing_an_unchanged_notebook_twice_writes_the_same_bytes(tmp_path):
    """Widget views get model ids numbered in order, not the kernel's random ones, so a maintainer
    who re-executes a notebook with explorers sees no change in its outputs."""
    py = tmp_path / "widgets.py"
    py.write_text("# %%\nimport ipywidgets as W\n\nW.IntSlider(3)\n\n# %%\nW.VBox([W.Button()])\n")
    first = nbtools.execute(py, timeout=120).read_bytes()
    nb = nbformat.reads(first.decode(), as_version=4)
    views = [o.data["application/vnd.jupyter.widget-view+json"]["model_id"]
             for c in nb.cells for o in c.outputs]
    assert len(set(views)) == 2
    assert nbtools.execute(py, timeout=120).read_bytes() == first
