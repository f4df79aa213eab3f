"""Stored notebook outputs travel: no round-off, no unsanitised timing, and the notebooks pass nbval
with torch's generic kernels on one thread (as on another CPU), not only on this machine.

The README's test command runs nbval on every notebook in this process's environment (this CPU's
kernels, its thread count); ``test_notebooks_pass_with_generic_kernels_and_one_thread`` runs the
same nbval pass again in a subprocess with ``ATEN_CPU_CAPABILITY=default`` and one thread, so a
stored output that depends on the kernels or the thread count fails the command on any machine.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)

# Round-off: a number printed below what float32/float64 computations guarantee across CPUs.
ROUND_OFF = re.compile(r"\d(?:\.\d+)?e-(?:0[5-9]|[1-9]\d)"   # exponent <= -5: 2.4e-07, 1e-12
                       r"|\d\.\d{7,}")                        # 7+ decimals: 0.19995117
# A timing left in a stored output after the nbval sanitiser ran.
TIMING = re.compile(r"\d(?:\.\d+)? ?(?:ms|µs|us|ns)\b|\d(?:\.\d+)? ?s (?:per|elapsed)\b")


def _sanitisers():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "nbval-sanitize.cfg", encoding="utf-8")
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


def problems(text: str, sanitisers=()) -> list[str]:
    """The round-off-looking numbers and unsanitised timings in one output's text."""
    for regex, replace in sanitisers:
        text = regex.sub(replace, text)
    found = []
    for line in text.splitlines():
        if ROUND_OFF.search(line):
            found.append(f"round-off {ROUND_OFF.search(line).group()!r} in {line.strip()!r}")
        if TIMING.search(line):
            found.append(f"timing {TIMING.search(line).group()!r} in {line.strip()!r}")
    return found


def _texts(output: dict) -> list[str]:
    if "text" in output:
        return ["".join(output["text"])]
    data = output.get("data", {})
    return ["".join(data[k]) for k in ("text/plain", "text/markdown", "text/html") if k in data]


def test_the_scanner_finds_round_off_and_timings_and_passes_verdicts():
    bad = ["chunk 16: max |streaming - materialised| = 2.4e-07", "max |diff|  9.5e-07",
           "[0.19995117 0.19995117]", "difference 1.2e-12", "took 3.2 ms", "12 µs",
           "0.00000024"]
    good = ["agrees with SDPA within 1e-5: yes", "within 1e-4: yes", "weights [0.123 0.361]",
            "1,048,576 scores", "safe fill -3.403e+38", "0.361084", "entropy 1.510 nats",
            "4.0 MiB", "latency 0.165 ms per call"]
    san = _sanitisers()
    for text in bad:
        assert problems(text, san), text
    for text in good:
        assert not problems(text, san), text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_no_stored_output_shows_round_off_or_a_timing(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    san = _sanitisers()
    found = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            for text in _texts(out):
                found += [f"{path.relative_to(ROOT)} cell {i}: {p}" for p in problems(text, san)]
    assert not found, "\n".join(found)


def test_notebooks_pass_with_generic_kernels_and_one_thread():
    """nbval on every notebook with torch's default (non-vectorised) CPU kernels and one thread:
    the stored outputs must not depend on either. Two pytest processes share the notebooks (each
    kernel runs on one thread, so together they use two cores)."""
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability(), "
                               "torch.get_num_threads())"],
        env=env, capture_output=True, text=True, check=True)
    assert probe.stdout.split() == ["DEFAULT", "1"], probe.stdout
    # the research notebook takes about as long as all the exercise notebooks together
    first = [p for p in NOTEBOOKS if p.name.startswith("04") or "exercises" in p.parts]
    groups = [first, [p for p in NOTEBOOKS if p not in first]]
    assert sorted(groups[0] + groups[1]) == NOTEBOOKS and all(groups)
    runs = [subprocess.Popen([sys.executable, "-m", "pytest", "-q",
                              *(str(p.relative_to(ROOT)) for p in group)],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True) for group in groups]
    try:
        outs = [run.communicate(timeout=900)[0] for run in runs]
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.wait()
    for run, out in zip(runs, outs):
        assert run.returncode == 0, f"nbval with ATEN_CPU_CAPABILITY=default, one thread:\n" \
                                    f"{out[-6000:]}"
        assert re.search(r"\d+ passed", out) and " failed" not in out, out[-6000:]
