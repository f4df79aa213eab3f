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
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable


def _processes(root: subprocess.Popen | None, group: int | None, also: Iterable) -> list:
    import psutil

    found = []
    if group and group > 1 and group != os.getpgid(0):  # the group's members, to wait for them
        for proc in psutil.process_iter():
            try:
                if os.getpgid(proc.pid) == group:
                    found.append(proc)
            except (OSError, psutil.Error):
                pass
    if root is not None and root.poll() is None:
        try:
            proc = psutil.Process(root.pid)
            found += [proc, *proc.children(recursive=True)]
        except psutil.Error:
            pass
    for item in also:
        try:
            found.append(item if isinstance(item, psutil.Process) else psutil.Process(int(item)))
        except (psutil.Error, ValueError):
            pass
    return list({p.pid: p for p in found}.values())


def _running(proc) -> bool:
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal_group(group: int | None, sig: int) -> None:
    """``killpg``, never on init's group or the caller's own."""
    if not group or group <= 1 or group == os.getpgid(0):
        return
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        pass


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
            try:
                root.terminate()
            except ProcessLookupError:
                pass
        try:
            root.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(group, signal.SIGKILL)
    for proc in family:
        try:
            proc.kill()
        except psutil.Error:
            pass
    if root is not None:
        try:
            root.wait(max(wait, 0.1))
        except subprocess.TimeoutExpired:
            pass
    deadline = time.monotonic() + wait
    while True:
        left = [p.pid for p in family if _running(p)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


__all__ = ["stop_tree"]
