# %% [markdown]
# # Level 2: Mechanics, from scores to a context vector
#
# Level 1 described attention as retrieval: a query asks, every source answers with a score, the
# scores become weights, and the weights mix the values. This notebook does each step by hand on
# the chapter's running example, checks every number against the `attention_lab` library, and then
# gives you a slider for each step.
#
# **What you will see**
#
# 1. three ways to score a query against keys (dot, bilinear, additive);
# 2. softmax: why the weights compete, and why subtracting the maximum is safe;
# 3. temperature: the same scores, more or less concentrated;
# 4. masks: which keys are allowed, and the mistake of masking after the softmax;
# 5. global versus local access.
#
# Cells marked **Misconception N** demonstrate one of the chapter's common misconceptions; the
# table at the end lists them. Run the cells from top to bottom (Shift+Enter).

# %%
import numpy as np

from attention_lab import attend, dot_scores, bilinear_scores, softmax, naive_softmax, plots
from attention_lab import widgets
from attention_lab.examples import CHAPTER_TEMPERATURES, running_example

ex = running_example()
query, keys, values, W = ex.query, ex.keys, ex.values, ex.W
print("query  q:", query, "  shape", query.shape)
print("keys   K: shape", keys.shape, "(S = 5 source positions, D_k = 3)")
print("values V: shape", values.shape, "(D_v = 3)")

# %% [markdown]
# ## 1. Scores compare the query with every key
#
# A score says how well key $k_i$ matches the query $q$. The chapter uses three families:
#
# | score | formula | parameters |
# |---|---|---|
# | dot product | $e_i = q^\top k_i$ | none |
# | bilinear ("general") | $e_i = q^\top W k_i$ | a matrix $W$ |
# | additive (Bahdanau) | $e_i = v_a^\top \tanh(W_q q + W_k k_i + b_a)$ | $W_q, W_k, v_a, b_a$ |
#
# With all keys stacked as the rows of $K$, the dot-product scores of one query are a single
# matrix-vector product, `keys @ query`: one number per source position.

# %%
dot = keys @ query
print("dot-product scores:", np.round(dot, 3))
print("library agrees:    ", np.allclose(dot, dot_scores(query, keys)))

# %% [markdown]
# The bilinear score puts a matrix between query and key. $q^\top W k_i$ for all $i$ at once is
# `keys @ (W.T @ query)`: first map the query with $W^\top$, then take dot products.

# %%
bilinear = keys @ (W.T @ query)
print("bilinear scores:   ", np.round(bilinear, 3))
print("library agrees:    ", np.allclose(bilinear, bilinear_scores(query, keys, W)))

# %% [markdown]
# Key 1 is the clearest change: its dot score is slightly negative (-0.1) but its bilinear score
# is slightly positive (0.024), because $W$ mixes the key's directions before the comparison. Which
# keys "match" is decided by the score function, and in a trained model $W$ is learned: the score
# function is part of what the model learns.
#
# The additive score runs a small network on every query-key pair: project both into an
# alignment space, add, squash with $\tanh$, reduce to one number with $v_a$. The chapter gives no
# additive parameters for the running example, so these are ours (drawn once from a seeded
# generator); the chapter's own additive example, with query and keys of different widths, is in
# notebook 03, section 6.

# %%
from attention_lab import additive_scores
from attention_lab.examples import running_additive_params

p = running_additive_params()  # W_q (4, 3), W_k (4, 3), v (4,): alignment width 4
additive = np.tanh(query @ p["W_q"].T + keys @ p["W_k"].T) @ p["v"]
print("additive scores:   ", np.round(additive, 3))
print("library agrees:    ", np.allclose(additive, additive_scores(query, keys, **p)))
print("largest score at key: dot", dot.argmax() + 1, "| bilinear", bilinear.argmax() + 1,
      "| additive", additive.argmax() + 1)

# %% [markdown]
#
# ### Misconception 4: "scores are probabilities"
#
# Scores are compatibility values with no fixed range: they can be negative, they do not sum to 1,
# and multiplying a score function by 10 gives scores that are just as valid (and a different
# attention distribution).

# %%
# Misconception 4: scores are not probabilities
print("smallest score:", round(dot.min(), 3), " sum of scores:", round(dot.sum(), 3))
print("ten times the scores:", np.round(10 * dot, 2))
print("weights from the scores  :", np.round(softmax(dot), 3))
print("weights from 10 x scores :", np.round(softmax(10 * dot), 3))

# %% [markdown]
# ### Score explorer
#
# Move the query and switch between the score functions. The orange bars are the chosen scores,
# the black circles the plain dot product for comparison, and the green bars the softmax weights.
# The additive parameters are ours (seeded), since the chapter gives none for this example.

# %%
score_explorer = widgets.ScoreExplorer()
score_explorer

# %% [markdown]
# ## 2. Softmax turns scores into competing weights
#
# $$\alpha_i = \frac{\exp(e_i)}{\sum_{j=1}^{S} \exp(e_j)}$$
#
# Every weight is positive and they sum to 1. Adding one constant $m$ to every score multiplies
# numerator and denominator by the same $\exp(m)$, so nothing changes; a stable implementation
# uses this and subtracts the largest score first, so that no exponential can overflow. Written
# out, a stable softmax is three lines:

# %%
def stable_softmax(scores):
    shifted = scores - scores.max()  # the largest entry becomes 0, so exp(...) <= 1
    e = np.exp(shifted)
    return e / e.sum()


weights = stable_softmax(dot)
context = weights @ values
print("weights:", np.round(weights, 3), "sum:", weights.sum())
print("context:", np.round(context, 3))

# %% [markdown]
# The context $c = \sum_i \alpha_i v_i$ (in code `weights @ values`) has the width of one value
# vector (3), not five values side by side. The library computes the same numbers in one call:

# %%
result = attend(query, keys, values)
print("library weights:", np.round(result.weights, 3))
print("library context:", np.round(result.context, 3))
print("same as ours:   ", np.allclose(result.weights, weights) and np.allclose(result.context, context))

# %% [markdown]
# **Shift invariance, and why the shift matters.** Adding 100 to every score changes nothing.
# Multiplying the scores by 1000 does change the weights (that is a temperature, next section),
# and there the textbook formula without the shift overflows: $\exp(980)$ is infinite in float64
# and $\infty / \infty$ is NaN. The stable form is fine.

# %%
print("shifted by +100 :", np.round(stable_softmax(dot + 100), 3))
big = 1000 * dot
print("naive,  x1000   :", naive_softmax(big))
print("stable, x1000   :", np.round(stable_softmax(big), 3))

# %% [markdown]
# ### Misconception 3: "attention weights are independent probabilities"
#
# The weights share one denominator. Raise only the score of source 2 by 1 and watch *every
# other* weight go down, although their scores did not change.

# %%
# Misconception 3: the weights compete through the shared denominator
raised = dot.copy()
raised[1] += 1.0
print("before:", np.round(softmax(dot), 3))
print("after :", np.round(softmax(raised), 3), " (only score 2 changed)")

# %% [markdown]
# ### Misconception 5: "a larger score always means a larger contribution"
#
# What source $i$ adds to coordinate $j$ of the context is $\alpha_i v_{ij}$: its weight *times*
# its value. Source 2 has the largest score and weight, but its value is small in coordinate 3, so
# for that coordinate source 5 (a lower score, a large value) contributes six times more. A mask
# can also remove a high-scoring key altogether (section 4).

# %%
# Misconception 5: contribution = weight x value, not the score alone
contribution = weights[:, None] * values  # row i: what source i adds to each context coordinate
print("scores               :", np.round(dot, 2))
print("contribution to c[3] :", np.round(contribution[:, 2], 3))
print("largest score: source", dot.argmax() + 1, "| largest contribution to c[3]: source",
      contribution[:, 2].argmax() + 1)

# %% [markdown]
# ## 3. Temperature changes concentration, not ranking
#
# Dividing the scores by a temperature $\tau > 0$ before the softmax,
# $\alpha_i(\tau) = \exp(e_i/\tau) / \sum_j \exp(e_j/\tau)$, keeps the order of the weights but
# changes how peaked they are: $\tau < 1$ sharpens, $\tau > 1$ flattens. (Transformers use a fixed
# scale $1/\sqrt{d_k}$, a special case the next chapter derives.)

# %%
by_temperature = np.array([softmax(dot, temperature=t) for t in CHAPTER_TEMPERATURES])
for t, w in zip(CHAPTER_TEMPERATURES, by_temperature):
    print(f"temperature {t}: weights {np.round(w, 3)}  largest {w.max():.3f}")

# %% [markdown]
# **The figure below** shows these three weight vectors as bar charts side by side (temperature
# 0.5, 1 and 2). Source 2 is the tallest bar in every panel, but its bar shrinks from about 0.54 to
# 0.28 as the temperature grows while the other bars grow towards the uniform 0.2.

# %%
plots.temperature_panels(CHAPTER_TEMPERATURES, by_temperature)

# %% [markdown]
# ### Temperature explorer
#
# The slider is logarithmic from 0.05 to 5. The black ticks mark the weights at $\tau = 1$. The
# right panel follows two summaries of concentration along the whole temperature range: the
# largest weight, and the *effective number of keys* $\exp(H)$, where $H$ is the entropy of the
# weights (1 when one key takes everything, 5 when all five share equally).

# %%
temperature_explorer = widgets.TemperatureExplorer()
temperature_explorer

# %% [markdown]
# ### Misconception 8: "a sharp distribution proves the model found the right evidence"
#
# Concentration is a property of one attention computation, and the temperature alone can make it
# as sharp as you like, without any new evidence. At $\tau = 0.05$ almost all the weight sits on
# source 2; nothing about the sources changed, only the scale of the scores.

# %%
# Misconception 8: sharpness comes from the scale of the scores, not from evidence
from attention_lab.softmax import concentration

for t in (1.0, 0.05):
    w = softmax(dot, temperature=t)
    print(f"tau = {t:4.2f}: weights {np.round(w, 3)}, "
          f"effective keys {concentration(w).effective_keys:.2f}")

# %% [markdown]
# ## 4. Masks decide which keys may be retrieved
#
# Real batches are rectangular: a short source sentence is padded to the batch's length, and the
# padding must get **exactly zero** weight. A decoder that may not look ahead needs a causal rule.
# Both are masks: a boolean per key, `True` = eligible (the convention of PyTorch's
# `scaled_dot_product_attention`). The mask acts **before** the softmax: an ineligible score is
# replaced by $-\infty$, whose exponential is exactly 0, so the remaining weights renormalise among
# themselves.
#
# In the running example, sources 4 and 5 are padding:

# %%
valid = ex.valid
masked_scores = np.where(valid, dot, -np.inf)
masked_weights = stable_softmax(masked_scores)
print("valid          :", valid)
print("masked weights:", np.round(masked_weights, 3), "sum:", round(masked_weights.sum(), 3))
print("masked context:", np.round(masked_weights @ values, 3))

# %% [markdown]
# **The figure below** puts the unmasked weights (left) beside the masked ones (right). On the
# right, positions 4 and 5 have no bar (a cross marks them) and the three remaining bars are
# taller, in the same proportions as before, because they now share all of the mass.

# %%
plots.mask_figure(weights, masked_weights, valid)

# %% [markdown]
# ### Misconception 6: "masking after the softmax is the same as masking before it"
#
# Taking the unmasked weights and zeroing the padding afterwards is a different operation. The
# padding's mass (0.316 here) is simply lost: the row sums to 0.684, the context shrinks towards
# zero, and how much it shrinks depends on how much padding the sequence had.

# %%
# Misconception 6: mask after softmax without renormalising loses mass
wrong = weights * valid  # softmax over all five keys, then zero the padding
print("masked after softmax :", np.round(wrong, 3), " sum:", round(wrong.sum(), 3))
print("masked before softmax:", np.round(masked_weights, 3), " sum:", round(masked_weights.sum(), 3))
print("context, wrong order :", np.round(wrong @ values, 3))
print("context, right order :", np.round(masked_weights @ values, 3))

# %% [markdown]
# ### Misconception 7: "padding masks and causal masks are interchangeable"
#
# They answer different questions. A padding mask depends on each *sequence's length* and is the
# same for every query of that sequence; a causal mask depends on the *query's position* and is the
# same for every sequence. Below: the padding mask of a batch with lengths 5, 3 and 1, and the
# causal mask of 3 target positions over 5 sources (1 = eligible).

# %%
# Misconception 7: padding and causal masks encode different rules
from attention_lab import causal_mask, padding_mask

print("padding mask, lengths 5, 3, 1 (one row per sequence):")
print(padding_mask([5, 3, 1], 5).astype(int))
print("causal mask, T=3 queries x S=5 keys (one row per query position):")
print(causal_mask(3, 5).astype(int))

# %% [markdown]
# ### Mask explorer
#
# Set the valid length, switch single positions off and on, and tick *also mask AFTER softmax* to
# see the wrong order beside the right one with both row sums. Mask everything and the library's
# declared all-masked policy decides what you get: zeros (the default), NaN, or an error. The cell
# first drives the explorer from code (only source 1 left: the right row gives it all the weight,
# the wrong row keeps just its original 0.123), resets it, and then shows it.

# %%
mask_explorer = widgets.MaskExplorer()
mask_explorer.set(length=1, after_softmax=True)  # only source 1 left, and show the wrong order
s = mask_explorer.state
print("right:", np.round(s.weights, 3), "sum", round(s.row_sum, 3))
print("wrong:", np.round(s.after_weights, 3), "sum", round(s.after_row_sum, 3))
mask_explorer.reset()
mask_explorer

# %% [markdown]
# ## 5. Global and local access
#
# *Global* attention scores every source position. *Local* attention (Luong et al.) scores only a
# window $[p - D, p + D]$ around a centre $p$ that the decoder predicts or that moves with the
# output. Global access can reach any position but its cost grows with the source length; local
# access is cheaper and suits roughly monotonic alignments, but cannot retrieve what lies outside
# the window.
#
# **The figure below** draws a source of ten positions twice. In the top row (global) all ten are
# highlighted. In the bottom row (local, centre $p = 5.5$, half-width $D = 1.5$) only positions 4 to
# 7 are highlighted; the others are grey and hatched.

# %%
from attention_lab import local_mask

local = local_mask(4.5, 1.5, 10)  # 0-based centre 4.5 = between positions 5 and 6
print("local window, eligible positions:", np.flatnonzero(local) + 1)
plots.window_figure(np.ones(10, dtype=bool), local)

# %% [markdown]
# ### Window explorer
#
# The query matches one *target* position strongly (the star). Move the window and the target:
# when the target falls outside the window, local attention cannot retrieve it and spreads its
# weight over what the window holds. With the half-width at 0 and the centre between two
# positions, the window is empty and every weight is 0.

# %%
window_explorer = widgets.WindowExplorer()
window_explorer

# %% [markdown]
# ### Misconception 11: "global attention is always preferable"
#
# Global attention buys coverage with cost. For 1000 target and 1000 source positions it scores a
# million pairs; a local window of half-width 8 around the diagonal scores about 17 thousand. When
# the task's alignment is local (the target near the predicted centre), the window loses nothing:
# it even puts more weight on the target, because fewer positions compete.

# %%
# Misconception 11: local access is cheaper and, when justified, loses nothing
from attention_lab import attend_scores, local_m_mask
from attention_lab.examples import local_example

T = S = 1000
print("scored pairs, global      :", T * S)
print("scored pairs, local (D=8) :", int(local_m_mask(T, S, 8).sum()))
window = local_mask(4.5, 1.5, 10)  # positions 4-7, as in the figure
for target in (6, 8):  # 1-based: inside, then outside the window
    ex10 = local_example(target=target - 1)
    on_global = attend_scores(ex10.scores, ex10.values).weights[target - 1]
    on_local = attend_scores(ex10.scores, ex10.values, mask=window).weights[target - 1]
    print(f"target {target} ({'inside' if window[target - 1] else 'outside'} the window): "
          f"global weight {on_global:.3f}, local weight {on_local:.3f}")

# %% [markdown]
# The access pattern is an assumption about what a query may retrieve; state it before
# interpreting weights or comparing run times.
#
# ## Summary
#
# * A score compares the query with one key; it is not a probability. Dot, bilinear and additive
#   scores rank the same keys differently.
# * Softmax makes the scores compete for a total weight of 1; subtracting the maximum first changes
#   nothing but avoids overflow.
# * Temperature changes concentration and keeps the ranking.
# * Masks act before the softmax; masking afterwards loses mass.
# * Local windows trade coverage for cost.
#
# Level 3 writes the same computation for batches of queries as tensors, and tests it.
#
# ## The chapter's misconceptions: where each one is demonstrated
#
# | # | misconception | demonstrated in |
# |---|---|---|
# | 1 | attention chooses exactly one source item | notebook 01, section 5 (soft vs hard retrieval) |
# | 2 | keys and values must be identical | notebook 01, section 2 |
# | 3 | attention weights are independent probabilities | **this notebook**, section 2, cell "Misconception 3" |
# | 4 | scores are probabilities | **this notebook**, section 1, cell "Misconception 4" |
# | 5 | a larger score always means a larger final contribution | **this notebook**, section 2, cell "Misconception 5" |
# | 6 | masking after softmax is equivalent to masking before it | **this notebook**, section 4, cell "Misconception 6" |
# | 7 | padding masks and causal masks are interchangeable | **this notebook**, section 4, cell "Misconception 7" |
# | 8 | a sharp distribution proves the model found the correct evidence | **this notebook**, section 3, cell "Misconception 8" |
# | 9 | attention weights are causal explanations | notebook 01, section 6 |
# | 10 | attention supplies order | notebook 01, section 7 |
# | 11 | global attention is always preferable | **this notebook**, section 5, cell "Misconception 11" |
# | 12 | attention removes quadratic cost in self-attention | notebook 03, section 2 |
# | 13 | all-masked rows have zero attention by default | notebook 03, section 4 |
# | 14 | matching output shape proves the correct softmax axis | notebook 03, section 2 |
