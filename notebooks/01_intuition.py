# %% [markdown]
# # Level 1: Intuition, attention as retrieval
#
# A Python dictionary is an **exact lookup**: `table[key]` compares the query with the stored keys
# and returns the value of the one key that is equal to it, or fails. Attention is a **soft
# lookup**: the query is compared with *every* key, each comparison gives a weight, and the answer
# is the weighted mix of *all* the values. Nothing fails when no key matches exactly, and the
# answer changes smoothly as the query changes.
#
# An encoder-decoder uses this to let each decoding step retrieve from all the source states
# instead of one fixed summary. Our example: five sources, each with a 3-number key and a 3-number
# value, and one decoder query (made-up numbers, not learned vectors).
#
# Cells that start with `# Predict` ask you first: replace the `...` with your guess, run it, then
# run the next cell, which computes the answer and compares. Sources, positions and coordinates
# are counted from 1 in the text (numpy indexes from 0 in code). Cells headed **Misconception N**
# demonstrate the chapter's misconceptions; the project README's table *Misconceptions* lists them.

# %%
import numpy as np

from attention_lab import attend, plots, widgets
from attention_lab.attention import weighted_sum
from attention_lab.examples import LATER_QUERY, running_example
from attention_lab.gradients import context_jacobian
from attention_lab.predict import reveal
from attention_lab.softmax import hardmax

ex = running_example()
query, keys, values = ex.query, ex.keys, ex.values
later_query = np.array(LATER_QUERY)
print("query:", query)
print("keys (one row per source):\n", keys)
print("values (one row per source):\n", values)

# %% [markdown]
# ## 1. From an exact lookup to a soft one
#
# An exact lookup finds the key equal to the query. None of our keys equals the query, so we
# measure how *well* each key matches: the dot product $q^\top k_i$, one score per source.

# %%
# Predict: which source's key matches the query best (1-5)? Compare the rows with the query.
best_source = ...

# %%
scores = keys @ query
print("scores:", np.round(scores, 2))
reveal(best_source, int(scores.argmax()) + 1)

# %% [markdown]
# Softmax turns the scores into weights (positive, summing to 1), and the context is the
# weighted mix of the values. Queries and keys decide the weights; the values only supply what is
# returned.

# %%
r = attend(query, keys, values)
print("weights:", np.round(r.weights, 3), " sum:", r.weights.sum())
print("context:", np.round(r.context, 3))

# %% [markdown]
# **The figure below** follows the query from left to right: five blue source boxes, each with a
# key and a value; the query scored against every key (orange boxes); the weights (boxes shaded on
# the weight scale used everywhere in this project: white 0, darker = larger); a green line from
# each weight to the vermillion context, thicker for a larger weight.

# %%
plots.overview_figure(r.scores, r.weights)

# %% [markdown]
# ### Misconception 2: "keys and values must be identical"
#
# They do different jobs: keys are matched, values are returned. Early models used one state for
# both, a valid special case.

# %%
# Predict: if the values were replaced by the keys, would the weights change (yes or no)?
weights_change = ...

# %%
# Misconception 2: keys and values may differ (and may also coincide)
same = attend(query, keys, keys)  # the early design: one state serves as key and value
print("weights, values = keys :", np.round(same.weights, 3))
print("context, values = keys :", np.round(same.context, 3), " vs", np.round(r.context, 3))
reveal(weights_change, not np.allclose(same.weights, r.weights))

# %% [markdown]
# ## 2. Same sources, different queries
#
# A decoder with one fixed summary gets the same vector at every step. With attention, each query
# retrieves its own mix. The later query is $(-1, -0.8, -0.3)$.

# %%
# Predict: which source will the later query weight most (1-5)?
later_best = ...

# %%
later = attend(later_query, keys, values)
print("chapter's query weights:", np.round(r.weights, 3), "context", np.round(r.context, 3))
print("later query weights    :", np.round(later.weights, 3), "context", np.round(later.context, 3))
reveal(later_best, int(later.weights.argmax()) + 1)

# %% [markdown]
# **The heatmap below** has one row per query and one column per source (darker = larger
# weight): the chapter's query leans on source 2, the later one on sources 4 and 5. No source is
# important in itself; the query decides.

# %%
plots.two_query_heatmap(np.vstack([r.weights, later.weights]),
                        ["chapter's query", "later query"])

# %% [markdown]
# ## 3. Soft retrieval is differentiable; hard retrieval is not
#
# *Hard* retrieval returns the value of the best-scoring key only. *Soft* attention mixes.
#
# ### Misconception 1: "attention chooses exactly one source item"
#
# Below, the query moves in five steps from the chapter's query to the later one.

# %%
# Predict: along the way, how many different contexts does HARD retrieval return?
hard_contexts = ...

# %%
# Misconception 1: soft attention mixes and moves smoothly; hard retrieval picks one item and jumps
seen = set()
for t in np.linspace(0, 1, 5):
    q = (1 - t) * query + t * later_query
    soft = attend(q, keys, values)
    hard = weighted_sum(hardmax(soft.scores), values)
    seen.add(tuple(hard))
    print(f"step {t:.2f}: soft context {np.round(soft.context, 3)}   hard context {hard}")
reveal(hard_contexts, len(seen))

# %% [markdown]
# Training adjusts the query (through the weights that produce it) by the gradient of the loss,
# which passes through $\partial c / \partial q$. The package computes it with torch autograd.

# %%
# Predict: is the hard context's gradient with respect to the query all zeros (yes or no)?
hard_gradient_zero = ...

# %%
soft_jac = context_jacobian(query, keys, values, retrieval="soft")  # (D_v, D_k)
hard_jac = context_jacobian(query, keys, values, retrieval="hard")
print("soft: dc/dq =\n", np.round(soft_jac, 3))
print("hard: every entry of dc/dq is 0:", bool(np.all(hard_jac == 0)))
reveal(hard_gradient_zero, bool(np.all(hard_jac == 0)))

# %% [markdown]
# Hard retrieval's context stays put until the best key changes, then jumps: its gradient is zero
# almost everywhere, so learning gets no signal. Soft attention passes a gradient through every
# score: that is what makes attention trainable.
#
# ## 4. A large weight is not an explanation
#
# A weight records how one computation routed its retrieval, not whether the output *depends* on
# that source. Only an intervention (remove the source, measure the output) shows dependence.
#
# ### Misconception 9: "attention weights are causal explanations"
#
# Below, source 2's value is replaced by the mix the four others already give. Then each source is
# removed in turn (its key and value deleted).

# %%
# Predict: removing which source (1-5) moves the context least?
least_moved = ...

# %%
# Misconception 9: the largest weight, and removing that source changes nothing
others = [0, 2, 3, 4]
redundant = values.copy()
redundant[1] = attend(query, keys[others], values[others]).context
full = attend(query, keys, redundant)
moves = []
for i in range(5):
    keep = [j for j in range(5) if j != i]
    moves.append(np.abs(attend(query, keys[keep], redundant[keep]).context - full.context).max())
    print(f"remove source {i + 1} (weight {full.weights[i]:.3f}): context moves by {moves[i]:.3f}")
reveal(least_moved, int(np.argmin(moves)) + 1)

# %% [markdown]
# ## 5. Attention does not supply order
#
# ### Misconception 10: "attention supplies order"

# %%
# Predict: shuffle the five sources (keys and values together). Does the context change?
context_changes = ...

# %%
# Misconception 10: attention treats the sources as a set
order = np.array([4, 2, 0, 3, 1])
shuffled = attend(query, keys[order], values[order])
print("weights follow their sources:", np.allclose(shuffled.weights, r.weights[order]))
print("context:", np.round(shuffled.context, 3))
reveal(context_changes, not np.allclose(shuffled.context, r.context))

# %% [markdown]
# Order must come from the representations themselves (a recurrent encoder, or positional
# information, Chapter 21).
#
# ## 6. Query explorer: your turn
#
# Sliders for the query, the temperature, and soft or hard retrieval; the diagram, bars, heatmap
# row and context follow. The blue dots are the five values: each context coordinate stays
# between the smallest and largest of them. The tasks above the sliders tick themselves off.
#
# Before the first task: value 4 is $(0.1, 0.3, 0.8)$. When source 4 takes half of the weight,
# what will the context's third coordinate be, roughly?

# %%
# Predict: the context's third coordinate when source 4 has about half of the weight
third_coordinate = ...

# %%
query_explorer = widgets.QueryExplorer()
query_explorer

# %%
# after the task: one query that solves it (its own computation, your explorer is untouched)
solved = attend(np.array([-1.5, 0.0, 1.5]), keys, values)
print("weights:", np.round(solved.weights, 3), " context:", np.round(solved.context, 3))
reveal(third_coordinate, round(float(solved.context[2]), 3), tol=0.1)

# %% [markdown]
# ## Summary
#
# * Attention is a soft lookup: every key is scored, the weights mix every value.
# * Queries and keys decide the weights; values supply the answer; the query decides what matters.
# * Soft retrieval is differentiable; hard retrieval's gradient is zero almost everywhere.
# * A weight describes routing, not dependence; attention alone knows nothing about order.
#
# Level 2 takes the operation apart: score functions, softmax, temperature, masks and windows.
