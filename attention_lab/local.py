"""Luong's local attention with a predicted centre (local-p).

Chapter, Level 2, *Global and local access trade coverage for cost* (Luong et al. 2015, section
3.2). A local window ``|j - p_t| <= D`` needs a centre ``p_t`` for every output step t. Local-m
(:func:`attention_lab.masks.local_m_mask`) takes ``p_t = t`` and so assumes the alignment runs
along the diagonal. Local-p lets the decoder state ``h_t`` predict it, and favours the positions
near it with a Gaussian:

    p_t     = (S - 1) * sigmoid(v_p^T tanh(W_p h_t))          a real number in [0, S - 1]
    alpha_t = softmax of the scores e_tj over the window |j - p_t| <= D
    a_tj    = alpha_tj * exp(-(j - p_t)^2 / (2 sigma^2)),       sigma = D / 2
    c_t     = sum_j a_tj v_j

Positions are 0-based. The paper counts them from 1 and writes ``p_t = S * sigmoid(...)``, in
[0, S]; the lab's centre, ``1 + (S - 1) * sigmoid(...)`` counted from 1, stays on the positions
(the notebooks say so). As in the
paper the Gaussian multiplies the weights *after* the softmax, so they sum to less than 1 (to 1
only when all the window's weight sits exactly at ``p_t``) and the context is shrunk towards 0
by as much.
"""

from __future__ import annotations

import numpy as np

from . import _validate as validate
from ._validate import shape_str
from .attention import AttentionResult, attend_scores
from .masks import local_mask


def centre_from_logit(z, S: int) -> np.ndarray:
    """``(S - 1) * sigmoid(z)``: the predicted centre for a centre logit ``z`` (any shape).

    Chapter, Level 2, *Global and local access trade coverage for cost*. The sigmoid keeps the
    centre between the first and the last position (0 and S - 1)."""
    S = validate.count(S, "S")
    z = validate.real_array(z, "z")
    return (S - 1) * 0.5 * (1.0 + np.tanh(0.5 * z))  # sigmoid, without overflow for large |z|


def predicted_centre(h, W_p, v_p, S: int) -> np.ndarray:
    """Local-p's centre ``p_t = (S - 1) * sigmoid(v_p^T tanh(W_p h_t))``.

    Chapter, Level 2, *Global and local access trade coverage for cost*: the window's centre is
    predicted from the decoder state instead of assumed (local-m's ``p_t = t``). ``h`` is one
    decoder state (D_h,) (gives a centre ()) or several (..., T, D_h) (gives (..., T)); ``W_p``
    (A, D_h) and ``v_p`` (A,) are the predictor's parameters."""
    h = validate.real_array(h, "h", min_ndim=1)
    W_p = validate.real_array(W_p, "W_p")
    v_p = validate.real_array(v_p, "v_p")
    if v_p.ndim != 1:
        raise ValueError(f"v_p has shape {shape_str(v_p.shape)}; expected a vector (A,)")
    if W_p.shape != (v_p.shape[0], h.shape[-1]):
        raise ValueError(f"W_p has shape {shape_str(W_p.shape)}; expected (A, D_h) = "
                         f"({v_p.shape[0]}, {h.shape[-1]}) for v_p of length {v_p.shape[0]} and "
                         f"decoder states of width {h.shape[-1]}")
    z = np.tanh(h @ W_p.T) @ v_p                                    # (...,) one logit per state
    return centre_from_logit(z, S)


def gaussian_window(centres, half_width: float, S: int) -> np.ndarray:
    """``exp(-(j - p)^2 / (2 sigma^2))`` with ``sigma = D / 2`` inside the window
    ``|j - p| <= D`` and 0 outside it: (S,) for one centre, (T, S) for one per step. With
    ``D = 0`` the window holds at most the position ``j = p``, whose factor is 1.

    Chapter, Level 2, *Global and local access trade coverage for cost* (local-p's Gaussian)."""
    window = local_mask(centres, half_width, S)                     # (S,) or (T, S)
    p = np.asarray(validate.real_array(centres, "centres"), dtype=float)[..., None]
    D = float(half_width)
    if D == 0:
        return window.astype(float)
    sigma = D / 2
    return np.where(window, np.exp(-((np.arange(S) - p) ** 2) / (2 * sigma ** 2)), 0.0)


def local_p(scores, values, centres, half_width: float, *,
            empty: str = "zeros") -> AttentionResult:
    """Local-p attention from given scores (S,) or (T, S), values (S, D_v), centres (a number or
    (T,), e.g. from :func:`predicted_centre`) and the half-width D:
    ``a_tj = softmax_window(e_t)_j * exp(-(j - p_t)^2 / (2 (D/2)^2))``, ``c_t = a_t^T V``.

    Chapter, Level 2, *Global and local access trade coverage for cost*.

    ``weights`` are ``a_tj`` (the softmax over the window times the Gaussian), ``context`` is
    ``a_t^T V``; ``extras`` holds ``alignment`` (the softmax over the window alone), ``gaussian``
    (the factors) and ``centres``. A window that holds no position is an all-masked row, handled
    by ``empty`` as everywhere in the package.
    """
    e = validate.real_array(scores, "scores", min_ndim=1)
    S = e.shape[-1]
    window = local_mask(centres, half_width, S)                     # (S,) or (T, S)
    inner = attend_scores(e, values, mask=window, empty=empty)      # alpha_t, over the window
    g = gaussian_window(centres, half_width, S)                     # (S,) or (T, S)
    weights = inner.weights * g                                     # a_t, (S,) or (T, S)
    context = weights @ validate.real_array(values, "values", min_ndim=2)  # (D_v,) or (T, D_v)
    return AttentionResult(scores=inner.scores, weights=weights, context=context,
                           mask=inner.mask, masked_mass=inner.masked_mass,
                           empty_rows=inner.empty_rows, score="given", empty=empty,
                           extras={"alignment": inner.weights, "gaussian": g,
                                   "centres": np.asarray(centres, dtype=float)})
