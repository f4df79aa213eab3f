"""Predict, then run: compare a student's written prediction with what the code computed.

A notebook asks a question in a cell that holds only an assignment, ``my_guess = ...``; the next
cell computes the answer and calls :func:`reveal`, which prints one line: the answer, and how the
prediction compares (right, close, off by how much). An unanswered ``...`` just shows the answer, so
a notebook executed without predictions (as nbval does) prints the same line every time.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["reveal", "verdict"]


def _show(x) -> str:
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, numbers.Integral):
        return str(int(x))
    if isinstance(x, numbers.Real):
        x = float(x)
        if not np.isfinite(x):
            return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
        return f"{x:.3f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))
    if isinstance(x, (tuple, list, np.ndarray)):
        items = [_show(v) for v in np.asarray(x, dtype=object).ravel()] if isinstance(
            x, np.ndarray) else [_show(v) for v in x]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return str(x)


def _yes_no(x):
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, str) and x.strip().lower() in ("yes", "no", "true", "false", "y", "n"):
        return x.strip().lower() in ("yes", "true", "y")
    return None


def verdict(prediction, answer, *, tol: float | None = None) -> str:
    """The line :func:`reveal` prints (see there)."""
    if tol is not None and not (isinstance(tol, numbers.Real) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")
    shown = _show(answer)
    if prediction is Ellipsis:
        return (f"answer: {shown}  (no prediction yet: replace the ... above with yours, "
                f"then run both cells)")
    head = f"you predicted {_show(prediction)}, the answer is {shown}: "
    if isinstance(answer, (bool, np.bool_)):
        p = _yes_no(prediction)
        if p is None:
            return head + "write yes or no (True or False)"
        return head + ("right" if p == bool(answer) else "not this time")
    if isinstance(answer, numbers.Real):
        if isinstance(prediction, (bool, np.bool_)) or not isinstance(prediction, numbers.Real):
            return head + "write a number"
        if not np.isfinite(float(answer)) or not np.isfinite(float(prediction)):
            return head + ("right" if _show(prediction) == shown else "not this time")
        off = abs(float(prediction) - float(answer))
        if tol is None:
            return head + ("right" if off == 0 else "not this time")
        return head + (f"right (within {_show(tol)})" if off <= tol
                       else f"off by {_show(round(off, 3))}")
    if isinstance(answer, str):
        return head + ("right" if str(prediction).strip().lower() == answer.lower()
                       else "not this time")
    same = _show(tuple(prediction) if isinstance(prediction, (list, np.ndarray)) else prediction)
    return head + ("right" if same == shown else "not this time")


def reveal(prediction, answer, *, tol: float | None = None) -> None:
    """Print the answer and how ``prediction`` compares with it.

    ``answer``: a number (compared exactly, or within ``tol``), a yes/no (``bool``; the prediction
    may be ``True``/``False`` or "yes"/"no"), a word (case-insensitive) or a tuple such as a shape.
    ``prediction`` is ``...`` until the student writes one. Never raises on the student's input.
    """
    print(verdict(prediction, answer, tol=tol))
