"""How the context moves when the query moves: soft attention is differentiable, hard retrieval is
not (chapter, Level 1, *Attention is a differentiable retrieval rule*).

:func:`context_jacobian` returns ``dc/dq`` for one query, computed by torch autograd through
:func:`attention_lab.tensor.attention` (soft) or through one-hot arg-max weights (hard). The soft
Jacobian is nonzero: every score, and so every value, passes a gradient to the query. The hard one
is zero wherever the arg max is unique (almost everywhere): a small move of the query changes no
weight, and at a tie the context jumps, so training by gradient descent gets no signal from it.
torch is imported when a function is called, not with the package.
"""

from __future__ import annotations

import numpy as np

from . import _validate as validate

__all__ = ["context_jacobian", "RETRIEVALS"]

RETRIEVALS = ("soft", "hard")


def context_jacobian(query, keys, values, *, retrieval: str = "soft",
                     temperature: float = 1.0) -> np.ndarray:
    """The Jacobian ``dc/dq`` of the context with respect to the query, shape (D_v, D_k).

    ``query`` (D_k,), ``keys`` (S, D_k), ``values`` (S, D_v); ``retrieval``: "soft" (softmax of
    the dot scores at ``temperature``) or "hard" (all weight on the highest score). Computed in
    float64 by ``torch.autograd.functional.jacobian``.
    """
    import torch

    from .tensor import attention

    if retrieval not in RETRIEVALS:
        raise ValueError(f"retrieval must be one of {RETRIEVALS}, got {retrieval!r}")
    q = validate.real_array(query, "query", min_ndim=1)
    if q.ndim != 1:
        raise ValueError(f"query must be one query of shape (D_k,), got shape {q.shape}")
    k = validate.real_array(keys, "keys", min_ndim=2)
    vals = validate.real_array(values, "values", min_ndim=2)
    for name, x, width in (("keys", k, "D_k"), ("values", vals, "D_v")):
        if x.ndim != 2:
            raise ValueError(f"{name} must have shape (S, {width}), got shape "
                             f"{validate.shape_str(x.shape)}")
    # checked here, with the caller's names, for both retrievals (the hard one has no other check)
    validate.key_set("keys", k.shape)
    validate.same_width("query", q.shape, "keys", k.shape)
    validate.one_value_per_key("keys", k.shape, "values", vals.shape)
    validate.temperature(temperature)
    K = torch.as_tensor(k, dtype=torch.float64)                          # (S, D_k)
    Vs = torch.as_tensor(vals, dtype=torch.float64)                      # (S, D_v)

    def context(qt):                                                     # (D_k,) -> (D_v,)
        if retrieval == "soft":
            return attention(qt[None, :], K, Vs, temperature=temperature).context[0]
        scores = K @ qt                                                  # (S,)
        weights = torch.nn.functional.one_hot(scores.argmax(), K.shape[0]).to(torch.float64)
        return weights @ Vs                                              # arg max: no gradient

    jac = torch.autograd.functional.jacobian(context, torch.as_tensor(q, dtype=torch.float64))
    return jac.numpy()                                                   # (D_v, D_k)
