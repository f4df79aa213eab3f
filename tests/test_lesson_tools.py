"""The notebooks' lesson tools: predict-then-run (``attention_lab.predict``) and the context's
gradient with respect to the query (``attention_lab.gradients``)."""

from __future__ import annotations

import numpy as np
import pytest

from attention_lab import attend
from attention_lab.examples import running_example
from attention_lab.gradients import context_jacobian
from attention_lab import predict
from attention_lab.predict import PROMPT, reveal, verdict

EX = running_example()


def test_the_verdict_compares_numbers_shapes_and_words():
    assert verdict(0.7, 0.684, tol=0.05).endswith("right (within 0.05)")
    assert verdict(1, 0.684, tol=0.05).endswith("off by 0.316")
    assert verdict(2, 2).endswith("right") and verdict(3, 2).endswith("not this time")
    assert verdict((2, 3, 5), (2, 3, 5)).endswith("right")
    assert verdict([2, 3, 6], (2, 3, 5)).endswith("not this time")
    assert verdict("yes", True).endswith("right") and verdict(False, True).endswith("not this time")
    assert verdict("Down", "down").endswith("right")
    assert verdict(-np.inf, float("-inf")).endswith("right")
    assert verdict(-1e9, float("-inf")).endswith("not this time")
    with pytest.raises(ValueError, match="tol must be a number >= 0, got -1"):
        verdict(1, 1, tol=-1)


@pytest.mark.parametrize("prediction,answer,kw,asks", [
    (..., 0.684, {}, PROMPT),
    ("maybe", True, {}, "write yes or no (True or False)"),
    ("abc", 0.5, {}, "write a number"),
    (True, 0.5, {}, "write a number"),
    ("sideways", "down", {"choices": ("up", "down", "same")}, 'write one of "up", "down", "same"'),
    (5, (2, 3), {}, "write a tuple: numbers in parentheses, separated by commas"),
])
def test_no_prediction_or_one_of_the_wrong_form_never_gets_the_answer(prediction, answer, kw, asks):
    line = verdict(prediction, answer, **kw)
    assert asks in line and predict._show(answer) not in line.replace(asks, "")
    assert "the answer is" not in line


def test_an_unanswered_cell_prints_only_the_prompt(capsys):
    with reveal(..., why="Because the keys decide.") as r:
        print("scores: [0.98 0.39]")
        r.answer = 2
    assert capsys.readouterr().out == PROMPT + "\n"
    assert r.held == "scores: [0.98 0.39]\n" and not r.answered


def test_an_answered_cell_prints_the_verdict_what_it_held_back_and_why(capsys):
    with reveal(3, why="Because the keys decide " + "and the values do not " * 6 + ".") as r:
        print("scores: [0.98 0.39]")
        r.answer = 2
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "you predicted 3, the answer is 2: not this time"
    assert out[1] == "scores: [0.98 0.39]"
    assert out[2].startswith("Why: Because the keys decide") and len(out) > 3
    assert all(len(line) <= 96 for line in out) and out[3].startswith("     ")


def test_an_error_in_the_block_shows_what_it_printed_and_propagates(capsys):
    with pytest.raises(ZeroDivisionError):
        with reveal(3, why="x") as r:
            print("before the error")
            r.answer = 1 / 0
    assert capsys.readouterr().out == "before the error\n"


@pytest.mark.parametrize("error", [KeyboardInterrupt, NameError])
def test_a_block_stopped_before_a_prediction_shows_nothing_it_printed(capsys, error):
    # a student who interrupts a slow answer cell (or runs it out of order) before predicting
    with pytest.raises(error):
        with reveal(..., why="x") as r:
            print("largest weight at D_k = 512: 0.95")
            raise error
    assert "0.95" not in capsys.readouterr().out


def test_a_block_that_sets_no_answer_and_a_missing_why_are_named():
    with pytest.raises(RuntimeError, match="never set r.answer"):
        with reveal(1, why="x"):
            pass
    with pytest.raises(ValueError, match="why must say why"):
        reveal(1, why=" ")
    with pytest.raises(ValueError, match="tol must be a number >= 0"):
        reveal(1, why="x", tol="0.1")


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


@pytest.mark.parametrize("retrieval", ["soft", "hard"])
@pytest.mark.parametrize("kwargs,message", [
    # a query of the wrong width: the hard path raised torch's "size mismatch" RuntimeError
    (dict(query=EX.query[:2]), r"query has width D_k=2 .* keys has width 3"),
    # one value fewer than keys: the hard path raised torch's "cannot be multiplied"
    (dict(values=EX.values[:4]), r"values has 4 rows .* keys has S=5 keys"),
    # a batch of keys: the hard path took the arg max over the flattened batch
    (dict(keys=np.stack([EX.keys, EX.keys])), r"keys must have shape \(S, D_k\)"),
    (dict(values=np.stack([EX.values, EX.values])), r"values must have shape \(S, D_v\)"),
])
def test_shape_errors_name_the_argument_on_both_retrievals(retrieval, kwargs, message):
    args = {"query": EX.query, "keys": EX.keys, "values": EX.values, **kwargs}
    with pytest.raises(ValueError, match=message):
        context_jacobian(args["query"], args["keys"], args["values"], retrieval=retrieval)


def test_the_hard_jacobian_checks_the_temperature_too():
    with pytest.raises(ValueError, match="temperature must be finite and > 0"):
        context_jacobian(EX.query, EX.keys, EX.values, retrieval="hard", temperature=-1)


@pytest.mark.parametrize("prediction,answer,tol", [
    (0.8, 0.75, 0.05), (0.7, 0.75, 0.05), (0.85, 1.0, 0.15), (0.19, 0.2, 0.01), (1.05, 0.95, 0.1)])
def test_a_prediction_exactly_at_the_tolerance_is_right(prediction, answer, tol):
    # 0.8 - 0.75 is 0.05000000000000004 in floating point: a student must not read "off by 0.05"
    assert verdict(prediction, answer, tol=tol).endswith(f"right (within {tol:g})")


def test_a_number_written_as_text_counts_and_other_text_is_quoted():
    # float16's -1e9 has no Python literal: a student who writes "-inf" has predicted it
    assert verdict("-inf", float("-inf")) == "you predicted -inf, the answer is -inf: right"
    assert verdict(" 2", 2).endswith("right") and verdict("0.7", 0.684, tol=0.05).endswith("0.05)")
    with reveal("0.7", why="x", tol=0.05) as r:
        r.answer = 0.684
    assert r.answered
    for text in ("two", "", "0,7"):
        assert verdict(text, 0.5).startswith(f'your prediction "{text}" does not answer')


def test_a_zero_dimensional_array_is_read_as_its_number():
    # np.array(2) where a shape is asked raised "iteration over a 0-d array" in the answer cell
    assert "write a tuple" in verdict(np.array(2), (2, 3, 5))
    assert verdict(np.array(0.7), 0.684, tol=0.05).startswith("you predicted 0.7, the answer")
    assert verdict(np.array(True), True).endswith("right")


def test_a_tuple_of_the_right_numbers_in_another_order_is_named():
    # later_pair: (5, 4) names the right two sources; a shape (3, 2, 5) swaps two axes
    assert verdict((5, 4), (4, 5)).endswith("not this time (the right numbers, in another order)")
    assert verdict([3, 2, 5], (2, 3, 5)).endswith("in another order)")
    assert verdict((3, 5), (4, 5)).endswith("not this time")


def test_a_wrong_form_request_shows_the_prediction_as_written():
    # best_source = True: the student wrote True, not "yes"
    assert verdict(True, 2).startswith("your prediction True does not answer this question")
    assert verdict(np.False_, (2, 3)).startswith("your prediction False does not answer")


def test_a_decimal_comma_is_answered_with_the_decimal_point():
    # third_coordinate = 0,6 is the pair (0, 6) in Python: "write a number" reads as nonsense to
    # a student who wrote one, the European way; the request names the decimal point
    for written in ((0, 6), "0,6", " 0,557"):
        line = verdict(written, 0.557, tol=0.1)
        assert "write a number with a decimal point (0.5, not 0,5" in line, line
        assert "the answer is" not in line and "0.557" not in line
    assert verdict((2, 3), 2).endswith("write a number in the # Predict cell above, then run it "
                                       "and this cell again")  # a whole number: no decimals
    assert "decimal" not in verdict((0, 6, 1), 0.557) and "decimal" not in verdict("two", 0.5)
    for pair in (("a", "b"), (None, 1), (0.5, "x")):  # no decimal comma: raised TypeError
        assert verdict(pair, 0.557).endswith("write a number in the # Predict cell above, then "
                                             "run it and this cell again"), pair
