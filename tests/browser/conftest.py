"""Fixtures of the real-browser tests: Chromium, JupyterLab and the Voila demo on scratch copies,
and a step recorder that keeps a screenshot of every step when a test fails.

Without /usr/bin/chromium (or Playwright) the browser tests skip with the reason, unless
ATTENTION_LAB_REQUIRE_BROWSER=1 (set by CI), which turns the skip into a failure.
Screenshots of failed tests: test-artifacts/<test>/NN-step.png (+ log.txt), or under
$ATTENTION_LAB_ARTIFACTS.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as H  # noqa: E402

ARTIFACTS = Path(os.environ.get("ATTENTION_LAB_ARTIFACTS", H.ROOT / "test-artifacts"))


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def chromium():
    """Headless Debian Chromium for the whole session (skips, or fails in CI, without it)."""
    reason = H.browser_unavailable_reason()
    if reason:
        if H.browser_required():
            pytest.fail(f"{H.REQUIRE_ENV}=1 but the browser tests cannot run: {reason}",
                        pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = H.launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def scratch(tmp_path_factory):
    """A scratch copy of notebooks/ (+ fixture notebooks); afterwards, proof that the
    repository's notebooks were not written to."""
    work = tmp_path_factory.mktemp("browser")
    before = H.snapshot(H.ROOT / "notebooks")
    folder = H.scratch_notebooks(work)
    yield work, folder
    after = H.snapshot(H.ROOT / "notebooks")
    changed = sorted(set(before.items()) ^ set(after.items()))
    assert not changed, f"the browser tests changed files under notebooks/: {changed[:5]}"


@pytest.fixture(scope="session")
def servers(scratch):
    """JupyterLab and the Voila demo, launched side by side (they start in parallel); stopped at
    the end of the session with every process they started, also after a failure or Ctrl-C."""
    work, folder = scratch
    launched = {}
    try:
        if not H.browser_unavailable_reason():
            launched["lab"] = H.jupyter_lab(folder, work / "lab").launch()
        if (folder / "demo.ipynb").exists():
            launched["demo"] = H.voila_demo(folder / "demo.ipynb", work / "voila").launch()
        yield launched
    finally:
        survivors = H.stop_servers(list(launched.values()))
        assert not survivors, f"servers left processes behind: {survivors}"


@pytest.fixture(scope="session")
def lab_server(chromium, servers):
    """JupyterLab on 127.0.0.1, random port and token, serving the scratch copy."""
    return servers["lab"].wait_ready()


@pytest.fixture(scope="session")
def demo_server(servers):
    """The lecture demo launched by its command line on the scratch copy of demo.ipynb."""
    if "demo" not in servers:
        pytest.fail("notebooks/demo.ipynb is missing", pytrace=False)
    return servers["demo"].wait_ready()


class Steps:
    """Call ``steps("what happened")`` after each step: a screenshot is kept in memory and written
    to test-artifacts/<test>/ only if the test fails."""

    def __init__(self, page):
        self.page = page
        self.shots: list[tuple[str, bytes]] = []
        self.console: list[str] = []
        self.page_errors: list[str] = []
        self.servers: list[H.Server] = []

    def __call__(self, label: str) -> None:
        self.shots.append((label, self.page.screenshot()))

    def save(self, folder: Path, report: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for n, (label, png) in enumerate(self.shots, 1):
            slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:60]
            (folder / f"{n:02d}-{slug}.png").write_bytes(png)
        lines = [report, "", "page errors:", *self.page_errors, "", "console:", *self.console]
        for server in self.servers:
            lines += ["", f"{server.name} log (tail):", server.log_tail(80)]
        (folder / "log.txt").write_text("\n".join(lines))


def _new_page(chromium, viewport=None):
    context = chromium.new_context(viewport=viewport or H.VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(30_000)
    return context, page


def _record(request, page):
    """Steps of one test on ``page``; on failure, written with a last screenshot and the logs."""
    folder = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid.split("::", 1)[-1])
    shutil.rmtree(folder, ignore_errors=True)
    steps = Steps(page)
    on_console = lambda m: steps.console.append(f"{m.type}: {m.text}")  # noqa: E731
    on_error = lambda e: steps.page_errors.append(str(e))  # noqa: E731
    page.on("console", on_console)
    page.on("pageerror", on_error)
    try:
        yield steps
    finally:
        page.remove_listener("console", on_console)
        page.remove_listener("pageerror", on_error)
        reports = [getattr(request.node, f"rep_{w}", None) for w in ("setup", "call")]
        failed = [r for r in reports if r is not None and r.failed]
        if failed:
            try:
                steps("at failure")
            except Exception:
                pass
            steps.save(folder, failed[-1].longreprtext[-4000:])


@pytest.fixture
def browser_page(request, chromium):
    """A fresh browser context and page and its step recorder."""
    context, page = _new_page(chromium)
    try:
        for steps in _record(request, page):
            yield page, steps
    finally:
        context.close()


@pytest.fixture(scope="module")
def lab_app(chromium, lab_server):
    """One JupyterLab page shared by a module's notebook runs (JupyterLab loads once)."""
    context, page = _new_page(chromium)
    try:
        yield H.LabApp(page, lab_server).start()
    finally:
        context.close()


@pytest.fixture
def lab_steps(request, lab_app):
    """The step recorder of one test on the shared JupyterLab page."""
    for steps in _record(request, lab_app.page):
        steps.servers.append(lab_app.server)
        yield steps


@pytest.fixture(scope="module")
def demo_page(chromium, demo_server):
    """One page of the lecture demo at projector size (1920 x 1080), loaded once per module."""
    context, page = _new_page(chromium, H.PROJECTOR)
    page.load_errors = []  # uncaught errors in the page from the start, not only during a test
    page.on("pageerror", lambda e: page.load_errors.append(str(e)))
    try:
        page.goto(demo_server.url("/"))
        yield page
    finally:
        context.close()


@pytest.fixture
def demo_steps(request, demo_page, demo_server):
    """The step recorder of one test on the shared demo page."""
    for steps in _record(request, demo_page):
        steps.servers.append(demo_server)
        yield steps
