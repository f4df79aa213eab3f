"""The runner without a corpus: which cells it runs, how it pins a kernel's death on a cell, that
it goes through the sandbox interface for everything it starts and stops, and that it works
inside a running event loop. (The corpus of hostile notebooks is in test_grading_batch.py.)"""

from __future__ import annotations

import sys

import nbformat
import pytest

from attention_lab.exercises.registry import EXERCISES
from attention_lab.grading.cases import run_cases
from attention_lab.grading.runner import (Limits, defined_names, names_defined, only_feedback,
                                          run_notebook)
from attention_lab.grading.sandbox import JobFolders, ProcessSandbox, Sandbox, for_job

linux = pytest.mark.skipif(not sys.platform.startswith("linux"),
                           reason="the grader's sandbox is Linux-only")


def test_defined_names():
    src = "import numpy as np\ndef dot_scores(q, k):\n    pass\nparts = {}\nx == parts\n"
    assert defined_names(src, ["dot_scores", "parts", "x", "masked_softmax"]) == {"dot_scores",
                                                                                  "parts"}
    assert defined_names("softmax_by_hand: list = [1]", ["softmax_by_hand"]) == {"softmax_by_hand"}
    assert names_defined("import os.path, numpy as np\nfrom a.b import (c, d as e)  # f\n"
                         "async def g():\n    pass\n") == {"np", "c", "e", "g"}


def test_the_names_of_a_cell_are_found_in_one_pass_over_its_lines():
    """A regular expression whose ``\\s*`` crossed lines rescanned every following blank line
    at each line start: 6,000 blank lines cost 1 s per answer name. The scan stays on its line:
    a cell of 300,000 blank lines (quadratic: hours) is scanned in no time; the guard below is
    a time-out for the old hang, not a speed measurement (that is in benchmarks/)."""
    import signal

    def hung(*_):
        raise TimeoutError("names_defined is not linear in the cell's lines")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        src = "\n" * 300_000 + "def dot_scores(q, k):\n" + " \t\n" * 100_000 + "x: int = 1\n"
        assert names_defined(src) == {"dot_scores", "x"}
        long = "import " + "a." * 300_000 + "a\n" + "y:" + "z" * 600_000 + "\n"  # long lines
        assert names_defined(long) == set()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("source,skip", [
    ('check("2.1", dot_scores)', True), ("status()", True), ('hint("2.1");', True),
    ('check("3.3", (dot_attention, bilinear_attention))\n', True),
    ('x = 1\ncheck("2.1", dot_scores)', False), ('r = check("2.1", dot_scores)', False),
    ("def check(*a):\n    pass", False), ("print(check)", False), ("check(", False),
    ('ae.check("2.1", f)', False),
])
def test_cells_the_grader_does_not_need_to_run(source, skip):
    assert only_feedback(source) is skip


@linux
def test_exit_in_a_cell_is_attributed_to_that_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("def dot_scores(query, keys):\n    return keys @ query"),
                nbformat.v4.new_code_cell("exit()"),
                nbformat.v4.new_code_cell("import numpy as np\n"
                                          "def padding_mask(lengths, S):\n"
                                          "    return np.arange(S) < lengths[:, None]")]
    exs = [EXERCISES[i] for i in ("2.1", "2.5", "2.6")]
    cases = {ex.id: run_cases(ex, 3) for ex in exs}
    run = run_notebook(nb, tmp_path / "work", exs, cases, Limits(cell_timeout=10, timeout=60))
    assert [(e.index, e.kind) for e in run.events] == [(1, "crash")]
    assert "exit()" in run.events[0].message  # recognised from the reply, not by a timing race
    assert run.interrupted == {}
    assert run.records["2.1"]["kind"] == "calls" and run.records["2.5"]["kind"] == "calls"
    assert run.records["2.6"] == {"kind": "missing"}


@linux
def test_the_graders_own_cpu_on_a_job_is_bounded(tmp_path):
    """Whatever makes the grader work for a job (a kernel's messages, its channel, its cells),
    the job's thread may use ``Limits.grader_seconds`` of CPU: then the job stops, too_large."""
    from attention_lab.grading.batch import verdicts_from_run

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(30)"),
                nbformat.v4.new_code_cell("def dot_scores(query, keys):\n    return keys @ query")]
    ex = EXERCISES["2.1"]
    run = run_notebook(nb, tmp_path / "work", [ex], {ex.id: run_cases(ex, 3)},
                       Limits(cell_timeout=60, timeout=60, grader_seconds=0.0))
    assert "took more than 0 s of CPU" in run.too_large and run.records == {}
    assert 0 < run.grader_seconds and run.attempts == 1  # stopped: no kernel after it
    grades, status, message = verdicts_from_run(run, {ex.id: []}, nb, [ex])
    assert status == "too_large" and grades["2.1"].status == "too_large"


@linux
def test_run_notebook_works_inside_a_running_event_loop(tmp_path):
    """Grading from a Jupyter kernel, or beside Playwright's sync API, has an event loop running
    in the calling thread; asyncio.run() alone refuses to start there."""
    import asyncio
    import threading

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("def dot_scores(query, keys):\n    return keys @ query")]
    ex = EXERCISES["2.1"]

    async def inside_a_loop():
        return run_notebook(nb, tmp_path / "work", [ex], {ex.id: run_cases(ex, 3)},
                            Limits(cell_timeout=10, timeout=60))

    # a thread of its own, whatever loop this test process already runs (Playwright's, say)
    box = []
    worker = threading.Thread(target=lambda: box.append(asyncio.run(inside_a_loop())))
    worker.start()
    worker.join(120)
    (run,) = box
    assert not run.error, run.error
    assert run.records["2.1"]["kind"] == "calls"


class RecordingSandbox(Sandbox):
    """The machine's sandbox (:func:`for_job`), recording what the runner asks of it."""

    def __init__(self, folders, limits):
        super().__init__(folders, limits)
        self.inner = for_job(folders, limits)
        self.transport, self.kernel_ip = self.inner.transport, self.inner.kernel_ip
        self.calls = []

    def env(self):
        return self.inner.env()

    def path(self, host):
        return self.inner.path(host)

    def wrap(self, kernel_cmd, **kw):
        self.calls.append(("wrap", kw["attempt"]))
        return self.inner.wrap(kernel_cmd, **kw)

    def started(self, pid, ports):
        self.calls.append(("started", pid is not None))
        return self.inner.started(pid, ports)

    def connections_released(self, attempt):
        self.inner.connections_released(attempt)

    def report(self, attempt):
        return self.inner.report(attempt)

    def kill(self):
        self.calls.append(("kill",))
        self.inner.kill()

    def close(self):
        self.inner.close()


@linux
def test_every_kernel_starts_and_stops_through_the_sandbox(tmp_path):
    """The seam another isolation plugs into: the runner starts each kernel with the sandbox's
    command and environment, and stops each through the sandbox's kill."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nos._exit(1)"),
                nbformat.v4.new_code_cell("def dot_scores(query, keys):\n    return keys @ query")]
    ex = EXERCISES["2.1"]
    limits = Limits(cell_timeout=10, timeout=60)
    sandbox = RecordingSandbox(JobFolders(tmp_path / "work"), limits)
    run = run_notebook(nb, tmp_path / "work", [ex], {ex.id: run_cases(ex, 3)},
                       limits, sandbox=sandbox)
    assert run.records["2.1"]["kind"] == "calls" and run.attempts >= 2
    kernels = [c for c in sandbox.calls if c[0] == "wrap"]
    assert kernels == [("wrap", n) for n in range(1, run.attempts + 1)]
    assert sandbox.calls.count(("started", True)) == run.attempts
    assert sandbox.calls.count(("kill",)) == run.attempts  # one per kernel, after it stopped
    assert run.sandbox.get("pid")  # the launcher's report of the last kernel
    sandbox.close()


@linux
def test_a_sandbox_that_refuses_stops_the_job_with_its_reason(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    limits = Limits(cell_timeout=10, timeout=60, startup_timeout=20, require_sandbox=True)
    sandbox = ProcessSandbox(JobFolders(tmp_path / "work"), limits, "no isolation here")
    sandbox.wrap = lambda kernel_cmd, **kw: [sys.executable, "-c", "raise SystemExit(3)"]
    run = run_notebook(nb, tmp_path / "work", [EXERCISES["2.1"]], {}, limits, sandbox=sandbox)
    assert run.error == ("not run: --require-sandbox was given but no isolation here"
                         ) and run.attempts == 1
    assert run.records == {}


def test_a_sandbox_for_another_folder_is_refused(tmp_path):
    limits = Limits()
    sandbox = ProcessSandbox(JobFolders(tmp_path / "a" / "work"), limits)
    with pytest.raises(ValueError, match="job folder"):
        run_notebook(nbformat.v4.new_notebook(), tmp_path / "b" / "work", [], {}, limits,
                     sandbox=sandbox)


class _Channel:
    """A kernel channel that replies from a script: each ``get_msg`` returns the next message, or
    waits out its timeout and raises ``Empty`` when the script is over."""

    def __init__(self, *messages):
        self.messages, self.sent, self.waited = list(messages), [], 0.0

    def send(self, msg):
        self.sent.append(msg)

    async def get_msg(self, timeout=None):
        import asyncio
        from queue import Empty

        if self.messages:
            return self.messages.pop(0)
        self.waited += timeout or 0
        await asyncio.sleep(timeout or 0)
        raise Empty


def test_a_kernel_is_ready_once_it_answers_without_waiting_for_silence():
    """jupyter_client's wait_for_ready ends by waiting until IOPub has been silent for 0.2 s; the
    grader's client does not (nbclient reads only the replies to its own requests)."""
    import asyncio
    import concurrent.futures

    from attention_lab.grading.runner import _make_client_classes

    KM, _ = _make_client_classes()
    kc = KM.kernel_client_class()
    reply = {"msg_type": "kernel_info_reply", "content": {"protocol_version": "5.3"},
             "parent_header": {}, "header": {}}
    status = {"msg_type": "status", "content": {"execution_state": "idle"}}
    kc._shell_channel = _Channel(reply)
    kc._iopub_channel = _Channel(status, status)  # a second message would be waited out
    # a thread of its own, whatever loop this test process already runs (Playwright's, say)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, kc.wait_for_ready(timeout=5)).result()
    assert kc._iopub_channel.waited == 0.0 and kc._iopub_channel.messages == [status]
    assert len(kc._shell_channel.sent) == 1  # one kernel_info request


def test_the_graders_iopub_socket_receives_only_the_kernels_own_topics():
    """Printed text (``stream.*``) and displays never reach the grader: its IOPub socket
    subscribes to ``kernel.*`` only (jupyter_client's subscription to everything is dropped)."""
    import asyncio
    import concurrent.futures

    import zmq
    import zmq.asyncio

    from attention_lab.grading.runner import _make_client_classes

    KM, _ = _make_client_classes()

    async def receive() -> list:
        ctx = zmq.asyncio.Context()
        pub = ctx.socket(zmq.PUB)
        port = pub.bind_to_random_port("tcp://127.0.0.1")
        sub = KM.kernel_client_class(ip="127.0.0.1", iopub_port=port, context=ctx).connect_iopub()
        try:
            for _ in range(200):  # until the subscription has reached the publisher
                await pub.send_multipart([b"kernel.k.status", b"up"])
                if await sub.poll(10):
                    break
            await pub.send_multipart([b"stream.stdout", b"printed"])
            await pub.send_multipart([b"display_data", b"shown"])
            await pub.send_multipart([b"kernel.k.status", b"last"])
            seen = []
            while await sub.poll(500):
                seen.append((await sub.recv_multipart())[1])
            return seen
        finally:
            sub.close(0)
            pub.close(0)
            ctx.term()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        seen = pool.submit(asyncio.run, receive()).result()
    assert [m for m in seen if m != b"up"] == [b"last"]


@linux
def test_every_kernel_context_is_terminated_after_its_job(tmp_path):
    """The ZeroMQ context of each kernel ends in a thread of its own (its term takes ~0.1 s the
    next notebook need not wait for): it does end, for every kernel, and leaves no thread."""
    import threading

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nos._exit(1)"),
                nbformat.v4.new_code_cell("def dot_scores(query, keys):\n    return keys @ query")]
    ex = EXERCISES["2.1"]
    run = run_notebook(nb, tmp_path / "work", [ex], {ex.id: run_cases(ex, 3)},
                       Limits(cell_timeout=10, timeout=60))
    assert run.records["2.1"]["kind"] == "calls" and run.attempts >= 2
    terms = [t for t in threading.enumerate() if t.name == "zmq-term"]
    for t in terms:
        t.join(5)
    assert not [t for t in terms if t.is_alive()], "a kernel's ZeroMQ context did not end"
