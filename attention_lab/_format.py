"""Numbers as the lab prints them: a non-finite value as a word (``nan``, ``inf``, ``-inf``)."""

from __future__ import annotations

import math


def non_finite_word(x: float) -> str | None:
    """``"nan"``, ``"inf"`` or ``"-inf"`` for a non-finite ``x``; None for a finite one."""
    x = float(x)
    return None if math.isfinite(x) else str(x)  # Python spells them nan, inf, -inf


def fixed(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals; nan, inf and -inf as words."""
    word = non_finite_word(x)
    return word if word is not None else f"{float(x):.{digits}f}"


__all__ = ["non_finite_word", "fixed"]
