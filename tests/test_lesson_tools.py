"""The notebooks' lesson tools: predict-then-run (``attention_lab.predict``) and the context's
gradient with respect to the query (``attention_lab.gradients``)."""

from __future__ import annotations

import numpy as np
import pytest

from attention_lab import attend
from attention_lab.examples import running_example
from attention_lab.gradients import context_jacobian
from attention_lab.predict import reveal, verdict

EX = running_example()


def test_the_reveal_compares_numbers_shapes_and_words():
    assert verdict(..., 0.684, tol=0.05).startswith("answer: 0.684  (no prediction yet")
    assert verdict(0.7, 0.684, tol=0.05).endswith("right (within 0.05)")
    assert verdict(1, 0.684, tol=0.05).endswith("off by 0.316")
    assert verdict(2, 2).endswith("right") and verdict(3, 2).endswith("not this time")
    assert verdict((2, 3, 5), (2, 3, 5)).endswith("right")
    assert verdict([2, 3, 6], (2, 3, 5)).endswith("not this time")
    assert verdict("yes", True).endswith("right") and verdict(False, True).endswith("not this time")
    assert verdict("maybe", True).endswith("write yes or no (True or False)")
    assert verdict("Down", "down").endswith("right")
    assert verdict("abc", 0.5, tol=0.1).endswith("write a number")
    assert verdict(True, 0.5, tol=0.1).endswith("write a number")
    assert verdict(-np.inf, float("-inf")).endswith("right")
    assert verdict(-1e9, float("-inf")).endswith("not this time")
    with pytest.raises(ValueError, match="tol must be a number >= 0, got -1"):
        verdict(1, 1, tol=-1)


def test_reveal_prints_one_line(capsys):
    reveal(..., (5, 5))
    assert capsys.readouterr().out == ("answer: (5, 5)  (no prediction yet: replace the ... above "
                                       "with yours, then run both cells)\n")


def test_the_soft_jacobian_is_the_derivative_and_nonzero():
    jac = context_jacobian(EX.query, EX.keys, EX.values)  # (D_v, D_k)
    assert jac.shape == (3, 3) and np.abs(jac).max() > 0.05
    h = 1e-6
    for k in range(3):
        dq = np.zeros(3)
        dq[k] = h
        numeric = (attend(EX.query + dq, EX.keys, EX.values).context
                   - attend(EX.query - dq, EX.keys, EX.values).context) / (2 * h)
        np.testing.assert_allclose(jac[:, k], numeric, atol=1e-7)


def test_the_hard_jacobian_is_zero_and_the_hard_context_is_piecewise_constant():
    assert np.all(context_jacobian(EX.query, EX.keys, EX.values, retrieval="hard") == 0)
    hard = [EX.values[np.argmax(EX.keys @ (EX.query + d))] for d in (0, 1e-3, -1e-3)]
    assert all(np.array_equal(hard[0], h) for h in hard)


def test_temperature_scales_the_soft_jacobian():
    cold = context_jacobian(EX.query, EX.keys, EX.values, temperature=0.5)
    assert not np.allclose(cold, context_jacobian(EX.query, EX.keys, EX.values))


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(retrieval="medium"), ValueError, "retrieval must be one of"),
    (dict(query=np.ones((2, 3))), ValueError, "query must be one query of shape"),
])
def test_bad_input_is_named(kwargs, error, message):
    args = {"query": EX.query, "keys": EX.keys, "values": EX.values, **kwargs}
    with pytest.raises(error, match=message):
        context_jacobian(args.pop("query"), args.pop("keys"), args.pop("values"), **args)
