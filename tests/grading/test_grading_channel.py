"""The channel between the grader and a graded kernel's harness, without a kernel: the harness
(probe.run_harness) runs in a thread with a namespace of answers, the grader's side
(channel.Channel) in an event loop, over a real socket pair. What the grader keeps, what it
counts itself, and that anything it did not ask for cuts the channel at once."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
import os
import threading

import numpy as np
import pytest

from attention_lab.exercises import probe
from attention_lab.exercises.implementations import Impl
from attention_lab.exercises.judging import cases_for, decode_record, judge
from attention_lab.exercises.registry import EXERCISES
from attention_lab.grading import channel as C
from attention_lab.exercises.specs.level1 import IMPL_EXPECT
from attention_lab.exercises.specs.level2 import MASKING_TEST_EXPECT
from attention_lab.exercises.specs.level3 import POLICIES
from attention_lab.grading.cases import EXTRA_CALLS, hands_an_impl, run_cases

import _exercise_answers as A

SEED = 11
CASES = {i: run_cases(EXERCISES[i], SEED) for i in ("1.4", "2.1", "2.6", "3.1", "4.3")}


def converse(ns: dict, ids: list[str], kernel=None) -> C.Channel:
    """One harness conversation about ``ids``; ``kernel(fd)`` replaces the harness (a hostile
    kernel speaking on the channel itself)."""
    channel = C.Channel(CASES)
    fd = os.dup(channel.kernel_fd)
    group = [EXERCISES[i] for i in ids]
    config = {"channel": fd, "exercises": [{"id": ex.id, "kind": ex.kind,
                                            "names": list(ex.answer_names)} for ex in group]}
    errors: list = []

    def run():
        try:
            (kernel or (lambda fd: probe.run_harness(ns, config)))(fd)
        except Exception as exc:  # what the harness cell would raise
            errors.append(exc)
        finally:
            os.close(fd)

    async def main():
        channel.attach(asyncio.get_running_loop())
        channel.begin(group, call_seconds=2, total_seconds=10)
        worker = threading.Thread(target=run)
        worker.start()
        while worker.is_alive():
            await asyncio.sleep(0.005)
        channel.drain()

    # a thread of its own, whatever loop this test process already runs (Playwright's, say)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, main()).result()
    channel.errors = errors
    return channel


def verdict(channel, i):
    return judge(EXERCISES[i], CASES[i], decode_record(json.loads(json.dumps(
        channel.records[i]))))


def test_honest_answers_are_recorded_and_judged_as_alone():
    ns = {"dot_scores": A.CORRECT["2.1"], "test_query_dependence": A.CORRECT["1.4"],
          "masked_softmax": A.CORRECT["2.6"][0], "test_masked_softmax": A.CORRECT["2.6"][1],
          "replace_and_measure": A.CORRECT["4.3"]}
    channel = converse(ns, ["1.4", "2.1", "2.6", "3.1", "4.3"])
    assert not channel.errors and not channel.problem
    assert channel.started == ["1.4", "2.1", "2.6", "3.1", "4.3"]
    assert channel.records["3.1"] == {"kind": "missing"}
    for i in ("1.4", "2.1", "2.6", "4.3"):
        assert verdict(channel, i).status == "pass", (i, verdict(channel, i).message)
    # the grader counted the calls of each implementation it handed over, itself
    tests = [r for c, r in zip(CASES["1.4"], channel.records["1.4"]["calls"])]
    assert all(r["called"] >= 1 for r in tests)
    assert all("called" not in r for c, r in zip(CASES["2.1"], channel.records["2.1"]["calls"]))


def test_a_test_that_never_calls_its_implementation_earns_nothing():
    """Verdicts forged without calling (here: the right ones, read off the grader's own table,
    which a kernel does not have) are right, and earn nothing."""
    from attention_lab.exercises.specs.level1 import IMPL_EXPECT

    order = iter([IMPL_EXPECT[c.args[0].code] for c in CASES["1.4"]])
    channel = converse({"test_query_dependence": lambda attend: next(order)}, ["1.4"])
    v = verdict(channel, "1.4")
    assert v.status == "fail" and "without calling the implementation" in v.message


def test_the_implementations_run_in_the_grader_and_only_during_their_case():
    kept = []

    def test_query_dependence(attend):
        kept.append(attend)
        assert "code" not in repr(attend.__closure__)  # nothing in the kernel tells which it is
        if len(kept) > 1:
            kept[0](np.ones(2), np.eye(2), np.eye(2))  # the first case's: refused
        return True

    channel = converse({"test_query_dependence": test_query_dependence}, ["1.4"])
    rec = channel.records["1.4"]
    assert rec["foreign"] == len(CASES["1.4"]) - 1
    assert verdict(channel, "1.4").status == "fail"
    assert "handed to another case" in verdict(channel, "1.4").message


def test_a_call_too_large_for_the_grader_raises_in_the_kernel_and_the_channel_stays_open():
    seen = []

    def test_query_dependence(attend):
        if seen:  # once: each refused call still counts towards the channel's 16 MB
            return True
        for n in (10 ** 5, 10 ** 6):  # numbers, then more than the probe records
            try:
                attend(np.ones(n), np.ones((1, n)), np.ones((1, 1)))
            except ValueError as exc:
                seen.append(str(exc))
        try:  # a message longer than the grader reads is not even sent
            attend(["x" * 20_000] * 300, np.eye(2), np.eye(2))
        except ValueError as exc:
            seen.append(str(exc))
        return True

    channel = converse({"test_query_dependence": test_query_dependence}, ["1.4"])
    assert not channel.problem and len(channel.records["1.4"]["calls"]) == len(CASES["1.4"])
    assert seen[:3] == [f"the grader's function takes at most {C.MAX_ASK_ELEMENTS} numbers per "
                        f"call"] * 2 + ["attend takes arguments of at most 4 MB here"], seen[:3]


def test_the_cases_of_a_test_come_last_in_an_order_drawn_from_the_seed():
    public = [c.args[0].code for c in cases_for(EXERCISES["2.6"], 0) if hands_an_impl(c)]
    codes = {seed: [c.args[0].code for c in run_cases(EXERCISES["2.6"], seed)
                    if isinstance(c.args[0], Impl)] for seed in range(6)}
    assert len({tuple(v[:len(public)]) for v in codes.values()}) > 1  # not one public order
    assert all(sorted(v[:len(public)]) == sorted(public) for v in codes.values())  # each once
    assert all(len(v) == len(public) + EXTRA_CALLS for v in codes.values())  # then the extras
    cases = run_cases(EXERCISES["2.6"], SEED)
    first = min(i for i, c in enumerate(cases) if isinstance(c.args[0], Impl))
    assert all(isinstance(c.args[0], Impl) for c in cases[first:])  # after the answer's
    assert run_cases(EXERCISES["2.6"], SEED)[first].args[0].code == cases[first].args[0].code


@pytest.mark.parametrize("exercise,verdict", [
    ("1.4", lambda code: IMPL_EXPECT[code]),
    ("2.6", lambda code: MASKING_TEST_EXPECT[code]),
    *[("3.2", lambda code, p=p: code == POLICIES[p]) for p in POLICIES]])
def test_a_test_answering_by_position_is_right_less_than_once_in_a_million(exercise, verdict):
    """A kernel can give a test's verdicts without calling the implementations, from their
    positions. Its best guess, the likeliest sequence, is right with the probability bounded
    here from the draws of 2,000 seeds: the handed implementations' order (one of C(n, k)), then
    each extra call's verdict (True with frequency f, so a guess is right at most max(f, 1 - f)
    + 0.02). Before the extra calls, 3.2's forger was right one run in five."""
    ex = EXERCISES[exercise]
    public = [c.args[0].code for c in cases_for(ex, 0) if hands_an_impl(c)]
    n, k = len(public), sum(verdict(c) for c in public)
    extras = [verdict(c.args[0].code) for seed in range(2000)
              for c in run_cases(ex, seed)[-EXTRA_CALLS:]]
    f = np.mean(extras)
    best = max(f, 1 - f) + 0.02
    assert best ** EXTRA_CALLS / math.comb(n, k) < 1e-6, (f, n, k)
    for seed in range(3):  # the extras are calls of the test on implementations
        assert all(hands_an_impl(c) for c in run_cases(ex, seed)[-EXTRA_CALLS - n:])


@pytest.mark.parametrize("what,expect", [
    (b"x\n" * 1_000_000, "not JSON"),  # 2 MB of junk lines: the first one cuts
    (b'{"head": {"kind": "missing"}}\n', "expected"),  # a record nobody asked for
    (b"{" * (probe.MAX_MESSAGE_BYTES + 10), "longer than"),
    (b'{"ask": "k", "rid": 1, "args": []}\n', "outside a case"),
])
def test_anything_the_grader_did_not_ask_for_cuts_the_channel_at_once(what, expect):
    def hostile(fd):
        view = memoryview(what)
        try:
            while view:
                view = view[os.write(fd, view):]
        except BrokenPipeError:
            pass

    channel = converse({}, ["2.1"], kernel=hostile)
    assert expect in channel.problem and channel.records == {}
    assert channel.received <= probe.MAX_MESSAGE_BYTES + 2 ** 17  # it stopped reading


def test_a_kernel_that_floods_within_the_protocol_is_cut_at_the_byte_limit(monkeypatch):
    monkeypatch.setattr(C, "MAX_BYTES", 2 ** 20)
    big = np.zeros(probe.MAX_ELEMENTS - 1)
    channel = converse({"dot_scores": lambda q, k: big}, ["2.1"])
    assert "more than 1 MB" in channel.problem
    assert channel.received <= 2 ** 20 + probe.MAX_MESSAGE_BYTES


def test_an_output_too_large_for_a_message_is_recorded_as_too_large():
    rows = np.zeros((probe.MAX_ELEMENTS // 10, 10)).astype(str)  # long strings, small count
    channel = converse({"dot_scores": lambda q, k: [s * 400 for s in rows[:, 0]]}, ["2.1"])
    assert not channel.problem
    assert channel.records["2.1"]["calls"][0]["out"] == {"__too_large__": [], "dtype": "output"}
