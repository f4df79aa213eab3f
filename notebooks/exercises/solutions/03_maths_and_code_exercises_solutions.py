# ---
# jupyter:
#   attention_lab:
#     assignment: 03_maths_and_code
# ---

# %% [markdown]
# # Exercises, level 3: maths and code
#
# Five of the chapter's exercises on attention as careful numerical code (chapter exercises 8,
# 11, 12, 13 and 14): a stable softmax, the all-masked row, dot-product and bilinear scores,
# additive scores with different widths, and the softmax axis of batched cross-attention.
# Exercise 14 also asks for a written explanation (check 3.6), recorded for your instructor.
#
# Replace each `raise NotImplementedError` (or empty string) with your answer, run the cell,
# then the check; `hint("3.1")` gives one more hint per run. To hand in:
# save it (Ctrl+S), then in a terminal, in `notebooks/exercises/`, run
# `python -m attention_lab submit 03_maths_and_code_exercises.ipynb` with the lab's Python (the
# README's command: in the student bundle `../../.venv/bin/python`).
# <!-- BEGIN SOLUTION -->
#
# **Instructor solutions.** Running this notebook shows every computational check passing and
# a model written answer. The student notebook `../03_maths_and_code_exercises.py` is
# generated from this file (`python -m attention_lab.exercises.authoring build`).
# <!-- END SOLUTION -->

# %%
import numpy as np

from attention_lab.examples import running_example
from attention_lab.exercises import check, hint, status

ex = running_example()
np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Exercise 8 (check 3.1): a stable softmax
#
# Write `stable_softmax(scores)` over the last axis of `(..., S)` scores. It must stay finite
# for scores of `+1e4` and `-1e4`, work row by row when rows have very different ranges, work
# for float16 input, and give weight 0 to a score of `-inf`.

# %%
def stable_softmax(scores):
    """Softmax over the last axis that never overflows."""
    # BEGIN SOLUTION
    s = np.asarray(scores)
    shifted = s - s.max(axis=-1, keepdims=True)
    w = np.exp(shifted)
    return w / w.sum(axis=-1, keepdims=True)
    # END SOLUTION


# %% [markdown]
# Now compare it with the naive formula `exp(e) / sum(exp(e))` on the large scores below.
# Print both weight vectors, then record them in `softmax_comparison` (three weights each,
# rounded to three decimals; write a NaN as `np.nan`). The check tests your function and your
# comparison together.

# %%
large = np.array([1e4, 1e4 - 1, 0.0])
# BEGIN SOLUTION
#> # your comparison: the naive formula's weights and your stable softmax's for `large`
#>
#> softmax_comparison = {
#>     "naive": ...,   # exp(large) / exp(large).sum(), the three weights
#>     "stable": ...,  # stable_softmax(large), the three weights
#> }
with np.errstate(over="ignore", invalid="ignore"):  # the naive formula overflows
    print("naive: ", np.exp(large) / np.exp(large).sum())
print("stable:", stable_softmax(large))
softmax_comparison = {"naive": [np.nan, np.nan, 0.0], "stable": [0.731, 0.269, 0.0]}
# END SOLUTION

# %%
check("3.1", (stable_softmax, softmax_comparison))

# %% [markdown]
# ## Exercise 11 (check 3.2): define and test the all-masked row
#
# `softmax([-inf, -inf, ...])` is undefined: a row whose keys are all masked needs a *declared*
# policy. Three are common: `"zeros"` (all-zero weights and a zero context, what PyTorch's
# `scaled_dot_product_attention` returns from PyTorch 2.5 on; earlier versions return NaN),
# `"nan"` (NaN weights, so that the caller notices) and
# `"raise"` (a `ValueError`). A finite fill such as `-1e9` is not a policy: it spreads the weight
# uniformly over keys that must get none, and in float16 it is not even representable.
#
# Three parts:
#
# 1. **define**: set `all_masked_policy` to `"zeros"`, `"nan"` or `"raise"`;
# 2. **implement**: `masked_softmax_safe(scores, mask)` (shapes as in exercise 10, True =
#    eligible) follows your policy on rows without an eligible key, in float64, float32 and
#    float16, and masks every other row as in exercise 10;
# 3. **test**: `test_all_masked_policy(masked_softmax)` returns `True` when the implementation
#    it is given follows your policy on an all-masked row *and* masks an ordinary row correctly.
#    The check runs it on implementations with each policy and on broken ones.

# %%
# BEGIN SOLUTION
#> all_masked_policy = ...  # "zeros", "nan" or "raise"
all_masked_policy = "zeros"
# END SOLUTION


def masked_softmax_safe(scores, mask):
    """Masked softmax over the last axis; rows without an eligible key follow the policy."""
    # BEGIN SOLUTION
    s = np.asarray(scores, dtype=np.float64)
    mask = np.broadcast_to(mask, s.shape)
    has_key = mask.any(axis=-1, keepdims=True)
    filled = np.where(mask, s, -np.inf)
    top = np.where(has_key, filled.max(axis=-1, keepdims=True), 0.0)  # eligible keys' maximum
    w = np.where(mask, np.exp(filled - top), 0.0)
    total = np.where(has_key, w.sum(axis=-1, keepdims=True), 1.0)
    return w / total  # an all-masked row: 0 / 1 = zeros
    # END SOLUTION


def test_all_masked_policy(masked_softmax):
    """True when masked_softmax follows all_masked_policy and masks ordinary rows correctly."""
    # BEGIN SOLUTION
    scores = np.array([[1.0, -2.0, 0.5], [0.3, 0.1, -0.4]])
    mask = np.array([[True, False, True], [False, False, False]])  # row 2: no eligible key
    try:  # an implementation of the "raise" policy raises here
        w = np.asarray(masked_softmax(scores, mask), dtype=float)
    except ValueError:  # the row without an eligible key made it raise
        return False  # raising is not our "zeros" policy
    ordinary_ok = bool(w[0, 1] == 0 and np.isclose(w[0].sum(), 1.0))
    return ordinary_ok and bool(np.all(w[1] == 0))
    # END SOLUTION


# %%
check("3.2", (all_masked_policy, masked_softmax_safe, test_all_masked_policy))

# %% [markdown]
# ## Exercise 12 (check 3.3): dot-product and bilinear attention
#
# Write two functions for queries `Q (T, D_q)`, keys `K (S, D_k)` and values `V (S, D_v)`:
# `dot_attention(Q, K, V)` with scores `q . k`, and `bilinear_attention(Q, K, V, W)` with
# scores `q^T W k` for `W (D_q, D_k)`. Each returns `(scores, weights, context)` with shapes
# `(T, S)`, `(T, S)` and `(T, D_v)`.

# %%
def dot_attention(Q, K, V):
    """Dot-product attention: returns (scores, weights, context)."""
    # BEGIN SOLUTION
    scores = Q @ K.T
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return scores, w, w @ V
    # END SOLUTION


def bilinear_attention(Q, K, V, W):
    """Bilinear ("general") attention q^T W k: returns (scores, weights, context)."""
    # BEGIN SOLUTION
    scores = Q @ W @ K.T
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return scores, w, w @ V
    # END SOLUTION


# %% [markdown]
# Now compare their score shapes: two queries `Q2` (the running example's query and its first
# key used as a query) against the running example's five keys, with its matrix `W` for the
# bilinear scores. Record each function's score shape in `score_comparison`. The check tests
# both functions and your comparison together.

# %%
Q2 = np.stack([ex.query, ex.keys[0]])  # (T, D_q) = (2, 3)
# BEGIN SOLUTION
#> # your comparison: the shapes of the two functions' scores for Q2 against ex.keys
#>
#> score_comparison = {
#>     "dot": ...,       # the shape of dot_attention's scores
#>     "bilinear": ...,  # the shape of bilinear_attention's scores
#> }
dot_scores = dot_attention(Q2, ex.keys, ex.values)[0]
bilinear_scores = bilinear_attention(Q2, ex.keys, ex.values, ex.W)[0]
print("dot:     ", dot_scores.shape, dot_scores[0])
print("bilinear:", bilinear_scores.shape, bilinear_scores[0])
score_comparison = {"dot": (2, 5), "bilinear": (2, 5)}
# END SOLUTION

# %%
check("3.3", (dot_attention, bilinear_attention, score_comparison))

# %% [markdown]
# ## Exercise 13 (check 3.4): additive attention with different widths
#
# Additive (Bahdanau) attention scores each key with `e_i = v . tanh(W_q q + W_k k_i)`: the
# matrices map a query of width `D_q` and keys of width `D_k` into a shared width `A`. Write
# `additive_attention(q, keys, values, W_q, W_k, v)` returning `(weights, context)` for
# `q (D_q,)`, `keys (S, D_k)`, `values (S, D_v)`, `W_q (A, D_q)`, `W_k (A, D_k)`, `v (A,)`.

# %%
def additive_attention(q, keys, values, W_q, W_k, v):
    """Additive attention: returns (weights (S,), context (D_v,))."""
    # BEGIN SOLUTION
    hidden = np.tanh(keys @ W_k.T + W_q @ q)  # (S, A): the projected query is added to each key
    scores = hidden @ v
    w = np.exp(scores - scores.max())
    w = w / w.sum()
    return w, w @ values
    # END SOLUTION


# %%
check("3.4", additive_attention)

# %% [markdown]
# ## Exercise 14 (checks 3.5 and 3.6): the softmax axis of batched cross-attention
#
# First the code. Write `batched_attention(Q, K, V)` for `Q (B, T, D_k)`, `K (B, S, D_k)` and
# `V (B, S, D_v)` with unscaled dot-product scores, returning `(weights (B, T, S), context
# (B, T, D_v))`. The softmax must run over the source positions.

# %%
def batched_attention(Q, K, V):
    """Batched cross-attention: returns (weights (B, T, S), context (B, T, D_v))."""
    # BEGIN SOLUTION
    scores = Q @ np.swapaxes(K, -1, -2)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return w, w @ V
    # END SOLUTION


# %%
check("3.5", batched_attention)

# %% [markdown]
# Then the explanation (written, recorded for your instructor): what does a softmax over the
# wrong axis compute, why do the shapes not give it away, and which test catches it?

# %%
# BEGIN SOLUTION
#> wrong_axis_explanation = {
#>     "what_changes": "",      # what the weights mean with a softmax over the target or batch axis
#>     "why_shapes_agree": "",  # why the tensors keep their shapes
#>     "test": "",              # a check that detects the mistake
#> }
wrong_axis_explanation = {
    "what_changes": (
        "Over the target axis, each source position's weights sum to one across the queries, "
        "so a query's weights are no longer a distribution over the sources and queries compete "
        "for each source: one query's context depends on which other queries are in the batch. "
        "Over the batch axis, different examples compete and leak into each other."),
    "why_shapes_agree": (
        "Softmax keeps the shape of its input, so the weights are (B, T, S) and the context "
        "(B, T, D_v) whichever axis is normalised."),
    "test": (
        "Assert that weights.sum(axis=-1) is 1 for every query; with T = 1 a target-axis "
        "softmax gives weights that are all exactly 1; and changing another query (or another "
        "batch item) must leave this query's context unchanged."),
}
# END SOLUTION

# %%
check("3.6", wrong_axis_explanation)

# %% [markdown]
# ## Where you stand

# %%
status()
