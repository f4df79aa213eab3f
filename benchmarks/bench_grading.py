"""Batch grading: 30 submissions graded with ``--jobs 1`` and with ``--jobs 2`` in the same run.

The corpus is a class's worth of exercise notebooks: the four levels' instructor solutions (every
check runs and passes) and the four student versions (every check reports 'not attempted'),
repeated to 30 files. Each submission gets its own sandboxed kernel, exactly as
``python -m attention_lab grade`` does; kernel start-up dominates the time per notebook.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from .common import Row

GROUP = "grading"
ORDER = 40
ROOT = Path(__file__).resolve().parent.parent


def _corpus(folder: Path, n: int) -> None:
    ex = ROOT / "notebooks" / "exercises"
    sources = sorted((ex / "solutions").glob("*_solutions.ipynb")) + sorted(ex.glob("*.ipynb"))
    for i in range(n):
        src = sources[i % len(sources)]
        shutil.copyfile(src, folder / f"student{i:03d}_{src.name}")


def run(quick: bool = False) -> list[Row]:
    from attention_lab.grading.runner import skip_slow_optional_imports

    skip_slow_optional_imports()
    from attention_lab.grading.batch import Limits, grade_folder

    n = 8 if quick else 30
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        _corpus(tmp, n)
        times, statuses = {}, {}
        for jobs in (1, 2):
            t0 = time.perf_counter()
            report = grade_folder(tmp, jobs=jobs, seed=1, progress=False,
                                  limits=Limits(cell_timeout=60, timeout=600))
            times[jobs] = time.perf_counter() - t0
            statuses[jobs] = {s.file: {i: (g.status, g.message.splitlines()[0][:80]
                                           if g.message else "")
                                       for i, g in s.exercises.items()}
                              for s in report.submissions}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    diffs = [f"{f} {i}: {statuses[1][f][i][0]} -> {statuses[2][f][i][0]} "
             f"({statuses[2][f][i][1] or statuses[1][f][i][1]})"
             for f in statuses[1] for i in statuses[1][f]
             if statuses[1][f][i][0] != statuses[2][f][i][0]]
    same = not diffs
    ratio = times[2] / times[1]
    return [
        Row(GROUP, f"grade {n} notebooks, --jobs 1", times[1], "s", goal="reported"),
        Row(GROUP, f"grade {n} notebooks, --jobs 2"
            + ("" if same else f" (GRADES DIFFER in {len(diffs)}: {diffs[0]})"),
            times[2], "s", times[1], "--jobs 1",
            "<= 120 s and <= 0.6x --jobs 1" if not quick else "<= 0.6x --jobs 1",
            (times[2] <= 120 or quick) and ratio <= 0.6 and same),
        Row(GROUP, "per notebook, --jobs 1 (kernel start, cells, checks)", times[1] / n, "s",
            goal="reported"),
    ]
