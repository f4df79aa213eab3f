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
  softmax at all); its test is right.

And without a kernel: how 1.3's hidden cases are drawn.
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

from attention_lab.exercises.registry import EXERCISES
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


def _public(ex_id: str) -> list:
    return [c for c in run_cases(EXERCISES[ex_id], SEED) if not c.hidden]


def _weights(scores, mask) -> list:
    return softmax(np.asarray(scores, dtype=np.float64), mask=mask).tolist()


def _cheats() -> dict:
    hull = [(c.args[0].tolist(), c.args[1].tolist(), c.data["expect"]) for c in _public("1.3")]
    no_empty = [(c.args[0].astype(float).tolist(), np.broadcast_to(c.args[1], c.args[0].shape)
                 .tolist(), _weights(*c.args)) for c in _public("3.2")
                if c.fn == 1 and np.broadcast_to(c.args[1], c.args[0].shape).any(-1).all()]
    return {
        "a_hull_by_position.ipynb": insert_after(
            load(SOLUTIONS / "01_intuition_exercises_solutions.ipynb"), "in_convex_hull",
            HULL_BY_POSITION.format(public=hull)),
        "b_raise_lookup.ipynb": insert_after(
            load(SOLUTIONS / "03_maths_and_code_exercises_solutions.ipynb"),
            "masked_softmax_safe", RAISE_LOOKUP.format(public=no_empty)),
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


# ---------------------------------------------------------------------- without a kernel
def test_a_yes_no_answer_has_24_hidden_cases_half_of_either_kind():
    """1.3's answer is True or False: a blind one is right on all its hidden cases with
    probability below 1e-6 only if there are many and which are inside is drawn at random:
    12 of 24, 1 / C(24, 12) < 1e-6 (there were 4: inside, outside, inside, outside)."""
    assert 1 / math.comb(24, 12) < 1e-6
    seen = set()
    for seed in range(1, 301):
        sides = tuple(c.data["expect"] for c in run_cases(EXERCISES["1.3"], seed) if c.hidden)
        assert len(sides) == 24 and sum(sides) == 12
        seen.add(sides)
    assert len(seen) == 300  # no order repeats
