"""Predict, then run: the question first, the student's prediction, and only then the answer.

Every predict cell of the level notebooks (01-04) is two code cells. The *question cell* asks in a
``# Predict: ...`` comment and holds one assignment the student edits; the *answer cell* computes
the answer inside a :func:`reveal` block::

    # Predict: which source's key matches the query best (1-5)?
    best_source = ...

    with reveal(best_source, why="Source 2's key points most nearly the query's way ...") as r:
        scores = keys @ query
        print("scores:", np.round(scores, 2))
        r.answer = int(scores.argmax()) + 1

While the prediction is still ``...``, the answer cell prints only :data:`PROMPT`: what the block
prints is held back, and the answer, the verdict and the explanation ``why`` are not shown. So a
notebook executed without predictions (nbval's reference outputs, a rendered page, GitHub's
preview) gives nothing away. Once a prediction is written, the cell prints the verdict ("you
predicted 2, the answer is 2: right"), then what the block printed, then ``Why: ...``. A
prediction of the wrong form (a word where a number is asked) gets a request for the right form,
again without the answer.

The notebook around a predict cell follows three rules (``tests/test_notebooks_spoilers.py``
checks them): the explanation of the answer is ``why``, not prose under the answer cell;
headings and prose above the question name the question, not its answer (no misconception
label, no claim such as "attention does not supply order"); nothing the block would hold back is
printed outside it before the question. Figures and explorers go in cells of their own.
"""

from __future__ import annotations

import contextlib
import io
import numbers
import re
import sys
import textwrap

import numpy as np

from ._format import non_finite_word

__all__ = ["PROMPT", "Reveal", "reveal", "verdict"]

#: what an answer cell prints while its prediction is still ``...``
PROMPT = ("Predict first: replace the ... in the # Predict cell above with your prediction, run "
          "that cell, then run this one.")

_UNSET = object()


def _show(x) -> str:
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, numbers.Integral):
        return str(int(x))
    if isinstance(x, numbers.Real):
        x = float(x)
        if not np.isfinite(x):
            return non_finite_word(x)
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


def _read(prediction, answer):
    """The prediction as the question reads it: a 0-d array is its number, and text that spells
    a number ("-inf", "0.7") is that number where a number is asked."""
    if getattr(prediction, "ndim", None) == 0 and hasattr(prediction, "item"):
        prediction = prediction.item()
    if isinstance(prediction, str) and isinstance(answer, numbers.Real) and not isinstance(
            answer, (bool, np.bool_)):
        with contextlib.suppress(ValueError):
            return float(prediction)
    return prediction


def _decimal_comma(prediction) -> bool:
    """Whether ``prediction`` is a number written with a decimal comma: ``0,5`` (the pair (0, 5)
    to Python) or the text "0,5"."""
    if isinstance(prediction, str):
        return re.fullmatch(r"\s*-?\d+,\d+\s*", prediction) is not None
    return (isinstance(prediction, tuple) and len(prediction) == 2
            and all(isinstance(x, numbers.Integral) and not isinstance(x, bool)
                    for x in prediction) and prediction[1] >= 0)


def _form_problem(prediction, answer, choices) -> str:
    """What to write instead when ``prediction`` has the wrong form for ``answer`` ('' if fine)."""
    if isinstance(answer, (bool, np.bool_)):
        return "" if _yes_no(prediction) is not None else "write yes or no (True or False)"
    if isinstance(answer, numbers.Real):
        if isinstance(prediction, numbers.Real) and not isinstance(prediction, (bool, np.bool_)):
            return ""
        if _decimal_comma(prediction) and not isinstance(answer, numbers.Integral):
            return ("write a number with a decimal point (0.5, not 0,5: Python reads 0,5 as two "
                    "numbers)")
        return "write a number"
    if isinstance(answer, str):
        if choices and str(prediction).strip().lower() not in choices:
            return "write one of " + ", ".join(f'"{c}"' for c in choices)
        return ""
    if isinstance(answer, tuple) and not isinstance(prediction, (tuple, list, np.ndarray)):
        return "write a tuple: numbers in parentheses, separated by commas"
    return ""


def _check_tol(tol) -> None:
    if tol is not None and not (isinstance(tol, numbers.Real) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")


def verdict(prediction, answer, *, tol: float | None = None, choices=()) -> str:
    """The verdict line of an answer cell: :data:`PROMPT` for ``...``; a request for the right
    form (without the answer) for a prediction of the wrong form; else "you predicted X, the
    answer is Y: right" (or "not this time", "off by ...", "right (within tol)")."""
    _check_tol(tol)
    choices = tuple(c.lower() for c in choices)
    if prediction is Ellipsis:
        return PROMPT
    prediction = _read(prediction, answer)
    problem = _form_problem(prediction, answer, choices)
    if problem:
        shown = (f'"{prediction}"' if isinstance(prediction, str) else str(prediction)
                 if isinstance(prediction, bool) else _show(prediction))  # as the student wrote it
        return (f"your prediction {shown} does not answer this question: {problem} "
                f"in the # Predict cell above, then run it and this cell again")
    shown = _show(answer)
    head = f"you predicted {_show(prediction)}, the answer is {shown}: "
    if isinstance(answer, (bool, np.bool_)):
        return head + ("right" if _yes_no(prediction) == bool(answer) else "not this time")
    if isinstance(answer, numbers.Real):
        if not np.isfinite(float(answer)) or not np.isfinite(float(prediction)):
            return head + ("right" if _show(prediction) == shown else "not this time")
        off = round(abs(float(prediction) - float(answer)), 9)  # 0.8 - 0.75 is 0.05, not more
        if tol is None:
            return head + ("right" if off == 0 else "not this time")
        return head + (f"right (within {_show(tol)})" if off <= tol
                       else f"off by {_show(round(off, 3))}")
    if isinstance(answer, str):
        return head + ("right" if str(prediction).strip().lower() == answer.lower()
                       else "not this time")
    mine = tuple(prediction) if isinstance(prediction, (list, np.ndarray)) else prediction
    if _show(mine) == shown:
        return head + "right"
    if isinstance(mine, tuple) and sorted(map(_show, mine)) == sorted(map(_show, answer)):
        return head + "not this time (the right numbers, in another order)"
    return head + "not this time"


class Reveal:
    """The answer cell's block (made by :func:`reveal`): holds back what the block prints, and on
    leaving it prints :data:`PROMPT` or the verdict, the held-back printout and ``why``.

    The block sets :attr:`answer`; :attr:`held` is what it printed (kept for tests and for
    :meth:`text`). An exception inside the block (an interrupt too) is not swallowed: what the
    block printed is shown if a prediction is written, then the exception propagates."""

    def __init__(self, prediction, *, why: str, tol: float | None = None, choices=()):
        if not isinstance(why, str) or not why.strip():
            raise ValueError("why must say why the answer is what it is (a non-empty string)")
        _check_tol(tol)
        self.prediction, self.why, self.tol = prediction, why, tol
        self.choices = tuple(choices)
        self.answer = _UNSET
        self.held = ""
        self._buffer: io.StringIO | None = None
        self._redirect = None

    def __enter__(self) -> Reveal:
        self._buffer = io.StringIO()
        self._redirect = contextlib.redirect_stdout(self._buffer)
        self._redirect.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._redirect.__exit__(exc_type, exc, tb)
        self.held = self._buffer.getvalue()
        if exc_type is not None:
            if self.answered:  # before a prediction, what it printed may hold the answer
                sys.stdout.write(self.held)
            return False
        if self.answer is _UNSET:
            raise RuntimeError("the reveal block never set r.answer (write r.answer = ... in it)")
        sys.stdout.write(self.text() + "\n")  # one write: one stream output in a notebook
        return False

    @property
    def answered(self) -> bool:
        """Whether the prediction is written in a form this question accepts."""
        choices = tuple(c.lower() for c in self.choices)
        return self.prediction is not Ellipsis and not _form_problem(
            _read(self.prediction, self.answer), self.answer, choices)

    def text(self) -> str:
        """What the cell prints: the prompt, or the verdict, the printout and the explanation."""
        line = verdict(self.prediction, self.answer, tol=self.tol, choices=self.choices)
        if not self.answered:
            return line
        why = textwrap.fill(" ".join(self.why.split()), width=96, initial_indent="Why: ",
                            subsequent_indent="     ")
        return "\n".join(part for part in (line, self.held.rstrip("\n"), why) if part)


def reveal(prediction, *, why: str, tol: float | None = None, choices=()) -> Reveal:
    """The block of an answer cell (see the module docstring): ``with reveal(guess, why=...) as
    r:`` computes, may print, and sets ``r.answer``.

    ``r.answer``: a number (compared exactly, or within ``tol``), a yes/no (``bool``; the
    prediction may be ``True``/``False`` or "yes"/"no"), a word (case-insensitive; ``choices``
    lists the words the question offers) or a tuple such as a shape. ``why``: the explanation,
    shown with the answer. Never raises on the student's prediction."""
    return Reveal(prediction, why=why, tol=tol, choices=choices)
