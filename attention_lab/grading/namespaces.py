"""The isolated sandbox: every kernel in namespaces of its own, made by bubblewrap, in job cgroups.

A kernel runs as ``launch.py`` (hard limits, cgroups) -> ``bwrap`` -> the kernel, with its own
PID namespace (killing its first process kills the whole job), network namespace (only a loopback
of its own; its ZeroMQ channels are unix sockets in its scratch, which the grader pins without
following links, :meth:`NamespaceSandbox._pin`), mount namespace (a read-only root of the system's
``/usr``, the Python installation, the package's kernel view (:mod:`.kernel_view`), ``/job/in``,
and a size-capped tmpfs ``/job``: no submissions, no other job, no home), IPC and UTS namespaces,
a new session, no capabilities and no further user namespaces.

The launcher puts the job in a **pids** cgroup (``Limits.max_tasks``) and a **cpu** cgroup (one
core) where the grader may create them (cgroup v1, or v2 with those controllers delegated);
without them, the pids limit falls back to ``RLIMIT_NPROC`` (a non-root grader only). Each
promise and the test that attacks it: ``docs/design/grading.md``.
"""

from __future__ import annotations

import compileall
import contextlib
import functools
import json
import os
import select
import stat
import shutil
import signal
import site
import sys
import tempfile
import threading
import time
from pathlib import Path

from .._process import running
from .sandbox_base import JobFolders, Sandbox, kernel_dirs

JOB = "/job"  # the kernel's scratch folder, inside its namespace
SHM_MB = 16
TMP_MB = 16  # /tmp: a tmpfs of its own (TMPDIR points into /job)
CGROUP_PREFIX = "attention-lab-"
CONTROLLERS = ("pids", "cpu", "cpuacct")  # the job's pids and CPU limits, its CPU time
SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
#: The kernel process, ``python -S -c KERNEL_MAIN``, measured in instructions (valgrind, which a
#: loaded machine does not disturb): ipykernel initialises in 1,070 M instructions, 870 M without
#: its debugger (nobody debugs a graded kernel); ``site`` costs 62 M of a Python start's 90 M here,
#: 58 M of them the editable install's finder, while ``-S`` plus the few builtins ``site`` adds
#: costs 7 M: the kernel gets the grader's site-packages and the package's parent folder on its
#: path directly (``.pth`` files are not run in a graded kernel).
KERNEL_MAIN = ("import sys, site\nsys.path[1:1] = {path!r}\n"
               "site.setquit(); site.setcopyright(); site.sethelper()\n"
               "sys.modules['debugpy'] = None\n"
               "from ipykernel import kernelapp\nkernelapp.launch_new_instance()\n")


# ====================================================================== what the kernel sees
@functools.cache
def visible_paths() -> tuple[tuple[str, ...], ...]:
    """bubblewrap arguments that make the system and the Python installation visible, read-only,
    at their own paths (symbolic links such as ``/lib -> usr/lib`` are recreated)."""
    args: list[tuple[str, ...]] = []
    for top in SYSTEM:
        if os.path.islink(top):
            args.append(("--symlink", os.readlink(top), top))
        elif os.path.isdir(top):
            args.append(("--ro-bind", top, top))
    python = {sys.base_prefix, sys.prefix, *_site_packages()}
    bound = [a[2] for a in args if a[0] == "--ro-bind"]
    for path in sorted(python, key=len):
        if os.path.isdir(path) and not any(_inside(path, b) for b in bound):
            args.append(("--ro-bind", path, path))
            bound.append(path)
    return tuple(args)


def kernel_path() -> list[str]:
    """What a graded kernel (started with ``-S``) puts on ``sys.path``: the package's parent folder
    (inside the sandbox it holds only the package's view), then the site-packages."""
    return list(dict.fromkeys([str(package_dir().parent), *_site_packages()]))


def _site_packages() -> list[str]:
    """The grader's site-packages, and the user's where Python uses it."""
    user = site.getusersitepackages()
    return site.getsitepackages() + ([user] if site.ENABLE_USER_SITE and os.path.isdir(user)
                                     else [])


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def package_dir() -> Path:
    import attention_lab

    return Path(attention_lab.__file__).resolve().parent


_VIEW_LOCK = threading.Lock()


def view_modules() -> list[str]:
    """The package's modules in a kernel's view: ``examples`` (the chapter's data) and the
    package modules it imports, never one of the implementations answers are checked against."""
    import ast

    from ..exercises.judging import REFERENCE_MODULES

    real, todo, found = package_dir(), ["examples"], []
    while todo:
        name = todo.pop()
        if f"attention_lab.{name}" in REFERENCE_MODULES:
            raise RuntimeError(f"attention_lab.examples needs {name}, a reference module: the "
                               f"kernel's view of the package would hold the answers")
        found.append(name)
        tree = ast.parse((real / f"{name}.py").read_text(encoding="utf-8"))
        for node in tree.body:  # the module's own (top-level) relative imports
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                for dep in ([node.module] if node.module else [a.name for a in node.names]):
                    if dep not in found and dep not in todo:
                        todo.append(dep)
    return sorted(found)


def build_view(folder: Path) -> Path:
    """The package as a graded kernel sees it (:mod:`.kernel_view`), in ``folder`` (built once,
    compiled, so that no kernel compiles it again): the folder to mount over the package."""
    real = package_dir()
    view = folder / real.name
    with _VIEW_LOCK:
        if view.exists():
            return view
        folder.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder)) / real.name
        (tmp / "exercises").mkdir(parents=True)
        shutil.copyfile(Path(__file__).with_name("kernel_view.py"), tmp / "__init__.py")
        for name in view_modules():
            shutil.copyfile(real / f"{name}.py", tmp / f"{name}.py")
        (tmp / "exercises" / "__init__.py").write_text(
            '"""check, hint and status in a graded kernel (see attention_lab/__init__.py)."""\n'
            "from .. import check, hint, status  # noqa: F401\n", encoding="utf-8")
        compileall.compile_dir(str(tmp), quiet=2)
        tmp.rename(view)
        tmp.parent.rmdir()
    return view


def namespace_args(scratch_mb: int) -> list[str]:
    """The sandbox without the job's own files: namespaces, capabilities, the visible paths, the
    size-capped ``/job`` and the rest of the minimal root."""
    args = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
            "--new-session", "--cap-drop", "ALL", "--hostname", "grading",
            "--proc", "/proc", "--dev", "/dev", "--size", str(SHM_MB * 2 ** 20),
            "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            # /tmp before the visible paths, so that a Python installation or a checkout under
            # /tmp is mounted inside it (temporary files go to /job/home/tmp: TMPDIR)
            "--size", str(TMP_MB * 2 ** 20), "--tmpfs", "/tmp"]
    for item in visible_paths():
        args.extend(item)
    args += ["--size", str(scratch_mb * 2 ** 20), "--tmpfs", JOB]
    for sub in ("work", "home", "home/tmp", "home/ipython", "home/mpl", "home/runtime", "run"):
        args += ["--dir", f"{JOB}/{sub}"]
    return args


def trial_command(bwrap: str) -> list[str]:
    """A sandbox like a kernel's (without the job's files) that runs ``true``."""
    return [bwrap, *namespace_args(1), "--remount-ro", "/", "--", "true"]


# ====================================================================== cgroups
@functools.cache
def cgroup_parents() -> tuple[tuple[str, Path], ...]:
    """``(controller, folder)`` for ``pids``, ``cpu`` and ``cpuacct``: where this process may
    create a job's cgroup (its own cgroup in a v1 hierarchy of that controller, or in the v2 tree
    when the controller is enabled for its children). Empty where it may not."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
        own = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return ()
    found: dict[str, Path] = {}
    for line in mounts:
        fields = line.split()
        if " - " not in line:
            continue
        fstype, _, options = line.split(" - ", 1)[1].split()[:3]
        mountpoint = Path(fields[4])
        for entry in own:
            hier, ctrls, path = entry.split(":", 2)
            folder = mountpoint / path.lstrip("/")
            if fstype == "cgroup" and ctrls:
                for c in CONTROLLERS:
                    if c in ctrls.split(",") and c in options.split(","):
                        found.setdefault(c, folder)
            elif fstype == "cgroup2" and hier == "0":
                try:
                    enabled = (folder / "cgroup.subtree_control").read_text().split()
                except OSError:
                    continue
                for c in ("pids", "cpu"):
                    if c in enabled:
                        found.setdefault(c, folder)
    return tuple((c, d) for c, d in found.items() if os.access(d, os.W_OK))


class JobCgroups:
    """The cgroups of one job (one per hierarchy of the controllers the grader may use)."""

    def __init__(self, name: str, max_tasks: int) -> None:
        self.name = name
        self.dirs: list[Path] = []
        self.problems: list[str] = []
        for controller, parent in cgroup_parents():
            folder = parent / name
            try:
                folder.mkdir(exist_ok=True)
                if controller == "pids":
                    (folder / "pids.max").write_text(str(max_tasks))
                elif controller == "cpu" and (folder / "cpu.max").exists():  # v2: one core
                    (folder / "cpu.max").write_text("100000 100000")
                elif controller == "cpu":  # v1
                    (folder / "cpu.cfs_period_us").write_text("100000")
                    (folder / "cpu.cfs_quota_us").write_text("100000")
                if folder not in self.dirs:  # cpu and cpuacct may share a hierarchy
                    self.dirs.append(folder)
            except OSError as exc:
                self.problems.append(f"{controller}: {exc.strerror}")
                _rmdir(folder)

    @property
    def controllers(self) -> list[str]:
        return [c for c, p in cgroup_parents() if p / self.name in self.dirs]

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def cpu_seconds(self) -> float | None:
        """CPU time used by the job's processes so far (``None`` if not measured)."""
        for d in self.dirs:
            try:
                if (d / "cpuacct.usage").exists():
                    return int((d / "cpuacct.usage").read_text()) / 1e9
                if (d / "cpu.stat").exists():
                    for line in (d / "cpu.stat").read_text().splitlines():
                        if line.startswith("usage_usec "):
                            return int(line.split()[1]) / 1e6
            except (OSError, ValueError):
                continue
        return None

    def remove(self, wait: float = 5.0) -> bool:
        """Kill what is still in the cgroups and remove them; False if one stays busy."""
        deadline = time.monotonic() + wait
        while True:
            for d in self.dirs:
                _kill_procs(d)
            for d in list(self.dirs):
                if _rmdir(d):
                    self.dirs.remove(d)
            if not self.dirs:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)


def _read_pids(folder: Path) -> list[int]:
    try:
        return [int(x) for x in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _rmdir(folder: Path) -> bool:
    """Remove ``folder``; whether it is gone."""
    with contextlib.suppress(OSError):
        folder.rmdir()
    return not folder.exists()


def _kill_procs(folder: Path) -> None:
    """SIGKILL every process of the cgroup ``folder``."""
    for pid in _read_pids(folder):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def remove_stale_cgroups() -> list[Path]:
    """Remove the job cgroups of graders that are gone (named ``attention-lab-<pid>-...``; gone:
    no such process, or one started after the cgroup was made)."""
    removed = []
    for _, parent in cgroup_parents():
        for folder in parent.glob(CGROUP_PREFIX + "*"):
            try:
                owner = int(folder.name[len(CGROUP_PREFIX):].split("-")[0])
                made = folder.stat().st_ctime
            except (ValueError, OSError):
                continue
            if owner == os.getpid() or _alive_since(owner, made):
                continue
            _kill_procs(folder)
            if _read_pids(folder):
                time.sleep(0.05)
            if _rmdir(folder):
                removed.append(folder)
    return removed


def _alive_since(pid: int, when: float) -> bool:
    """Whether process ``pid`` exists and was started before ``when`` (a Unix time)."""
    try:
        import psutil

        return psutil.Process(pid).create_time() <= when + 1
    except Exception:
        return False


# ====================================================================== the sandbox
class NamespaceSandbox(Sandbox):
    """A job whose kernels run in namespaces of their own (see the module docstring)."""

    REPORT_KEYS = ("isolation", "namespaces", "cgroups", "memory_bytes", "file_size_bytes",
                   "cpu_seconds", "processes", "scratch_bytes", "cpu_seconds_used")
    transport = "ipc"
    kernel_ip = f"{JOB}/run/kernel"  # the sockets' path prefix, inside the namespace

    def __init__(self, folders: JobFolders, limits, bwrap: str) -> None:
        super().__init__(folders, limits)
        self.bwrap = bwrap
        self.cgroups: JobCgroups | None = None
        self._pidfds: list[int] = []  # the launchers and the namespaces' first processes
        self._pinned: dict[int, list[int]] = {}  # attempt -> descriptors of its sockets, links
        self._lock = threading.Lock()
        self.cpu_used: float | None = None
        self._attempt = 0

    def env(self) -> dict[str, str]:
        return kernel_dirs(f"{JOB}/home")

    def path(self, host: Path) -> str:
        host = Path(host)
        if host.parent == self.folders.inp:
            return f"{JOB}/in/{host.name}"
        raise ValueError(f"{host} is not a file the kernel can see")

    def wrap(self, kernel_cmd, *, attempt, connection_file):
        self._attempt = attempt
        if self.cgroups is None:
            name = f"{CGROUP_PREFIX}{os.getpid()}-{self.folders.work.parent.name}"
            self.cgroups = JobCgroups(name, self.limits.max_tasks)
        view = build_view((self.folders.shared or self.folders.out) / "view")
        args = [self.bwrap, *namespace_args(self.limits.scratch_mb),
                "--ro-bind", str(view), str(package_dir()),
                "--ro-bind", str(self.folders.inp), f"{JOB}/in"]
        args += ["--remount-ro", "/", "--chdir", f"{JOB}/work", "--unsetenv", "JPY_PARENT_PID",
                 "--info-fd", "{info_fd}", "--"]
        host_conn = str(connection_file)
        kernel = list(kernel_cmd)
        if len(kernel) > 2 and kernel[1:3] == ["-m", "ipykernel_launcher"]:
            kernel[1:3] = ["-S", "-c", KERNEL_MAIN.format(path=kernel_path())]
        kernel = [self.path(connection_file) if a == host_conn else a for a in kernel]
        config = {"cgroups": self.cgroups.procs_files(), "info": str(self._info(attempt))}
        if "pids" not in self.cgroups.controllers:
            config["nproc_margin"] = self.limits.max_tasks
        return self.launcher(attempt, config, [*args, *kernel])

    def _info(self, attempt: int) -> Path:
        return self.folders.out / f"bwrap-{attempt}.json"

    def started(self, pid: int, ports: list[int]) -> str:
        """Wait for bubblewrap's report of the namespace's first process (a few ms), then for the
        kernel to bind its sockets, and pin them (:meth:`_pin`): the address the grader connects
        to, ``/proc/self/fd/D/k`` (``D``: a folder of the grader's with one link per port to a
        pinned socket)."""
        self._watch(pid)
        deadline = time.monotonic() + self.limits.startup_timeout
        info = self._info(self._attempt)
        while True:
            try:
                child = int(json.loads(info.read_text())["child-pid"])
                break
            except (OSError, ValueError, KeyError, TypeError):
                if time.monotonic() > deadline or not running(pid):
                    raise RuntimeError("the sandbox did not start") from None
                time.sleep(0.002)
        self._watch(child)
        return self._pin(self._attempt, pid, child, ports, deadline)

    def _pin(self, attempt: int, pid: int, child: int, ports: list[int], deadline: float) -> str:
        """Open ``/job/run/kernel-PORT`` of the namespace of ``child`` for each port, one path
        component at a time and never through a link (``O_PATH | O_NOFOLLOW``), once it is a
        bound socket; link ``out/links-ATTEMPT/k-PORT`` to the descriptor. Until the kernel has
        bound its first socket, the whole path is opened again at every try (bubblewrap makes
        the new root only after it reported the child)."""
        held: list[int] = []
        with self._lock:
            self._pinned[attempt] = held
        links = self.folders.out / f"links-{attempt}"
        links.mkdir()
        names = [f"{self.kernel_ip.rsplit('/', 1)[1]}-{port}" for port in ports]
        run = None
        for port, name in zip(ports, names):
            while True:
                try:
                    if run is None:
                        run = self._socket_folder(child)
                        held.append(run)
                    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=run)
                    break
                except FileNotFoundError:
                    if port == ports[0] and run is not None:
                        os.close(held.pop())
                        run = None
                    if time.monotonic() > deadline or not running(pid):
                        raise RuntimeError(f"the kernel did not bind its socket {name}") from None
                    time.sleep(0.003)
            held.append(fd)
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                raise RuntimeError(f"the kernel's {name} is not a socket")
            os.symlink(f"/proc/self/fd/{fd}", links / f"k-{port}")
        held.append(os.open(links, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
        return f"/proc/self/fd/{held[-1]}/k"

    @staticmethod
    def _socket_folder(child: int) -> int:
        """``/job/run`` of ``child``'s root, opened component by component, no link followed."""
        fd = os.open(f"/proc/{child}/root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in (*JOB.strip("/").split("/"), "run"):
                nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                              dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError:
            os.close(fd)
            raise FileNotFoundError from None
        return fd

    def connections_released(self, attempt: int) -> None:
        """Close what :meth:`_pin` held for kernel ``attempt``: only now, since ZeroMQ resolves
        the links at every (re)connection, and a closed descriptor's number is reused."""
        with self._lock:
            held = self._pinned.pop(attempt, [])
        for fd in held:
            os.close(fd)

    def report(self, attempt: int) -> dict:
        report = Sandbox.report(self, attempt)
        if not report:
            return {}
        try:
            info = json.loads(self._info(attempt).read_text())
            spaces = sorted(k.removesuffix("-namespace") for k in info if k.endswith("namespace"))
        except (OSError, ValueError, AttributeError):
            spaces = []
        cgroups = self.cgroups.controllers if self.cgroups else []
        return {**report, "isolation": "bubblewrap", "namespaces": spaces + ["user"],
                "cgroups": cgroups, "scratch_bytes": self.limits.scratch_mb * 2 ** 20,
                **({"processes": self.limits.max_tasks} if "pids" in cgroups else {})}

    def _watch(self, pid: int) -> None:
        """Hold a pidfd of ``pid``: it signals that process or nothing, even once the pid is
        reused."""
        with contextlib.suppress(OSError):  # already gone
            self._pidfds.append(os.pidfd_open(pid))

    def kill(self) -> None:
        """SIGKILL each namespace's first process (the kernel then kills every other process of
        that namespace) and each launcher (bubblewrap's outer process); wait until they are gone."""
        fds, self._pidfds = self._pidfds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        deadline = time.monotonic() + 5
        for fd in fds:  # a pidfd is readable once its process has exited
            select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            os.close(fd)

    def close(self) -> None:
        """Kill, note the CPU time the job used (:attr:`cpu_used`), remove its cgroups. (What a
        kernel's connections pinned is released by the runner, after ZeroMQ has let go.)"""
        self.kill()
        if self.cgroups is not None:
            self.cpu_used = self.cgroups.cpu_seconds()
            self.cgroups.remove()
            self.cgroups = None


__all__ = ["NamespaceSandbox", "JobCgroups", "namespace_args", "visible_paths", "trial_command",
           "build_view", "remove_stale_cgroups", "cgroup_parents"]
