"""``check(..., strict=True)``: the raising form for test cells (nbgrader, pytest). It raises
:class:`CheckFailed` with the check's text unless the answer passes; the default never raises."""

from __future__ import annotations

import numpy as np
import pytest

from attention_lab.exercises import CheckFailed, check


def dot_scores(query, keys):
    return keys @ query


def scaled(query, keys):
    return keys @ query / np.sqrt(len(query))


def stub(query, keys):
    raise NotImplementedError


def test_a_passing_answer_returns_its_result():
    res = check("2.1", dot_scores, show=False, strict=True)
    assert res.passed


@pytest.mark.parametrize("answer, status", [(scaled, "fail"), (stub, "not_attempted")])
def test_an_answer_that_does_not_pass_raises_with_the_checks_message(answer, status):
    quiet = check("2.1", answer, show=False)
    assert quiet.status == status  # the default form never raises
    with pytest.raises(CheckFailed) as info:
        check("2.1", answer, show=False, strict=True)
    assert isinstance(info.value, AssertionError)
    assert str(info.value) == quiet.text() and info.value.result.status == status
    assert quiet.message.splitlines()[0] in str(info.value)


def test_an_unknown_exercise_raises_and_a_written_one_is_refused():
    with pytest.raises(CheckFailed, match="9.9"):
        check("9.9", dot_scores, show=False, strict=True)
    assert check("9.9", dot_scores, show=False).status == "fail"
    with pytest.raises(ValueError, match="graded by hand"):
        check("2.3", {"derivation": "", "consequence": ""}, show=False, strict=True)
