"""The interface every sandbox implements (:class:`Sandbox`: what the runner calls, see
:mod:`.sandbox`) and the job's folders (:class:`JobFolders`), apart from the sandboxes so that
each one (:class:`.sandbox.ProcessSandbox`, :class:`.namespaces.NamespaceSandbox`) imports
it and :mod:`.sandbox`, which chooses between them, imports them."""

from __future__ import annotations

import abc
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = Path(__file__).resolve().with_name("launch.py")


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
        """The job file ``host`` (in ``in/``) as the kernel sees it."""
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

    def launcher(self, attempt: int, config: dict, cmd: list[str]) -> list[str]:
        """``cmd`` run by :mod:`.launch` with ``config`` (written to ``in/``) and the hard limits
        it sets (soft = hard)."""
        path, limits = self.folders.inp / f"launch-{attempt}.json", self.limits
        hard = {"memory_bytes": limits.memory_mb * 2 ** 20,
                "file_size_bytes": limits.fsize_mb * 2 ** 20,
                "cpu_seconds": int(limits.timeout * 2 + 60), "core_bytes": 0}
        config = {"limits": hard, **config, "report": str(self.report_path(attempt)),
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

    def refusal(self) -> str:
        """Why the job must not run (a required isolation is missing), or ``""``."""
        return ""

    @abc.abstractmethod
    def kill(self) -> None:
        """Stop every process of the job, now (never raises; may be called from another
        thread and more than once)."""

    def close(self) -> None:
        """The job is over: stop what is left and release what the sandbox holds."""
        self.kill()


__all__ = ["LAUNCHER", "JobFolders", "kernel_dirs", "Sandbox"]
