"""Score functions: how well one query matches each key.

A score ``e_i`` is an unnormalised compatibility value: it can be negative and has no fixed scale.
Shapes: a single query ``q`` (D_q,) against keys ``K`` (S, D_k) gives scores (S,); a batch of
queries ``Q`` (..., T, D_q) against ``K`` (..., S, D_k) gives (..., T, S). Leading batch dimensions
broadcast.

* dot:         ``e_i = scale * q^T k_i``  (the chapter's score is unscaled: ``scale = 1``)
* scaled dot:  ``e_i = q^T k_i / sqrt(D_k)``  (Transformer scaling, a separate, named option)
* bilinear:    ``e_i = q^T W k_i``  with ``W`` (D_q, D_k) (Luong's "general" score)
* additive:    ``e_i = v^T tanh(W_q q + W_k k_i + b)``  with ``W_q`` (A, D_q), ``W_k`` (A, D_k),
  ``v`` (A,), ``b`` (A,) (Bahdanau's "concat" score); D_q and D_k may differ.

Chapter, Level 2, *Scores compare one query with every key* (dot, bilinear, additive) and Level 3,
*Additive scores learn a comparison space*.

Low precision: float16 inputs give float32 scores (computed in float32, the torch path's policy: a
float16 score would overflow to -inf above 65504 and look like a masked key).
"""

from __future__ import annotations

import math

import numpy as np

from . import _validate as validate
from ._validate import shape_str

SCORE_KINDS = ("dot", "scaled_dot", "bilinear", "additive")


def _query_keys(query, keys, *, same_width: bool):
    q = _at_least_float32(validate.real_array(query, "query", min_ndim=1))
    k = _at_least_float32(validate.real_array(keys, "keys", min_ndim=2))
    validate.key_set("keys", k.shape)
    if same_width:
        validate.same_width("query", q.shape, "keys", k.shape,
                     "dot-product scores need equal widths (bilinear or additive scores allow "
                     "different widths)")
    validate.batch_dims(query=q.shape if q.ndim > 1 else (1, 1), keys=k.shape)
    return q, k


def _at_least_float32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _apply(q: np.ndarray, k: np.ndarray, M=None) -> np.ndarray:
    """``q M k^T`` for one query (returns (S,)) or a batch (returns (..., T, S))."""
    single = q.ndim == 1
    Q = q[None, :] if single else q
    if M is not None:
        Q = Q @ M
    e = Q @ np.swapaxes(k, -1, -2)
    return e[..., 0, :] if single else e


def dot_scores(query, keys, *, scale: float = 1.0) -> np.ndarray:
    """Dot-product scores ``e_i = scale * q^T k_i``; the chapter's form has ``scale = 1``.

    Chapter, Level 2, *Scores compare one query with every key*: ``e_i = q^T k_i``.

    >>> dot_scores([1.0, 0.0], [[2.0, 5.0], [-1.0, 3.0]])
    array([ 2., -1.])
    """
    q, k = _query_keys(query, keys, same_width=True)
    scale = validate.temperature(scale, "scale")
    e = _apply(q, k)
    return e * scale if scale != 1.0 else e


def key_projections(keys, direction) -> np.ndarray:
    """How far each key reaches along a direction: ``p_i = k_i^T u`` with ``u = d / |d|``, (S,).

    Chapter, Level 2, *Scores compare one query with every key*, as geometry: for a query
    ``q = |q| u`` the dot score is ``e_i = q^T k_i = |q| p_i``, the query's length times the signed
    length of key i's projection on the query's line. Turning the query changes which key
    reaches furthest; stretching it multiplies every score by the same factor, which is dividing
    them by a temperature ``tau = 1 / |q|`` (*Temperature changes concentration*).

    >>> key_projections([[2.0, 1.0], [0.0, 3.0]], [2.0, 0.0])
    array([2., 0.])
    """
    k = validate.real_array(keys, "keys", min_ndim=2)
    validate.key_set("keys", k.shape)
    d = validate.real_array(direction, "direction")
    if d.shape != k.shape[-1:]:
        raise ValueError(f"direction has shape {shape_str(d.shape)}; for keys of width "
                         f"{k.shape[-1]} it must be ({k.shape[-1]},)")
    norm = float(np.linalg.norm(d))
    if norm == 0:
        raise ValueError("direction is the zero vector; a projection needs a direction")
    return k @ (d / norm)


def scaled_dot_scores(query, keys) -> np.ndarray:
    """Scaled dot-product scores ``e_i = q^T k_i / sqrt(D_k)``.

    Chapter, Level 4, *Score scale, dtype, and masking affect numerical behaviour* (the scaling the
    Transformer uses; the chapter's own score is unscaled).
    """
    k = validate.real_array(keys, "keys", min_ndim=2)
    return dot_scores(query, k, scale=1.0 / math.sqrt(max(k.shape[-1], 1)))


def bilinear_scores(query, keys, W) -> np.ndarray:
    """Bilinear ("general") scores ``e_i = q^T W k_i`` with ``W`` of shape (D_q, D_k).

    Chapter, Level 2, *Scores compare one query with every key*: ``e_i = q^T W k_i``.
    """
    q, k = _query_keys(query, keys, same_width=False)
    W = validate.real_array(W, "W")
    if W.shape != (q.shape[-1], k.shape[-1]):
        raise ValueError(
            f"W has shape {shape_str(W.shape)}; for a query of width {q.shape[-1]} and keys of "
            f"width {k.shape[-1]} it must be (D_q, D_k) = ({q.shape[-1]}, {k.shape[-1]})"
        )
    return _apply(q, k, W)


def additive_scores(query, keys, W_q, W_k, v, b=None) -> np.ndarray:
    """Additive (Bahdanau, "concat") scores ``e_i = v^T tanh(W_q q + W_k k_i + b)``.

    Chapter, Level 2, *Scores compare one query with every key*, and Level 3, *Additive scores
    learn a comparison space*: ``e_ti = v_a^T tanh(W_q q_t + W_h h_i + b_a)``.

    ``W_q`` (A, D_q) and ``W_k`` (A, D_k) map query and keys into a shared alignment width A, so the
    query and key widths may differ. Vectorised: the projected query is broadcast against every
    projected key, giving an (..., T, S, A) intermediate, then reduced by ``v``.
    """
    q, k = _query_keys(query, keys, same_width=False)
    W_q = validate.real_array(W_q, "W_q")
    W_k = validate.real_array(W_k, "W_k")
    v = validate.real_array(v, "v")
    if v.ndim != 1:
        raise ValueError(f"v has shape {shape_str(v.shape)}; expected a vector (A,)")
    A = v.shape[0]
    if W_q.shape != (A, q.shape[-1]):
        raise ValueError(
            f"W_q has shape {shape_str(W_q.shape)}; expected (A, D_q) = ({A}, {q.shape[-1]}) "
            f"for v of length A={A} and a query of width D_q={q.shape[-1]}"
        )
    if W_k.shape != (A, k.shape[-1]):
        raise ValueError(
            f"W_k has shape {shape_str(W_k.shape)}; expected (A, D_k) = ({A}, {k.shape[-1]}) "
            f"for v of length A={A} and keys of width D_k={k.shape[-1]}"
        )
    if b is None:
        b = np.zeros(A)
    b = validate.real_array(b, "b")
    if b.shape != (A,):
        raise ValueError(f"b has shape {shape_str(b.shape)}; expected (A,) = ({A},)")
    single = q.ndim == 1
    Q = q[None, :] if single else q
    projected_q = Q @ W_q.T  # (..., T, A)
    projected_k = k @ W_k.T  # (..., S, A)
    hidden = np.tanh(projected_q[..., :, None, :] + projected_k[..., None, :, :] + b)
    e = hidden @ v  # (..., T, S)
    return e[..., 0, :] if single else e


def compute_scores(kind: str, query, keys, **params) -> np.ndarray:
    """Dispatch by name: ``kind`` is one of ``SCORE_KINDS``; ``params`` go to that function
    (``scale`` for dot, ``W`` for bilinear, ``W_q, W_k, v, b`` for additive).

    Chapter, Level 2, *Scores compare one query with every key*: ``e_i = score(q, k_i)``.
    """
    # kind -> (function, the parameters it takes, those it needs)
    table = {"dot": (dot_scores, {"scale"}, set()),
             "scaled_dot": (scaled_dot_scores, set(), set()),
             "bilinear": (bilinear_scores, {"W"}, {"W"}),
             "additive": (additive_scores, {"W_q", "W_k", "v", "b"}, {"W_q", "W_k", "v"})}
    if kind not in table:
        raise ValueError(f"score must be one of {SCORE_KINDS}, got {kind!r}")
    function, allowed, required = table[kind]
    unused = sorted(set(params) - allowed)
    if unused:
        raise TypeError(
            f"score={kind!r} takes parameters {sorted(allowed) or 'none'}; got unexpected {unused}"
        )
    missing = sorted(required - set(params))
    if missing:
        raise TypeError(f"score={kind!r} needs the parameter(s) {missing}")
    return function(query, keys, **params)
