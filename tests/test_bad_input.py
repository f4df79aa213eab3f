"""Bad input gets a ValueError/TypeError naming the argument, what it got and what was expected."""

import numpy as np
import pytest

import attention_lab as al

ex = al.running_example()
q, K, V = ex.query, ex.keys, ex.values


@pytest.mark.parametrize("call, exc, pattern", [
    # mismatched key / value lengths
    (lambda: al.attend(q, K, V[:4]), ValueError, r"values has 4 rows .* keys has S=5 keys"),
    (lambda: al.attend_scores(np.zeros(5), V[:3]), ValueError, r"values has 3 rows .* S=5"),
    # query width != key width for dot products
    (lambda: al.attend(q[:2], K, V), ValueError, r"query has width D_k=2 .* keys has width 3"),
    (lambda: al.dot_scores(np.ones(4), K), ValueError, r"query has width D_k=4"),
    # bilinear / additive parameter shapes
    (lambda: al.bilinear_scores(q, K, np.eye(2)), ValueError, r"W has shape \(2, 2\).*\(3, 3\)"),
    (lambda: al.additive_scores(q, K, np.ones((4, 2)), np.ones((4, 3)), np.ones(4)), ValueError,
     r"W_q has shape \(4, 2\); expected \(A, D_q\) = \(4, 3\)"),
    (lambda: al.additive_scores(q, K, np.ones((4, 3)), np.ones((3, 3)), np.ones(4)), ValueError,
     r"W_k has shape \(3, 3\)"),
    (lambda: al.attend(q, K, V, score="bilinear"), TypeError, r"needs the parameter\(s\) \['W'\]"),
    (lambda: al.attend(q, K, V, W=np.eye(3)), TypeError, r"score='dot' takes .* unexpected \['W'\]"),
    (lambda: al.attend(q, K, V, score="cosine"), ValueError, r"score must be one of"),
    # masks: wrong shape, not boolean, adding dimensions
    (lambda: al.attend(q, K, V, mask=np.ones(4, bool)), ValueError,
     r"mask has shape \(4,\) but the scores have shape \(5,\).*S=5"),
    (lambda: al.attend(q, K, V, mask=np.ones(5)), TypeError, r"mask has dtype float64; expected a boolean"),
    (lambda: al.attend(q, K, V, mask=np.array([1, 1, 1, 0, 0])), TypeError, r"astype\(bool\)"),
    (lambda: al.attend(q, K, V, mask=np.ones((2, 5), bool)), ValueError, r"without adding dimensions"),
    (lambda: al.softmax(np.zeros((2, 3)), mask=np.ones((3, 2), bool)), ValueError, r"mask has shape \(3, 2\)"),
    # temperature must be finite and > 0
    (lambda: al.attend(q, K, V, temperature=0), ValueError, r"temperature must be finite and > 0, got 0"),
    (lambda: al.attend(q, K, V, temperature=-1.0), ValueError, r"temperature .* got -1"),
    (lambda: al.softmax([1.0], temperature=float("nan")), ValueError, r"temperature .* got nan"),
    (lambda: al.softmax([1.0], temperature=float("inf")), ValueError, r"temperature .* got inf"),
    (lambda: al.softmax([1.0], temperature="2"), TypeError, r"temperature must be a real number"),
    (lambda: al.softmax([1.0], temperature=True), TypeError, r"temperature must be a real number"),
    (lambda: al.dot_scores(q, K, scale=0.0), ValueError, r"scale must be finite and > 0"),
    # empty key set
    (lambda: al.attend(q, np.zeros((0, 3)), np.zeros((0, 3))), ValueError, r"key set is empty"),
    (lambda: al.attend_scores(np.zeros(0), np.zeros((0, 2))), ValueError, r"scores has shape \(0,\): no keys"),
    # NaN / inf inputs
    (lambda: al.attend(np.array([np.nan, 0, 0]), K, V), ValueError, r"query contains 1 non-finite .* NaN at index \(0,\)"),
    (lambda: al.attend(q, np.where(K > .8, np.inf, K), V), ValueError, r"keys contains 1 non-finite value.*inf at index \(1, 0\)"),
    (lambda: al.attend(q, K, np.full((5, 3), -np.inf)), ValueError, r"values contains 15 non-finite"),
    (lambda: al.softmax([0.0, np.nan]), ValueError, r"scores contains 1 non-finite value\(s\), first NaN"),
    (lambda: al.softmax([0.0, np.inf]), ValueError, r"scores contains .* inf"),
    (lambda: al.attend_scores([0.0, -np.inf], np.ones((2, 1))), ValueError, r"scores contains"),
    # lengths: negative, longer than S, not integers
    (lambda: al.padding_mask([5, 3, 6], 5), ValueError, r"lengths must lie in \[0, S=5\] .*\[5, 3, 6\]"),
    (lambda: al.padding_mask([2, -1], 5), ValueError, r"lengths must lie in \[0, S=5\] .* got \[2, -1\]"),
    (lambda: al.padding_mask([2.5], 5), TypeError, r"lengths must be integers, got dtype float64"),
    (lambda: al.padding_mask([True], 5), TypeError, r"lengths must be integers"),
    (lambda: al.attend(q, K, V, lengths=6), ValueError, r"lengths must lie in \[0, S=5\]"),
    (lambda: al.padding_mask([2], 0), ValueError, r"S must be > 0"),
    # other masks
    (lambda: al.causal_mask(3, 4, align="middle"), ValueError, r"align must be one of"),
    (lambda: al.causal_mask(0), ValueError, r"T must be > 0"),
    (lambda: al.causal_mask(2.0), TypeError, r"T must be an integer"),
    (lambda: al.local_mask(2, -1, 5), ValueError, r"half_width must be >= 0, got -1"),
    (lambda: al.local_mask(np.zeros((2, 2)), 1, 5), ValueError, r"centres has shape \(2, 2\)"),
    (lambda: al.local_mask(np.nan, 1, 5), ValueError, r"centres contains"),
    (lambda: al.combine_masks(np.ones(3, bool), np.ones(4, bool)), ValueError, r"do not broadcast"),
    (lambda: al.combine_masks(np.ones(3)), TypeError, r"masks\[0\] has dtype float64"),
    # types
    (lambda: al.attend("abc", K, V), TypeError, r"query has dtype <U3"),
    (lambda: al.attend(np.array([True, False, True]), K, V), TypeError, r"query has dtype bool"),
    (lambda: al.attend(q, K, V, empty="ignore"), ValueError, r"empty must be one of \('zeros', 'nan', 'raise'\)"),
    (lambda: al.softmax(np.zeros(3), axis=2), ValueError, r"axis=2 is out of range"),
    (lambda: al.attend(np.zeros((2, 3)), K, V[None].repeat(3, 0)), ValueError, r"values batch dimensions \(3,\)"),
])
def test_bad_input_message(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_torch_tensor_given_to_numpy_reference():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"query is a torch.Tensor.*attention_lab.tensor"):
        al.attend(torch.zeros(3), K, V)


def test_neg_inf_scores_are_accepted_by_softmax_as_ineligible():
    w = al.softmax([0.0, -np.inf, 0.0])
    assert w.tolist() == [0.5, 0.0, 0.5]


def test_inputs_are_not_modified():
    e = ex.query.copy(), ex.keys.copy(), ex.values.copy(), ex.valid.copy()
    al.attend(ex.query, ex.keys, ex.values, mask=ex.valid, temperature=0.3)
    for a, b in zip(e, (ex.query, ex.keys, ex.values, ex.valid)):
        assert np.array_equal(a, b)
