"""Boolean eligibility masks. Convention everywhere: ``True`` = the key may be attended to.

This is the convention of ``torch.nn.functional.scaled_dot_product_attention``. The
``key_padding_mask`` of ``torch.nn.MultiheadAttention`` is the opposite (True = ignore): convert
with ``~mask``.

Shapes: masks broadcast against scores of shape (..., T, S); the last axis indexes source
positions (keys), the one before it target positions (queries).
"""

from __future__ import annotations

import numpy as np

from . import _validate as validate
from ._validate import CAUSAL_ALIGNMENTS, shape_str  # noqa: F401  (re-exported)


def padding_mask(lengths, S: int) -> np.ndarray:
    """Mask of shape ``lengths.shape + (S,)``: position j is eligible when ``j < lengths[b]``.

    Chapter, Level 2, *Masks define which keys are eligible*: a padding mask makes the padded
    source positions ineligible. ``padding_mask([5, 3, 1], 5)`` is the chapter's exercise batch. A
    length of 0 gives an all-masked row. To use the mask with scores (B, T, S), add the query axis:
    ``mask[:, None, :]`` (or pass ``lengths=`` to :func:`attention_lab.attend`, which does it for
    you).
    """
    S = validate.count(S, "S")
    arr = validate.lengths(lengths, S)
    return np.arange(S) < arr[..., None]


def causal_mask(T: int, S: int | None = None, *, align: str = "upper_left") -> np.ndarray:
    """(T, S) mask letting target position t see source positions up to its own.

    Chapter, Level 2, *Masks define which keys are eligible* (a causal mask is an eligibility
    rule, not a padding mask): key j is eligible for query t when ``j <= t + offset``.
    ``align="upper_left"`` (the default, SDPA's ``is_causal``): ``tril(ones(T, S))``, query t sees
    keys ``j <= t``. ``align="lower_right"``: the last query lines up with the last key, query t sees
    ``j <= t + S - T`` (the convention of incremental decoding with a cache). They agree when T = S.
    """
    T = validate.count(T, "T")
    S = T if S is None else validate.count(S, "S")
    validate.causal_align(align)
    offset = 0 if align == "upper_left" else S - T
    return np.tril(np.ones((T, S), dtype=bool), k=offset)


def local_mask(centres, half_width: float, S: int) -> np.ndarray:
    """Window mask: key j is eligible when ``|j - p_t| <= half_width`` (Luong's window [p_t-D, p_t+D]).

    Chapter, Level 2, *Global and local access trade coverage for cost*.

    ``centres`` is one centre (gives an (S,) mask) or one centre per query (gives (T, S)); centres
    may be real numbers (local-p: a predicted position) and may lie outside ``[0, S)``, in which case
    the window may hold no key at all. Positions are 0-based.
    """
    S = validate.count(S, "S")
    p = validate.real_array(centres, "centres")
    if p.ndim > 1:
        raise ValueError(f"centres has shape {shape_str(p.shape)}; expected a number or a vector (T,)")
    D = validate.real_array(half_width, "half_width")
    if D.ndim != 0:
        raise ValueError(f"half_width must be a single number, got shape {shape_str(D.shape)}")
    if D < 0:
        raise ValueError(f"half_width must be >= 0, got {float(D)}")
    positions = np.arange(S)
    return np.abs(positions - p[..., None]) <= D + 1e-12


def local_m_mask(T: int, S: int, half_width: float) -> np.ndarray:
    """Luong's local-m window: monotonic centres ``p_t = t``; shape (T, S).

    Chapter, Level 2, *Global and local access trade coverage for cost*.
    """
    T = validate.count(T, "T")
    return local_mask(np.arange(T, dtype=float), half_width, S)


def combine_masks(*masks) -> np.ndarray:
    """Keys eligible under every mask (logical AND), broadcast together.

    Chapter, Level 2, *Masks define which keys are eligible*: eligible = padding AND causal AND ...

    ``combine_masks(padding_mask(lengths, S)[:, None, :], causal_mask(T, S))`` has shape (B, T, S).
    """
    if not masks:
        raise ValueError("combine_masks needs at least one mask")
    arrays = [_numpy(validate.bool_mask(m, f"masks[{i}]")) for i, m in enumerate(masks)]
    shape = validate.broadcast_shapes(*(a.shape for a in arrays))
    if shape is None:
        shapes = ", ".join(shape_str(a.shape) for a in arrays)
        raise ValueError(f"masks of shapes {shapes} do not broadcast together")
    out = np.ones(shape, dtype=bool)
    for a in arrays:
        out &= a
    return out


def describe(mask) -> str:
    """One line for a mask: shape, eligible fraction, and how many rows have no eligible key."""
    m = _numpy(validate.bool_mask(mask))
    rows = m.reshape(int(np.prod(m.shape[:-1])), m.shape[-1]) if m.ndim else m.reshape(1, 1)
    empty = int((~rows.any(axis=-1)).sum())
    share = f"{m.mean():.0%} of query-key pairs eligible" if m.size else "no query-key pairs"
    return f"mask {shape_str(m.shape)}: {share}, {empty} all-masked row(s)"


def _numpy(mask) -> np.ndarray:
    """A boolean mask from :func:`validate.bool_mask` (a numpy array or a torch tensor) as numpy."""
    return mask.detach().cpu().numpy() if validate._is_torch_tensor(mask) else mask
