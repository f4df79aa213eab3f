"""Input checks shared by the numpy modules.

Every public function of the package runs its arguments through these helpers, so a bad argument
always produces the same kind of message: the argument's name, what it got, and what was expected.
"""

from __future__ import annotations

import numbers

import numpy as np

EMPTY_POLICIES = ("zeros", "nan", "raise")


def shape_str(shape: tuple[int, ...]) -> str:
    """``(5,)`` and ``(2, 3)`` as numpy prints them."""
    return str(tuple(int(n) for n in shape))


def real_array(x, name: str, *, min_ndim: int = 0, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a floating numpy array, or raise a clear ``TypeError``/``ValueError``.

    Integer input becomes float64; float16/32/64 input keeps its dtype. Booleans, complex numbers,
    strings and objects are rejected. NaN and +-inf are rejected (``-inf`` is accepted where
    ``allow_neg_inf`` is set: it is how the chapter writes "ineligible" into a score vector).
    """
    if _is_torch_tensor(x):
        raise TypeError(
            f"{name} is a torch.Tensor; the numpy reference takes numpy arrays "
            f"(use attention_lab.tensor for tensors, or pass {name}.detach().numpy())"
        )
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} could not be read as an array of numbers: {exc}") from None
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
    bad = np.isnan(arr) | (np.isposinf(arr)) | (np.isneginf(arr) & (not allow_neg_inf))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "NaN" if np.isnan(arr[where]) else str(arr[where])
        allowed = " (-inf is allowed and means 'ineligible')" if allow_neg_inf else ""
        raise ValueError(
            f"{name} contains {int(bad.sum())} non-finite value(s), first {what} at index "
            f"{where}; inputs must be finite{allowed}"
        )
    return arr


def bool_mask(mask, name: str = "mask") -> np.ndarray:
    """Return ``mask`` as a numpy bool array (True = eligible) or raise ``TypeError``."""
    if _is_torch_tensor(mask):
        mask = mask.detach().cpu().numpy()
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise TypeError(
            f"{name} has dtype {arr.dtype}; expected a boolean array with True = eligible key. "
            f"Convert 0/1 masks with {name}.astype(bool); a True = ignore mask (the convention of "
            f"torch.nn.MultiheadAttention's key_padding_mask) must be inverted with ~{name}"
        )
    return arr


def mask_for(mask, scores_shape: tuple[int, ...], name: str = "mask") -> np.ndarray:
    """Check that a boolean ``mask`` broadcasts to ``scores_shape`` (..., T, S) and broadcast it.

    The mask may not add dimensions to the scores: a mask that would change the shape of the
    result is a mistake, not a broadcast.
    """
    arr = bool_mask(mask, name)
    S = scores_shape[-1] if scores_shape else 0
    ok = arr.ndim <= len(scores_shape)
    if ok:
        try:
            ok = np.broadcast_shapes(arr.shape, scores_shape) == tuple(scores_shape)
        except ValueError:
            ok = False
    if not ok:
        last = arr.shape[-1] if arr.ndim else None
        hint = ""
        if last is not None and last != S and last != 1:
            hint = f" ({name} has {last} positions on its last axis, the scores have S={S} keys)"
        raise ValueError(
            f"{name} has shape {shape_str(arr.shape)} but the scores have shape "
            f"{shape_str(scores_shape)}{hint}; a mask must broadcast to (..., T, S) without "
            f"adding dimensions"
        )
    return np.broadcast_to(arr, scores_shape)


def temperature(value, name: str = "temperature") -> float:
    """A temperature (or any positive divisor): a finite real number > 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number > 0, got {type(value).__name__} {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


def empty_policy(empty: str) -> str:
    if empty not in EMPTY_POLICIES:
        raise ValueError(
            f"empty must be one of {EMPTY_POLICIES} (what an all-masked row returns), got {empty!r}"
        )
    return empty


def axis(ax, ndim: int, name: str = "axis") -> int:
    if isinstance(ax, (bool, np.bool_)) or not isinstance(ax, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {ax!r}")
    if not -ndim <= ax < ndim:
        raise ValueError(f"{name}={ax} is out of range for an array with {ndim} dimension(s)")
    return int(ax) % ndim


def _is_torch_tensor(x) -> bool:
    mod = type(x).__module__
    return mod.startswith("torch") and type(x).__name__ in ("Tensor", "Parameter")
