"""Luong's local-p (a predicted centre, a Gaussian-weighted window) and the dot score as a
projection, against references written out position by position."""

from __future__ import annotations

import numpy as np
import pytest

from attention_lab import dot_scores
from attention_lab.local import centre_from_logit, gaussian_window, local_p, predicted_centre
from attention_lab.scores import key_projections


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def local_p_by_hand(scores, values, p, D):
    """Luong et al. (2015), eq. 10, one position at a time: softmax over |j - p| <= D, times
    exp(-(j - p)^2 / (2 (D/2)^2))."""
    S = len(scores)
    inside = [j for j in range(S) if abs(j - p) <= D]
    total = sum(np.exp(scores[j]) for j in inside)
    w = np.zeros(S)
    for j in inside:
        w[j] = np.exp(scores[j]) / total * np.exp(-(j - p) ** 2 / (2 * (D / 2) ** 2))
    return w, w @ values


def test_the_centre_is_predicted_from_the_decoder_state():
    rng = np.random.default_rng(3)
    h, W_p, v_p = rng.normal(size=6), rng.normal(size=(4, 6)), rng.normal(size=4)
    want = 9 * sigmoid(v_p @ np.tanh(W_p @ h))
    assert predicted_centre(h, W_p, v_p, 10) == pytest.approx(want, abs=1e-12)
    H = rng.normal(size=(3, 6))                                   # three steps at once
    np.testing.assert_allclose(predicted_centre(H, W_p, v_p, 10),
                               [9 * sigmoid(v_p @ np.tanh(W_p @ x)) for x in H], atol=1e-12)
    np.testing.assert_allclose(centre_from_logit([-800.0, 0.0, 800.0], 10), [0.0, 4.5, 9.0])


@pytest.mark.parametrize("p, D", [(4.0, 2.0), (6.3, 1.5), (0.2, 3.0), (8.9, 0.5)])
def test_local_p_is_luongs_softmax_in_the_window_times_a_gaussian(p, D):
    rng = np.random.default_rng(7)
    scores, values = rng.normal(size=10), rng.normal(size=(10, 3))
    r = local_p(scores, values, p, D)
    w, c = local_p_by_hand(scores, values, p, D)
    np.testing.assert_allclose(r.weights, w, atol=1e-12)
    np.testing.assert_allclose(r.context, c, atol=1e-12)
    assert r.weights.sum() < 1  # the Gaussian is applied after the softmax: no renormalising
    np.testing.assert_allclose(r.extras["alignment"].sum(), 1.0)
    assert (r.weights[~r.mask] == 0).all()


def test_local_p_batches_one_centre_per_step_and_handles_edge_windows():
    rng = np.random.default_rng(1)
    scores, values = rng.normal(size=(3, 8)), rng.normal(size=(8, 2))
    centres = np.array([1.0, 3.5, 6.25])
    r = local_p(scores, values, centres, 2.0)
    assert r.weights.shape == (3, 8) and r.context.shape == (3, 2)
    for t in range(3):
        w, c = local_p_by_hand(scores[t], values, centres[t], 2.0)
        np.testing.assert_allclose(r.weights[t], w, atol=1e-12)
        np.testing.assert_allclose(r.context[t], c, atol=1e-12)
    one = local_p(scores[0], values, 3.0, 0.0)       # D = 0 on a position: all weight there
    assert one.weights.tolist() == [0, 0, 0, 1, 0, 0, 0, 0]
    empty = local_p(scores[0], values, 3.5, 0.0)     # D = 0 between positions: nothing eligible
    assert (empty.weights == 0).all() and (empty.context == 0).all() and empty.empty_rows
    with pytest.raises(ValueError, match="no eligible"):
        local_p(scores[0], values, 3.5, 0.0, empty="raise")
    np.testing.assert_allclose(gaussian_window(2.0, 2.0, 5), np.exp(-np.array(
        [4, 1, 0, 1, 4]) / 2.0))


def test_bad_local_p_input_is_named():
    with pytest.raises(ValueError, match=r"W_p has shape \(4, 5\); expected \(A, D_h\) = \(4, 6\)"):
        predicted_centre(np.zeros(6), np.zeros((4, 5)), np.zeros(4), 10)
    with pytest.raises(ValueError, match="half_width must be >= 0"):
        local_p(np.zeros(5), np.zeros((5, 2)), 2.0, -1.0)
    with pytest.raises(ValueError, match="S must be > 0"):
        centre_from_logit(0.0, 0)


def test_a_dot_score_is_the_querys_length_times_a_projection():
    rng = np.random.default_rng(0)
    keys = rng.normal(size=(5, 2))
    for angle in np.linspace(-np.pi, np.pi, 13):
        u = np.array([np.cos(angle), np.sin(angle)])
        for length in (0.5, 1.0, 3.0):
            np.testing.assert_allclose(length * key_projections(keys, u),
                                       dot_scores(length * u, keys), atol=1e-12)
    np.testing.assert_allclose(key_projections(keys, [3.0, 0.0]), keys[:, 0])  # unit direction
    with pytest.raises(ValueError, match="direction is the zero vector"):
        key_projections(keys, [0.0, 0.0])
    with pytest.raises(ValueError, match=r"direction has shape \(3,\); for keys of width 2"):
        key_projections(keys, [1.0, 0.0, 0.0])
