"""Core attention: the torch paths against a plain masked softmax and against torch SDPA, the numpy
reference, the paths' accuracy against SDPA, and the import time of the package."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys

from .common import Row, interleaved_medians, median_time

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


def plain_attention(Q, K, V, mask, scale):
    """The baseline: a plain masked ``softmax(Q K^T / t) V`` that also returns the weights (no
    checks, no all-masked-row policy, no low-precision handling)."""
    import torch

    scores = torch.matmul(Q, K.transpose(-2, -1)) * scale          # (B, H, T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))          # (B, H, T, S)
    weights = torch.softmax(scores, dim=-1)                        # (B, H, T, S)
    return torch.matmul(weights, V), weights                       # (B, H, T, D), (B, H, T, S)


def run(quick: bool = False) -> list[Row]:
    import torch
    import torch.nn.functional as F

    from attention_lab import _validate, attend
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
        sdpa_call = lambda: F.scaled_dot_product_attention(  # noqa: E731
            Q, K, V, attn_mask=m, scale=scale)
        with torch.inference_mode():
            # the goal's pair on its own, many times: interleaved with the heavier calls below,
            # their memory traffic (and numpy's BLAS threads) made this ratio swing by +-50 %
            pair = interleaved_medians({
                "sdpa": sdpa_call,
                "fused": lambda: attention(Q, K, V, mask=m, scale=scale, need_weights=False),
                "unchecked": lambda: attention(Q, K, V, mask=m, scale=scale, need_weights=False,
                                               check_finite=False),
            }, repeat=repeat * 4)
            t = interleaved_medians({
                "sdpa": sdpa_call,
                "plain": lambda: plain_attention(Q, K, V, m, scale),
                "explicit": lambda: attention(Q, K, V, mask=m, scale=scale),
                "scan": lambda: _validate.finite_tensors(Q=Q, K=K, V=V),
            }, repeat=repeat * 2)
        # numpy alone, after the torch calls: its BLAS threads keep spinning after a call and
        # slowed whichever torch call came next
        t["numpy"] = median_time(lambda: attend(Qn, Kn, Vn, mask=mn, scale=scale), repeat=repeat)
        sdpa = t["sdpa"]
        rows += [
            Row(GROUP, f"plain masked softmax(QK^T/t) V with weights ({label}), {case}",
                t["plain"], "s", sdpa, "SDPA", "reported"),
            Row(GROUP, f"torch attention, weights returned ({label})", t["explicit"], "s",
                t["plain"], "plain", "<= 1.3x plain", t["explicit"] / t["plain"] <= 1.3),
            Row(GROUP, f"torch attention, need_weights=False ({label}; measured alone with SDPA)",
                pair["fused"], "s", pair["sdpa"], "SDPA", "<= 1.03x SDPA",
                pair["fused"] / pair["sdpa"] <= 1.03),
            Row(GROUP, "the same with check_finite=False (no NaN/inf check of inputs or result)",
                pair["unchecked"], "s", pair["sdpa"], "SDPA", "<= 1.03x SDPA",
                pair["unchecked"] / pair["sdpa"] <= 1.03),
            Row(GROUP, f"the NaN/inf scan of Q, K and V alone ({label})", t["scan"], "s", sdpa,
                "SDPA", "reported"),
            Row(GROUP, f"numpy attend reference ({label})", t["numpy"], "s", sdpa, "SDPA",
                "reported"),
        ]
    rows += _accuracy(Q, K, V, mask, scale)
    imp, heavy = _import_time(3 if quick else 11)
    rows.append(Row(GROUP, "import attention_lab (fresh process, median)", imp, "s",
                    goal="<= 0.3 s, no torch/matplotlib/ipywidgets", ok=imp <= 0.3 and not heavy))
    return rows


def _accuracy(Q, K, V, mask, scale) -> list[Row]:
    """Both torch paths against SDPA at the benchmark's size: max |difference| of the context."""
    import torch
    import torch.nn.functional as F

    from attention_lab.tensor import attention

    rows = []
    for dtype, tol in ((torch.float32, 1e-6), (torch.float64, 1e-12)):
        q, k, v = Q.to(dtype), K.to(dtype), V.to(dtype)
        worst = 0.0
        with torch.inference_mode():
            for m in (None, mask):
                ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=scale)
                for need in (True, False):
                    out = attention(q, k, v, mask=m, scale=scale, need_weights=need).context
                    worst = max(worst, float((out - ref).abs().max()))
        name = str(dtype).replace("torch.", "")
        rows.append(Row(GROUP, f"largest difference of the context from SDPA, {name} (both "
                               f"paths, with and without the mask)",
                        worst, "", goal=f"<= {tol:g}", ok=worst <= tol))
    return rows
