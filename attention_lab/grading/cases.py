"""The cases a grading run gives each exercise, in the order the kernel meets them.

The checks' own cases (``exercises.judging.cases_for``), except that the cases handing an
implementation (:class:`Impl`) to a student's *test* (1.4, 2.6, 3.2) come after the answer's
other cases, in an order drawn from the seed. With the channel revealing one case at a time, a
test's verdict cannot be given by position (the seed is never shown to a kernel), and no
implementation is handed over before that exercise's own cases are recorded (a correct masked
softmax handed to 2.6's test cannot compute 2.6's answers).

Each submission's random cases are drawn from the grading's seed *and* the submission's content
(:func:`submission_seed`): the same seed regrades the same files into the same results, while a
notebook handed in again after its feedback meets other random cases than the ones whose inputs
that feedback may carry (an answer can raise with its inputs in the message).
"""

from __future__ import annotations

import hashlib
import zlib

import numpy as np

from ..exercises.implementations import Impl
from ..exercises.judging import cases_for
from ..exercises.specs.base import STUDENT_SEED, Case
from ..exercises.registry import Exercise


def hands_an_impl(case: Case) -> bool:
    return any(isinstance(a, Impl) for a in case.args)


def submission_seed(seed: int, sha256: str) -> int:
    """The seed of one submission's cases: from the grading's ``seed`` and the submission's
    content digest; never the students' own seed (whose cases are not hidden)."""
    drawn = int.from_bytes(hashlib.sha256(f"{seed}:{sha256}".encode()).digest()[:4], "big") >> 1
    return drawn + 1 if drawn == STUDENT_SEED else drawn


def run_cases(ex: Exercise, seed: int) -> list[Case]:
    """The cases of ``ex`` for a run with ``seed``, in the order the grader asks them."""
    cases = cases_for(ex, seed)
    own = [c for c in cases if not hands_an_impl(c)]
    handed = [c for c in cases if hands_an_impl(c)]
    order = np.random.default_rng([seed, zlib.crc32(ex.id.encode()), 7]).permutation(len(handed))
    return own + [handed[i] for i in order]


__all__ = ["run_cases", "hands_an_impl", "submission_seed"]
