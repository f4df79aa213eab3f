"""The cases a grading run gives each exercise, in the order the kernel meets them.

The checks' own cases (``exercises.judging.cases_for``), except that the cases handing an
implementation (:class:`Impl`) to a student's *test* (1.4, 2.6, 3.2) come after the answer's
other cases, in an order drawn from the seed, followed by :data:`EXTRA_CALLS` more calls of the
test on implementations drawn at random. With the channel revealing one case at a time, a test
cannot give its verdicts by position without calling the implementation: on each call such a
verdict is right with probability at most 2/3, on all of them with less than 1e-6 (the seed is
never shown to a kernel). No implementation is handed over before that exercise's own cases are
recorded (a correct masked softmax handed to 2.6's test cannot compute 2.6's answers).

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
from ..exercises.specs.level1 import IMPL_EXPECT
from ..exercises.specs.level2 import MASKING_TEST_EXPECT
from ..exercises.specs.level3 import POLICIES
from ..exercises.registry import Exercise

#: calls of a student's test beyond each implementation once: (2/3) ** 35 < 1e-6
EXTRA_CALLS = 35


def hands_an_impl(case: Case) -> bool:
    return any(isinstance(a, Impl) for a in case.args)


def submission_seed(seed: int, sha256: str) -> int:
    """The seed of one submission's cases: from the grading's ``seed`` and the submission's
    content digest; never the students' own seed (whose cases are not hidden)."""
    drawn = int.from_bytes(hashlib.sha256(f"{seed}:{sha256}".encode()).digest()[:4], "big") >> 1
    return drawn + 1 if drawn == STUDENT_SEED else drawn


def _right_verdicts(ex: Exercise, case: Case) -> set[bool]:
    """What a correct test says of the implementation ``case`` hands it (3.2: under each policy
    a student may declare)."""
    code = case.args[0].code
    if ex.id == "3.2":
        return {code == right for right in POLICIES.values()}
    return {(IMPL_EXPECT | MASKING_TEST_EXPECT)[code]}


def _extra_pool(ex: Exercise, handed: list[Case]) -> list[Case]:
    """The cases the extra calls draw from, uniformly: where the right verdict depends on the
    declared policy (3.2's G, H and I), those, so a blind verdict is right a third or two thirds
    of the time; else as many draws accepted as rejected, so it is right half of the time."""
    verdicts = [_right_verdicts(ex, c) for c in handed]
    depends = [c for c, v in zip(handed, verdicts) if len(v) == 2]
    if depends:
        return depends
    yes = [c for c, v in zip(handed, verdicts) if v == {True}]
    no = [c for c, v in zip(handed, verdicts) if v == {False}]
    return yes * len(no) + no * len(yes)


def run_cases(ex: Exercise, seed: int) -> list[Case]:
    """The cases of ``ex`` for a run with ``seed``, in the order the grader asks them."""
    cases = cases_for(ex, seed)
    own = [c for c in cases if not hands_an_impl(c)]
    handed = [c for c in cases if hands_an_impl(c)]
    if not handed:
        return own
    rng = np.random.default_rng([seed, zlib.crc32(ex.id.encode()), 7])
    pool = _extra_pool(ex, handed)
    extra = [pool[i] for i in rng.integers(0, len(pool), EXTRA_CALLS)]
    return own + [handed[i] for i in rng.permutation(len(handed))] + extra


__all__ = ["EXTRA_CALLS", "run_cases", "hands_an_impl", "submission_seed"]
