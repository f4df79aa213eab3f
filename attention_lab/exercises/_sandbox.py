"""Start a grading kernel inside limits: ``python -I -S _sandbox.py CONFIG.json -- KERNEL ARGV...``

Run as a plain script (standard library only, nothing imported from the package) just before the
kernel replaces it (``execvp`` keeps the pid, the process group and everything set here):

* resource limits: address space (the memory limit), file size, CPU time, no core dumps, and a
  process-count cap (effective for non-root users);
* Linux Landlock (kernel >= 5.13), when available: the kernel and every process it starts may
  create, write, rename or delete files only inside the submission's own scratch folder (plus
  ``/dev/null``), may not open TCP connections and may bind only its own five ZeroMQ ports, and
  (ABI >= 6) may not send signals to, or connect to abstract sockets of, any process outside
  its sandbox: not the grader, not another submission's kernel. Landlock also forbids ptrace of
  outside processes.

It writes what it managed to apply to ``CONFIG["report"]`` (JSON) for the grading report.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import struct
import sys

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
        print("usage: _sandbox.py CONFIG.json -- COMMAND ...", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
