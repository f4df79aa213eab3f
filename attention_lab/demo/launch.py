"""``python -m attention_lab demo``: serve the lecture demo with Voila as a standalone app.

Launch it from a checkout (the README's command)::

    python -m attention_lab demo                 # http://127.0.0.1:8866/?token=... (this machine only)
    python -m attention_lab demo --port 0        # any free port
    python -m attention_lab demo --host 0.0.0.0 --allow-network   # a lecture-hall network, on purpose

Voila runs ``notebooks/demo.ipynb`` (the app of :mod:`attention_lab.demo.app`) and shows its
outputs only, never code, through the demo's server (:mod:`attention_lab.demo.server`): ``--pool``
kernels are preheated before viewers arrive, at most ``--max-viewers`` are served at once, and the
kernels of viewers who left are shut down after ``--cull-after`` seconds. Both defaults come from
this machine's free memory (:func:`plan`). The trained model is loaded once, in a process of its own
(:mod:`attention_lab.demo.model_server`), for every viewer.

The launcher checks the options (a notebook that reads as JSON, port free, host local unless
``--allow-network``, a token), starts the model server and Voila in sessions of their own, prints
the address once Voila listens, and on Ctrl-C, SIGTERM, SIGHUP or Voila's exit stops both and
every kernel Voila started (:func:`attention_lab._process.stop_tree`). Voila is imported only to
check that it is installed, so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import ipaddress
import json
import math
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .._cli import non_negative_int, positive_seconds
from .._process import die_with_parent, stop_tree
from .model_server import ENV_KEY, ENV_SOCKET

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_NOTEBOOK = ROOT / "notebooks" / "demo.ipynb"
DEFAULT_PORT = 8866
#: a Jupyter data folder of the demo's own, first on the server's JUPYTER_PATH: its Voila template
#: ``lecture-demo`` is Voila's ``lab`` without the stylesheets ``lab`` links from another host
JUPYTER_DATA = Path(__file__).resolve().parent / "jupyter"
#: The only JupyterLab extensions the demo page loads: widgets, ipympl and anywidget (the
#: explorers' accessibility widget). Others installed for JupyterLab (e.g. jupytext's) do not work
#: inside Voila and only add errors to the page; a widget whose extension is missing here shows a
#: JavaScript error in its place.
VOILA_EXTENSIONS = ("@jupyter-widgets/jupyterlab-manager", "@voila-dashboards/widgets-manager8",
                    "@voila-dashboards/widgets-manager7", "jupyter-matplotlib", "anywidget",
                    "jupyterlab_pygments")


#: Memory planned per viewer kernel: measured 135 MiB RSS (104 MiB of it its own) for a kernel
#: with the five explorers built, right after its viewer moved sliders, 117 MiB once its figures
#: are idle (``python -m benchmarks.bench_demo --n 30 --configs hall``), plus margin: a viewer may
#: move the sliders of every tab in turn.
VIEWER_MIB = 200
#: Kept free for the rest: the model server (~240 MiB), Voila's server (~100-300 MiB), the system.
RESERVE_MIB = 1536
#: The largest default pool: a class of 30 arriving at once finds a preheated kernel each.
MAX_DEFAULT_POOL = 30


@dataclass(frozen=True)
class Plan:
    """How many kernels the demo keeps preheated and how many viewers it serves at most."""

    pool: int
    max_viewers: int
    available_mib: int


def plan(available_mib: int | None = None) -> Plan:
    """Defaults from free memory: every kernel (a viewer's or a preheated one) is planned at
    :data:`VIEWER_MIB`; a third of what fits (at most :data:`MAX_DEFAULT_POOL`) is preheated, the
    rest serves viewers. 22 GB free: 30 preheated, 72 viewers; 4 GB free: 4 and 8."""
    if available_mib is None:
        import psutil

        available_mib = psutil.virtual_memory().available // 2**20
    kernels = max(2, (available_mib - RESERVE_MIB) // VIEWER_MIB)
    pool = min(MAX_DEFAULT_POOL, kernels // 3)
    return Plan(pool=pool, max_viewers=max(1, kernels - pool), available_mib=available_mib)


class DemoError(Exception):
    """A launch problem with a message for the instructor (printed without a traceback)."""


def is_local_host(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine (a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None)
        except socket.gaierror:
            raise DemoError(f"--host {host!r} is neither an IP address nor a name this machine "
                            f"can resolve") from None
        return all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def check_port_free(host: str, port: int) -> None:
    """Raise :class:`DemoError` when ``port`` cannot be bound on ``host`` (already in use)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise DemoError(
                    f"port {port} on {host} is already in use (another demo, Voila or Jupyter "
                    f"server?). Stop it, or choose another port: "
                    f"--port {port + 1 if port < 65535 else port - 1}, or --port 0 for any free "
                    f"port") from None
            if exc.errno == errno.EACCES:
                raise DemoError(f"no permission to listen on port {port}; ports below 1024 need "
                                f"administrator rights: use e.g. --port {DEFAULT_PORT}") from None
            raise DemoError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def lan_addresses() -> list[str]:
    """This machine's non-loopback IPv4 addresses (best effort; no packet is sent)."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        with contextlib.suppress(OSError):
            s.connect(("10.255.255.255", 1))  # UDP connect: picks the outgoing interface, sends nothing
            found.append(s.getsockname()[0])
    with contextlib.suppress(socket.gaierror):
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.append(info[4][0])
    return [a for a in dict.fromkeys(found) if not ipaddress.ip_address(a).is_loopback]


def network_warning(host: str, port: int) -> str:
    return (
        f"WARNING: serving the demo to the network ({host}:{port}), on purpose (--allow-network).\n"
        f"  - Every machine that can reach this one on port {port} and has the URL with its token\n"
        f"    can open the demo. Share the URL only with the room; anyone who sees it can use it.\n"
        f"  - Each visitor starts a Python kernel here (CPU and memory of this machine); visitors\n"
        f"    cannot type code (Voila accepts only widget messages), but widget callbacks run here.\n"
        f"  - The traffic is plain HTTP, not encrypted: use it on a network you trust.\n"
        f"  - A firewall may block the port; stop the demo with Ctrl-C when the lecture ends."
    )


def voila_command(notebook: Path, host: str, port: int, token: str, theme: str, *,
                  pool: int = 0, max_viewers: int = 0, cull_after: float = 0,
                  preheat_slots: int = 1) -> list[str]:
    """The demo server's command line (:mod:`attention_lab.demo.server`, which is Voila):
    standalone app, no code cells, fixed port; ``pool`` preheated kernels preheating ``preheat_slots``
    at a time, at most ``max_viewers`` viewers (0: no limit), kernels without a page culled after
    ``cull_after`` seconds idle (0: never)."""
    server = [
        f"--VoilaConfiguration.multi_kernel_manager_class="
        f"attention_lab.demo.server.DemoKernelManager",
        f"--DemoKernelManager.preheat_slots={preheat_slots}",
        f"--DemoVoila.max_viewers={max_viewers}",
        # unix sockets beside the connection files (Voila's private temporary folder), not TCP
        # ports any account of the machine could connect to
        "--KernelManager.transport=ipc",
    ]
    if pool > 0:
        server += ["--preheat_kernel=True", f"--pool_size={pool}"]
    if cull_after > 0:
        server += [f"--MappingKernelManager.cull_idle_timeout={int(math.ceil(cull_after))}",
                   f"--MappingKernelManager.cull_interval={max(1, min(30, int(cull_after) // 4))}"]
    return [
        sys.executable, "-m", "attention_lab.demo.server", str(notebook),
        "--no-browser",
        f"--Voila.ip={host}",
        f"--port={port}",
        "--Voila.port_retries=0",
        f"--Voila.token={token}",
        "--template=lecture-demo",
        f"--theme={theme}",
        "--strip_sources=True",
        "--show_tracebacks=False",
        "--Voila.log_level=WARN",
        *[f"--VoilaConfiguration.extension_allowlist={name}" for name in VOILA_EXTENSIONS],
        *server,
    ]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m attention_lab demo",
        description="Launch the lecture demo (notebooks/demo.ipynb in Voila: tabs, no code, large "
                    "type). It listens on 127.0.0.1 (this machine only) unless you serve it to a "
                    "network on purpose with --host ... --allow-network.")
    p.add_argument("--notebook", type=Path, default=DEFAULT_NOTEBOOK,
                   help="the demo notebook (default: notebooks/demo.ipynb of this checkout)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only). "
                        "0.0.0.0 = every network interface; needs --allow-network")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT}; 0 = any free port)")
    p.add_argument("--allow-network", action="store_true",
                   help="confirm that the demo may be reached from other machines (lecture hall)")
    p.add_argument("--token", default=None,
                   help="access token in the URL (default: a random one); choose a short one "
                        "to write it on the board")
    p.add_argument("--theme", choices=("light", "dark"), default="light",
                   help="Voila's colours: dark text on white, or light on dark (default light)")
    p.add_argument("--open", action="store_true", help="open the demo in this machine's browser")
    p.add_argument("--timeout", type=positive_seconds, default=60.0,
                   help="seconds to wait for Voila to start (default 60)")
    p.add_argument("--pool", type=non_negative_int, default=None, metavar="N",
                   help="kernels kept preheated for arriving viewers (default: from free memory, "
                        f"at most {MAX_DEFAULT_POOL} and --max-viewers; 0 = start a kernel per "
                        "viewer on arrival)")
    p.add_argument("--max-viewers", type=non_negative_int, default=None, metavar="N",
                   help="viewers served at once; further viewers get a page saying the demo is "
                        "full (default: from free memory; 0 = no limit)")
    p.add_argument("--cull-after", type=non_negative_int, default=120, metavar="S",
                   help="shut down the kernel of a viewer who left after S idle seconds "
                        "(default 120; 0 = never)")
    return p


def _prepare(args) -> tuple[Path, str, int, str]:
    notebook = Path(args.notebook)
    if notebook.suffix != ".ipynb":
        hint = ""
        if notebook.suffix == ".py":
            hint = (f"; for a jupytext text notebook run `python -m attention_lab.nbtools execute "
                    f"{notebook}`, which writes {notebook.with_suffix('.ipynb').name}")
        raise DemoError(f"--notebook must be a .ipynb file, got {notebook}{hint}")
    if not notebook.is_file():
        where = ("the demo ships with a checkout of attention-lab (git clone the repository and "
                 "run this command there)" if notebook == DEFAULT_NOTEBOOK
                 else "check the path")
        raise DemoError(f"the demo notebook {notebook} does not exist: {where}; "
                        f"or pass --notebook PATH")
    try:
        json.loads(notebook.read_bytes())
    except ValueError as exc:  # a merge conflict, a truncated copy (not UTF-8 included)
        raise DemoError(f"the demo notebook {notebook} is not a notebook (invalid JSON: {exc})") \
            from None
    except OSError as exc:
        raise DemoError(f"the demo notebook {notebook} cannot be read: {exc.strerror}") from None
    if not 0 <= args.port <= 65535:
        raise DemoError(f"--port must be between 0 and 65535, got {args.port}")
    host = args.host
    if not is_local_host(host) and not args.allow_network:
        raise DemoError(
            f"--host {host} would let other machines reach the demo. If that is what you want "
            f"(a lecture-hall network), add --allow-network to confirm; otherwise leave --host out "
            f"(127.0.0.1, this machine only)")
    token = args.token if args.token is not None else secrets.token_urlsafe(12)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", token):
        raise DemoError(f"--token must be non-empty and use letters, digits, '-', '_' or '.' "
                        f"only, got {token!r}")
    port = free_port(host if host not in ("0.0.0.0", "::") else "127.0.0.1") \
        if args.port == 0 else args.port
    check_port_free(host, port)
    try:
        import voila  # noqa: F401
    except ImportError:
        raise DemoError("Voila is not installed in this environment: "
                        "pip install 'voila>=0.5,<0.6' (it is in requirements.txt)") from None
    return notebook.resolve(), host, port, token


def _wait_listening(proc: subprocess.Popen, host: str, port: int, timeout: float) -> None:
    """Wait until Voila accepts connections on ``port`` (at a loopback address when it listens on
    every interface)."""
    address = "127.0.0.1" if host in ("0.0.0.0", "") else ("::1" if host == "::" else host)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DemoError(f"Voila stopped before it was ready (exit code {proc.returncode}); "
                            f"its messages are above")
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise DemoError(f"Voila did not start listening on {host}:{port} within {timeout:g} s")


def _raise_interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        notebook, host, port, token = _prepare(args)
    except DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    local = is_local_host(host)
    if not local:
        print(network_warning(host, port), file=sys.stderr, flush=True)
    defaults = plan()
    max_viewers = defaults.max_viewers if args.max_viewers is None else args.max_viewers
    # a pool larger than the viewer limit could never be used
    pool = min(defaults.pool, max_viewers or defaults.pool) if args.pool is None else args.pool
    env = dict(os.environ)
    for var, first in (("PYTHONPATH", ROOT), ("JUPYTER_PATH", JUPYTER_DATA)):
        env[var] = os.pathsep.join(p for p in (str(first), env.get(var, "")) if p)
    # dozens of kernels on a few cores: one math thread each (the explorers' arrays are tiny)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    # the trained model, once for every viewer, reached through a private socket and a key
    private = Path(tempfile.mkdtemp(prefix="attention-lab-demo-"))  # mode 0700
    env[ENV_SOCKET], env[ENV_KEY] = str(private / "model.sock"), secrets.token_hex(32)
    # Ctrl-C, SIGTERM and SIGHUP to the launcher stop Voila too (the finally clause below)
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in signals}
    child = dict(env=env, start_new_session=True,
                 preexec_fn=die_with_parent if sys.platform.startswith("linux") else None)
    model = subprocess.Popen([sys.executable, "-m", "attention_lab.demo.model_server",
                              env[ENV_SOCKET]], cwd=str(ROOT), **child)
    command = voila_command(notebook, host, port, token, args.theme, pool=pool,
                            max_viewers=max_viewers, cull_after=args.cull_after,
                            preheat_slots=max(1, (os.cpu_count() or 2) // 2))
    proc = subprocess.Popen(command, cwd=str(notebook.parent), **child)
    try:
        try:
            _wait_listening(proc, host, port, args.timeout)
        except DemoError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)  # (:: is IPv6 only)
        if ":" in shown:
            shown = f"[{shown}]"
        url = f"http://{shown}:{port}/?token={token}"
        lines = [f"attention-lab lecture demo ({notebook.name}) is running:", f"  {url}"]
        if local:
            lines.append("  (this machine only; Ctrl-C stops the demo)")
        else:
            others = lan_addresses() if host == "0.0.0.0" else [] if host == "::" else [host]
            lines += [f"  from other machines: http://{f'[{a}]' if ':' in a else a}:{port}/"
                      f"?token={token}" for a in others] or [
                "  from other machines: this machine's IPv6 addresses only (tornado listens on "
                "IPv6 alone at ::; --host 0.0.0.0 serves IPv4)"]
            lines.append("  (reachable from the network; Ctrl-C stops the demo)")
        lines.append(f"  capacity: {_capacity_line(pool, max_viewers, args.cull_after, defaults)}")
        print("\n".join(lines), flush=True)
        if args.open:
            import webbrowser

            webbrowser.open(url)
        while proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1.0)
            if model.returncode is None and model.poll() is not None:  # told once
                print(f"error: the model server stopped (exit code {model.returncode}): the "
                      f"trained model's tab cannot decode until the demo is restarted",
                      file=sys.stderr, flush=True)
        print(f"error: Voila exited with code {proc.returncode}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopping the demo ...", file=sys.stderr, flush=True)
        return 0
    finally:
        # SIGTERM to Voila's group (it shuts its kernels down), then SIGKILL to what is left,
        # kernels in their own sessions included; a second Ctrl-C must not cut this short
        for sig in signals:
            signal.signal(sig, signal.SIG_IGN)
        stop_tree(proc, group=proc.pid, grace=10.0, wait=10.0)
        stop_tree(model, group=model.pid, grace=2.0, wait=5.0)
        shutil.rmtree(private, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _capacity_line(pool: int, max_viewers: int, cull_after: int, defaults: Plan) -> str:
    viewers = f"up to {max_viewers} viewer{'s' * (max_viewers != 1)}" if max_viewers \
        else "no viewer limit"
    preheating = (f"{pool} kernel{'s' * (pool != 1)} preheating (a few seconds of CPU each; "
                  f"'[demo] ... ready' below says when)" if pool else "no preheated kernels")
    cull = f"a viewer's kernel ends {cull_after} s after they leave" if cull_after \
        else "kernels of viewers who left are kept"
    return (f"{viewers}, {preheating}, {cull} ({defaults.available_mib / 1024:.1f} GiB of memory free, "
            f"{VIEWER_MIB} MiB planned per kernel)")


if __name__ == "__main__":
    sys.exit(main())
