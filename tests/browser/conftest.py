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


def _serve(server: H.Server):
    server.start()
    try:
        yield server
    finally:
        survivors = server.stop()
        assert not survivors, f"{server.name} left processes behind: {survivors}"


@pytest.fixture(scope="session")
def lab_server(chromium, scratch):
    """JupyterLab on 127.0.0.1, random port and token, serving the scratch copy."""
    work, folder = scratch
    yield from _serve(H.jupyter_lab(folder, work / "lab"))


@pytest.fixture(scope="session")
def demo_server(scratch):
    """The lecture demo launched by its command line on the scratch copy of demo.ipynb."""
    work, folder = scratch
    notebook = folder / "demo.ipynb"
    if not notebook.exists():
        pytest.fail("notebooks/demo.ipynb is missing", pytrace=False)
    yield from _serve(H.voila_demo(notebook, work / "voila"))


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


@pytest.fixture
def browser_page(request, chromium):
    """A fresh browser context and page (local requests only) and its step recorder."""
    folder = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid.split("::", 1)[-1])
    shutil.rmtree(folder, ignore_errors=True)
    context = chromium.new_context(viewport=H.VIEWPORT)
    H.local_only(context)
    page = context.new_page()
    page.set_default_timeout(30_000)
    steps = Steps(page)
    page.on("console", lambda m: steps.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: steps.page_errors.append(str(e)))
    try:
        yield page, steps
    finally:
        reports = [getattr(request.node, f"rep_{w}", None) for w in ("setup", "call")]
        failed = [r for r in reports if r is not None and r.failed]
        if failed:
            try:
                steps("at failure")
            except Exception:
                pass
            steps.save(folder, failed[-1].longreprtext[-4000:])
        context.close()
