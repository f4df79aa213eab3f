# %% [markdown]
# # Level 2: Mechanics, from scores to a context vector
#
# Level 1 described attention as a soft lookup. Here each step is done by hand on the chapter's
# running example and checked against the `attention_lab` library: (1) score functions, (2)
# softmax, (3) temperature, (4) masks, (5) global and local access. Each step ends with an
# explorer that sets you a task and ticks it off when you reach it.
#
# Cells that start with `# Predict` ask first: replace the `...` and run it; the cell under it
# shows the answer, and why, once you have predicted. Sources and positions are counted from 1 in
# the text (numpy indexes from 0 in code). Cells marked **Misconception N** demonstrate the
# chapter's misconceptions; the table *Misconceptions* on the lab's site
# (`docs/students/misconceptions.md`) lists them.

# %%
# Colab (or any Python without the lab): install attention_lab once; where it is installed,
# this cell does nothing. torch stays the one you have.
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("attention_lab") is None:
    LAB = "https://github.com/attention-lab/attention-lab"
    print(f"attention_lab is not installed here: installing it from {LAB} (about a minute)")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                    f"attention-lab[notebooks] @ git+{LAB}@main"], check=True)
    importlib.invalidate_caches()

# %%
import numpy as np

from attention_lab import (additive_scores, attend, attend_scores, bilinear_scores, causal_mask,
                           combine_masks, dot_scores, local_m_mask, local_mask, naive_softmax,
                           padding_mask, plots, softmax, widgets)
from attention_lab.examples import (CHAPTER_TEMPERATURES, local_example, running_additive_params,
                                    running_example)
from attention_lab.explanations import level2 as why
from attention_lab.local import centre_from_logit, local_p
from attention_lab.predict import reveal
from attention_lab.softmax import concentration

ex = running_example()
query, keys, values, W = ex.query, ex.keys, ex.values, ex.W
print("query q:", query, " keys K:", keys.shape, "(S = 5, D_k = 3)  values V:", values.shape)

# %% [markdown]
# ## 1. Scores compare the query with every key
#
# | score | formula | parameters |
# |---|---|---|
# | dot product | $e_i = q^\top k_i$ | none |
# | bilinear ("general") | $e_i = q^\top W k_i$ | a matrix $W$ |
# | additive (Bahdanau) | $e_i = v_a^\top \tanh(W_q q + W_k k_i + b_a)$ | $W_q, W_k, v_a, b_a$ |
#
# With the keys as the rows of $K$, all dot scores are one product, `keys @ query`; the bilinear
# scores map the query by $W^\top$ first.

# %%
dot = keys @ query
bilinear = keys @ (W.T @ query)
print("dot-product scores:", np.round(dot, 3))
print("bilinear scores:   ", np.round(bilinear, 3))
print("library agrees:    ", np.allclose(dot, dot_scores(query, keys))
      and np.allclose(bilinear, bilinear_scores(query, keys, W)))

# %% [markdown]
# The additive score runs a small network on each query-key pair. The chapter gives no additive
# parameters for this example, so ours are drawn once from a seeded generator: random, untrained.

# %%
p = running_additive_params()  # W_q (4, 3), W_k (4, 3), v (4,): alignment width 4
additive = np.tanh(query @ p["W_q"].T + keys @ p["W_k"].T) @ p["v"]
print("additive scores:   ", np.round(additive, 3))
print("library agrees:    ", np.allclose(additive, additive_scores(query, keys, **p)))

# %%
# Predict: the scores differ. Do dot and bilinear rank the five keys in the same order (yes/no)?
same_ranking = ...

# %%
def ranking(e):
    return (np.argsort(-e) + 1).tolist()  # source numbers, best first


with reveal(same_ranking, why=why.same_ranking) as r:
    print("ranking, dot     :", ranking(dot))
    print("ranking, bilinear:", ranking(bilinear))
    print("ranking, additive:", ranking(additive))
    r.answer = ranking(dot) == ranking(bilinear)

# %% [markdown]
# ### Misconception 4: "scores are probabilities"

# %%
# Misconception 4: scores are not probabilities
print("smallest score:", round(dot.min(), 3), " sum of scores:", round(dot.sum(), 3))
print("weights from the scores  :", np.round(softmax(dot), 3))
print("weights from 10 x scores :", np.round(softmax(10 * dot), 3))

# %% [markdown]
# Scores can be negative, need not sum to 1, and ten times the scores are just as valid (with a
# different distribution).
#
# ### Score explorer
#
# Orange bars: the chosen scores; black circles: the dot product; green bars: the weights.

# %%
score_explorer = widgets.ScoreExplorer()
score_explorer

# %% [markdown]
# ## 2. Softmax: from scores to weights
#
# $$\alpha_i = \frac{\exp(e_i)}{\sum_{j=1}^{S} \exp(e_j)}, \qquad c = \sum_i \alpha_i v_i$$

# %%
# Predict: add 100 to every score. Do the weights change (yes/no)?
shift_changes = ...

# %%
def softmax_by_the_formula(scores):
    e = np.exp(scores)
    return e / e.sum()


with reveal(shift_changes, why=why.shift_changes) as r:
    print("weights          :", np.round(softmax_by_the_formula(dot), 3))
    print("weights, +100    :", np.round(softmax_by_the_formula(dot + 100), 3))
    r.answer = not np.allclose(softmax_by_the_formula(dot + 100), softmax_by_the_formula(dot))

# %% [markdown]
# So a *stable* softmax subtracts the largest score first: the weights stay the same, and no
# exponential can overflow.

# %%
def stable_softmax(scores):
    shifted = scores - scores.max()  # the largest entry becomes 0, so exp(...) <= 1
    e = np.exp(shifted)
    return e / e.sum()


weights = stable_softmax(dot)
context = weights @ values
print("weights:", np.round(weights, 3), "sum:", weights.sum())
print("context:", np.round(context, 3))
result = attend(query, keys, values)
print("library agrees:", np.allclose(result.weights, weights) and np.allclose(result.context, context))

# %% [markdown]
# The context has the width of one value (3), not five values side by side. Multiplying the
# scores, unlike adding to them, does change the weights (a temperature, section 3), and there
# the formula without the shift overflows: $\exp(980)$ is infinite in float64 and
# $\infty/\infty$ is NaN.

# %%
big = 1000 * dot
print("naive,  x1000   :", naive_softmax(big))
print("stable, x1000   :", np.round(stable_softmax(big), 3))

# %% [markdown]
# ### Does raising one score change the other weights?

# %%
# Predict: raise only score 2 by 1. Does source 1's weight go "up", "down" or stay the "same"?
source1_weight = ...

# %%
# Misconception 3: one score raised, every weight compared
with reveal(source1_weight, why=why.source1_weight, choices=("up", "down", "same")) as r:
    raised = dot.copy()
    raised[1] += 1.0
    print("before:", np.round(softmax(dot), 3))
    print("after :", np.round(softmax(raised), 3), " (only score 2 changed)")
    change = softmax(raised)[0] - softmax(dot)[0]
    r.answer = "same" if np.isclose(change, 0) else ("up" if change > 0 else "down")

# %% [markdown]
# ### Misconception 5: "a larger score always means a larger contribution"
#
# Source $i$ adds $\alpha_i v_{ij}$ to coordinate $j$ of the context: weight *times* value.

# %%
# Misconception 5: contribution = weight x value, not the score alone
contribution = weights[:, None] * values  # row i: what source i adds to each context coordinate
print("contribution to c₃ :", np.round(contribution[:, 2], 3))
print("largest score: source", dot.argmax() + 1, "| largest contribution to c₃: source",
      contribution[:, 2].argmax() + 1)

# %% [markdown]
# Source 2 has the largest score, but its value is small in coordinate 3; source 5 contributes
# six times more there. A mask can also remove a high-scoring key altogether (section 4).
#
# ## 3. What does a temperature change?
#
# A temperature $\tau > 0$ divides the scores before the softmax:
# $\alpha_i = \exp(e_i / \tau) / \sum_j \exp(e_j / \tau)$. (Transformers' fixed $1/\sqrt{D_k}$
# is derived in the next chapter.)

# %%
# Predict: the largest weight is 0.361 at temperature 1. What is it at temperature 0.5?
largest_at_half = ...

# %%
with reveal(largest_at_half, why=why.largest_at_half, tol=0.05) as r:
    for t in (1.0, 0.5):
        print(f"temperature {t}: largest weight {softmax(dot, temperature=t).max():.3f}")
    r.answer = round(float(softmax(dot, temperature=0.5).max()), 3)

# %%
by_temperature = np.array([softmax(dot, temperature=t) for t in CHAPTER_TEMPERATURES])
for t, w in zip(CHAPTER_TEMPERATURES, by_temperature):
    print(f"temperature {t}: weights {np.round(w, 3)}  largest {w.max():.3f}")

# %% [markdown]
# **The figure below** draws these weights as three bar charts (temperature 0.5, 1, 2): source 2
# is tallest in each, shrinking from 0.54 to 0.28 while the others approach the uniform 0.2.

# %%
plots.temperature_panels(CHAPTER_TEMPERATURES, by_temperature)

# %% [markdown]
# ### Temperature explorer
#
# A log slider from 0.05 to 5; black ticks: the weights at $\tau = 1$. Right: the largest weight
# and the *effective number of keys* $\exp(H)$ ($H$ the entropy: 1 when one key takes all, 5 when
# all five share equally).

# %%
temperature_explorer = widgets.TemperatureExplorer()
temperature_explorer

# %% [markdown]
# ### Misconception 8: "a sharp distribution proves the model found the right evidence"

# %%
# Misconception 8: sharpness comes from the scale of the scores, not from evidence
for t in (1.0, 0.05):
    w = softmax(dot, temperature=t)
    print(f"tau = {t:4.2f}: weights {np.round(w, 3)}, "
          f"effective keys {concentration(w).effective_keys:.2f}")

# %% [markdown]
# The temperature alone makes the weights as sharp as you like; nothing about the sources changed.
#
# ## 4. Masks decide which keys may be retrieved
#
# A mask is a boolean per key, `True` = eligible: the convention of `attn_mask` in PyTorch's
# `scaled_dot_product_attention`. `nn.MultiheadAttention`'s `key_padding_mask` is the opposite
# (`True` = ignore), so it gets `~valid`. A mask acts **before** the softmax: an ineligible score
# becomes $-\infty$, whose exponential is exactly 0, and the eligible weights renormalise. In the
# running example, sources 4 and 5 are padding:

# %%
valid = ex.valid
masked_weights = stable_softmax(np.where(valid, dot, -np.inf))
print("valid          :", valid)
print("key_padding_mask for nn.MultiheadAttention (True = ignore):", ~valid)
print("masked weights:", np.round(masked_weights, 3), "sum:", round(masked_weights.sum(), 3))
print("masked context:", np.round(masked_weights @ values, 3))

# %% [markdown]
# **The figure below**: unmasked weights (left), masked ones (right). Positions 4 and 5 get no
# bar (a cross), the three others grow in the same proportions.

# %%
plots.mask_figure(weights, masked_weights, valid)

# %% [markdown]
# ### Mask explorer
#
# Valid length, single positions, the wrong order (*mask AFTER softmax*) beside the right one, and
# the policy for a row with nothing eligible. Its first task asks for a prediction: write it here.

# %%
# Predict: softmax over all five, then zero positions 4 and 5. What does the row sum to?
row_sum_after = ...

# %%
mask_explorer = widgets.MaskExplorer()
mask_explorer

# %%
# Misconception 6: the mask applied after the softmax, without renormalising
with reveal(row_sum_after, why=why.row_sum_after, tol=0.05) as r:
    wrong = weights * valid  # softmax over all five keys, then zero the padding
    print("masked after softmax :", np.round(wrong, 3), " sum:", round(wrong.sum(), 3))
    print("context, wrong order :", np.round(wrong @ values, 3), " right:",
          np.round(masked_weights @ values, 3))
    r.answer = round(float(wrong.sum()), 3)

# %% [markdown]
# ### Padding masks and causal masks
#
# A **padding** mask depends on a sequence's length and is the same for every query. A **causal**
# mask depends on the query's position: in a decoder's *self*-attention ($T = S$, the target
# attends to itself) position $t$ may not see later positions. Cross-attention over a finished
# source needs padding only. Below, a batch of two targets of lengths 4 and 2 is padded on the
# *left* (as batched text generation does: the real tokens sit at the end, next to what comes
# next) and needs both masks, combined:

# %%
pad = padding_mask([4, 2], 4)[:, ::-1][:, None, :]  # (B, 1, S): left padding, same for every query
causal = causal_mask(4)                             # (T, S): the same for every sequence
both = combine_masks(pad, causal)                   # (B, T, S): eligible under both
print("sequence 2 (length 2, padded on the left), padding AND causal (rows: queries):\n",
      both[1].astype(int))

# %% [markdown]
# What if one of the two masks is used alone? With equal scores every eligible key gets the same
# weight, so the weights show the eligibility directly.

# %%
# Predict: with the padding mask ALONE, how much weight does position 1 of sequence 1 (length 4)
# put on later positions?
future_weight = ...

# %%
# Misconception 7: each mask alone, on real queries
with reveal(future_weight, why=why.future_weight, tol=0.05) as r:
    equal = np.zeros((2, 4, 4))  # equal scores: uniform weights over whatever is eligible
    only_pad = softmax(equal, mask=pad)
    only_causal = softmax(equal, mask=causal)
    print("padding only, sequence 1, position 1:", np.round(only_pad[0, 0], 3),
          "(sees the future)")
    print("causal only,  sequence 2, position 3 (its first real token):",
          np.round(only_causal[1, 2], 3), "(uses padding)")
    r.answer = round(float(only_pad[0, 0, 1:].sum()), 3)

# %% [markdown]
# In self-attention $T = S$ and query $t$ sees keys $1..t$. When the queries are fewer than the
# keys, for example $T = 3$ new queries of a decoder whose cache already holds $S = 5$ keys,
# "causal" needs an *alignment*: upper-left lines the first query up with the first key
# (`causal_mask(3, 5)`, SDPA's `is_causal`), lower-right the last query with the last key
# (`align="lower_right"`, what decoding with a cache needs):

# %%
print("T=3, S=5, causal, upper-left :\n", causal_mask(3, 5).astype(int))
print("T=3, S=5, causal, lower-right:\n", causal_mask(3, 5, align="lower_right").astype(int))

# %% [markdown]
# Neither is "the" causal mask; which one a piece of code uses is a convention it must state.
#
# ## 5. Global and local access
#
# *Global* attention scores every source position. *Local* attention (Luong et al.) scores only a
# window $|j - p| \le D$ around a centre $p$: cheaper, and suited to roughly monotonic
# alignments, but blind outside the window. **The figure below**: ten positions twice, all
# highlighted (global), then only the window $p = 5.5$, $D = 1.5$ (local).

# %%
p_centre, D = 5.5, 1.5  # the centre sits between positions 5 and 6
positions = np.arange(1, 11)
window = np.abs(positions - p_centre) <= D
print("local window, eligible positions:", positions[window])
print("library agrees:", np.array_equal(window, local_mask(p_centre - 1, D, 10)),
      "(its positions count from 0, as numpy's)")
plots.window_figure(np.ones(10, dtype=bool), window)

# %% [markdown]
# ### What does a window cost, and what does it lose?
#
# For a sequence attending to itself, Luong's *local-m* window centres query $t$ on its own
# position: `local_m_mask(T, S, D)` lets query $t$ see the keys $j$ with $|j - t| \le D$.

# %%
T = S = 1000
print("scored pairs, global      :", T * S)
print("scored pairs, local (D=8) :", int(local_m_mask(T, S, 8).sum()))

# %% [markdown]
# Far fewer scores. What the task needs, here, is the value at one *target* position, which the
# query matches strongly; the window of the figure covers positions 4-7.

# %%
# Predict: target 6 lies inside the window (positions 4-7). Globally it gets 0.545 of the
# weight. Under the window, is its weight "higher", "lower" or the "same"?
local_target = ...

# %%
# Misconception 11: the window against global access, target inside and outside it
with reveal(local_target, why=why.local_target, choices=("higher", "lower", "same")) as r:
    for target in (6, 8):
        ex10 = local_example(target=target - 1)
        g = attend_scores(ex10.scores, ex10.values)
        loc = attend_scores(ex10.scores, ex10.values, mask=window)
        v = ex10.values[target - 1]  # what the task needs
        print(f"target {target} ({'inside' if window[target - 1] else 'outside'} the window): "
              f"weight on the target: global {g.weights[target - 1]:.3f}, local "
              f"{loc.weights[target - 1]:.3f}\n    context's distance from the target's value: "
              f"global {np.linalg.norm(g.context - v):.3f}, local {np.linalg.norm(loc.context - v):.3f}")
    ex6 = local_example(target=5)
    change = (attend_scores(ex6.scores, ex6.values, mask=window).weights[5]
              - attend_scores(ex6.scores, ex6.values).weights[5])
    r.answer = "same" if np.isclose(change, 0) else ("higher" if change > 0 else "lower")

# %% [markdown]
# A window changes the computation even when it keeps the target: fewer keys compete. When the
# target lies inside, it loses nothing the task needs; outside, the target is simply missed.
# State the access pattern before interpreting weights or run times.
#
# ### Window explorer
#
# The query matches one *target* position strongly (the star). Move the window, its width and
# the target.

# %%
window_explorer = widgets.WindowExplorer()
window_explorer

# %% [markdown]
# ### Local-p: a predicted centre
#
# Local-m assumes the alignment runs along the diagonal ($p_t = t$). Reversal, say, needs position
# $S + 1 - t$ at step $t$. Luong's *local-p* lets the decoder state $h_t$ predict the centre from
# $z_t = v_p^\top \tanh(W_p h_t)$: the paper's centre is $p_t = S\,\sigma(z_t)$, in $[0, S]$;
# ours is $p_t = 1 + (S - 1)\,\sigma(z_t)$, which stays on the positions 1..S. It scores
# the window $|j - p_t| \le D$, and multiplies the softmax weights by a Gaussian
# $\exp(-(j - p_t)^2 / (2 (D/2)^2))$ that favours the positions near $p_t$. Below, $z = 1$, $D = 2$,
# ten positions, the target at 8.

# %%
# Predict: after the Gaussian factors (each at most 1), do the local-p weights still sum to 1
# (yes or no)?
local_p_sums_to_1 = ...

# %%
with reveal(local_p_sums_to_1, why=why.local_p_sums_to_1) as r:
    ex10 = local_example(target=7)
    centre = float(centre_from_logit(1.0, 10))  # counted from 0, as numpy's positions
    lp = local_p(ex10.scores, ex10.values, centre, 2.0)
    print(f"centre p_t = {centre + 1:.2f}; window positions {np.flatnonzero(lp.mask) + 1}")
    print("softmax in the window:", np.round(lp.extras["alignment"], 2))
    print("local-p weights      :", np.round(lp.weights, 2), " sum:", round(float(lp.weights.sum()), 2))
    r.answer = bool(np.isclose(lp.weights.sum(), 1.0))

# %% [markdown]
# **Local-p explorer**: the centre logit $z$ moves $p_t$ along the sigmoid; the bars show the
# softmax inside the window, the Gaussian factors and their product.

# %%
localp_explorer = widgets.LocalPExplorer()
localp_explorer

# %% [markdown]
# ## Summary
#
# * A score compares the query with one key; it is not a probability. Dot and bilinear scores
#   rank the running example's keys the same way; the random additive scores do not.
# * Softmax makes the scores compete; subtracting the maximum avoids overflow and changes nothing.
# * Temperature changes concentration and keeps the ranking.
# * Masks act before the softmax. Padding and causal masks are different rules, combined by AND.
# * Local windows trade coverage for cost, and change the context even when they keep the target;
#   local-p predicts where the window goes.
#
# Level 3 writes the same computation for batches of queries as tensors, and tests it.
