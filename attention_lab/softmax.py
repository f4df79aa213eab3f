"""Softmax with temperature and masks, the naive softmax it replaces, and entropy.

``alpha_i(tau) = exp(e_i / tau) / sum_j exp(e_j / tau)`` over the eligible keys j.

The stable form subtracts the row maximum ``m`` first: ``exp((e_i - m) / tau)`` is never larger than
1, so it cannot overflow, and the shift cancels between numerator and denominator.

Masks are boolean with True = eligible. Ineligible keys get weight exactly 0 and the eligible weights
sum to 1. A row with no eligible key follows the ``empty`` policy: ``"zeros"`` (default; all weights
0), ``"nan"`` (all weights NaN) or ``"raise"`` (``ValueError``).
"""

from __future__ import annotations

import numpy as np

from . import _validate as V


def softmax(scores, *, temperature: float = 1.0, mask=None, axis: int = -1,
            empty: str = "zeros") -> np.ndarray:
    """Stable, masked softmax of ``scores`` along ``axis`` (the key axis, -1, for attention).

    ``scores`` may contain ``-inf`` (read as "ineligible", the chapter's way to mask); NaN and
    ``+inf`` are rejected. ``mask`` (bool, True = eligible) must broadcast to ``scores``.

    >>> softmax([0.0, 0.0, float("-inf")])
    array([0.5, 0.5, 0. ])
    """
    e = V.real_array(scores, "scores", min_ndim=1, allow_neg_inf=True)
    tau = V.temperature(temperature)
    ax = V.axis(axis, e.ndim)
    V.empty_policy(empty)
    eligible = np.isfinite(e)
    if mask is not None:
        eligible = eligible & V.mask_for(mask, e.shape)

    with np.errstate(over="ignore", invalid="ignore"):
        row_max = np.max(np.where(eligible, e, -np.inf), axis=ax, keepdims=True)
        empty_rows = ~np.any(eligible, axis=ax, keepdims=True)
        row_max = np.where(empty_rows, 0.0, row_max)
        shifted = np.where(eligible, (e - row_max) / tau, -np.inf)  # <= 0 everywhere
        exp = np.exp(shifted)  # masked: exp(-inf) = 0 exactly
        total = np.sum(exp, axis=ax, keepdims=True)
        weights = exp / np.where(empty_rows, 1.0, total)

    if empty_rows.any():
        if empty == "raise":
            rows = np.argwhere(np.squeeze(empty_rows, axis=ax))
            first = tuple(int(i) for i in rows[0]) if rows.size else ()
            raise ValueError(
                f"{len(rows)} row(s) have no eligible key (all masked), first at index {first}; "
                f"pass empty='zeros' or empty='nan' to allow them"
            )
        if empty == "nan":
            weights = np.where(empty_rows, np.nan, weights)
    return weights.astype(e.dtype, copy=False)


def naive_softmax(scores, axis: int = -1) -> np.ndarray:
    """The textbook formula ``exp(e_i) / sum_j exp(e_j)`` without the max shift, for comparison.

    It overflows: ``exp(1e4)`` is ``inf`` in float64, and ``inf / inf`` is NaN. Numpy's warnings are
    silenced; look at the returned NaN instead. Not used anywhere else in the package.
    """
    e = np.asarray(scores, dtype=np.result_type(np.asarray(scores).dtype, np.float16))
    with np.errstate(all="ignore"):
        exp = np.exp(e)
        return exp / exp.sum(axis=axis, keepdims=True)


def safe_fill(dtype) -> float:
    """The most negative finite number of ``dtype``: a finite mask fill that cannot overflow.

    float16: -65504, bfloat16: -3.39e38, float32: -3.40e38, float64: -1.80e308. A fill such as -1e9
    is not representable in float16 and becomes ``-inf`` when cast; an all-masked row then turns
    into NaN in a plain softmax.
    """
    name = str(dtype).replace("torch.", "")
    if name == "bfloat16":
        return -3.3895313892515355e38
    return float(np.finfo(np.dtype(name)).min)


def fill_overflows(fill: float, dtype) -> bool:
    """True when ``fill`` does not survive a cast to ``dtype`` as a finite number."""
    name = str(dtype).replace("torch.", "")
    if name == "bfloat16":
        return bool(np.isfinite(fill) and abs(fill) > 3.3895313892515355e38 * (1 + 2 ** -9))
    with np.errstate(over="ignore"):
        return bool(np.isfinite(fill) and not np.isfinite(np.asarray(fill, dtype=np.dtype(name))))


def fill_softmax(scores, mask, fill: float, *, dtype="float16", stable: bool = True) -> np.ndarray:
    """What a typical kernel does: cast to ``dtype``, write ``fill`` at masked positions, softmax.

    A demonstration of fills and dtypes, not a safe softmax: it returns NaN for an all-masked row
    with a ``-inf`` fill (or with a fill that overflows to ``-inf``, such as -1e9 in float16), and
    a uniform row for an all-masked row with a finite fill. ``stable=False`` skips the max shift.
    ``dtype`` is a numpy dtype name (``"float16"``, ``"float32"``, ``"float64"``).
    """
    e = V.real_array(scores, "scores", min_ndim=1)
    m = V.mask_for(mask, e.shape)
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        filled = np.where(m, e.astype(dt), np.asarray(fill).astype(dt)).astype(dt)
        if stable:
            filled = filled - filled.max(axis=-1, keepdims=True)
        exp = np.exp(filled)
        return exp / exp.sum(axis=-1, keepdims=True)


def entropy(weights, axis: int = -1, *, base: float | None = None) -> np.ndarray:
    """Shannon entropy ``H(alpha) = -sum_i alpha_i log alpha_i`` along ``axis`` (0 log 0 = 0).

    In nats by default; ``base=2`` gives bits. Uniform weights over n eligible keys give ``log n``;
    one-hot weights give 0. A NaN row (the ``"nan"`` policy) gives NaN.
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim == 0:
        raise ValueError("weights must have at least one dimension")
    if (w < 0).any():
        raise ValueError("weights must be non-negative")
    ax = V.axis(axis, w.ndim)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log(np.where(w > 0, w, 1.0)), 0.0)
    terms = np.where(np.isnan(w), np.nan, terms)
    h = terms.sum(axis=ax)
    if base is not None:
        h = h / np.log(V.temperature(base, "base"))
    return h
