"""Batched, differentiable attention in torch: ``Q`` (..., T, D_k), ``K`` (..., S, D_k),
``V`` (..., S, D_v), e.g. (B, T, D) or (B, H, T, D).

Chapter, Level 3, *Attention has a compact tensor form*:

    scores  = scale * Q K^T                    (..., T, S)
    weights = softmax(scores / tau, dim=-1)    over eligible keys only
    context = weights V                        (..., T, D_v)

The same conventions as the numpy reference (:func:`attention_lab.attend`): boolean masks with
True = eligible that broadcast to (..., T, S); ``lengths`` one per batch item; softmax over the key
axis; all-masked rows follow ``empty`` (default ``"zeros"``: zero weights, zero context, zero
gradients, no NaN). Every argument is checked by :mod:`attention_lab._validate`, the checks the
numpy path and streaming run too.

Scaling: ``scale`` defaults to 1 (the chapter's unscaled dot product). ``torch.nn.functional.
scaled_dot_product_attention`` defaults to ``1/sqrt(D_k)``; pass ``scale="sqrt_dk"`` to match it.

Eligibility comes from the mask only (``mask``, ``lengths``, ``is_causal``), never from a score's
value (Level 3, *Masked softmax requires a stable fill value*): masked scores become ``-inf`` in
the working dtype, so masked weights are exactly 0 and an eligible key keeps its weight whatever
its score. A row with no eligible key gets a finite softmax that is then replaced by the policy's
zeros (or NaN), so neither its values nor its gradients are ever NaN.

Low precision (Level 4, *Score scale, dtype, and masking affect numerical behaviour*): float16 and
bfloat16 inputs are computed in float32 (scores, softmax and the weighted sum, as SDPA's CPU kernels
do) and the weights and context are cast back to the input dtype. So a score beyond float16's
range, a key whose score is -65504 or a temperature of 1e-4 give SDPA's answer, not an overflow.

Non-finite inputs: NaN or +-inf anywhere in Q, K or V raises ``ValueError`` naming the tensor
(the numpy reference's rule), whether or not the value could reach the output. The scan is one read
of the inputs (12-17 % of SDPA's time at the size of ``python -m benchmarks.run core``).
A context that is not finite although the inputs are (scores beyond the working dtype after
``scale / temperature``) raises ``ValueError`` naming ``scale`` and ``temperature``.
``check_finite=False`` skips both checks, as in ``scipy.linalg``, for inputs known to be finite: a
NaN or inf may then give a wrong answer without an error (SDPA returns zeros for a NaN query), and
an overflow a NaN context.

torch is imported only when this module is imported, never by ``import attention_lab``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch

from . import _validate as validate
from . import masks


class TensorAttention(NamedTuple):
    """``context`` (..., T, D_v); ``weights`` (..., T, S) or None; ``mask`` (..., T, S) or None."""

    context: torch.Tensor
    weights: torch.Tensor | None
    mask: torch.Tensor | None


def mask_fill(dtype: torch.dtype) -> float:
    """The most negative finite value of ``dtype``: the fill a kernel that cannot use ``-inf``
    writes at masked scores (float16: -65504; -1e9 is not representable there). This module masks
    with ``-inf`` in its float32/float64 working dtype and decides eligibility from the mask."""
    return torch.finfo(dtype).min


def padding_mask(lengths, S: int, device=None) -> torch.Tensor:
    """``lengths.shape + (S,)`` bool tensor, True where ``j < lengths[b]``.

    Chapter, Level 2, *Masks define which keys are eligible*. Use ``[:, None, :]`` for scores
    (B, T, S), or pass ``lengths=`` to :func:`attention`, which puts them on the batch axis.
    """
    return torch.from_numpy(masks.padding_mask(lengths, S)).to(device)  # lengths.shape + (S,)


def causal_mask(T: int, S: int | None = None, *, align: str = "upper_left", device=None):
    """(T, S) bool tensor; ``upper_left`` = SDPA's ``is_causal`` (``tril(ones(T, S))``).

    Chapter, Level 2, *Masks define which keys are eligible*: key j is eligible for query t when
    ``j <= t + offset`` (offset 0 upper-left, ``S - T`` lower-right).
    """
    return torch.from_numpy(masks.causal_mask(T, S, align=align)).to(device)  # (T, S)


def check_call(Q, K, V, *, scale, temperature, empty, is_causal, causal_align,
               check_finite=True) -> float:
    """The checks of every torch path (this module and streaming); returns ``scale / temperature``.

    Q, K, V: tensors of one floating dtype, at least 2-D, D_k and S consistent, batch dimensions
    that broadcast, every element finite (unless ``check_finite=False``). Scalars and policies
    through :mod:`._validate`.
    """
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}; "
                            f"use attention_lab.attend for numpy arrays")
        if not x.dtype.is_floating_point:
            raise TypeError(f"{name} has dtype {x.dtype}; expected a floating dtype")
        if x.dim() < 2:
            raise ValueError(f"{name} has shape {validate.shape_str(x.shape)}; "
                             f"expected (..., length, width)")
    if not (Q.dtype == K.dtype == V.dtype):
        raise TypeError(f"Q, K, V must share one dtype, got {Q.dtype}, {K.dtype}, {V.dtype}")
    validate.key_set("K", K.shape)
    validate.same_width("Q", Q.shape, "K", K.shape)
    validate.one_value_per_key("K", K.shape, "V", V.shape)
    validate.batch_dims(Q=Q.shape, K=K.shape, V=V.shape)
    if isinstance(scale, str) and scale == "sqrt_dk":
        scale = 1.0 / math.sqrt(Q.shape[-1])
    factor = validate.temperature(scale, "scale") / validate.temperature(temperature, "temperature")
    validate.empty_policy(empty)
    validate.flag(is_causal, "is_causal")
    validate.causal_align(causal_align, "causal_align")
    if validate.flag(check_finite, "check_finite"):
        validate.finite_tensors(Q=Q, K=K, V=V)
    return factor


def checked_mask(mask, scores_shape, device):
    """The user's boolean mask (True = eligible) as a tensor on ``device``, or None; raises when it
    is not boolean or does not broadcast to ``scores_shape`` (..., T, S) without adding dims."""
    if mask is None:
        return None
    m = validate.bool_mask(mask)
    validate.mask_shape(m.shape, scores_shape)
    if not isinstance(m, torch.Tensor):
        m = torch.from_numpy(np.ascontiguousarray(m))                # (..., T|1, S|1)
    return m.to(device)                                              # (..., T|1, S|1)


def checked_padding(lengths, scores_shape, device):
    """The padding mask of ``lengths`` (one per batch item), shaped (B, 1.., 1, S) to broadcast
    over ``scores_shape`` (batch..., T, S) with the lengths on the leading batch axes, or None."""
    if lengths is None:
        return None
    *batch, _, S = scores_shape
    L = torch.from_numpy(validate.lengths(lengths, S, batch_shape=batch)).to(device)  # (B[, H])
    pad = torch.arange(S, device=device) < L[..., None]                        # (B[, H], S)
    return pad.view(validate.lengths_view(pad.shape, len(batch)))              # (B, 1.., 1, S)


def eligibility(Q, K, *, mask=None, lengths=None, is_causal=False, causal_align="upper_left"):
    """The combined boolean mask (broadcastable to (..., T, S)) or None when every key is eligible.

    Chapter, Level 2, *Masks define which keys are eligible*: ``mask & (j < lengths[b]) &
    causal`` (with ``lengths`` on the batch items, never on the heads).
    """
    if mask is None and lengths is None and not validate.flag(is_causal, "is_causal"):
        return None  # every key is eligible
    T, S = Q.shape[-2], K.shape[-2]
    scores_shape = validate.batch_dims(Q=Q.shape, K=K.shape) + (T, S)
    out = checked_mask(mask, scores_shape, Q.device)                 # (..., T|1, S|1)
    pad = checked_padding(lengths, scores_shape, Q.device)           # (B, 1.., 1, S)
    if pad is not None:
        out = pad if out is None else out & pad
    if validate.flag(is_causal, "is_causal"):
        # from indices, as streaming does: causal_mask() refuses T=0, which attention accepts
        offset = 0 if validate.causal_align(causal_align, "causal_align") == "upper_left" \
            else S - T
        rows = torch.arange(T, device=Q.device)[:, None]                # (T, 1)
        c = torch.arange(S, device=Q.device) <= rows + offset            # (T, S)
        out = c if out is None else out & c
    return out


def attention(Q, K, V, *, mask=None, lengths=None, is_causal: bool = False,
              causal_align: str = "upper_left", scale: float | str = 1.0,
              temperature: float = 1.0, empty: str = "zeros",
              need_weights: bool = True, check_finite: bool = True) -> TensorAttention:
    """Masked attention over the last two axes; see the module docstring for the policies.

    Chapter, Level 3, *Attention has a compact tensor form*: ``weights = softmax(scale Q K^T /
    tau)`` over the eligible keys (axis -1), ``context = weights V``.

    ``need_weights=False`` computes the same result through
    ``torch.nn.functional.scaled_dot_product_attention`` (a fused kernel that never forms the
    weights; on the CPU it computes float16/bfloat16 in float32 too) when the policy allows
    (``empty="zeros"``); ``weights`` is then ``None``.
    """
    factor = check_call(Q, K, V, scale=scale, temperature=temperature, empty=empty,
                        is_causal=is_causal, causal_align=causal_align, check_finite=check_finite)
    m = eligibility(Q, K, mask=mask, lengths=lengths, is_causal=is_causal,
                    causal_align=causal_align)                       # (..., T|1, S|1) or None

    if not validate.flag(need_weights, "need_weights") and empty == "zeros":
        attn_mask = m                                                # (..., T|1, S|1)
        if m is not None and m.dim() < 2:  # SDPA indexes a mask's dim -2
            attn_mask = m.view((1,) * (2 - m.dim()) + m.shape)       # (1, S) or (1, 1)
        context = torch.nn.functional.scaled_dot_product_attention(
            Q, K, V, attn_mask=attn_mask, scale=factor)              # (..., T, D_v)
        if check_finite:
            check_output(context, factor, empty)
        return TensorAttention(context, None, m)

    work = Q.dtype if Q.dtype in (torch.float32, torch.float64) else torch.float32
    # (..., T, D_k), (..., S, D_k), (..., S, D_v): no copy unless low precision
    q, k, v = (x.to(work) for x in (Q, K, V))
    scores = torch.matmul(q, k.transpose(-2, -1))                    # (..., T, S)
    if factor != 1.0:
        scores = scores.mul_(factor)                                 # (..., T, S)
    empty_rows = None
    if m is not None:
        empty_rows = ~m.any(dim=-1, keepdim=True)                    # (..., T|1, 1)
        if bool(empty_rows.any()):
            # rows without an eligible key get a finite softmax here, replaced by the policy below
            keep = m | empty_rows                                    # (..., T|1, S|1)
        else:
            keep, empty_rows = m, None
        scores = scores.masked_fill_(~keep, -math.inf)               # (..., T, S)
    weights = torch.softmax(scores, dim=-1)                          # (..., T, S)
    if empty_rows is not None:
        if empty == "raise":
            n = int(empty_rows.expand(weights.shape[:-1] + (1,)).sum())
            raise ValueError(f"{n} row(s) have no eligible key (all masked); pass "
                             f"empty='zeros' or empty='nan' to allow them")
        fill = 0.0 if empty == "zeros" else math.nan
        weights = weights.masked_fill(empty_rows, fill)              # (..., T, S)
    context = torch.matmul(weights, v)                               # (..., T, D_v)
    if work != Q.dtype:
        # back to float16/bfloat16
        weights, context = weights.to(Q.dtype), context.to(Q.dtype)  # (..., T, S), (..., T, D_v)
    if check_finite:
        check_output(context, factor, empty,
                     None if empty_rows is None else (lambda: empty_rows))
    return TensorAttention(context, weights if need_weights else None, m)


def check_output(context, factor: float, empty: str, empty_rows=None) -> None:
    """Raise when the context holds NaN or inf although the inputs were finite (checked before):
    the scores overflowed the working dtype after ``scale / temperature``. Under ``empty="nan"``
    the rows without an eligible key may be NaN: ``empty_rows`` is a callable returning their
    boolean (..., T, 1) marker, called only when needed."""
    # Fast path: a finite sum means every element is finite (NaN and inf propagate into a sum);
    # about 15x cheaper than isfinite().all(). A sum that overflows falls through to the
    # element-wise check below.
    wide = torch.float64 if context.dtype == torch.float64 else torch.float32
    if math.isfinite(float(context.detach().sum(dtype=wide))):
        return
    finite = torch.isfinite(context)                                 # (..., T, D_v)
    if bool(finite.all()):
        return
    if empty == "nan" and empty_rows is not None and bool((finite | empty_rows()).all()):
        return
    raise ValueError(f"the context is not finite: the scores (or the weighted sum) overflowed "
                     f"the working dtype after scaling by scale / temperature = {factor:g}; use a "
                     f"larger temperature or smaller inputs")
