"""Streaming attention: the same result as materialised attention without ever forming T x S.

Materialised attention computes all T x S scores, a softmax over them and then the weighted sum.
Streaming attention walks over the keys in chunks of ``chunk_size`` and keeps, per query row, only
three running quantities (the online softmax of Milakov & Gimelshein 2018, the recurrence inside
FlashAttention):

    m   running maximum of the scores seen so far           (..., T, 1)
    l   running sum of exp(score - m)                         (..., T, 1)
    acc running sum of exp(score - m) * value                (..., T, D_v)

For the next chunk with scores ``s`` (..., T, C) and values ``V_c`` (C, D_v):

    m_new = max(m, max_j s_j)
    p     = exp(s - m_new)                  (masked keys: exp(-inf) = 0)
    l     = l * exp(m - m_new) + sum_j p_j
    acc   = acc * exp(m - m_new) + p V_c

and at the end ``context = acc / l``. The rescaling by ``exp(m - m_new)`` keeps every exponent
<= 0, so nothing overflows, and the result equals softmax-then-sum exactly (in exact arithmetic).
Peak extra memory is O(T * chunk_size) instead of O(T * S).

Guard: a row whose first chunks are all masked has ``m = -inf``; ``exp(-inf - (-inf))`` would be
NaN, so the shift uses 0 wherever the running maximum is still -inf (those rows have ``l = 0`` and
``acc = 0``, and stay so until an eligible key arrives). Whether a row has an eligible key is
tracked from the mask alone, chunk by chunk, never from a score's value: a row that never sees an
eligible key follows ``empty=`` exactly as :func:`attention_lab.tensor.attention` (``"zeros"``,
default: zero context, zero gradient; ``"nan"``; ``"raise"``), and an eligible row whose scores all
overflowed to -inf is reported, not returned as zeros.

Policies shared with :func:`attention_lab.tensor.attention`: float16 and bfloat16 are computed in
float32 (each chunk of K and V is cast as it is read) and the context is cast back; NaN or +-inf
anywhere in Q, K or V raises ``ValueError`` naming the tensor, also in chunks no row may see; every
argument goes through the checks of :mod:`attention_lab._validate`.

Conventions (the same as :func:`attention_lab.tensor.attention`): ``mask`` is bool with True =
eligible and broadcasts to (..., T, S) without adding dimensions; ``lengths`` adds a padding mask
``j < lengths[b]``; ``is_causal`` with ``causal_align="upper_left"`` (SDPA's ``is_causal``,
``tril(ones(T, S))``) or ``"lower_right"``; ``scale`` defaults to 1 (the chapter's unscaled dot
product; ``"sqrt_dk"`` gives SDPA's default); ``temperature`` divides the scores. Padding and causal
masks are built per chunk from indices, never as a T x S tensor; chunks that no row may see
(beyond every length, or above the causal diagonal) are skipped.

Gradients flow through the loop by autograd (each chunk's intermediates are kept for the backward
pass, so the memory saving is for inference; FlashAttention's recomputing backward is not
implemented here).
"""

from __future__ import annotations

import math

import torch

from . import _validate as validate
from . import tensor


def streaming_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, *,
                        chunk_size: int | None = None, mask=None, lengths=None,
                        is_causal: bool = False, causal_align: str = "upper_left",
                        scale: float | str = 1.0, temperature: float = 1.0,
                        empty: str = "zeros", return_logsumexp: bool = False,
                        check_finite: bool = True):
    """Attention context (..., T, D_v) computed chunk by chunk over the keys.

    Chapter, Level 4, *Cost follows the query-key access pattern* ("global attention forms or
    streams through T x S scores"): the online softmax of the module docstring, equal to
    ``softmax(scale Q K^T / tau) V`` of Level 3, *Attention has a compact tensor form*.

    ``chunk_size`` keys per chunk (any integer type); ``None`` picks :func:`default_chunk_size`
    (about 2**19 scores, 2 MiB in float32, per chunk: few, large operations, and a working set
    independent of S). ``return_logsumexp=True`` also returns the log of the softmax normaliser per
    row, ``logsumexp_j(score_j)`` over the eligible keys, shape (..., T) (``-inf`` for a row without
    eligible keys), in the working dtype (float32 for float16/bfloat16 inputs: it may exceed
    float16's range). ``check_finite=False`` skips the NaN/inf checks of Q, K, V and of the
    result (see :mod:`attention_lab.tensor`).
    """
    factor = tensor.check_call(Q, K, V, scale=scale, temperature=temperature, empty=empty,
                           is_causal=is_causal, causal_align=causal_align,
                           check_finite=check_finite)
    T_, S = Q.shape[-2], K.shape[-2]
    chunk_size = default_chunk_size(T_, S) if chunk_size is None else \
        validate.count(chunk_size, "chunk_size")
    validate.flag(return_logsumexp, "return_logsumexp")

    batch = validate.batch_dims(Q=Q.shape, K=K.shape, V=V.shape)
    scores_shape = validate.batch_dims(Q=Q.shape, K=K.shape) + (T_, S)
    # lengths and causal masks are built per chunk; only the user's mask is given whole
    m_full = tensor.checked_mask(mask, scores_shape, Q.device)             # (..., T|1, S|1)
    if m_full is not None and m_full.dim() == 0:
        m_full = m_full.view(1)                                         # (1,): sliced per chunk
    pad = tensor.checked_padding(lengths, scores_shape, Q.device)           # (B, 1.., 1, S)
    offset = 0 if causal_align == "upper_left" else S - T_
    stop = S   # keys at or beyond ``stop`` are ineligible for every row: never read
    if pad is not None:
        stop = min(stop, int(pad.sum(-1).max()) if pad.numel() else 0)
    if is_causal:
        stop = min(stop, max(0, T_ + offset))
    any_mask = m_full is not None or pad is not None or is_causal

    # low precision: computed in float32 (as tensor.attention and SDPA's CPU kernels), cast back
    work = Q.dtype if Q.dtype in (torch.float32, torch.float64) else torch.float32
    dev = Q.device
    run_m = torch.full(batch + (T_, 1), -math.inf, dtype=work, device=dev)   # (..., T, 1)
    # the accumulator carries one extra column: sum_j p_j (the running normaliser l) comes out of
    # the same matmul as sum_j p_j v_j, because every value gets a trailing 1
    acc = torch.zeros(batch + (T_, V.shape[-1] + 1), dtype=work, device=dev)  # (..., T, D_v + 1)
    # rows that have an eligible key, from the mask alone (never from a score's value)
    seen = torch.tensor(not any_mask, device=dev)                          # () -> (..., T|1, 1)
    Qs = Q.to(work)                                                         # (..., T, D_k)
    Qs = Qs * factor if factor != 1.0 else Qs  # scale the (small) queries, not every score
    rows = torch.arange(T_, device=dev)[:, None]                            # (T, 1)
    zero = torch.zeros((), dtype=work, device=dev)                         # ()

    for s0 in range(0, stop, chunk_size):
        s1 = min(s0 + chunk_size, S)
        Kc = K[..., s0:s1, :].to(work)                                      # (..., C, D_k)
        Vc = V[..., s0:s1, :].to(work)                                      # (..., C, D_v)
        Vc = torch.nn.functional.pad(Vc, (0, 1), value=1.0)                 # (..., C, D_v + 1)
        s = torch.matmul(Qs, Kc.transpose(-2, -1))                          # (..., T, C)
        if any_mask:
            keep = None                                                     # (..., T|1, C|1)
            if m_full is not None:
                keep = m_full[..., s0:s1] if m_full.shape[-1] != 1 else m_full   # (..., T|1, C|1)
            if pad is not None:
                p_c = pad[..., s0:s1]                                       # (B, 1.., 1, C)
                keep = p_c if keep is None else keep & p_c
            if is_causal:
                c_c = torch.arange(s0, s1, device=dev)[None, :] <= rows + offset   # (T, C)
                keep = c_c if keep is None else keep & c_c
            seen = seen | keep.any(dim=-1, keepdim=True)                    # (..., T|1, 1)
            s = s.masked_fill_(~keep, -math.inf)                            # (..., T, C)
        # the shift m is a constant for autograd (detached): the result does not depend on it,
        # so the gradient is exact, and the in-place steps below leave nothing autograd saved
        new_m = torch.maximum(run_m, s.detach().amax(dim=-1, keepdim=True))  # (..., T, 1)
        # guard: rows that have seen no eligible key yet keep m = -inf; shift them by 0 instead
        safe = torch.where(torch.isneginf(new_m), zero, new_m)              # (..., T, 1)
        p = s.sub_(safe).exp_()                                             # (..., T, C)
        acc = acc * torch.exp(run_m - safe) + torch.matmul(p, Vc)           # (..., T, D_v + 1)
        run_m = new_m
        del s, p

    run_l = acc[..., -1:]                                                   # (..., T, 1)
    acc = acc[..., :-1]                                                     # (..., T, D_v)
    empty_rows = ~seen.expand(batch + (T_, 1))                              # (..., T, 1)
    # an eligible row with l = 0 had every eligible score at -inf (an overflow): 0/0 = NaN below,
    # reported by the output check; an empty row divides by 1 and stays 0
    one = torch.ones((), dtype=work, device=dev)                           # ()
    context = acc / torch.where(empty_rows, one, run_l)                     # (..., T, D_v)
    if bool(empty_rows.any()):
        if empty == "raise":
            n = int(empty_rows.sum())
            raise ValueError(f"{n} row(s) have no eligible key (all masked); pass "
                             f"empty='zeros' or empty='nan' to allow them")
        if empty == "nan":
            context = context.masked_fill(empty_rows, float("nan"))        # (..., T, D_v)
    context = context.to(Q.dtype)                                           # (..., T, D_v)
    if check_finite:
        tensor.check_output(context, factor, empty, lambda: empty_rows)
    if return_logsumexp:
        lse = (run_m + torch.log(run_l)).squeeze(-1)                        # (..., T)
        return context, lse
    return context


def default_chunk_size(T: int, S: int, budget: int = 2 ** 19) -> int:
    """Keys per chunk so that one chunk of scores holds about ``budget`` elements (at least 128
    keys, at most S): T=256 -> 2048 keys (2 MiB of float32 scores)."""
    return int(max(1, min(S, max(128, budget // max(1, T)))))


def compare(sizes=(256, 1024, 4096, 16384), *, T: int = 64, D: int = 32,
            chunk_size: int | None = 256, repeat: int = 5, seed: int = 0,
            tol: float = 1e-4) -> dict:
    """Materialised attention, streaming attention and SDPA side by side at small sizes.

    ``chunk_size`` is small by default so that several chunks fit even at the smallest size.
    Returns ``{"sizes", "max_diff" (streaming vs materialised), "agrees" (max_diff <= tol, per
    size), "tol", "seconds" {method: [...]}, "peak_bytes" {method: [...]}, "largest_numel"
    {method: [...]}}``. ``max_diff`` is float32 round-off: it depends on the CPU's kernels and
    thread count, so print the ``agrees`` verdict, not the raw figure. Times are medians of
    ``repeat`` interleaved runs on one thread (they vary between runs and machines; ``repeat=0``
    times nothing and gives ``"seconds": None``); the memory figures are
    the peak of the tensors torch operators allocate (see :mod:`attention_lab._memory`),
    deterministic, and blind to scratch space inside fused kernels such as SDPA's. For the large
    sizes and the process's real peak memory, run ``python -m benchmarks.run streaming``.
    """
    import statistics
    import time

    from ._memory import tensor_memory
    from ._threads import single_thread

    fns = {
        "materialised": lambda q, k, v: tensor.attention(q, k, v).context,
        "streaming": lambda q, k, v: streaming_attention(q, k, v, chunk_size=chunk_size),
        "sdpa": lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                                 scale=1.0),
    }
    tol = validate.temperature(tol, "tol")
    repeat = validate.count(repeat, "repeat", allow_zero=True)
    out = {"sizes": list(sizes), "max_diff": [], "agrees": [], "tol": tol,
           "seconds": {k: [] for k in fns} if repeat else None,
           "peak_bytes": {k: [] for k in fns}, "largest_numel": {k: [] for k in fns}}
    g = torch.Generator().manual_seed(seed)
    with torch.inference_mode(), single_thread():
        for S in sizes:
            Q, K, V = (torch.randn(n, D, generator=g) for n in (T, S, S))  # (T, D), (S, D) x 2
            ref = fns["materialised"](Q, K, V)                               # (T, D)
            out["max_diff"].append(float((fns["streaming"](Q, K, V) - ref).abs().max()))
            out["agrees"].append(out["max_diff"][-1] <= tol)
            times = {k: [] for k in fns}
            for _ in range(repeat):
                for k, fn in fns.items():
                    t0 = time.perf_counter()
                    fn(Q, K, V)
                    times[k].append(time.perf_counter() - t0)
            for k, fn in fns.items():
                if repeat:
                    out["seconds"][k].append(statistics.median(times[k]))
                with tensor_memory() as mem:
                    fn(Q, K, V)
                out["peak_bytes"][k].append(mem.peak_bytes)
                out["largest_numel"][k].append(mem.largest_numel)
    return out
