"""Batch grading: what the sandbox costs per kernel, and a generated class of 300 with --jobs 2.

* **Kernel start with and without isolation**, interleaved: one small notebook (one answer) graded
  alone in a namespace sandbox (bubblewrap, cgroups, hard limits) and in the fallback sandbox
  (hard limits only), from the job's start to its kernel stopped; and the sandbox's own set-up
  (the launcher running ``true`` through bubblewrap, and directly).
* **The grader's own CPU per submission** (its job thread: parsing, running, reading the
  kernel's channel, judging): a notebook padded to several sizes (linear in its size), a kernel
  that floods its channel and a notebook of 40,000 empty cells (bounded: a ``too_large`` row).
* **A class** (:mod:`benchmarks.class_generator`): ``submissions/<student>/<file>``, 75 students
  x 4 assignments, right, wrong, partly done and hostile (endless loop, crash, memory bomb, output
  flood, fork bomb, snooping), graded as ``python -m attention_lab grade SUBMISSIONS --out OUT
  --jobs 2 --cell-timeout 10 --timeout 120`` would (grades, written.csv, gradebook and feedback
  written); per notebook the kernel's CPU time (from the job's cgroup) and the grader's; whether
  every right submission got full marks; the feedback pages timed on their own, per student;
  ``summary.html`` for the class (goal <= 2 s); ``--resume`` after an interruption at 50 % (the
  first half's grades kept: goal, at most 0.6 x the whole class in one run, with the same grades).
* **Ctrl-C** during a grading whose kernel loops: from SIGINT to the command's exit (goal <= 2 s).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import Row

GROUP = "grading"
ORDER = 40


def _start_cost(repeat: int) -> dict:
    """Median seconds: a one-answer notebook graded alone, isolated and not (interleaved); the
    sandbox's set-up alone (launcher + bwrap running ``true``, and the launcher alone)."""
    import nbformat

    from attention_lab.exercises.registry import EXERCISES as REG
    from attention_lab.grading import sandbox as S
    from attention_lab.grading.cases import run_cases
    from attention_lab.grading.namespaces import NamespaceSandbox, trial_command
    from attention_lab.grading.runner import Limits, run_notebook
    from attention_lab.grading.sandbox_base import LAUNCHER

    ex = REG["2.1"]
    inputs = {ex.id: run_cases(ex, 1)}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import numpy as np\n"
                                          "def dot_scores(query, keys):\n    return keys @ query")]
    limits = Limits(cell_timeout=30, timeout=120)
    bwrap = shutil.which("bwrap")
    make = {"isolated": lambda f: NamespaceSandbox(f, limits, bwrap),
            "process": lambda f: S.ProcessSandbox(f, limits, "benchmark")}
    times: dict = {k: [] for k in make}
    tmp = Path(tempfile.mkdtemp(prefix="bench-start-"))
    try:
        for i in range(repeat):
            for kind, sandbox in make.items():
                folders = S.JobFolders(tmp / f"{kind}-{i}" / "work")
                box = sandbox(folders)
                t0 = time.perf_counter()
                run = run_notebook(nb, folders.work, [ex], inputs, limits, sandbox=box)
                times[kind].append(time.perf_counter() - t0)
                box.close()
                assert run.records.get("2.1", {}).get("kind") == "calls", run.error
        config = tmp / "launch.json"
        config.write_text('{"limits": {"core_bytes": 0}}')
        launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(config), "--"]
        for _ in range(repeat * 3):
            for kind, cmd in (("setup-bwrap", trial_command(bwrap)), ("setup-plain", ["true"])):
                t0 = time.perf_counter()
                subprocess.run(launcher + cmd, check=True)
                times.setdefault(kind, []).append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {k: statistics.median(v) for k, v in times.items()}


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def run(quick: bool = False) -> list[Row]:
    from attention_lab.grading.runner import skip_slow_optional_imports

    skip_slow_optional_imports()
    from attention_lab.grading.sandbox import isolation_problem

    rows = []
    if not isolation_problem():
        cost = _start_cost(3 if quick else 10)
        rows += [
            Row(GROUP, "one-answer notebook graded alone, isolated (bubblewrap namespaces, "
                       "cgroups, hard limits)", cost["isolated"], "s", cost["process"],
                "without isolation (hard limits only)", "reported"),
            Row(GROUP, "sandbox set-up alone: launcher + bwrap running `true`",
                cost["setup-bwrap"], "s", cost["setup-plain"], "launcher running `true`",
                "reported"),
        ]
    return rows + _grader_cpu_rows(quick) + _class_rows(quick)


#: a kernel that floods every socket pair it inherited with junk lines
_FLOOD = """
import os, socket
junk = b"x\\n\\n" * (20 * 2 ** 20)
for name in os.listdir("/proc/self/fd"):
    try:
        s = socket.socket(fileno=os.dup(int(name)))
        pair = s.family == socket.AF_UNIX and not s.getsockname() and not s.getpeername()
        s.close()
        if pair:
            os.write(int(name), junk)
    except OSError:
        pass
"""


def _grader_cpu_rows(quick: bool) -> list[Row]:
    """The grader's CPU time on one submission (``grader_cpu_seconds`` of grades.json: its job
    thread), graded alone: the level-2 solution, the same padded with short cells to 4x and 16x
    its cells (``pad`` cells of ``x = 1`` and 40 blank lines), a kernel flooding its channel with
    60 MB, and 40,000 empty cells."""
    import nbformat

    from attention_lab.grading.batch import Batch, Limits, identify
    from attention_lab.grading.sandbox import ScratchRoot
    from attention_lab.grading.submissions import read_submissions

    solution = Path(__file__).resolve().parents[1] / "notebooks" / "exercises" / "solutions" \
        / "02_mechanics_exercises_solutions.ipynb"
    base = nbformat.read(solution, as_version=4)
    n = len(base.cells)
    pad = "x = 1" + "\n" * 40

    def padded(k):
        nb = nbformat.from_dict(base)
        nb.cells += [nbformat.v4.new_code_cell(pad) for _ in range(k)]
        return nb

    flood = nbformat.from_dict(base)
    flood.cells.insert(1, nbformat.v4.new_code_cell(_FLOOD))
    empty = padded(0)
    empty.cells += [nbformat.v4.new_code_cell("") for _ in range(40_000)]
    sizes = [1, 4] if quick else [1, 4, 16]
    notebooks = {f"x{k}": padded((k - 1) * n) for k in sizes}
    notebooks.update(flood=flood, empty=empty)
    tmp = Path(tempfile.mkdtemp(prefix="bench-grader-"))
    try:
        for name, nb in notebooks.items():
            nbformat.write(nb, str(tmp / f"{name}.ipynb"))
        subs = read_submissions(sorted(tmp.glob("*.ipynb")), tmp)
        identify(subs)
        with ScratchRoot() as scratch:
            batch = Batch(Limits.for_cells(10, 120), 1, scratch.path)
            graded = {Path(s.rel).stem: (batch.grade(i, s), s) for i, s in enumerate(subs)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def size(name):
        return f"{len(graded[name][1].data or b'') / 1024:.0f} KB" if graded[name][1].data \
            else "too large to read"

    one = graded["x1"][0].grader_seconds
    rows = [Row(GROUP, f"grader's own CPU per submission: the level-2 solution ({n} cells, "
                       f"{size('x1')})", one, "s", goal="reported")]
    for k in sizes[1:]:
        g = graded[f"x{k}"][0]
        rows.append(Row(GROUP, f"... padded to {k}x its cells ({k * n} cells, {size(f'x{k}')})",
                        g.grader_seconds, "s", one, "the solution", f"linear: <= {k}x",
                        g.grader_seconds <= k * one and g.status == "graded"))
    for name, what in (("flood", "a kernel flooding its channel with 60 MB of junk lines"),
                       ("empty", "40,000 empty cells (a too_large row)")):
        g = graded[name][0]
        limit = Limits().grader_seconds
        rows.append(Row(GROUP, f"... {what}: {g.status}", g.grader_seconds, "s", one,
                        "the solution", f"bounded: <= {limit:g} s", g.grader_seconds <= limit))
    return rows


def _class_rows(quick: bool) -> list[Row]:
    """The generated class: grade it with --jobs 2 and write everything; feedback per student."""
    from attention_lab.grading.batch import Limits, grade_folder
    from attention_lab.grading.feedback import write_feedback
    from attention_lab.grading.outputs import write_report
    from attention_lab.grading.report import Report
    from attention_lab.grading.summary import write_summary

    from .class_generator import make_class

    n = 24 if quick else 300
    tmp = Path(tempfile.mkdtemp(prefix="bench-class-"))
    try:
        subs, out = tmp / "submissions", tmp / "out"
        kinds = make_class(subs, n)
        load0 = _load()
        c0 = time.process_time()
        t0 = time.perf_counter()
        report = grade_folder(subs, out, jobs=2, seed=1, progress=False,
                              limits=Limits.for_cells(10, 120))
        write_report(report, out)
        total = time.perf_counter() - t0
        grader_cpu = time.process_time() - c0
        students = {s.student for s in report.counted()}
        (tmp / "again").mkdir()
        t0 = time.perf_counter()
        write_feedback(report, tmp / "again")
        pages = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_summary(report, tmp / "again")
        page = time.perf_counter() - t0
        # an interruption at 50 %: the first half of the grades is what the interrupted run
        # kept; --resume grades the other half only (same seed)
        half = Report.from_dict(report.as_dict())
        half.submissions = half.submissions[: n // 2]
        t0 = time.perf_counter()
        resumed = grade_folder(subs, out, jobs=2, seed=1, progress=False,
                               limits=Limits.for_cells(10, 120), previous=half, resume=True)
        resume = time.perf_counter() - t0
        same = [a.as_dict()["exercises"] for a in report.submissions] == [
            b.as_dict()["exercises"] for b in resumed.submissions]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    kernel_cpu = sum((s.sandbox or {}).get("cpu_seconds_used") or 0 for s in report.submissions)
    right = [s for s in report.submissions if kinds[s.file] == "right"]
    full = sum(s.total == s.out_of for s in right)
    check = "" if full == len(right) else f"; ONLY {full} of {len(right)} right ones at full marks"
    hostile = sum(k not in ("right", "wrong", "partly done") for k in kinds.values())
    return [
        Row(GROUP, f"grade a class of {n} ({len(students)} students x 4 assignments, {hostile} "
                   f"hostile), --jobs 2, cell limit 10 s, all outputs written; load average "
                   f"{load0} at the start{check}",
            total, "s", goal="reported" if quick else "<= 180 s",
            ok=None if quick else (total <= 180 and not check)),
        Row(GROUP, "per notebook: wall time (--jobs 2)", total / n, "s", goal="reported"),
        Row(GROUP, "per notebook: the kernel's CPU time (its cgroup)", kernel_cpu / n, "s",
            goal="reported"),
        Row(GROUP, "per notebook: the grader's CPU time", grader_cpu / n, "s", goal="reported"),
        Row(GROUP, f"feedback pages, per student ({len(students)} students, "
                   f"{len(report.counted())} pages)", pages / max(1, len(students)), "s",
            goal="reported"),
        Row(GROUP, f"summary.html for the class of {n} (pass rates, histograms, messages)",
            page, "s", goal="<= 2 s", ok=page <= 2),
        Row(GROUP, f"--resume after an interruption at 50 % ({n - n // 2} of {n} left), "
                   f"--jobs 2; same grades as one run: {'yes' if same else 'NO'}", resume, "s",
            total, "the whole class in one run", goal="<= 0.6 x one run",
            ok=resume <= 0.6 * total and same),
        *_stop_rows(),
    ]


def _stop_rows() -> list[Row]:
    """Ctrl-C during a grading whose kernel loops (cell limit 300 s): from the signal to the
    command's exit, with its kernels killed and its scratch folder removed."""
    import os
    import signal

    import nbformat

    tmp = Path(tempfile.mkdtemp(prefix="bench-stop-"))
    try:
        subs = tmp / "subs"
        subs.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("while True:\n    pass")]
        nbformat.write(nb, str(subs / "loop.ipynb"))
        (tmp / "tmp").mkdir()
        proc = subprocess.Popen([sys.executable, "-m", "attention_lab", "grade", str(subs),
                                 "--out", str(tmp / "out"), "--cell-timeout", "300",
                                 "--timeout", "600", "--quiet"],
                                env={**os.environ, "TMPDIR": str(tmp / "tmp")},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(8)  # the kernel is running the loop
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        stop = time.perf_counter() - t0
        clean = not any((tmp / "tmp").iterdir())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [Row(GROUP, f"Ctrl-C with a looping kernel: signal to exit (kernels killed; scratch "
                       f"removed: {'yes' if clean else 'NO'})", stop, "s", goal="<= 2 s",
                ok=stop <= 2 and clean)]
