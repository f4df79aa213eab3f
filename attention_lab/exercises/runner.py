"""Execute one notebook in a sandboxed kernel and collect the raw outputs of its answers.

One call of :func:`run_notebook` = one submission:

1. a scratch folder of its own (the kernel's working directory, temp dir, IPython dir, and the
   only place it may write when Landlock is available, see :mod:`._sandbox`);
2. a kernel started by nbclient/jupyter_client through the sandbox launcher (memory limit,
   process group, Landlock), with stdout/stderr going to a capped log file;
3. the student's code cells, one at a time, each with the per-cell time limit (interrupt; a
   kernel that does not answer after the interrupt is killed) and all of them within the
   whole-notebook limit; errors are recorded, never fatal; outputs are not kept (only error
   names), so a cell printing gigabytes cannot fill the grader's memory;
4. the grader's harness cell: the source of :mod:`.probe`, executed in a fresh namespace, looks
   up each answer by name, calls it on the grader's inputs (read from a file) and appends signed
   JSON lines to a results file;
5. if the kernel dies (``os._exit``, a crash) or hangs, it is killed (process group and every
   process carrying this job's token) and restarted, skipping the cells that killed it, and the
   harness continues with the exercises not yet recorded (at most ``max_attempts`` kernels).

Nothing computed in the kernel is trusted except those raw outputs; the comparison with the
reference happens in the grader's process (:mod:`.grading`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBE_SOURCE = (HERE / "probe.py").read_text(encoding="utf-8")
SANDBOX = HERE / "_sandbox.py"
TOKEN_ENV = "ATTENTION_LAB_GRADER_JOB"
RESULTS_MAX_BYTES = 64 * 2 ** 20
EXITING = "attention-lab grader: the kernel is exiting"
#: Liveness probe. exit(), quit() or kernel.do_shutdown() in a cell do not stop the kernel at
#: once: ipykernel sets ``exit_now`` and stops its loop 0.1 s later. The probe catches that.
PROBE_CELL = (f"if getattr(get_ipython(), 'exit_now', False):\n"
              f"    raise SystemExit({EXITING!r})")


@dataclass
class Limits:
    """Time and memory limits for one submission (seconds, MiB)."""

    cell_timeout: float = 60.0
    timeout: float = 600.0
    memory_mb: int = 2048
    call_seconds: float = 10.0
    check_seconds: float = 30.0
    fsize_mb: int = 256
    max_attempts: int = 8
    startup_timeout: float = 60.0
    require_landlock: bool = False


@dataclass
class CellEvent:
    index: int  # position of the cell in the notebook (0-based, counting every cell)
    kind: str  # error | timeout | crash
    name: str = ""
    message: str = ""

    def describe(self) -> str:
        what = {"error": f"raised {self.name}", "timeout": "did not finish in time",
                "crash": "crashed the kernel"}[self.kind]
        text = f"cell {self.index} {what}"
        if self.message:
            text += f": {self.message}"
        return text


@dataclass
class RunResult:
    records: dict = field(default_factory=dict)  # id -> raw (JSON-level) probe record
    interrupted: dict = field(default_factory=dict)  # id -> "crash" | "timeout"
    events: list = field(default_factory=list)
    timed_out: bool = False
    error: str = ""
    harness_errors: dict = field(default_factory=dict)  # id -> why the harness recorded nothing
    attempts: int = 0
    sandbox: dict = field(default_factory=dict)
    seconds: float = 0.0
    tampered_lines: int = 0


def skip_slow_optional_imports() -> None:
    """Make ``import nbformat`` fast in the command-line tools.

    jsonschema (imported by nbformat) optionally imports ``rfc3987_syntax``, which builds a parser
    grammar at import time: about 4 s on this project's machines, more than grading a notebook.
    It only checks the "iri" string format, which notebooks do not use. Called by ``grade`` and
    ``submit`` before nbformat is imported; has no effect if it is already imported.
    """
    if "rfc3987_syntax" not in sys.modules and "jsonschema" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # an ImportError for jsonschema's optional import


def _harness_source(config: dict, first: bool) -> str:
    """The harness cell. The first one of a kernel compiles the probe's source into a private
    module (the grader's own text, not the package a notebook may have patched); the following
    ones reuse it. Nothing here is trusted: only the recorded outputs matter, and the grader
    judges them in its own process."""
    source = PROBE_SOURCE if first else None
    return (
        PROBE_CELL + "\n"
        "def __attention_lab_grader(user_ns, config, source):\n"
        "    import sys, types\n"
        "    name = '__attention_lab_grader_probe__'\n"
        "    if source is not None:\n"
        "        mod = types.ModuleType(name)\n"
        "        exec(compile(source, '<attention-lab grader>', 'exec'), mod.__dict__)\n"
        "        sys.modules[name] = mod\n"
        "    sys.modules[name].run_harness(user_ns, config)\n"
        f"__attention_lab_grader(globals(), {config!r}, {source!r})\n"
        "del __attention_lab_grader\n"
    )


def defined_names(source: str, names) -> set[str]:
    """Which of ``names`` a cell defines (``def name`` or ``name = ...``)."""
    found = set()
    for n in names:
        if re.search(rf"^\s*(def\s+{re.escape(n)}\b|{re.escape(n)}\s*(:[^=]*)?=(?!=))", source,
                     re.MULTILINE):
            found.add(n)
    return found


def only_feedback(source: str) -> bool:
    """True for a cell that only calls ``check``, ``hint`` or ``status`` (one call, nothing else).

    The grader skips such cells: it runs its own checks, and the student's would only repeat the
    work (and repeat any crash or endless loop of the answer they call).
    """
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return (len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)
            and isinstance(tree.body[0].value, ast.Call)
            and isinstance(tree.body[0].value.func, ast.Name)
            and tree.body[0].value.func.id in ("check", "hint", "status"))


def read_results(path: Path, key: bytes, known_ids) -> tuple[dict, list, int]:
    """Parse the harness's results file: ({id: record}, [started ids], n_bad_lines).

    Lines whose HMAC does not verify, that are not valid JSON, or that name unknown exercises are
    counted and ignored. Never raises.
    """
    done: dict = {}
    started: list = []
    bad = 0
    try:
        size = path.stat().st_size
        if size > RESULTS_MAX_BYTES:
            return done, started, 1
        raw = path.read_bytes()
    except OSError:
        return done, started, 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        text, sep, mac = line.rpartition(b"\t")
        if not sep:
            bad += 1
            continue
        want = hmac.new(key, text, hashlib.sha256).hexdigest().encode()
        if not hmac.compare_digest(want, mac.strip()):
            bad += 1
            continue
        try:
            msg = json.loads(text)
        except (ValueError, RecursionError):
            bad += 1
            continue
        if not isinstance(msg, dict) or msg.get("id") not in known_ids:
            bad += 1
            continue
        if msg.get("event") == "start":
            started.append(msg["id"])
        elif msg.get("event") == "done" and isinstance(msg.get("record"), dict):
            done[msg["id"]] = msg["record"]
        else:
            bad += 1
    return done, started, bad


def _kill_job(token: str, pgid: int | None) -> None:
    """SIGKILL the kernel's process group and every process carrying this job's token."""
    if pgid and pgid > 1 and pgid != os.getpgid(0):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a grading dependency
        return
    me = os.getpid()
    needle = f"{TOKEN_ENV}={token}".encode()
    for p in psutil.process_iter(["pid"]):
        if p.pid in (me, 1):
            continue
        try:
            with open(f"/proc/{p.pid}/environ", "rb") as fh:
                found = needle in fh.read().split(b"\0")
        except FileNotFoundError:  # no /proc (macOS): ask psutil
            try:
                found = p.environ().get(TOKEN_ENV) == token
            except psutil.Error:
                continue
        except OSError:
            continue
        if found:
            try:
                p.kill()
            except psutil.Error:
                pass


def _make_client_classes():
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    class SandboxKernelManager(AsyncKernelManager):
        """Starts ``python -m ipykernel_launcher`` through the sandbox launcher."""

        sandbox_config_path = ""

        def format_kernel_cmd(self, extra_arguments=None):
            cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file]
            cmd += list(extra_arguments or [])
            return [sys.executable, "-I", "-S", str(SANDBOX), self.sandbox_config_path, "--"] + cmd

    class QuietClient(NotebookClient):
        """Keeps only error outputs (name and message, truncated); counts the rest."""

        output_bytes = 0

        def output(self, outs, msg, display_id, cell_index):
            if msg.get("msg_type") == "error":
                from nbformat.v4 import new_output

                c = msg.get("content", {})
                out = new_output("error", ename=str(c.get("ename", ""))[:200],
                                 evalue=str(c.get("evalue", ""))[:1000], traceback=[])
                outs.append(out)
                return out
            try:
                self.output_bytes += len(json.dumps(msg.get("content", {}))[:10 ** 7])
            except (TypeError, ValueError):
                pass
            return None

        def clear_output(self, outs, msg, cell_index):
            return None

    return SandboxKernelManager, QuietClient


async def _run(nb, workdir: Path, exercises: list, inputs: dict, limits: Limits, token: str,
               result: RunResult, on_pgid) -> None:
    import nbformat
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    KM, Client = _make_client_classes()
    start = time.monotonic()
    deadline = start + limits.timeout
    # Layout of the job folder; the kernel may write only where marked:
    #   work/   its working directory (the notebook copy)             create, write, delete
    #   home/   TMPDIR, IPYTHONDIR, MPLCONFIGDIR, JUPYTER_RUNTIME_DIR create, write, delete
    #   out/    results-N.jsonl, created empty by the grader          append/write only
    #   in/     inputs, connection files, sandbox config, logs        read only
    job = workdir.parent
    home, out_dir, in_dir = job / "home", job / "out", job / "in"
    for d in (home, out_dir, in_dir):
        d.mkdir(exist_ok=True)
    for sub in ("tmp", "ipython", "runtime", "mpl"):
        (home / sub).mkdir(exist_ok=True)
    key = secrets.token_bytes(32)
    inputs_paths = {}
    for ex in exercises:
        inputs_paths[ex.id] = in_dir / f"inputs-{ex.id}.json"
        inputs_paths[ex.id].write_text(json.dumps({ex.id: inputs.get(ex.id, [])},
                                                  allow_nan=False), encoding="utf-8")
    ids = [ex.id for ex in exercises]
    pending = list(ids)
    skip: set[int] = set()
    events: dict[tuple[int, str], CellEvent] = {}

    cells = [c for c in nb.cells]
    n = len(cells)
    skip.update(i for i, c in enumerate(cells)
                if c.get("cell_type") == "code" and only_feedback(str(c.get("source", ""))))
    probe_index, harness_index = n, n + 1

    env = dict(os.environ)
    env.update({
        TOKEN_ENV: token,
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2", "PYTHONDONTWRITEBYTECODE": "1",
        "IPYTHONDIR": str(home / "ipython"), "MPLCONFIGDIR": str(home / "mpl"),
        "TMPDIR": str(home / "tmp"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        # the student's own check() cells obey the grader's limits, so that a slow answer makes
        # its check cell report a time-out instead of running into the cell limit
        "ATTENTION_LAB_CALL_SECONDS": f"{limits.call_seconds:g}",
        "ATTENTION_LAB_CHECK_SECONDS": f"{max(0.5, min(limits.check_seconds, 0.8 * limits.cell_timeout)):g}",
    })
    env.pop("JPY_SESSION_NAME", None)

    def record(ev: CellEvent) -> None:
        events.setdefault((ev.index, ev.kind), ev)

    # Careful mode (after a kernel died at a moment that does not pin down the culprit, e.g. a
    # cell that calls exit() makes the kernel stop *after* it finished): every student cell is
    # followed by a liveness probe, so the cell that ends the kernel is found exactly.
    careful = False
    blamed: set[str] = set()
    start_failures = 0
    last_start_error = ""

    for attempt in range(1, limits.max_attempts + 1):
        if not pending:
            break
        if time.monotonic() >= deadline:
            result.timed_out = True
            break
        result.attempts = attempt
        conn = in_dir / f"kernel-{attempt}.json"
        report = out_dir / f"sandbox-{attempt}.json"
        report.write_text("")
        results_path = out_dir / f"results-{attempt}.jsonl"
        results_path.write_text("")
        cfg_path = in_dir / f"sandbox-config-{attempt}.json"
        cfg_path.write_text(json.dumps({
            "memory_mb": limits.memory_mb, "fsize_mb": limits.fsize_mb,
            "cpu_seconds": int(limits.timeout * 2 + 60), "nproc_margin": 512,
            "write_dirs": [str(workdir), str(home)],
            "write_files": ["/dev/null", str(report), str(results_path)],
            "connection_file": str(conn), "report": str(report),
            "require_landlock": limits.require_landlock,
        }), encoding="utf-8")
        km = KM(kernel_name="python3", connection_file=str(conn))
        km.sandbox_config_path = str(cfg_path)
        run_nb = nbformat.v4.new_notebook()
        run_nb.cells = [nbformat.from_dict(dict(c)) for c in cells] + [
            nbformat.v4.new_code_cell(PROBE_CELL), nbformat.v4.new_code_cell("")]
        client = Client(run_nb, km=km, allow_errors=True, interrupt_on_timeout=False,
                        startup_timeout=int(limits.startup_timeout), kernel_name="python3",
                        record_timing=False, store_widget_state=False, iopub_timeout=4,
                        resources={"metadata": {"path": str(workdir)}})
        timeout_box = [limits.cell_timeout]
        client.timeout_func = lambda cell: timeout_box[0]
        # exit()/quit() make ipykernel stop its loop 0.1 s *after* the cell, so whether the next
        # cells still run is a race. The execute reply carries an "ask_exit" payload: treat it as
        # "the kernel ends after this cell", every time, whatever the machine's load.
        asked_exit: set[int] = set()

        def _on_executed(cell=None, cell_index=None, execute_reply=None, **_):
            payload = ((execute_reply or {}).get("content") or {}).get("payload") or []
            if any(isinstance(p, dict) and p.get("source") == "ask_exit" for p in payload):
                asked_exit.add(cell_index)

        client.on_cell_executed = _on_executed
        log = open(in_dir / f"kernel-{attempt}.log", "ab")
        pgid = None
        restart = False
        try:
            try:
                await client.async_start_new_kernel(cwd=str(workdir), env=env, stdout=log,
                                                    stderr=log, stdin=subprocess.DEVNULL)
                provisioner = getattr(km, "provisioner", None)
                pgid = getattr(provisioner, "pgid", None)
                on_pgid(pgid)
                await client.async_start_new_kernel_client()
            except Exception as exc:
                try:
                    result.sandbox = json.loads(report.read_text())
                except (OSError, ValueError):
                    pass
                # e.g. another program took one of the five ports between their choice and the
                # kernel's bind (jupyter_client issue 487): try again with fresh ports
                start_failures += 1
                last_start_error = f"{type(exc).__name__}: {exc}"[:400]
                no_sandbox = limits.require_landlock and not result.sandbox.get("landlock")
                if start_failures >= 3 or no_sandbox:
                    result.error = (
                        "not run: --require-sandbox was given but Linux Landlock is unavailable "
                        f"({result.sandbox.get('landlock_error', 'unknown reason')})"
                        if no_sandbox else f"the kernel could not start: {last_start_error}")
                    break
                continue
            try:
                result.sandbox = json.loads(report.read_text())
            except (OSError, ValueError):
                result.sandbox = {}
            # ---- the student's cells
            for idx, cell in enumerate(cells):
                if cell.get("cell_type") != "code" or idx in skip or not str(
                        cell.get("source", "")).strip():
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    result.timed_out = True
                    break
                timeout_box[0] = max(0.5, min(limits.cell_timeout, remaining))
                try:
                    ran = await client.async_execute_cell(run_nb.cells[idx], idx)
                    for out in ran.get("outputs", []):
                        if out.get("output_type") == "error":
                            record(CellEvent(idx, "error", out.get("ename", ""),
                                             str(out.get("evalue", ""))[:300]))
                    if idx in asked_exit:
                        skip.add(idx)
                        record(CellEvent(idx, "crash", "", "the cell called exit(): the kernel "
                                                           "stops after it"))
                        restart = True
                        break
                    if careful and not await _recover(client, km, probe_index, timeout_box,
                                                      interrupt=False):
                        skip.add(idx)
                        record(CellEvent(idx, "crash", "", "the kernel stopped or stopped "
                                                           "answering right after this cell"))
                        restart = True
                        break
                except CellTimeoutError:
                    await _cancel_stale_pollers()
                    skip.add(idx)
                    if time.monotonic() >= deadline:
                        result.timed_out = True
                        break
                    record(CellEvent(idx, "timeout", "",
                                     f"stopped after {timeout_box[0]:.0f} s"))
                    if not await _recover(client, km, probe_index, timeout_box):
                        restart = True
                        break
                except DeadKernelError:
                    await _cancel_stale_pollers()
                    if careful:  # the previous cell was probed: this one ended the kernel
                        skip.add(idx)
                        record(CellEvent(idx, "crash", "", "the kernel process died"))
                    else:  # maybe this cell, maybe an earlier one: find out on the next kernel
                        careful = True
                    restart = True
                    break
            if result.timed_out or restart:
                continue
            # ---- the grader's harness: one cell per exercise, each with its own time limit
            todo = [ex for ex in exercises if ex.id in pending]
            failed: dict[str, str] = {}
            first = True
            previous = None
            for ex in todo:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    result.timed_out = True
                    break
                config = {"inputs": str(inputs_paths[ex.id]), "results": str(results_path),
                          "key": key.hex(), "call_seconds": limits.call_seconds,
                          "total_seconds": limits.check_seconds,
                          "exercises": [{"id": ex.id, "kind": ex.kind,
                                         "names": list(ex.answer_names)}]}
                run_nb.cells[harness_index].source = _harness_source(config, first)
                first = False
                timeout_box[0] = max(0.5, min(remaining, limits.check_seconds + 5))
                try:
                    ran = await client.async_execute_cell(run_nb.cells[harness_index],
                                                          harness_index)
                    if _exiting(ran):  # a cell or the previous answer asked the kernel to exit
                        if previous is not None:
                            result.interrupted[previous] = "crash"
                            blamed.add(previous)
                            if previous in pending:
                                pending.remove(previous)
                        else:
                            careful = True
                        restart = True
                        break
                    for out in ran.get("outputs", []):
                        if out.get("output_type") == "error":
                            failed[ex.id] = f"{out.get('ename')}: {out.get('evalue')}"[:300]
                except CellTimeoutError:
                    await _cancel_stale_pollers()
                    if time.monotonic() >= deadline:
                        result.timed_out = True
                        break
                    result.interrupted[ex.id] = "timeout"
                    pending.remove(ex.id)
                    if not await _recover(client, km, probe_index, timeout_box):
                        restart = True
                        break
                except DeadKernelError:
                    await _cancel_stale_pollers()
                    _, started, _ = read_results(results_path, key, set(ids))
                    if ex.id in started:  # the answer was running
                        culprit = ex.id
                    elif previous is not None:  # the previous answer stopped the kernel late
                        culprit = previous
                    else:  # before any answer ran: one of the student's cells did it
                        culprit = None
                        careful = True
                    if culprit is not None:
                        result.interrupted[culprit] = "crash"
                        blamed.add(culprit)
                        if culprit in pending:
                            pending.remove(culprit)
                    restart = True
                    break
                previous = ex.id
            done, _, bad = read_results(results_path, key, set(ids))
            result.tampered_lines += bad
            for i, rec in done.items():
                if i in pending and i not in blamed:
                    result.records[i] = rec
                    pending.remove(i)
            if result.timed_out:
                break
            if restart:
                continue
            for i in list(pending):  # the harness cell ran but recorded nothing
                result.harness_errors[i] = failed.get(i, "no result was recorded")
                pending.remove(i)
            break
        finally:
            await _shutdown(client, km, token, pgid)
            log.close()
    if pending and not result.timed_out and not result.error:
        for i in pending:
            result.harness_errors[i] = (f"not run: the kernel died or hung {result.attempts} "
                                        f"times, the limit")
    result.events = sorted(events.values(), key=lambda e: (e.index, e.kind))
    result.seconds = time.monotonic() - start


def _exiting(cell) -> bool:
    return any(out.get("output_type") == "error" and EXITING in str(out.get("evalue", ""))
               for out in cell.get("outputs", []))


async def _cancel_stale_pollers() -> None:
    """nbclient leaves the output poller of a timed-out cell running (CellTimeoutError is a
    control signal); it would steal the next cell's messages. Cancel it and its liveness poller."""
    stale = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()
             and getattr(t.get_coro(), "__qualname__", "").endswith(
                 ("_async_poll_output_msg", "_async_poll_kernel_alive", "_async_poll_for_reply"))]
    for t in stale:
        t.cancel()
    if stale:
        await asyncio.gather(*stale, return_exceptions=True)


async def _recover(client, km, probe_index: int, timeout_box: list,
                   interrupt: bool = True) -> bool:
    """After a cell timed out: interrupt, then check that the kernel answers within 3 s.
    With ``interrupt=False``: only the liveness check (careful mode)."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    if interrupt:
        try:
            await km.interrupt_kernel()
        except Exception:
            return False
    timeout_box[0] = 3
    try:
        ran = await client.async_execute_cell(client.nb.cells[probe_index], probe_index)
        return not _exiting(ran)
    except (CellTimeoutError, DeadKernelError):
        await _cancel_stale_pollers()
        return False
    except Exception:
        return False


async def _shutdown(client, km, token: str, pgid) -> None:
    try:
        if client.kc is not None:
            client.kc.stop_channels()
    except Exception:
        pass
    try:
        await asyncio.wait_for(km.shutdown_kernel(now=True), timeout=10)
    except Exception:
        pass
    _kill_job(token, pgid)
    try:
        await km.cleanup_resources()
    except Exception:
        pass
    client.kc = None


def _run_coroutine(coro) -> None:
    """``asyncio.run(coro)``, also from a thread whose event loop is already running (a Jupyter
    kernel, or Playwright's sync API in the same process): then in a fresh worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="grader") as pool:
        pool.submit(asyncio.run, coro).result()


def run_notebook(nb, workdir: Path, exercises: list, inputs: dict, limits: Limits,
                 token: str | None = None, on_pgid=lambda pgid: None) -> RunResult:
    """Run ``nb`` (an nbformat v4 notebook) in a sandboxed kernel in ``workdir`` and return the
    raw records of ``exercises``. Never raises; problems end up in the result."""
    token = token or secrets.token_hex(16)
    result = RunResult()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        _run_coroutine(_run(nb, workdir, exercises, inputs, limits, token, result, on_pgid))
    except Exception as exc:  # a grader bug must not abort the batch
        result.error = f"grader error while running the notebook: {type(exc).__name__}: {exc}"
        _kill_job(token, None)
    return result


def kill_job(token: str, pgid: int | None = None) -> None:
    _kill_job(token, pgid)


__all__ = ["Limits", "RunResult", "CellEvent", "run_notebook", "read_results", "defined_names",
           "kill_job"]
