"""Execute one notebook in a sandboxed kernel and collect the raw outputs of its answers.

One call of :func:`run_notebook` = one submission, run by a :class:`_Job` in named steps:

1. **prepare** (once): the job's folders, the kernel's minimal environment, the cells not worth
   running;
2. **start** (per kernel): a kernel started through the sandbox (:class:`.sandbox_base.Sandbox`)
   inherits two sockets of the grader's (:mod:`.channel`), its harness channel and its stderr:
   nothing of a kernel reaches the grader's disk, and a socket cannot be reopened through
   ``/proc/self/fd``;
3. **run cells**: the student's code cells, each within the per-cell limit and all within the
   whole-notebook limit; errors are recorded, never fatal. The grader keeps no outputs and
   subscribes only to the kernel's own IOPub topics (printed text is never sent to it); ZeroMQ
   refuses frames above ``MAX_MESSAGE_BYTES`` and queues at most ``QUEUE_MESSAGES`` messages;
4. **ask for the answers**: harness cells (the source of :mod:`attention_lab.exercises.probe`)
   answer the grader over the channel, one case at a time, in the run's order;
5. **recover**: a cell that times out is interrupted and the kernel asked whether it still
   answers (the alive check); a kernel that died or hangs is killed and a new one started,
   skipping the cells that killed it (at most ``max_attempts`` kernels).

Nothing computed in the kernel is trusted except those raw outputs, judged in the grader's own
process (:mod:`.batch`); the threat model is in ``docs/design/grading.md``. The grader's own work
on a job runs in the job's thread, its CPU time bounded by ``Limits.grader_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .._compat import jupyter_client as jc_compat
from .._compat import zmq as zmq_compat
from .channel import Channel, KernelLog
from .sandbox import JobFolders, Sandbox, for_job

HARNESS_MODULE_SOURCE = (Path(__file__).resolve().parents[1] / "exercises" / "probe.py"
                         ).read_text(encoding="utf-8")
MAX_MESSAGE_BYTES = 2 ** 20  # ZeroMQ drops a connection on which a larger frame arrives
QUEUE_MESSAGES = 64  # messages ZeroMQ holds for the grader before it drops new ones
IOPUB_SECONDS = 0  # nbclient does not wait for a cell's outputs after its reply: none are kept
EXITING = "attention-lab grader: the kernel is exiting"
#: The alive check: a kernel that runs it still answers. exit(), quit() or kernel.do_shutdown()
#: in a cell do not stop the kernel at once: ipykernel sets ``exit_now`` and stops its loop 0.1 s
#: later. The check raises then.
ALIVE_CHECK_CELL = (f"if getattr(get_ipython(), 'exit_now', False):\n"
                    f"    raise SystemExit({EXITING!r})")
#: What a step says comes next: the next step, a new kernel, or the end of the job.
NEXT, RESTART, STOP = "next", "restart", "stop"


@dataclass
class Limits:
    """Time and memory limits for one submission (seconds, MiB)."""

    cell_timeout: float = 60.0
    timeout: float = 600.0
    memory_mb: int = 2048  # address space of each process
    call_seconds: float = 10.0
    check_seconds: float = 30.0
    fsize_mb: int = 64  # the largest file a kernel may write
    scratch_mb: int = 256  # the kernel's own tmpfs (with namespaces)
    max_tasks: int = 128  # processes and threads of a job
    max_attempts: int = 8
    startup_timeout: float = 60.0
    require_sandbox: bool = False
    grader_seconds: float = 20.0  # the grader's own CPU time on one job (its thread)

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
        # counted from 1, as a reader counts the cells from the top
        return f"cell {self.index + 1} {what}" + (f": {self.message}" if self.message else "")


@dataclass
class RunResult:
    records: dict = field(default_factory=dict)  # id -> raw (JSON-level) answer record
    interrupted: dict = field(default_factory=dict)  # id -> "crash" | "timeout"
    events: list = field(default_factory=list)
    timed_out: bool = False
    error: str = ""
    harness_errors: dict = field(default_factory=dict)  # id -> why the harness recorded nothing
    attempts: int = 0
    sandbox: dict = field(default_factory=dict)
    seconds: float = 0.0
    channel_problem: str = ""  # why the grader stopped reading the kernel's channel
    too_large: str = ""  # why the job stopped: the grader's own work on it exceeded its limit
    grader_seconds: float = 0.0  # the grader's CPU time on this job (its thread)


def skip_slow_optional_imports() -> None:
    """Make ``import nbformat`` fast in ``grade`` and ``submit`` (no effect once it is imported):
    jsonschema optionally imports ``rfc3987_syntax``, whose grammar takes about 4 s to build, for
    the "iri" string format, which notebooks do not use."""
    if "rfc3987_syntax" not in sys.modules and "jsonschema" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # an ImportError for jsonschema's optional import


def _harness_source(config: dict, compile_module: bool) -> str:
    """The harness cell. The first one of a kernel (``compile_module``) compiles the grader's own
    text of :mod:`attention_lab.exercises.probe` (not the package a notebook may have patched)
    into a private module; the following ones reuse it. Nothing here is secret or trusted."""
    source = HARNESS_MODULE_SOURCE if compile_module else None
    return (
        ALIVE_CHECK_CELL + "\n"
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


#: one line that defines a name: ``def f``, ``x = ...`` / ``x: T = ...``, an import. ``[ \t]``,
#: never ``\s``: a match stays on its line, so a scan is linear in the source however many
#: (blank) lines it has.
_DEFINES = re.compile(r"^[ \t]*(?:(?:async[ \t]+)?def[ \t]+(\w+)|(\w+)[ \t]*(?::[^=\n]*)?=(?!=)"
                      r"|(?:from[ \t]+\S+[ \t]+)?import[ \t]+([^#\n]*))", re.MULTILINE)
_IMPORTED = re.compile(r"[ \t]*(?:[\w.]+[ \t]+as[ \t]+(\w+)|([A-Za-z_]\w*))[ \t]*")  # one item


def names_defined(source: str) -> set[str]:
    """The names a cell defines at the start of a line (``def name``, ``name = ...``,
    ``import ... as name``, ``from ... import name``), in one pass over its text."""
    found = set()
    for m in _DEFINES.finditer(source):
        if m.group(3) is None:
            found.add(m.group(1) or m.group(2))
            continue
        for item in m.group(3).replace("(", " ").replace(")", " ").split(","):
            name = _IMPORTED.fullmatch(item)
            if name:
                found.add(name.group(1) or name.group(2))
    return found


def defined_names(source: str, names) -> set[str]:
    """Which of ``names`` a cell defines."""
    return names_defined(source) & set(names)


#: a cell longer than this is never only a call of check/hint/status (it is not parsed)
FEEDBACK_CELL_CHARS = 1000


def only_feedback(source: str) -> bool:
    """True for a cell that only calls ``check``, ``hint`` or ``status`` (one call, nothing else).

    The grader skips such cells: it runs its own checks, and the student's would only repeat the
    work (and repeat any crash or endless loop of the answer they call).
    """
    import ast

    if len(source) > FEEDBACK_CELL_CHARS:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return (len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)
            and isinstance(tree.body[0].value, ast.Call)
            and isinstance(tree.body[0].value.func, ast.Name)
            and tree.body[0].value.func.id in ("check", "hint", "status"))


def _make_client_classes():
    from queue import Empty

    import zmq
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionComplete

    class SandboxKernelClient(AsyncKernelClient):
        """Subscribes only to the kernel's own topics (``kernel.<id>.status``, ``.error``, ...):
        ipykernel publishes printed text as ``stream.*`` and displays as ``display_data``, so
        those are filtered out by the kernel's socket and never reach the grader."""

        def connect_iopub(self, identity=None):
            """jupyter_client's IOPub socket, its subscription to every topic swapped for one to
            the kernel's own (before any cell runs: nothing of the student's is sent yet)."""
            sock = super().connect_iopub(identity=identity)
            sock.setsockopt(zmq.SUBSCRIBE, b"kernel.")
            sock.setsockopt(zmq.UNSUBSCRIBE, b"")
            return sock

        async def wait_for_ready(self, timeout=None):
            """jupyter_client's wait (a kernel_info reply on shell, then a message on IOPub),
            without its last step, which waits until IOPub has been silent for 0.2 s: nbclient
            reads only the messages of its own requests, and those 0.2 s were a fifth of a
            notebook's grading."""
            deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
            while True:
                self.kernel_info()
                with contextlib.suppress(Empty):
                    msg = await self.shell_channel.get_msg(timeout=1)
                    if msg["msg_type"] == "kernel_info_reply":
                        # IOPub is connected once the request's status arrives on it
                        await self.iopub_channel.get_msg(timeout=0.2)
                        # the kernel's protocol version, as jupyter_client's wait takes it
                        self.session.adapt_version = int(
                            msg["content"]["protocol_version"].split(".")[0])
                        return
                if not await self.is_alive():
                    raise RuntimeError("Kernel died before replying to kernel_info")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

    class GradingKernelSpecs(KernelSpecManager):
        """The one kernel spec of the grader's kernels: the command is the manager's
        (:meth:`SandboxKernelManager.format_kernel_cmd`), interrupts are messages."""

        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[], display_name="grading", language="python",
                              interrupt_mode="message")

    class SandboxKernelManager(jc_compat.Launched, AsyncKernelManager):
        """Starts ``python -m ipykernel_launcher`` through the job's sandbox; interrupts with a
        message on the control channel (a signal reaches only the sandbox's outer process)."""

        kernel_client_class = SandboxKernelClient

        def configure(self, kernel: "_Kernel") -> "SandboxKernelManager":
            self.kernel = kernel
            sandbox = kernel.job.sandbox
            self.transport, self.ip = sandbox.transport, sandbox.kernel_ip
            self.client_factory = self.kernel_client_class
            self.kernel_spec_manager = GradingKernelSpecs()
            return self

        def format_kernel_cmd(self, extra_arguments=None):
            cmd = [os.path.normpath(sys.executable), "-m", "ipykernel_launcher", "-f",
                   self.connection_file]  # normpath: a '..' may cross folders not in the sandbox
            return self.kernel.job.sandbox.wrap(
                cmd + list(extra_arguments or []), attempt=self.kernel.attempt,
                connection_file=Path(self.connection_file))

        def launched(self):
            self.kernel.attach(asyncio.get_running_loop())
            # from now on, the grader's side of the channels: where the sandbox says
            ports = [self.shell_port, self.iopub_port, self.stdin_port, self.control_port,
                     self.hb_port]
            self.ip = self.kernel.job.sandbox.started(self.provisioner.pid, ports)

        def client(self, **kwargs):
            return super().client(context=self.context, **kwargs)

        def cleanup_ipc_files(self):
            """Nothing to clean: the sockets are in the kernel's scratch, gone with it."""

    class OutputlessClient(NotebookClient):
        """Keeps nothing of a cell's IOPub messages, which a kernel can forge (outputs, widget
        comms and their state, execution counts): only the end of the cell counts. A cell's
        error comes from its execute reply."""

        def process_message(self, msg, cell, cell_index):
            content = msg.get("content")
            if msg.get("msg_type") == "status" and isinstance(content, dict) \
                    and content.get("execution_state") == "idle":
                raise CellExecutionComplete()
            return None

    return SandboxKernelManager, OutputlessClient


#: nbclient's log: it logs time-outs and dead kernels, which the runner records itself
_NBCLIENT_LOG = logging.getLogger("attention_lab.grading.kernel")
_NBCLIENT_LOG.setLevel("CRITICAL")


def _zmq_context():
    """A ZeroMQ context whose sockets refuse frames above ``MAX_MESSAGE_BYTES`` (ZeroMQ drops that
    connection for good: a kernel that sends one loses that channel) and queue at most
    ``QUEUE_MESSAGES`` messages."""
    import zmq
    import zmq.asyncio

    ctx = zmq.asyncio.Context()
    ctx.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    ctx.setsockopt(zmq.RCVHWM, QUEUE_MESSAGES)
    return ctx


class _Kernel:
    """One kernel of a job (attempt number ``attempt``): its files, manager and client.

    Its notebook is the student's cells plus two of the grader's: the alive check
    (``alive_check_index``) and the harness (``harness_index``). ``timeout`` is the limit of the
    next cell executed. ``channel`` and ``log`` are the two sockets it inherits (:mod:`.channel`).
    """

    def __init__(self, job: "_Job", attempt: int):
        import nbformat

        self.job, self.attempt = job, attempt
        self.connection_file = job.folders.inp / f"kernel-{attempt}.json"
        self.channel, self.log = Channel(job.cases), KernelLog()
        KM, Client = job.client_classes
        self.context = _zmq_context()
        self.km = KM(kernel_name="python3", connection_file=str(self.connection_file),
                     context=self.context).configure(self)
        self.nb = nbformat.v4.new_notebook()
        self.nb.cells = [nbformat.from_dict(dict(c)) for c in job.cells] + [
            nbformat.v4.new_code_cell(ALIVE_CHECK_CELL), nbformat.v4.new_code_cell("")]
        self.alive_check_index, self.harness_index = len(job.cells), len(job.cells) + 1
        self.harness_sent = False  # the harness module is compiled by the first harness cell
        self.last_asked: str | None = None  # the exercise whose answer was asked for last
        # a cell out of time: nbclient interrupts it and hands back this error as its reply (its
        # pollers of the cell end with it); the name is unknown to the kernel, so no cell fakes it
        self.timed_out = f"attention-lab-grader-timeout-{secrets.token_hex(8)}"
        self.client = Client(self.nb, km=self.km, allow_errors=True, interrupt_on_timeout=True,
                             error_on_timeout={"ename": self.timed_out, "evalue": ""},
                             startup_timeout=int(job.limits.startup_timeout),
                             kernel_name="python3", record_timing=False,
                             store_widget_state=False, iopub_timeout=IOPUB_SECONDS,
                             resources={"metadata": {"path": str(job.folders.work)}},
                             log=_NBCLIENT_LOG)
        self.timeout = job.limits.cell_timeout
        self.client.timeout_func = lambda cell: self.timeout
        # exit()/quit() stop ipykernel 0.1 s *after* the cell (a race with the next cells): its
        # reply's "ask_exit" payload means "the kernel ends after this cell", whatever the load
        self.asked_exit: set[int] = set()
        self.error: tuple[str, str] | None = None  # of the last cell executed
        self.client.on_cell_executed = self._on_executed

    def _on_executed(self, cell=None, cell_index=None, execute_reply=None, **_):
        content = (execute_reply or {}).get("content") or {}
        if any(isinstance(p, dict) and p.get("source") == "ask_exit"
               for p in content.get("payload") or []):
            self.asked_exit.add(cell_index)
        if content.get("status") == "error":
            # a SyntaxError names ipykernel's file for the cell: '(1255551527.py, line 3)'
            evalue = re.sub(r" \((?:\d+\.py|<ipython-input-[^>]*>), line (\d+)\)$",
                            r" (line \1 of the cell)", str(content.get("evalue", ""))[:1000])
            self.error = (str(content.get("ename", ""))[:200], evalue)

    async def start(self, env: dict) -> None:
        await self.client.async_start_new_kernel(cwd=str(self.job.folders.work), env=env,
                                                 stdout=subprocess.DEVNULL,
                                                 stderr=self.log.kernel_fd,
                                                 stdin=subprocess.DEVNULL,
                                                 pass_fds=(self.channel.kernel_fd,))
        await self.client.async_start_new_kernel_client()

    def attach(self, loop) -> None:
        """The kernel process exists (it holds its ends of the sockets): read ours."""
        self.channel.attach(loop)
        self.log.attach(loop)

    async def execute(self, index: int) -> tuple[str, str] | None:
        """Run cell ``index``; its error ``(name, message)``, or ``None``. :class:`_TimedOut`
        once it ran out of time (interrupted); nbclient's ``DeadKernelError`` if the kernel died."""
        self.error = None
        await self.client.async_execute_cell(self.nb.cells[index], index)
        if self.error and self.error[0] == self.timed_out:
            raise _TimedOut
        return self.error

    async def shutdown(self) -> None:
        """Stop the kernel and every process of the job; never raises. The sandbox kills first
        (and waits for the processes to exit): the kernel manager, which polls every 0.1 s,
        then finds its process gone at once."""
        with contextlib.suppress(Exception):
            if self.client.kc is not None:
                self.client.kc.stop_channels()
        self.job.sandbox.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.km.shutdown_kernel(now=True), timeout=10)
        with contextlib.suppress(Exception):
            await self.km.cleanup_resources()
        self.client.kc = None
        self.channel.drain()
        self.channel.close()
        self.log.close()
        # Every socket still open is closed here, in the job's loop; ZeroMQ's term (0.1 s more)
        # runs in a thread of its own so the next notebook does not wait for it, and only then
        # does the sandbox let go of the sockets it pinned.
        for sock in zmq_compat.open_sockets(self.context):
            sock.close(linger=0)
        release = self.job.sandbox.connections_released

        def term(context=self.context, attempt=self.attempt):
            context.destroy(linger=0)
            release(attempt)

        threading.Thread(target=term, daemon=True, name="zmq-term").start()


class _Job:
    """One submission's run, across as many kernels as it takes (see the module's steps)."""

    def __init__(self, nb, folders: JobFolders, exercises: list, cases: dict, limits: Limits,
                 sandbox: Sandbox, result: RunResult):
        self.nb, self.folders, self.exercises, self.cases = nb, folders, exercises, cases
        self.limits, self.sandbox, self.result = limits, sandbox, result
        self.started = time.monotonic()
        self.deadline = self.started + limits.timeout
        self.cells = list(nb.cells)
        self.pending = [ex.id for ex in exercises]  # exercises with no record yet
        self.skip: set[int] = set()  # cells not to run (again)
        self.events: dict[tuple[int, str], CellEvent] = {}
        self.blamed: set[str] = set()  # exercises whose answer stopped a kernel
        # Cell by cell (after a kernel died at a moment that does not pin down the culprit, e.g.
        # a cell that calls exit() makes the kernel stop *after* it finished): every student
        # cell is followed by the alive check, so the cell that ends the kernel is found exactly.
        self.cell_by_cell = False
        self.start_failures = 0

    async def run(self) -> None:
        """Prepare, then per kernel: start, run cells, ask for the answers; a step that fails asks
        for a new kernel (recovering what it can) or ends the job. Meanwhile :meth:`watch` keeps the
        grader's own CPU time on the job within ``Limits.grader_seconds``."""
        self.prepare()
        self.client_classes = _make_client_classes()
        watch = asyncio.ensure_future(self.watch())
        try:
            await self.kernels()
        finally:
            watch.cancel()
        self.finish()

    async def watch(self) -> None:
        """Stop the job (its kernels killed) once this thread, where the grader does all its
        work on the job, has used ``Limits.grader_seconds`` of CPU."""
        while True:
            await asyncio.sleep(0.05)
            if time.thread_time() - self.cpu0 > self.limits.grader_seconds:
                self.result.too_large = (f"the grader's own work on this notebook took more than "
                                         f"{self.limits.grader_seconds:g} s of CPU (the limit)")
                self.sandbox.kill()
                return

    async def kernels(self) -> None:
        for attempt in range(1, self.limits.max_attempts + 1):
            if (not self.pending or self.result.too_large or self.sandbox.cancelled
                    or self.out_of_time()):
                break
            self.result.attempts = attempt
            kernel = _Kernel(self, attempt)
            try:
                for do in (self.start, self.run_cells, self.ask_answers):
                    if (step := await do(kernel)) != NEXT:
                        break
            finally:
                await kernel.shutdown()
            if step == STOP:
                break

    # ---------------------------------------------------------------- 1. prepare
    def prepare(self) -> None:
        """The job's folders, the cells not worth running, and the kernel's environment."""
        self.cpu0 = time.thread_time()
        self.folders.create()
        self.skip.update(i for i, c in enumerate(self.cells) if c.get("cell_type") == "code"
                         and only_feedback(str(c.get("source", ""))))
        limits = self.limits
        # a fresh environment, not the grader's (which may hold anything, CI tokens included)
        self.env = {
            "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin",
                                     "/usr/bin", "/bin"]),
            "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8", "USER": "student",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "MALLOC_ARENA_MAX": "2", "PYTHONDONTWRITEBYTECODE": "1",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            # the student's own check() cells obey the grader's limits, so that a slow answer
            # makes its check cell report a time-out instead of running into the cell limit
            "ATTENTION_LAB_CALL_SECONDS": f"{limits.call_seconds:g}",
            "ATTENTION_LAB_CHECK_SECONDS":
                f"{max(0.5, min(limits.check_seconds, 0.8 * limits.cell_timeout)):g}",
            **self.sandbox.env(),
        }

    # ---------------------------------------------------------------- 2. start
    async def start(self, kernel: _Kernel) -> str:
        """Start a kernel through the sandbox. One that cannot start is tried again with fresh
        ports (another program may take one of the five between their choice and the kernel's
        bind, jupyter_client issue 487), three times at most; a required sandbox that is
        missing stops the job."""
        try:
            await kernel.start(self.env)
        except Exception as exc:
            self.result.sandbox = self.sandbox.report(kernel.attempt) or self.result.sandbox
            self.start_failures += 1
            refusal = self.sandbox.refusal()
            if self.start_failures >= 3 or refusal:
                self.result.error = refusal or (
                    f"the kernel could not start: {f'{type(exc).__name__}: {exc}'[:400]} "
                    f"(its last message: {kernel.log.tail()})")
                return STOP
            return RESTART
        self.result.sandbox = self.sandbox.report(kernel.attempt)
        return NEXT

    # ---------------------------------------------------------------- 3. run cells
    def record(self, ev: CellEvent) -> None:
        self.events.setdefault((ev.index, ev.kind), ev)

    def crashed(self, idx: int, why: str) -> None:
        """Cell ``idx`` ended the kernel: recorded, and not run again."""
        self.skip.add(idx)
        self.record(CellEvent(idx, "crash", "", why))

    def out_of_time(self) -> bool:
        """Whether the job's time is up (the result then says it timed out)."""
        if time.monotonic() >= self.deadline:
            self.result.timed_out = True
        return self.result.timed_out

    def time_left(self, limit: float) -> float | None:
        """The time the next cell may take (at most ``limit``); None once the job's is up."""
        if self.out_of_time():
            return None
        return max(0.5, min(limit, self.deadline - time.monotonic()))

    async def run_cells(self, kernel: _Kernel) -> str:
        """The student's code cells in order (not the skipped ones), each within the cell limit."""
        for idx, cell in enumerate(self.cells):
            if cell.get("cell_type") == "code" and idx not in self.skip and str(
                    cell.get("source", "")).strip():
                if (step := await self.run_cell(kernel, idx)) != NEXT:
                    return step
        return NEXT

    async def run_cell(self, kernel: _Kernel, idx: int) -> str:
        """One student cell: its error recorded; a time-out interrupts it, a dead kernel asks
        for a new one (cell by cell from then on, if the culprit is not known)."""
        from nbclient.exceptions import DeadKernelError

        kernel.timeout = self.time_left(self.limits.cell_timeout)
        if kernel.timeout is None:
            return STOP
        try:
            error = await kernel.execute(idx)
        except _TimedOut:
            self.skip.add(idx)
            if self.out_of_time():
                self.record(CellEvent(idx, "timeout", "", f"the whole-notebook limit of "
                                                          f"{self.limits.timeout:g} s ran out"))
                return STOP
            self.record(CellEvent(idx, "timeout", "", f"stopped after {kernel.timeout:.0f} s "
                                                      f"(the per-cell limit)"))
            return NEXT if await self.still_answers(kernel) else RESTART
        except DeadKernelError:
            if self.cell_by_cell:  # the previous cell was checked: this one ended the kernel
                self.crashed(idx, "the kernel process died")
            else:  # maybe this cell, maybe an earlier one: find out on the next kernel
                self.cell_by_cell = True
            return RESTART
        if error:
            self.record(CellEvent(idx, "error", error[0], error[1][:300]))
        if idx in kernel.asked_exit:
            self.crashed(idx, "the cell called exit(): the kernel stops after it")
            return RESTART
        if self.cell_by_cell and not await self.still_answers(kernel):
            self.crashed(idx, "the kernel stopped or stopped answering right after this cell")
            return RESTART
        return NEXT

    # ---------------------------------------------------------------- 4. ask for the answers
    def harness_groups(self) -> list[list]:
        """The pending exercises in harness cells: one cell per exercise whose answer the notebook
        defines (its own time limit; a kernel that dies in it is pinned on it), then one cell for
        all the others (their answers are almost surely missing: each costs a dictionary look-up,
        and a cell round trip saved)."""
        defined = set().union(*(names_defined(str(c.get("source", ""))) for c in self.cells
                                if c.get("cell_type") == "code"))
        pending = [ex for ex in self.exercises if ex.id in self.pending]
        own = [ex for ex in pending if defined & set(ex.answer_names)]
        rest = [ex for ex in pending if ex not in own]
        return [[ex] for ex in own] + ([rest] if rest else [])

    async def ask_answers(self, kernel: _Kernel) -> str:
        """The grader's harness, one cell per group of exercises (:meth:`harness_groups`), each
        with its own time limit, talking to the grader over the kernel's channel; then the
        records the channel kept are collected."""
        failed: dict[str, str] = {}  # id -> the error the harness cell raised
        queue, step = self.harness_groups(), NEXT
        while queue and step == NEXT and not kernel.channel.problem:
            step = await self.ask_group(kernel, queue, failed)
        self.collect(kernel)
        if kernel.channel.problem:  # nothing more is read from this notebook's kernels
            self.result.channel_problem = kernel.channel.problem
            self.unrecorded(lambda i: kernel.channel.problem)
        elif step == RESTART and not self.result.timed_out:
            return RESTART
        elif not self.result.timed_out:  # the harness cell ran but recorded nothing
            self.unrecorded(lambda i: failed.get(i, "no result was recorded"))
        return STOP

    async def ask_group(self, kernel: _Kernel, queue: list[list], failed: dict) -> str:
        """One harness cell, for the first group of ``queue``: NEXT, RESTART (the kernel stopped,
        or hangs) or STOP (the job's time is up). A group that timed out is put back without
        the answer that hung, for the answers that had not run yet."""
        from nbclient.exceptions import DeadKernelError

        group, channel = queue.pop(0), kernel.channel
        kernel.timeout = self.time_left(self.limits.check_seconds + 5)
        if kernel.timeout is None:
            return STOP
        config = {"channel": channel.kernel_fd,
                  "exercises": [{"id": ex.id, "kind": ex.kind, "names": list(ex.answer_names)}
                                for ex in group]}
        kernel.nb.cells[kernel.harness_index].source = _harness_source(
            config, compile_module=not kernel.harness_sent)
        kernel.harness_sent = True
        channel.begin(group, self.limits.call_seconds, self.limits.check_seconds)
        try:
            error = await kernel.execute(kernel.harness_index)
        except _TimedOut:
            if self.out_of_time():
                return STOP
            running = self.answer_running(kernel, group)
            hung = [running] if running else [ex.id for ex in group if ex.id not in channel.records]
            for ex_id in hung:
                self.result.interrupted[ex_id] = "timeout"
                self.pending.remove(ex_id)
            if not await self.still_answers(kernel):
                return RESTART
            later = [ex for ex in group if ex.id in self.pending and ex.id not in channel.records]
            if later:
                queue.insert(0, later)
            return NEXT
        except DeadKernelError:
            self.kernel_stopped(kernel, self.answer_running(kernel, group))
            return RESTART
        channel.drain()
        if _exiting(error):  # a cell or the previous answer asked the kernel to exit
            self.kernel_stopped(kernel, None)
            return RESTART
        if error:
            failed.update((ex.id, f"{error[0]}: {error[1]}"[:300]) for ex in group)
        ids = {ex.id for ex in group}
        kernel.last_asked = ([i for i in channel.started if i in ids] or [group[-1].id])[-1]
        return NEXT

    def answer_running(self, kernel: _Kernel, group: list) -> str | None:
        """The exercise of ``group`` whose answer was running when its cell stopped (asked
        about, not recorded), if any."""
        current = kernel.channel.current
        ok = current in {ex.id for ex in group} and current not in kernel.channel.records
        return current if ok else None

    def kernel_stopped(self, kernel: _Kernel, running: str | None) -> None:
        """The kernel stopped during the harness: the answer running did it, else the answer
        asked for before (it stopped the kernel late), else one of the student's cells (the next
        kernel runs them cell by cell to find it)."""
        culprit = running or kernel.last_asked
        if culprit is None:
            self.cell_by_cell = True
            return
        self.result.interrupted[culprit] = "crash"  # no record of it counts
        self.blamed.add(culprit)
        if culprit in self.pending:
            self.pending.remove(culprit)

    def collect(self, kernel: _Kernel) -> None:
        """Keep the records this kernel's channel received (not the blamed answers')."""
        for i, rec in kernel.channel.records.items():
            if i in self.pending and i not in self.blamed:
                self.result.records[i] = rec
                self.pending.remove(i)

    def unrecorded(self, why) -> None:
        """The exercises still pending get no record; ``why(id)`` says why."""
        for i in self.pending:
            self.result.harness_errors[i] = why(i)
        self.pending.clear()

    # ---------------------------------------------------------------- 5. recover
    async def still_answers(self, kernel: _Kernel) -> bool:
        """Whether the kernel runs the alive check within 3 s (and is not exiting): after a cell
        that timed out (nbclient interrupted it), or after each cell, cell by cell."""
        kernel.timeout = 3
        try:
            return not _exiting(await kernel.execute(kernel.alive_check_index))
        except Exception:  # it timed out, the kernel died, or it could not be interrupted
            return False

    def finish(self) -> None:
        """What is still pending was never run: say why; the events in cell order."""
        result = self.result
        if result.too_large:
            self.unrecorded(lambda i: result.too_large)
        elif not result.timed_out and not result.error:
            self.unrecorded(lambda i: f"not run: the kernel died or hung {result.attempts} times, "
                                      f"the limit")
        result.events = sorted(self.events.values(), key=lambda e: (e.index, e.kind))
        result.seconds = time.monotonic() - self.started
        result.grader_seconds = time.thread_time() - self.cpu0


class _TimedOut(Exception):
    """A cell ran out of its time; nbclient interrupted it."""


def _exiting(error: tuple[str, str] | None) -> bool:
    return bool(error) and EXITING in error[1]


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


def run_notebook(nb, workdir: Path, exercises: list, cases: dict, limits: Limits,
                 sandbox: Sandbox | None = None) -> RunResult:
    """Run ``nb`` (an nbformat v4 notebook) in sandboxed kernels in ``workdir`` and return the
    raw records of ``exercises`` on ``cases`` (id -> :func:`.cases.run_cases`). Never raises.

    ``sandbox`` (default: :func:`.sandbox.for_job`, closed at the end): a caller that passes its
    own can stop the job from another thread with ``sandbox.kill()`` and closes it itself.
    """
    result = RunResult()
    folders = JobFolders(Path(workdir))
    own = sandbox is None
    if own:
        sandbox = for_job(folders, limits)
    elif sandbox.folders.work != folders.work:
        raise ValueError(f"sandbox is for the job folder {sandbox.folders.work}, not {workdir}")
    else:
        folders = sandbox.folders
    folders.work.mkdir(parents=True, exist_ok=True)
    try:
        _run_coroutine(_Job(nb, folders, exercises, cases, limits, sandbox, result).run())
    except Exception as exc:  # a grader bug must not abort the batch
        result.error = f"grader error while running the notebook: {type(exc).__name__}: {exc}"
        sandbox.kill()
    finally:
        if own:
            sandbox.close()
    return result


__all__ = ["Limits", "RunResult", "CellEvent", "run_notebook", "defined_names", "names_defined",
           "only_feedback", "skip_slow_optional_imports"]
