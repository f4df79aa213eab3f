# ---
# jupyter:
#   attention_lab:
#     assignment: 02_mechanics
# ---

# %% [markdown]
# # Exercises, level 2: mechanics
#
# Seven of the chapter's exercises on the steps of attention: scores, softmax, temperature and
# masks (chapter exercises 2, 3, 4, 5, 9, 10 and 15). Each exercise has an answer cell and a
# check cell. A check says **pass**, **fail** (with the reason and the smallest input that goes
# wrong) or **not attempted**; `hint("2.4")` gives one more hint per run; `status()` at the end
# lists where you stand. Exercise 4 is a written answer: it is recorded for your instructor, and
# once each field holds an answer of at least 12 words the check shows the rubric to compare
# it with.
#
# Positions are numbered 1..S, as in the level notebooks: position `j` is row `j - 1` of an
# array. Replace each `raise NotImplementedError` (or `...`, or empty string) with your answer,
# run the cell, then the check. To hand in:
# save it (Ctrl+S), then in a terminal, in `notebooks/exercises/`, run
# `python -m attention_lab submit 02_mechanics_exercises.ipynb` with the lab's Python (the
# README's command: in the student bundle `../../.venv/bin/python`).
# <!-- BEGIN SOLUTION -->
#
# **Instructor solutions.** Running this notebook shows every computational check passing and
# a model written answer. The student notebook `../02_mechanics_exercises.py` is generated
# from this file (`python -m attention_lab.exercises.authoring build`).
# <!-- END SOLUTION -->

# %%
import numpy as np

from attention_lab.examples import running_example
from attention_lab.exercises import check, hint, status

ex = running_example()
np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Exercise 2 (check 2.1): dot-product scores
#
# Write `dot_scores(query, keys)`: `query` has shape `(D_k,)`, `keys` has shape `(S, D_k)`,
# and the result holds one plain dot product per key, shape `(S,)`. The chapter's score is
# not divided by anything.

# %%
def dot_scores(query, keys):
    """One unscaled dot product per key: (D_k,) and (S, D_k) -> (S,)."""
    # BEGIN SOLUTION
    return keys @ query
    # END SOLUTION


# %%
check("2.1", dot_scores)

# %% [markdown]
# ## Exercise 3 (check 2.2): softmax by hand
#
# Compute the softmax weights of the three scores `[2.0, 1.0, 0.1]` by hand (a calculator is
# fine, numpy is not the point here) and write them as a list of three numbers rounded to
# three decimals. Check for yourself that they add up to one.

# %%
# BEGIN SOLUTION
#> softmax_by_hand = ...  # a list of three numbers
# exp(2) = 7.389, exp(1) = 2.718, exp(0.1) = 1.105; their sum is 11.212
softmax_by_hand = [0.659, 0.242, 0.099]
# END SOLUTION
if softmax_by_hand is not ...:
    print("sum:", round(sum(softmax_by_hand), 3))

# %%
check("2.2", softmax_by_hand)

# %% [markdown]
# ## Exercise 4 (check 2.3, written): adding a constant leaves softmax unchanged
#
# Show with algebra that `softmax(e + c) = softmax(e)` for every constant `c`, and explain
# what a numerically stable softmax does with this fact. Write plain text in the two fields;
# formulas can be written as `exp(e_i + c)`.

# %%
# BEGIN SOLUTION
#> shift_invariance = {
#>     "derivation": "",   # write softmax(e + c)_i and simplify
#>     "consequence": "",  # what a stable softmax does with this, and why
#> }
shift_invariance = {
    "derivation": (
        "softmax(e + c)_i = exp(e_i + c) / sum_j exp(e_j + c) = exp(c) exp(e_i) / "
        "(exp(c) sum_j exp(e_j)). The factor exp(c) > 0 is common to the numerator and every "
        "term of the denominator, so it cancels and leaves exp(e_i) / sum_j exp(e_j) = "
        "softmax(e)_i, for any real c."),
    "consequence": (
        "A stable softmax subtracts the largest score, c = -max_j e_j. Then every exponent is "
        "<= 0, exp cannot overflow, the largest term is exactly 1 so the denominator is at "
        "least 1, and the result is unchanged. Multiplying the scores (a temperature) is "
        "different: that does change the weights."),
}
# END SOLUTION

# %%
check("2.3", shift_invariance)

# %% [markdown]
# ## Exercise 5 (check 2.4): temperature, and the comparison of 0.5, 1 and 2
#
# Write `softmax_temperature(scores, temperature)`: the softmax of `scores / temperature`
# over the last axis, for a vector `(S,)` or rows `(..., S)`.

# %%
def softmax_temperature(scores, temperature):
    """Softmax of scores / temperature over the last axis."""
    # BEGIN SOLUTION
    z = np.asarray(scores) / temperature
    z = z - z.max(axis=-1, keepdims=True)
    w = np.exp(z)
    return w / w.sum(axis=-1, keepdims=True)
    # END SOLUTION


# %% [markdown]
# Now compare. Use your function on the chapter's dot scores `chapter_scores` at the
# temperatures 0.5, 1 and 2: print the weights, the largest weight and the order of the
# positions from the largest weight down. Then record what you found in
# `temperature_comparison`: the largest weight at each temperature (three numbers, rounded to
# three decimals) and whether the order of the positions is the same at all three. The check
# tests your function and your comparison together.

# %%
chapter_scores = np.dot(ex.keys, ex.query)  # one dot product per key, as in exercise 2
# BEGIN SOLUTION
#> # your comparison: for each temperature 0.5, 1 and 2, the weights, the largest weight and the order
#>
#> temperature_comparison = {
#>     "largest_weight": ...,  # [at 0.5, at 1, at 2]
#>     "same_order": ...,      # True or False
#> }
for temperature in (0.5, 1.0, 2.0):
    w = softmax_temperature(chapter_scores, temperature)
    order = np.argsort(-w) + 1  # positions 1..S, largest weight first
    print(f"temperature {temperature}: weights {np.round(w, 3)}, largest {w.max():.3f}, "
          f"order of the positions {order}")
temperature_comparison = {"largest_weight": [0.539, 0.361, 0.276], "same_order": True}
# END SOLUTION

# %%
check("2.4", (softmax_temperature, temperature_comparison))

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# *Model answer.* The order of the positions is the same at every temperature (dividing all
# scores by the same positive number keeps their order), but the largest weight falls from 0.54
# at temperature 0.5 to 0.36 at 1 and 0.28 at 2: a low temperature concentrates the weight on
# position 2, a high one spreads it towards uniform (0.2 each).
# <!-- END SOLUTION -->

# %% [markdown]
# ## Exercise 9 (check 2.5): a padding mask from lengths
#
# A batch holds sequences of different lengths padded to `S` positions. Write
# `padding_mask(lengths, S)` returning a boolean array `(B, S)` with **True = eligible**:
# sequence `b` has the real positions `1..lengths[b]`, the columns `0..lengths[b] - 1` of its
# row. For the chapter's lengths 5, 3 and 1 with `S = 5`, the first row is all True and the
# last has a single True.

# %%
def padding_mask(lengths, S):
    """Boolean (B, S) mask, True where position j < lengths[b]."""
    # BEGIN SOLUTION
    return np.arange(S)[None, :] < np.asarray(lengths)[:, None]
    # END SOLUTION


# %%
check("2.5", padding_mask)

# %% [markdown]
# ## Exercise 10 (check 2.6): test that masked keys receive exactly zero weight
#
# Two parts. First the implementation: `masked_softmax(scores, mask)`, where `scores` is a
# float64 or float32 array of shape `(..., S)` and `mask` is boolean and broadcasts to it
# (True = eligible). Masked keys must get weight **exactly** 0 and each row's eligible weights
# must sum to 1. Every row has at least one eligible key (exercise 11 in level 3 deals with rows
# that have none, and with float16). A fill far below every score gives exactly 0: `-np.inf`
# always, `-1e9` for these scores too (its exponential underflows to 0); a fill of `-30` does
# not.
#
# Then the test: `test_masked_softmax(masked_softmax)` receives *an* implementation and returns
# `True` when it gives masked keys exactly zero weight and makes every row sum to 1, `False`
# otherwise. Choose your own scores and mask. The check runs your test on correct
# implementations and on broken ones (weights zeroed after the softmax, a fill of -30, ...): it
# must tell them apart.

# %%
def masked_softmax(scores, mask):
    """Softmax over the last axis that gives masked keys exactly zero weight."""
    # BEGIN SOLUTION
    filled = np.where(mask, scores, -np.inf)
    filled = filled - filled.max(axis=-1, keepdims=True)
    w = np.exp(filled)
    return w / w.sum(axis=-1, keepdims=True)
    # END SOLUTION


def test_masked_softmax(masked_softmax):
    """True when masked_softmax gives masked keys exactly 0 and rows that sum to 1."""
    # BEGIN SOLUTION
    scores = np.array([[0.5, 2.0, -1.0, 3.0], [-4.0, -5.0, 1.0, 0.0]])
    mask = np.array([[True, False, True, True], [True, True, False, False]])
    w = np.asarray(masked_softmax(scores, mask), dtype=float)
    exactly_zero = bool(np.all(w[~mask] == 0))  # exactly: 1e-13 is not 0
    sums_to_one = bool(np.allclose(w.sum(axis=-1), 1.0))
    return exactly_zero and sums_to_one
    # END SOLUTION


# %%
check("2.6", (masked_softmax, test_masked_softmax))

# %% [markdown]
# ## Exercise 15 (check 2.7): global attention against a local window
#
# Write `local_attention(query, keys, values, centre, half_width)`: unscaled dot-product
# attention in which only the positions `j` with `|j - centre| <= half_width` are eligible.
# Positions and `centre` are numbered 1..S (position `j` is row `j - 1` of `keys`). Return
# `(weights, context)` with one weight per key (0 outside the window). If no position lies in
# the window, return zero weights and a zero context.

# %%
def local_attention(query, keys, values, centre, half_width):
    """Attention restricted to the positions 1..S within half_width of centre."""
    # BEGIN SOLUTION
    S = keys.shape[0]
    inside = np.abs(np.arange(1, S + 1) - centre) <= half_width  # positions 1..S
    if not inside.any():
        return np.zeros(S), np.zeros(values.shape[1])
    scores = np.where(inside, keys @ query, -np.inf)
    w = np.exp(scores - scores.max())
    w = w / w.sum()
    return w, w @ values
    # END SOLUTION


# %% [markdown]
# Now compare global attention with the window on a task whose relevant position lies outside
# it: the query `far` below matches key 5 best, and the window is centred on position 1 with
# half-width 1. A window wider than the source (centre 3, half-width 10) is global attention.
# Print both weight vectors, then record position 5's weight in each in `window_comparison`
# (rounded to three decimals). The check tests your function and your comparison together.

# %%
far = 3 * ex.keys[4]  # a query that matches key 5 best
# BEGIN SOLUTION
#> # your comparison: the weights of global attention and of the window around position 1
#>
#> window_comparison = {
#>     "global": ...,  # position 5's weight with global attention
#>     "local": ...,   # its weight in the window around position 1, half-width 1
#> }
w_global, _ = local_attention(far, ex.keys, ex.values, 3, 10)
w_local, _ = local_attention(far, ex.keys, ex.values, 1, 1)
print("global attention:       ", np.round(w_global, 3))
print("window around position 1:", np.round(w_local, 3))
window_comparison = {"global": 0.732, "local": 0.0}
# END SOLUTION

# %%
check("2.7", (local_attention, window_comparison))

# %% [markdown]
# ## Where you stand

# %%
status()
