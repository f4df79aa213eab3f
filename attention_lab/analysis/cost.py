"""What attention costs: the score matrix's shape, element count and bytes, and the arithmetic.

With T queries, S keys, key width D_k and value width D_v, global attention forms (or streams
through) T x S scores per batch item and head. Scores cost T*S*D_k multiply-adds and the weighted
sum of values T*S*D_v, so the arithmetic is of order O(T S (D_k + D_v)); storing the weights costs
O(T S) elements per batch item and head.

A decoder that generates T steps one at a time asks one query per step. Its cross-attention keys
and values are projections of the same S encoder states at every step, so they can be computed
once and cached (chapter, Level 4, *Cost follows the query-key access pattern*): :func:`cache_cost`
counts what that saves and what the cache holds.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .._validate import float_dtype

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
    return math.prod(score_matrix_shape(batch, target, source, heads))  # exact, never wraps


def _dtype(dtype) -> str:
    """The name of a dtype the cost tables know ("float32", also for torch or numpy float32)."""
    return float_dtype(dtype)


def score_matrix_bytes(batch: int, target: int, source: int, heads: int = 1,
                       dtype: str = "float32") -> int:
    """Bytes to store the score (or weight) matrix in ``dtype``."""
    return score_matrix_elements(batch, target, source, heads) * BYTES_PER_ELEMENT[_dtype(dtype)]


def attention_flops(target: int, source: int, d_k: int, d_v: int, batch: int = 1,
                    heads: int = 1) -> int:
    """Floating-point operations of scores and weighted values: 2 * B*H * T*S*(D_k + D_v).

    (Each multiply-add counts as 2; the softmax's O(T S) work is left out, it is of lower order.)
    """
    T, S = _positive(target, "target"), _positive(source, "source")
    dk, dv = _positive(d_k, "d_k"), _positive(d_v, "d_v")
    B, H = _positive(batch, "batch"), _positive(heads, "heads")
    return 2 * B * H * T * S * (dk + dv)


def multiply_adds(target: int, source: int, d_k: int, d_v: int, batch: int = 1,
                  heads: int = 1) -> int:
    """B*H * T*S*(D_k + D_v): the multiply-adds of the scores (T*S*D_k) and of the weighted sum
    of values (T*S*D_v). Its order is the chapter's O(T S (D_k + D_v))."""
    return attention_flops(target, source, d_k, d_v, batch, heads) // 2


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n >= size or (size > 1024 and round(n / size, 1) >= 1):  # 1.0 MiB, not 1,024.0 KiB
            return f"{n / size:,.1f} {unit}"
    return f"{n:,} B"


class AttentionCost:
    """The calculator: every cost figure of one attention configuration, with a readable ``str``.

    >>> print(AttentionCost(batch=8, target=64, source=512, heads=4).elements)
    1048576
    """

    def __init__(self, *, batch: int = 1, target: int, source: int, heads: int = 1,
                 d_k: int = 64, d_v: int | None = None, dtype: str = "float32",
                 chunk: int | None = None):
        self.batch, self.target, self.source, self.heads = (
            _positive(batch, "batch"), _positive(target, "target"), _positive(source, "source"),
            _positive(heads, "heads"))
        self.d_k = _positive(d_k, "d_k")
        self.d_v = self.d_k if d_v is None else _positive(d_v, "d_v")
        self.dtype = _dtype(dtype)
        self.chunk = None if chunk is None else _positive(chunk, "chunk")
        self.shape = score_matrix_shape(self.batch, self.target, self.source, self.heads)
        self.elements = score_matrix_elements(self.batch, self.target, self.source, self.heads)
        self.bytes = score_matrix_bytes(self.batch, self.target, self.source, self.heads,
                                        self.dtype)
        self.multiply_adds = multiply_adds(self.target, self.source, self.d_k, self.d_v,
                                           self.batch, self.heads)
        self.flops = 2 * self.multiply_adds
        itemsize = BYTES_PER_ELEMENT[self.dtype]
        c = min(self.chunk or self.source, self.source)
        # streaming keeps one chunk of scores per (batch, head) instead of the whole row
        self.streaming_bytes = self.batch * self.heads * self.target * c * itemsize

    def __repr__(self) -> str:
        return (f"AttentionCost(batch={self.batch}, target={self.target}, source={self.source}, "
                f"heads={self.heads}, d_k={self.d_k}, d_v={self.d_v}, dtype={self.dtype!r})")

    def __str__(self) -> str:
        B, H, T, S = self.batch, self.heads, self.target, self.source
        lines = [
            f"score matrix shape  {self.shape}  (batch, {'heads, ' if H > 1 else ''}target, "
            f"source)",
            f"elements            {B} x {H} x {T} x {S} = {self.elements:,}",
            f"{'bytes (' + self.dtype + ')':<20}{self.bytes:,} ({human_bytes(self.bytes)}) for the "
            f"scores; the weights need as much again",
            f"multiply-adds       B*H * T*S*(D_k + D_v) = {B * H} x {T * S:,} x "
            f"({self.d_k} + {self.d_v}) = {self.multiply_adds:,}",
            "order               O(T S (D_k + D_v)) per batch item and head; "
            "storage O(T S)",
        ]
        if self.chunk is not None:
            label = f"streaming, chunk {self.chunk}"
            lines.append(f"{label:<19} {human_bytes(self.streaming_bytes)} of scores at a time "
                         f"instead of {human_bytes(self.bytes)}")
        return "\n".join(lines)


@dataclass(frozen=True)
class CacheCost:
    """The cost of ``steps`` decoder steps of cross-attention with and without a cache of the
    encoder's keys and values (multiply-adds and elements; see :func:`cache_cost`)."""

    steps: int
    source: int
    d_model: int
    d_k: int
    d_v: int
    heads: int
    batch: int
    dtype: str
    projection: int        # multiply-adds of K = H W_k and V = H W_v over the S encoder states
    attention: int         # multiply-adds of one step's scores and weighted sum (one query)
    without_cache: int     # steps x (projection + attention)
    with_cache: int        # projection once, then steps x attention
    cache_elements: int    # the cached K and V
    cache_bytes: int

    @property
    def saved(self) -> int:
        """Multiply-adds the cache saves: the projection of every step after the first."""
        return self.without_cache - self.with_cache

    @property
    def ratio(self) -> float:
        """How many times more arithmetic the decoder does without the cache."""
        return self.without_cache / self.with_cache

    def __str__(self) -> str:
        B, H, S, T = self.batch, self.heads, self.source, self.steps
        widths, steps = f"({self.d_k} + {self.d_v})", "s" * (T != 1)
        return "\n".join([
            f"project the encoder states   B*H * S * D_model * (D_k + D_v) = {B * H} x {S:,} x "
            f"{self.d_model} x {widths} = {self.projection:,} multiply-adds",
            f"one step's attention         B*H * S * (D_k + D_v) = {B * H} x {S:,} x {widths} = "
            f"{self.attention:,} multiply-adds (one query)",
            f"{f'{T} step{steps} without a cache':<29}T * (projection + attention) = "
            f"{self.without_cache:,}",
            f"{f'{T} step{steps} with a cache':<29}projection + T * attention = "
            f"{self.with_cache:,} "
            + (f"({self.ratio:.1f}x less)" if T > 1 else "(the same: one step)"),
            f"the cache holds              B*H * S * (D_k + D_v) = {self.cache_elements:,} "
            f"elements, {human_bytes(self.cache_bytes)} in {self.dtype}",
        ])


def cache_cost(*, steps: int, source: int, d_model: int, d_k: int = 64, d_v: int | None = None,
               heads: int = 1, batch: int = 1, dtype: str = "float32") -> CacheCost:
    """Cross-attention over ``steps`` decoder steps (one query each) with and without caching the
    encoder's keys and values.

    Chapter, Level 4, *Cost follows the query-key access pattern*. The S encoder states of width
    ``d_model`` are projected to keys (width ``d_k``) and values (``d_v``, default ``d_k``) in each
    of ``heads`` heads: ``B*H * S * D_model * (D_k + D_v)`` multiply-adds. Without a cache every
    step projects them again; with one they are projected once and kept, ``B*H * S * (D_k + D_v)``
    elements. A step's attention itself, ``B*H * S * (D_k + D_v)`` multiply-adds (see
    :func:`multiply_adds` with ``target=1``), is the same either way.

    >>> c = cache_cost(steps=64, source=512, d_model=512, d_k=64, heads=8)
    >>> c.without_cache // c.with_cache
    57
    """
    T, S = _positive(steps, "steps"), _positive(source, "source")
    D = _positive(d_model, "d_model")
    dk = _positive(d_k, "d_k")
    dv = dk if d_v is None else _positive(d_v, "d_v")
    H, B = _positive(heads, "heads"), _positive(batch, "batch")
    name = _dtype(dtype)
    projection = B * H * S * D * (dk + dv)
    attention = multiply_adds(1, S, dk, dv, B, H)
    elements = B * H * S * (dk + dv)
    return CacheCost(steps=T, source=S, d_model=D, d_k=dk, d_v=dv, heads=H, batch=B, dtype=name,
                     projection=projection, attention=attention,
                     without_cache=T * (projection + attention),
                     with_cache=projection + T * attention, cache_elements=elements,
                     cache_bytes=elements * BYTES_PER_ELEMENT[name])
