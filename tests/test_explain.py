"""attention_lab.explain on cases with known answers, and the toy-model experiments."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_lab.analysis import explain
from attention_lab.softmax import softmax


def identity_step(scores, mask=None):
    """values = identity and readout = identity: the output distribution IS the weight vector,
    so every intervention has a closed-form answer."""
    scores = np.asarray(scores, dtype=float)
    S = scores.size
    mask = np.ones(S, dtype=bool) if mask is None else np.asarray(mask)
    return explain.ReadoutStep(scores=scores, values=np.eye(S), mask=mask,
                               readout=lambda c: np.asarray(c))


# --- distances and ranks ------------------------------------------------------------------------

def test_total_variation_known_values():
    assert explain.total_variation([1, 0], [0, 1]) == 1.0
    assert explain.total_variation([0.5, 0.5], [0.5, 0.5]) == 0.0
    assert explain.total_variation([0.7, 0.2, 0.1], [0.5, 0.3, 0.2]) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="same number of outcomes"):
        explain.total_variation([1, 0], [1, 0, 0])


def test_kendall_tau_known_values():
    assert explain.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert explain.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert explain.kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # ties (tau-b): pairs (1,2) tie in x; 2 concordant -> 2 / sqrt(2 * 3)
    assert explain.kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / np.sqrt(6))
    assert np.isnan(explain.kendall_tau([1, 1, 1], [1, 2, 3]))
    assert np.isnan(explain.kendall_tau([1], [2]))
    with pytest.raises(ValueError, match="same length"):
        explain.kendall_tau([1, 2], [1, 2, 3])


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=9))
def test_kendall_tau_matches_the_pairwise_definition(pairs):
    x, y = (np.array(v, dtype=float) for v in zip(*pairs))
    conc = disc = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        tx += dx == 0
        ty += dy == 0
        conc += dx * dy > 0
        disc += dx * dy < 0
    n0 = len(x) * (len(x) - 1) / 2
    denom = np.sqrt((n0 - tx) * (n0 - ty))
    got = explain.kendall_tau(x, y)
    if denom == 0:
        assert np.isnan(got)
    else:
        assert got == pytest.approx((conc - disc) / denom)


# --- interventions with closed forms ---------------------------------------------------------

def test_leave_one_out_equals_the_weight_with_identity_readout():
    """Removing position j (renormalising) moves the output by exactly w_j in TVD."""
    step = identity_step([2.0, 0.5, -1.0, 1.0], mask=[True, True, False, True])
    w = step.weights
    loo = explain.leave_one_out(step)
    assert np.isnan(loo[2])
    assert np.allclose(loo[[0, 1, 3]], w[[0, 1, 3]])
    assert explain.kendall_tau(w[[0, 1, 3]], loo[[0, 1, 3]]) == 1.0


def test_uniform_baseline_known_answer():
    step = identity_step([3.0, 1.0, 0.0], mask=[True, True, False])
    w = step.weights
    r = explain.uniform_weights(step)
    assert r.tvd == pytest.approx(0.5 * (abs(w[0] - 0.5) + abs(w[1] - 0.5)))
    assert np.allclose(r.after, [0.5, 0.5, 0.0])


def test_permutations_known_answer():
    step = identity_step([2.0, 1.0, 0.0])
    w = step.weights
    r = explain.permute_weights(step, n=200, seed=3)
    # every permutation's TVD is 1/2 sum |w - w[perm]|: the six possible values
    possible = {round(0.5 * np.abs(w - w[list(p)]).sum(), 12)
                for p in itertools.permutations(range(3))}
    assert {round(v, 12) for v in r.tvds} <= possible
    assert r.max_weight == pytest.approx(w.max())
    assert r.n_eligible == 3
    assert 0 < r.median < 1


def test_permutations_of_identical_values_change_nothing():
    step = explain.ReadoutStep(scores=np.array([3.0, 0.0, -2.0]), values=np.ones((3, 2)),
                               mask=np.ones(3, bool),
                               readout=lambda c: np.column_stack([c[:, 0], c[:, 1]]) / 2)
    assert np.allclose(explain.permute_weights(step, n=20).tvds, 0)
    assert explain.uniform_weights(step).tvd == pytest.approx(0)


def test_permutations_keep_masked_positions_at_zero():
    seen = []
    step = explain.ReadoutStep(scores=np.array([1.0, 2.0, 0.0, 3.0]), values=np.eye(4),
                               mask=np.array([True, False, True, True]),
                               readout=lambda c: (seen.append(np.array(c)), np.asarray(c))[1])
    explain.permute_weights(step, n=30)
    assert all((c[:, 1] == 0).all() for c in seen)


def test_replace_value_known_answer():
    step = identity_step([0.0, 3.0, 1.0])
    w = step.weights
    control = np.array([1.0, 0.0, 0.0])  # the value of position 0
    r = explain.replace_value(step, control)
    assert r.position == 1 and r.weight == pytest.approx(w[1])
    # the weight of position 1 moves to outcome 0: TVD = w_1
    assert r.tvd == pytest.approx(w[1])
    assert r.prediction_changed
    with pytest.raises(ValueError, match="control must have shape"):
        explain.replace_value(step, np.zeros(2))
    # position 1.7 replaced position 1 without a word
    with pytest.raises(TypeError, match="position must be an integer, got float 1.7"):
        explain.replace_value(step, control, position=1.7)
    with pytest.raises(ValueError, match="position must lie in"):
        explain.replace_value(step, control, position=3)


def test_gradient_importance_known_answer():
    c = torch.tensor([0.5, -2.0, 0.0, 1.0])
    u = torch.tensor([3.0, 4.0])  # ||u|| = 5
    g = explain.gradient_importance(lambda x: ((x @ u) * c).sum(), np.zeros((4, 2)))
    assert np.allclose(g, np.abs(c.numpy()) * 5)
    with pytest.raises(ValueError, match="scalar"):
        explain.gradient_importance(lambda x: x.sum(0), np.zeros((4, 2)))
    # an output cut off from x (a .detach(), a constant) was torch's "does not require grad"
    # or "Set allow_unused=True", an argument the caller cannot pass
    w = torch.ones(2, requires_grad=True)
    for fn in (lambda x: (x.detach() ** 2).sum(), lambda x: (w * 3).sum()):
        with pytest.raises(ValueError, match="fn's output does not depend on x"):
            explain.gradient_importance(fn, np.zeros((4, 2)))


def test_explain_step_bundles_everything():
    step = identity_step([2.0, 0.5, -1.0, 1.0])
    r = explain.explain_step(step, np.full(4, 0.25), n_permutations=10,
                             gradient=np.array([4.0, 2.0, 1.0, 3.0]))
    assert r.tau_loo == pytest.approx(1.0)
    assert r.tau_gradient == pytest.approx(1.0)  # same order as the weights
    assert r.permutation.tvds.shape == (10,)


def test_explain_step_checks_the_gradient_has_one_entry_per_position():
    step = identity_step([2.0, 0.5, -1.0, 1.0])
    # a longer gradient was cut to its first S entries without a word, a 2-D one was reported
    # as 'x and y must have the same length, got 4 and 16'
    for bad in (np.array([4.0, 2.0, 1.0, 3.0, 9.0]), np.ones((4, 4)), np.ones(3)):
        with pytest.raises(ValueError, match=r"gradient must have shape \(S=4,\)"):
            explain.explain_step(step, np.full(4, 0.25), n_permutations=2, gradient=bad)


def test_a_readout_that_returns_logits_is_named():
    # a readout that forgets the softmax gave "TVDs" of logits without a word (here 1.46 for
    # the replaced value, 2.19 leaving a position out: beyond the metric's range 0..1)
    W = np.array([[3.0, -1.0], [0.0, 2.0]])
    step = explain.ReadoutStep(scores=np.array([1.0, 0.0]), values=np.eye(2), mask=np.ones(2, bool),
                               readout=lambda c: np.asarray(c) @ W)
    with pytest.raises(ValueError, match=r"readout must return probabilities .* apply a softmax"):
        explain.explain_step(step, np.zeros(2), n_permutations=3)


def test_readout_step_validates_its_inputs():
    with pytest.raises(ValueError, match="values must have shape"):
        explain.ReadoutStep(np.zeros(3), np.zeros((2, 2)), np.ones(3, bool), lambda c: c)
    with pytest.raises(ValueError, match="no eligible position"):
        explain.ReadoutStep(np.zeros(3), np.zeros((3, 2)), np.zeros(3, bool), lambda c: c)
    with pytest.raises(TypeError, match="readout must be callable"):
        explain.ReadoutStep(np.zeros(3), np.zeros((3, 2)), np.ones(3, bool), None)


# --- on the trained model ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def model():
    from attention_lab import toy

    return toy.load()


@pytest.mark.parametrize("values", ["embedding", "encoder"])
def test_toy_readout_step_reproduces_the_model(values):
    """For both kinds of values (symbol embeddings, encoder states), a ReadoutStep's weights and
    output equal what the model computed; step_of is one of them, numbered from 1."""
    from attention_lab import toy
    from attention_lab.toy import experiments as ex

    model = toy.load(values=values)
    tok, ln = ex.study_set(model, 4)
    d = ex.decode_forced(model, tok, ln)
    vals = ex.source_values(model, tok, ln)
    assert vals.shape == (4, 12, model.config.value_width)
    for b, t in [(0, 0), (1, 2), (3, 4)]:
        step = ex.readout_step(model, d, vals, b, t)
        S = int(ln[b])
        assert np.allclose(step.weights, d.weights[b, t, :S], atol=1e-5)
        assert np.allclose(step.weights @ step.values, d.contexts[b, t], atol=1e-5)
        probs = torch.softmax(torch.from_numpy(d.logits[b, t]).double(), -1).numpy()
        assert np.allclose(step.probs, probs, atol=1e-5)
        assert np.allclose(step.readout(step.weights @ step.values), probs, atol=1e-5)  # (D_v,)
    step = ex.step_of(model, "abcdefgh", 1)
    assert step.scores.shape == (8,) and int(np.argmax(step.weights)) == 7  # position 8: 'h'
    with pytest.raises(ValueError, match="step must lie in 1..8"):
        ex.step_of(model, "abcdefgh", 0)


def test_toy_gradients_match_one_step_at_a_time(model):
    """The batched trick (copy t carries step t) equals a direct gradient of one step, both in
    float64 (to float64's round-off: float32 gradients differ from it by ~1e-6, enough to swap
    two positions' order from one machine's kernels to another's), and leaves the model as it
    was."""
    import copy

    from attention_lab.toy import data
    from attention_lab.toy import experiments as ex

    tok, ln = ex.study_set(model, 3)
    b, t = 2, 1
    rows = ex.gradients_of_sequence(model, tok, ln, b)
    assert rows.dtype == np.float64 and next(model.parameters()).dtype == torch.float32
    model64 = copy.deepcopy(model).double()
    S = int(ln[b])
    tokens, lengths = torch.as_tensor(tok[b:b + 1]), torch.as_tensor(ln[b:b + 1])
    targets = torch.from_numpy(data.reverse_targets(tok[b:b + 1], ln[b:b + 1]))
    base = model64.src_emb(tokens).detach()

    def fn(e):
        emb = torch.cat([e[None], base[:, S:]], dim=1)
        return torch.log_softmax(model64(tokens, lengths, targets, embedded=emb)[0, t], -1)[
            targets[0, t] - 1]

    direct = explain.gradient_importance(fn, base[0, :S])
    assert np.allclose(rows[t], direct, rtol=1e-10, atol=1e-14)


def test_toy_explanation_table_shapes_and_ranges(model):
    from attention_lab.toy import experiments as ex

    tok, ln = ex.study_set(model, 3)
    tab = ex.explanation_table(model, tok, ln, n_permutations=20)
    n = int(ln.sum())
    assert all(len(v) == n for v in tab.values())
    for k in ("perm_median", "uniform", "replace", "loo_top"):
        assert ((tab[k] >= 0) & (tab[k] <= 1 + 1e-12)).all()
    assert tab["loo_top_changed"].dtype == bool
    assert ((tab["max_weight"] > 0) & (tab["max_weight"] <= 1)).all()
    assert np.nanmax(np.abs(tab["tau_loo"])) <= 1


def test_a_table_without_gradients_reports_none_for_them(model):
    # explanation_table(gradients=False) (faster) summarised the gradient's agreement as 0.0 (as if
    # attention never agreed with it) and its tau as nan, and tau_plot raised 'zero-size array'
    from attention_lab.toy import experiments as ex, figures

    tok, ln = ex.study_set(model, 2)
    tab = ex.explanation_table(model, tok, ln, n_permutations=5, gradients=False)
    s = ex.summarise(tab)
    assert s["median Kendall tau, attention vs gradient"] is None
    assert s["share of steps, same top position as gradient"] is None
    assert s["share of steps, same top position as leave-one-out"] > 0
    d = figures.tau_plot(tab).description
    assert "gradient (orange): not computed" in d and "leave-one-out (blue): 7 steps" in d


def test_step_of_names_a_step_that_is_not_a_whole_number(model):
    from attention_lab.toy.experiments import step_of

    assert step_of(model, "abcd", np.int64(2)).scores.shape == (4,)
    # e.g. len(source) / 2: was numpy's 'only integers, slices (`:`) ... are valid indices'
    for bad in (2.0, "2", True):
        with pytest.raises(TypeError, match="step must be an integer"):
            step_of(model, "abcd", bad)
    with pytest.raises(ValueError, match=r"step must lie in 1\.\.4"):
        step_of(model, "abcd", 0)


def test_kendall_tau_refuses_matrices():
    """Two (T, S) weight matrices were flattened and ranked as one vector: a plausible tau of
    nothing the chapter defines."""
    w = np.array([[0.1, 0.9], [0.6, 0.4]])
    with pytest.raises(ValueError, match=r"vectors of the same length, got shapes \(2, 2\)"):
        explain.kendall_tau(w, w[::-1])
    assert explain.kendall_tau(w[0], w[1]) == -1.0
