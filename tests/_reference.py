"""Test helpers: the numpy reference on tensors, and the table of mask shapes every path accepts."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from attention_lab import attend
from attention_lab.tensor import TensorAttention, eligibility


def attention_reference(Q, K, V, **kwargs) -> TensorAttention:
    """The numpy reference (:func:`attention_lab.attend`) on tensors, returned as float64 tensors:
    holds the torch path equal to the readable reference."""
    is_causal = kwargs.pop("is_causal", False)
    align = kwargs.pop("causal_align", "upper_left")
    scale = kwargs.pop("scale", 1.0)
    m = eligibility(Q, K, mask=kwargs.pop("mask", None), lengths=kwargs.pop("lengths", None),
                    is_causal=is_causal, causal_align=align)
    res = attend(Q.detach().double().numpy(), K.detach().double().numpy(),
                 V.detach().double().numpy(), mask=None if m is None else m.numpy(),
                 scale=scale, **kwargs)
    return TensorAttention(torch.from_numpy(np.ascontiguousarray(res.context)),
                           torch.from_numpy(np.ascontiguousarray(res.weights)), m)


def mask_shapes(scores_shape) -> tuple[list, list]:
    """(accepted, rejected) mask shapes for scores of ``scores_shape`` (..., T, S).

    Accepted: every shape that broadcasts to the scores without adding dimensions (each axis
    either the scores' size or 1, from 0-d up to the scores' rank). Rejected: a wrong key count,
    a wrong query count, and one dimension too many. The one table every path is held to.
    """
    r = len(scores_shape)
    accepted = []
    for k in range(r + 1):
        tail = scores_shape[r - k:]
        for ones in itertools.product((False, True), repeat=k):
            shape = tuple(1 if one else n for one, n in zip(ones, tail))
            if shape not in accepted:
                accepted.append(shape)
    *_, T, S = scores_shape
    rejected = [(S + 1,), (T + 1, S), (2,) + tuple(scores_shape), tuple(scores_shape) + (1,)]
    return accepted, rejected
