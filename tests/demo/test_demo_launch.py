"""The lecture demo's launcher without a browser (python -m attention_lab demo): its checks and
messages, and the Voila command it builds (tests/browser starts it for real)."""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest

from pathlib import Path

from attention_lab.demo import launch as D
from attention_lab.demo.model_server import ENV_KEY, ENV_SOCKET


@pytest.fixture
def notebook(tmp_path):
    path = tmp_path / "demo.ipynb"
    path.write_text("{}")
    return path


def run(capsys, *argv):
    code = D.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_missing_notebook(capsys, tmp_path):
    code, _, err = run(capsys, "--notebook", tmp_path / "nope.ipynb")
    assert code == 2 and "nope.ipynb does not exist" in err and "--notebook PATH" in err


def test_default_notebook_missing_says_to_use_a_checkout(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(D, "DEFAULT_NOTEBOOK", tmp_path / "notebooks" / "demo.ipynb")
    code, _, err = run(capsys)
    assert code == 2 and "checkout of attention-lab" in err


def test_a_broken_notebook_is_reported_before_the_demo_starts(capsys, tmp_path, monkeypatch):
    """A notebook left broken (a merge conflict, a truncated copy): the demo used to say it was
    running, and its page answered only '400: Unreadable Notebook'."""
    path = tmp_path / "demo.ipynb"
    path.write_text('{"cells": [\n<<<<<<< HEAD\n')
    monkeypatch.setattr(D.subprocess, "Popen", lambda *a, **k: pytest.fail("the demo started"))
    code, _, err = run(capsys, "--notebook", path, "--port", "0")
    assert code == 2 and f"{path} is not a notebook (invalid JSON: Expecting value: line 2" in err


def test_an_unreadable_notebook_is_one_line(capsys, notebook, monkeypatch):
    """A notebook the instructor's account may not read (copied from another account): one line
    naming it, not a traceback."""
    def denied(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(D.Path, "read_bytes", denied)
    monkeypatch.setattr(D.subprocess, "Popen", lambda *a, **k: pytest.fail("the demo started"))
    code, _, err = run(capsys, "--notebook", notebook, "--port", "0")
    assert code == 2 and f"the demo notebook {notebook} cannot be read: Permission denied" in err


def test_the_last_port_suggests_one_that_exists():
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", 65535))
        except OSError:
            pytest.skip("port 65535 is taken here")
        s.listen()
        with pytest.raises(D.DemoError, match="--port 65534,"):
            D.check_port_free("127.0.0.1", 65535)


def test_the_capacity_line_counts_one_kernel_and_one_viewer_in_the_singular():
    line = D._capacity_line(1, 1, 0, D.plan(4096))
    assert "up to 1 viewer," in line and "1 kernel preheating" in line, line


def test_text_notebook_gets_a_hint(capsys, tmp_path):
    code, _, err = run(capsys, "--notebook", tmp_path / "demo.py")
    assert code == 2 and "must be a .ipynb" in err and "nbtools execute" in err


def test_busy_port(capsys, notebook):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        code, _, err = run(capsys, "--notebook", notebook, "--port", port)
    assert code == 2
    assert f"port {port} on 127.0.0.1 is already in use" in err and "--port 0" in err


@pytest.mark.parametrize("argv, message", [
    (["--port", "70000"], "between 0 and 65535"),
    (["--token", "a b"], "--token must be"),
    # a browser reads '+' in a query as a space: the printed URL's token would not be accepted
    (["--token", "lecture+1"], "--token must be"),
    (["--host", "0.0.0.0"], "add --allow-network to confirm"),
    (["--host", "no-such-host.invalid"], "neither an IP address nor a name"),
])
def test_bad_options(capsys, notebook, monkeypatch, argv, message):
    monkeypatch.setattr(D.subprocess, "Popen", lambda *a, **k: pytest.fail("the demo started"))
    code, out, err = run(capsys, "--notebook", notebook, *argv)
    assert code == 2 and message in err and out == ""


def test_network_serving_warns_and_a_failed_start_is_reported(capsys, notebook, monkeypatch):
    """--host 0.0.0.0 --allow-network prints what it exposes; a Voila that dies is reported."""
    launched = {}

    class DeadVoila:
        pid, returncode = 999_999_999, 1

        def __init__(self, cmd, **kwargs):
            launched["cmd"], launched["kwargs"] = cmd, kwargs

        def poll(self):
            return 1

        def wait(self, timeout=None):
            return 1

    monkeypatch.setattr(D.subprocess, "Popen", DeadVoila)
    code, out, err = run(capsys, "--notebook", notebook, "--host", "0.0.0.0",
                         "--allow-network", "--port", "0", "--token", "lecture")
    assert code == 1 and "Voila stopped before it was ready" in err
    assert "WARNING: serving the demo to the network" in err
    assert "starts a Python kernel here" in err and "not encrypted" in err
    cmd = launched["cmd"]
    assert "--Voila.ip=0.0.0.0" in cmd and "--Voila.token=lecture" in cmd
    assert launched["kwargs"]["start_new_session"] is True
    # the kernels reach the shared model through the environment (its socket and key)
    env = launched["kwargs"]["env"]
    assert env[ENV_KEY] and env[ENV_SOCKET].endswith("model.sock")
    # Voila finds the demo's page template (--template=lecture-demo) in its own Jupyter folder
    assert env["JUPYTER_PATH"].split(os.pathsep)[0] == str(D.JUPYTER_DATA)
    assert not Path(env[ENV_SOCKET]).parent.exists()  # the private folder is removed


def test_a_second_ctrl_c_while_the_demo_stops_does_not_cut_the_cleanup_short(capsys, notebook,
                                                                          monkeypatch):
    """Ctrl-C stops the demo; Voila takes seconds to shut its kernels down, and an instructor
    who presses Ctrl-C again must not interrupt the stopping (a traceback, the model server and
    its private folder left behind)."""
    class RunningVoila:
        pid = 999_999_999

        def __init__(self, cmd, **kwargs):
            self.env = kwargs["env"]

        def poll(self):
            return None

        def wait(self, timeout=None):
            raise KeyboardInterrupt  # the first Ctrl-C

    stopped = []

    def stop_tree(proc, **kwargs):
        if not stopped:  # the second Ctrl-C, while Voila shuts down
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
        stopped.append(proc)

    monkeypatch.setattr(D.subprocess, "Popen", RunningVoila)
    monkeypatch.setattr(D, "_wait_listening", lambda *a: None)
    monkeypatch.setattr(D, "stop_tree", stop_tree)
    handlers = {sig: signal.getsignal(sig)
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        code, _, err = run(capsys, "--notebook", notebook, "--port", "0", "--pool", "0")
        assert {sig: signal.getsignal(sig) for sig in handlers} == handlers  # given back
    except KeyboardInterrupt:
        pytest.fail(f"the second Ctrl-C interrupted the stopping after {len(stopped)} of 2 steps")
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert code == 0 and "stopping the demo" in err
    assert len(stopped) == 2  # Voila and the model server
    assert not Path(stopped[0].env[ENV_SOCKET]).parent.exists()  # the private folder is removed


def test_a_model_server_that_dies_during_the_lecture_is_reported(capsys, notebook, monkeypatch):
    """The model server (torch, ~240 MiB) is among the first processes the system kills when
    memory runs out (SIGKILL: no message of its own); the trained model's tab then fails for
    every viewer, so the instructor is told, once."""
    class Process:
        pid, returncode = 999_999_999, None

        def __init__(self, cmd, **kwargs):
            self.model = "attention_lab.demo.model_server" in cmd
            self.polls = 0

        def poll(self):
            self.polls += 1
            if self.model or self.polls > 5:  # the model server killed; Voila stops later
                self.returncode = -9 if self.model else 0
            return self.returncode

        def wait(self, timeout=None):
            return self.returncode

    monkeypatch.setattr(D.subprocess, "Popen", Process)
    monkeypatch.setattr(D, "_wait_listening", lambda *a: None)
    monkeypatch.setattr(D, "stop_tree", lambda *a, **k: [])
    code, _, err = run(capsys, "--notebook", notebook, "--port", "0", "--pool", "0")
    assert code == 1 and "Voila exited with code 0" in err
    assert err.count("the model server stopped (exit code -9)") == 1


def test_every_ipv6_address_gets_urls_that_work(capsys, notebook, monkeypatch):
    """--host :: : Voila (tornado) listens on IPv6 only there, so the 127.0.0.1 and IPv4 network
    addresses the launcher printed did not answer."""
    class Process:
        pid, returncode = 999_999_999, 0

        def __init__(self, cmd, **kwargs):
            pass

        def poll(self):
            return 0

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(D.subprocess, "Popen", Process)
    monkeypatch.setattr(D, "_wait_listening", lambda *a: None)
    monkeypatch.setattr(D, "stop_tree", lambda *a, **k: [])
    monkeypatch.setattr(D, "lan_addresses", lambda: ["192.0.2.7"])
    _, out, err = run(capsys, "--notebook", notebook, "--host", "::", "--allow-network",
                      "--port", "8899", "--token", "t", "--pool", "0")
    out = out + err.split("WARNING")[0]  # (the network warning names what it exposes)
    assert "http://[::1]:8899/?token=t" in out and "192.0.2.7" not in out and "127.0.0.1" not in out
    assert "--host 0.0.0.0" in out  # how to serve IPv4 instead


def test_voila_command_is_a_standalone_app_without_code(notebook):
    cmd = D.voila_command(notebook, "127.0.0.1", 8866, "tok", "light")
    for option in ("--no-browser", "--Voila.ip=127.0.0.1", "--port=8866", "--Voila.port_retries=0",
                   "--Voila.token=tok", "--template=lecture-demo", "--strip_sources=True",
                   "--show_tracebacks=False",
                   "--VoilaConfiguration.extension_allowlist=jupyter-matplotlib"):
        assert option in cmd
    assert cmd[1:4] == ["-m", "attention_lab.demo.server", str(notebook)]
    assert "--preheat_kernel=True" not in cmd and not any("cull" in c for c in cmd)


def test_voila_loads_the_frontend_of_every_widget_on_the_demo_page():
    """Voila loads only the allowlisted extensions: a widget whose frontend is not among them
    shows a JavaScript error in its place (the explorers' accessibility widget, an anywidget, did,
    and the figure beside it stayed blank)."""
    from attention_lab.demo import build_demo
    from attention_lab.widgets import EXPLORERS

    def walk(w):
        yield w
        for child in getattr(w, "children", ()) or ():
            yield from walk(child)

    demo = build_demo({"Query": EXPLORERS["query"](backend="ipympl", presentation=True)})
    modules = {m for w in walk(demo.widget) for m in (w._model_module, w._view_module)}
    assert {"anywidget", "jupyter-matplotlib"} <= modules  # the walk reaches both
    outside = {m for m in modules if not m.startswith("@jupyter-widgets/")}  # widgets' own
    missing = outside - set(D.VOILA_EXTENSIONS)
    assert not missing, f"the demo page would not load the frontend of {sorted(missing)}"


def test_voila_command_for_a_lecture_hall(notebook):
    cmd = D.voila_command(notebook, "127.0.0.1", 8866, "tok", "light", pool=12, max_viewers=40,
                          cull_after=120, preheat_slots=2)
    for option in ("--preheat_kernel=True", "--pool_size=12", "--DemoVoila.max_viewers=40",
                   "--MappingKernelManager.cull_idle_timeout=120",
                   "--MappingKernelManager.cull_interval=30", "--DemoKernelManager.preheat_slots=2",
                   "--VoilaConfiguration.multi_kernel_manager_class="
                   "attention_lab.demo.server.DemoKernelManager"):
        assert option in cmd


@pytest.mark.parametrize("free_mib, pool, viewers", [
    (22_000, 30, 72),   # this project's machine: 24 GB
    (4_000, 4, 8),      # a laptop with 4 GB free
    (1_000, 0, 2),      # almost nothing free: no pool, still a viewer or two
])
def test_defaults_from_free_memory(free_mib, pool, viewers):
    plan = D.plan(free_mib)
    assert (plan.pool, plan.max_viewers) == (pool, viewers)
    assert (plan.pool + plan.max_viewers) * D.VIEWER_MIB + D.RESERVE_MIB <= max(
        free_mib, D.RESERVE_MIB + 2 * D.VIEWER_MIB)


@pytest.mark.parametrize("argv, pool", [([], 30), (["--max-viewers", "4"], 4),
                                         (["--max-viewers", "0"], 30),
                                         (["--max-viewers", "4", "--pool", "6"], 6)])
def test_the_default_pool_is_no_larger_than_the_viewer_limit(capsys, notebook, monkeypatch,
                                                             argv, pool):
    """A seminar's --max-viewers 4 on a 24 GB machine: 30 preheated kernels (4 GB, minutes of
    CPU) could never all be used; the default pool is at most the viewer limit."""
    launched = []

    class DeadVoila:
        pid, returncode = 999_999_999, 1

        def __init__(self, cmd, **kwargs):
            launched.append(cmd)

        def poll(self):
            return 1

    monkeypatch.setattr(D.subprocess, "Popen", DeadVoila)
    monkeypatch.setattr(D, "plan", lambda: D.Plan(pool=30, max_viewers=72, available_mib=22_000))
    monkeypatch.setattr(D, "stop_tree", lambda *a, **k: [])
    run(capsys, "--notebook", notebook, "--port", "0", *argv)
    assert f"--pool_size={pool}" in launched[-1]


@pytest.mark.parametrize("option", ["--pool", "--max-viewers", "--cull-after"])
def test_lecture_hall_options_must_be_whole_numbers_from_zero(capsys, notebook, option):
    with pytest.raises(SystemExit) as exc:
        D.main(["--notebook", str(notebook), option, "-1"])
    assert exc.value.code == 2 and "expected a whole number >= 0" in capsys.readouterr().err


@pytest.mark.parametrize("host, local", [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                         ("0.0.0.0", False), ("192.168.1.10", False)])
def test_is_local_host(host, local):
    assert D.is_local_host(host) is local


def test_help_through_the_dispatcher(capsys):
    from attention_lab.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main(["demo", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--allow-network" in out and "127.0.0.1" in out


def test_a_wait_that_is_not_a_positive_number_is_refused_by_argparse(capsys, notebook):
    with pytest.raises(SystemExit) as exc:
        D.main(["--notebook", str(notebook), "--timeout", "-1"])
    assert exc.value.code == 2 and "expected a number of seconds > 0" in capsys.readouterr().err
