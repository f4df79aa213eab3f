"""Mask constructors: True = eligible, shapes (..., T, S)."""

import numpy as np
import pytest

import attention_lab as al


def test_padding_mask_for_lengths_5_3_1():
    m = al.padding_mask([5, 3, 1], 5)
    assert m.dtype == bool and m.shape == (3, 5)
    assert m.astype(int).tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]]
    assert al.padding_mask(0, 3).tolist() == [False, False, False]


def test_lengths_argument_adds_the_query_axis():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(3, 2, 4)), rng.normal(size=(3, 5, 4)), rng.normal(size=(3, 5, 2))
    a = al.attend(Q, K, V, lengths=[5, 3, 1])
    b = al.attend(Q, K, V, mask=al.padding_mask([5, 3, 1], 5)[:, None, :])
    assert np.array_equal(a.weights, b.weights)
    assert (a.weights[1, :, 3:] == 0).all() and (a.weights[2, :, 1:] == 0).all()
    # the B == T trap: a (B, S) mask against (B, T, S) scores with B == T broadcasts over the
    # wrong axis; passing lengths= avoids it
    Q3 = rng.normal(size=(3, 3, 4))
    wrong = al.attend(Q3, K, V, mask=al.padding_mask([5, 3, 1], 5)).weights
    right = al.attend(Q3, K, V, lengths=[5, 3, 1]).weights
    assert not np.array_equal(wrong, right)


def test_causal_mask_alignments():
    assert np.array_equal(al.causal_mask(3), np.tril(np.ones((3, 3), bool)))
    assert np.array_equal(al.causal_mask(2, 4), np.tril(np.ones((2, 4), bool)))
    assert al.causal_mask(2, 4, align="lower_right").astype(int).tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    # T > S: lower-right leaves the first T - S queries with nothing to see
    lr = al.causal_mask(4, 2, align="lower_right")
    assert lr.astype(int).tolist() == [[0, 0], [0, 0], [1, 0], [1, 1]]
    np.testing.assert_array_equal(al.causal_mask(4, 4, align="lower_right"), al.causal_mask(4))


def test_local_window_matches_the_chapter_figure():
    # ten positions, a predicted (real) centre: positions 4-7 (1-based) are eligible
    m = al.local_mask(4.5, 2, 10)
    assert (np.flatnonzero(m) + 1).tolist() == [4, 5, 6, 7]
    assert al.local_mask(3, 0, 10).sum() == 1  # half-width 0 at an integer centre: one key
    assert al.local_mask(3.5, 0, 10).sum() == 0  # ... between two keys: none
    assert al.local_mask(20, 2, 10).sum() == 0  # a window outside the sequence
    m = al.local_m_mask(3, 6, 1)  # local-m: p_t = t
    assert m.astype(int).tolist() == [[1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0], [0, 1, 1, 1, 0, 0]]
    m = al.local_mask([0.0, 2.5], 1, 4)
    assert m.astype(int).tolist() == [[1, 1, 0, 0], [0, 0, 1, 1]]


def test_local_attention_misses_a_target_outside_its_window():
    S = 10
    keys = np.eye(S)
    values = np.eye(S)
    q = 5.0 * keys[8]  # the relevant source is position 9 (1-based)
    glob = al.attend(q, keys, values)
    loc = al.attend(q, keys, values, mask=al.local_mask(4.5, 2, S))
    assert glob.weights.argmax() == 8 and glob.weights[8] > 0.9
    assert loc.weights[8] == 0 and loc.context[8] == 0


def test_combine_masks_is_logical_and_with_broadcast():
    pad = al.padding_mask([4, 2], 4)[:, None, :]
    causal = al.causal_mask(3, 4)
    m = al.combine_masks(pad, causal)
    assert m.shape == (2, 3, 4)
    assert np.array_equal(m, pad & causal)
    assert m[1].astype(int).tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]]
    with pytest.raises(ValueError, match="at least one mask"):
        al.combine_masks()


def test_describe_counts_empty_rows():
    m = al.combine_masks(al.padding_mask([0, 2], 3)[:, None, :], al.causal_mask(2, 3))
    assert al.masks.describe(m) == "mask (2, 2, 3): 25% of query-key pairs eligible, 2 all-masked row(s)"


@pytest.mark.parametrize("shape,text", [
    ((2, 0), "mask (2, 0): no query-key pairs, 2 all-masked row(s)"),
    ((0,), "mask (0,): no query-key pairs, 1 all-masked row(s)"),
    ((0, 3), "mask (0, 3): no query-key pairs, 0 all-masked row(s)")])
def test_describe_an_empty_mask(shape, text):
    """No keys: every query's row is all-masked; no queries: no row (no crash, no nan%)."""
    assert al.masks.describe(np.zeros(shape, bool)) == text


def test_combine_masks_and_describe_take_the_torch_masks_they_accept():
    # both accept a torch mask (validate.bool_mask passes tensors through), then failed with
    # "unsupported operand type(s) for &=" and "mean(): could not infer output dtype"
    torch = pytest.importorskip("torch")
    from attention_lab import tensor as at

    pad = al.padding_mask([0, 2], 3)[:, None, :]
    m = al.combine_masks(torch.from_numpy(pad), at.causal_mask(2, 3))
    assert isinstance(m, np.ndarray) and np.array_equal(m, pad & al.causal_mask(2, 3))
    assert al.masks.describe(torch.from_numpy(m)) == al.masks.describe(m)
