"""The grader against a student who wants marks without a correct solution.

Every check's fixed cases are public (the package's source, and ``check`` in the notebook shows
them when they fail), and so are the random cases of the students' seed; only the grader's own
random cases (drawn from its seed, never shown to a kernel) are hidden. An answer can therefore
look its inputs up among the public cases and return outputs computed at home, and do anything
on the others: the hidden cases must catch what it does there.

One grading run (``python -m attention_lab grade``, ``--jobs 2``, as an instructor grades) over
notebooks that are the solutions but for one answer each:

* ``a_hull_by_position``: 1.3's public cases looked up, and on the others True, False, True,
  False, ... (the pattern of the check's random cases: inside, outside, ...);
* ``b_raise_lookup``: 3.2 with the policy ``"raise"``: raises wherever a row has no eligible
  key, looks the public cases without one up, and returns uniform weights on any other (no
  softmax at all); its test is right;
* ``c_naive_lookup``: 2.6's masked softmax without the maximum subtracted (the mistake its
  fixed case of scores near -1e4 is there for), that case looked up; its test is right.

And without a kernel: every known mistake of each check, with its public cases looked up, on
the hidden cases of many seeds.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

import _exercise_answers as A
from attention_lab.exercises.implementations import is_marker
from attention_lab.exercises.judging import cases_for
from attention_lab.exercises.registry import EXERCISES
from attention_lab.exercises.specs.base import STUDENT_SEED
from attention_lab.exercises.student import evaluate
from attention_lab.grading import sandbox as S
from attention_lab.grading.cases import run_cases
from attention_lab.softmax import softmax

from _notebook_edits import insert_after, load

SOLUTIONS = Path(__file__).resolve().parents[2] / "notebooks" / "exercises" / "solutions"
SEED = 13

HULL_BY_POSITION = '''
import numpy as np
PUBLIC = {public!r}  # (context, values, the right answer) of each fixed case
after_public = [0]

def in_convex_hull(context, values):
    c, v = np.asarray(context, float), np.asarray(values, float)
    for pc, pv, right in PUBLIC:
        if np.shape(pv) == v.shape and np.allclose(pv, v) and np.allclose(pc, c):
            after_public[0] = 0
            return right
    k = after_public[0]
    after_public[0] += 1
    return k % 2 == 0  # inside, outside, inside, ...
'''

RAISE_LOOKUP = '''
import numpy as np
PUBLIC = {public!r}  # (scores, mask, weights) of each fixed case without an all-masked row
all_masked_policy = "raise"

def masked_softmax_safe(scores, mask):
    s = np.asarray(scores, float)
    m = np.broadcast_to(mask, s.shape)
    if not m.any(axis=-1).all():
        raise ValueError("a row has no eligible key")
    for ps, pm, w in PUBLIC:
        if np.shape(ps) == s.shape and np.array_equal(pm, m) and np.allclose(ps, s):
            return np.asarray(w)
    return np.full(s.shape, 1.0 / s.shape[-1])

def test_all_masked_policy(masked_softmax):
    try:
        masked_softmax(np.array([[1.0, 2.0]]), np.array([[False, False]]))
    except ValueError:
        pass
    else:
        return False
    w = np.asarray(masked_softmax(np.array([[1.0, -2.0, 0.5]]), np.array([[True, False, True]])))
    return bool(w[0, 1] == 0 and np.isclose(w.sum(), 1.0))
'''

NAIVE_LOOKUP = '''
import numpy as np
FAR = {far!r}  # the public case the naive formula fails: (scores, mask, weights)

def masked_softmax(scores, mask):
    s = np.asarray(scores, float)
    m = np.broadcast_to(mask, s.shape)
    if s.shape == np.shape(FAR[0]) and np.allclose(s, FAR[0]):
        return np.asarray(FAR[2])
    e = np.where(m, np.exp(s), 0.0)  # no maximum subtracted
    return e / e.sum(axis=-1, keepdims=True)
'''


def _public(ex_id: str) -> list:
    return [c for c in run_cases(EXERCISES[ex_id], SEED) if not c.hidden]


def _weights(scores, mask) -> list:
    return softmax(np.asarray(scores, dtype=np.float64), mask=mask).tolist()


def _cheats() -> dict:
    hull = [(c.args[0].tolist(), c.args[1].tolist(), c.data["expect"]) for c in _public("1.3")]
    no_empty = [(c.args[0].astype(float).tolist(), np.broadcast_to(c.args[1], c.args[0].shape)
                 .tolist(), _weights(*c.args)) for c in _public("3.2")
                if c.fn == 1 and np.broadcast_to(c.args[1], c.args[0].shape).any(-1).all()]
    far = next(c for c in _public("2.6") if c.data.get("far"))
    return {
        "a_hull_by_position.ipynb": insert_after(
            load(SOLUTIONS / "01_intuition_exercises_solutions.ipynb"), "in_convex_hull",
            HULL_BY_POSITION.format(public=hull)),
        "b_raise_lookup.ipynb": insert_after(
            load(SOLUTIONS / "03_maths_and_code_exercises_solutions.ipynb"),
            "masked_softmax_safe", RAISE_LOOKUP.format(public=no_empty)),
        "c_naive_lookup.ipynb": insert_after(
            load(SOLUTIONS / "02_mechanics_exercises_solutions.ipynb"), "masked_softmax",
            NAIVE_LOOKUP.format(far=(far.args[0].tolist(), far.args[1].tolist(),
                                     _weights(*far.args)))),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not sys.platform.startswith("linux") or S.isolation_problem():
        pytest.skip(f"no isolation here: {S.isolation_problem()}")
    tmp = tmp_path_factory.mktemp("cheats")
    sub, out = tmp / "subs", tmp / "out"
    sub.mkdir()
    for name, nb in _cheats().items():
        nbformat.write(nb, str(sub / name))
    done = subprocess.run(
        [sys.executable, "-m", "attention_lab", "grade", str(sub), "--out", str(out), "--jobs",
         "2", "--seed", str(SEED), "--quiet"], capture_output=True, timeout=600, cwd=tmp)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "grades.json").read_text())
    return {s["file"]: s["exercises"] for s in report["submissions"]}


def test_a_yes_no_answer_given_by_position_earns_nothing(graded):
    """1.3's random cases were inside, outside, inside, outside: an answer that looked the
    public cases up and alternated on the others passed, every run."""
    ex = graded["a_hull_by_position.ipynb"]
    assert ex["1.3"]["status"] == "fail", ex["1.3"]
    assert "one of the grader's own random cases" in ex["1.3"]["message"]
    assert ex["1.2"]["status"] == ex["1.4"]["status"] == "pass"  # the rest of it was graded


def test_the_raise_policy_does_not_spare_an_implementation(graded):
    """Every random case of 3.2 had a row without an eligible key, where the policy "raise"
    is right whatever else the function does: a lookup of the public cases passed, every run."""
    ex = graded["b_raise_lookup.ipynb"]
    assert ex["3.2"]["status"] == "fail", ex["3.2"]
    assert "one of the grader's own random cases" in ex["3.2"]["message"]
    assert ex["3.1"]["status"] == ex["3.3"]["status"] == "pass"


def test_a_known_mistake_behind_a_lookup_of_the_public_cases_earns_nothing(graded):
    """2.6's random scores were small: the naive softmax, which only the public case near -1e4
    catches, passed every run once that case was looked up."""
    ex = graded["c_naive_lookup.ipynb"]
    assert ex["2.6"]["status"] == "fail", ex["2.6"]
    assert "one of the grader's own random cases" in ex["2.6"]["message"]
    assert ex["2.5"]["status"] == ex["2.7"]["status"] == "pass"


# ---------------------------------------------------------------------- without a kernel
def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and np.array_equal(a, b))
    return type(a) is type(b) and a == b


def _behind_a_lookup(ex, wrong, right):
    """``wrong``, but for every function part: the right output wherever the arguments are
    those of a public case (the fixed ones and the students' seed's), as a student who ran
    the right answer at home (or copied its outputs) would return them."""
    public = [c for c in cases_for(ex, STUDENT_SEED) if not any(map(is_marker, c.args))]
    wrongs = wrong if isinstance(wrong, tuple) else (wrong,)
    rights = right if isinstance(right, tuple) else (right,)

    def part(i, w):
        if not callable(w):
            return w

        def answer(*args):
            for c in public:
                if c.fn == i and len(c.args) == len(args) and all(map(_same, c.args, args)):
                    return rights[i](*args)
            return w(*args)
        return answer

    parts = tuple(part(i, w) for i, w in enumerate(wrongs))
    return parts if isinstance(wrong, tuple) else parts[0]


def _by_position():
    seen = [0]

    def in_convex_hull(context, values):
        seen[0] += 1
        return seen[0] % 2 == 1
    return in_convex_hull


#: the known mistakes of the checks (``tests/_exercise_answers.py``), with one more: 1.3
#: answered by position, as its random cases came (inside, outside, ...)
MISTAKES = [(i, k) for i in A.WRONG for k in range(len(A.WRONG[i]))] + [("1.3", "position")]
GRADER_SEEDS = range(1, 61)


@pytest.mark.parametrize("ex_id,k", MISTAKES, ids=[f"{i}-{k}" for i, k in MISTAKES])
def test_no_known_mistake_passes_the_hidden_cases(ex_id, k):
    """Each known mistake, with every public case looked up, on the grader's cases of 60 seeds:
    the hidden cases catch it on every one. With the old random cases, which could be too small
    to show a mistake (D_k = 1, one key, one query, a half-width of 0, no length below S) or
    never showed it (2.6's and 3.2's scores never far below zero, 3.1's never far from it, no
    all-zero weights in 1.2 and 4.6, 1.3 never on the boundary or off the values' plane), 23
    of them passed some of the 60 seeds and 8 every one."""
    ex = EXERCISES[ex_id]
    wrong = _by_position() if k == "position" else A.WRONG[ex_id][k][0]
    passed = [seed for seed in GRADER_SEEDS if evaluate(
        ex, _behind_a_lookup(ex, wrong, A.CORRECT[ex_id]), seed=seed).status == "pass"]
    assert passed == [], passed


def test_the_right_answers_pass_the_hidden_cases():
    """(So that the test above rejects mistakes, not the cases.)"""
    for ex_id, right in A.CORRECT.items():
        for seed in GRADER_SEEDS:
            v = evaluate(EXERCISES[ex_id], right, seed=seed)
            assert v.status == "pass", (ex_id, seed, v.message)


def test_a_yes_no_answer_has_24_hidden_cases_half_of_either_kind():
    """1.3's answer is True or False: a blind one is right on all its hidden cases with
    probability below 1e-6 only if there are many and which are inside is drawn at random:
    12 of 24, 1 / C(24, 12) < 1e-6."""
    assert 1 / math.comb(24, 12) < 1e-6
    seen = set()
    for seed in range(1, 301):
        sides = tuple(c.data["expect"] for c in run_cases(EXERCISES["1.3"], seed) if c.hidden)
        assert len(sides) == 24 and sum(sides) == 12
        seen.add(sides)
    assert len(seen) == 300  # no order repeats
