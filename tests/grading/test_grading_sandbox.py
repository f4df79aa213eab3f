"""The sandbox on its own: the launcher script's limits, and the interface's kill, which must stop
every process of a job (its process group, and double-forked escapees found by the job's token)
and nothing else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from attention_lab.grading import sandbox as S
from attention_lab.grading.runner import Limits

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the grader's sandbox is Linux-only")


def test_sandbox_process_cap_for_a_non_root_grader(tmp_path):
    """RLIMIT_NPROC = the user's current tasks + margin (root is exempt from it, so as root the
    test drops to 'nobody' in a child process)."""
    code = ("import resource, sys; sys.path.insert(0, sys.argv[1]); import sandbox, os; r = {}; "
            "sandbox.apply_limits({'nproc_margin': 7}, r); "
            "print(r['processes'], resource.getrlimit(resource.RLIMIT_NPROC)[0], "
            "sandbox._tasks_of_user(os.getuid()))")
    kwargs = {}
    python = sys.executable
    if os.geteuid() == 0:
        kwargs["preexec_fn"] = lambda: (os.setgid(65534), os.setuid(65534))
        # sandbox.py is standard library only: any Python 3 that 'nobody' may run will do
        python = shutil.which("python3", path="/usr/bin:/bin") or python
    try:
        out = subprocess.run([python, "-I", "-S", "-c", code,
                              os.path.dirname(S.__file__)], capture_output=True,
                             text=True, timeout=30, cwd=tmp_path, **kwargs)
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot run as an unprivileged user here: {exc}")
    if out.returncode != 0:
        pytest.skip(f"cannot run as an unprivileged user here: {out.stderr[-300:]}")
    limit, soft, tasks_after = (int(x) for x in out.stdout.split())
    assert limit == soft and limit - 7 <= tasks_after <= limit


def test_kill_stops_the_group_and_the_processes_carrying_the_token_only(tmp_path):
    sandbox = S.LandlockSandbox(S.JobFolders(tmp_path / "work"), Limits())
    env = {**os.environ, **sandbox.env()}
    group = subprocess.Popen(["sleep", "600"], start_new_session=True)  # the kernel's group
    escapee = subprocess.Popen(["sleep", "600"], env=env, start_new_session=True)  # setsid'd fork
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)  # another job
    try:
        sandbox.kernel_started(group.pid)
        sandbox.kill()
        assert group.wait(10) == -9 and escapee.wait(10) == -9
        time.sleep(0.2)
        assert bystander.poll() is None
        assert sandbox.pgid is None  # a stale group id is never signalled again
        sandbox.kill()  # idempotent
    finally:
        for p in (group, escapee, bystander):
            p.kill()
            p.wait()


def test_the_job_folders_and_what_the_launcher_is_told(tmp_path):
    folders = S.JobFolders(tmp_path / "job" / "work")
    folders.create()
    assert sorted(p.name for p in (tmp_path / "job").iterdir()) == ["home", "in", "out", "work"]
    assert set(folders.kernel_env().values()) <= {str(p) for p in (folders.home).iterdir()}
    sandbox = S.for_job(folders, Limits(memory_mb=512, require_landlock=True))
    results = folders.out / "results-1.jsonl"
    results.write_text("")
    cmd = sandbox.wrap(["python", "-m", "ipykernel_launcher"], attempt=1,
                       connection_file=folders.inp / "kernel-1.json", writable=[results])
    assert cmd[1:4] == ["-I", "-S", S.__file__] and cmd[-4:] == ["--", "python", "-m",
                                                                 "ipykernel_launcher"]
    config = json.loads(open(cmd[4]).read())
    assert config["write_dirs"] == [str(folders.work), str(folders.home)]
    assert str(results) in config["write_files"] and config["memory_mb"] == 512
    assert sandbox.report(1) == {}  # nothing applied yet
    assert "--require-sandbox" in sandbox.refusal({"landlock": None, "landlock_error": "x"})
    assert sandbox.refusal({"landlock": 6}) == ""
