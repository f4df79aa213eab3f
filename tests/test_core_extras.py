"""Core functions added for the explorers and notebooks 01-03: concentration, hardmax, masking
after softmax (the wrong order), dtype rounding (bfloat16 emulation), fill_softmax in bfloat16,
weighted_sum, within_value_range, and the extra examples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attention_lab import attend, softmax
from attention_lab.attention import weighted_sum, within_value_range
from attention_lab.examples import (LocalExample, local_example, running_additive_params,
                                    running_example)
from attention_lab.scores import additive_scores
from attention_lab.softmax import (DEMO_DTYPES, concentration, fill_softmax, hardmax,
                                   mask_after_softmax, round_to_dtype, safe_fill)

scores_st = arrays(np.float64, st.integers(1, 8), elements=st.floats(-20, 20))


# --- concentration ---------------------------------------------------------------------------

def test_concentration_one_hot_uniform_and_zero_rows():
    c = concentration(np.array([[0, 1.0, 0], [1 / 3, 1 / 3, 1 / 3], [0, 0, 0]]))
    assert np.allclose(c.max_weight, [1, 1 / 3, 0])
    assert np.allclose(c.entropy, [0, np.log(3), 0])
    assert np.allclose(c.effective_keys, [1, 3, 0])  # an all-masked "zeros" row covers 0 keys


def test_concentration_nan_row_is_nan():
    c = concentration(np.array([np.nan, np.nan]))
    assert np.isnan(c.effective_keys) and np.isnan(c.entropy)


@given(scores_st, st.floats(0.05, 5))
def test_effective_keys_between_one_and_n(e, tau):
    c = concentration(softmax(e, temperature=tau))
    assert 1 - 1e-9 <= c.effective_keys <= e.size + 1e-9
    assert 1 / e.size - 1e-12 <= c.max_weight <= 1


def test_lower_temperature_is_more_concentrated():
    e = running_example().keys @ running_example().query
    effs = [concentration(softmax(e, temperature=t)).effective_keys for t in (0.05, 0.5, 1, 2, 5)]
    assert np.all(np.diff(effs) > 0)


# --- hardmax -------------------------------------------------------------------------------

def test_hardmax_is_one_hot_on_the_argmax_and_respects_the_mask():
    e = np.array([0.1, 2.0, 0.5, 3.0])
    assert hardmax(e).tolist() == [0, 0, 0, 1]
    assert hardmax(e, mask=np.array([True, True, True, False])).tolist() == [0, 1, 0, 0]
    assert hardmax([1.0, 1.0]).tolist() == [1, 0]  # ties: the first


def test_hardmax_all_masked_follows_the_policy():
    m = np.zeros(3, bool)
    assert hardmax([1.0, 2, 3], mask=m).tolist() == [0, 0, 0]
    assert np.isnan(hardmax([1.0, 2, 3], mask=m, empty="nan")).all()
    with pytest.raises(ValueError, match="no eligible key"):
        hardmax([1.0, 2, 3], mask=m, empty="raise")


def test_hardmax_is_the_low_temperature_limit():
    e = np.array([0.3, 1.2, -0.4])
    assert np.allclose(softmax(e, temperature=1e-3), hardmax(e), atol=1e-12)


# --- mask after softmax (the wrong order) ----------------------------------------------------

def test_mask_after_softmax_loses_mass_and_renormalising_fixes_it():
    ex = running_example()
    e = ex.keys @ ex.query
    wrong = mask_after_softmax(e, ex.valid)
    assert wrong.sum() == pytest.approx(0.683905651829452)
    assert np.all(wrong[~ex.valid] == 0)
    right = attend(ex.query, ex.keys, ex.values, mask=ex.valid).weights
    assert np.allclose(mask_after_softmax(e, ex.valid, renormalise=True), right)
    assert not np.allclose(wrong, right)


@given(scores_st, st.data())
def test_mask_after_softmax_row_sum_is_the_eligible_mass(e, data):
    m = np.array(data.draw(st.lists(st.booleans(), min_size=e.size, max_size=e.size)))
    wrong = mask_after_softmax(e, m)
    assert wrong.sum() == pytest.approx(softmax(e)[m].sum(), abs=1e-12)
    assert wrong.sum() <= 1 + 1e-12
    fixed = mask_after_softmax(e, m, renormalise=True)
    assert fixed.sum() == pytest.approx(1.0 if m.any() else 0.0)


# --- dtype rounding and the kernel demo ------------------------------------------------------

def test_round_to_bfloat16_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = (rng.normal(size=4000) * 10.0 ** rng.integers(-30, 38, 4000)).astype(np.float32)
    x = np.concatenate([x, np.float32([0, -0.0, np.inf, -np.inf, 3.3895e38, 3.40e38,
                                       np.finfo(np.float32).min, 1 + 2 ** -8, 1 + 3 * 2 ** -8])])
    ours = round_to_dtype(x, "bfloat16")
    ref = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    assert ours.dtype == np.float32
    assert np.array_equal(ours, ref)


def test_round_to_dtype_overflows_to_inf_and_rejects_unknown_dtypes():
    assert np.isneginf(round_to_dtype(-1e9, "float16"))
    assert np.isneginf(round_to_dtype(np.finfo(np.float32).min, "bfloat16"))
    assert round_to_dtype(safe_fill("bfloat16"), "bfloat16") == np.float32(safe_fill("bfloat16"))
    assert np.isnan(round_to_dtype(np.nan, "bfloat16"))
    with pytest.raises(ValueError, match="dtype must be a floating dtype, one of"):
        round_to_dtype(1.0, "int8")


@pytest.mark.parametrize("dtype", DEMO_DTYPES)
def test_fill_softmax_all_masked_rows(dtype):
    e = np.array([0.5, 1.0, -0.2])
    none = np.zeros(3, bool)
    assert np.isnan(fill_softmax(e, none, -np.inf, dtype=dtype)).all()
    assert np.allclose(fill_softmax(e, none, safe_fill(dtype), dtype=dtype).astype(float), 1 / 3,
                       atol=2e-3)  # a finite fill: uniform weights over padding


def test_fill_softmax_bfloat16_is_rounded_and_close_to_float64():
    ex = running_example()
    e = ex.keys @ ex.query
    w = fill_softmax(e, ex.valid, -1e9, dtype="bfloat16")
    assert np.array_equal(w, round_to_dtype(w, "bfloat16"))
    assert np.allclose(w, softmax(e, mask=ex.valid), atol=1e-2)
    assert w[~ex.valid].tolist() == [0, 0]


def test_fill_softmax_naive_overflows_where_stable_does_not():
    e = np.array([12.0, 1.0, 0.0])  # exp(12) = 162755 > float16 max 65504
    m = np.ones(3, bool)
    assert np.isnan(fill_softmax(e, m, -np.inf, dtype="float16", stable=False)).any()
    assert np.isfinite(fill_softmax(e, m, -np.inf, dtype="float16", stable=True)).all()


# --- weighted_sum and within_value_range -----------------------------------------------------

def test_weighted_sum_single_and_batched():
    V = np.array([[1.0, 0], [0, 1], [2, 2]])
    assert weighted_sum([0.5, 0.5, 0.0], V).tolist() == [0.5, 0.5]
    w = np.random.default_rng(1).dirichlet(np.ones(3), size=(2, 4))
    assert np.allclose(weighted_sum(w, V), w @ V)


def test_weighted_sum_rejects_nan_unless_allowed_and_bad_shapes():
    V = np.eye(2)
    with pytest.raises(ValueError, match="weights contains"):
        weighted_sum([np.nan, 1.0], V)
    assert np.isnan(weighted_sum(np.array([np.nan, 1.0]), V, allow_nan=True)).all()
    with pytest.raises(ValueError, match="values has 2 rows"):
        weighted_sum([0.2, 0.3, 0.5], V)


def test_within_value_range():
    V = np.array([[0.0, 0.0], [2.0, 1.0], [1.0, 3.0]])
    assert within_value_range([1.0, 1.0], V).all()
    assert within_value_range([2.5, 1.0], V).tolist() == [False, True]
    # masked values do not count: with value 3 masked, coordinate 2 may be at most 1
    assert within_value_range([1.0, 2.0], V, mask=np.array([True, True, False])).tolist() == [
        True, False]
    assert not within_value_range([0.0, 0.0], V, mask=np.zeros(3, bool)).any()
    with pytest.raises(ValueError, match="expected"):
        within_value_range([1.0, 2.0, 3.0], V)


@given(scores_st.filter(lambda e: e.size >= 2), st.floats(0.05, 5))
def test_softmax_contexts_stay_within_the_value_range(e, tau):
    V = np.random.default_rng(e.size).normal(size=(e.size, 2))
    c = attend(np.zeros(1), np.zeros((e.size, 1)), V).context  # uniform weights
    assert within_value_range(c, V).all()
    w = softmax(e, temperature=tau)
    assert within_value_range(weighted_sum(w, V), V).all()


def test_weights_that_do_not_sum_to_one_can_leave_the_range():
    V = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    assert within_value_range(weighted_sum([0.5, 0.5, 0.0], V), V).all()
    assert within_value_range(weighted_sum([0.9, 0.9, 0.0], V), V).tolist() == [False, True]


# --- examples --------------------------------------------------------------------------------

def test_running_additive_params_keep_scores_within_limits():
    p = running_additive_params()
    assert p["W_q"].shape == (4, 3) and p["W_k"].shape == (4, 3) and p["v"].shape == (4,)
    rng = np.random.default_rng(0)
    q = rng.uniform(-1.5, 1.5, size=(200, 3))
    s = additive_scores(q, running_example().keys, **p)
    assert np.abs(s).max() <= 2.5 + 1e-12


def test_local_example_peaks_at_the_target():
    for t in range(10):
        ex = local_example(target=t)
        assert isinstance(ex, LocalExample) and ex.target == t
        assert ex.scores.argmax() == t and ex.values.shape == (10, 2)
    assert np.array_equal(local_example(3).values, local_example(7).values)  # same source
    with pytest.raises(ValueError, match="target must lie"):
        local_example(10)
    with pytest.raises(TypeError, match="target must be an integer"):
        local_example(2.5)


def test_entropy_refuses_base_1_instead_of_returning_inf_or_nan():
    # base=1 passed the check (finite and > 0) and divided by log(1) = 0: inf, or NaN for a
    # one-hot row, with numpy's divide warnings
    import pytest

    from attention_lab.softmax import entropy

    with pytest.raises(ValueError, match=r"base must be > 0 and not 1, got 1"):
        entropy([0.5, 0.5], base=1)
    assert entropy([0.5, 0.5], base=2) == pytest.approx(1.0)
