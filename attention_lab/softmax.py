"""Softmax with temperature and masks, the naive softmax it replaces, and entropy.

``alpha_i(tau) = exp(e_i / tau) / sum_j exp(e_j / tau)`` over the eligible keys j.

The stable form subtracts the row maximum ``m`` first: ``exp((e_i - m) / tau)`` is never larger than
1, so it cannot overflow, and the shift cancels between numerator and denominator.

Masks are boolean with True = eligible. Ineligible keys get weight exactly 0 and the eligible weights
sum to 1. A row with no eligible key follows the ``empty`` policy: ``"zeros"`` (default; all weights
0), ``"nan"`` (all weights NaN) or ``"raise"`` (``ValueError``).

Chapter, Level 2, *Softmax makes scores compete* and *Temperature changes concentration*; Level 3,
*Masked softmax requires a stable fill value*.

Low precision: float16 scores are exponentiated and summed in float32 and the weights returned in
float16 (the torch path's policy).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _validate as validate

_BF16_MAX = 3.3895313892515355e38  # the largest finite bfloat16


def softmax(scores, *, temperature: float = 1.0, mask=None, axis: int = -1,
            empty: str = "zeros") -> np.ndarray:
    """Stable, masked softmax of ``scores`` along ``axis`` (the key axis, -1, for attention).

    Chapter, Level 2, *Softmax makes scores compete* and *Temperature changes concentration*:
    ``alpha_i = exp(e_i / tau) / sum_j exp(e_j / tau)`` over the eligible keys j, computed as
    ``exp((e_i - m) / tau)`` with the row maximum ``m`` (Level 4, *Score scale, dtype, and masking
    affect numerical behaviour*).

    ``scores`` may contain ``-inf`` (read as "ineligible", the chapter's way to mask); NaN and
    ``+inf`` are rejected. ``mask`` (bool, True = eligible) must broadcast to ``scores``.

    >>> softmax([0.0, 0.0, float("-inf")])
    array([0.5, 0.5, 0. ])
    """
    e = validate.real_array(scores, "scores", min_ndim=1, allow_neg_inf=True)
    tau = validate.temperature(temperature)
    ax = validate.axis(axis, e.ndim)
    validate.empty_policy(empty)
    if e.shape[ax] == 0:
        raise ValueError(f"scores has shape {validate.shape_str(e.shape)}: axis {axis} is empty, "
                         f"and a softmax over no keys is undefined")
    out_dtype = e.dtype
    e = e.astype(np.float32) if e.dtype == np.float16 else e
    eligible = np.isfinite(e)
    if mask is not None:
        eligible = eligible & validate.mask_for(mask, e.shape)

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
            rows = np.argwhere(np.squeeze(empty_rows, axis=ax))             # (n, ndim - 1)
            first = tuple(int(i) for i in rows[0])
            what = (f"{len(rows)} row(s) have no eligible key (all masked), first at row "
                    f"{first[0] if len(first) == 1 else first}") if first else \
                "the row has no eligible key (all masked)"
            raise ValueError(f"{what}; pass empty='zeros' or empty='nan' to allow them")
        if empty == "nan":
            weights = np.where(empty_rows, np.nan, weights)
    return weights.astype(out_dtype, copy=False)


def naive_softmax(scores, axis: int = -1) -> np.ndarray:
    """The textbook formula ``exp(e_i) / sum_j exp(e_j)`` without the max shift, for comparison.

    Chapter, Level 2, *Softmax makes scores compete* (the formula) and Level 4, *Score scale,
    dtype, and masking affect numerical behaviour* (why it overflows).

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
    into NaN in a plain softmax. Chapter, Level 3, *Masked softmax requires a stable fill value*.
    """
    name = validate.float_dtype(dtype)
    if name == "bfloat16":
        return -_BF16_MAX
    return float(np.finfo(np.dtype(name)).min)


def fill_overflows(fill: float, dtype) -> bool:
    """True when ``fill`` does not survive a cast to ``dtype`` as a finite number."""
    name = validate.float_dtype(dtype)
    if name == "bfloat16":
        return bool(np.isfinite(fill) and abs(fill) > _BF16_MAX * (1 + 2 ** -9))
    with np.errstate(over="ignore"):
        return bool(np.isfinite(fill) and not np.isfinite(np.asarray(fill, dtype=np.dtype(name))))


def fill_softmax(scores, mask, fill: float, *, dtype="float16", stable: bool = True) -> np.ndarray:
    """What a typical kernel does: cast to ``dtype``, write ``fill`` at masked positions, softmax.

    Chapter, Level 3, *Masked softmax requires a stable fill value*.

    A demonstration of fills and dtypes, not a safe softmax: it returns NaN for an all-masked row
    with a ``-inf`` fill (or with a fill that overflows to ``-inf``, such as -1e9 in float16), and
    a uniform row for an all-masked row with a finite fill. ``stable=False`` skips the max shift.
    ``dtype`` is ``"float16"``, ``"float32"``, ``"float64"`` or ``"bfloat16"``; every intermediate
    (filled scores, shifted scores, exponentials, their sum, the quotient) is rounded to it. For
    bfloat16 the result is float32 holding bfloat16 values (see :func:`round_to_dtype`).
    """
    e = validate.real_array(scores, "scores", min_ndim=1)
    m = validate.mask_for(mask, e.shape)
    name = validate.float_dtype(dtype)

    def cast(x):
        return round_to_dtype(x, name)

    with np.errstate(all="ignore"):
        filled = np.where(m, cast(e), cast(np.asarray(fill, dtype=float)))
        if stable:
            filled = cast(filled - filled.max(axis=-1, keepdims=True))
        exp = cast(np.exp(filled))
        return cast(exp / cast(exp.sum(axis=-1, keepdims=True)))


def entropy(weights, axis: int = -1, *, base: float | None = None) -> np.ndarray:
    """Shannon entropy ``H(alpha) = -sum_i alpha_i log alpha_i`` along ``axis`` (0 log 0 = 0).

    Chapter, Level 4, *Attention modules need targeted tests* (the audit records the entropy of the
    weight distributions; exercise 21). In nats by default; ``base=2`` gives bits. Uniform weights
    over n eligible keys give ``log n``; one-hot weights give 0. A NaN row (the ``"nan"`` policy)
    gives NaN.
    """
    w = validate.real_array(weights, "weights", min_ndim=1, allow_nan=True).astype(float)
    if (w < 0).any():
        first = tuple(int(i) for i in np.argwhere(w < 0)[0])
        raise ValueError(f"weights must be non-negative, got {float(w[first])} at index {first}")
    ax = validate.axis(axis, w.ndim)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log(np.where(w > 0, w, 1.0)), 0.0)
    terms = np.where(np.isnan(w), np.nan, terms)
    h = terms.sum(axis=ax)
    if base is not None:
        if validate.temperature(base, "base") == 1:
            raise ValueError(f"base must be > 0 and not 1, got {base} (log 1 = 0)")
        h = h / np.log(float(base))
    return h


# --- additions for the explorers and notebooks 01-03 -------------------------------------------

class Concentration(NamedTuple):
    """Largest weight, entropy (nats) and effective number of keys ``exp(entropy)`` per row."""

    max_weight: np.ndarray
    entropy: np.ndarray
    effective_keys: np.ndarray


#: dtypes the precision demos understand; bfloat16 is emulated in numpy (see :func:`round_to_dtype`).
DEMO_DTYPES = ("float64", "float32", "float16", "bfloat16")


def round_to_dtype(x, dtype) -> np.ndarray:
    """``x`` rounded to the nearest number of ``dtype`` (values too large become +-inf).

    float16/32/64 return an array of that dtype. numpy has no bfloat16, so ``"bfloat16"`` returns
    float32 values rounded to bfloat16 (8 exponent bits like float32, 8 significand bits; round to
    nearest, ties to even), exactly what ``tensor.to(torch.bfloat16)`` keeps of a float32 tensor.

    >>> round_to_dtype([1e9, 70000.0], "float16")
    array([inf, inf], dtype=float16)
    >>> float(round_to_dtype(1.0 + 2 ** -9, "bfloat16"))
    1.0
    """
    name = validate.float_dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if name != "bfloat16":
            return np.asarray(x).astype(name)
        a = np.asarray(x, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), np.float32(np.nan), out).reshape(a.shape)


def concentration(weights, axis: int = -1):
    """How concentrated each weight row is: ``Concentration(max_weight, entropy, effective_keys)``.

    Chapter, Level 2, *Temperature changes concentration*.

    ``max_weight`` is the largest weight, ``entropy`` is in nats, and ``effective_keys = exp(entropy)``
    is the number of keys a uniform distribution with the same entropy would spread over (1 for a
    one-hot row, n for uniform over n keys). A row of zeros (an all-masked row under the "zeros"
    policy) has 0 for all three; a NaN row (the "nan" policy) gives NaN.
    """
    w = np.asarray(weights, dtype=float)
    h = entropy(w, axis=axis)
    ax = validate.axis(axis, w.ndim)
    with np.errstate(invalid="ignore"):
        total = w.sum(axis=ax)
        top = w.max(axis=ax)
    eff = np.where(total > 0, np.exp(h), 0.0)
    eff = np.where(np.isnan(total), np.nan, eff)[()]
    return Concentration(top, h, eff)


def hardmax(scores, *, mask=None, empty: str = "zeros") -> np.ndarray:
    """Hard retrieval: weight 1 on the highest-scoring eligible key (the first one on ties), 0 elsewhere.

    Chapter, Level 1, *Attention is a differentiable retrieval rule* (hard retrieval is the rule soft
    attention replaces).

    The limit of ``softmax(scores, temperature=tau)`` as tau -> 0 when the maximum is unique. Not
    differentiable: a small change of a score either changes nothing or moves all the weight.
    """
    e = validate.real_array(scores, "scores", min_ndim=1, allow_neg_inf=True)
    validate.empty_policy(empty)
    validate.nonempty_keys(e.shape, "scores")
    eligible = np.isfinite(e)
    if mask is not None:
        eligible = eligible & validate.mask_for(mask, e.shape)
    masked = np.where(eligible, e, -np.inf)
    top = np.argmax(masked, axis=-1)
    out = (np.arange(e.shape[-1]) == top[..., None]).astype(e.dtype)
    empty_rows = ~eligible.any(axis=-1)
    if empty_rows.any():
        if empty == "raise":
            raise ValueError(f"{int(empty_rows.sum())} row(s) have no eligible key (all masked); "
                             f"pass empty='zeros' or empty='nan' to allow them")
        out[empty_rows] = np.nan if empty == "nan" else 0.0
    return out


def mask_after_softmax(scores, mask, *, temperature: float = 1.0,
                       renormalise: bool = False) -> np.ndarray:
    """The WRONG order, for demonstrations: softmax over every key, then zero the masked weights.

    Chapter, Common misconceptions: *Masking after softmax is equivalent to masking before it*.

    Without renormalising, each row keeps only the mass its eligible keys had in the unmasked softmax,
    so it sums to less than 1 (and the context shrinks). ``renormalise=True`` divides by that mass,
    which gives back the masked softmax (a row with no eligible key stays all zeros).
    """
    e = validate.real_array(scores, "scores", min_ndim=1)
    m = validate.mask_for(mask, e.shape)
    w = softmax(e, temperature=temperature) * m
    if renormalise:
        total = w.sum(axis=-1, keepdims=True)
        w = w / np.where(total > 0, total, 1.0)
    return w
