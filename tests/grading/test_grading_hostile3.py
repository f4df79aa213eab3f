"""The grader against a third hostile student: what a kernel that speaks the grader's protocols
itself makes the grader's own process hold, compute or write. The harness channel is tested
without a kernel (the harness's place is taken by a function on the kernel's end of a real socket
pair, as in ``test_grading_channel.py``), ZeroMQ's IOPub with one:

* forged records whose descriptions (the shape and dtype of an output "too large to record", a
  dict's keys) are megabytes long, where the harness never sends more than a few hundred
  characters: they must not reach the verdict's message (grades.json, the feedback page);
* calls of the implementations a case hands over (1.4, 2.6, 3.2, 4.3) with the largest
  arguments the grader accepts (``MAX_ASK_ELEMENTS`` numbers): the grader's memory for one such
  call stays within a small multiple of its arguments;
* IOPub messages a kernel forges on the topics the grader subscribes to (widget comms, execution
  counts), in a grading of one notebook (a subprocess of its own, its peak memory read from
  ``/proc``): the grader keeps none of them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import threading
import tracemalloc

import nbformat
import numpy as np
import pytest

from attention_lab.exercises import probe
from attention_lab.exercises.implementations import callable_of, is_marker
from attention_lab.exercises.judging import decode_record, judge
from attention_lab.exercises.registry import EXERCISES
from attention_lab.grading import channel as C
from attention_lab.grading.cases import run_cases

SEED = 5
CASES = {i: run_cases(EXERCISES[i], SEED) for i in ("1.4", "2.1", "2.6", "3.2", "4.3")}
HUGE = 1_000_000


def forger(ex_id: str, first_out):
    """A kernel that answers ``ex_id``'s first case with ``first_out`` (a forged output record)
    and every other case with ``None``."""

    def kernel(fd):
        link, n = probe._Link(fd), 0
        os.write(fd, probe._line({"hello": [ex_id]}))
        while True:
            msg = link.receive()
            if "look" in msg:
                os.write(fd, probe._line({"head": {"kind": "calls"}}))
            elif "call" in msg:
                out, n = (first_out if n == 0 else None), n + 1
                data = memoryview(probe._line({"result": {"out": out, "seconds": 0.0}}))
                while data:
                    data = data[os.write(fd, data):]
            else:
                return

    return kernel


def converse(ex_id: str, kernel) -> C.Channel:
    """One conversation of the grader's channel about ``ex_id`` with ``kernel(fd)``."""
    channel = C.Channel(CASES)
    fd = os.dup(channel.kernel_fd)

    async def main():
        channel.attach(asyncio.get_running_loop())
        channel.begin([EXERCISES[ex_id]], call_seconds=2, total_seconds=10)
        worker = threading.Thread(target=lambda: (kernel(fd), os.close(fd)))
        worker.start()
        while worker.is_alive():
            await asyncio.sleep(0.005)
        channel.drain()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, main()).result()
    return channel


@pytest.mark.parametrize("out", [
    {"__too_large__": [0] * HUGE, "dtype": "float64"},  # a 2 MB "shape"
    {"__too_large__": [10 ** 4000] * 32, "dtype": "float64"},  # 32 numbers of 4,000 digits
    {"__too_large__": [3], "dtype": "x" * (2 * HUGE)},
    {"__dict__": [["k" * (2 * HUGE), 1.0]]},  # a 2 MB key
], ids=["too-large-shape", "too-large-dims", "too-large-dtype", "dict-key"])
def test_a_forged_description_puts_no_megabytes_into_the_verdict(out):
    """Each forged output fits in one line the grader reads (4 MB) and the channel stays open; it
    made the old grader write a message of 6 MB and a summary of 3 MB into grades.json and the
    student's feedback page for one exercise (per exercise, as often as the kernel's 16 MB
    allow). The harness itself never describes an output in more than a few hundred characters."""
    channel = converse("2.1", forger("2.1", out))
    assert not channel.problem and "2.1" in channel.records
    try:
        v = judge(EXERCISES["2.1"], CASES["2.1"],
                  decode_record(json.loads(json.dumps(channel.records["2.1"]))))
    except ValueError:  # refused as malformed: nothing of it reaches a report either
        return
    assert v.status != "pass"
    assert len(v.message) < 5_000 and len(v.summary) < 1_000, (len(v.message), len(v.summary))


def _largest_arguments(fn_name: str) -> list[list[np.ndarray]]:
    """Arguments of at most ``MAX_ASK_ELEMENTS`` numbers in all, shaped to cost the most."""
    n = C.MAX_ASK_ELEMENTS
    if fn_name == "attend":  # (D,), (S, D), (S, D_v): no key, or one, and a long query
        return [[np.ones(n), np.ones((0, n)), np.ones((0, 1))],
                [np.ones(n // 2 - 1), np.ones((1, n // 2 - 1)), np.ones((1, 2))]]
    if fn_name == "masked_softmax":
        return [[np.ones(n // 2), np.ones(n // 2, dtype=bool)],
                [np.ones((n // 2, 1)), np.ones((1, 1), dtype=bool)]]
    return []  # the readout: its width is the case's, checked below on a batch of contexts


@pytest.mark.parametrize("ex_id", ["1.4", "2.6", "3.2", "4.3"])
def test_a_call_of_a_handed_implementation_costs_the_grader_memory_linear_in_its_arguments(
        ex_id):
    """The kernel may ask the grader to run the implementation its case hands over, 500 times a
    case, on arguments of up to 4,000 numbers (32 KB as float64). Bilinear attention (1.4's
    implementation E) built a D x D matrix from the query's D: a call with a query of 4,000
    numbers and no keys (24 KB of JSON) made the grader allocate 384 MB (and 0.8 s of CPU)."""
    limit = 64 * C.MAX_ASK_ELEMENTS * 8  # 2 MB: 64 times the arguments' own size
    markers = {repr(a): a for c in CASES[ex_id] for a in c.args if is_marker(a)}
    assert markers
    for marker in markers.values():
        fn = callable_of(marker)
        arg_sets = _largest_arguments(fn.__name__)
        if not arg_sets:  # the readout of 4.3: a batch of contexts of the case's width
            width = marker.params["W_c"].shape[1] - marker.params["h"].shape[0]
            arg_sets = [[np.ones((C.MAX_ASK_ELEMENTS // width, width))]]
        for args in arg_sets:
            encoded = [probe.encode(a) for a in args]
            tracemalloc.start()
            try:
                answer = C._compute(fn, encoded)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert peak < limit, (marker, [a.shape for a in args], peak, answer.keys())


# ------------------------------------------------------------------ what the grader keeps
#: A kernel's forged IOPub messages, on a topic the grader subscribes to (``kernel.``) and for
#: the cell that runs (the kernel knows its parent): widget comms, whose state nbclient's
#: output-widget mimic keeps, and an execution count, which it stores in the cell.
FORGER = '''
k = get_ipython().kernel
blob = "x" * 900_000
def forge(kind, content):
    k.session.send(k.iopub_socket, kind, content, parent=k.get_parent(),
                   ident=b"kernel.x." + kind.encode())
'''
COMMS = FORGER + '''
for i in range({n}):
    forge("comm_open", {{"comm_id": "c%d" % i, "target_name": "jupyter.widget", "data": {{
        "state": {{"_model_module": "@jupyter-widgets/output", "_model_name": "OutputModel",
                  "outputs": [], "junk": blob + str(i)}}}}}})
import time
time.sleep(2)  # (the grader reads them while the cell runs)
'''
COUNT = 'forge("execute_input", {"execution_count": blob + "%d", "code": ""}); time.sleep(0.02)'
KEPT = ("import re, sys\n"
        "from pathlib import Path\n"
        "import nbformat\n"
        "from attention_lab.exercises.registry import EXERCISES\n"
        "from attention_lab.grading.cases import run_cases\n"
        "from attention_lab.grading.runner import Limits, run_notebook\n"
        "def peak():\n"
        "    status = open('/proc/self/status').read()\n"
        "    return int(re.search(r'VmHWM:\\s*(\\d+)', status).group(1)) // 1024\n"
        "nb = nbformat.reads(sys.stdin.read(), as_version=4)\n"
        "ex = EXERCISES['2.1']\n"
        "before = peak()\n"
        "run = run_notebook(nb, Path.cwd() / 'work', [ex], {ex.id: run_cases(ex, 3)},"
        " Limits(cell_timeout=30, timeout=300))\n"
        "print('RUN', run.error or sorted(run.records), [e.describe() for e in run.events])\n"
        "print('GREW_MB', peak() - before)\n")


def test_the_grader_keeps_nothing_of_a_kernels_forged_iopub_messages(tmp_path):
    """300 widget comms of 900 KB and, in 150 cells, an execution count of 900 KB each (400 MB in
    all): the old grader kept every comm's state (nbclient's mimic of an output widget) and each
    cell's count, and grew by about as much (a cell sending them for its whole minute made it
    grow by gigabytes, for every job at once); now it grows by what ZeroMQ queues at most."""
    nb = nbformat.v4.new_notebook()
    nb.cells = ([nbformat.v4.new_code_cell(COMMS.format(n=300)),
                 nbformat.v4.new_code_cell(FORGER + "import time")]
                + [nbformat.v4.new_code_cell(COUNT % i) for i in range(150)]
                + [nbformat.v4.new_code_cell("def dot_scores(query, keys):\n"
                                             "    return keys @ query")])
    done = subprocess.run([sys.executable, "-c", KEPT], input=nbformat.writes(nb), text=True,
                          capture_output=True, timeout=600, cwd=tmp_path)
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert "GREW_MB" in lines, done.stdout + done.stderr[-3000:]
    assert lines["RUN"].startswith("['2.1'] []"), lines["RUN"]  # every cell ran, the answer too
    assert int(lines["GREW_MB"]) < 150, lines


# ------------------------------------------------------------------ what the grader parses
def test_a_submission_file_cannot_hide_the_values_of_its_notebook_in_escapes():
    """A ``.submission.json`` holds its notebook as a JSON string, where ``\\u002c`` is a comma
    and ``\\u007b`` a brace: the file's own bytes then hold no comma or bracket to count. A
    46 MB file with 2.7 million empty dicts in the notebook's metadata passed the bound of a
    million values and cost the old grader 8.5 s of CPU and 1.8 GB of memory to parse, before
    its job's CPU limit applies; now its notebook's values are counted too (here 1.2 million,
    in 22 MB: too large, and never parsed)."""
    from attention_lab.grading import submissions as S

    n = S.MAX_JSON_ITEMS + 200_000
    cell = json.dumps(nbformat.v4.new_code_cell("x = 1"))
    inner = ('{"cells": [' + cell + '], "metadata": {"junk": [' + "{}," * n
             + '0]}, "nbformat": 4, "nbformat_minor": 5}')
    hidden = json.dumps(inner).replace(",", "\\u002c").replace("{", "\\u007b")  # still inner
    data = ('{"format": "attention-lab-submission", "notebook": ' + hidden + '}').encode()
    assert json.loads(json.loads(data)["notebook"]) and S.json_items(data) < 10  # as described
    with pytest.raises(S.TooLarge, match="JSON values"):
        S.parse_submission("hw.submission.json", data)
    assert S.peek("hw.submission.json", data)["notebook"] is False  # not parsed there either


def test_a_notebook_of_an_older_format_cannot_carry_its_cells_past_the_bounds():
    """The bounds on cells (5,000, 2 MB of source) and the clearing of outputs look at the
    notebook's ``cells``; a notebook of format 3 keeps its cells in ``worksheets``, which
    nbformat converts. With an empty ``cells`` beside 40,000 cells there, the old grader parsed
    all of them (4 s of CPU, before its job's CPU limit applies) and ran them. The grader reads
    notebooks of format 4 only (Jupyter has written no other since 2015)."""
    from attention_lab.grading import submissions as S

    cell = {"cell_type": "code", "input": "x = 1", "language": "python", "metadata": {},
            "outputs": [], "collapsed": False}
    v3 = {"nbformat": 3, "nbformat_minor": 0, "cells": [], "metadata": {},
          "worksheets": [{"cells": [cell] * 40_000, "metadata": {}}]}
    with pytest.raises(S.Unreadable, match="format 3"):
        S.parse_submission("hw.ipynb", json.dumps(v3).encode())


@pytest.mark.parametrize("ex_id", ["1.4", "2.6", "3.2", "4.3"])
def test_the_graders_answer_to_the_largest_call_fits_a_default_socket_buffer(ex_id):
    """The grader answers a call with one non-blocking send and cuts a kernel whose socket does
    not take it whole (it does not read). On a machine with Linux's default limit
    (``net.core.wmem_max`` 212,992; this one allows 4 MB) the channel's buffer is that size, and
    the largest answer, of random numbers (whose JSON is longest; 4.3's is 260 KB), must still
    go in with one send."""
    rng = np.random.default_rng(0)
    markers = {repr(a): a for c in CASES[ex_id] for a in c.args if is_marker(a)}
    for marker in markers.values():
        fn = callable_of(marker)
        arg_sets = _largest_arguments(fn.__name__)
        if not arg_sets:
            width = marker.params["W_c"].shape[1] - marker.params["h"].shape[0]
            arg_sets = [[np.ones((C.MAX_ASK_ELEMENTS // width, width))]]
        for args in arg_sets:
            args = [rng.standard_normal(a.shape) if a.dtype != bool else a for a in args]
            answer = C._compute(fn, [probe.encode(a) for a in args])
            pair = C._Pair()
            try:
                pair.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 212_992)
                sent = json.dumps({"answer": {"rid": 499, **answer}}, separators=(",", ":"))
                data = sent.encode() + b"\n"
                assert pair.sock.send(data) == len(data), (marker, len(data))
            finally:
                pair.close()
