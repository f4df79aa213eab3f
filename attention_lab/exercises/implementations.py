"""The implementations handed to a student's code by the checks: attentions and masked softmaxes
that a student's *test* must accept or reject (checks 1.4, 2.6, 3.2), and the readout layer a
student's function calls (check 4.3).

A case holds them as markers (:class:`Impl`, :class:`Readout`: data only); :func:`callable_of`
makes the function. Student-side, ``check`` calls it in the notebook's process. In the grader it
runs in the grader's own process only (:mod:`attention_lab.grading.channel`): the graded kernel
gets a stub that forwards each call, so a notebook can call the implementation its case hands it,
but can neither read how it works (which one it is, whether it is broken) nor reuse it as a
softmax outside that case.
"""

from __future__ import annotations

import numpy as np


class Impl:
    """A marker: the implementation a case hands to a student's test (checks 1.4, 2.6, 3.2), by
    code letter. Only data: :func:`make_impl` makes the function."""

    def __init__(self, code: str):
        self.code = code

    def __repr__(self) -> str:
        return f"Impl({self.code!r})"


#: the parameters of check 4.3's readout layer
READOUT_PARAMS = ("h", "W_c", "b_c", "W_o", "b_o")


class Readout:
    """A marker: the readout layer a case hands to a student's function (check 4.3), as its
    parameters (numpy arrays named as :data:`READOUT_PARAMS`)."""

    def __init__(self, params: dict):
        self.params = params

    def __repr__(self) -> str:
        h, W_o = self.params["h"], self.params["W_o"]
        return f"Readout(decoder state of width {h.shape[0]}, {W_o.shape[0]} output symbols)"


def _softmax(e, axis=-1):
    e = e - np.max(e, axis=axis, keepdims=True)
    w = np.exp(e)
    return w / w.sum(axis=axis, keepdims=True)


def _bilinear(q, K):
    # W = I + 0.5 * (ones just above the diagonal, wrapping round), without making the (D, D)
    # matrix (the grader runs this on a kernel's arguments): W.T @ q = q + 0.5 * roll(q, 1)
    return K @ (q + 0.5 * np.roll(q, 1))


#: the scores (S,) of the attentions A-E (F returns the first value)
_SCORES = {"A": lambda q, K: K @ q, "B": lambda q, K: np.zeros(K.shape[0]),
           "C": lambda q, K: np.sqrt((K * K).sum(axis=1)), "D": lambda q, K: (K @ q) / 0.5,
           "E": _bilinear}


def _attend(code: str):
    def attend(query, keys, values):
        q = np.asarray(query, dtype=float)
        K = np.asarray(keys, dtype=float)
        V = np.asarray(values, dtype=float)
        if q.ndim != 1 or K.ndim != 2 or V.ndim != 2 or K.shape[1] != q.shape[0] \
                or V.shape[0] != K.shape[0]:
            raise ValueError(
                f"attend(query, keys, values) takes query (D,), keys (S, D) and values (S, D_v); "
                f"got shapes {q.shape}, {K.shape}, {V.shape}")
        if code == "F":
            return V[0].copy()
        return _softmax(_SCORES[code](q, K)) @ V                          # (D_v,)

    return attend


def _masked_softmax(code: str):
    def masked_softmax(scores, mask):
        s = np.asarray(scores, dtype=float)
        m = np.broadcast_to(np.asarray(mask, dtype=bool), s.shape)
        empty = ~m.any(axis=-1, keepdims=True)                    # rows without an eligible key
        with np.errstate(all="ignore"):
            if code in ("G", "H", "I"):                            # -inf fill
                if code == "I" and empty.any():
                    raise ValueError("a row has no eligible key (policy: raise)")
                w = _softmax(np.where(m, s, -np.inf))             # NaN in empty rows
                return np.where(empty, 0.0, w) if code == "G" else w
            return {"J": lambda: _softmax(s) * m,                  # mask after the softmax
                    "K": lambda: _softmax(np.where(m, s, -30.0)),  # a finite fill of -30
                    "L": lambda: _softmax(s * m),                  # masked scores set to 0
                    "M": lambda: _softmax(s),                      # the mask ignored
                    "N": lambda: _softmax(np.where(m, s, np.finfo(s.dtype).min)),  # finfo.min
                    "O": lambda: _softmax(np.where(m, -np.inf, s)),  # the mask inverted
                    }[code]()

    return masked_softmax


def make_impl(code: str):
    """The callable of implementation ``code``: ``attend(query, keys, values) -> context`` (A-F,
    check 1.4) or ``masked_softmax(scores, mask) -> weights`` (G-O, checks 2.6 and 3.2), named as
    a student's test receives it. Which of them a correct test must accept is the checks'
    business (``specs.base.IMPL_NOTES``)."""
    fn = _attend(code) if code in "ABCDEF" else _masked_softmax(code)
    fn.__qualname__ = fn.__name__
    return fn


def make_readout(params: dict):
    """``readout(context) -> probabilities``: the toy model's layers after the context, with its
    decoder state ``h`` held fixed: ``softmax(W_o tanh(W_c [h; c] + b_c) + b_o)``. ``context`` is
    one (D_v,) or several (N, D_v); the result (C,) or (N, C)."""
    h, W_c, b_c, W_o, b_o = (np.asarray(params[k], dtype=float) for k in READOUT_PARAMS)

    def readout(context):
        c = np.asarray(context, dtype=float)
        if c.shape[-1:] != (W_c.shape[1] - h.shape[0],):
            raise ValueError(f"readout takes a context of width {W_c.shape[1] - h.shape[0]}, "
                             f"got shape {c.shape}")
        hc = np.concatenate([np.broadcast_to(h, c.shape[:-1] + h.shape), c], axis=-1)
        return _softmax(np.tanh(hc @ W_c.T + b_c) @ W_o.T + b_o)   # (..., C)

    return readout


def callable_of(marker):
    """The function a case's :class:`Impl` or :class:`Readout` stands for."""
    if isinstance(marker, Impl):
        return make_impl(marker.code)
    if isinstance(marker, Readout):
        return make_readout(marker.params)
    raise TypeError(f"not an implementation marker: {marker!r}")


def is_marker(x) -> bool:
    return isinstance(x, (Impl, Readout))


__all__ = ["READOUT_PARAMS", "Impl", "Readout", "make_impl", "make_readout",
           "callable_of", "is_marker"]
