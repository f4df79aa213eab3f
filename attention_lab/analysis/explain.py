"""Attention as explanation, measured by interventions.

An attention map says where one read-out put its weight. Whether that position *explains* the
output is a causal question, and the only way to answer it is to intervene and watch the output.
This module does the interventions on one attention read-out with everything else held fixed:

    step = ReadoutStep(scores, values, mask, readout)    # one query's attention + what follows it
    weights = softmax(scores / tau) over eligible keys   context = weights @ values
    p = readout(context)                                 # the output distribution (sums to 1)

and compares output distributions with the total variation distance
``TVD(p, q) = 1/2 sum_c |p_c - q_c|`` (0: identical, 1: disjoint support).

* :func:`replace_value`: put a control value at the highest-weight position (weights unchanged).
* :func:`permute_weights`: shuffle the weights over the eligible positions many times and report
  the median TVD of the output (Jain & Wallace 2019), to be read against the maximum weight.
* :func:`uniform_weights`: the uniform-attention baseline (Wiegreffe & Pinter 2019).
* :func:`leave_one_out`: mask each eligible position in turn (renormalising the rest) and measure
  the output change: an importance per position.
* :func:`gradient_importance`: the norm of the gradient of a scalar output with respect to each
  position's input vector (torch autograd).
* :func:`kendall_tau`: rank agreement (tau-b, ties handled) between two importance vectors, e.g.
  attention weights and leave-one-out importance.

What these do not do: they test one model on the inputs given, one read-out at a time, holding the
query, the other positions and the downstream computation fixed. A large effect shows that this
computation depends on that route for this input; it does not show that the model "reasons" with
attention in general, and a small effect of one intervention does not rule out another route.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import _validate as validate
from .._validate import shape_str
from ..softmax import softmax


@dataclass(frozen=True)
class ReadoutStep:
    """One attention read-out and what follows it.

    scores   (S,) attention scores of one query
    values   (S, D_v)
    mask     (S,) bool, True = eligible
    readout  maps contexts (N, D_v) to output probabilities (N, C), rows summing to 1; everything
             downstream of the context, with the query and the rest of the model held fixed
    """

    scores: np.ndarray
    values: np.ndarray
    mask: np.ndarray
    readout: Callable[[np.ndarray], np.ndarray]
    temperature: float = 1.0

    def __post_init__(self):
        s = validate.real_array(self.scores, "scores", min_ndim=1)
        v = validate.real_array(self.values, "values", min_ndim=2)
        if s.ndim != 1:
            raise ValueError(f"scores must have shape (S,), got {shape_str(s.shape)}")
        if v.ndim != 2 or v.shape[0] != s.shape[0]:
            raise ValueError(f"values must have shape (S={s.shape[0]}, D_v), got "
                             f"{shape_str(v.shape)}")
        m = validate.mask_for(self.mask, s.shape)
        if not m.any():
            raise ValueError("mask has no eligible position; there is no read-out to explain")
        if not callable(self.readout):
            raise TypeError(f"readout must be callable, got {type(self.readout).__name__}")
        object.__setattr__(self, "scores", s)
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "mask", np.array(m))
        validate.temperature(self.temperature)

    @property
    def weights(self) -> np.ndarray:
        return softmax(self.scores, temperature=self.temperature, mask=self.mask)

    def outputs(self, weights) -> np.ndarray:
        """Output distributions (N, C) for weight rows (N, S) (or one row (S,) -> (C,))."""
        w = np.asarray(weights, dtype=float)
        single = w.ndim == 1
        probs = np.asarray(self.readout(np.atleast_2d(w) @ self.values), dtype=float)
        if probs.ndim != 2 or probs.shape[0] != np.atleast_2d(w).shape[0]:
            raise ValueError(f"readout must return (N, C) probabilities for N contexts, got "
                             f"shape {shape_str(probs.shape)}")
        sums = probs.sum(-1)
        if (probs < 0).any() or not np.allclose(sums, 1, atol=1e-5):
            raise ValueError(f"readout must return probabilities (rows >= 0 summing to 1), got "
                             f"rows summing to {sums.min():.3g}..{sums.max():.3g}; apply a softmax "
                             f"to logits")
        return probs[0] if single else probs

    @property
    def probs(self) -> np.ndarray:
        return self.outputs(self.weights)


def total_variation(p, q, axis: int = -1) -> np.ndarray:
    """``1/2 sum |p - q|`` along ``axis``: 0 for equal distributions, 1 for disjoint ones."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p.shape[axis] != q.shape[axis]:
        raise ValueError(f"p and q must have the same number of outcomes, got shapes "
                         f"{shape_str(p.shape)} and {shape_str(q.shape)}")
    return 0.5 * np.abs(p - q).sum(axis=axis)


def kendall_tau(x, y) -> float:
    """Kendall's tau-b between two score vectors of equal length (ties handled).

    ``tau_b = (concordant - discordant) / sqrt((n0 - ties_x) (n0 - ties_y))`` over the
    ``n0 = n(n-1)/2`` pairs. 1: same order, -1: reversed, about 0: unrelated. NaN when either
    vector is constant (no order to compare) or has fewer than 2 entries.
    """
    a = validate.real_array(x, "x", min_ndim=1)
    b = validate.real_array(y, "y", min_ndim=1)
    if a.ndim != 1 or b.shape != a.shape:
        raise ValueError(f"x and y must be vectors of the same length, got shapes {a.shape} and "
                         f"{b.shape} (a weight matrix: compare one row at a time)")
    if a.size < 2:
        return float("nan")
    i, j = np.triu_indices(a.size, k=1)
    sa, sb = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    denom = np.sqrt(float(np.sum(sa != 0)) * float(np.sum(sb != 0)))
    if denom == 0:
        return float("nan")
    return float(np.sum(sa * sb) / denom)


@dataclass(frozen=True)
class Intervention:
    """One intervention's effect: output distributions before/after and their TVD."""

    name: str
    tvd: float
    before: np.ndarray
    after: np.ndarray
    position: int | None = None
    weight: float | None = None

    @property
    def prediction_changed(self) -> bool:
        return int(np.argmax(self.before)) != int(np.argmax(self.after))


def replace_value(step: ReadoutStep, control, position: int | None = None) -> Intervention:
    """Replace the value at ``position`` (default: the highest-weight one) by ``control`` and
    recompute the output with the same weights. Measures how much the output depends on the
    content retrieved there, through this read-out."""
    w = step.weights
    pos = int(np.argmax(w)) if position is None else validate.count(position, "position",
                                                                    allow_zero=True)
    if not 0 <= pos < w.size:
        raise ValueError(f"position must lie in [0, {w.size}), got {position}")
    c = validate.real_array(control, "control")
    if c.shape != step.values.shape[1:]:
        raise ValueError(f"control must have shape {shape_str(step.values.shape[1:])} (one value), "
                         f"got {shape_str(c.shape)}")
    before = step.probs
    values = step.values.copy()
    values[pos] = c
    after = np.asarray(step.readout((w @ values)[None, :]), dtype=float)[0]
    return Intervention("replace value", float(total_variation(before, after)), before, after,
                        position=pos, weight=float(w[pos]))


@dataclass(frozen=True)
class PermutationResult:
    """TVDs of the output under random permutations of the eligible weights."""

    tvds: np.ndarray
    max_weight: float
    n_eligible: int

    @property
    def median(self) -> float:
        return float(np.median(self.tvds))


def permute_weights(step: ReadoutStep, n: int = 100, seed: int = 0) -> PermutationResult:
    """Shuffle the weights among the eligible positions ``n`` times (seeded); the output's TVD
    from the original for each shuffle. (Jain & Wallace 2019 report the median against the
    largest attention weight.)"""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    w = step.weights
    idx = np.flatnonzero(step.mask)
    rows = np.zeros((n, w.size))
    for r in range(n):
        rows[r, idx] = w[idx][rng.permutation(idx.size)]
    tvds = total_variation(step.outputs(rows), step.probs[None, :])
    return PermutationResult(tvds=tvds, max_weight=float(w.max()), n_eligible=int(idx.size))


def uniform_weights(step: ReadoutStep) -> Intervention:
    """Replace the attention by uniform weights over the eligible positions."""
    u = step.mask / step.mask.sum()
    before, after = step.probs, step.outputs(u)
    return Intervention("uniform attention", float(total_variation(before, after)), before, after)


def leave_one_out(step: ReadoutStep) -> np.ndarray:
    """TVD of the output when each eligible position in turn is masked out (the other weights
    renormalised, as the softmax would); NaN at positions that were not eligible. When removing
    a position leaves no eligible key, the context is zero (the package's ``empty="zeros"``
    policy) and the TVD is measured to the output of that zero context."""
    S = step.mask.size
    out = np.full(S, np.nan)
    idx = np.flatnonzero(step.mask)
    rows = np.zeros((idx.size, S))
    for r, j in enumerate(idx):
        m = step.mask.copy()
        m[j] = False
        rows[r] = softmax(step.scores, temperature=step.temperature, mask=m)  # zeros if empty
    out[idx] = total_variation(step.outputs(rows), step.probs[None, :])
    return out


def gradient_importance(fn, x) -> np.ndarray:
    """Per-position gradient norm ``||d fn(x) / d x_j||`` for ``x`` (S, D) and scalar ``fn``.

    ``fn`` takes a float tensor (S, D) that requires grad and returns a scalar tensor (e.g. the
    log-probability of the predicted symbol). A tensor ``x`` keeps its dtype; an array becomes
    torch's default dtype (float32). Imports torch.
    """
    import torch

    if isinstance(x, torch.Tensor):
        xt = x.detach().clone()
        if not xt.dtype.is_floating_point:
            xt = xt.to(torch.get_default_dtype())
    else:  # numpy / lists: torch's default dtype (float32), like model parameters
        xt = torch.as_tensor(np.asarray(x, dtype=float), dtype=torch.get_default_dtype())
    if xt.dim() != 2:
        raise ValueError(f"x must have shape (S, D), got {tuple(xt.shape)}")
    xt.requires_grad_(True)
    y = fn(xt)
    if not isinstance(y, torch.Tensor) or y.numel() != 1:
        raise ValueError("fn must return a scalar tensor")
    (g,) = torch.autograd.grad(y.reshape(()), xt, allow_unused=True) if y.requires_grad else [None]
    if g is None:
        raise ValueError("fn's output does not depend on x (no gradient reaches it): compute it "
                         "in torch from the tensor fn is given, without .detach() or numpy")
    return g.norm(dim=-1).detach().double().numpy()


@dataclass(frozen=True)
class StepReport:
    """All interventions on one read-out (see :func:`explain_step`)."""

    weights: np.ndarray
    replace: Intervention
    permutation: PermutationResult
    uniform: Intervention
    loo: np.ndarray
    tau_loo: float
    gradient: np.ndarray | None = None
    tau_gradient: float | None = None


def explain_step(step: ReadoutStep, control, *, n_permutations: int = 100, seed: int = 0,
                 gradient: np.ndarray | None = None) -> StepReport:
    """Run every intervention on ``step``; Kendall tau over the eligible positions."""
    w = step.weights
    loo = leave_one_out(step)
    idx = np.flatnonzero(step.mask)
    tau_g = None
    if gradient is not None:
        gradient = np.asarray(gradient, dtype=float)
        if gradient.shape != w.shape:
            raise ValueError(f"gradient must have shape (S={w.size},), one importance per "
                             f"position like the weights, got {shape_str(gradient.shape)}")
        tau_g = kendall_tau(w[idx], gradient[idx])
    return StepReport(weights=w, replace=replace_value(step, control),
                      permutation=permute_weights(step, n_permutations, seed),
                      uniform=uniform_weights(step), loo=loo,
                      tau_loo=kendall_tau(w[idx], loo[idx]), gradient=gradient,
                      tau_gradient=tau_g)
