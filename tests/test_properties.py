"""Properties of the numpy reference that hold for every input (hypothesis)."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attention_lab as al

finite = st.floats(-30, 30, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def problems(draw, min_s=1, max_s=7):
    """Scores (T, S), a mask (T, S) with at least one eligible key per row, values (S, D_v)."""
    T = draw(st.integers(1, 4))
    S = draw(st.integers(min_s, max_s))
    D = draw(st.integers(1, 3))
    scores = draw(arrays(np.float64, (T, S), elements=finite))
    mask = draw(arrays(np.bool_, (T, S)))
    first = draw(st.integers(0, S - 1))
    mask[:, first] = True
    values = draw(arrays(np.float64, (S, D), elements=finite))
    return scores, mask, values


@given(problems(), st.floats(0.05, 20))
def test_weights_nonnegative_masked_zero_eligible_sum_one(p, tau):
    scores, mask, values = p
    r = al.attend_scores(scores, values, mask=mask, temperature=tau)
    assert (r.weights >= 0).all()
    assert (r.weights[~mask] == 0).all()  # exactly zero, not merely small
    np.testing.assert_allclose(r.weights.sum(-1), 1.0, atol=1e-12)
    assert (r.masked_mass == 0).all()


@given(problems(), st.floats(-1e3, 1e3))
def test_adding_a_constant_changes_nothing(p, c):
    scores, mask, _ = p
    np.testing.assert_allclose(al.softmax(scores + c, mask=mask), al.softmax(scores, mask=mask),
                               atol=1e-12)


@given(problems(min_s=2))
def test_low_temperature_approaches_argmax(p):
    scores, mask, _ = p
    masked = np.where(mask, scores, -np.inf)
    top2 = np.sort(masked, axis=-1)[:, -2:]
    gap = np.where(np.isfinite(top2[:, 0]), top2[:, 1] - top2[:, 0], np.inf)
    assume((gap > 1e-3).all())  # a unique maximum per row
    w = al.softmax(scores, mask=mask, temperature=1e-5)
    np.testing.assert_allclose(w, np.eye(scores.shape[1])[masked.argmax(-1)], atol=1e-9)


@given(problems())
def test_high_temperature_approaches_uniform_over_eligible(p):
    scores, mask, _ = p
    w = al.softmax(scores, mask=mask, temperature=1e9)
    uniform = mask / mask.sum(-1, keepdims=True)
    np.testing.assert_allclose(w, uniform, atol=1e-6)


@given(problems(), st.floats(0.05, 20))
def test_context_lies_within_range_of_eligible_values(p, tau):
    scores, mask, values = p
    r = al.attend_scores(scores, values, mask=mask, temperature=tau)
    for t in range(scores.shape[0]):
        eligible = values[mask[t]]
        assert (r.context[t] >= eligible.min(0) - 1e-9).all()
        assert (r.context[t] <= eligible.max(0) + 1e-9).all()


@given(problems(), st.randoms(use_true_random=False))
def test_permuting_sources_permutes_weights_and_keeps_context(p, rnd):
    scores, mask, values = p
    perm = np.array(rnd.sample(range(scores.shape[1]), scores.shape[1]))
    a = al.attend_scores(scores, values, mask=mask)
    b = al.attend_scores(scores[:, perm], values[perm], mask=mask[:, perm])
    np.testing.assert_allclose(b.weights, a.weights[:, perm], atol=1e-12)
    np.testing.assert_allclose(b.context, a.context, atol=1e-9)


@given(st.integers(1, 6), st.integers(1, 4))
def test_identical_sources_swapped_give_identical_context(S, D):
    # attention does not supply order: swapping two identical (key, value) pairs changes nothing
    rng = np.random.default_rng(S * 10 + D)
    q, K, V = rng.normal(size=D), rng.normal(size=(S + 1, D)), rng.normal(size=(S + 1, 2))
    K[-1], V[-1] = K[0], V[0]
    perm = np.r_[S, np.arange(1, S), 0]
    a, b = al.attend(q, K, V), al.attend(q, K[perm], V[perm])
    np.testing.assert_allclose(a.context, b.context, atol=1e-12)


def test_naive_softmax_overflows_where_stable_does_not():
    scores = np.array([1e4, -1e4, 0.0])
    naive = al.naive_softmax(scores)
    assert np.isnan(naive).any()
    stable = al.softmax(scores)
    assert np.isfinite(stable).all() and stable.sum() == pytest.approx(1.0)
    assert stable.tolist() == [1.0, 0.0, 0.0]
    assert np.isnan(al.naive_softmax(np.array([-1e4, -1e4]))).all()  # underflow: 0/0
    np.testing.assert_allclose(al.softmax(np.array([-1e4, -1e4])), [0.5, 0.5])


def test_minus_1e9_fill_overflows_float16_and_library_fill_does_not():
    assert al.softmax.__module__  # noqa: the function exists
    from attention_lab.softmax import fill_overflows, fill_softmax, safe_fill

    assert fill_overflows(-1e9, "float16")
    with np.errstate(over="ignore"):
        assert np.float16(-1e9) == -np.inf
    assert np.isfinite(np.float16(safe_fill("float16")))
    assert not fill_overflows(safe_fill("float16"), "float16")
    assert not fill_overflows(safe_fill("bfloat16"), "bfloat16")
    all_masked = np.zeros((1, 4), dtype=bool)
    scores = np.array([[0.3, -0.2, 1.0, 0.5]])
    assert np.isnan(fill_softmax(scores, all_masked, -1e9, dtype="float16")).all()
    safe = fill_softmax(scores, all_masked, safe_fill("float16"), dtype="float16")
    assert np.isfinite(safe).all()  # finite (uniform); the library's softmax then gives zeros:
    assert (al.softmax(scores.astype(np.float16), mask=all_masked) == 0).all()


@given(problems())
def test_masking_after_softmax_sums_below_one_but_library_never_does(p):
    scores, mask, values = p
    assume((~mask).any())
    unmasked = al.softmax(scores)
    wrong = unmasked * mask  # mask after softmax, no renormalising
    right = al.softmax(scores, mask=mask)
    lost = (unmasked * ~mask).sum(-1)  # the mass the masked keys had
    np.testing.assert_allclose(wrong.sum(-1), 1 - lost, atol=1e-12)
    assert (wrong.sum(-1)[lost > 1e-9] < 1).all()
    np.testing.assert_allclose(right.sum(-1), 1, atol=1e-12)


def test_all_masked_row_policies():
    scores = np.array([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]])
    mask = np.array([[True, False, True], [False, False, False]])
    values = np.arange(6.0).reshape(3, 2)
    z = al.attend_scores(scores, values, mask=mask)
    assert (z.weights[1] == 0).all() and (z.context[1] == 0).all()
    assert z.empty_rows.tolist() == [False, True]
    n = al.attend_scores(scores, values, mask=mask, empty="nan")
    assert np.isnan(n.weights[1]).all() and np.isnan(n.context[1]).all()
    assert np.isfinite(n.weights[0]).all()
    with pytest.raises(ValueError, match=r"1 row\(s\) have no eligible key \(all masked\), "
                                         r"first at row 1; "):
        al.attend_scores(scores, values, mask=mask, empty="raise")
    with pytest.raises(ValueError, match=r"^the row has no eligible key \(all masked\); pass"):
        al.attend_scores(scores[1], values, mask=mask[1], empty="raise")  # one query: no index
    many = np.zeros((2, 3, 3), bool)
    with pytest.raises(ValueError, match=r"^6 row\(s\) .*, first at row \(0, 0\); "):
        al.softmax(np.zeros((2, 3, 3)), mask=many, empty="raise")


def test_temperature_divides_scores():
    e = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(al.softmax(e, temperature=2.0), al.softmax(e / 2.0), atol=1e-15)
    assert not np.allclose(al.softmax(e, temperature=2.0), al.softmax(e * 2.0))


def test_wrong_axis_keeps_shape_but_breaks_key_sums():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(2, 3, 5))
    right, wrong = al.softmax(scores, axis=-1), al.softmax(scores, axis=1)
    assert right.shape == wrong.shape
    np.testing.assert_allclose(right.sum(-1), 1)
    assert not np.allclose(wrong.sum(-1), 1)
    np.testing.assert_allclose(wrong.sum(1), 1)


def test_entropy_bounds():
    assert al.entropy(np.array([0.0, 1.0, 0.0])) == 0.0
    assert al.entropy(np.full(4, 0.25)) == pytest.approx(np.log(4))
    assert al.entropy(np.full(4, 0.25), base=2) == pytest.approx(2.0)
