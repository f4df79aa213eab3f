"""The lecture demo under load: N viewers arriving, then moving sliders, plain Voila beside
the lecture-hall settings, on 127.0.0.1.

Two servers, one after the other, each serving a scratch copy of its notebook:

- **plain**: the demo as it was launched before the lecture-hall work: plain Voila, a kernel
  started and the notebook run per arriving viewer, every explorer built eagerly (the trained
  model's too, so torch in every kernel), no culling, no viewer limit;
- **hall**: ``python -m attention_lab demo --pool P --max-viewers 70 --cull-after 30``: P
  preheated kernels preheated one at a time, the trained model's tab built when opened and served by
  the shared model, culling, the viewer limit (see :mod:`attention_lab.demo.server`).

With ``--configs hall ablation`` the hall server runs again once per addition of
:mod:`attention_lab.demo.server`, without it (``hall-without-<addition>``, switched off by
``ATTENTION_LAB_DEMO_WITHOUT``); each such round's rows compare the hall with everything (the
value) against the hall without that addition (the baseline), the ratio being what it buys.

For each N (1, 10, 30, 60) the N viewers arrive evenly spread over N/3 seconds (30 in 10 s: the
goal's scenario). Each is a :class:`benchmarks.viewer.Viewer` (page, the static files a real page
fetched, the kernel websocket, the widgets' states, every canvas opened); *page ready* is from its
page request to the first frame of the tab on screen. Then every viewer that got its page moves the
first tab's ``q1`` slider one step at a student's pace (a step every 0.8-2.2 s, at random) for
``--slider-seconds``; *slider latency* is from the update sent to the next frame of that figure.
With ``--lull S`` the simulated viewers first wait S seconds (a class listening: long enough for
the pool to begin refilling, so that the refills meet the first slider steps).
Memory per viewer: each viewer kernel's RSS and USS (its own pages), right after the slider phase
(its figure hot) and again ``IDLE_S`` seconds later, once the figure has cooled (what the kernels
of a class listening hold); and the whole demo's memory (every process of the server, preheated
kernels and model server included, proportional set size) divided by N, when idle. A few real
Chromium pages (``--chromium``, 2 by default) join the N = 10 and N = 30 rounds in place of
simulated viewers, to confirm page ready and the key press -> repaint latency in a browser.
Chromium runs at the lowest CPU priority (its scheduling group at nice 19:
:func:`_low_priority_chromium`): in a lecture hall the browsers run on the students' laptops, not
on the server's cores; the Chromium pages' own times are therefore upper bounds. When
a browser is available, the simulated viewers fetch the static files a real page fetched (recorded
once), as a browser does (six kept-alive connections, compressed bodies accepted); with
``--chromium 0`` they fetch none, as browsers that have them cached. Between rounds every viewer
leaves (its page's shutdown request, as a closed tab sends) and the benchmark waits until the
preheated pool is full again.

Bounds: a page not ready within ``--timeout`` (120 s) counts as not ready; a round of the plain
server is skipped when free memory is short (it needs ~350 MiB per viewer), and every server is
stopped with all its processes at the end, also on failure. Run it with
``python -m benchmarks.run demo`` (N = 1, 10, 30, 60) or
``python -m benchmarks.bench_demo --n 1 10``.
The machine's load average is printed with every round: measured on a shared machine, the figures
are pessimistic.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .common import Row

GROUP = "demo"
ORDER = 95
IN_DEFAULT_RUN = False  # about 20 minutes
ROOT = Path(__file__).resolve().parent.parent
NS = (1, 10, 30, 60)
POOL = 30
GOAL_READY_S, GOAL_SLIDER_S, GOAL_RSS_MIB = 3.0, 0.250, 100.0
#: seconds after the last slider step until memory is measured again: a figure frees its pixel
#: buffers 5 s after its last frame (``FastCanvas.cool_seconds``)
IDLE_S = 7.0
#: the demo notebook as it was before the lecture-hall work: every tab built at once
PLAIN_CELL = """\
from attention_lab.demo import build_demo
from attention_lab.toy.explorer import ModelExplorer
from attention_lab.widgets import (MaskExplorer, QueryExplorer, ScoreExplorer,
                                   TemperatureExplorer, WindowExplorer)

demo = build_demo({
    "Query": QueryExplorer(presentation=True),
    "Temperature": TemperatureExplorer(presentation=True),
    "Mask": MaskExplorer(presentation=True),
    "Window": WindowExplorer(presentation=True),
    "Score": ScoreExplorer(presentation=True),
    "Trained model": ModelExplorer(presentation=True),
}, prerender=False)
demo"""


def _harness():
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    import harness

    return harness


def percentile(values, q: float) -> float | None:
    """The q-th percentile (0-100, nearest rank) of ``values``; None when there are none."""
    values = sorted(values)
    if not values:
        return None
    rank = max(1, min(len(values), round(q / 100 * len(values) + 0.5)))
    return values[rank - 1]


@dataclass
class Round:
    """What one round (N viewers on one server) measured."""

    n: int
    timeout: float = 120.0
    ready: list = field(default_factory=list)        # seconds, None = not ready in time
    slider: list = field(default_factory=list)       # seconds, None = no frame in time
    rss_mib: list = field(default_factory=list)      # per viewer kernel, after its sliders
    uss_mib: list = field(default_factory=list)
    idle_rss_mib: list = field(default_factory=list)  # the same, IDLE_S later
    idle_uss_mib: list = field(default_factory=list)
    demo_pss_mib: float | None = None                # the whole demo's processes
    browser_ready: list = field(default_factory=list)
    browser_slider: list = field(default_factory=list)
    turned_away: int = 0
    cpu_arrival_s: float | None = None               # per viewer: its kernel and Voila's server
    voila_cpu_arrival_s: float | None = None         # per viewer: Voila's server alone
    cpu_step_s: float | None = None                  # per slider step, the same processes
    client_cpu_arrival_s: float | None = None        # per viewer: this benchmark's own client
    load: tuple = ()
    skipped: str = ""

    def ready_p(self, q):
        """Percentile of page ready; a page not ready in time counts as the time limit (so the
        figure is then a lower bound)."""
        done = [r for r in self.ready if r is not None]
        return percentile(done + [self.timeout] * (len(self.ready) - len(done)), q)

    @property
    def not_ready(self) -> int:
        return sum(r is None for r in self.ready)


# ------------------------------------------------------------------------------------------------
# Servers
# ------------------------------------------------------------------------------------------------

def plain_server(H, folder: Path, work: Path):
    """Plain Voila on the eager notebook, as ``python -m attention_lab demo`` ran it before."""
    from attention_lab.demo.launch import VOILA_EXTENSIONS

    notebook = H.write_notebook([PLAIN_CELL], folder / "demo_plain.ipynb")
    port, token = H.free_port(), H.new_token()
    cmd = [sys.executable, "-m", "voila", str(notebook), "--no-browser", "--Voila.ip=127.0.0.1",
           f"--port={port}", "--Voila.port_retries=0", f"--Voila.token={token}",
           "--template=lab", "--theme=light", "--strip_sources=True", "--show_tracebacks=False",
           "--Voila.log_level=WARN",
           *[f"--VoilaConfiguration.extension_allowlist={x}" for x in VOILA_EXTENSIONS]]
    return H.Server("plain Voila", cmd, port=port, token=token, env=H._isolated_env(work),
                    cwd=folder, log=work / "plain.log", timeout=180,
                    ready=lambda s: H.http_status(f"http://127.0.0.1:{port}/voila/static/voila.js")
                    in (200, 302, 403))


def configs_named(names) -> list[str]:
    """The server configurations of ``--configs``: ``ablation`` stands for one
    ``hall-without-<addition>`` per addition the demo server can switch off."""
    from attention_lab.demo.server import ADDITIONS

    out = []
    for name in names:
        out += [f"hall-without-{a}" for a in ADDITIONS] if name == "ablation" else [name]
    return out


def hall_server(H, folder: Path, work: Path, pool: int, without: str = ""):
    """The demo's launcher with the lecture-hall settings on a copy of notebooks/demo.ipynb;
    ``without``: an addition switched off (an ablation)."""
    import shutil

    from attention_lab.demo.server import WITHOUT_ENV

    notebook = folder / "demo.ipynb"
    shutil.copyfile(ROOT / "notebooks" / "demo.ipynb", notebook)
    port, token = H.free_port(), H.new_token()
    cmd = [sys.executable, "-m", "attention_lab", "demo", "--notebook", str(notebook),
           "--port", str(port), "--token", token, "--pool", str(pool), "--max-viewers", "70",
           "--cull-after", "30",
           "--timeout", "180"]

    def ready(server) -> bool:
        log = server.log_path.read_text(errors="replace")
        return "preheated kernel(s) ready" in log or (pool == 0 and "?token=" in log)

    env = {**H._isolated_env(work), WITHOUT_ENV: without}
    return H.Server(f"lecture-hall demo{' without ' + without if without else ''}", cmd,
                    port=port, token=token, env=env, cwd=ROOT, log=work / "hall.log",
                    timeout=900, ready=ready)


def _tree(server):
    import psutil

    try:
        root = psutil.Process(server.proc.pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _kernels(server) -> dict:
    """kernel id -> psutil.Process of the server's kernels."""
    import psutil

    out = {}
    for p in _tree(server):
        try:
            for arg in p.cmdline():
                if arg.endswith(".json") and "kernel-" in arg:
                    out[Path(arg).stem.removeprefix("kernel-")] = p
        except psutil.Error:
            pass
    return out


def wait_pool_full(server, pool: int, timeout: float = 600.0) -> float:
    """Wait until the server runs exactly ``pool`` kernels and they are idle (preheated);
    returns the seconds waited."""
    import psutil

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        kernels = list(_kernels(server).values())
        if len(kernels) == pool:
            try:
                for k in kernels:
                    k.cpu_percent(None)
                time.sleep(1.0)
                if all(k.cpu_percent(None) < 5 for k in kernels):
                    return time.monotonic() - t0
            except psutil.Error:
                pass
        time.sleep(1.0)
    raise TimeoutError(f"the preheated pool did not fill up to {pool} within {timeout:g} s")


def _low_priority_chromium(H, playwright, work: Path):
    """Chromium (and every process it starts) at the lowest CPU priority: only the CPU the
    server leaves. Playwright starts the browser in a session of its own, and Linux weighs each
    session's processes as one group (autogroup) against the server's: a nice value counts only
    inside the group, and Chromium resets its processes' nice values. So the group itself gets
    nice 19 (measured: without it the two Chromium pages of the N=30 round took 2.5-3.3 s of CPU
    in the first 2.6 s of sliders, more than a core)."""
    wrapper = work / "chromium-nice"
    wrapper.write_text(f'#!/bin/sh\n'
                       f'echo 19 > /proc/self/autogroup 2>/dev/null\n'
                       f'exec nice -n 19 {H.CHROMIUM} "$@"\n')
    wrapper.chmod(0o755)
    return H.launch_chromium(playwright, executable=wrapper)


def record_assets(H, browser, server) -> tuple[str, ...]:
    """The static files (scripts, styles, fonts) a real page of ``server`` fetches. The page
    leaves as a closed tab does, and this waits until its kernel has ended: a kernel left running
    would count as a preheated one, and the next round would start with the pool one short."""
    from attention_lab.demo.server import KERNEL_ID

    found, kernel_id = [], None
    context = browser.new_context(viewport=H.PROJECTOR)
    try:
        page = context.new_page()
        base = f"http://127.0.0.1:{server.port}"
        page.on("requestfinished", lambda r: found.append(r.url))
        page.goto(server.url("/"), timeout=180_000)
        page.locator(".al-demo .jupyter-matplotlib-canvas-div canvas").first.wait_for(
            timeout=180_000)
        page.wait_for_timeout(1000)
        kernel_id = KERNEL_ID.search(page.content()).group(1)
        page.close(run_before_unload=True)  # Voila's page asks for its kernel's shutdown
    finally:
        context.close()
    deadline = time.monotonic() + 30
    while kernel_id in _kernels(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    return tuple(dict.fromkeys(u[len(base):] for u in found
                               if u.startswith(base + "/voila/") and "/api/" not in u))


# ------------------------------------------------------------------------------------------------
# One round
# ------------------------------------------------------------------------------------------------

async def _viewers(server, n: int, spread: float, slider_s: float, assets, timeout: float,
                   rnd: random.Random, start: threading.Event,
                   lull: float = 0.0) -> tuple[list, list, dict]:
    # imported here, so that the client's CPU per arrival below does not count its imports
    import jupyter_server.services.kernels.connection.base  # noqa: F401
    import psutil
    import tornado.websocket  # noqa: F401

    from .viewer import Viewer

    base = f"http://127.0.0.1:{server.port}"
    viewers = [Viewer(base, server.token, assets=assets, timeout=timeout) for _ in range(n)]

    async def arrive(i, v):
        await asyncio.sleep(spread * i / max(n, 1))
        await v.load()

    cpu = Cpu(server)
    client = _cpu(psutil.Process())  # the simulated viewers' client shares the machine's cores
    start.set()
    await asyncio.gather(*(arrive(i, v) for i, v in enumerate(viewers)))
    ready = [v for v in viewers if v.ready_s is not None]
    arrival_cpu = cpu.used([v.kernel_id for v in viewers if v.kernel_id])
    arrival_voila = cpu.used([])
    client = (_cpu(psutil.Process()) - client) / max(len(viewers), 1)

    async def student(v):
        await asyncio.sleep(lull)  # the class listens before it moves a slider
        end = time.monotonic() + slider_s
        while True:
            await asyncio.sleep(rnd.uniform(0.8, 2.2))
            if time.monotonic() >= end:
                return
            if await v.move(timeout=30) is None:
                v.latencies.append(None)

    cpu = Cpu(server)
    await asyncio.gather(*(student(v) for v in ready))
    memory = _viewer_memory(server, [v.kernel_id for v in ready])
    step_cpu = cpu.used([v.kernel_id for v in ready])  # before the idle wait
    await asyncio.sleep(IDLE_S)
    idle = _viewer_memory(server, [v.kernel_id for v in ready])
    memory.update(idle_rss=idle["rss"], idle_uss=idle["uss"], pss=idle["pss"])
    steps = sum(len(v.latencies) for v in ready)
    # CPU is counted for the kernels of viewers whose page came (the others' are unknown)
    arrived = [v for v in viewers if v.kernel_id]
    memory["cpu_arrival"] = arrival_cpu / len(arrived) if arrived else None
    memory["voila_cpu_arrival"] = arrival_voila / len(arrived) if arrived else None
    memory["client_cpu_arrival"] = client
    memory["cpu_step"] = step_cpu / steps if steps else None
    await asyncio.gather(*(v.close() for v in viewers))
    return viewers, [x for v in ready for x in v.latencies], memory


class Cpu:
    """CPU seconds (user + system) used since creation by Voila's server process and the
    given kernels (a kernel started meanwhile counts in full: its start-up is the viewer's)."""

    def __init__(self, server):
        self.server = server
        self.kernels = {kid: _cpu(p) for kid, p in _kernels(server).items()}
        self.voila = _cpu(_voila_process(server))

    def used(self, kernel_ids) -> float:
        now = _kernels(self.server)
        total = _cpu(_voila_process(self.server)) - self.voila
        for kid in kernel_ids:
            if kid in now:
                total += _cpu(now[kid]) - self.kernels.get(kid, 0.0)
        return total


def _cpu(process) -> float:
    import psutil

    try:
        t = process.cpu_times()
        return t.user + t.system
    except (psutil.Error, AttributeError):
        return 0.0


def _voila_process(server):
    """The process that runs Voila (the launcher's child, or the server itself)."""
    import psutil

    for p in _tree(server):
        try:
            if any(part in ("voila", "attention_lab.demo.server") for part in p.cmdline()[:3]):
                return p
        except psutil.Error:
            pass
    return None


def _viewer_memory(server, kernel_ids) -> dict:
    import psutil

    kernels = _kernels(server)
    rss, uss = [], []
    for kid in kernel_ids:
        p = kernels.get(kid)
        if p is None:
            continue
        try:
            info = p.memory_full_info()
        except psutil.Error:
            continue
        rss.append(info.rss / 2**20)
        uss.append(info.uss / 2**20)
    pss = 0.0
    for p in _tree(server):
        try:
            pss += p.memory_full_info().pss / 2**20
        except psutil.Error:
            pass
    return {"rss": rss, "uss": uss, "pss": pss}


def _browser_pages(H, browser, server, k: int, spread: float, slider_s: float,
                   start: threading.Event, out: Round) -> None:
    """``k`` real Chromium pages arriving among the simulated viewers."""
    try:
        start.wait(60)
        pages = []
        for i in range(k):
            time.sleep(spread / max(k, 1) / 2 if i else spread / 4)
            context = browser.new_context(viewport=H.PROJECTOR)
            page = context.new_page()
            page.set_default_timeout(120_000)
            t0 = time.monotonic()
            try:
                page.goto(server.url("/"), timeout=120_000)
                canvas = page.locator(".al-explorer-query .jupyter-matplotlib-canvas-div canvas")
                canvas.first.wait_for(timeout=120_000)
                page.wait_for_function(
                    "(c) => { const d = c.getContext('2d').getImageData(c.width / 2, "
                    "c.height / 2, 1, 1).data; return d[3] > 0; }",
                    arg=canvas.first.element_handle(), timeout=120_000)
                out.browser_ready.append(time.monotonic() - t0)
                page.evaluate(H.REPAINT_HOOK_JS)
                pages.append((context, page))
            except Exception as exc:
                print(f"    a Chromium page did not load: {type(exc).__name__}: {exc}"[:200],
                      file=sys.stderr)
                out.browser_ready.append(None)
                context.close()
        end = time.monotonic() + slider_s
        n = 0
        while pages and time.monotonic() < end:
            for _, page in pages:
                handle = page.locator(".al-explorer-query .al-control-q1 .noUi-handle").first
                handle.focus()
                page.evaluate("() => { window.__al.paints.length = 0; }")
                page.keyboard.press("ArrowRight" if n % 2 == 0 else "ArrowLeft")
                try:
                    page.wait_for_function(
                        "() => window.__al.paints.some(p => p[0] > window.__al.keydown)",
                        timeout=30_000)
                    key_t, paints = page.evaluate("() => [window.__al.keydown, window.__al.paints]")
                    out.browser_slider.append(
                        (min(p[1] for p in paints if p[0] > key_t) - key_t) / 1e3)
                except Exception:
                    out.browser_slider.append(None)
            n += 1
            time.sleep(random.uniform(0.8, 2.2))
        for context, page in pages:
            try:  # leave as a closed tab does: Voila's page asks for its kernel's shutdown
                page.close(run_before_unload=True)
            finally:
                context.close()
    except Exception as exc:  # the simulated viewers' figures still count
        print(f"    Chromium pages failed: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)


def run_round(H, server, n: int, *, slider_s: float, assets, timeout: float, browser=None,
              chromium: int = 0, seed: int = 0, lull: float = 0.0) -> Round:
    """N viewers on ``server``: ``chromium`` of them real pages (driven from this thread, which
    owns the browser), the others simulated in an asyncio loop of their own thread."""
    out = Round(n=n, timeout=timeout)
    spread = n / 3.0
    k = min(chromium, max(0, n - 1)) if browser is not None else 0
    start = threading.Event()
    simulated: dict = {}

    def simulate():
        try:
            simulated["result"] = asyncio.run(_viewers(
                server, n - k, spread, slider_s, assets, timeout, random.Random(seed), start,
                lull))
        except BaseException as exc:  # reported below
            simulated["error"] = exc
            start.set()

    load_before = os.getloadavg()[0]
    thread = threading.Thread(target=simulate)
    thread.start()
    if k:
        _browser_pages(H, browser, server, k, spread, slider_s + 10, start, out)
    thread.join()
    if "error" in simulated:
        raise simulated["error"]
    viewers, latencies, memory = simulated["result"]
    out.ready = [v.ready_s for v in viewers]
    out.turned_away = sum(v.status == 503 for v in viewers)
    out.slider = latencies
    out.rss_mib, out.uss_mib = memory["rss"], memory["uss"]
    out.idle_rss_mib, out.idle_uss_mib = memory["idle_rss"], memory["idle_uss"]
    out.demo_pss_mib = memory["pss"]
    out.cpu_arrival_s, out.cpu_step_s = memory["cpu_arrival"], memory["cpu_step"]
    out.voila_cpu_arrival_s = memory["voila_cpu_arrival"]
    out.client_cpu_arrival_s = memory["client_cpu_arrival"]
    out.load = (load_before, os.getloadavg()[0])
    errors = sorted({v.error for v in viewers if v.error})
    if errors:
        print(f"    viewers that failed: {errors[:3]}", file=sys.stderr)
    return out


# ------------------------------------------------------------------------------------------------
# The two servers, the rounds, the rows
# ------------------------------------------------------------------------------------------------

def measure(ns=NS, *, configs=("plain", "hall"), pool: int = POOL, slider_s: float = 20.0,
            timeout: float = 120.0, chromium: int = 2, plain_max_n: int = 60,
            lull: float = 0.0) -> dict:
    """{config: {n: Round}} for the two servers (see the module docstring)."""
    import psutil

    H = _harness()
    results: dict = {c: {} for c in configs}
    results["preheat"] = {}  # {config: (CPU per preheated kernel, Voila's CPU per kernel)}
    use_browser = chromium > 0 and not H.browser_unavailable_reason()
    if use_browser:
        from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory(prefix="al-bench-demo-") as tmp:
        work = Path(tmp)
        folder = work / "notebooks"
        folder.mkdir()
        playwright = sync_playwright().start() if use_browser else None
        try:
            for config in configs:
                t0 = time.monotonic()
                print(f"  {config}: starting the server ...", file=sys.stderr, flush=True)
                server = (plain_server(H, folder, work / config) if config == "plain"
                          else hall_server(H, folder, work / config, pool,
                                           config.removeprefix("hall-without-")
                                           if config != "hall" else ""))
                # a browser of its own per server: a page stuck on one server cannot spoil the next
                browser = (_low_priority_chromium(H, playwright, work)
                           if playwright is not None else None)
                try:
                    server.start()
                    print(f"  {config}: ready after {time.monotonic() - t0:.0f} s (load average "
                          f"{os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
                    if config.startswith("hall") and pool:
                        wait_pool_full(server, pool)
                        kernels = statistics.mean(_cpu(p) for p in _kernels(server).values())
                        results["preheat"][config] = (kernels,
                                                      _cpu(_voila_process(server)) / pool)
                        print(f"  {config}: {pool} preheated kernels, {kernels:.1f} s of CPU each "
                              f"to preheat", file=sys.stderr, flush=True)
                    assets = ()
                    if browser is not None:  # before the rounds, which wait for a full pool
                        try:
                            assets = record_assets(H, browser, server)
                        except Exception as exc:  # measured without the files, and said so
                            print(f"  {config}: could not record a real page's files "
                                  f"({type(exc).__name__}); simulated viewers fetch none",
                                  file=sys.stderr)
                    for n in ns:
                        if config.startswith("hall") and pool:
                            wait_pool_full(server, pool)
                        need = n * 350 + 4096
                        free = psutil.virtual_memory().available / 2**20
                        if config == "plain" and (n > plain_max_n or free < need):
                            results[config][n] = Round(
                                n=n, skipped=f"skipped: needs ~{need / 1024:.0f} GiB free, "
                                             f"{free / 1024:.0f} GiB are")
                            print(f"  {config} N={n}: {results[config][n].skipped}",
                                  file=sys.stderr)
                            continue
                        r = run_round(H, server, n, slider_s=slider_s, assets=assets,
                                      timeout=timeout, browser=browser,
                                      chromium=chromium if n in (10, 30) else 0, seed=n,
                                      lull=lull)
                        results[config][n] = r
                        print(f"  {config} N={n}: page ready p50/p95 "
                              f"{_s(r.ready_p(50))}/{_s(r.ready_p(95))}, slider p50/p95 "
                              f"{_s(percentile(_ok(r.slider), 50))}/"
                              f"{_s(percentile(_ok(r.slider) + _lost(r.slider), 95))}, RSS/viewer "
                              f"{_m(r.rss_mib)} hot, {_m(r.idle_rss_mib)} idle, CPU/arrival "
                              f"{_s(r.cpu_arrival_s)}, CPU/step {_s(r.cpu_step_s)}, Chromium "
                              f"ready {r.browser_ready}, load average {r.load[0]:.1f} -> "
                              f"{r.load[1]:.1f}", file=sys.stderr, flush=True)
                        if config == "plain":  # the viewers' kernels stay (no culling): stop them
                            _stop_kernels(server)
                finally:
                    left = server.stop()
                    if left:
                        print(f"  {config}: processes left behind: {left}", file=sys.stderr)
                    if browser is not None:
                        browser.close()
        finally:
            if playwright is not None:
                playwright.stop()
    return results


def _stop_kernels(server) -> None:
    import psutil

    for p in _kernels(server).values():
        try:
            p.terminate()
        except psutil.Error:
            pass
    time.sleep(2)


def _ok(values):
    return [v for v in values if v is not None]


def _lost(values):
    """Slider steps without a frame within the step's 30 s count as 30 s."""
    return [30.0] * sum(v is None for v in values)


def _s(x) -> str:
    return "-" if x is None else f"{x:.2f} s"


def _mean(values) -> float | None:
    return statistics.mean(values) if values else None


def _m(values) -> str:
    return "-" if not values else f"{_mean(values):.0f} MiB"


def rows(results: dict) -> list[Row]:
    """Hall vs plain Voila; then, for an ablation, hall vs the hall without each addition."""
    out = _compare(results.get("hall", {}), results.get("plain", {}), "plain Voila")
    preheat = results.get("preheat", {})
    for config in results:
        if config.startswith("hall-without-"):
            tag = f"[{config.removeprefix('hall-')}]"
            if "hall" in preheat and config in preheat:
                out.append(Row(GROUP, f"{tag} {SERVER_PREHEAT}", preheat["hall"][1], "s",
                               preheat[config][1], "without it"))
            out += [Row(r.group, f"{tag} {r.what}", r.value, r.unit, r.baseline, r.baseline_what)
                    for r in _compare(results.get("hall", {}), results[config], "without it",
                                      heads=ABLATION_ROWS) if r.baseline is not None]
    return _preheat_rows(preheat.get("hall")) + out


#: the rows an ablation compares (what each addition is for: page ready, sliders, memory, CPU)
ABLATION_ROWS = ("page ready p95", "slider step -> new frame p95", "RSS per viewer kernel idle",
                 "whole demo", "CPU per arriving viewer (", "... of which Voila's server")


SERVER_PREHEAT = ("Voila's server CPU until the pool is full, per preheated kernel (its page "
                  "rendered, its messages watched; start-up included)")


def _preheat_rows(hall) -> list[Row]:
    """The hall's CPU to preheat: ``hall`` = (per kernel, Voila's server per kernel) or None."""
    if not hall:
        return []
    return [Row(GROUP, "preheating of a preheated kernel, CPU (start, imports, explorers, "
                       "their figures rendered once)", hall[0], "s"),
            Row(GROUP, SERVER_PREHEAT, hall[1], "s")]


def _compare(hall: dict, plain: dict, base_name: str, heads=None) -> list[Row]:
    """Rows of the rounds of ``hall`` against those of ``plain`` (named ``base_name``), for each
    N; ``heads``: only the rows whose text begins so."""
    out = []
    for n in sorted(set(plain) | set(hall)):
        p, h = plain.get(n), hall.get(n)
        goal = n == 30

        def row(what, get, unit="s", goal_text="", limit=None, compare=True):
            new = get(h) if h is not None and not h.skipped else None
            old = get(p) if p is not None and not p.skipped else None
            if new is None:
                return
            if heads is not None and not what.startswith(heads):
                return
            ok = None if limit is None else new <= limit
            base_what = base_name if old is not None else (p.skipped if p is not None else "")
            if not compare and old is not None:
                what, base_what, old = f"{what} ({base_name}'s round: {old:.1f})", "", None
            out.append(Row(GROUP, f"N={n}: {what}", new, unit, old, base_what, goal_text, ok))

        spread = f"{n} arriving in {n / 3:.0f} s" if n > 1 else "one viewer"
        limit = (h or p).timeout
        row(f"viewers whose page was not ready within {limit:.0f} s", lambda r: r.not_ready, "")
        row(f"page ready p50 ({spread}, simulated; not ready = {limit:.0f} s)",
            lambda r: r.ready_p(50))
        row(f"page ready p95 ({spread}, simulated)", lambda r: r.ready_p(95),
            goal_text="<= 3 s (N=30)" if goal else "", limit=GOAL_READY_S if goal else None)
        row("slider step -> new frame p50 (a step per viewer every 0.8-2.2 s)",
            lambda r: percentile(_ok(r.slider), 50))
        row("slider step -> new frame p95", lambda r: percentile(_ok(r.slider) + _lost(r.slider),
                                                                  95),
            goal_text="<= 250 ms (N=30)" if goal else "", limit=GOAL_SLIDER_S if goal else None)
        row("RSS per viewer kernel right after its sliders (its figure hot; mean)",
            lambda r: _mean(r.rss_mib), "MiB")
        row(f"RSS per viewer kernel idle ({IDLE_S:.0f} s after the last step; mean)",
            lambda r: _mean(r.idle_rss_mib), "MiB", "<= 100 MiB", GOAL_RSS_MIB)
        row("USS per viewer kernel (its own pages) right after its sliders (mean)",
            lambda r: _mean(r.uss_mib), "MiB")
        row("USS per viewer kernel idle (mean)", lambda r: _mean(r.idle_uss_mib), "MiB")
        row("whole demo (every process, PSS, idle) / N", lambda r: r.demo_pss_mib / n
            if r.demo_pss_mib else None, "MiB")
        row("CPU per arriving viewer (its kernel + Voila's server)", lambda r: r.cpu_arrival_s)
        row("... of which Voila's server", lambda r: r.voila_cpu_arrival_s)
        row("CPU per slider step (the kernel + Voila's server)", lambda r: r.cpu_step_s)
        row("CPU per arriving viewer of this benchmark's client (on the same cores)",
            lambda r: r.client_cpu_arrival_s)
        row("Chromium pages: page ready (median)", lambda r: statistics.median(_ok(
            r.browser_ready)) if _ok(r.browser_ready) else None)
        row("Chromium pages: key press -> repaint p95", lambda r: percentile(
            _ok(r.browser_slider) + _lost(r.browser_slider), 95) if r.browser_slider else None)
        row("machine load average (1 min) at the round's end", lambda r: r.load[1]
            if r.load else None, "", compare=False)
    return out


def run(quick: bool = False) -> list[Row]:
    if quick:
        return rows(measure((1, 10), pool=10, slider_s=8, chromium=1))
    return rows(measure())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=list(NS), help="viewer counts")
    p.add_argument("--configs", nargs="+", choices=("plain", "hall", "ablation"),
                   default=["plain", "hall"],
                   help="ablation: the hall without each of its additions, one after the other")
    p.add_argument("--pool", type=int, default=POOL, help="preheated kernels (hall)")
    p.add_argument("--slider-seconds", type=float, default=20.0,
                   help="how long each viewer moves its slider (default 20)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds for a page to load")
    p.add_argument("--chromium", type=int, default=2, help="real pages in the N=10, 30 rounds")
    p.add_argument("--plain-max-n", type=int, default=60,
                   help="the largest N the plain server is run with (default 60)")
    p.add_argument("--lull", type=float, default=0.0,
                   help="seconds the simulated viewers wait after arriving before their first "
                        "slider step (a class listening; the pool may refill meanwhile)")
    args = p.parse_args(argv)
    from .run import table

    results = measure(args.n, configs=configs_named(args.configs), pool=args.pool,
                      slider_s=args.slider_seconds, timeout=args.timeout, chromium=args.chromium,
                      plain_max_n=args.plain_max_n, lull=args.lull)
    print(f"machine: {os.cpu_count()} cores; load average now {os.getloadavg()[0]:.1f}")
    print(table(rows(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
