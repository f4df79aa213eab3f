"""Which sandbox confines a job's kernels, and the batch's scratch folders.

The interface the runner calls is :class:`.sandbox_base.Sandbox` (imported from here).
:func:`isolation_problem` tries bubblewrap once per process. Where it works, a job gets a
:class:`~.namespaces.NamespaceSandbox` (see :mod:`.namespaces`). Where it does not (no ``bwrap``,
no user namespaces, not Linux), a job gets a :class:`ProcessSandbox`: the same hard limits and a
session of its own, nothing more; the grader says so once and records it, and
``--require-sandbox`` refuses to run. Both start the kernel through :mod:`.launch`.

The scratch folders of a batch live in one :class:`ScratchRoot`, locked while the batch runs, so
the next run removes whatever a grader that died left behind.
"""

from __future__ import annotations

import fcntl
import functools
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .sandbox_base import JobFolders, Sandbox

if Path(__file__).with_name("namespaces.py").exists():
    from . import namespaces
else:  # the student bundle (release) leaves the namespace sandbox out
    namespaces = None

SCRATCH_PREFIX = "attention-lab-batch-"
#: the first of the user (and group) ids a root grader without namespaces gives its jobs, one
#: each; no account's, far above the ranges of accounts and of user namespaces' subordinate ids
JOB_IDS = 2_000_000_000
_jobs = itertools.count()
GRACE_SECONDS = 5.0


class ProcessSandbox(Sandbox):
    """Without isolation: hard limits and a session of its own; TCP on 127.0.0.1.

    The kill stops the kernel's process group and its descendants; a process that leaves both
    (``setsid`` and a double fork) escapes it. A grader running as root (Gradescope's container,
    which may refuse namespaces) starts each job's kernels as a user of their own
    (:data:`JOB_IDS`), who owns only the job's ``work/`` and ``home/``: a kernel, or what it
    leaves behind, cannot write the grader's files, nor signal, trace or write another job's.
    """

    REPORT_KEYS = ("isolation", "user", "memory_bytes", "file_size_bytes", "cpu_seconds",
                   "processes")

    def __init__(self, folders: JobFolders, limits, problem: str = "") -> None:
        super().__init__(folders, limits)
        self.problem = problem
        self.pid: int | None = None
        self.ids = (JOB_IDS + next(_jobs),) * 2  # uid, gid: used by a root grader only

    def wrap(self, kernel_cmd, *, attempt, connection_file):
        config: dict = {"nproc_margin": 512}
        if os.geteuid() == 0 and others_run_python() and self._hand_over():
            config.update(run_as=self.ids, hand_over=[str(connection_file)])
        return self.launcher(attempt, config, kernel_cmd)

    def _hand_over(self) -> bool:
        """Give the job's user (:attr:`ids`) its ``work/`` and ``home/``, and a way (no listing)
        through the job's folder, its scratch root and ``in/`` to them; ``False`` (nothing
        changed) where a folder above those is closed to other users (a ``TMPDIR`` in root's
        home)."""
        f = self.folders
        ways = [f.work.parent, f.inp, *[p for p in f.work.parents[1:2]
                                        if p.name.startswith(SCRATCH_PREFIX)]]
        if any(not p.stat().st_mode & 0o001 for p in f.work.parents if p not in ways):
            return False
        for folder in ways:
            folder.chmod(0o711)
        f.out.chmod(0o700)
        for top in (f.work, f.home):
            for folder, _, files in os.walk(top):
                for path in (folder, *(os.path.join(folder, n) for n in files)):
                    os.chown(path, *self.ids, follow_symlinks=False)
        return True

    def started(self, pid: int, ports: list[int]) -> str:
        self.pid = pid
        return self.kernel_ip

    def report(self, attempt: int) -> dict:
        report = super().report(attempt)
        if "user" in report:
            report["user"] = f"uid {report['user']} (this job's own, no login)"
        return {**report, "isolation": None, "isolation_problem": self.problem} if report else {}

    def refusal(self) -> str:
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
    try:
        out = subprocess.run(namespaces.trial_command(bwrap), capture_output=True, text=True,
                             timeout=30, stdin=subprocess.DEVNULL)
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
    if namespaces is None:
        return "this copy of the lab (the student bundle) has no namespace sandbox"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    return _bwrap_trial(bwrap)


@functools.cache
def others_run_python() -> bool:
    """Whether a user with no rights of its own (a job's, :data:`JOB_IDS`) can run this Python
    and import what a kernel imports (not where it is installed in root's home, say). Tried
    once; only root needs it (:class:`ProcessSandbox`)."""
    try:
        trial = subprocess.run([sys.executable, "-c", "import ipykernel, numpy, attention_lab"],
                               user=JOB_IDS - 1, group=JOB_IDS - 1, extra_groups=[], cwd="/",
                               capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return trial.returncode == 0


def for_job(folders: JobFolders, limits) -> Sandbox:
    """The sandbox a job gets on this machine."""
    problem = isolation_problem()
    if problem:
        return ProcessSandbox(folders, limits, problem)
    return namespaces.NamespaceSandbox(folders, limits, shutil.which("bwrap"))


# ====================================================================== scratch folders
class ScratchRoot:
    """A batch's scratch folder :attr:`path`, ``<tmp>/attention-lab-batch-XXXX``, locked
    (``flock``) while the batch runs; creating one first removes what graders that died left
    behind (:func:`clean_stale`)."""

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
    if namespaces is not None:
        namespaces.remove_stale_cgroups()
    return removed


__all__ = ["JobFolders", "Sandbox", "ProcessSandbox", "for_job", "isolation_problem",
           "others_run_python", "ScratchRoot", "clean_stale"]
