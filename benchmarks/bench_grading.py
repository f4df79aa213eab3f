"""Batch grading: 30 submissions graded with ``--jobs 1`` and with ``--jobs 2`` in the same run,
then a generated class of 300 graded with ``--jobs 2``, and the course's outputs.

The 30: the four levels' instructor solutions (every check runs and passes) and the four student
versions (every check reports 'not attempted'), repeated. The class of 300
(:mod:`benchmarks.class_generator`): ``submissions/<student>/<file>``, 75 students x 4
assignments, right, wrong, partly done and 6 hostile (endless loop, crash, memory bomb), graded
as ``python -m attention_lab grade SUBMISSIONS --out OUT --jobs 2 --cell-timeout 10 --timeout
120`` would (grading, then grades, written.csv, gradebook and feedback written); the feedback
pages are then timed on their own, per student. Each submission gets its own sandboxed kernel;
kernel start-up dominates the time per notebook.
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
        *_class_rows(quick),
        Row(GROUP, f"grade {n} notebooks, --jobs 1", times[1], "s", goal="reported"),
        Row(GROUP, f"grade {n} notebooks, --jobs 2"
            + ("" if same else f" (GRADES DIFFER in {len(diffs)}: {diffs[0]})"),
            times[2], "s", times[1], "--jobs 1",
            "<= 120 s and <= 0.6x --jobs 1" if not quick else "<= 0.6x --jobs 1",
            (times[2] <= 120 or quick) and ratio <= 0.6 and same),
        Row(GROUP, "per notebook, --jobs 1 (kernel start, cells, checks)", times[1] / n, "s",
            goal="reported"),
    ]


def _class_rows(quick: bool) -> list[Row]:
    """The generated class: grade it with --jobs 2 and write everything; feedback per student."""
    from attention_lab.grading.batch import Limits, grade_folder
    from attention_lab.grading.feedback import write_feedback
    from attention_lab.grading.report import write_report

    from .class_generator import make_class

    n = 24 if quick else 300
    tmp = Path(tempfile.mkdtemp(prefix="bench-class-"))
    try:
        subs, out = tmp / "submissions", tmp / "out"
        kinds = make_class(subs, n)
        t0 = time.perf_counter()
        report = grade_folder(subs, out, jobs=2, seed=1, progress=False,
                              limits=Limits.for_cells(10, 120))
        write_report(report, out)
        total = time.perf_counter() - t0
        students = {s.student for s in report.counted()}
        (tmp / "again").mkdir()
        t0 = time.perf_counter()
        write_feedback(report, tmp / "again")
        pages = time.perf_counter() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    right = [s for s in report.submissions if kinds[s.file] == "right"]
    full = sum(s.total == s.out_of for s in right)
    check = "" if full == len(right) else f"; ONLY {full} of {len(right)} right ones at full marks"
    return [
        Row(GROUP, f"grade a class of {n} ({len(students)} students x 4 assignments, "
                   f"{sum(k not in ('right', 'wrong', 'partly done') for k in kinds.values())} "
                   f"hostile), --jobs 2, cell limit 10 s, all outputs written{check}",
            total, "s", goal="reported" if quick else "<= 180 s",
            ok=None if quick else (total <= 180 and not check)),
        Row(GROUP, f"feedback pages, per student ({len(students)} students, "
                   f"{len(report.counted())} pages)", pages / max(1, len(students)), "s",
            goal="reported"),
    ]
