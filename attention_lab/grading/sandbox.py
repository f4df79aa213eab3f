"""The sandbox a grading kernel runs in, and the interface the runner calls to use it.

**The interface** (grader side). For every submission the runner gets a :class:`Sandbox` from
:func:`for_job` and calls it around every kernel it starts: :meth:`~Sandbox.env` (variables for the
kernel), :meth:`~Sandbox.wrap` (the command that starts the kernel confined), :meth:`~Sandbox.report`
(what was applied, recorded in grades.json), :meth:`~Sandbox.refusal` (why a required sandbox is
missing), :meth:`~Sandbox.kernel_started` and :meth:`~Sandbox.kill` (stop every process of the
job; also called by the batch on Ctrl-C). Another isolation (e.g. bubblewrap namespaces) is a
subclass returned by :func:`for_job`; the runner does not change. The folders of a job and what a
kernel may do in each are :class:`JobFolders`.

**Today's sandbox**, :class:`LandlockSandbox`: this file run as a script,
``python -I -S sandbox.py CONFIG.json -- KERNEL ARGV...`` (standard library only, nothing imported
from the package; the grader-side classes below import the package lazily), just before the
kernel replaces it (``execvp`` keeps the pid, the process group and everything set here):

* resource limits: address space (the memory limit), file size, CPU time, no core dumps, and a
  process-count cap (effective for non-root users);
* Linux Landlock (kernel >= 5.13), when available: the kernel and every process it starts may
  create, write, rename or delete files only inside the submission's own scratch folder (plus
  ``/dev/null``), may not open TCP connections and may bind only its own five ZeroMQ ports, and
  (ABI >= 6) may not send signals to, or connect to abstract sockets of, any process outside
  its sandbox: not the grader, not another submission's kernel. Landlock also forbids ptrace of
  outside processes.

The script writes what it managed to apply to ``CONFIG["report"]`` (JSON) for the grading report.
The job's processes are found by their process group and by a token in their environment.
"""

from __future__ import annotations

import abc
import ctypes
import json
import os
import resource
import secrets
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

# ====================================================================== kernel side (the script)
# landlock constants (include/uapi/linux/landlock.h); the syscall numbers are the same on every
# architecture that has them
SYS_CREATE, SYS_ADD_RULE, SYS_RESTRICT = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
FS = {name: 1 << bit for bit, name in enumerate((
    "EXECUTE", "WRITE_FILE", "READ_FILE", "READ_DIR", "REMOVE_DIR", "REMOVE_FILE", "MAKE_CHAR",
    "MAKE_DIR", "MAKE_REG", "MAKE_SOCK", "MAKE_FIFO", "MAKE_BLOCK", "MAKE_SYM", "REFER",
    "TRUNCATE", "IOCTL_DEV"))}
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
PR_SET_NO_NEW_PRIVS = 38


def _limit(which, soft, report, name):
    try:
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY and soft > hard:
            soft = hard
        resource.setrlimit(which, (soft, hard))
        report[name] = soft
    except (ValueError, OSError) as exc:
        report[name] = f"not set: {exc}"


def _tasks_of_user(uid: int) -> int:
    """Processes and threads owned by ``uid`` now (what RLIMIT_NPROC counts)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        try:
            if int(fields.get("Uid", "-1").split()[0]) == uid:
                total += int(fields.get("Threads", "1").strip())
        except (ValueError, IndexError):
            continue
    return total


def apply_limits(cfg: dict, report: dict) -> None:
    mb = int(cfg.get("memory_mb", 0))
    if mb > 0:
        _limit(resource.RLIMIT_AS, mb * 2 ** 20, report, "memory_bytes")
    fsize = int(cfg.get("fsize_mb", 0))
    if fsize > 0:
        _limit(resource.RLIMIT_FSIZE, fsize * 2 ** 20, report, "file_size_bytes")
    cpu = int(cfg.get("cpu_seconds", 0))
    if cpu > 0:
        _limit(resource.RLIMIT_CPU, cpu, report, "cpu_seconds")
    _limit(resource.RLIMIT_CORE, 0, report, "core_bytes")
    margin = int(cfg.get("nproc_margin", 0))
    if margin > 0 and os.path.isdir("/proc"):
        if os.geteuid() == 0:
            report["processes"] = "not limited: RLIMIT_NPROC does not apply to root"
        else:
            _limit(resource.RLIMIT_NPROC, _tasks_of_user(os.getuid()) + margin, report,
                   "processes")


def _syscall(libc, *args) -> int:
    libc.syscall.restype = ctypes.c_long
    res = libc.syscall(*args)
    if res < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return res


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel, 0 when Landlock is unavailable."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return _syscall(libc, ctypes.c_long(SYS_CREATE), None, ctypes.c_size_t(0),
                        ctypes.c_uint32(CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0


def apply_landlock(cfg: dict, report: dict) -> None:
    if not sys.platform.startswith("linux"):  # the syscall numbers below are Linux's
        report["landlock"] = None
        report["landlock_error"] = f"not available on {sys.platform}"
        return
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        abi = _syscall(libc, ctypes.c_long(SYS_CREATE), None, ctypes.c_size_t(0),
                       ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError as exc:
        report["landlock"] = None
        report["landlock_error"] = f"not available: {exc.strerror}"
        return
    write = (FS["WRITE_FILE"] | FS["REMOVE_DIR"] | FS["REMOVE_FILE"] | FS["MAKE_CHAR"]
             | FS["MAKE_DIR"] | FS["MAKE_REG"] | FS["MAKE_SOCK"] | FS["MAKE_FIFO"]
             | FS["MAKE_BLOCK"] | FS["MAKE_SYM"])
    if abi >= 2:
        write |= FS["REFER"]
    if abi >= 3:
        write |= FS["TRUNCATE"]
    file_rights = FS["WRITE_FILE"] | (FS["TRUNCATE"] if abi >= 3 else 0)
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", write, net, scoped)
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    buf = ctypes.create_string_buffer(attr[:size], size)
    ruleset = _syscall(libc, ctypes.c_long(SYS_CREATE), buf, ctypes.c_size_t(size),
                       ctypes.c_uint32(0))
    try:
        for path in cfg.get("write_dirs", []):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", write, fd), 12)
                _syscall(libc, ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset),
                         ctypes.c_int(RULE_PATH_BENEATH), rule, ctypes.c_uint32(0))
            finally:
                os.close(fd)
        for path in cfg.get("write_files", []):
            if not os.path.exists(path):
                continue
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", file_rights, fd), 12)
                _syscall(libc, ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset),
                         ctypes.c_int(RULE_PATH_BENEATH), rule, ctypes.c_uint32(0))
            finally:
                os.close(fd)
        if net:
            for port in cfg.get("bind_ports", []):
                rule = ctypes.create_string_buffer(struct.pack("=QQ", NET_BIND_TCP, int(port)), 16)
                _syscall(libc, ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset),
                         ctypes.c_int(RULE_NET_PORT), rule, ctypes.c_uint32(0))
        libc.prctl.restype = ctypes.c_int
        if libc.prctl(ctypes.c_int(PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0),
                      ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        _syscall(libc, ctypes.c_long(SYS_RESTRICT), ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    report["landlock"] = abi
    report["landlock_rules"] = {"filesystem": bool(write), "network": bool(net),
                                "signals": bool(scoped)}


def main(argv: list[str]) -> int:
    if "--" not in argv or len(argv) < 3:
        print("usage: sandbox.py CONFIG.json -- COMMAND ...", file=sys.stderr)
        return 2
    sep = argv.index("--")
    with open(argv[0], encoding="utf-8") as fh:
        cfg = json.load(fh)
    cmd = argv[sep + 1:]
    report: dict = {"pid": os.getpid()}
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader (jupyter_client starts kernels with a new session)
    report["pgid"] = os.getpgid(0)
    if cfg.get("connection_file"):
        try:
            with open(cfg["connection_file"], encoding="utf-8") as fh:
                conn = json.load(fh)
            cfg["bind_ports"] = [conn[k] for k in ("shell_port", "iopub_port", "stdin_port",
                                                   "control_port", "hb_port") if k in conn]
            # port 0: ipykernel binds an ephemeral port to forward subprocess output
            cfg["bind_ports"].append(0)
        except (OSError, ValueError) as exc:
            report["connection_error"] = str(exc)
    if cfg.get("landlock", True):
        try:
            apply_landlock(cfg, report)
        except OSError as exc:
            report["landlock"] = None
            report["landlock_error"] = str(exc)
    apply_limits(cfg, report)
    if cfg.get("report"):
        try:
            with open(cfg["report"], "w", encoding="utf-8") as fh:
                json.dump(report, fh)
        except OSError:
            pass
    if cfg.get("require_landlock") and not report.get("landlock"):
        print(f"sandbox: Landlock is required but unavailable: {report.get('landlock_error')}",
              file=sys.stderr)
        return 3
    os.execvp(cmd[0], cmd)
    return 127  # pragma: no cover - execvp does not return


# ====================================================================== grader side
TOKEN_ENV = "ATTENTION_LAB_GRADER_JOB"


@dataclass(frozen=True)
class JobFolders:
    """One submission's scratch folder, ``work.parent``, and what its kernel may do in each part::

        work/   its working directory (the notebook copy)             create, write, delete
        home/   TMPDIR, IPYTHONDIR, MPLCONFIGDIR, JUPYTER_RUNTIME_DIR create, write, delete
        out/    results-N.jsonl, created empty by the grader          append/write only
        in/     inputs, connection files, sandbox config, logs        read only
    """

    work: Path

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

    def kernel_env(self) -> dict[str, str]:
        """Where the kernel's libraries keep their files: all inside ``home/``."""
        return {"IPYTHONDIR": str(self.home / "ipython"), "MPLCONFIGDIR": str(self.home / "mpl"),
                "TMPDIR": str(self.home / "tmp"), "JUPYTER_RUNTIME_DIR": str(self.home / "runtime")}


class Sandbox(abc.ABC):
    """How one submission's kernels are confined and how its processes are stopped.

    One instance per submission. ``limits`` is the runner's :class:`~.runner.Limits`.
    """

    #: what :meth:`report` returns that goes into grades.json (per submission)
    REPORT_KEYS: tuple[str, ...] = ()

    def __init__(self, folders: JobFolders, limits) -> None:
        self.folders, self.limits = folders, limits

    def env(self) -> dict[str, str]:
        """Variables added to the kernel's environment."""
        return {}

    @abc.abstractmethod
    def wrap(self, kernel_cmd: list[str], *, attempt: int, connection_file: Path,
             writable: list[Path]) -> list[str]:
        """The command that starts ``kernel_cmd`` confined (kernel number ``attempt`` of the job;
        the files in ``writable`` exist and the kernel must be able to write them)."""

    @abc.abstractmethod
    def report(self, attempt: int) -> dict:
        """What was applied to kernel number ``attempt`` (``{}`` if unknown)."""

    def refusal(self, report: dict) -> str:
        """Why the job must not run (a required isolation is missing), or ``""``."""
        return ""

    def kernel_started(self, pgid: int | None) -> None:
        """The runner started a kernel whose process group is ``pgid``."""

    @abc.abstractmethod
    def kill(self) -> None:
        """Stop every process of the job, now (never raises; may be called from another
        thread and more than once)."""


class LandlockSandbox(Sandbox):
    """Limits, a session of its own and Landlock, applied by this file run as a script."""

    REPORT_KEYS = ("landlock", "landlock_rules", "memory_bytes", "landlock_error")

    def __init__(self, folders: JobFolders, limits) -> None:
        super().__init__(folders, limits)
        self.token = secrets.token_hex(16)
        self.pgid: int | None = None

    def env(self) -> dict[str, str]:
        return {TOKEN_ENV: self.token}

    def _report_path(self, attempt: int) -> Path:
        return self.folders.out / f"sandbox-{attempt}.json"

    def wrap(self, kernel_cmd, *, attempt, connection_file, writable):
        report = self._report_path(attempt)
        report.write_text("")
        config = self.folders.inp / f"sandbox-config-{attempt}.json"
        config.write_text(json.dumps({
            "memory_mb": self.limits.memory_mb, "fsize_mb": self.limits.fsize_mb,
            "cpu_seconds": int(self.limits.timeout * 2 + 60), "nproc_margin": 512,
            "write_dirs": [str(self.folders.work), str(self.folders.home)],
            "write_files": ["/dev/null", str(report), *map(str, writable)],
            "connection_file": str(connection_file), "report": str(report),
            "require_landlock": self.limits.require_landlock,
        }), encoding="utf-8")
        return [sys.executable, "-I", "-S", str(Path(__file__).resolve()), str(config), "--",
                *kernel_cmd]

    def report(self, attempt: int) -> dict:
        try:
            report = json.loads(self._report_path(attempt).read_text())
        except (OSError, ValueError):
            return {}
        return report if isinstance(report, dict) else {}

    def refusal(self, report: dict) -> str:
        if self.limits.require_landlock and not report.get("landlock"):
            return ("not run: --require-sandbox was given but Linux Landlock is unavailable "
                    f"({report.get('landlock_error', 'unknown reason')})")
        return ""

    def kernel_started(self, pgid: int | None) -> None:
        self.pgid = pgid

    def kill(self) -> None:
        """SIGKILL the kernel's process group and every process carrying this job's token (forks,
        double forks with ``setsid``: they keep the kernel's environment)."""
        from .._process import stop_tree

        pgid, self.pgid = self.pgid, None
        stop_tree(group=pgid, also=_processes_with_env(TOKEN_ENV, self.token), wait=0)


def for_job(folders: JobFolders, limits) -> Sandbox:
    """The sandbox a job gets on this machine."""
    return LandlockSandbox(folders, limits)


def _processes_with_env(name: str, value: str) -> list[int]:
    """The pids (not this process, not init) whose environment has ``name=value``."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a grading dependency
        return []
    me, found = os.getpid(), []
    needle = f"{name}={value}".encode()
    for p in psutil.process_iter(["pid"]):
        if p.pid in (me, 1):
            continue
        try:
            with open(f"/proc/{p.pid}/environ", "rb") as fh:
                hit = needle in fh.read().split(b"\0")
        except FileNotFoundError:  # no /proc (macOS): ask psutil
            try:
                hit = p.environ().get(name) == value
            except psutil.Error:
                continue
        except OSError:
            continue
        if hit:
            found.append(p.pid)
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
