"""The cases a grading run gives each exercise, in the order the kernel meets them.

The checks' own cases (``exercises.judging.cases_for``: fixed edge cases, then cases drawn from
the run's seed), except that the cases handing an implementation to a student's *test* (checks
1.4, 2.6, 3.2: correct and broken attentions and masked softmaxes, :class:`Impl`) come after the
answer's other cases, in an order drawn from the seed. With the channel (:mod:`.channel`), which
reveals one case at a time and runs the implementations in the grader only:

* a test's verdict cannot be given by position: which implementation comes when is this run's,
  and the seed is never shown to a kernel;
* no implementation is handed over before the answer's own cases of that exercise are recorded
  (a correct masked softmax handed to 2.6's test cannot compute 2.6's answers).
"""

from __future__ import annotations

import zlib

import numpy as np

from ..exercises.implementations import Impl
from ..exercises.judging import cases_for
from ..exercises.specs.base import Case
from ..exercises.registry import Exercise


def hands_an_impl(case: Case) -> bool:
    return any(isinstance(a, Impl) for a in case.args)


def run_cases(ex: Exercise, seed: int) -> list[Case]:
    """The cases of ``ex`` for a run with ``seed``, in the order the grader asks them."""
    cases = cases_for(ex, seed)
    own = [c for c in cases if not hands_an_impl(c)]
    handed = [c for c in cases if hands_an_impl(c)]
    order = np.random.default_rng([seed, zlib.crc32(ex.id.encode()), 7]).permutation(len(handed))
    return own + [handed[i] for i in order]


__all__ = ["run_cases", "hands_an_impl"]
