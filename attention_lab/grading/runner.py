"""Execute one notebook in a sandboxed kernel and collect the raw outputs of its answers.

One call of :func:`run_notebook` = one submission, run by a :class:`_Job` in named steps:

1. **prepare** (once): the scratch folder (:class:`.sandbox.JobFolders`: the kernel's working
   directory, temp dir, IPython dir, and the only place it may write when the sandbox allows),
   the grader's inputs, the kernel's environment, the cells not worth running;
2. **start** (per kernel): nbclient/jupyter_client start a kernel through the sandbox
   (:class:`.sandbox.Sandbox`: limits, confinement), stdout/stderr going to a log file;
3. **run cells**: the student's code cells, one at a time, each with the per-cell time limit and
   all of them within the whole-notebook limit; errors are recorded, never fatal; outputs are
   not kept (only error names), so a cell printing gigabytes cannot fill the grader's memory;
4. **probe**: the grader's harness cell, one per exercise: the source of :mod:`.probe`, executed
   in a fresh namespace, looks up each answer by name, calls it on the grader's inputs (read from
   a file) and appends signed JSON lines to a results file;
5. **recover**: a cell that times out is interrupted and the kernel asked whether it still
   answers; a kernel that died (``os._exit``, a crash) or hangs is killed (the sandbox stops
   every process of the job) and a new one started, skipping the cells that killed it, and the
   harness continues with the exercises not yet recorded (at most ``max_attempts`` kernels).

Nothing computed in the kernel is trusted except those raw outputs; the comparison with the
reference happens in the grader's process (:mod:`.batch`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import re
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .sandbox import JobFolders, Sandbox, for_job

HERE = Path(__file__).resolve().parent
PROBE_SOURCE = (HERE / "probe.py").read_text(encoding="utf-8")
RESULTS_MAX_BYTES = 64 * 2 ** 20
EXITING = "attention-lab grader: the kernel is exiting"
#: Liveness probe. exit(), quit() or kernel.do_shutdown() in a cell do not stop the kernel at
#: once: ipykernel sets ``exit_now`` and stops its loop 0.1 s later. The probe catches that.
PROBE_CELL = (f"if getattr(get_ipython(), 'exit_now', False):\n"
              f"    raise SystemExit({EXITING!r})")
#: What a step says comes next: the next step, a new kernel, or the end of the job.
NEXT, RESTART, STOP = "next", "restart", "stop"


@dataclass
class Limits:
    """Time and memory limits for one submission (seconds, MiB)."""

    cell_timeout: float = 60.0
    timeout: float = 600.0
    memory_mb: int = 2048
    call_seconds: float = 10.0
    check_seconds: float = 30.0
    fsize_mb: int = 256
    max_attempts: int = 8
    startup_timeout: float = 60.0
    require_landlock: bool = False

    @classmethod
    def for_cells(cls, cell_timeout: float = 60.0, timeout: float = 600.0, **others) -> "Limits":
        """Limits whose per-call and per-check times follow the per-cell limit (``grade`` and
        ``submit``): a call gets at most half a cell's time, the checks of an exercise a cell's."""
        return cls(cell_timeout=cell_timeout, timeout=timeout,
                   call_seconds=min(10.0, cell_timeout / 2),
                   check_seconds=min(30.0, max(cell_timeout, 5.0)), **others)


@dataclass
class CellEvent:
    index: int  # position of the cell in the notebook (0-based, counting every cell)
    kind: str  # error | timeout | crash
    name: str = ""
    message: str = ""

    def describe(self) -> str:
        what = {"error": f"raised {self.name}", "timeout": "did not finish in time",
                "crash": "crashed the kernel"}[self.kind]
        text = f"cell {self.index} {what}"
        if self.message:
            text += f": {self.message}"
        return text


@dataclass
class RunResult:
    records: dict = field(default_factory=dict)  # id -> raw (JSON-level) probe record
    interrupted: dict = field(default_factory=dict)  # id -> "crash" | "timeout"
    events: list = field(default_factory=list)
    timed_out: bool = False
    error: str = ""
    harness_errors: dict = field(default_factory=dict)  # id -> why the harness recorded nothing
    attempts: int = 0
    sandbox: dict = field(default_factory=dict)
    seconds: float = 0.0
    tampered_lines: int = 0


def skip_slow_optional_imports() -> None:
    """Make ``import nbformat`` fast in the command-line tools.

    jsonschema (imported by nbformat) optionally imports ``rfc3987_syntax``, which builds a parser
    grammar at import time: about 4 s on this project's machines, more than grading a notebook.
    It only checks the "iri" string format, which notebooks do not use. Called by ``grade`` and
    ``submit`` before nbformat is imported; has no effect if it is already imported.
    """
    if "rfc3987_syntax" not in sys.modules and "jsonschema" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # an ImportError for jsonschema's optional import


def _harness_source(config: dict, first: bool) -> str:
    """The harness cell. The first one of a kernel compiles the probe's source into a private
    module (the grader's own text, not the package a notebook may have patched); the following
    ones reuse it. Nothing here is trusted: only the recorded outputs matter, and the grader
    judges them in its own process."""
    source = PROBE_SOURCE if first else None
    return (
        PROBE_CELL + "\n"
        "def __attention_lab_grader(user_ns, config, source):\n"
        "    import sys, types\n"
        "    name = '__attention_lab_grader_probe__'\n"
        "    if source is not None:\n"
        "        mod = types.ModuleType(name)\n"
        "        exec(compile(source, '<attention-lab grader>', 'exec'), mod.__dict__)\n"
        "        sys.modules[name] = mod\n"
        "    sys.modules[name].run_harness(user_ns, config)\n"
        f"__attention_lab_grader(globals(), {config!r}, {source!r})\n"
        "del __attention_lab_grader\n"
    )


def defined_names(source: str, names) -> set[str]:
    """Which of ``names`` a cell defines (``def name`` or ``name = ...``)."""
    found = set()
    for n in names:
        if re.search(rf"^\s*(def\s+{re.escape(n)}\b|{re.escape(n)}\s*(:[^=]*)?=(?!=))", source,
                     re.MULTILINE):
            found.add(n)
    return found


def only_feedback(source: str) -> bool:
    """True for a cell that only calls ``check``, ``hint`` or ``status`` (one call, nothing else).

    The grader skips such cells: it runs its own checks, and the student's would only repeat the
    work (and repeat any crash or endless loop of the answer they call).
    """
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return (len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)
            and isinstance(tree.body[0].value, ast.Call)
            and isinstance(tree.body[0].value.func, ast.Name)
            and tree.body[0].value.func.id in ("check", "hint", "status"))


def read_results(path: Path, key: bytes, known_ids) -> tuple[dict, list, int]:
    """Parse the harness's results file: ({id: record}, [started ids], n_bad_lines).

    Lines whose HMAC does not verify, that are not valid JSON, or that name unknown exercises are
    counted and ignored. Never raises.
    """
    done: dict = {}
    started: list = []
    bad = 0
    try:
        size = path.stat().st_size
        if size > RESULTS_MAX_BYTES:
            return done, started, 1
        raw = path.read_bytes()
    except OSError:
        return done, started, 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        text, sep, mac = line.rpartition(b"\t")
        if not sep:
            bad += 1
            continue
        want = hmac.new(key, text, hashlib.sha256).hexdigest().encode()
        if not hmac.compare_digest(want, mac.strip()):
            bad += 1
            continue
        try:
            msg = json.loads(text)
        except (ValueError, RecursionError):
            bad += 1
            continue
        if not isinstance(msg, dict) or msg.get("id") not in known_ids:
            bad += 1
            continue
        if msg.get("event") == "start":
            started.append(msg["id"])
        elif msg.get("event") == "done" and isinstance(msg.get("record"), dict):
            done[msg["id"]] = msg["record"]
        else:
            bad += 1
    return done, started, bad


def _make_client_classes():
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    class SandboxKernelManager(AsyncKernelManager):
        """Starts ``python -m ipykernel_launcher`` through ``wrap`` (the sandbox's command)."""

        wrap = None

        def format_kernel_cmd(self, extra_arguments=None):
            cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file]
            return self.wrap(cmd + list(extra_arguments or []))

    class QuietClient(NotebookClient):
        """Keeps only error outputs (name and message, truncated); counts the rest."""

        output_bytes = 0

        def output(self, outs, msg, display_id, cell_index):
            if msg.get("msg_type") == "error":
                from nbformat.v4 import new_output

                c = msg.get("content", {})
                out = new_output("error", ename=str(c.get("ename", ""))[:200],
                                 evalue=str(c.get("evalue", ""))[:1000], traceback=[])
                outs.append(out)
                return out
            try:
                self.output_bytes += len(json.dumps(msg.get("content", {}))[:10 ** 7])
            except (TypeError, ValueError):
                pass
            return None

        def clear_output(self, outs, msg, cell_index):
            return None

    return SandboxKernelManager, QuietClient


class _Kernel:
    """One kernel of a job (attempt number ``attempt``): its files, manager and client.

    Its notebook is the student's cells plus two of the grader's: the liveness probe
    (``probe_index``) and the harness (``harness_index``). ``timeout`` is the limit of the next
    cell executed.
    """

    def __init__(self, job: "_Job", attempt: int):
        import nbformat

        self.job, self.attempt = job, attempt
        folders = job.folders
        self.connection_file = folders.inp / f"kernel-{attempt}.json"
        self.results = folders.out / f"results-{attempt}.jsonl"
        self.results.write_text("")
        KM, Client = job.client_classes
        self.km = KM(kernel_name="python3", connection_file=str(self.connection_file))
        self.km.wrap = lambda cmd: job.sandbox.wrap(cmd, attempt=attempt,
                                                    connection_file=self.connection_file,
                                                    writable=[self.results])
        self.nb = nbformat.v4.new_notebook()
        self.nb.cells = [nbformat.from_dict(dict(c)) for c in job.cells] + [
            nbformat.v4.new_code_cell(PROBE_CELL), nbformat.v4.new_code_cell("")]
        self.probe_index, self.harness_index = len(job.cells), len(job.cells) + 1
        self.client = Client(self.nb, km=self.km, allow_errors=True, interrupt_on_timeout=False,
                             startup_timeout=int(job.limits.startup_timeout),
                             kernel_name="python3", record_timing=False,
                             store_widget_state=False, iopub_timeout=4,
                             resources={"metadata": {"path": str(folders.work)}})
        self.timeout = job.limits.cell_timeout
        self.client.timeout_func = lambda cell: self.timeout
        # exit()/quit() make ipykernel stop its loop 0.1 s *after* the cell, so whether the next
        # cells still run is a race. The execute reply carries an "ask_exit" payload: treat it as
        # "the kernel ends after this cell", every time, whatever the machine's load.
        self.asked_exit: set[int] = set()
        self.client.on_cell_executed = self._on_executed
        self.log = open(folders.inp / f"kernel-{attempt}.log", "ab")

    def _on_executed(self, cell=None, cell_index=None, execute_reply=None, **_):
        payload = ((execute_reply or {}).get("content") or {}).get("payload") or []
        if any(isinstance(p, dict) and p.get("source") == "ask_exit" for p in payload):
            self.asked_exit.add(cell_index)

    async def start(self, env: dict) -> None:
        await self.client.async_start_new_kernel(cwd=str(self.job.folders.work), env=env,
                                                 stdout=self.log, stderr=self.log,
                                                 stdin=subprocess.DEVNULL)
        provisioner = getattr(self.km, "provisioner", None)
        self.job.sandbox.kernel_started(getattr(provisioner, "pgid", None))
        await self.client.async_start_new_kernel_client()

    async def execute(self, index: int):
        return await self.client.async_execute_cell(self.nb.cells[index], index)

    async def shutdown(self) -> None:
        """Stop the kernel and every process of the job; never raises."""
        try:
            if self.client.kc is not None:
                self.client.kc.stop_channels()
        except Exception:
            pass
        try:
            await asyncio.wait_for(self.km.shutdown_kernel(now=True), timeout=10)
        except Exception:
            pass
        self.job.sandbox.kill()
        try:
            await self.km.cleanup_resources()
        except Exception:
            pass
        self.client.kc = None
        self.log.close()


class _Job:
    """One submission's run, across as many kernels as it takes (see the module's steps)."""

    def __init__(self, nb, folders: JobFolders, exercises: list, inputs: dict, limits: Limits,
                 sandbox: Sandbox, result: RunResult):
        self.nb, self.folders, self.exercises, self.inputs = nb, folders, exercises, inputs
        self.limits, self.sandbox, self.result = limits, sandbox, result
        self.started = time.monotonic()
        self.deadline = self.started + limits.timeout
        self.cells = list(nb.cells)
        self.ids = [ex.id for ex in exercises]
        self.pending = list(self.ids)  # exercises with no record yet
        self.skip: set[int] = set()  # cells not to run (again)
        self.events: dict[tuple[int, str], CellEvent] = {}
        self.blamed: set[str] = set()  # exercises whose answer stopped a kernel
        # Careful mode (after a kernel died at a moment that does not pin down the culprit, e.g.
        # a cell that calls exit() makes the kernel stop *after* it finished): every student
        # cell is followed by a liveness probe, so the cell that ends the kernel is found exactly.
        self.careful = False
        self.start_failures = 0

    async def run(self) -> None:
        """Prepare, then per kernel: start, run cells, probe; a step that fails asks for a new
        kernel (recovering what it can) or ends the job."""
        self.prepare()
        self.client_classes = _make_client_classes()
        for attempt in range(1, self.limits.max_attempts + 1):
            if not self.pending:
                break
            if time.monotonic() >= self.deadline:
                self.result.timed_out = True
                break
            self.result.attempts = attempt
            kernel = _Kernel(self, attempt)
            try:
                step = await self.start(kernel)
                if step == NEXT:
                    step = await self.run_cells(kernel)
                if step == NEXT:
                    step = await self.probe(kernel)
            finally:
                await kernel.shutdown()
            if step == STOP:
                break
        self.finish()

    # ---------------------------------------------------------------- 1. prepare
    def prepare(self) -> None:
        """The job's folders, its signing key, the grader's inputs (one read-only file per
        exercise), the cells not worth running, and the kernel's environment."""
        self.folders.create()
        self.key = secrets.token_bytes(32)
        self.inputs_paths = {}
        for ex in self.exercises:
            path = self.inputs_paths[ex.id] = self.folders.inp / f"inputs-{ex.id}.json"
            path.write_text(json.dumps({ex.id: self.inputs.get(ex.id, [])}, allow_nan=False),
                            encoding="utf-8")
        self.skip.update(i for i, c in enumerate(self.cells) if c.get("cell_type") == "code"
                         and only_feedback(str(c.get("source", ""))))
        limits = self.limits
        env = dict(os.environ)
        env.update({
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "MALLOC_ARENA_MAX": "2", "PYTHONDONTWRITEBYTECODE": "1",
            **self.folders.kernel_env(),
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            # the student's own check() cells obey the grader's limits, so that a slow answer
            # makes its check cell report a time-out instead of running into the cell limit
            "ATTENTION_LAB_CALL_SECONDS": f"{limits.call_seconds:g}",
            "ATTENTION_LAB_CHECK_SECONDS":
                f"{max(0.5, min(limits.check_seconds, 0.8 * limits.cell_timeout)):g}",
            **self.sandbox.env(),
        })
        env.pop("JPY_SESSION_NAME", None)
        self.env = env

    # ---------------------------------------------------------------- 2. start
    async def start(self, kernel: _Kernel) -> str:
        """Start a kernel through the sandbox. One that cannot start is tried again with fresh
        ports (another program may take one of the five between their choice and the kernel's
        bind, jupyter_client issue 487), three times at most; a required sandbox that is
        missing stops the job."""
        try:
            await kernel.start(self.env)
        except Exception as exc:
            report = self.sandbox.report(kernel.attempt)
            if report:
                self.result.sandbox = report
            self.start_failures += 1
            refusal = self.sandbox.refusal(self.result.sandbox)
            if self.start_failures >= 3 or refusal:
                self.result.error = refusal or (
                    f"the kernel could not start: {f'{type(exc).__name__}: {exc}'[:400]}")
                return STOP
            return RESTART
        self.result.sandbox = self.sandbox.report(kernel.attempt)
        return NEXT

    # ---------------------------------------------------------------- 3. run cells
    def record(self, ev: CellEvent) -> None:
        self.events.setdefault((ev.index, ev.kind), ev)

    async def run_cells(self, kernel: _Kernel) -> str:
        """The student's code cells in order (not the skipped ones), each within the cell limit."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        for idx, cell in enumerate(self.cells):
            if cell.get("cell_type") != "code" or idx in self.skip or not str(
                    cell.get("source", "")).strip():
                continue
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self.result.timed_out = True
                return STOP
            kernel.timeout = max(0.5, min(self.limits.cell_timeout, remaining))
            try:
                ran = await kernel.execute(idx)
                for out in ran.get("outputs", []):
                    if out.get("output_type") == "error":
                        self.record(CellEvent(idx, "error", out.get("ename", ""),
                                              str(out.get("evalue", ""))[:300]))
                if idx in kernel.asked_exit:
                    self.skip.add(idx)
                    self.record(CellEvent(idx, "crash", "", "the cell called exit(): the kernel "
                                                            "stops after it"))
                    return RESTART
                if self.careful and not await self.recover(kernel, interrupt=False):
                    self.skip.add(idx)
                    self.record(CellEvent(idx, "crash", "", "the kernel stopped or stopped "
                                                            "answering right after this cell"))
                    return RESTART
            except CellTimeoutError:
                await _cancel_stale_pollers()
                self.skip.add(idx)
                if time.monotonic() >= self.deadline:
                    self.result.timed_out = True
                    return STOP
                self.record(CellEvent(idx, "timeout", "", f"stopped after {kernel.timeout:.0f} s"))
                if not await self.recover(kernel):
                    return RESTART
            except DeadKernelError:
                await _cancel_stale_pollers()
                if self.careful:  # the previous cell was probed: this one ended the kernel
                    self.skip.add(idx)
                    self.record(CellEvent(idx, "crash", "", "the kernel process died"))
                else:  # maybe this cell, maybe an earlier one: find out on the next kernel
                    self.careful = True
                return RESTART
        return NEXT

    # ---------------------------------------------------------------- 4. probe
    async def probe(self, kernel: _Kernel) -> str:
        """The grader's harness: one cell per exercise not yet recorded, each with its own time
        limit; then the records are collected from the results file."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        failed: dict[str, str] = {}  # id -> the error the harness cell raised
        first, previous, step = True, None, STOP
        for ex in [ex for ex in self.exercises if ex.id in self.pending]:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self.result.timed_out = True
                break
            config = {"inputs": str(self.inputs_paths[ex.id]), "results": str(kernel.results),
                      "key": self.key.hex(), "call_seconds": self.limits.call_seconds,
                      "total_seconds": self.limits.check_seconds,
                      "exercises": [{"id": ex.id, "kind": ex.kind,
                                     "names": list(ex.answer_names)}]}
            kernel.nb.cells[kernel.harness_index].source = _harness_source(config, first)
            first = False
            kernel.timeout = max(0.5, min(remaining, self.limits.check_seconds + 5))
            try:
                ran = await kernel.execute(kernel.harness_index)
                if _exiting(ran):  # a cell or the previous answer asked the kernel to exit
                    if previous is not None:
                        self.blame(previous)
                    else:
                        self.careful = True
                    step = RESTART
                    break
                for out in ran.get("outputs", []):
                    if out.get("output_type") == "error":
                        failed[ex.id] = f"{out.get('ename')}: {out.get('evalue')}"[:300]
            except CellTimeoutError:
                await _cancel_stale_pollers()
                if time.monotonic() >= self.deadline:
                    self.result.timed_out = True
                    break
                self.result.interrupted[ex.id] = "timeout"
                self.pending.remove(ex.id)
                if not await self.recover(kernel):
                    step = RESTART
                    break
            except DeadKernelError:
                await _cancel_stale_pollers()
                _, started, _ = read_results(kernel.results, self.key, set(self.ids))
                if ex.id in started:  # the answer was running
                    self.blame(ex.id)
                elif previous is not None:  # the previous answer stopped the kernel late
                    self.blame(previous)
                else:  # before any answer ran: one of the student's cells did it
                    self.careful = True
                step = RESTART
                break
            previous = ex.id
        self.collect(kernel)
        if self.result.timed_out:
            return STOP
        if step == RESTART:
            return RESTART
        for i in list(self.pending):  # the harness cell ran but recorded nothing
            self.result.harness_errors[i] = failed.get(i, "no result was recorded")
            self.pending.remove(i)
        return STOP

    def blame(self, exercise_id: str) -> None:
        """The answer of ``exercise_id`` stopped the kernel: no record of it counts."""
        self.result.interrupted[exercise_id] = "crash"
        self.blamed.add(exercise_id)
        if exercise_id in self.pending:
            self.pending.remove(exercise_id)

    def collect(self, kernel: _Kernel) -> None:
        """Keep the verified records of this kernel's results file (not the blamed answers')."""
        done, _, bad = read_results(kernel.results, self.key, set(self.ids))
        self.result.tampered_lines += bad
        for i, rec in done.items():
            if i in self.pending and i not in self.blamed:
                self.result.records[i] = rec
                self.pending.remove(i)

    # ---------------------------------------------------------------- 5. recover
    async def recover(self, kernel: _Kernel, interrupt: bool = True) -> bool:
        """After a cell timed out: interrupt, then check that the kernel answers within 3 s.
        With ``interrupt=False``: only the liveness check (careful mode)."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        if interrupt:
            try:
                await kernel.km.interrupt_kernel()
            except Exception:
                return False
        kernel.timeout = 3
        try:
            ran = await kernel.execute(kernel.probe_index)
            return not _exiting(ran)
        except (CellTimeoutError, DeadKernelError):
            await _cancel_stale_pollers()
            return False
        except Exception:
            return False

    def finish(self) -> None:
        """What is still pending was never run: say why; the events in cell order."""
        result = self.result
        if self.pending and not result.timed_out and not result.error:
            for i in self.pending:
                result.harness_errors[i] = (f"not run: the kernel died or hung {result.attempts} "
                                            f"times, the limit")
        result.events = sorted(self.events.values(), key=lambda e: (e.index, e.kind))
        result.seconds = time.monotonic() - self.started


def _exiting(cell) -> bool:
    return any(out.get("output_type") == "error" and EXITING in str(out.get("evalue", ""))
               for out in cell.get("outputs", []))


async def _cancel_stale_pollers() -> None:
    """nbclient leaves the output poller of a timed-out cell running (CellTimeoutError is a
    control signal); it would steal the next cell's messages. Cancel it and its liveness poller."""
    stale = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()
             and getattr(t.get_coro(), "__qualname__", "").endswith(
                 ("_async_poll_output_msg", "_async_poll_kernel_alive", "_async_poll_for_reply"))]
    for t in stale:
        t.cancel()
    if stale:
        await asyncio.gather(*stale, return_exceptions=True)


def _run_coroutine(coro) -> None:
    """``asyncio.run(coro)``, also from a thread whose event loop is already running (a Jupyter
    kernel, or Playwright's sync API in the same process): then in a fresh worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="grader") as pool:
        pool.submit(asyncio.run, coro).result()


def run_notebook(nb, workdir: Path, exercises: list, inputs: dict, limits: Limits,
                 sandbox: Sandbox | None = None) -> RunResult:
    """Run ``nb`` (an nbformat v4 notebook) in sandboxed kernels in ``workdir`` and return the
    raw records of ``exercises``. Never raises; problems end up in the result.

    ``sandbox`` (default: :func:`.sandbox.for_job` for ``workdir``) confines the kernels; a
    caller that keeps it can stop the job from another thread with ``sandbox.kill()``.
    """
    result = RunResult()
    folders = JobFolders(Path(workdir))
    if sandbox is None:
        sandbox = for_job(folders, limits)
    elif sandbox.folders != folders:
        raise ValueError(f"sandbox is for the job folder {sandbox.folders.work}, not {workdir}")
    folders.work.mkdir(parents=True, exist_ok=True)
    try:
        _run_coroutine(_Job(nb, folders, exercises, inputs, limits, sandbox, result).run())
    except Exception as exc:  # a grader bug must not abort the batch
        result.error = f"grader error while running the notebook: {type(exc).__name__}: {exc}"
        sandbox.kill()
    return result


__all__ = ["Limits", "RunResult", "CellEvent", "run_notebook", "read_results", "defined_names",
           "only_feedback", "skip_slow_optional_imports"]
