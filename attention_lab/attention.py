"""``attend``: the numpy reference of attention, one query or a batch.

For one query ``q`` (D_k,), keys ``K`` (S, D_k) and values ``V`` (S, D_v):

    e = score(q, K)                       scores, (S,)
    alpha = softmax(e / tau, over eligible keys)   weights, (S,)
    c = alpha^T V                         context, (D_v,)

For a batch ``Q`` (..., T, D_k) the scores and weights are (..., T, S) and the context is
(..., T, D_v): every target position t has its own distribution over the S source positions.
Softmax always runs over the key axis, -1.

Chapter, Level 1, *Attention changes access to stored representations* (the retrieval), Level 2
(scores, softmax, temperature, masks) and Level 3, *Attention has a compact tensor form*.

Low precision: float16 inputs are computed in float32 (scores, softmax, weighted sum) and the
weights and context returned in float16, as on the torch path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _validate as validate
from ._validate import shape_str
from .masks import padding_mask
from .scores import compute_scores
from .softmax import entropy as _entropy
from .softmax import softmax


@dataclass(frozen=True)
class AttentionResult:
    """What one attention call computed. Arrays have the query's leading shape.

    scores       e, before temperature and mask, (S,) or (..., T, S)
    weights      alpha, (S,) or (..., T, S); 0 at masked keys; rows sum to 1 unless all-masked
    context      c = alpha V, (D_v,) or (..., T, D_v)
    mask         the eligibility actually applied (True = eligible), broadcast to the scores' shape
    masked_mass  sum of the weights on masked keys per row: () or (..., T). The library keeps it at 0;
                 it is here so that audits can show it
    empty_rows   rows with no eligible key, () or (..., T)
    """

    scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    mask: np.ndarray
    masked_mass: np.ndarray
    empty_rows: np.ndarray
    temperature: float = 1.0
    score: str = "dot"
    empty: str = "zeros"
    extras: dict = field(default_factory=dict, repr=False)

    @property
    def entropy(self) -> np.ndarray:
        """Entropy of each weight row in nats (0 for one-hot, log(n) for uniform over n keys)."""
        return _entropy(self.weights)

    @property
    def row_sums(self) -> np.ndarray:
        return self.weights.sum(axis=-1)

    def __repr__(self) -> str:
        with np.printoptions(precision=3, suppress=True):
            return (f"AttentionResult(score={self.score!r}, temperature={self.temperature:g}, "
                    f"scores {shape_str(self.scores.shape)}, weights={self.weights}, "
                    f"context={self.context})")


def attend(query, keys, values, *, score: str = "dot", mask=None, lengths=None,
           temperature: float = 1.0, empty: str = "zeros", scale: float | None = None,
           W=None, W_q=None, W_k=None, v=None, b=None) -> AttentionResult:
    """Attention of ``query`` over ``keys``/``values``: scores, masked softmax, weighted sum.

    Chapter, Level 3, *Attention has a compact tensor form*: ``alpha = softmax(K q)``,
    ``c = alpha^T V`` (batched: scores (..., T, S), softmax over the keys, context (..., T, D_v)).

    Parameters
    ----------
    query : (D_q,) or (..., T, D_q)
    keys : (S, D_k) or (..., S, D_k)
    values : (S, D_v) or (..., S, D_v); D_v may differ from D_k
    score : "dot" (``q^T k``, the chapter's default, optional ``scale``), "scaled_dot"
        (``q^T k / sqrt(D_k)``), "bilinear" (``q^T W k``, needs ``W``) or "additive"
        (``v^T tanh(W_q q + W_k k + b)``, needs ``W_q``, ``W_k``, ``v``; ``b`` optional)
    mask : bool, True = eligible, broadcastable to the scores (S,) or (..., T, S)
    lengths : valid source lengths; a padding mask ``j < length`` is added. A number for all
        queries, or one length per batch item: shape (B,) for queries (B, T, D_q) or
        (B, H, T, D_q), (B, H) for one per item and head
    temperature : tau > 0; the scores are divided by it before softmax
    empty : what a row without eligible keys returns: "zeros" (default), "nan", or "raise"

    All inputs must be finite (``ValueError`` otherwise).
    """
    params = {k: val for k, val in dict(scale=scale, W=W, W_q=W_q, W_k=W_k, v=v, b=b).items()
              if val is not None}
    e = compute_scores(score, query, keys, **params)
    vals = validate.real_array(values, "values", min_ndim=2)
    validate.one_value_per_key("keys", np.shape(keys), "values", vals.shape)
    return _finish(e, vals, mask=mask, lengths=lengths, temperature=temperature, empty=empty,
                   score=score)


def attend_scores(scores, values, *, mask=None, lengths=None, temperature: float = 1.0,
                  empty: str = "zeros") -> AttentionResult:
    """Attention from given scores ``e`` (S,) or (..., T, S) and values (S, D_v) or (..., S, D_v).

    Chapter, Level 2, *Softmax makes scores compete* and *Masks define which keys are eligible*.
    """
    e = validate.real_array(scores, "scores", min_ndim=1)
    validate.nonempty_keys(e.shape, "scores")
    vals = validate.real_array(values, "values", min_ndim=2)
    validate.one_value_per_key("scores", e.shape, "values", vals.shape, S=e.shape[-1])
    return _finish(e, vals, mask=mask, lengths=lengths, temperature=temperature, empty=empty,
                   score="given")


def _finish(e, vals, *, mask, lengths, temperature, empty, score) -> AttentionResult:
    tau = validate.temperature(temperature)
    validate.empty_policy(empty)
    S = e.shape[-1]
    if not np.isfinite(e).all():
        raise ValueError(f"the scores overflowed in {e.dtype} (inputs too large for the dtype); "
                         f"use smaller inputs or a wider dtype")
    eligible = np.ones(e.shape, dtype=bool)
    if mask is not None:
        eligible = eligible & validate.mask_for(mask, e.shape)
    if lengths is not None:
        batch = e.shape[:-2]
        L = validate.lengths(lengths, S, batch_shape=batch)  # one per batch item, never per head
        pad = padding_mask(L, S)
        if e.ndim > 1:
            pad = pad.reshape(validate.lengths_view(pad.shape, len(batch)))  # (B, 1.., 1, S)
        eligible = eligible & pad
    if e.ndim == 1 and vals.ndim != 2:
        raise ValueError(
            f"values has shape {shape_str(vals.shape)}; a single query takes values (S, D_v)"
        )
    if validate.broadcast_shapes(e.shape[:-2], vals.shape[:-2]) != e.shape[:-2]:
        raise ValueError(
            f"values batch dimensions {shape_str(vals.shape[:-2])} do not match the batch "
            f"dimensions {shape_str(e.shape[:-2])} of the scores {shape_str(e.shape)}"
        )
    low = vals.dtype == np.float16  # computed in float32, returned in float16
    weights = softmax(e.astype(np.float32) if low else e, temperature=tau, mask=eligible,
                      empty=empty)
    context = weights @ (vals.astype(np.float32) if low else vals)
    if low:
        weights, context = weights.astype(np.float16), context.astype(np.float16)
    empty_rows = ~eligible.any(axis=-1)
    masked_mass = np.where(eligible, 0.0, np.nan_to_num(weights)).sum(axis=-1)
    return AttentionResult(scores=e, weights=weights, context=context, mask=eligible,
                           masked_mass=masked_mass, empty_rows=empty_rows, temperature=tau,
                           score=score, empty=empty)


def weighted_sum(weights, values, *, allow_nan: bool = False) -> np.ndarray:
    """The context ``c = alpha V``: weights (S,) or (..., T, S) times values (S, D_v) or (..., S, D_v).

    Chapter, Level 3, *Attention has a compact tensor form*: ``c = alpha^T V``.

    For weights that did not come from :func:`attend` (hard retrieval, a wrong softmax axis, a
    kernel's output). ``allow_nan=True`` lets NaN weights through, so that a demonstration can show
    how a NaN row poisons its context; otherwise NaN or inf weights raise ``ValueError``.
    """
    w = np.asarray(weights)
    if not allow_nan:
        w = validate.real_array(w, "weights", min_ndim=1)
    elif w.dtype.kind != "f" or w.ndim < 1:
        raise TypeError(f"weights must be a floating array with at least one dimension, got "
                        f"dtype {w.dtype} and shape {shape_str(w.shape)}")
    vals = validate.real_array(values, "values", min_ndim=2)
    if vals.shape[-2] != w.shape[-1]:
        raise ValueError(
            f"values has {vals.shape[-2]} rows (shape {shape_str(vals.shape)}) but the weights have "
            f"S={w.shape[-1]} keys (shape {shape_str(w.shape)}); every weight needs one value")
    with np.errstate(invalid="ignore", over="ignore"):
        return w.astype(np.result_type(w.dtype, vals.dtype)) @ vals


def within_value_range(context, values, *, mask=None, atol: float = 1e-12) -> np.ndarray:
    """Per context coordinate: does it lie between the smallest and largest eligible value?

    Chapter, Level 3, *Weighted sums are mixtures, not discrete selections*.

    The chapter's debugging check: a weighted average with non-negative weights that sum to 1 lies in
    the convex hull of the values, so each coordinate lies within the coordinate range of the
    eligible values. A False means a mask, axis, normalisation or code path is not what was stated.
    ``context`` (D_v,) and ``values`` (S, D_v); ``mask`` (S,) marks eligible values.
    """
    c = validate.real_array(context, "context", min_ndim=1)
    vals = validate.real_array(values, "values", min_ndim=2)
    if vals.ndim != 2 or c.shape != vals.shape[-1:]:
        raise ValueError(f"context has shape {shape_str(c.shape)} and values "
                         f"{shape_str(vals.shape)}; expected (D_v,) and (S, D_v)")
    m = np.ones(vals.shape[0], bool) if mask is None else validate.mask_for(mask, (vals.shape[0],))
    if not m.any():
        return np.zeros(c.shape, dtype=bool)
    eligible = vals[m]
    return (c >= eligible.min(axis=0) - atol) & (c <= eligible.max(axis=0) + atol)
