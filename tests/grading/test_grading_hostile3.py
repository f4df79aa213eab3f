"""The grader against a third hostile student: what a kernel that speaks the grader's protocol
itself makes the grader's own process hold, compute or write, without a kernel (the harness's
place is taken by a function on the kernel's end of a real socket pair, as in
``test_grading_channel.py``).

* forged records whose descriptions (the shape and dtype of an output "too large to record", a
  dict's keys) are megabytes long, where the harness never sends more than a few hundred
  characters: they must not reach the verdict's message (grades.json, the feedback page).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading

import pytest

from attention_lab.exercises import probe
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
