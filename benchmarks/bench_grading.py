"""Batch grading: what the sandbox costs per kernel, and a class of 300 submissions with --jobs 2.

* **Kernel start with and without isolation**, interleaved: one small notebook (one answer) graded
  alone in a namespace sandbox (bubblewrap, cgroups, hard limits) and in the fallback sandbox
  (hard limits only), from the job's start to its kernel stopped; and the sandbox's own set-up
  (the launcher running ``true`` through bubblewrap, and directly).
* **A class**: 300 submissions across the four assignments (the four exercise notebooks): per
  assignment 30 right (the solutions), 15 partly done, 15 wrong, 10 not attempted and 5 hostile
  (a crash, an output flood, a fork bomb, reading and network attempts, and an endless loop or a
  memory bomb), graded by ``grade_folder`` with ``--jobs 2`` and a class's limits (10 s per
  cell). Reported: the total (goal <= 3 min), per notebook the kernel's CPU time (from the job's
  cgroup) and the grader's, and whether every right submission got full marks.
"""

from __future__ import annotations

import re
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
ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "notebooks" / "exercises"
MIX = {"right": 30, "partial": 15, "wrong": 15, "student": 10, "hostile": 5}  # per assignment
HOSTILE = {
    "crash": "import os\nos._exit(1)",
    "flood": ('print("x" * 2**26)\nk = get_ipython().kernel\nfor _ in range(50):\n'
              '    k.session.send(k.iopub_socket, "status", {"execution_state": "y" * 2**19}, '
              'ident=b"kernel.x.status")'),
    "forks": ("import subprocess\nps = []\ntry:\n    while len(ps) < 300:\n"
              "        ps.append(subprocess.Popen(['sleep', '60']))\nexcept OSError:\n    pass\n"
              "for p in ps[3:]:\n    p.kill()\n    p.wait()"),
    "snoop": ("import glob, socket\nfound = {}\nfor p in glob.glob('/tmp/*') + ['/etc/passwd', "
              "'/proc/1/environ']:\n    try:\n        found[p] = open(p).read(100)\n"
              "    except OSError:\n        pass\ntry:\n    socket.create_connection(('127.0.0.1', "
              "22), timeout=1)\nexcept OSError:\n    pass"),
    "loop": "while True:\n    pass",
    "memory": "x = bytearray(2**34)",
}
MUTATIONS = (("axis=-1", "axis=0"), ("np.max(", "np.min("), (" @ ", " * "), ("<", "<="),
             ("keepdims=True", "keepdims=False"), ("np.exp(", "np.exp2("))


def _answer_cells(nb) -> dict:
    from attention_lab.exercises.registry import EXERCISES as REG
    from attention_lab.grading.runner import defined_names

    names = [n for ex in REG.values() for n in ex.answer_names]
    return {i: defined_names(c.source, names) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and defined_names(c.source, names)}


def class_corpus(folder: Path, n: int = 300) -> dict:
    """Write ``n`` submissions (the mix of ``MIX``, cycling the four assignments) into
    ``folder``; {file name: kind}."""
    import nbformat

    solutions = sorted((EXERCISES / "solutions").glob("*_solutions.ipynb"))
    students = sorted(EXERCISES.glob("*.ipynb"))
    # the mix spread evenly, so that any prefix (a quick run) has some of each
    kinds = [k for k, _ in sorted(((k, (j + 0.5) / c) for k, c in MIX.items() for j in range(c)),
                                  key=lambda pair: pair[1])]
    attacks = [a for a in HOSTILE if a != "memory"]
    seen_hostile = 0
    made = {}
    for i in range(n):
        level = i % 4
        kind = kinds[(i // 4) % len(kinds)]
        nb = nbformat.read(solutions[level], as_version=4)
        student = nbformat.read(students[level], as_version=4)
        cells = _answer_cells(nb)
        if kind == "student":
            nb = student
        elif kind == "partial":  # every other answer still the stub
            stubs = {frozenset(v): student.cells[j].source
                     for j, v in _answer_cells(student).items()}
            for k, j in enumerate(sorted(cells)):
                if k % 2 and frozenset(cells[j]) in stubs:
                    nb.cells[j].source = stubs[frozenset(cells[j])]
        elif kind == "wrong":
            for j in cells:
                for old, new in MUTATIONS:
                    nb.cells[j].source = nb.cells[j].source.replace(old, new)
        elif kind == "hostile":
            attack = attacks[seen_hostile % len(attacks)]
            seen_hostile += 1
            if attack == "loop" and level % 2:  # two endless loops in 300: each costs 10 s
                attack = "memory"
            nb.cells.insert(min(cells) + 1, nbformat.v4.new_code_cell(HOSTILE[attack]))
            kind = f"hostile-{attack}"
        name = f"s{i:03d}_{kind}_{solutions[level].name.split('_')[0]}.ipynb"
        nbformat.write(nb, str(folder / name))
        made[name] = kind
    return made


def _start_cost(repeat: int) -> dict:
    """Median seconds: a one-answer notebook graded alone, isolated and not (interleaved); the
    sandbox's set-up alone (launcher + bwrap running ``true``, and the launcher alone)."""
    import nbformat

    from attention_lab.exercises.checks import cases_for, encoded_inputs
    from attention_lab.exercises.registry import EXERCISES as REG
    from attention_lab.grading import sandbox as S
    from attention_lab.grading.namespaces import NamespaceSandbox, trial_command
    from attention_lab.grading.runner import Limits, run_notebook

    ex = REG["2.1"]
    inputs = {ex.id: encoded_inputs(cases_for(ex, 1))}
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
        launcher = [sys.executable, "-I", "-S", str(S.LAUNCHER), str(config), "--"]
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
    from attention_lab.exercises.registry import EXERCISES as REG
    from attention_lab.grading.batch import Limits, grade_folder
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
    n = 40 if quick else 300
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        kinds = class_corpus(tmp, n)
        load0 = _load()
        c0 = time.process_time()
        t0 = time.perf_counter()
        report = grade_folder(tmp, jobs=2, seed=1, progress=False,
                              limits=Limits.for_cells(10, 120))
        seconds = time.perf_counter() - t0
        grader_cpu = time.process_time() - c0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    kernel_cpu = sum(s.sandbox.get("cpu_seconds_used") or 0 for s in report.submissions)
    levels = {lv: sum(1 for ex in REG.values() if ex.auto and ex.level == lv) for lv in range(1, 5)}
    right = [s for s in report.submissions if kinds[s.file] == "right"]
    full = all(s.total == levels[int(re.search(r"_(\d\d)\.ipynb$", s.file).group(1))]
               for s in right)
    hostile = sum(k.startswith("hostile") for k in kinds.values())
    rows += [
        Row(GROUP, f"grade a class of {n} (4 assignments; right, partly done, wrong, not "
                   f"attempted, {hostile} hostile), --jobs 2, 10 s per cell; load average "
                   f"{load0} at the start", seconds, "s",
            goal="<= 180 s" if not quick else "reported", ok=seconds <= 180 if not quick else None),
        Row(GROUP, "per notebook: wall time (--jobs 2)", seconds / n, "s", goal="reported"),
        Row(GROUP, "per notebook: the kernel's CPU time (its cgroup)", kernel_cpu / n, "s",
            goal="reported"),
        Row(GROUP, "per notebook: the grader's CPU time", grader_cpu / n, "s", goal="reported"),
        Row(GROUP, f"every right submission has full marks ({len(right)})", float(full), "",
            goal="yes", ok=full),
    ]
    return rows
