"""Streaming (online-softmax) attention against materialised attention and torch SDPA.

Latency: median wall time, the three methods interleaved in this process (same load for all),
single-threaded (``torch.set_num_threads(1)``): on a shared 2-core machine a second OpenMP thread
that gets descheduled stalls every parallel region, which punishes the method with the most (small)
operations and turns the comparison into a measure of the neighbours' load. At the goal size the
latencies are also reported with torch's default thread count.
Peak extra memory: every (method, S) case runs once in a FRESH Python subprocess (single-threaded),
which creates the inputs, warms the kernels up on a small slice, reads its resident set size
(``VmRSS``), resets the kernel's peak-RSS counter (``echo 5 > /proc/self/clear_refs``), runs the full
call once and reads the peak (``VmHWM``); the difference is the memory the call needed beyond its
inputs (scores, weights, chunk buffers, allocator overhead, kernel workspaces: whatever became
resident). A fresh process per case keeps one case's peak from hiding another's. (``ru_maxrss`` is
not used: Linux carries it over from the parent across fork/exec, so a child of a large parent
reports the parent's peak.) Linux only.

Goal (issue 5) at T=256, S=262,144, D=64, float32: streaming's peak extra memory <= 1/20 of the
materialised path's, its time <= 1.5x.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .common import Row, interleaved_medians

GROUP = "streaming"
ORDER = 40
T, D = 256, 64
GOAL_S = 262_144
CHUNK = 0  # 0: streaming_attention's default (chunk_size=None, about 2**19 scores per chunk)
METHODS = ("materialised", "streaming", "sdpa")

_CHILD = r"""
import json, re, sys, time
import torch
method, T, S, D, chunk, threads = sys.argv[1], *map(int, sys.argv[2:7])
torch.set_num_threads(threads)
from attention_lab.tensor import attention
from attention_lab.streaming import streaming_attention
import torch.nn.functional as F
fns = {
    "materialised": lambda q, k, v: attention(q, k, v).context,
    "streaming": lambda q, k, v: streaming_attention(q, k, v, chunk_size=chunk or None),
    "sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=1.0),
}
fn = fns[method]

def status(field):
    return int(re.search(field + r":\s+(\d+) kB", open("/proc/self/status").read()).group(1)) * 1024

g = torch.Generator().manual_seed(0)
Q, K, V = (torch.randn(n, D, generator=g) for n in (T, S, S))
with torch.inference_mode():
    fn(Q[:8], K[:1024], V[:1024])  # load kernels, allocator pools
    rss0 = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak (VmHWM) to the current resident set size
    t0 = time.perf_counter()
    out = fn(Q, K, V)
    dt = time.perf_counter() - t0
    peak = status("VmHWM")
print(json.dumps({"peak_extra": peak - rss0, "rss_before": rss0, "seconds": dt,
                  "checksum": float(out.double().sum())}))
"""


def peak_memory(method: str, S: int, *, T_: int = T, D_: int = D, chunk: int = CHUNK,
                threads: int = 1) -> dict:
    """Run one case in a fresh subprocess; returns {"peak_extra": bytes, ...}."""
    root = Path(__file__).resolve().parent.parent
    env_path = str(root)
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = env_path + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out = subprocess.run([sys.executable, "-c", _CHILD, method, str(T_), str(S), str(D_),
                          str(chunk), str(threads)], capture_output=True, text=True, env=env,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"memory probe for {method} S={S} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> list[Row]:
    import torch
    import torch.nn.functional as F

    from attention_lab.streaming import default_chunk_size, streaming_attention
    from attention_lab.tensor import attention

    sizes = (16_384, GOAL_S) if quick else (4_096, 16_384, 65_536, GOAL_S)
    repeat = 3 if quick else 7
    rows: list[Row] = []
    mib = 1024 ** 2
    default_threads = torch.get_num_threads()
    fns = {
        "materialised": lambda q, k, v: attention(q, k, v),
        "streaming": lambda q, k, v: streaming_attention(q, k, v, chunk_size=CHUNK or None),
        "sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=1.0),
    }
    for S in sizes:
        g = torch.Generator().manual_seed(0)
        Q, K, V = (torch.randn(n, D, generator=g) for n in (T, S, S))
        at_goal = S == GOAL_S
        timings = {}
        try:
            for threads in ((1, default_threads) if at_goal and default_threads != 1 else (1,)):
                torch.set_num_threads(threads)
                with torch.inference_mode():
                    timings[threads] = interleaved_medians(
                        {name: (lambda f=f: f(Q, K, V)) for name, f in fns.items()},
                        repeat=repeat, warmup=1)
            with torch.inference_mode():
                ref = attention(Q, K, V).context
                out = streaming_attention(Q, K, V, chunk_size=CHUNK or None)
                diff = float((out - ref).abs().max())
        finally:
            torch.set_num_threads(default_threads)
        del Q, K, V, ref
        mem = {m: peak_memory(m, S)["peak_extra"] / mib for m in METHODS}
        case = f"T={T} S={S:,} D={D} float32"
        chunk = CHUNK or default_chunk_size(T, S)
        for threads, t in timings.items():
            label = "1 thread" if threads == 1 else f"{threads} threads"
            goal = at_goal and threads == 1
            rows += [
                Row(GROUP, f"materialised attention, latency ({label}), {case}",
                    t["materialised"], "s"),
                Row(GROUP, f"streaming (chunk {chunk}), latency ({label}), max abs diff {diff:.1e}",
                    t["streaming"], "s", t["materialised"], "materialised",
                    "<= 1.5x materialised" if goal else "",
                    t["streaming"] / t["materialised"] <= 1.5 if goal else None),
                Row(GROUP, f"torch SDPA, latency ({label})", t["sdpa"], "s", t["materialised"],
                    "materialised"),
            ]
        rows += [
            Row(GROUP, f"materialised, peak extra memory (fresh process), S={S:,}",
                mem["materialised"], "MiB"),
            Row(GROUP, "streaming, peak extra memory", mem["streaming"], "MiB",
                mem["materialised"], "materialised",
                "<= 1/20 of materialised" if at_goal else "",
                mem["streaming"] <= mem["materialised"] / 20 if at_goal else None),
            Row(GROUP, "torch SDPA, peak extra memory", mem["sdpa"], "MiB", mem["materialised"],
                "materialised"),
        ]
    return rows
