"""Stop a process and everything it started: one killer for the grader's kernels and the demo's Voila.

A server or kernel leaves descendants behind in several ways: children in its process group,
children that moved to a session of their own (Jupyter starts every kernel with ``setsid``), and
double-forked orphans that were re-parented to init and are no longer anyone's descendant. So
:func:`stop_tree`

1. collects the root's descendants, the group's members and the caller's extra processes *before*
   signalling anything (once the root is gone its children are re-parented and can no longer be
   found from it);
2. optionally asks politely first (SIGTERM to the group, or to the root), waiting up to ``grace``
   seconds (Voila and Jupyter shut their kernels down on SIGTERM);
3. SIGKILLs the process group and every collected process that still runs;
4. reaps the root and waits up to ``wait`` seconds for the others, returning the pids that are
   still alive (zombies count as gone).

Processes are held as ``psutil.Process`` objects, which refuse to signal a pid that was reused by
another process since they were collected.

Also the two small helpers every process owner here needs: :func:`running` / :func:`alive` (a
process that exists and is not a zombie) and :func:`die_with_parent` (Linux's parent-death signal).
The grader's ``grading/launch.py`` keeps its own parent-death call: it runs as a script with the
standard library only, before anything of the package may be imported.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path


def _processes(root: subprocess.Popen | None, group: int | None, also: Iterable) -> list:
    import psutil

    found = []
    if group and group > 1 and group != os.getpgid(0):  # the group's members, to wait for them
        for proc in psutil.process_iter():
            with contextlib.suppress(OSError, psutil.Error):
                if os.getpgid(proc.pid) == group:
                    found.append(proc)
    if root is not None and root.poll() is None:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(root.pid)
            found += [proc, *proc.children(recursive=True)]
    for item in also:
        with contextlib.suppress(psutil.Error, ValueError):
            found.append(item if isinstance(item, psutil.Process) else psutil.Process(int(item)))
    return list({p.pid: p for p in found}.values())


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie, exited but not yet reaped,
    has): its state in ``/proc`` (cheap enough to poll), else psutil's."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return False
        import psutil  # no /proc (macOS)

        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def alive(pids: Iterable[int]) -> list[int]:
    """The pids of ``pids`` that still run (zombies count as gone), in order."""
    return [pid for pid in pids if running(pid)]


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Linux: have this process get ``sig`` when its parent dies, even by SIGKILL (no orphans);
    elsewhere nothing. Meant for ``subprocess.Popen(preexec_fn=...)``, between fork and exec."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(sig))  # PR_SET_PDEATHSIG
    except Exception:  # another C library, another system
        pass


def _running(proc) -> bool:
    """A collected process still runs: the same process (not a reused pid) and not a zombie."""
    import psutil

    try:
        return proc.is_running() and running(proc.pid)
    except psutil.Error:
        return False


def _signal_group(group: int | None, sig: int) -> None:
    """``killpg``, never on init's group or the caller's own."""
    if not group or group <= 1 or group == os.getpgid(0):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def stop_tree(root: subprocess.Popen | None = None, *, group: int | None = None,
              also: Iterable = (), grace: float = 0.0, wait: float = 5.0) -> list[int]:
    """Stop ``root`` (a child started by this process), its process group ``group``, every
    descendant of ``root`` and the processes in ``also`` (pids or ``psutil.Process``).

    ``grace`` > 0: SIGTERM first (to ``group``, else to ``root``) and wait that long for ``root``
    to exit, then SIGKILL whatever is left. Returns the pids still alive after ``wait`` seconds
    (``[]`` when everything is gone). Never raises for processes that are already gone.
    """
    import psutil

    family = _processes(root, group, also)
    if grace > 0 and root is not None and root.poll() is None:
        if group:
            _signal_group(group, signal.SIGTERM)
        else:
            with contextlib.suppress(ProcessLookupError):
                root.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            root.wait(grace)
    _signal_group(group, signal.SIGKILL)
    for proc in family:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    if root is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            root.wait(max(wait, 0.1))
    deadline = time.monotonic() + wait
    while True:
        left = [p.pid for p in family if _running(p)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


__all__ = ["stop_tree", "running", "alive", "die_with_parent"]
