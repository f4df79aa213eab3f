"""Stored notebook outputs travel: no round-off and no timing in them, and the run's
comparison that makes the browser run-all (torch's generic kernels, one thread) a portability
check can fail.

nbval re-executes every notebook in this process's environment; the browser run-all
(tests/browser/test_browser_lab.py) executes each again with ``ATEN_CPU_CAPABILITY=default`` and
one thread and compares its outputs with the stored ones (:func:`_outputs.differences`), so a
stored output that depends on the CPU's kernels or the thread count fails the test command.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path

import pytest

from _outputs import ROOT, differences, problems, sanitisers, texts

NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)


def test_the_scanner_finds_round_off_and_timings_and_passes_verdicts():
    bad = ["chunk 16: max |streaming - materialised| = 2.4e-07", "max |diff|  9.5e-07",
           "[0.19995117 0.19995117]", "difference 1.2e-12", "took 3.2 ms", "12 µs",
           "0.00000024", "latency 0.165 ms per call", "3 µs per eligible pair"]
    good = ["agrees with SDPA within 1e-5: yes", "within 1e-4: yes", "weights [0.123 0.361]",
            "1,048,576 scores", "safe fill -3.403e+38", "0.361084", "entropy 1.510 nats",
            "4.0 MiB", "latency  not timed (repeat=0)"]
    san = sanitisers()
    for text in bad:
        assert problems(text, san), text
    for text in good:
        assert not problems(text, san), text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_no_stored_output_shows_round_off_or_a_timing(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    san = sanitisers()
    found = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            for text in texts(out):
                found += [f"{path.relative_to(ROOT)} cell {i}: {p}" for p in problems(text, san)]
    assert not found, "\n".join(found)


def _first_number(nb: dict) -> dict:
    """The first stream output of ``nb`` that prints a digit."""
    return next(o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
                if o["output_type"] == "stream" and any(ch.isdigit() for ch in "".join(o["text"])))


def test_differences_catch_a_changed_output_and_forgive_what_nbval_forgives():
    """The comparison the browser run-all applies: a run equal to the stored notebook passes; a
    changed digit, a missing output or a missing cell fails; a split stream, another widget id
    and another figure image pass, and another timing fails (a stored output never has one)."""
    stored = json.loads((ROOT / "notebooks" / "03_maths_and_code.ipynb").read_text())
    assert differences(stored, copy.deepcopy(stored)) == []

    ran = copy.deepcopy(stored)
    out = _first_number(ran)
    text = "".join(out["text"])
    digit = next(ch for ch in text if ch.isdigit())
    out["text"] = text.replace(digit, str((int(digit) + 1) % 10), 1)
    assert len(differences(stored, ran)) == 1

    ran = copy.deepcopy(stored)
    cell = next(c for c in ran["cells"] if c["cell_type"] == "code" and c.get("outputs"))
    cell["outputs"] = []
    assert differences(stored, ran)
    ran["cells"].remove(cell)
    assert differences(stored, ran) == [f"{_count(ran)} code cells ran, {_count(stored)} stored"]

    cell = {"cell_type": "code", "metadata": {}, "source": "", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": ["memory 4.0 MiB\n", "ok\n"]},
        {"output_type": "display_data", "metadata": {}, "data": {
            "image/png": "AAAA", "text/plain": "<Figure size 640x480 with 1 Axes>",
            "application/vnd.jupyter.widget-view+json": {"model_id": "a" * 32}}}]}
    other = copy.deepcopy(cell)
    other["outputs"][0:1] = [{"output_type": "stream", "name": "stdout", "text": "memory 4.0 "},
                             {"output_type": "stream", "name": "stdout", "text": "MiB\nok\n"}]
    other["outputs"][-1]["data"].update({"image/png": "BBBB", "text/plain": "<Figure size "
                                         "800x600 with 2 Axes>", "application/vnd.jupyter."
                                         "widget-view+json": {"model_id": "b" * 32}})
    assert differences({"cells": [cell]}, {"cells": [other]}) == []
    timed = copy.deepcopy(cell)
    timed["outputs"][0]["text"] = ["took 3.2 ms per call\n", "ok\n"]
    retimed = copy.deepcopy(timed)
    retimed["outputs"][0]["text"] = ["took 9 ms per call\n", "ok\n"]
    assert differences({"cells": [timed]}, {"cells": [retimed]})
    other["outputs"][0]["name"] = "stderr"
    assert differences({"cells": [cell]}, {"cells": [other]})


def _count(nb: dict) -> int:
    return sum(c["cell_type"] == "code" for c in nb["cells"])


#: the test files that execute notebooks, and which: with nbval (pyproject's addopts, testpaths
#: "notebooks") that is each repository notebook twice
RUNNERS = {
    "browser/test_browser_lab.py": "each repository notebook once: the portable run-all",
    "browser/harness.py": "the JupyterLab driver (run_all, start_run) the browser tests call",
    "browser/test_browser_hub.py": "the release bundle's student copies, on three students' "
                                   "servers side by side",
    "test_stale_figures.py": "a notebook written in tmp_path",
    "test_docs_commands.py": "notebooks written in tmp_path (cells that hang or kill the kernel)",
}
EXECUTES = re.compile(r"\.run_all\(|\.start_run\(|NotebookClient|ExecutePreprocessor"
                      r"|nbtools\.execute\(|--nbval|[\"']-m[\"'],\s*[\"']pytest")


def test_each_notebook_is_executed_at_most_twice_by_the_test_command():
    """nbval executes every notebook under notebooks/ once and the browser run-all once (it checks
    that it runs each exactly once); no other test file executes notebooks or starts another
    pytest (as the separate generic-kernel nbval pass did, a third execution)."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["testpaths"].count("notebooks") == 1 and "--nbval" in options["addopts"]
    tests = ROOT / "tests"
    found = {p.relative_to(tests).as_posix() for p in tests.rglob("*.py")
             if p != Path(__file__) and EXECUTES.search(p.read_text(encoding="utf-8"))}
    assert found == set(RUNNERS), f"files that execute notebooks: {sorted(found)}"
