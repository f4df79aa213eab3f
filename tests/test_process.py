"""The process-tree killer shared by the grader and the demo's launcher (attention_lab._process):
nothing of a tree survives it, whichever way its processes tried to get away."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from attention_lab._process import alive, running, stop_tree

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX process groups")

# root -> child (same process group) -> grandchild (a session of its own, so outside the group);
# each writes its pid to a file and sleeps. ``stubborn`` makes every one of them ignore SIGTERM.
TREE = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    level, folder, stubborn = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if level < 2:
        subprocess.Popen([sys.executable, __file__, str(level + 1), folder, sys.argv[3]],
                         start_new_session=(level == 1))
    open(os.path.join(folder, f"pid-{level}"), "w").write(str(os.getpid()))
    time.sleep(600)
""")


def start_tree(tmp_path, stubborn: bool = False) -> tuple[subprocess.Popen, list[int]]:
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    proc = subprocess.Popen([sys.executable, str(script), "0", str(tmp_path), str(int(stubborn))],
                            start_new_session=True)
    deadline = time.monotonic() + 30
    files = [tmp_path / f"pid-{i}" for i in range(3)]
    while not all(f.exists() and f.read_text() for f in files):
        assert time.monotonic() < deadline, "the process tree did not start"
        time.sleep(0.05)
    pids = [int(f.read_text()) for f in files]
    assert os.getpgid(pids[1]) == proc.pid and os.getpgid(pids[2]) != proc.pid
    return proc, pids


@pytest.mark.parametrize("stubborn", [False, True], ids=["polite", "ignores-SIGTERM"])
def test_a_tree_with_a_grandchild_in_its_own_session_is_gone(tmp_path, stubborn):
    proc, pids = start_tree(tmp_path, stubborn)
    waits, wait = [], proc.wait

    def recorded_wait(timeout=None):  # how each wait for the root ended
        try:
            code = wait(timeout)
        except subprocess.TimeoutExpired:
            waits.append(("timed out", timeout))
            raise
        waits.append(("exited", timeout))
        return code

    proc.wait = recorded_wait
    try:
        grace = 1.0 if stubborn else 10.0
        left = stop_tree(proc, group=proc.pid, grace=grace)
        assert left == [] and alive(pids) == []
        assert proc.returncode is not None  # reaped: no zombie left in this process
        # polite: the root ends at SIGTERM, the grace is not waited out; stubborn: killed after it
        assert waits[0] == ("timed out" if stubborn else "exited", grace)
        assert proc.returncode == (-signal.SIGKILL if stubborn else -signal.SIGTERM)
    finally:
        for pid in alive(pids):
            os.kill(pid, signal.SIGKILL)


def test_the_group_alone_would_leave_the_grandchild(tmp_path):
    """The attack the descendants step is there for: killing the process group is not enough."""
    proc, pids = start_tree(tmp_path)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        time.sleep(0.2)
        assert alive(pids) == [pids[2]]
    finally:
        for pid in alive(pids):
            os.kill(pid, signal.SIGKILL)


def test_orphans_named_by_the_caller_and_a_group_without_a_root(tmp_path):
    """The grader's case: the kernel is already reaped, what is left is its process group and a
    double-forked orphan in a session of its own, which only the caller can name."""
    pidfile, ready = tmp_path / "orphan", tmp_path / "ready"
    # The orphan reports only once its parent has exited (it was re-parented), and the group's
    # root only once its ``sleep`` child runs: the set of processes is fixed before the kill.
    code = textwrap.dedent(f"""
        import os, subprocess, time
        if os.fork() == 0:
            os.setsid()
            parent = os.getpid()
            if os.fork() == 0:
                while os.getppid() == parent:
                    time.sleep(0.01)
                open({str(pidfile)!r}, "w").write(str(os.getpid()))
                time.sleep(600)
            os._exit(0)
        subprocess.Popen(["sleep", "600"])
        open({str(ready)!r}, "w").write("1")
        time.sleep(600)
    """)
    group = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    deadline = time.monotonic() + 30
    while not all(f.exists() and f.read_text() for f in (pidfile, ready)):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    orphan = int(pidfile.read_text())
    members = [p.pid for p in psutil.Process(group.pid).children(recursive=True)] + [group.pid]
    assert orphan not in members and psutil.Process(orphan).ppid() != group.pid
    try:
        assert stop_tree(group=group.pid, also=[orphan]) == []
        group.wait(10)
        assert alive(members + [orphan]) == []
    finally:
        for pid in alive(members + [orphan]):
            os.kill(pid, signal.SIGKILL)


def test_gone_processes_and_the_callers_own_group_are_left_alone():
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    assert stop_tree(done, group=None, also=[2 ** 22 + 12345], wait=0) == []  # beyond pid_max
    assert stop_tree(group=os.getpgid(0), wait=0) == []  # would be suicide: refused


def test_a_zombie_counts_as_gone_until_and_after_it_is_reaped():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE:  # exited, not reaped yet
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.01)
    assert not running(proc.pid) and alive([proc.pid, os.getpid()]) == [os.getpid()]
    proc.wait()
    assert not running(proc.pid)
