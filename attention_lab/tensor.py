"""Batched, differentiable attention in torch: ``Q`` (B[, H], T, D_k), ``K`` (B[, H], S, D_k),
``V`` (B[, H], S, D_v).

    scores  = scale * Q K^T                    (..., T, S)
    weights = softmax(scores / tau, dim=-1)    over eligible keys only
    context = weights V                        (..., T, D_v)

The same conventions as the numpy reference (:func:`attention_lab.attend`): boolean masks with
True = eligible that broadcast to (..., T, S); softmax over the key axis; all-masked rows follow
``empty`` (default ``"zeros"``: zero weights, zero context, zero gradients, no NaN).

Scaling: ``scale`` defaults to 1 (the chapter's unscaled dot product). ``torch.nn.functional.
scaled_dot_product_attention`` defaults to ``1/sqrt(D_k)``; pass ``scale=1/math.sqrt(D_k)`` (or
``scale="sqrt_dk"``) to match it.

Fill: masked scores are written as ``torch.finfo(dtype).min``, the most negative finite number of
the dtype (float16: -65504). It never overflows when cast, unlike -1e9 in float16. Masked weights
are then set to exactly 0 after the softmax, which also turns an all-masked row (uniform over the
fill) into zeros and blocks its gradient.

Non-finite inputs: the context is checked (one cheap pass over the output, not over K and V); if it
holds NaN or inf the call raises ``ValueError`` naming the input that is not finite. A NaN at a
masked key that cannot reach the output is not reported.

torch is imported only when this module is imported, never by ``import attention_lab``.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np
import torch

from ._validate import EMPTY_POLICIES, shape_str
from .masks import CAUSAL_ALIGNMENTS


class TensorAttention(NamedTuple):
    """``context`` (..., T, D_v); ``weights`` (..., T, S) or None; ``mask`` (..., T, S) or None."""

    context: torch.Tensor
    weights: torch.Tensor | None
    mask: torch.Tensor | None


def mask_fill(dtype: torch.dtype) -> float:
    """The fill written at masked scores: the most negative finite value of ``dtype``."""
    return torch.finfo(dtype).min


def padding_mask(lengths, S: int, device=None) -> torch.Tensor:
    """(B, S) bool tensor, True where ``j < lengths[b]``; use ``[:, None, :]`` for scores (B, T, S)."""
    lengths = torch.as_tensor(lengths, device=device)
    if lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise TypeError(f"lengths must be integers, got dtype {lengths.dtype}")
    if (lengths < 0).any() or (lengths > S).any():
        raise ValueError(f"lengths must lie in [0, S={S}], got {lengths.tolist()}")
    return torch.arange(S, device=lengths.device) < lengths[..., None]


def causal_mask(T: int, S: int | None = None, *, align: str = "upper_left", device=None):
    """(T, S) bool tensor; ``upper_left`` = SDPA's ``is_causal`` (``tril(ones(T, S))``)."""
    S = T if S is None else S
    if align not in CAUSAL_ALIGNMENTS:
        raise ValueError(f"align must be one of {CAUSAL_ALIGNMENTS}, got {align!r}")
    offset = 0 if align == "upper_left" else S - T
    return torch.ones(T, S, dtype=torch.bool, device=device).tril(diagonal=offset)


def _broadcast_shapes(*shapes) -> "torch.Size":
    """``torch.broadcast_shapes`` for plain shapes, in pure Python (about 10x cheaper: the call
    sits on every attention call's path). Raises ``RuntimeError`` as torch's does."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for shape in shapes:
        for i, n in enumerate(shape, start=ndim - len(shape)):
            if n != 1:
                if out[i] not in (1, n):
                    raise RuntimeError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
                out[i] = n
    return torch.Size(out)


def _check_inputs(Q, K, V):
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}; "
                            f"use attention_lab.attend for numpy arrays")
        if not x.dtype.is_floating_point:
            raise TypeError(f"{name} has dtype {x.dtype}; expected a floating dtype")
        if x.dim() < 2:
            raise ValueError(f"{name} has shape {shape_str(x.shape)}; expected (..., length, width)")
    if not (Q.dtype == K.dtype == V.dtype):
        raise TypeError(f"Q, K, V must share one dtype, got {Q.dtype}, {K.dtype}, {V.dtype}")
    if K.shape[-2] == 0:
        raise ValueError(f"K has shape {shape_str(K.shape)}: the key set is empty (S=0)")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q has width D_k={Q.shape[-1]} (shape {shape_str(Q.shape)}) but K has "
                         f"width {K.shape[-1]} (shape {shape_str(K.shape)}); they must match")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K has S={K.shape[-2]} keys (shape {shape_str(K.shape)}) but V has "
                         f"{V.shape[-2]} rows (shape {shape_str(V.shape)}); every key needs a value")
    try:
        _broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except RuntimeError:
        raise ValueError(f"batch dimensions of Q {shape_str(Q.shape[:-2])}, K "
                         f"{shape_str(K.shape[:-2])} and V {shape_str(V.shape[:-2])} do not "
                         f"broadcast") from None


def _scalar(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number > 0, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


def checked_mask(mask, scores_shape, device):
    """The user's boolean mask (True = eligible) as a tensor on ``device``, or None; raises when it
    is not boolean or does not broadcast to ``scores_shape`` (..., T, S) without adding dims."""
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        mask = torch.as_tensor(np.asarray(mask))
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask has dtype {mask.dtype}; expected torch.bool with True = eligible key. "
            f"A True = ignore mask (nn.MultiheadAttention's key_padding_mask) must be inverted "
            f"with ~mask; a float additive mask is not accepted here")
    T, S = scores_shape[-2:]
    ok = mask.dim() <= len(scores_shape)
    if ok:
        try:
            ok = _broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except RuntimeError:
            ok = False
    if not ok:
        raise ValueError(f"mask has shape {shape_str(mask.shape)} but the scores have shape "
                         f"{shape_str(scores_shape)} (T={T}, S={S}); a mask must broadcast "
                         f"to (..., T, S) without adding dimensions")
    return mask.to(device)


def checked_padding(lengths, scores_shape, device):
    """The padding mask of ``lengths`` shaped (..., 1, S) to broadcast over ``scores_shape``, or
    None; raises when there is not one length per batch item."""
    if lengths is None:
        return None
    pad = padding_mask(lengths, scores_shape[-1], device=device)[..., None, :]
    try:
        ok = (pad.dim() <= len(scores_shape)
              and _broadcast_shapes(pad.shape, scores_shape) == scores_shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"lengths has shape {shape_str(pad.shape[:-2])}; expected one length "
                         f"per batch item of the scores {shape_str(scores_shape)}")
    return pad


def eligibility(Q, K, *, mask=None, lengths=None, is_causal=False, causal_align="upper_left"):
    """The combined boolean mask (broadcast to (..., T, S)) or None when every key is eligible."""
    T, S = Q.shape[-2], K.shape[-2]
    scores_shape = _broadcast_shapes(Q.shape[:-2], K.shape[:-2]) + (T, S)
    out = checked_mask(mask, scores_shape, Q.device)
    pad = checked_padding(lengths, scores_shape, Q.device)
    if pad is not None:
        out = pad if out is None else out & pad
    if is_causal:
        c = causal_mask(T, S, align=causal_align, device=Q.device)
        out = c if out is None else out & c
    return out


def attention(Q, K, V, *, mask=None, lengths=None, is_causal: bool = False,
              causal_align: str = "upper_left", scale: float | str = 1.0,
              temperature: float = 1.0, empty: str = "zeros",
              need_weights: bool = True) -> TensorAttention:
    """Masked attention over the last two axes; see the module docstring for the conventions.

    ``need_weights=False`` computes the same result through
    ``torch.nn.functional.scaled_dot_product_attention`` (a fused kernel that never returns the
    weights) when the policy allows (``empty="zeros"``); ``weights`` is then ``None``.
    """
    _check_inputs(Q, K, V)
    if scale == "sqrt_dk":
        scale = 1.0 / math.sqrt(Q.shape[-1])
    scale = _scalar(scale, "scale")
    tau = _scalar(temperature, "temperature")
    if empty not in EMPTY_POLICIES:
        raise ValueError(f"empty must be one of {EMPTY_POLICIES}, got {empty!r}")
    m = eligibility(Q, K, mask=mask, lengths=lengths, is_causal=is_causal,
                    causal_align=causal_align)

    if not need_weights and empty == "zeros":
        context = torch.nn.functional.scaled_dot_product_attention(
            Q, K, V, attn_mask=m, scale=scale / tau)
        weights = None
    else:
        scores = torch.matmul(Q, K.transpose(-2, -1)) * (scale / tau)
        if m is None:
            weights = torch.softmax(scores, dim=-1)
        else:
            scores = scores.masked_fill(~m, mask_fill(scores.dtype))
            weights = torch.softmax(scores, dim=-1).masked_fill(~m, 0.0)
            empty_rows = ~m.any(dim=-1, keepdim=True)
            if empty_rows.any():
                if empty == "raise":
                    n = int(empty_rows.expand(weights.shape[:-1] + (1,)).sum())
                    raise ValueError(f"{n} row(s) have no eligible key (all masked); pass "
                                     f"empty='zeros' or empty='nan' to allow them")
                if empty == "nan":
                    weights = weights.masked_fill(empty_rows, float("nan"))
        context = torch.matmul(weights, V)
        if not need_weights:
            weights = None

    check_output(context, Q, K, V, empty,
                 None if m is None else (lambda: ~m.any(dim=-1, keepdim=True)))
    return TensorAttention(context, weights, m)


def check_output(context, Q, K, V, empty: str, empty_rows=None) -> None:
    """Raise when the context holds NaN or inf, naming the input that caused it (or the dtype's
    overflow). Under ``empty="nan"`` the rows without an eligible key may be NaN: ``empty_rows`` is
    a callable returning their boolean (..., T, 1) marker, called only when needed."""
    # Fast path: a finite sum means every element is finite (NaN and inf propagate into a sum);
    # about 15x cheaper than isfinite().all() on a typical context. A sum that overflows falls
    # through to the element-wise check below.
    wide = torch.float64 if context.dtype == torch.float64 else torch.float32
    if math.isfinite(float(context.detach().sum(dtype=wide))):
        return
    finite = torch.isfinite(context)
    if bool(finite.all()):
        return
    if empty == "nan" and empty_rows is not None and bool((finite | empty_rows()).all()):
        return
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} contains non-finite values (NaN or inf); inputs must be "
                             f"finite")
    raise ValueError(f"the context overflowed in {context.dtype} (scores too large for the dtype); "
                     f"use a wider dtype or smaller scale")


def attention_reference(Q, K, V, **kwargs) -> TensorAttention:
    """The numpy reference (:func:`attention_lab.attend`) on tensors, returned as float64 tensors.

    Used by tests to hold the torch path equal to the readable reference.
    """
    from .attention import attend

    is_causal = kwargs.pop("is_causal", False)
    align = kwargs.pop("causal_align", "upper_left")
    scale = kwargs.pop("scale", 1.0)
    m = eligibility(Q, K, mask=kwargs.pop("mask", None), lengths=kwargs.pop("lengths", None),
                    is_causal=is_causal, causal_align=align)
    res = attend(Q.detach().double().numpy(), K.detach().double().numpy(),
                 V.detach().double().numpy(), mask=None if m is None else m.numpy(),
                 scale=scale, **kwargs)
    return TensorAttention(torch.from_numpy(np.ascontiguousarray(res.context)),
                           torch.from_numpy(np.ascontiguousarray(res.weights)),
                           None if m is None else m)
