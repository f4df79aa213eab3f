"""What attention costs: the score matrix's shape, element count and bytes, and the arithmetic.

With T queries, S keys, key width D_k and value width D_v, global attention forms (or streams
through) T x S scores per batch item and head. Scores cost T*S*D_k multiply-adds and the weighted
sum of values T*S*D_v, so the arithmetic is of order O(T S (D_k + D_v)); storing the weights costs
O(T S) elements per batch item and head.
"""

from __future__ import annotations

import numbers

import numpy as np

BYTES_PER_ELEMENT = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


def _positive(n, name: str) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    return int(n)


def score_matrix_shape(batch: int, target: int, source: int, heads: int = 1) -> tuple[int, ...]:
    """(B, H, T, S), or (B, T, S) when ``heads == 1``."""
    B, T, S, H = (_positive(batch, "batch"), _positive(target, "target"),
                  _positive(source, "source"), _positive(heads, "heads"))
    return (B, T, S) if H == 1 else (B, H, T, S)


def score_matrix_elements(batch: int, target: int, source: int, heads: int = 1) -> int:
    """B * H * T * S. The chapter's exercise: batch 8, target 64, source 512, 4 heads -> 1,048,576."""
    return int(np.prod(score_matrix_shape(batch, target, source, heads), dtype=np.int64))


def score_matrix_bytes(batch: int, target: int, source: int, heads: int = 1,
                       dtype: str = "float32") -> int:
    """Bytes to store the score (or weight) matrix in ``dtype``."""
    name = str(dtype).replace("torch.", "")
    if name not in BYTES_PER_ELEMENT:
        raise ValueError(f"dtype must be one of {sorted(BYTES_PER_ELEMENT)}, got {dtype!r}")
    return score_matrix_elements(batch, target, source, heads) * BYTES_PER_ELEMENT[name]


def attention_flops(target: int, source: int, d_k: int, d_v: int, batch: int = 1,
                    heads: int = 1) -> int:
    """Floating-point operations of scores and weighted values: 2 * B*H * T*S*(D_k + D_v).

    (Each multiply-add counts as 2; the softmax's O(T S) work is left out, it is of lower order.)
    """
    T, S = _positive(target, "target"), _positive(source, "source")
    dk, dv = _positive(d_k, "d_k"), _positive(d_v, "d_v")
    B, H = _positive(batch, "batch"), _positive(heads, "heads")
    return 2 * B * H * T * S * (dk + dv)
