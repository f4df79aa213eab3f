"""Shared helpers for the benchmark modules: timing, peak memory, and the table row format."""

from __future__ import annotations

import gc
import random
import statistics
import time
from dataclasses import dataclass


@dataclass
class Row:
    """One line of the benchmark table.

    ``value`` is the measured figure of ``what`` in ``unit``; ``baseline`` is the comparison measured
    in the same run (or None); ``ratio`` = value / baseline; ``goal`` a human-readable target and
    ``ok`` whether it was met (None when there is no goal).
    """

    group: str
    what: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_what: str = ""
    goal: str = ""
    ok: bool | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        return self.value / self.baseline


def median_time(fn, *, repeat: int = 21, warmup: int = 3, number: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeat`` runs (each of ``number`` calls)."""
    for _ in range(warmup):
        fn()
    gc.collect()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def interleaved_medians(fns: dict, *, repeat: int = 21, warmup: int = 3, seed: int = 0) -> dict:
    """Median time of each function, measured interleaved so that all see the same machine load,
    in an order shuffled each round (seeded) so that no function always runs right after the same
    one, whose memory traffic it would inherit (a fixed rotation keeps each neighbour: the scan
    row ran right after the weights-returning path in every round but one); returns
    {name: seconds}."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    items = list(fns.items())
    rng = random.Random(seed)
    gc.collect()
    for _ in range(repeat):
        rng.shuffle(items)
        for name, fn in items:
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}
