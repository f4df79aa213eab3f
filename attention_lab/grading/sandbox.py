"""How a grading kernel is confined: the interface the runner calls, and which sandbox a job gets.

**The interface** (grader side). For every submission the runner gets a :class:`Sandbox` from
:func:`for_job` and uses it for every kernel it starts: :meth:`~Sandbox.env` (the kernel's
variables), :meth:`~Sandbox.path` (a job file as the kernel sees it), :attr:`~Sandbox.transport`
and :attr:`~Sandbox.kernel_ip` (where the kernel binds its ZeroMQ channels), :meth:`~Sandbox.wrap`
(the command that starts the kernel confined; it keeps the descriptors the runner passes),
:meth:`~Sandbox.started` (where the grader connects once it runs),
:meth:`~Sandbox.connections_released` (the grader's sockets to that kernel are closed),
:meth:`~Sandbox.report` (what was applied, for grades.json),
:meth:`~Sandbox.refusal` and :meth:`~Sandbox.kill` (stop every process of the job; also called by
the batch on Ctrl-C).

**The sandboxes.** :func:`isolation_problem` tries bubblewrap once per process. Where it works, a
job gets a :class:`~.namespaces.NamespaceSandbox` (own PID, network, mount, IPC and UTS
namespaces, a size-capped scratch, no capabilities, a pids and CPU cgroup, hard limits; see
:mod:`.namespaces`). Where it does not (no ``bwrap``, no user namespaces, not Linux), a job gets a
:class:`ProcessSandbox`: the same hard limits and a session of its own, nothing more; the grader
says so once and records it, and ``--require-sandbox`` refuses to run.

Both start the kernel through :mod:`.launch` (limits, cgroups, then ``exec``). The scratch folders
of a batch live in one :func:`scratch_root`, locked while the batch runs, so the next run removes
whatever a grader that died left behind.
"""

from __future__ import annotations

import abc
import fcntl
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = Path(__file__).resolve().with_name("launch.py")
SCRATCH_PREFIX = "attention-lab-batch-"
GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class JobFolders:
    """One submission's folder on the grader's side, ``work.parent``::

        work/   the kernel's working directory (without namespaces; else it has its own scratch)
        home/   TMPDIR, IPYTHONDIR, ... (without namespaces)
        in/     connection files, launcher configurations: read-only for the kernel
        out/    the launcher's and bubblewrap's reports, the package view, the grader's links
                to the kernel's sockets (not visible to the kernel)

    ``shared``: a folder of the batch that its jobs share (the kernels' view of the package is
    built there once); ``None``: the job builds its own in ``out/``.
    """

    work: Path
    shared: Path | None = None

    @property
    def home(self) -> Path:
        return self.work.parent / "home"

    @property
    def out(self) -> Path:
        return self.work.parent / "out"

    @property
    def inp(self) -> Path:
        return self.work.parent / "in"

    def create(self) -> None:
        for d in (self.work, self.home, self.out, self.inp):
            d.mkdir(parents=True, exist_ok=True)
        for sub in ("tmp", "ipython", "runtime", "mpl"):
            (self.home / sub).mkdir(exist_ok=True)


def kernel_dirs(home: str) -> dict[str, str]:
    """Where the kernel's libraries keep their files: all below ``home``."""
    return {"HOME": home, "IPYTHONDIR": f"{home}/ipython", "MPLCONFIGDIR": f"{home}/mpl",
            "TMPDIR": f"{home}/tmp", "JUPYTER_RUNTIME_DIR": f"{home}/runtime"}


class Sandbox(abc.ABC):
    """How one submission's kernels are confined and how its processes are stopped.

    One instance per submission. ``limits`` is the runner's :class:`~.runner.Limits`.
    """

    #: the keys of :meth:`report` that go into grades.json (per submission)
    REPORT_KEYS: tuple[str, ...] = ()
    #: ZeroMQ transport and address the kernel binds (``ipc``: a path prefix)
    transport = "tcp"
    kernel_ip = "127.0.0.1"

    def __init__(self, folders: JobFolders, limits) -> None:
        self.folders, self.limits = folders, limits
        self.cancelled = False  # the batch was interrupted: start no further kernel

    def cancel(self) -> None:
        """The batch is stopping (Ctrl-C): kill the job's processes and start no new kernel."""
        self.cancelled = True
        self.kill()

    def env(self) -> dict[str, str]:
        """Variables the kernel gets on top of the runner's minimal environment."""
        return kernel_dirs(str(self.folders.home))

    def path(self, host: Path) -> str:
        """The job file ``host`` (in ``in/`` or ``out/``) as the kernel sees it."""
        return str(host)

    @abc.abstractmethod
    def wrap(self, kernel_cmd: list[str], *, attempt: int, connection_file: Path) -> list[str]:
        """The command that starts ``kernel_cmd`` confined (kernel number ``attempt``;
        ``connection_file`` is where ``kernel_cmd`` says it is on the grader's side). The
        descriptors the kernel is started with reach it under the same numbers."""

    def started(self, pid: int, ports: list[int]) -> str:
        """The kernel's launcher runs as ``pid`` and binds ``ports``: the address the grader
        connects to."""
        return self.kernel_ip

    def connections_released(self, attempt: int) -> None:
        """The grader's sockets to kernel number ``attempt`` are closed (called from any
        thread)."""

    def limits_config(self) -> dict:
        """The hard limits :mod:`.launch` sets (soft = hard)."""
        limits = self.limits
        return {"limits": {"memory_bytes": limits.memory_mb * 2 ** 20,
                           "file_size_bytes": limits.fsize_mb * 2 ** 20,
                           "cpu_seconds": int(limits.timeout * 2 + 60), "core_bytes": 0}}

    def launcher(self, attempt: int, config: dict, cmd: list[str]) -> list[str]:
        """``cmd`` run by :mod:`.launch` with ``config`` (written to ``in/``)."""
        path = self.folders.inp / f"launch-{attempt}.json"
        config = {**self.limits_config(), **config, "report": str(self.report_path(attempt)),
                  "parent": os.getpid()}
        path.write_text(json.dumps(config), encoding="utf-8")
        return [sys.executable, "-I", "-S", str(LAUNCHER), str(path), "--", *cmd]

    def report_path(self, attempt: int) -> Path:
        return self.folders.out / f"launch-{attempt}.json"

    def report(self, attempt: int) -> dict:
        """What was applied to kernel number ``attempt`` (``{}`` if unknown)."""
        try:
            report = json.loads(self.report_path(attempt).read_text())
        except (OSError, ValueError):
            return {}
        return report if isinstance(report, dict) else {}

    def refusal(self, report: dict) -> str:
        """Why the job must not run (a required isolation is missing), or ``""``."""
        return ""

    @abc.abstractmethod
    def kill(self) -> None:
        """Stop every process of the job, now (never raises; may be called from another
        thread and more than once)."""

    def close(self) -> None:
        """The job is over: stop what is left and release what the sandbox holds."""
        self.kill()


class ProcessSandbox(Sandbox):
    """Without isolation: hard limits and a session of its own; TCP on 127.0.0.1.

    The kill stops the kernel's process group and its descendants; a process that leaves both
    (``setsid`` and a double fork) escapes it.
    """

    REPORT_KEYS = ("isolation", "memory_bytes", "file_size_bytes", "cpu_seconds", "processes")

    def __init__(self, folders: JobFolders, limits, problem: str = "") -> None:
        super().__init__(folders, limits)
        self.problem = problem
        self.pid: int | None = None

    def wrap(self, kernel_cmd, *, attempt, connection_file):
        return self.launcher(attempt, {"nproc_margin": 512}, kernel_cmd)

    def started(self, pid: int, ports: list[int]) -> str:
        self.pid = pid
        return self.kernel_ip

    def report(self, attempt: int) -> dict:
        report = super().report(attempt)
        return {**report, "isolation": None, "isolation_problem": self.problem} if report else {}

    def refusal(self, report: dict) -> str:
        if self.limits.require_sandbox:
            return f"not run: --require-sandbox was given but {self.problem or 'no isolation'}"
        return ""

    def kill(self) -> None:
        from .._process import stop_tree

        pid, self.pid = self.pid, None
        if pid is None:
            return
        try:
            import psutil

            family = [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
        except Exception:
            family = [pid]
        try:
            group = os.getpgid(pid)
        except OSError:
            group = None
        stop_tree(group=group if group == pid else None, also=family, wait=0)


# ====================================================================== which sandbox
def _bwrap_trial(bwrap: str) -> str:
    """Run ``true`` in a namespace sandbox like the kernels' (``""`` when it works)."""
    from .namespaces import trial_command

    try:
        out = subprocess.run(trial_command(bwrap), capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not run: {exc}"
    if out.returncode != 0:
        first = (out.stderr.strip().splitlines() or [f"exit code {out.returncode}"])[0]
        return f"bubblewrap cannot create the sandbox here: {first[:300]}"
    return ""


@functools.cache
def isolation_problem(platform: str = sys.platform) -> str:
    """Why kernels cannot be isolated on this machine (``""`` when they can). Tried once."""
    if not platform.startswith("linux"):
        return f"namespaces need Linux; this is {platform}"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    return _bwrap_trial(bwrap)


def for_job(folders: JobFolders, limits) -> Sandbox:
    """The sandbox a job gets on this machine."""
    problem = isolation_problem()
    if problem:
        return ProcessSandbox(folders, limits, problem)
    from .namespaces import NamespaceSandbox

    return NamespaceSandbox(folders, limits, shutil.which("bwrap"))


# ====================================================================== scratch folders
class ScratchRoot:
    """A batch's scratch folder, ``<tmp>/attention-lab-batch-XXXX``, locked (``flock`` on the
    folder) while the batch runs.

    Creating one first removes what graders that died left behind (:func:`clean_stale`). Use as
    a context manager; :attr:`path` is the folder.
    """

    def __init__(self) -> None:
        clean_stale()
        self.path = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
        self._lock: int | None = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        fcntl.flock(self._lock, fcntl.LOCK_EX)

    def __enter__(self) -> "ScratchRoot":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._lock is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            os.close(self._lock)
            self._lock = None


def clean_stale(tmp: Path | None = None) -> list[Path]:
    """Remove the scratch folders nobody holds (their grader died) and empty the job cgroups of
    graders that are gone. A folder younger than ``GRACE_SECONDS`` is left alone (its grader may
    be between creating and locking it)."""
    from .namespaces import remove_stale_cgroups

    removed = []
    for folder in Path(tmp or tempfile.gettempdir()).glob(SCRATCH_PREFIX + "*"):
        try:
            if (not folder.is_dir() or folder.is_symlink()
                    or time.time() - folder.stat().st_mtime < GRACE_SECONDS):
                continue
            fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # a running grader holds it
        else:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        finally:
            os.close(fd)
    remove_stale_cgroups()
    return removed


__all__ = ["JobFolders", "Sandbox", "ProcessSandbox", "for_job", "isolation_problem",
           "ScratchRoot", "clean_stale"]
