"""The bottleneck pair: training both kinds of reversal model on sources of 4 to 24 symbols with
the shipped budget (500 steps of 128 sources, one thread), by the same code, one after the other
in this process; and the measurement the notebook shows (held-out accuracy at every length, 200
sources each, both shipped models). ``--quick``: 60 steps of 32 (a smoke run, no goal).

Goal (issue 26): each training within 60 s on this machine's CPU.
"""

from __future__ import annotations

import time

from .common import Row

GROUP = "toy"
ORDER = 35
GOAL_S = 60.0


def run(quick: bool = False) -> list[Row]:
    from attention_lab.toy import experiments
    from attention_lab.toy.model import ToyConfig
    from attention_lab.toy.train import TrainConfig, train

    tc = TrainConfig(steps=60, batch=32) if quick else TrainConfig()
    lo, hi = experiments.BOTTLENECK_LENGTHS
    seconds, cpu = {}, {}
    for context in ("attention", "final_state"):
        c0 = time.process_time()
        _, record = train(ToyConfig(context=context, min_len=lo, max_len=hi), tc, progress=False,
                          evaluate_heldout=False)
        seconds[context], cpu[context] = record["train_seconds"], time.process_time() - c0
    budget = f"{tc.steps} steps of {tc.batch}"
    rows = [Row(GROUP, f"train the attention model, sources {lo}-{hi}, {budget} (CPU "
                       f"{cpu['attention']:.1f} s)", seconds["attention"], "s",
                goal="" if quick else f"<= {GOAL_S:g} s",
                ok=None if quick else seconds["attention"] <= GOAL_S),
            Row(GROUP, f"train the final-state-only model, same task and budget (CPU "
                       f"{cpu['final_state']:.1f} s)", seconds["final_state"], "s",
                seconds["attention"], "the attention model",
                goal="" if quick else f"<= {GOAL_S:g} s",
                ok=None if quick else seconds["final_state"] <= GOAL_S)]
    models = experiments.bottleneck_models()
    t0 = time.perf_counter()
    table = experiments.accuracy_by_length(models)
    t = time.perf_counter() - t0
    rows.append(Row(GROUP, f"accuracy_by_length of the shipped pair ({len(table['length'])} "
                           f"lengths x {table['n']} sources x 2 models)", t, "s", goal="reported"))
    return rows
