"""The chapter's printed numbers, reproduced by the library (Levels 2 and 3)."""

import numpy as np
import pytest

import attention_lab as al
from attention_lab import examples


def r3(x):
    return np.round(x, 3).tolist()


@pytest.fixture
def ex():
    return al.running_example()


def test_dot_and_bilinear_scores(ex):
    assert r3(al.dot_scores(ex.query, ex.keys)) == [-0.1, 0.98, 0.39, -0.29, 0.46]
    assert r3(al.bilinear_scores(ex.query, ex.keys, ex.W)) == [0.024, 1.018, 0.394, -0.352, 0.4]


def test_weights_and_context(ex):
    r = al.attend(ex.query, ex.keys, ex.values)
    assert r3(r.weights) == [0.123, 0.361, 0.2, 0.101, 0.215]
    assert r.weights.sum() == pytest.approx(1.0, abs=1e-15)
    assert r3(r.context) == [0.511, 0.398, 0.417]


def test_masked_weights_context_and_mass(ex):
    r = al.attend(ex.query, ex.keys, ex.values, mask=ex.valid)
    assert r3(r.weights) == [0.179, 0.528, 0.293, 0.0, 0.0]
    assert r3(r.context) == [0.607, 0.475, 0.176]
    assert r.masked_mass == 0.0
    # the same through the chapter's own route: -inf written into the scores
    scores = np.where(ex.valid, al.dot_scores(ex.query, ex.keys), -np.inf)
    assert np.array_equal(al.softmax(scores), r.weights)


def test_additive_weights_from_seed_19():
    a = examples.additive_example(19)
    assert (a.q.shape, a.source.shape, a.W_q.shape, a.W_h.shape, a.v_a.shape) == \
        ((4,), (5, 6), (5, 4), (5, 6), (5,))
    e = al.additive_scores(a.q, a.source, a.W_q, a.W_h, a.v_a)
    assert e.shape == (5,)
    assert r3(al.softmax(e)) == [0.012, 0.073, 0.498, 0.26, 0.157]
    # the vectorised form equals the chapter's one-key-at-a-time loop
    loop = np.array([a.v_a @ np.tanh(a.W_q @ a.q + a.W_h @ h) for h in a.source])
    np.testing.assert_allclose(e, loop, rtol=0, atol=1e-14)


def test_temperatures_keep_ranking_and_change_concentration(ex):
    e = al.dot_scores(ex.query, ex.keys)
    rows = {t: al.softmax(e, temperature=t) for t in examples.CHAPTER_TEMPERATURES}
    assert r3(rows[1.0]) == [0.123, 0.361, 0.2, 0.101, 0.215]
    for w in rows.values():
        assert list(np.argsort(w)) == list(np.argsort(e))
    assert rows[0.5].max() > rows[1.0].max() > rows[2.0].max()
    assert al.entropy(rows[0.5]) < al.entropy(rows[1.0]) < al.entropy(rows[2.0])


def test_torch_shapes_from_seed_19():
    torch = pytest.importorskip("torch")
    from attention_lab.tensor import attention

    Q, K, V = examples.tensor_example(19)
    out = attention(Q, K, V)
    scores = Q @ K.transpose(-2, -1)
    assert tuple(scores.shape) == (2, 3, 5)
    assert tuple(out.weights.shape) == (2, 3, 5)
    assert tuple(out.context.shape) == (2, 3, 6)
    assert out.weights[0, 0].sum().item() == pytest.approx(1.0, abs=1e-6)
    # the same tensors as the chapter's code draws
    torch.manual_seed(19)
    assert torch.equal(Q, torch.randn(2, 3, 4))


def test_score_matrix_count_exercise():
    assert al.analysis.cost.score_matrix_elements(8, 64, 512, heads=4) == 1_048_576
    assert al.analysis.cost.score_matrix_shape(8, 64, 512, heads=4) == (8, 4, 64, 512)
