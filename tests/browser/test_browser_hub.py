"""A class on JupyterHub: the example ``jupyterhub_config.py`` run with its proxy on 127.0.0.1, and
three students at once, each in a browser of their own: log in, get a server (started at the same
time), open 02_mechanics in JupyterLab, run it without an error (its answer cells ask for a
prediction and show no answer), move a slider and see the figure repaint with the core's numbers;
one student also runs an exercise notebook and hands it in from JupyterLab's terminal with the
command the notebook's header gives; no student is asked the news question or sees nbgrader's
menu, panel or button, and nbgrader's server extensions (formgrader) do not run. Each student's
home holds the student bundle (``python -m attention_lab release``) and nothing of the
solutions, and their kernels run the bundle's package. Afterwards the hub, the proxy, the students' servers and their kernels are all
gone (also when the test fails).

The hub configuration for one machine is ``tests/browser/hub_config.py`` (a dummy login, servers
under the current user: why, there). The proxy is npm's ``configurable-http-proxy`` (.ci/run
installs the pinned version): found on PATH or at ``$ATTENTION_LAB_HUB_PROXY``; without it the test
skips, except in CI (``ATTENTION_LAB_REQUIRE_BROWSER=1``), where that is a failure.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import sys
import time
from pathlib import Path

import pytest

import harness as H
from attention_lab.grading import release
from attention_lab.predict import PROMPT

pytestmark = pytest.mark.hub

USERS = ("ada", "bob", "cy")
NOTEBOOK = "notebooks/02_mechanics.ipynb"  # in each student's home
#: the predict cells of that notebook: each one shows the prompt until the student predicts
PROMPTS = sum(PROMPT in "".join(o.get("text", "")) for c in json.loads(
    (H.ROOT / NOTEBOOK).read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"
    for o in c["outputs"])
EXERCISES = "notebooks/exercises/02_mechanics_exercises.ipynb"
#: the hand-in command the exercise notebook's header gives, run in notebooks/exercises/
HAND_IN = re.search(r"`(python -m attention_lab submit [^`]+)`", "".join(json.loads(
    (H.ROOT / EXERCISES).read_text(encoding="utf-8"))["cells"][0]["source"])).group(1)


def proxy_command() -> str | None:
    return os.environ.get("ATTENTION_LAB_HUB_PROXY") or shutil.which("configurable-http-proxy")


def _unavailable() -> str | None:
    reason = H.browser_unavailable_reason()
    if reason:
        return reason
    if not proxy_command():
        return ("configurable-http-proxy not found (npm install -g configurable-http-proxy@4.6.3, "
                "as .ci/run does; or point ATTENTION_LAB_HUB_PROXY at it)")
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        return "JupyterHub is not installed (pip install -r requirements.txt)"
    return None


if _unavailable():
    if H.browser_required():
        pytest.fail(f"{H.REQUIRE_ENV}=1 but the JupyterHub test cannot run: {_unavailable()}",
                    pytrace=False)
    pytest.skip(_unavailable(), allow_module_level=True)

from interactions import Driver, core_check  # noqa: E402  (needs Playwright)


class UserServer:
    """A student's JupyterLab behind the hub, as the browser tests' LabApp expects a server."""

    def __init__(self, hub: H.Server, name: str):
        self.hub, self.name = hub, name

    def url(self, path: str = "/", **query) -> str:
        qs = "&".join(f"{k}={v}" if v is not None else k for k, v in query.items())
        return f"http://127.0.0.1:{self.hub.port}/user/{self.name}{path}" + (f"?{qs}" if qs else "")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """JupyterHub with the example configuration, its proxy and (later) three servers; stopped at
    the end with every process it started."""
    work = tmp_path_factory.mktemp("hub")
    settings = work / "lab-settings"
    # the terminal's text in the page, as a screen reader reads it (xterm draws on a canvas)
    terminal = {"@jupyterlab/terminal-extension/plugin": {"screenReaderMode": True}}
    for name, values in {**H.LAB_SETTINGS, **terminal}.items():
        path = settings / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port = H.free_port()
    password = secrets.token_hex(8)
    env = {**H._isolated_env(work / "hub-jupyter"),
           "ATTENTION_LAB_HUB_WORK": str(work), "ATTENTION_LAB_HUB_PASSWORD": password,
           "ATTENTION_LAB_HUB_USERS": ",".join(USERS), "ATTENTION_LAB_HUB_PORT": str(port),
           "ATTENTION_LAB_HUB_API_PORT": str(H.free_port()),
           "ATTENTION_LAB_HUB_PROXY_API_PORT": str(H.free_port()),
           "ATTENTION_LAB_HUB_PROXY": proxy_command(),
           "ATTENTION_LAB_BUNDLES": str(work / "bundles")}
    cmd = [sys.executable, "-m", "jupyterhub", "-f", str(Path(__file__).with_name("hub_config.py"))]
    server = H.Server("JupyterHub", cmd, port=port, token="", env=env, cwd=work,
                      log=work / "hub.log", timeout=120,
                      ready=lambda s: H.http_status(f"http://127.0.0.1:{port}/hub/login") == 200)
    server.start()
    server.password = password
    seen: set[int] = set()
    try:
        yield server
    finally:
        seen |= set(server.descendants())
        left = server.stop()
        assert left == [] and H.alive(seen) == [], f"processes left behind: {left or seen}"

#: what a student's JupyterLab shows that it should not: the news question, nbgrader's menu,
#: panel and notebook button
STUDENT_UI_JS = """() => ({news: [...document.querySelectorAll('.Toastify__toast')]
    .map(e => e.textContent).filter(t => t.includes('Jupyter news')),
  nbgrader: [...document.querySelectorAll('.lm-MenuBar-itemLabel, .lm-TabBar-tabLabel, '
                                          + '.jp-Toolbar-item')]
    .map(e => e.textContent.trim()).filter(t => /nbgrader|validate|create assignment/i.test(t))})"""


def log_in(page, hub, user: str) -> None:
    """Log in on the hub's page; the hub starts the user's server (we do not wait for it here)."""
    page.goto(f"http://127.0.0.1:{hub.port}/hub/login")
    page.fill("input#username_input", user)
    page.fill("input#password_input", hub.password)
    page.click("#login_submit")
    page.wait_for_url(lambda url: "/hub/login" not in url, timeout=30_000)


def test_three_students_run_the_mechanics_notebook_on_the_hub(chromium, hub):
    """Each step is started for the three students before it is awaited: their servers start,
    their JupyterLab pages load and their kernels run side by side."""
    from attention_lab import widgets

    phases = {}
    t0 = time.monotonic()
    work = Path(hub.env["ATTENTION_LAB_HUB_WORK"])
    students = {}
    try:
        for user in USERS:
            context = chromium.new_context(viewport=H.VIEWPORT)
            page = context.new_page()
            page.set_default_timeout(120_000)
            students[user] = (context, page)
            log_in(page, hub, user)  # the hub starts the server; not waited for here
        labs = {user: H.LabApp(page, UserServer(hub, user)).start(timeout=150, wait=False)
                for user, (_, page) in students.items()}
        for lab in labs.values():
            lab.wait_started(timeout=150)
        phases["servers and JupyterLab up"] = time.monotonic() - t0
        notebooks = {user: lab.open(NOTEBOOK, wait=False) for user, lab in labs.items()}
        for nb in notebooks.values():
            nb.wait_open(timeout=120).start_run()
        for user, nb in notebooks.items():
            progress = nb.wait_run(timeout=240)
            assert progress["pending"] == 0 and nb.errors() == [], f"{user}: {progress}"
            shown = nb.text_outputs()
            assert sum(PROMPT in text for text in shown) == PROMPTS, f"{user}: {shown}"
            assert not any("the answer is" in text for text in shown)
        phases["02_mechanics run"] = time.monotonic() - t0
        for user, (_, page) in students.items():
            root = page.locator(".al-explorer-temperature").first
            root.scroll_into_view_if_needed()
            driver = Driver(root, widgets.EXPLORERS["temperature"](backend="agg"),
                            steps=lambda label: None, title=f"{user}: temperature",
                            check=core_check("temperature"))
            driver.check_drawn(min_width=400)
            driver.press("temperature", "ArrowRight", 2)  # the figure repaints, numbers right
        phases["slider moved, figure repainted"] = time.monotonic() - t0
        exercises = labs["bob"].open(EXERCISES, timeout=120)
        progress = exercises.run_all(timeout=240)
        assert progress["pending"] == 0 and exercises.errors() == [], progress
        checked = " ".join(exercises.text_outputs())
        assert checked.count("not attempted") >= 7, checked  # every check ran, nothing answered
        phases["exercise notebook run"] = time.monotonic() - t0
        # bob hands it in, in JupyterLab's terminal, with the command its header gives
        page = students["bob"][1]
        page.evaluate("() => { window.jupyterapp.commands.execute('terminal:create-new'); }")
        page.locator(".jp-Terminal .xterm-screen").last.click(timeout=60_000)
        page.keyboard.type(f"cd {Path(EXERCISES).parent} && {HAND_IN}\n")
        shown = terminal_after(page, ("Your student id", "not found", "Error"))
        assert "Your student id" in shown, shown
        page.keyboard.type("bob\n")
        shown = terminal_after(page, ("Hand in this file", "Error", "error:"))
        assert "Hand in this file" in shown, shown
        assert (work / "home" / "bob" / EXERCISES).with_suffix(".submission.json").is_file()
        phases["handed in from the terminal"] = time.monotonic() - t0
        # each student has their own copy of the bundle's notebooks and their own server, whose
        # kernels import the bundle's package
        blocks = release.answer_blocks()
        for user in USERS:
            home = work / "home" / user
            assert (home / NOTEBOOK).is_file() and (home / EXERCISES).is_file()
            assert not [p for p in home.rglob("*") if "solution" in p.name.lower()], user
            assert release.leaks(home, blocks) == [], user
        handed = json.loads((work / "home" / "cy" / EXERCISES).read_text())
        assert all(c.get("outputs", []) == [] for c in handed["cells"])  # cy has not run it
        # JupyterLab as the bundle's jupyter-config/ sets it: no news question (shown seconds
        # after the page loads, long ago), nothing of nbgrader (the hub's venv has it)
        for user, (_, page) in students.items():
            formgrader = page.request.get(labs[user].server.url("/formgrader"), max_redirects=0)
            assert (page.evaluate(STUDENT_UI_JS), formgrader.status) == (
                {"news": [], "nbgrader": []}, 404), user
        bundles = list((work / "bundles").iterdir())
        assert len(bundles) == 1, bundles
        servers = [p for p in hub.descendants() if "jupyterhub.singleuser" in _cmdline(p)]
        assert len(servers) == len(USERS), servers
        assert {_environ(p).get("PYTHONPATH") for p in servers} == {str(bundles[0])}
        assert hub.listening() == {"127.0.0.1"}
    finally:
        for context, _ in students.values():
            context.close()
        print("hub test (seconds after the hub was up): " + ", ".join(
            f"{name} {t:.0f}" for name, t in phases.items()), file=sys.stderr)


def terminal_after(page, ends: tuple[str, ...], timeout: float = 120) -> str:
    """The text of the last terminal once it shows one of ``ends``."""
    js = "() => [...document.querySelectorAll('.jp-Terminal .xterm-accessibility-tree > div')]" \
         ".map(e => e.textContent.trimEnd()).filter(t => t).join('\\n')"
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline and not any(e in text for e in ends):
        page.wait_for_timeout(500)
        text = page.evaluate(js)
    return text


def _cmdline(pid: int) -> str:
    import psutil

    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ""


def _environ(pid: int) -> dict:
    import psutil

    try:
        return psutil.Process(pid).environ()
    except psutil.Error:
        return {}
