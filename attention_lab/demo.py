"""The lecture demo: explorers in tabs for a projector, served by Voila as a standalone app.

Launch it from a checkout (the README's command)::

    python -m attention_lab demo                 # http://127.0.0.1:8866/?token=... (this machine only)
    python -m attention_lab demo --port 0        # any free port
    python -m attention_lab demo --host 0.0.0.0 --allow-network   # a lecture-hall network, on purpose

Voila runs ``notebooks/demo.ipynb`` and shows its outputs only (no code cells). The notebook builds
the app with :func:`build_demo`, one explorer per tab::

    demo = build_demo({"Query": QueryExplorer(presentation=True),
                       "Temperature": TemperatureExplorer(presentation=True)})
    demo

An explorer is any object with ``.controls`` (a dict name -> ipywidget with a ``.value``) and,
optionally, ``reset()`` and ``.widget`` (what to show; otherwise the explorer itself is shown, as a
widget or through its ``_repr_mimebundle_``). The demo's reset button calls every explorer's
``reset()`` and then puts any control still away from its starting value back.

Heavy imports (ipywidgets, the Voila process) happen only when used, so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import math
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NOTEBOOK = ROOT / "notebooks" / "demo.ipynb"
DEFAULT_PORT = 8866
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: The only JupyterLab extensions the demo page loads: widgets and ipympl. Others installed for
#: JupyterLab (e.g. jupytext's) do not work inside Voila and only add errors to the page.
VOILA_EXTENSIONS = ("@jupyter-widgets/jupyterlab-manager", "@voila-dashboards/widgets-manager8",
                    "@voila-dashboards/widgets-manager7", "jupyter-matplotlib",
                    "jupyterlab_pygments")

#: Large type for a projector, scoped to the demo (``.al-demo``) so that the same notebook opened in
#: JupyterLab changes nothing outside the demo.
PRESENTATION_CSS = """
.al-demo {
  --jp-widgets-font-size: 20px;
  --jp-widgets-inline-height: 38px;
  --jp-widgets-inline-label-width: 170px;
  --jp-widgets-slider-handle-size: 22px;
  --jp-widgets-slider-track-thickness: 6px;
  font-size: 20px;
}
.al-demo .al-demo-title h1 { font-size: 32px; margin: 0; display: inline; }
.al-demo .al-demo-title span { font-size: 22px; margin: 0 0 0 18px; color: #444; }
.al-demo .lm-TabBar-tabLabel, .al-demo .p-TabBar-tabLabel { font-size: 22px; line-height: 38px; }
.al-demo .lm-TabBar-tab, .al-demo .p-TabBar-tab {
  min-width: 170px; min-height: 42px; max-width: none !important; flex: 0 0 auto !important;
  padding: 0 18px; }
.al-demo .al-explorer-title { font-size: 22px; }
.al-demo .widget-readout, .al-demo .widget-label, .al-demo select, .al-demo button,
.al-demo .widget-html-content, .al-demo .widget-checkbox label { font-size: 20px; }
.al-demo input[type="checkbox"] { width: 20px; height: 20px; }
.al-demo .al-readout .widget-html-content { font-size: 17px; }
.al-demo .al-readout td, .al-demo .al-readout th { font-size: 16px; padding: 1px 4px !important; }
"""


# --------------------------------------------------------------------------------------------
# The app: explorers in tabs and a reset button
# --------------------------------------------------------------------------------------------


def _as_widget(explorer, title: str):
    """What to put in the tab for ``explorer``: its ``.widget``, itself if it is a widget, or an
    Output widget holding its display (``_repr_mimebundle_``)."""
    import ipywidgets as W

    if isinstance(explorer, W.Widget):
        return explorer
    widget = getattr(explorer, "widget", None)
    if isinstance(widget, W.Widget):
        return widget
    if widget is not None:
        raise TypeError(f"explorer {title!r}: .widget must be an ipywidgets widget, got "
                        f"{type(widget).__name__}")
    out = W.Output()
    out.append_display_data(explorer)
    return out


def _controls_of(explorer, title: str) -> dict:
    controls = getattr(explorer, "controls", None)
    if not isinstance(controls, Mapping):
        raise TypeError(f"explorer {title!r} ({type(explorer).__name__}) has no .controls dict "
                        f"(name -> ipywidget); got {type(controls).__name__}")
    for name, control in controls.items():
        if not hasattr(control, "value"):
            raise TypeError(f"explorer {title!r}: control {name!r} is a "
                            f"{type(control).__name__} without a .value")
    return dict(controls)


class Demo:
    """The lecture demo: a title, one tab per explorer and a reset button.

    ``.widget`` is the app; ``.explorers`` maps tab titles to explorers; ``.controls`` maps
    ``"Tab/name"`` to every control; ``.initial`` holds their starting values; :meth:`reset` puts them
    all back; :meth:`changed` lists the controls that are away from their starting value.
    """

    def __init__(self, explorers, *, title: str = "Attention, live",
                 subtitle: str = "query-dependent weighted retrieval"):
        import ipywidgets as W

        items = list(explorers.items()) if isinstance(explorers, Mapping) else list(explorers)
        if not items:
            raise ValueError("build_demo needs at least one explorer (tab title -> explorer)")
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise TypeError("explorers must be a dict {tab title: explorer} or a list of "
                                f"(title, explorer) pairs; got the item {item!r}")
        titles = [t for t, _ in items]
        if len(set(titles)) != len(titles):
            raise ValueError(f"tab titles must be distinct, got {titles}")
        self.explorers = dict(items)
        self.controls = {f"{t}/{name}": c for t, ex in items
                         for name, c in _controls_of(ex, t).items()}
        self.initial = {key: c.value for key, c in self.controls.items()}
        pages = [_as_widget(ex, t) for t, ex in items]
        self.tabs = W.Tab(children=pages, titles=titles)
        self.reset_button = W.Button(description="Reset every control", icon="undo",
                                     button_style="warning",
                                     layout=W.Layout(width="280px", height="44px"))
        self.reset_button.add_class("al-reset")
        self.status = W.HTML(value="", layout=W.Layout(margin="0 16px 0 0"))
        self.status.add_class("al-status")
        self.reset_button.on_click(lambda _b: self.reset())
        for c in self.controls.values():
            c.observe(self._clear_status, names="value")
        style = W.HTML(value=f"<style>{PRESENTATION_CSS}</style>", layout=W.Layout(height="0px"))
        heading = W.HTML(value=f"<h1>{_escape(title)}</h1><span>{_escape(subtitle)}</span>",
                         layout=W.Layout(flex="1 1 auto"))
        heading.add_class("al-demo-title")
        # one row above the tabs: the title, and the reset button where it is always in sight
        header = W.HBox([heading, self.status, self.reset_button],
                        layout=W.Layout(align_items="center", margin="0 0 8px 0"))
        self.widget = W.VBox([style, header, self.tabs])
        self.widget.add_class("al-demo")
        self._resetting = False

    def changed(self) -> list[str]:
        """The controls (``"Tab/name"``) whose value differs from the starting value."""
        return [key for key, c in self.controls.items() if not same_value(c.value,
                                                                          self.initial[key])]

    def reset(self) -> None:
        """Every explorer's ``reset()``, then any control still away from its start is set back."""
        self._resetting = True
        try:
            for ex in self.explorers.values():
                reset = getattr(ex, "reset", None)
                if callable(reset):
                    reset()
            for key in self.changed():
                self.controls[key].value = self.initial[key]
        finally:
            self._resetting = False
        self.status.value = "every control is back at its starting value"

    def _clear_status(self, change) -> None:
        if (not self._resetting and self.status.value
                and not same_value(change["old"], change["new"])):
            self.status.value = ""

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        counts = {t: len(_controls_of(ex, t)) for t, ex in self.explorers.items()}
        tabs = ", ".join(f"{t} ({n} control{'s' * (n != 1)})" for t, n in counts.items())
        return f"Lecture demo: {tabs}; reset button"


def same_value(a, b) -> bool:
    """``a == b``, for floats up to the browser's rounding of a slider value.

    A browser snaps a slider to ``min + k * step`` in its own floating-point arithmetic and sends
    that value back: 0.8 on a grid from -1.5 in steps of 0.05 comes back as 0.7999999999999998.
    That is not a move of the control.
    """
    if (isinstance(a, float) or isinstance(b, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool) and isinstance(a, (int, float)) \
            and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _escape(text: str) -> str:
    import html

    return html.escape(str(text))


def build_demo(explorers, *, title: str = "Attention, live",
               subtitle: str = "query-dependent weighted retrieval") -> Demo:
    """The lecture demo app from ``{tab title: explorer}`` (see :class:`Demo`)."""
    return Demo(explorers, title=title, subtitle=subtitle)


# --------------------------------------------------------------------------------------------
# The launcher: python -m attention_lab demo
# --------------------------------------------------------------------------------------------


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
                    f"server?). Stop it, or choose another port: --port {port + 1}, or --port 0 "
                    f"for any free port") from None
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
        try:
            s.connect(("10.255.255.255", 1))  # UDP connect: picks the outgoing interface, sends nothing
            found.append(s.getsockname()[0])
        except OSError:
            pass
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.append(info[4][0])
    except socket.gaierror:
        pass
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


def voila_command(notebook: Path, host: str, port: int, token: str, theme: str) -> list[str]:
    """The Voila command line of the demo: standalone app, no code cells, fixed port."""
    return [
        sys.executable, "-m", "voila", str(notebook),
        "--no-browser",
        f"--Voila.ip={host}",
        f"--port={port}",
        "--Voila.port_retries=0",
        f"--Voila.token={token}",
        "--template=lab",
        f"--theme={theme}",
        "--strip_sources=True",
        "--show_tracebacks=False",
        "--Voila.log_level=WARN",
        *[f"--VoilaConfiguration.extension_allowlist={name}" for name in VOILA_EXTENSIONS],
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
    p.add_argument("--theme", choices=("light", "dark"), default="light")
    p.add_argument("--open", action="store_true", help="open the demo in this machine's browser")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds to wait for Voila to start (default 60)")
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
    if not 0 <= args.port <= 65535:
        raise DemoError(f"--port must be between 0 and 65535, got {args.port}")
    host = args.host
    if not is_local_host(host) and not args.allow_network:
        raise DemoError(
            f"--host {host} would let other machines reach the demo. If that is what you want "
            f"(a lecture-hall network), add --allow-network to confirm; otherwise leave --host out "
            f"(127.0.0.1, this machine only)")
    token = args.token if args.token is not None else secrets.token_urlsafe(12)
    if not token or any(ch in token for ch in " /?&#%"):
        raise DemoError("--token must be non-empty and use letters, digits, '-', '_' or '.'")
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
    probe = "127.0.0.1" if host in ("0.0.0.0", "") else ("::1" if host == "::" else host)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DemoError(f"Voila stopped before it was ready (exit code {proc.returncode}); "
                            f"its messages are above")
        try:
            with socket.create_connection((probe, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise DemoError(f"Voila did not start listening on {host}:{port} within {timeout:g} s")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: let the child get SIGTERM when the launcher dies, even by SIGKILL (no orphans)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _raise_interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def stop_process_tree(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Stop ``proc`` (started with ``start_new_session=True``) and everything it started:
    SIGTERM to its process group (Voila/Jupyter shut their kernels down), then SIGKILL to what is
    left, including kernels in their own sessions."""
    try:
        import psutil
        family = psutil.Process(proc.pid).children(recursive=True)
    except Exception:
        family = []
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for child in family:
        try:
            child.kill()
        except Exception:
            pass
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass


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
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    # SIGTERM/SIGHUP to the launcher stop Voila too (the finally clause below)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupt)
    proc = subprocess.Popen(voila_command(notebook, host, port, token, args.theme), env=env,
                            cwd=str(notebook.parent), start_new_session=True,
                            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    try:
        try:
            _wait_listening(proc, host, port, args.timeout)
        except DemoError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        if ":" in shown:
            shown = f"[{shown}]"
        url = f"http://{shown}:{port}/?token={token}"
        print(f"attention-lab lecture demo ({notebook.name}) is running:", flush=True)
        print(f"  {url}", flush=True)
        if local:
            print("  (this machine only; Ctrl-C stops the demo)", flush=True)
        else:
            others = lan_addresses() if host in ("0.0.0.0", "::") else [host]
            for addr in others:
                print(f"  from other machines: http://{addr}:{port}/?token={token}", flush=True)
            print("  (reachable from the network; Ctrl-C stops the demo)", flush=True)
        if args.open:
            import webbrowser

            webbrowser.open(url)
        while proc.poll() is None:
            try:
                proc.wait(1.0)
            except subprocess.TimeoutExpired:
                pass
        print(f"error: Voila exited with code {proc.returncode}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopping the demo ...", file=sys.stderr, flush=True)
        return 0
    finally:
        stop_process_tree(proc)


if __name__ == "__main__":
    sys.exit(main())
