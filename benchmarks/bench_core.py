"""Core attention: numpy reference and torch path against torch SDPA; import time of the package."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys

from .common import Row, interleaved_medians

GROUP = "core"
ORDER = 10


def _import_time(repeat: int) -> tuple[float, bool]:
    code = ("import time, sys; t = time.perf_counter(); import attention_lab; "
            "print(time.perf_counter() - t, 'torch' in sys.modules or 'matplotlib' in sys.modules "
            "or 'ipywidgets' in sys.modules)")
    times, heavy = [], False
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        times.append(float(out[0]))
        heavy |= out[1] == "True"
    return statistics.median(times), heavy


def run(quick: bool = False) -> list[Row]:
    import numpy as np
    import torch
    import torch.nn.functional as F

    from attention_lab import attend
    from attention_lab.tensor import attention

    torch.manual_seed(0)
    B, H, T, S, D = 8, 4, 64, 512, 64
    Q, K, V = (torch.randn(B, H, n, D) for n in (T, S, S))
    lengths = torch.randint(S // 2, S + 1, (B,))
    mask = (torch.arange(S) < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)
    scale = 1 / math.sqrt(D)
    Qn, Kn, Vn, maskn = Q.numpy(), K.numpy(), V.numpy(), mask.numpy()
    repeat = 5 if quick else 31
    case = f"B={B} H={H} T={T} S={S} D={D} float32"
    rows = []
    for label, m, mn in (("no mask", None, None), ("padding mask", mask, maskn)):
        sdpa_call = lambda: F.scaled_dot_product_attention(Q, K, V, attn_mask=m, scale=scale)  # noqa: E731
        with torch.inference_mode():
            # the goal's pair on its own, many times: interleaved with the heavier calls below,
            # their memory traffic (and numpy's BLAS threads) made this ratio swing by +-50 %
            pair = interleaved_medians({
                "sdpa": sdpa_call,
                "fused": lambda: attention(Q, K, V, mask=m, scale=scale, need_weights=False),
            }, repeat=repeat * 4)
            t = interleaved_medians({
                "sdpa": sdpa_call,
                "explicit": lambda: attention(Q, K, V, mask=m, scale=scale),
                "numpy": lambda: attend(Qn, Kn, Vn, mask=mn, scale=scale),
            }, repeat=repeat)
        sdpa = t["sdpa"]
        rows += [
            Row(GROUP, f"torch attention, weights returned ({label}), {case}", t["explicit"], "s",
                sdpa, "SDPA", "reported"),
            Row(GROUP, f"torch attention, need_weights=False ({label}; pair measured alone)",
                pair["fused"], "s", pair["sdpa"], "SDPA", "<= 1.1x SDPA",
                pair["fused"] / pair["sdpa"] <= 1.1),
            Row(GROUP, f"numpy attend reference ({label})", t["numpy"], "s", sdpa, "SDPA",
                "reported"),
        ]
    imp, heavy = _import_time(3 if quick else 11)
    rows.append(Row(GROUP, "import attention_lab (fresh process, median)", imp, "s",
                    goal="<= 0.3 s, no torch/matplotlib/ipywidgets", ok=imp <= 0.3 and not heavy))
    return rows
