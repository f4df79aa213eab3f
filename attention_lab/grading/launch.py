"""The first process of every grading kernel: limits and cgroups, then ``exec`` of the sandbox.

Run as a script by the grader, ``python -I -S launch.py CONFIG.json -- COMMAND ARGS...``, with the
standard library only (nothing of the package is imported, nothing the student wrote has run
yet). It asks Linux to SIGKILL it when the grader's thread that started it dies
(``PR_SET_PDEATHSIG`` survives ``exec``, so the sandbox dies with the grader), joins the job's
cgroups (``CONFIG["cgroups"]``), sets hard limits (soft = hard, so the kernel cannot raise them),
hands bubblewrap a descriptor of ``CONFIG["info"]`` in place of ``{info_fd}``, writes what it
applied to ``CONFIG["report"]``, becomes ``CONFIG["run_as"]`` (uid, gid; given the files of
``CONFIG["hand_over"]``) if set, and ``execvp``s COMMAND. A limit or cgroup it cannot apply is
reported, not fatal: the grader decides what is required.
"""

from __future__ import annotations

import json
import os
import resource
import sys

LIMITS = {"memory_bytes": "RLIMIT_AS", "file_size_bytes": "RLIMIT_FSIZE",
          "cpu_seconds": "RLIMIT_CPU", "core_bytes": "RLIMIT_CORE", "processes": "RLIMIT_NPROC"}


def hard_limit(name: str, value: int, report: dict) -> None:
    """Set ``resource.<LIMITS[name]>`` to ``(value, value)`` (the hard limit if that is lower)."""
    which = getattr(resource, LIMITS[name])
    try:
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY and value > hard:
            value = hard
        resource.setrlimit(which, (value, value))
        report[name] = value
    except (ValueError, OSError) as exc:
        report[name] = f"not set: {exc}"


def tasks_of_user(uid: int) -> int:
    """Processes and threads owned by ``uid`` now (what RLIMIT_NPROC counts)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                total += int(fields.get("Threads", "1"))
        except (OSError, KeyError, ValueError, IndexError):
            continue
    return total


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent (thread) dies; exit now if it is already gone."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != parent:
        sys.exit(3)


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") != 1 or len(argv) < 3:
        print("usage: launch.py CONFIG.json -- COMMAND ...", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        cfg = json.load(fh)
    cmd = argv[2:]
    if cfg.get("parent"):
        die_with_parent(int(cfg["parent"]))
    report: dict = {"pid": os.getpid(), "cgroups": []}
    for procs in cfg.get("cgroups", []):
        try:
            with open(procs, "w", encoding="ascii") as fh:
                fh.write(str(os.getpid()))
            report["cgroups"].append(os.path.dirname(procs))
        except OSError as exc:
            report.setdefault("cgroup_errors", []).append(f"{procs}: {exc.strerror}")
    for name, value in cfg.get("limits", {}).items():
        hard_limit(name, int(value), report)
    uid, gid = cfg.get("run_as") or (os.geteuid(), os.getegid())
    margin = int(cfg.get("nproc_margin", 0))
    if margin:
        if uid == 0:
            report["processes"] = "not limited: RLIMIT_NPROC does not apply to root"
        else:
            hard_limit("processes", tasks_of_user(uid) + margin, report)
    if cfg.get("info"):
        fd = os.open(cfg["info"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.set_inheritable(fd, True)
        cmd = [str(fd) if arg == "{info_fd}" else arg for arg in cmd]
    if cfg.get("run_as"):  # root without namespaces: the kernel runs as an unprivileged user
        for path in cfg.get("hand_over", []):
            os.chown(path, uid, gid)
        report["user"] = uid
    if cfg.get("report"):
        with open(cfg["report"], "w", encoding="utf-8") as fh:
            json.dump(report, fh)
    if cfg.get("run_as"):
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    os.execvp(cmd[0], cmd)
    return 127  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
