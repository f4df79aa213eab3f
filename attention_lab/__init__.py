"""attention_lab: the helper package of an interactive lab on attention.

Attention is query-dependent weighted retrieval: a query ``q`` is scored against keys ``k_i``
(``e_i``), the scores are normalised by softmax into weights ``alpha_i`` over the eligible keys,
and the weights mix the values ``v_i`` into a context ``c = sum_i alpha_i v_i``.

The numpy reference is importable at once; the torch path (:mod:`attention_lab.tensor`), the
figures (:mod:`attention_lab.plots`) and the explorers (:mod:`attention_lab.widgets`) load on first
use, so ``import attention_lab`` stays fast and never imports torch, matplotlib or ipywidgets.
"""

from __future__ import annotations

import importlib

from .attention import AttentionResult, attend, attend_scores
from .examples import running_example
from .masks import causal_mask, combine_masks, local_m_mask, local_mask, padding_mask
from .scores import (additive_scores, bilinear_scores, compute_scores, dot_scores,
                     scaled_dot_scores)
from .softmax import entropy, naive_softmax, safe_fill, softmax

__version__ = "0.1.0"

__all__ = [
    "AttentionResult", "attend", "attend_scores", "running_example", "causal_mask",
    "combine_masks", "local_m_mask", "local_mask", "padding_mask", "additive_scores",
    "bilinear_scores", "compute_scores", "dot_scores", "scaled_dot_scores", "entropy",
    "naive_softmax", "safe_fill", "softmax", "__version__",
]

# (the numpy reference's modules are imported above, so they are attributes already)
_LAZY = {"tensor", "plots", "widgets", "analysis", "exercises", "toy", "streaming", "local"}


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attention_lab' has no attribute {name!r}")
