"""The server harness leaves nothing behind: not on a normal stop, not when the body raises
(KeyboardInterrupt included), not when the server ignores SIGTERM, not for children in their own
session (as Jupyter starts kernels). No browser needed."""

from __future__ import annotations

import signal
import sys
import time

import pytest

import harness as H

FAKE_SERVER = r"""
import http.server, os, signal, subprocess, sys
if os.environ.get("IGNORE_TERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                       start_new_session=True)  # like a Jupyter kernel: its own session
print("kernel", kid.pid, flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])),
                       http.server.SimpleHTTPRequestHandler).serve_forever()
"""


def fake(tmp_path, **env) -> H.Server:
    port = H.free_port()
    return H.Server("fake", [sys.executable, "-c", FAKE_SERVER, str(port)], port=port,
                    token="t", env={**H._isolated_env(tmp_path), **env}, cwd=tmp_path,
                    log=tmp_path / "fake.log", timeout=30,
                    ready=lambda s: H.http_status(f"http://127.0.0.1:{s.port}/") == 200)


def kernel_pid(server: H.Server) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in server.log_path.read_text().splitlines():
            if line.startswith("kernel "):
                return int(line.split()[1])
        time.sleep(0.05)
    raise AssertionError(server.log_tail())


def test_stop_kills_the_server_and_its_session_children(tmp_path):
    with fake(tmp_path) as server:
        pids = [server.proc.pid, kernel_pid(server)]
        assert H.alive(pids) == pids
    assert H.alive(pids) == []
    assert server.stop() == []  # idempotent


def test_keyboard_interrupt_in_the_body_still_stops_everything(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with fake(tmp_path) as server:
            pids = [server.proc.pid, kernel_pid(server)]
            raise KeyboardInterrupt
    assert H.alive(pids) == []
    assert server not in H.Server._running


def test_a_server_that_ignores_sigterm_is_killed(tmp_path):
    server = fake(tmp_path, IGNORE_TERM="1").start()
    pids = [server.proc.pid, kernel_pid(server)]
    proc = server.proc
    assert server.stop(timeout=1) == []
    assert H.alive(pids) == [] and proc.returncode == -signal.SIGKILL  # killed, not waited for


def test_a_server_that_dies_at_start_reports_its_log(tmp_path):
    server = H.Server("broken", [sys.executable, "-c", "print('cannot start: port taken'); "
                                 "raise SystemExit(3)"],
                      port=H.free_port(), token="t", env=H._isolated_env(tmp_path), cwd=tmp_path,
                      log=tmp_path / "broken.log", ready=lambda s: False, timeout=20)
    with pytest.raises(H.ServerError, match="exited with code 3(.|\n)*cannot start: port taken"):
        server.start()
    assert server.stop() == []


def test_the_load_benchmarks_chromium_gets_only_the_cpu_the_server_leaves(tmp_path, chromium):
    """The load benchmark's real pages stand for browsers on the students' laptops: every
    Chromium process sits in a scheduling group (its own session's autogroup) at nice 19. A nice
    value alone counts only inside the group, and Chromium resets it: before, two pages took more
    than a core from the server. (``chromium``: the session's browser, for its skip-or-fail rule
    when there is none.)"""
    import concurrent.futures
    import os
    from pathlib import Path

    import psutil

    from benchmarks import bench_demo

    if not Path("/proc/self/autogroup").exists():
        pytest.skip("this kernel has no scheduling autogroups")

    def groups():  # in a thread of its own: the session's browser owns this thread's Playwright
        from playwright.sync_api import sync_playwright

        before = {p.pid for p in psutil.Process().children(recursive=True)}  # the session's
        with sync_playwright() as playwright:
            browser = bench_demo._low_priority_chromium(H, playwright, tmp_path)
            try:
                found = []
                for p in psutil.Process().children(recursive=True):
                    # not one the session's browser started meanwhile (with -n 2 it may be new)
                    theirs = {a.pid for a in p.parents()} & before
                    if not theirs and p.pid not in before and p.name().startswith("chrom"):
                        group = Path(f"/proc/{p.pid}/autogroup").read_text().split()
                        found.append((os.getsid(p.pid), group[-1]))
                return found
            finally:
                browser.close()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        found = pool.submit(groups).result()
    assert found, "no Chromium process found"
    assert {nice for _, nice in found} == {"19"}
    assert os.getsid(0) not in {sid for sid, _ in found}  # not this test's own group
