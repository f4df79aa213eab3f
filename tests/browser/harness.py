"""Real-browser harness: Jupyter servers, Debian's Chromium through Playwright, page helpers.

Used by the browser tests (``tests/browser``) and the browser benchmark
(``benchmarks/bench_browser.py``), so it imports nothing from pytest.

- :class:`Server` runs a server (JupyterLab, the Voila demo) in its own process group on 127.0.0.1,
  a random free port and a random token, waits until it answers, and always stops it with everything
  it started (kernels run in their own sessions, so they are collected with psutil and killed too).
  Each child also gets SIGTERM if the Python process that started it dies (Linux PDEATHSIG).
- :func:`scratch_notebooks` copies ``notebooks/`` (and the fixture notebooks) to a scratch folder:
  servers never see the repository's files, so autosave cannot touch them.
- :func:`launch_chromium` starts headless ``/usr/bin/chromium`` (Playwright's own browser download
  is not used); Playwright gives every launch a new, empty temporary profile, and no host name
  but localhost resolves, so pages never reach the internet.
- :class:`LabNotebook` opens a notebook in JupyterLab, runs all cells, waits for the kernel and
  lists error outputs; :data:`CANVAS_JS`, :data:`REPAINT_HOOK_JS` read the ipympl canvas.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from attention_lab._process import alive, die_with_parent, stop_tree  # noqa: F401 (alive: H.alive)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXTURE_FOLDER = "_browser_fixtures"  # inside the scratch copy of notebooks/
CHROMIUM = os.environ.get("ATTENTION_LAB_CHROMIUM", "/usr/bin/chromium")
REQUIRE_ENV = "ATTENTION_LAB_REQUIRE_BROWSER"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
    # no name resolves except localhost: pages never reach the internet (e.g. Voila's icon font CDN)
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
]
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
VIEWPORT = {"width": 1400, "height": 1000}
PROJECTOR = {"width": 1920, "height": 1080}  # the lecture demo's screen


class ServerError(RuntimeError):
    """A server did not start (the message ends with the tail of its log)."""


# ------------------------------------------------------------------------------------------------
# Availability
# ------------------------------------------------------------------------------------------------


def browser_unavailable_reason() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return (f"Chromium not found at {CHROMIUM} (install Debian's package: apt-get install -y "
                f"chromium; or point ATTENTION_LAB_CHROMIUM at a Chromium binary)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -r requirements.txt)"
    return None


def browser_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") == "1"


# ------------------------------------------------------------------------------------------------
# Processes
# ------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_token() -> str:
    return secrets.token_hex(16)


class Server:
    """A server process on 127.0.0.1 in its own process group; a context manager.

    ``ready`` is a callable ``(server) -> bool`` polled until true. :meth:`stop` is idempotent and
    leaves no process behind: SIGTERM to the group (Jupyter shuts its kernels down), then SIGKILL to
    the group and to every descendant seen (kernels live in their own sessions).
    """

    _running: list["Server"] = []

    def __init__(self, name: str, cmd: list[str], *, port: int, token: str, env: dict,
                 cwd: Path, log: Path, ready, timeout: float = 90.0):
        self.name, self.cmd, self.port, self.token = name, cmd, port, token
        self.env, self.cwd, self.log_path, self._ready, self.timeout = env, cwd, log, ready, timeout
        self.proc: subprocess.Popen | None = None
        self.seen_pids: set[int] = set()

    # lifecycle
    def launch(self) -> "Server":
        """Start the process and return at once (see :meth:`wait_ready`)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.cmd, env=self.env, cwd=str(self.cwd), stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None)
        Server._running.append(self)
        self.ready = False
        return self

    def start(self) -> "Server":
        """Launch and wait until ready; on any failure (also Ctrl-C) the server is stopped."""
        self.launch()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self) -> "Server":
        if self.proc is None:
            raise ServerError(f"{self.name} was never launched")
        if not self.ready:
            self._wait_ready()
            self.ready = True
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"{self.name} exited with code {self.proc.returncode} before it "
                                  f"was ready:\n{self.log_tail()}")
            try:
                if self._ready(self):
                    return
            except OSError:
                pass
            time.sleep(0.25)
        raise ServerError(f"{self.name} was not ready within {self.timeout:g} s:\n{self.log_tail()}")

    def descendants(self) -> list[int]:
        import psutil

        if self.proc is None:
            return []
        try:
            kids = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        pids = [k.pid for k in kids]
        self.seen_pids.update(pids)
        return pids

    def listening(self) -> set[str]:
        """The addresses the server (or a process it started) listens on at its port."""
        import psutil

        found = set()
        for pid in [self.proc.pid, *self.descendants()]:
            try:
                conns = psutil.Process(pid).net_connections(kind="inet")
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            found |= {c.laddr.ip for c in conns
                      if c.status == psutil.CONN_LISTEN and c.laddr.port == self.port}
        return found

    def stop(self, timeout: float = 15.0) -> list[int]:
        """Stop the server and all it started; returns the pids that survived (should be [])."""
        if self.proc is None:
            return []
        self.descendants()
        # SIGTERM to the group (Jupyter shuts its kernels down), up to `timeout` s, then SIGKILL
        # to the group and to every descendant ever seen (kernels live in their own sessions)
        left = stop_tree(self.proc, group=self.proc.pid, also=self.seen_pids, grace=timeout,
                         wait=5.0)
        if self in Server._running:
            Server._running.remove(self)
        if not self._log.closed:
            self._log.close()
        return left

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @classmethod
    def stop_all(cls) -> None:
        """Stop every server still running (atexit safety net, e.g. after Ctrl-C)."""
        stop_servers(list(cls._running))

    # access
    def url(self, path: str = "/", **query) -> str:
        query = {"token": self.token, **query}
        sep = "&" if "?" in path else "?"
        qs = "&".join(f"{k}={v}" if v is not None else k for k, v in query.items())
        return f"http://127.0.0.1:{self.port}{path}{sep}{qs}"

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def stop_servers(servers: list[Server]) -> list[int]:
    """Stop several servers at the same time; returns the pids that survived (should be [])."""
    import threading

    survivors: list[int] = []
    threads = [threading.Thread(target=lambda s=s: survivors.extend(s.stop())) for s in servers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return survivors


import atexit  # noqa: E402

atexit.register(Server.stop_all)


def http_status(url: str, timeout: float = 2.0) -> int:
    """The HTTP status of a GET of ``url``, redirects not followed (a login redirect is a 302)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        return conn.getresponse().status
    finally:
        conn.close()


def _isolated_env(work: Path) -> dict:
    """Environment for servers: this checkout first on the import path (also for kernels), and
    Jupyter config/data/runtime folders of its own, so a user's settings cannot interfere."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        (work / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(work / sub)
    env.pop("JUPYTER_PATH", None)
    env.pop("MPLBACKEND", None)
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


LAB_SETTINGS = {
    # never ask which kernel to start (the news pop-up is the project's own setting: see
    # readme_open_env, which the server gets as the README's command does)
    "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
}


def readme_open_env() -> dict:
    """The environment variables the README's first command sets for ``jupyter lab``
    (``JUPYTER_CONFIG_PATH=$PWD/jupyter-config``), with ``$PWD`` the repository."""
    import re
    import shlex

    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    command = re.findall(r"```bash\n(.+?)\n```", section)[0].split("&&")[-1]
    words = shlex.split(command)
    return {k: v.replace("$PWD", str(ROOT))
            for k, v in (w.split("=", 1) for w in words if re.fullmatch(r"[A-Z_]+=\S+", w))}


#: the kernels of the JupyterLab tests: torch's generic CPU kernels and one thread, as on another CPU
#: (the run-all compares every output with the stored one: nbval already ran them on this CPU)
PORTABLE_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1",
                    "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def jupyter_lab(root: Path, work: Path) -> Server:
    """A JupyterLab server (not started) on ``root``, with its settings and logs under ``work``;
    its kernels run with :data:`PORTABLE_KERNELS`."""
    settings = work / "lab-settings"
    for name, values in LAB_SETTINGS.items():
        path = settings / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = free_port(), new_token()
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.expose_app_in_browser=True", f"--LabApp.user_settings_dir={settings}",
           f"--LabApp.workspaces_dir={work / 'lab-workspaces'}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    env = {**_isolated_env(work), **readme_open_env(), **PORTABLE_KERNELS}
    return Server("JupyterLab", cmd, port=port, token=token, env=env, cwd=root,
                  log=work / "jupyterlab.log",
                  ready=lambda s: http_status(s.url("/api/status")) == 200)


def voila_demo(notebook: Path, work: Path, *options: str) -> Server:
    """The lecture demo as the README launches it (``python -m attention_lab demo``), with one
    preheated kernel instead of the default (a lecture hall's worth: tens) unless ``options`` say
    otherwise (``"--pool", "2", "--max-viewers", "1"`` ...)."""
    port, token = free_port(), new_token()
    cmd = [sys.executable, "-m", "attention_lab", "demo", "--notebook", str(notebook),
           "--port", str(port), "--token", token, *(options or ("--pool", "1"))]

    def ready(server: Server) -> bool:  # the launcher prints the URL once Voila listens
        return f"127.0.0.1:{port}/?token=" in server.log_path.read_text(errors="replace")

    return Server("Voila demo", cmd, port=port, token=token, env=_isolated_env(work), cwd=ROOT,
                  log=work / "voila.log", ready=ready)


# ------------------------------------------------------------------------------------------------
# Notebooks
# ------------------------------------------------------------------------------------------------


def repo_notebooks() -> list[Path]:
    """Every notebook under notebooks/ (relative paths), found afresh: new ones join by themselves."""
    base = ROOT / "notebooks"
    return sorted(p.relative_to(base) for p in base.rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


def write_notebook(code_cells: list[str], path: Path) -> Path:
    """A notebook of ``code_cells`` with the python3 kernelspec (no kernel dialog)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in code_cells]
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def fixture_notebook(name: str, dest: Path) -> Path:
    """Convert ``fixtures/<name>.py`` (py:percent) to ``dest/<name>.ipynb`` without outputs."""
    import jupytext
    import nbformat

    nb = jupytext.read(FIXTURES / f"{name}.py")
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    out = dest / f"{name}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    return out


def scratch_notebooks(dest: Path) -> Path:
    """Copy notebooks/ to ``dest/notebooks`` and add the fixture notebooks in ``_browser_fixtures``."""
    target = dest / "notebooks"
    shutil.copytree(ROOT / "notebooks", target,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    for py in sorted(FIXTURES.glob("*.py")):
        fixture_notebook(py.stem, target / FIXTURE_FOLDER)
    return target


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every file under ``folder``: proof that nothing wrote there."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------------------
# Browser
# ------------------------------------------------------------------------------------------------


def launch_chromium(playwright, executable: str = CHROMIUM):
    """Headless Debian Chromium (a new, empty temporary profile per launch); ``executable``: a
    wrapper that starts it (the load benchmark's lowers its priority)."""
    return playwright.chromium.launch(executable_path=str(executable), headless=True,
                                      args=CHROMIUM_ARGS)


#: Pixels of the first ipympl canvas under a root element: size, a hash, how many pixels are inked
#: (opaque, not white) and how many are transparent (a figure not drawn yet: matplotlib's figures
#: are opaque). The pixels are copied into a canvas made for reading (willReadFrequently).
CANVAS_JS = """
(root) => {
  const c = root.querySelector('.jupyter-matplotlib-canvas-div canvas');
  if (!c || !c.width || !c.height) return null;
  const copy = document.createElement('canvas');
  copy.width = c.width; copy.height = c.height;
  const ctx = copy.getContext('2d', {willReadFrequently: true});
  ctx.drawImage(c, 0, 0);
  const d = ctx.getImageData(0, 0, c.width, c.height).data;
  let h = 0x811c9dc5, ink = 0, transparent = 0;
  for (let i = 0; i < d.length; i += 4) {
    h = Math.imul(h ^ d[i], 16777619); h = Math.imul(h ^ d[i + 1], 16777619);
    h = Math.imul(h ^ d[i + 2], 16777619); h = Math.imul(h ^ d[i + 3], 16777619);
    if (d[i + 3] === 0) transparent++;
    else if (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250) ink++;
  }
  return {width: c.width, height: c.height, hash: (h >>> 0).toString(16), ink, transparent};
}
"""

#: Installed in a page: stamps performance.now() at every key press and at the first animation frame
#: after a figure repaint: a drawImage onto an ipympl view canvas, or a new <img> decoded in the page
#: (what ``interact`` + the inline backend shows), and the text change of ``.al-readout`` labels.
REPAINT_HOOK_JS = """
() => {
  if (window.__al) return;
  const al = window.__al = {keydown: 0, paints: [], labels: []};
  const stamp = (list) => { const t = performance.now();
    requestAnimationFrame(() => list.push([t, performance.now()])); };
  const orig = CanvasRenderingContext2D.prototype.drawImage;
  CanvasRenderingContext2D.prototype.drawImage = function (...args) {
    const out = orig.apply(this, args);
    const c = this.canvas, p = c && c.parentElement;
    if (p && p.classList.contains('jupyter-matplotlib-canvas-div') && c === p.querySelector('canvas'))
      stamp(al.paints);
    return out;
  };
  new MutationObserver((records) => {
    for (const r of records) {
      const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      if (el && el.closest && el.closest('.al-readout')) stamp(al.labels);
      for (const n of r.addedNodes) {
        if (n.nodeType !== 1) continue;
        const imgs = n.tagName === 'IMG' ? [n] : [...n.querySelectorAll('img')];
        for (const img of imgs) img.decode().then(() => stamp(al.paints), () => stamp(al.paints));
      }
    }
  }).observe(document.body, {childList: true, subtree: true, characterData: true});
  window.addEventListener('keydown', () => { al.keydown = performance.now(); }, true);
}
"""


def drag_slider(page, handle, fraction: float) -> None:
    """Drag a noUiSlider handle with the mouse to ``fraction`` (0..1) of its track."""
    track = handle.locator("xpath=ancestor::*[contains(@class, 'noUi-target')][1]")
    hb, tb = handle.bounding_box(), track.bounding_box()
    y = hb["y"] + hb["height"] / 2
    page.mouse.move(hb["x"] + hb["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(tb["x"] + tb["width"] * fraction, y, steps=8)
    page.mouse.up()


# JupyterLab ------------------------------------------------------------------------------------

_PANEL = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
_KERNEL = f"({_PANEL}).sessionContext.session.kernel"

_READY_JS = f"""
(path) => {{
  const w = {_PANEL};
  if (!w || !w.content || !w.context || !w.context.isReady || !w.sessionContext) return false;
  if (path && w.context.path !== path) return false;
  const s = w.sessionContext.session;
  return !!(s && s.kernel && s.kernel.status === 'idle');
}}
"""

_CLOSE_JS = f"""
async () => {{
  const w = {_PANEL};
  if (!w || !w.sessionContext) return;
  await w.sessionContext.shutdown();
  w.context.model.dirty = false;
  w.dispose();
}}
"""

_PROGRESS_JS = f"""
() => {{
  const w = {_PANEL};
  const status = w.sessionContext.session.kernel.status;
  let pending = 0, errors = 0;
  for (const cell of w.content.widgets) {{
    const m = cell.model;
    if (m.type !== 'code' || !m.sharedModel.getSource().trim()) continue;
    if (m.executionCount === null || m.executionState === 'running') pending++;
    for (const o of m.outputs.toJSON()) if (o.output_type === 'error') errors++;
  }}
  return {{status, pending, errors}};
}}
"""

_TEXT_OUTPUTS_JS = f"""
() => {{
  const join = (t) => Array.isArray(t) ? t.join('') : (t || '');
  const w = {_PANEL};
  const found = [];
  w.content.widgets.forEach((cell) => {{
    if (cell.model.type !== 'code') return;
    for (const o of cell.model.outputs.toJSON())
      found.push(join(o.text) || join((o.data || {{}})['text/plain']));
  }});
  return found;
}}
"""

_MODEL_JS = f"() => ({_PANEL}).context.model.toJSON()"

_ERRORS_JS = f"""
() => {{
  const w = {_PANEL};
  const found = [];
  w.content.widgets.forEach((cell, i) => {{
    const m = cell.model;
    if (m.type !== 'code') return;
    const tags = m.getMetadata('tags') || [];
    const src = m.sharedModel.getSource();
    const expected = tags.includes('raises-exception') || src.includes('NBVAL_RAISES_EXCEPTION');
    for (const o of m.outputs.toJSON()) {{
      if (o.output_type === 'error' && !expected)
        found.push(`cell ${{i}}: ${{o.ename}}: ${{o.evalue}}`);
    }}
    const node = cell.node;
    if (node.querySelector('.jupyter-widgets-error-widget'))
      found.push(`cell ${{i}}: a widget failed to render (error widget)`);
    for (const out of node.querySelectorAll('.jp-OutputArea-output')) {{
      const text = out.textContent || '';
      if (text.includes('Error displaying widget')) found.push(`cell ${{i}}: ${{text.trim().slice(0, 200)}}`);
    }}
  }});
  return found;
}}
"""


class LabApp:
    """JupyterLab in one page (its own empty workspace), in which notebooks are opened one after
    the other: loading JupyterLab once saves seconds per notebook."""

    def __init__(self, page, server: Server):
        self.page, self.server = page, server

    def start(self, timeout: float = 90, wait: bool = True) -> "LabApp":
        """Load JupyterLab in the page (``wait=False``: return once the request is answered, so
        that several pages load at once; then :meth:`wait_started`)."""
        workspace = f"t{uuid.uuid4().hex[:10]}"
        self.page.goto(self.server.url(f"/lab/workspaces/{workspace}", reset=None),
                       wait_until="load" if wait else "commit", timeout=timeout * 1000)
        if wait:
            self.wait_started(timeout)
        return self

    def wait_started(self, timeout: float = 90) -> "LabApp":
        self.page.wait_for_function("() => !!(window.jupyterapp && window.jupyterapp.shell "
                                    "&& document.querySelector('.jp-DirListing'))",
                                    timeout=timeout * 1000)
        return self

    def open(self, path: str, timeout: float = 90, wait: bool = True) -> "LabNotebook":
        """Open ``path`` (relative to the server root) and wait for its idle kernel
        (``wait=False``: do not wait; then :meth:`LabNotebook.wait_open`)."""
        self.page.evaluate("(p) => { window.jupyterapp.commands.execute('docmanager:open', "
                           "{path: p, factory: 'Notebook'}); }", path)
        notebook = LabNotebook(self.page, path)
        return notebook.wait_open(timeout) if wait else notebook


class LabNotebook:
    """The notebook open in the current JupyterLab tab."""

    def __init__(self, page, path: str):
        self.page, self.path = page, path

    def wait_open(self, timeout: float = 90) -> "LabNotebook":
        """Wait until the notebook is the current tab and its kernel is idle."""
        self.page.wait_for_function(_READY_JS, arg=self.path, timeout=timeout * 1000)
        return self

    def close(self) -> None:
        """Shut its kernel down and close it without saving (no dialog)."""
        self.page.evaluate(_CLOSE_JS)

    def run_all(self, timeout: float = 180) -> dict:
        """Clear the outputs, run all cells, wait until every code cell ran (or one failed) and the
        kernel is idle; returns the final progress ({status, pending, errors})."""
        self.start_run()
        return self.wait_run(timeout)

    def start_run(self) -> None:
        """Clear the outputs and run all cells, without waiting (several pages can run at once)."""
        self.page.evaluate("window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        self.page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")

    def wait_run(self, timeout: float = 180) -> dict:
        """Wait until the run started by :meth:`start_run` is over (see :meth:`run_all`)."""
        page = self.page
        deadline = time.monotonic() + timeout
        settled = 0
        progress = {}
        while time.monotonic() < deadline:
            progress = page.evaluate(_PROGRESS_JS)
            done = progress["status"] == "idle" and (progress["pending"] == 0 or progress["errors"])
            settled = settled + 1 if done else 0
            if settled >= 3:  # idle three polls in a row: not just between two cells
                break
            page.wait_for_timeout(200)
        else:
            raise TimeoutError(f"{self.path}: cells still running after {timeout:g} s: {progress}")
        # widgets render asynchronously: wait until no output still says "Loading widget..."
        page.wait_for_function(
            "() => ![...document.querySelectorAll('.jp-OutputArea-output')]"
            ".some(n => (n.textContent || '').trim() === 'Loading widget...')",
            timeout=30_000)
        return progress

    def errors(self) -> list[str]:
        return self.page.evaluate(_ERRORS_JS)

    def model(self) -> dict:
        """The notebook as JupyterLab holds it (nbformat JSON, the outputs of this run)."""
        return self.page.evaluate(_MODEL_JS)

    def text_outputs(self) -> list[str]:
        """The text of every output of the notebook's code cells (streams and text/plain), from
        the notebook's model: JupyterLab renders only the cells near the viewport."""
        return self.page.evaluate(_TEXT_OUTPUTS_JS)
