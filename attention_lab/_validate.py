"""Input checks shared by every path: the numpy reference, the torch path and streaming.

Every public function runs its arguments through these helpers, so a bad argument produces the same
kind of message on every path: the argument's name, what it got, and what was expected. Each check
exists once. Those that take arrays accept numpy arrays, lists and torch tensors alike; torch is
never imported here (a tensor is recognised by its type's module), so ``import attention_lab``
stays light.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

EMPTY_POLICIES = ("zeros", "nan", "raise")
CAUSAL_ALIGNMENTS = ("upper_left", "lower_right")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def shape_str(shape) -> str:
    """``(5,)`` and ``(2, 3)`` as numpy prints them."""
    return str(tuple(int(n) for n in shape))


def broadcast_shapes(*shapes) -> tuple[int, ...] | None:
    """The broadcast of ``shapes``, or None when they do not broadcast. Pure Python: about 10x
    cheaper than ``torch.broadcast_shapes`` (it sits on every attention call's path)."""
    first = shapes[0]
    if all(s == first for s in shapes[1:]):  # the common case, about 5x cheaper
        return tuple(first)
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for shape in shapes:
        for i, n in enumerate(shape, start=ndim - len(shape)):
            if n != 1:
                if out[i] not in (1, n):
                    return None
                out[i] = n
    return tuple(out)


# --- scalars ------------------------------------------------------------------------------------

def temperature(value, name: str = "temperature") -> float:
    """A temperature (or any positive divisor or factor): a finite real number > 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number > 0, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


def count(n, name: str, *, allow_zero: bool = False) -> int:
    """A count (T, S, a chunk size): any integer type (Python, numpy, a 0-d integer tensor), > 0
    (or >= 0 with ``allow_zero``). Floats and booleans are refused, as ``range`` refuses them."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        if not (_is_torch_tensor(n) and n.dim() == 0 and not n.dtype.is_floating_point
                and str(n.dtype) != "torch.bool"):
            raise TypeError(f"{name} must be an integer, got {type(n).__name__} {n!r}")
    n = int(n)
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {n}")
    return n


def flag(value, name: str) -> bool:
    """A switch such as ``is_causal``: a bool (Python or numpy), nothing else ('no' is truthy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool (True or False), got {type(value).__name__} "
                        f"{value!r}")
    return bool(value)


def empty_policy(empty) -> str:
    if not isinstance(empty, str) or empty not in EMPTY_POLICIES:
        raise ValueError(
            f"empty must be one of {EMPTY_POLICIES} (what an all-masked row returns), got {empty!r}"
        )
    return empty


def causal_align(align, name: str = "align") -> str:
    if not isinstance(align, str) or align not in CAUSAL_ALIGNMENTS:
        raise ValueError(f"{name} must be one of {CAUSAL_ALIGNMENTS}, got {align!r}")
    return align


def axis(ax, ndim: int, name: str = "axis") -> int:
    if isinstance(ax, (bool, np.bool_)) or not isinstance(ax, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {ax!r}")
    if not -ndim <= ax < ndim:
        raise ValueError(f"{name}={ax} is out of range for an array with {ndim} dimension(s)")
    return int(ax) % ndim


def float_dtype(dtype, name: str = "dtype") -> str:
    """The name of a floating dtype (numpy, torch or a string): float16, bfloat16, float32 or
    float64."""
    text = str(getattr(dtype, "name", dtype)) if not isinstance(dtype, str) else dtype
    text = text.replace("torch.", "")
    if text not in FLOAT_DTYPES and dtype is not None:
        try:
            text = np.dtype(dtype).name
        except (TypeError, ValueError):
            pass
    if text not in FLOAT_DTYPES:
        raise ValueError(f"{name} must be a floating dtype, one of {FLOAT_DTYPES}, got {dtype!r}")
    return text


# --- arrays -------------------------------------------------------------------------------------

def real_array(x, name: str, *, min_ndim: int = 0, allow_neg_inf: bool = False,
               allow_nan: bool = False) -> np.ndarray:
    """Return ``x`` as a floating numpy array, or raise a clear ``TypeError``/``ValueError``.

    Integer input becomes float64; float16/32/64 input keeps its dtype. Booleans, complex numbers,
    strings, ragged lists and objects are rejected. NaN and +-inf are rejected (``-inf`` is
    accepted where ``allow_neg_inf`` is set: it is how the chapter writes "ineligible" into a score
    vector; NaN where ``allow_nan`` is set).
    """
    if _is_torch_tensor(x):
        raise TypeError(
            f"{name} is a torch.Tensor; the numpy reference takes numpy arrays "
            f"(use attention_lab.tensor for tensors, or pass {name}.detach().numpy())"
        )
    arr = _as_array(x, name)
    if arr.dtype == bool:
        raise TypeError(f"{name} has dtype bool; expected real numbers")
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    elif arr.dtype.kind != "f":
        raise TypeError(f"{name} has dtype {arr.dtype}; expected real numbers (int or float)")
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} has shape {shape_str(arr.shape)}; expected at least {min_ndim} dimension(s)"
        )
    bad = np.isposinf(arr) | (np.isneginf(arr) & (not allow_neg_inf))
    if not allow_nan:
        bad |= np.isnan(arr)
    if bad.any():
        allowed = " (-inf is allowed and means 'ineligible')" if allow_neg_inf else ""
        raise ValueError(_non_finite_message(name, arr, bad) + allowed)
    return arr


def nonempty_keys(shape, name: str, what: str = "keys") -> None:
    """The key axis (the last) of ``shape`` must not be empty (a softmax over no keys)."""
    if len(shape) == 0 or shape[-1] == 0:
        raise ValueError(f"{name} has shape {shape_str(shape)}: no {what} on its last axis (S=0); "
                         f"a softmax needs at least one")


def finite_tensors(**tensors) -> None:
    """Raise ``ValueError`` naming the first tensor that holds NaN or +-inf (the numpy reference's
    rule, on the torch paths). One pass: a finite sum of all elements proves every element finite
    (NaN and inf propagate into a sum, accumulated in float32 or float64); only a sum that is not
    finite (or that overflows) pays for the element-wise search."""
    import torch

    total = 0.0
    for x in tensors.values():
        wide = torch.float64 if x.dtype == torch.float64 else torch.float32
        total = total + x.detach().sum(dtype=wide).double()
    if math.isfinite(float(total)):
        return
    for name, x in tensors.items():
        bad = ~torch.isfinite(x.detach())
        if bool(bad.any()):
            raise ValueError(_non_finite_message(name, x.detach(), bad))


def _non_finite_message(name, arr, bad) -> str:
    """One message for every path: how many, which first, where."""
    where = bad.nonzero()[0] if _is_torch_tensor(bad) else np.argwhere(bad)[0]
    first = tuple(int(i) for i in where)
    value = float(arr[first])
    what = "NaN" if math.isnan(value) else str(value)
    return (f"{name} contains {int(bad.sum())} non-finite value(s), first {what} at index {first}; "
            f"inputs must be finite")


# --- shapes of queries, keys and values -------------------------------------------------------

def key_set(name: str, shape) -> None:
    """Keys (..., S, D_k) with S > 0: attention over an empty key set is undefined."""
    if shape[-2] == 0:
        raise ValueError(f"{name} has shape {shape_str(shape)}: the key set is empty (S=0)")


def same_width(q_name: str, q_shape, k_name: str, k_shape, note: str = "") -> None:
    """Query and key widths D_k must match for dot-product scores."""
    if q_shape[-1] != k_shape[-1]:
        raise ValueError(f"{q_name} has width D_k={q_shape[-1]} (shape {shape_str(q_shape)}) but "
                         f"{k_name} has width {k_shape[-1]} (shape {shape_str(k_shape)}); "
                         f"{note or 'they must match'}")


def one_value_per_key(k_name: str, k_shape, v_name: str, v_shape, *, S=None) -> None:
    """Keys (..., S, D_k) (or scores (..., S) with ``S`` given) and values (..., S, D_v) have the
    same number of rows S."""
    S = k_shape[-2] if S is None else S
    if v_shape[-2] != S:
        raise ValueError(f"{v_name} has {v_shape[-2]} rows (shape {shape_str(v_shape)}) but "
                         f"{k_name} has S={S} keys (shape {shape_str(k_shape)}); "
                         f"every key needs exactly one value")


def batch_dims(**shapes) -> tuple[int, ...]:
    """The broadcast of the batch dimensions (all but the last two) of the named shapes."""
    batches = [s[:-2] for s in shapes.values()]
    out = broadcast_shapes(*batches)
    if out is None:
        named = ", ".join(f"{n} {shape_str(b)}" for n, b in zip(shapes, batches))
        raise ValueError(f"the batch dimensions of {named} do not broadcast")
    return out


# --- masks and lengths --------------------------------------------------------------------------

def bool_mask(mask, name: str = "mask"):
    """``mask`` as a boolean array (True = eligible): a numpy array, or the torch tensor itself.

    Lists, numpy arrays and tensors are accepted; strings, ragged lists and non-boolean dtypes are
    refused with a ``TypeError``.
    """
    if _is_torch_tensor(mask):
        if str(mask.dtype) != "torch.bool":
            raise TypeError(_mask_dtype_message(name, mask.dtype))
        return mask
    arr = _as_array(mask, name)
    if arr.dtype != bool:
        raise TypeError(_mask_dtype_message(name, arr.dtype))
    return arr


def _mask_dtype_message(name, dtype) -> str:
    return (f"{name} has dtype {dtype}; expected a boolean array with True = eligible key. "
            f"Convert 0/1 masks with {name}.astype(bool) (tensors: {name}.bool()); a True = ignore "
            f"mask (the convention of torch.nn.MultiheadAttention's key_padding_mask) must be "
            f"inverted with ~{name}; a float additive mask is not accepted")


def mask_shape(shape, scores_shape, name: str = "mask") -> None:
    """A mask must broadcast to the scores (..., T, S) without adding dimensions."""
    shape, scores_shape = tuple(shape), tuple(scores_shape)
    ok = len(shape) <= len(scores_shape) and broadcast_shapes(shape, scores_shape) == scores_shape
    if not ok:
        S = scores_shape[-1] if scores_shape else 0
        last = shape[-1] if shape else None
        hint = ""
        if last is not None and last not in (S, 1):
            hint = f" ({name} has {last} positions on its last axis, the scores have S={S} keys)"
        raise ValueError(
            f"{name} has shape {shape_str(shape)} but the scores have shape "
            f"{shape_str(scores_shape)}{hint}; a mask must broadcast to (..., T, S) without "
            f"adding dimensions"
        )


def mask_for(mask, scores_shape, name: str = "mask") -> np.ndarray:
    """A boolean numpy ``mask`` checked against ``scores_shape`` (..., T, S) and broadcast to it."""
    arr = bool_mask(mask, name)
    if _is_torch_tensor(arr):
        arr = arr.detach().cpu().numpy()
    mask_shape(arr.shape, scores_shape, name)
    return np.broadcast_to(arr, tuple(scores_shape))


def lengths(value, S: int, name: str = "lengths", *, batch_shape=None) -> np.ndarray:
    """Valid lengths as an int64 numpy array: integer types only (Python, numpy or torch), every
    length in [0, S].

    With ``batch_shape`` (the scores' batch dimensions), one length per batch item: ``value`` is
    one length for everything (shape ()), or its shape is the leading part of the batch
    dimensions: (B,) for inputs (B, T, D) or (B, H, T, D), (B, H) for one per item and head. It
    never lines up with a later axis (with B == H a (B,) vector indexes B, not H).
    """
    if _is_torch_tensor(value):
        value = value.detach().cpu().numpy()
    arr = _as_array(value, name)
    if arr.dtype == bool or arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, got dtype {arr.dtype}")
    if batch_shape is not None:
        batch_shape = tuple(batch_shape)
        if arr.ndim > len(batch_shape) or arr.shape != batch_shape[:arr.ndim]:
            expected = "a single length (the scores have no batch dimensions)" if not batch_shape \
                else f"a single length or one per batch item, shape {shape_str(batch_shape[:1])}"
            raise ValueError(f"{name} has shape {shape_str(arr.shape)}; expected {expected} "
                             f"(the batch dimensions are {shape_str(batch_shape)})")
    if (arr < 0).any() or (arr > S).any():
        raise ValueError(f"{name} must lie in [0, S={S}] (S = the number of keys), got "
                         f"{arr.tolist()}")
    return arr.astype(np.int64, copy=False)


def lengths_view(arr_shape, n_batch: int) -> tuple[int, ...]:
    """Where a padding mask ``lengths.shape + (S,)`` goes among the scores (batch..., T, S): the
    shape that puts the lengths on the leading batch axes and the keys last."""
    return tuple(arr_shape[:-1]) + (1,) * (n_batch - (len(arr_shape) - 1)) + (1, arr_shape[-1])


# --- helpers ------------------------------------------------------------------------------------

def _as_array(x, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} could not be read as an array of numbers: {exc}") from None
    if arr.dtype == object:
        raise TypeError(f"{name} could not be read as an array (a ragged list or mixed types?)")
    return arr


def _is_torch_tensor(x) -> bool:
    mod = type(x).__module__
    return mod.startswith("torch") and type(x).__name__ in ("Tensor", "Parameter")
