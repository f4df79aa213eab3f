"""The sandbox on its own, without a notebook: the launcher's hard limits, the namespace sandbox's
kill (the whole namespace, whatever its processes did to their session or environment, and
nothing else), the fallback's kill, what a kernel is told, which sandbox a machine gets (with the
unavailable cases simulated), and the cleaning of what a dead grader left behind."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attention_lab.exercises.judging import REFERENCE_MODULES
from attention_lab.grading import launch
from attention_lab.grading import namespaces as N
from attention_lab.grading import sandbox as S
from attention_lab.grading.runner import Limits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the grader's sandbox is Linux-only")
isolated = pytest.mark.skipif(bool(S.isolation_problem()), reason="no namespaces here")
LIMITS = "import resource as r; print([r.getrlimit(getattr(r, n)) for n in {names!r}])"


def _launch(tmp_path, config: dict, code: str, **kwargs) -> subprocess.CompletedProcess:
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(config))
    return subprocess.run([sys.executable, "-I", "-S", launch.__file__, str(path), "--",
                           sys.executable, "-I", "-S", "-c", code], capture_output=True,
                          text=True, timeout=60, **kwargs)


def test_the_launcher_sets_hard_limits_that_the_kernel_cannot_raise(tmp_path):
    limits = {"memory_bytes": 700 * 2 ** 20, "file_size_bytes": 2 ** 20, "cpu_seconds": 50,
              "core_bytes": 0}
    names = [launch.LIMITS[k] for k in limits]
    code = (LIMITS.format(names=names) + "\n"
            "try:\n    r.setrlimit(r.RLIMIT_AS, (r.RLIM_INFINITY, r.RLIM_INFINITY))\n"
            "except (ValueError, OSError) as e:\n    print('refused', type(e).__name__)\n"
            "b = bytearray(900 * 2**20)")
    out = _launch(tmp_path, {"limits": limits, "report": str(tmp_path / "report.json")}, code)
    first, second = out.stdout.splitlines()[:2]
    assert eval(first) == [(v, v) for v in limits.values()]  # soft = hard
    assert second == "refused ValueError"
    assert "MemoryError" in out.stderr  # 900 MB under a 700 MB limit, even as root
    report = json.loads((tmp_path / "report.json").read_text())
    assert {k: report[k] for k in limits} == limits


def test_the_launcher_caps_processes_for_a_non_root_grader():
    """RLIMIT_NPROC = the user's current tasks + margin (root is exempt from it, so as root the
    test drops to 'nobody' in a child process)."""
    import tempfile

    kwargs = {}
    python = sys.executable
    if os.geteuid() == 0:
        kwargs["preexec_fn"] = lambda: (os.setgid(65534), os.setuid(65534))
        python = shutil.which("python3", path="/usr/bin:/bin") or python
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import launch, os, resource; r = {}; "
            "launch.hard_limit('processes', launch.tasks_of_user(os.getuid()) + 7, r); "
            "print(r['processes'], *resource.getrlimit(resource.RLIMIT_NPROC), "
            "launch.tasks_of_user(os.getuid()))")
    # the launcher (standard library only) copied where 'nobody' can read it: a checkout in a
    # private folder (mktemp -d, as a fresh clone for CI) is not readable to that user
    readable = Path(tempfile.mkdtemp(prefix="attention-lab-launch-"))
    try:
        readable.chmod(0o755)
        shutil.copy(launch.__file__, readable / "launch.py")
        (readable / "launch.py").chmod(0o644)
        out = subprocess.run([python, "-I", "-S", "-c", code, str(readable)],
                             capture_output=True, text=True, timeout=30, cwd=readable, **kwargs)
    except OSError as exc:
        pytest.skip(f"cannot run as an unprivileged user here: {exc}")
    finally:
        shutil.rmtree(readable, ignore_errors=True)
    if out.returncode != 0:
        pytest.skip(f"cannot run as an unprivileged user here: {out.stderr[-300:]}")
    limit, soft, hard, tasks = (int(x) for x in out.stdout.split())
    assert limit == soft == hard and limit - 7 <= tasks <= limit


def _start(sandbox, tmp_path, script: str, attempt: int = 1) -> subprocess.Popen:
    """Start ``script`` (Python) in ``sandbox`` the way the runner starts a kernel."""
    folders = sandbox.folders
    folders.create()
    conn = folders.inp / f"kernel-{attempt}.json"
    conn.write_text("{}")
    cmd = sandbox.wrap([sys.executable, "-c", script], attempt=attempt, connection_file=conn)
    proc = subprocess.Popen(cmd, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sandbox.started(proc.pid, [])  # (a script binds no kernel sockets)
    return proc


def _alive_with(mark: str) -> list[int]:
    """The ``sleep MARK`` processes still running."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.info["cmdline"] == ["sleep", mark] and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p.pid)
        except psutil.Error:
            pass
    return found


# a job that hides: a child in a session of its own, a double-forked grandchild that clears
# its environment and is re-parented, and a plain child
HIDER = """
import os, subprocess, time
subprocess.Popen(["sleep", "{mark}"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve("/bin/sleep", ["sleep", "{mark}"], {{}})
    os._exit(0)
time.sleep(600)
"""


@isolated
def test_the_namespace_kill_stops_every_process_of_the_job_and_nothing_else(tmp_path):
    mark = "601.25"
    sandbox = S.for_job(S.JobFolders(tmp_path / "job" / "work"), Limits(startup_timeout=20))
    assert isinstance(sandbox, N.NamespaceSandbox)
    bystander = subprocess.Popen(["sleep", mark], start_new_session=True)
    try:
        proc = _start(sandbox, tmp_path, HIDER.format(mark=mark))
        deadline = time.monotonic() + 20
        while len(_alive_with(mark)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_alive_with(mark)) == 3  # the bystander and the job's two
        sandbox.kill()
        assert proc.wait(10) is not None
        assert _alive_with(mark) == [bystander.pid]
        cgroups = list(sandbox.cgroups.dirs) if sandbox.cgroups else []
        sandbox.close()
        assert all(not d.exists() for d in cgroups)
        sandbox.kill()  # idempotent, and a closed sandbox signals nothing
    finally:
        bystander.kill()
        bystander.wait()


def test_the_fallback_kill_stops_the_group_and_the_descendants(tmp_path):
    mark = "602.25"
    sandbox = S.ProcessSandbox(S.JobFolders(tmp_path / "job" / "work"), Limits(), "simulated")
    bystander = subprocess.Popen(["sleep", mark], start_new_session=True)
    try:
        proc = _start(sandbox, tmp_path, f"import subprocess, time\n"
                                          f"subprocess.Popen(['sleep', '{mark}'])\n"
                                          f"time.sleep(600)")
        deadline = time.monotonic() + 20
        while len(_alive_with(mark)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        sandbox.kill()
        assert proc.wait(10) == -9
        time.sleep(0.2)
        assert _alive_with(mark) == [bystander.pid]
    finally:
        bystander.kill()
        bystander.wait()


@isolated
def test_what_the_kernel_is_told_and_sees(tmp_path):
    folders = S.JobFolders(tmp_path / "job" / "work")
    folders.create()
    sandbox = S.for_job(folders, Limits(memory_mb=512, scratch_mb=32))
    cmd = sandbox.wrap([sys.executable, "-m", "ipykernel_launcher", "-f",
                        str(folders.inp / "kernel-1.json")], attempt=1,
                       connection_file=folders.inp / "kernel-1.json")
    assert cmd[:4] == [sys.executable, "-I", "-S", launch.__file__]
    config = json.loads(Path(cmd[4]).read_text())
    assert config["limits"]["memory_bytes"] == 512 * 2 ** 20
    bwrap = cmd[cmd.index("--") + 1:]
    kernel = bwrap[len(bwrap) - bwrap[::-1].index("--"):]
    assert kernel[-2:] == ["-f", "/job/in/kernel-1.json"]  # the path inside the sandbox
    assert kernel[1:3] == ["-S", "-c"] and "sys.modules['debugpy'] = None" in kernel[3]
    assert repr(N.kernel_path()) in kernel[3]
    pairs = list(zip(bwrap, bwrap[1:], bwrap[2:]))
    assert "--bind" not in bwrap  # no file of the grader's is writable to the kernel
    assert ("--ro-bind", str(folders.inp), "/job/in") in pairs
    assert ("--tmpfs", "/job") == tuple(bwrap[bwrap.index("/job") - 1:bwrap.index("/job") + 1])
    assert bwrap[bwrap.index("/job") - 2] == str(32 * 2 ** 20)  # --size of /job
    for flag in ("--unshare-all", "--disable-userns", "--die-with-parent", "--new-session"):
        assert flag in bwrap
    assert ("--cap-drop", "ALL") in set(zip(bwrap, bwrap[1:]))
    # the package is the kernel's view of it: the chapter's data and check/hint/status only
    view = Path(bwrap[bwrap.index(str(N.package_dir())) - 1])
    modules = N.view_modules()
    assert "examples" in modules
    assert not {f"attention_lab.{m}" for m in modules} & set(REFERENCE_MODULES)
    assert sorted(p.name for p in view.iterdir()) == sorted(
        ["__init__.py", "__pycache__", "exercises", *(f"{m}.py" for m in modules)])
    assert len(list((view / "__pycache__").glob("*.pyc"))) == len(modules) + 1  # compiled once
    # nothing of the checkout but the package, no home, no other scratch
    visible = {a[2] for a in N.visible_paths() if a[0] == "--ro-bind"}
    checkout = N.package_dir().parent
    assert all(not N._inside(str(checkout), v) for v in visible)
    assert all(not N._inside(v, str(checkout)) or v.startswith(str(checkout / ".venv"))
               for v in visible)
    assert sandbox.path(folders.inp / "kernel-1.json") == "/job/in/kernel-1.json"
    with pytest.raises(ValueError):
        sandbox.path(tmp_path / "elsewhere")
    assert sandbox.env()["HOME"] == "/job/home" and sandbox.refusal() == ""


def test_a_python_installation_under_tmp_is_visible(tmp_path, monkeypatch):
    """A checkout or a venv under /tmp (a CI's fresh clone, say) is mounted inside the sandbox's
    own /tmp (a symbolic link at /tmp could not hold it: bwrap refused to start)."""
    bwrap = shutil.which("bwrap")
    if not bwrap or S.isolation_problem():
        pytest.skip("no namespaces here")
    (tmp_path / "marker").write_text("seen")
    extra = (("--ro-bind", str(tmp_path), str(tmp_path)),)
    real = N.visible_paths()
    monkeypatch.setattr(N, "visible_paths", lambda: real + extra)
    cmd = [bwrap, *N.namespace_args(1), "--remount-ro", "/", "--", "/bin/sh", "-c",
           f"cat {tmp_path}/marker && touch /tmp/new && ! touch {tmp_path}/x 2>/dev/null"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert (out.returncode, out.stdout) == (0, "seen"), out.stderr


def test_isolation_is_available_where_it_is_required():
    """CI sets ATTENTION_LAB_REQUIRE_SANDBOX=1: there, the tests of hostile notebooks must run
    (they are skipped where kernels cannot be isolated)."""
    if os.environ.get("ATTENTION_LAB_REQUIRE_SANDBOX") != "1":
        pytest.skip("isolation not required here (CI sets ATTENTION_LAB_REQUIRE_SANDBOX=1)")
    assert S.isolation_problem() == ""


def test_without_isolation_the_grader_knows_why(tmp_path, monkeypatch):
    """The three ways isolation is unavailable, simulated: not Linux, no bwrap on PATH, and a
    bwrap that cannot create namespaces (what a kernel without user namespaces makes it say)."""
    assert "need Linux" in S.isolation_problem.__wrapped__(platform="darwin")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "not installed" in S.isolation_problem.__wrapped__()
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely "
                    "because the kernel does not allow non-privileged user namespaces.' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    problem = S.isolation_problem.__wrapped__()
    assert "cannot create the sandbox here" in problem and "user namespaces" in problem
    monkeypatch.setattr(S, "isolation_problem", lambda platform=sys.platform: problem)
    sandbox = S.for_job(S.JobFolders(tmp_path / "work"), Limits(require_sandbox=True))
    assert isinstance(sandbox, S.ProcessSandbox)
    assert "--require-sandbox" in sandbox.refusal() and "user namespaces" in sandbox.refusal()


def test_a_dead_graders_scratch_is_removed_by_the_next_run(tmp_path):
    old = time.time() - 60
    dead = tmp_path / f"{S.SCRATCH_PREFIX}dead"
    (dead / "job-0001" / "in").mkdir(parents=True)
    os.utime(dead, (old, old))
    running = tmp_path / f"{S.SCRATCH_PREFIX}running"
    running.mkdir()
    os.utime(running, (old, old))
    young = tmp_path / f"{S.SCRATCH_PREFIX}young"
    young.mkdir()
    held = os.open(running, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # what a running grader holds
    try:
        assert S.clean_stale(tmp_path) == [dead]
        assert running.exists() and young.exists() and not dead.exists()
    finally:
        os.close(held)


@pytest.mark.skipif(not any(c == "pids" for c, _ in N.cgroup_parents()),
                    reason="cannot create pids cgroups here")
def test_a_dead_graders_cgroups_are_removed(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()  # a grader pid that no longer runs
    folders = [p / f"{N.CGROUP_PREFIX}{gone.pid}-job" for _, p in N.cgroup_parents()]
    for f in folders:
        f.mkdir()
    mine = N.JobCgroups(f"{N.CGROUP_PREFIX}{os.getpid()}-mine", 8)
    try:
        removed = N.remove_stale_cgroups()
        assert set(folders) <= set(removed) and all(not f.exists() for f in folders)
        assert all(d.exists() for d in mine.dirs)
    finally:
        mine.remove()
        for f in folders:
            N._rmdir(f)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a grader running as root")
def test_a_root_grader_gives_each_job_a_user_of_its_own_where_it_can_reach_its_folders(
        tmp_path, monkeypatch):
    """Without namespaces a root grader runs each job's kernels as a user of their own (no login),
    in the job's folders handed over to it: one job's kernel cannot signal, trace or write
    another's. Below a folder closed to other users (a TMPDIR in root's home) that user could not
    reach them and the kernel would never start: there the job stays as it was, root's."""
    monkeypatch.setattr(S, "others_run_python", lambda: True)

    def launched_as(scratch: Path):
        folders = S.JobFolders(scratch / "job-0001" / "work")
        folders.create()
        sandbox = S.ProcessSandbox(folders, Limits(), "simulated")
        cmd = sandbox.wrap(["true"], attempt=0, connection_file=folders.inp / "kernel-0.json")
        config = json.loads(Path(cmd[cmd.index("--") - 1]).read_text())
        return config.get("run_as"), folders.work.stat().st_uid, oct(folders.out.stat().st_mode)

    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    assert launched_as(closed / f"{S.SCRATCH_PREFIX}x")[:2] == (None, 0)
    with S.ScratchRoot() as scratch:  # in the system's temporary folder, open to all
        first = launched_as(scratch.path)
        second = launched_as(scratch.path / "job-0002")
    assert first[0] != second[0] and min(first[0] + second[0]) >= S.JOB_IDS
    assert first[1:] == (first[0][0], "0o40700") and second[1] == second[0][0]
