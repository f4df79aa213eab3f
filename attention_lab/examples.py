"""The chapter's fixed data: the running example and the seeded examples of Levels 2-3.

Every function returns fresh copies, so a notebook that edits an array cannot change what the next
cell (or the next explorer) receives.

The running example (Level 2): one decoder query ``q`` (D_k = 3), five source keys ``K`` (S = 5) and
five values ``V`` (D_v = 3), plus the bilinear matrix ``W`` of the "general" score ``e_i = q^T W k_i``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _validate

QUERY = (0.8, -0.3, 0.5)
KEYS = (
    (0.2, 0.7, -0.1),
    (0.9, -0.2, 0.4),
    (0.1, 0.3, 0.8),
    (-0.6, 0.2, 0.5),
    (0.4, -0.8, -0.2),
)
VALUES = (
    (1.0, 0.0, 0.2),
    (0.7, 0.4, 0.1),
    (0.2, 0.9, 0.3),
    (0.1, 0.3, 0.8),
    (0.4, 0.2, 1.0),
)
BILINEAR_W = (
    (1.0, 0.1, 0.0),
    (0.0, 0.8, 0.2),
    (0.2, 0.0, 1.0),
)
#: The chapter's padding example: the first three sources are real, the last two are padding.
VALID = (True, True, True, False, False)

#: A second query over the same sources whose weight mass sits on the later positions (4 and 5),
#: for the "two queries, one source" comparison (ours; the chapter's heatmap uses illustrative rows).
LATER_QUERY = (-1.0, -0.8, -0.3)

#: The chapter's convex-hull figure (Level 3): three 2-D values and two weight vectors.
HULL_VALUES = ((0.0, 0.0), (2.6, 0.25), (0.55, 2.1))
HULL_WEIGHTS = ((0.6, 0.3, 0.1), (0.15, 0.25, 0.6))

#: Temperatures of the chapter's three-panel figure.
CHAPTER_TEMPERATURES = (0.5, 1.0, 2.0)


@dataclass(frozen=True)
class RunningExample:
    """``query`` (D_k,), ``keys`` (S, D_k), ``values`` (S, D_v), bilinear ``W`` (D_k, D_k), ``valid`` (S,)."""

    query: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    W: np.ndarray
    valid: np.ndarray


def running_example() -> RunningExample:
    """The chapter's running example as fresh float64 arrays."""
    return RunningExample(*(np.array(x) for x in (QUERY, KEYS, VALUES, BILINEAR_W, VALID)))


@dataclass(frozen=True)
class AdditiveExample:
    """Additive-attention example with different widths: ``q`` (4,), ``source`` (5, 6),
    ``W_q`` (5, 4), ``W_h`` (5, 6), ``v_a`` (5,); alignment width A = 5."""

    q: np.ndarray
    source: np.ndarray
    W_q: np.ndarray
    W_h: np.ndarray
    v_a: np.ndarray


def additive_example(seed: int = 19) -> AdditiveExample:
    """The chapter's Level 3 additive example, drawn from ``numpy.random.default_rng(seed)``.

    The draws happen in the chapter's order (q, source, W_q, W_h, v_a), so ``seed=19`` reproduces its
    weights ``[0.012 0.073 0.498 0.26 0.157]``.
    """
    rng = np.random.default_rng(seed)
    A, D_q, D_h = 5, 4, 6  # the alignment, query and source widths
    shapes = (D_q, (5, D_h), (A, D_q), (A, D_h), A)  # q, source, W_q, W_h, v_a
    return AdditiveExample(*(rng.normal(size=shape) for shape in shapes))


def tensor_example(seed: int = 19, dtype=None):
    """The chapter's batched example: ``Q`` (2, 3, 4), ``K`` (2, 5, 4), ``V`` (2, 5, 6) from
    ``torch.manual_seed(seed)`` (B=2, T=3, S=5, D_k=4, D_v=6). Imports torch."""
    import torch

    torch.manual_seed(seed)
    B, T, S, D_k, D_v = 2, 3, 5, 4, 6
    Q, K, V = (torch.randn(B, n, d) for n, d in ((T, D_k), (S, D_k), (S, D_v)))
    return (Q, K, V) if dtype is None else (Q.to(dtype), K.to(dtype), V.to(dtype))


def running_additive_params(alignment_width: int = 4, seed: int = 19) -> dict:
    """Additive-score parameters for the running example (query and keys of width 3):
    ``{"W_q": (A, 3), "W_k": (A, 3), "v": (A,)}`` from ``numpy.random.default_rng(seed)``.

    The chapter gives no additive parameters for its running example; these are ours, drawn once
    so that the score explorer can put additive scores beside the dot and bilinear ones. ``v`` is
    scaled so that the scores stay within +-3 like the other two.
    """
    rng = np.random.default_rng(seed)
    W_q = rng.normal(size=(alignment_width, 3))
    W_k = rng.normal(size=(alignment_width, 3))
    v = rng.normal(size=alignment_width)
    v = v * (2.5 / np.abs(v).sum())  # |score| <= ||v||_1 = 2.5
    return {"W_q": W_q, "W_k": W_k, "v": v}


@dataclass(frozen=True)
class LocalExample:
    """Ten source positions for global vs local attention: ``scores`` (S,), ``values`` (S, 2) and the
    ``target`` position (0-based) whose key matches the query best."""

    scores: np.ndarray
    values: np.ndarray
    target: int


def local_example(target: int = 7, S: int = 10, seed: int = 19, peak: float = 2.5) -> LocalExample:
    """A source of ``S`` positions where the query matches position ``target`` strongly (score
    ``peak``) and the others weakly (small seeded scores), for the global vs local comparison."""
    target = _validate.count(target, "target", allow_zero=True)
    if not 0 <= target < S:
        raise ValueError(f"target must lie in [0, S-1] = [0, {S - 1}], got {target}")
    rng = np.random.default_rng(seed)
    scores = rng.normal(scale=0.4, size=S)
    values = rng.normal(size=(S, 2))
    scores[target] = peak
    return LocalExample(scores=scores, values=values, target=int(target))


#: The geometry explorer's four 2-D keys (key 1 the longest) and four 2-D values: matching
#: happens in the keys' plane, the retrieved content lives in the values' plane (ours).
GEOMETRY_KEYS = ((3.0, 0.75), (1.35, 1.65), (-1.2, 1.95), (-0.9, -1.5))
GEOMETRY_VALUES = ((0.2, 1.8), (1.8, 1.6), (1.6, 0.2), (0.3, 0.3))


@dataclass(frozen=True)
class GeometryExample:
    """``keys`` (S, 2) and ``values`` (S, 2) in two dimensions, for scores seen as projections;
    the values are listed in order around the quadrilateral they span."""

    keys: np.ndarray
    values: np.ndarray


def geometry_example() -> GeometryExample:
    """Four 2-D keys of different lengths and directions and four 2-D values."""
    return GeometryExample(keys=np.array(GEOMETRY_KEYS, dtype=float),
                           values=np.array(GEOMETRY_VALUES, dtype=float))
