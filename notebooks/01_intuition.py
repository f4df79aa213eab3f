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
# Cells that start with `# Predict` ask you first: replace the `...` with your guess and run it.
# The cell under it computes the answer, but shows it (with what it computed, whether you were
# right, and why) only once you have predicted; until then it just reminds you. Sources,
# positions and coordinates are counted from 1 in the text (numpy indexes from 0 in code). Code
# cells marked `# Misconception N` demonstrate the chapter's misconceptions; the table
# *Misconceptions* on the lab's site (`docs/students/misconceptions.md`) lists them.

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

from attention_lab import attend, plots, widgets
from attention_lab.attention import weighted_sum
from attention_lab.examples import LATER_QUERY, running_example
from attention_lab.explanations import level1 as why
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
with reveal(best_source, why=why.best_source) as r:
    scores = keys @ query  # (S,): one dot product per source
    print("scores:", np.round(scores, 2))
    r.answer = int(scores.argmax()) + 1

# %% [markdown]
# Softmax turns the scores into weights (positive, summing to 1), and the context is the
# weighted mix of the values.

# %%
result = attend(query, keys, values)
print("weights:", np.round(result.weights, 3), " sum:", result.weights.sum())
print("context:", np.round(result.context, 3))

# %% [markdown]
# **The figure below** follows the query from left to right: five blue source boxes, each with a
# key and a value; the query scored against every key (orange boxes); the weights (boxes shaded on
# the weight scale used everywhere in this project: white 0, darker = larger); a green line from
# each weight to the vermillion context, thicker for a larger weight.

# %%
plots.overview_figure(result.scores, result.weights)

# %% [markdown]
# ### A score is a projection
#
# $q^\top k_i = |q|\,p_i$, where $p_i$ is how far key $i$ reaches along the query's direction:
# the query's direction decides the order of the keys, its length how far apart their scores lie.

# %%
# Predict: double the query (2q). Does the best-matching source change (yes or no)?
best_changes = ...

# %%
with reveal(best_changes, why=why.best_changes) as r:
    doubled = attend(2 * query, keys, values)
    print("scores, q :", np.round(result.scores, 2), "  weights:", np.round(result.weights, 3))
    print("scores, 2q:", np.round(doubled.scores, 2), "  weights:", np.round(doubled.weights, 3))
    r.answer = bool(doubled.scores.argmax() != result.scores.argmax())

# %% [markdown]
# **The geometry explorer** draws four keys in two dimensions as arrows and the query as an arrow
# you turn (angle) and stretch (length). Each key's projection on the query's line is its score
# divided by $|q|$; the bars beside show the weights, and the context is a point among the values.

# %%
geometry_explorer = widgets.GeometryExplorer()
geometry_explorer

# %% [markdown]
# ### Must the keys and the values be the same vectors?
#
# Early encoder-decoders used one state as both the key and the value of a source.

# %%
# Predict: if the values were replaced by the keys, would the weights change (yes or no)?
weights_change = ...

# %%
# Misconception 2: one state as key and value, as the early designs did
with reveal(weights_change, why=why.weights_change) as r:
    same = attend(query, keys, keys)  # values = keys
    print("weights, values = keys :", np.round(same.weights, 3))
    print("context, values = keys :", np.round(same.context, 3), " vs", np.round(result.context, 3))
    r.answer = not np.allclose(same.weights, result.weights)

# %% [markdown]
# A trained model learns two maps of the same source states $h_i$: keys $k_i = W_k h_i$ for
# matching, values $v_i = W_v h_i$ for what is retrieved. Below, four states of 3 numbers; $W_k$
# keeps only the first two coordinates (a 2-number matching space), $W_v$ maps all three to 4
# numbers of content. States 1 and 3 differ only in their third coordinate.

# %%
# Predict: do sources 1 and 3 get the same weight (yes or no)?
same_weight = ...

# %%
with reveal(same_weight, why=why.same_weight) as r:
    states = np.array([[1.0, 0.5, 2.0], [0.2, -0.4, 0.3], [1.0, 0.5, -1.0], [-0.6, 0.8, 0.0]])
    W_k = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])                           # (D_k, 3)
    W_v = np.array([[0.5, 0.0, 1.0], [0.0, 1.0, -0.5], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    proj_keys, proj_values = states @ W_k.T, states @ W_v.T                      # (S, 2), (S, 4)
    mixed = attend(np.array([0.8, 0.3]), proj_keys, proj_values)
    print("keys (matching space):\n", proj_keys)
    print("values (content space):\n", proj_values)
    print("weights:", np.round(mixed.weights, 3), " context:", np.round(mixed.context, 3))
    r.answer = bool(np.isclose(mixed.weights[0], mixed.weights[2]))

# %% [markdown]
# ## 2. Same sources, different queries
#
# A decoder with one fixed summary gets the same vector at every step. With attention, each query
# retrieves its own mix. The later query is $(-1, -0.8, -0.3)$.

# %%
# Predict: the later query shares most of its weight between two sources, almost equally.
# Which two? Write a pair, the smaller number first, such as (1, 2).
later_pair = ...

# %%
with reveal(later_pair, why=why.later_pair) as r:
    later = attend(later_query, keys, values)
    print("later query scores     :", np.round(later.scores, 2))
    print("chapter's query weights:", np.round(result.weights, 3))
    print("later query weights    :", np.round(later.weights, 3))
    r.answer = tuple(sorted(int(i) + 1 for i in np.argsort(-later.weights)[:2]))

# %% [markdown]
# **The heatmap below** has one row per query and one column per source (darker = larger
# weight): the chapter's query leans on source 2, the later one on sources 4 and 5. No source is
# important in itself; the query decides. (The chapter's figure draws two made-up rows, on
# sources 2 and 3, then 4 and 5; ours are computed.)

# %%
plots.two_query_heatmap(np.vstack([result.weights, later.weights]),
                        ["chapter's query", "later query"])

# %% [markdown]
# ## 3. Soft and hard retrieval
#
# *Hard* retrieval returns the value of the best-scoring key only. *Soft* attention mixes all the
# values with its weights.
#
# ### Does attention pick one source?
#
# Below, the query moves from the chapter's query to the later one in four equal steps: five
# queries, each with its soft and its hard context.

# %%
# Predict: for these five queries, how many different contexts does HARD retrieval return?
hard_contexts = ...

# %%
# Misconception 1: soft and hard retrieval along a path of queries
with reveal(hard_contexts, why=why.hard_contexts) as r:
    seen = set()
    for t in np.linspace(0, 1, 5):
        q = (1 - t) * query + t * later_query
        soft = attend(q, keys, values)
        hard = weighted_sum(hardmax(soft.scores), values)
        seen.add(tuple(hard))
        print(f"t = {t:.2f}: soft context {np.round(soft.context, 3)}   hard context {hard}")
    r.answer = len(seen)

# %% [markdown]
# Training adjusts the query (through the weights that produce it) by the gradient of the loss,
# which passes through $\partial c / \partial q$: a $3 \times 3$ table (the *Jacobian*) whose
# entry in row $i$, column $j$ says how fast context coordinate $i$ changes when query coordinate
# $j$ moves a little. The package computes it with torch autograd.

# %%
# Predict: is every entry of the HARD context's dc/dq zero (yes or no)?
hard_gradient_zero = ...

# %%
with reveal(hard_gradient_zero, why=why.hard_gradient_zero) as r:
    soft_jac = context_jacobian(query, keys, values, retrieval="soft")  # (D_v, D_k)
    hard_jac = context_jacobian(query, keys, values, retrieval="hard")
    print("soft: dc/dq =\n", np.round(soft_jac, 3))
    print("hard: every entry of dc/dq is 0:", bool(np.all(hard_jac == 0)))
    r.answer = bool(np.all(hard_jac == 0))

# %% [markdown]
# ## 4. Does a large weight explain the output?
#
# A weight records how one computation routed its retrieval. Whether the output *depends* on a
# source is a different question, and an intervention answers it: remove the source, measure how
# far the output moves.
#
# Below, source 2, the one with the largest weight, gets a new value: the mix that the four other
# sources already give. Then each source is removed in turn (its key and value deleted).

# %%
# Predict: by how much does the context move (its largest change in one coordinate) when
# source 2 is removed?
removed_source = ...

# %%
# Misconception 9: the largest weight, and what removing each source does
with reveal(removed_source, why=why.removed_source, tol=0.02) as r:
    others = [0, 2, 3, 4]
    redundant = values.copy()
    redundant[1] = attend(query, keys[others], values[others]).context
    full = attend(query, keys, redundant)
    moves = []
    for i in range(5):
        keep = [j for j in range(5) if j != i]
        moves.append(np.abs(attend(query, keys[keep], redundant[keep]).context - full.context).max())
        print(f"remove source {i + 1} (weight {full.weights[i]:.3f}): context moves by {moves[i]:.3f}")
    r.answer = round(float(moves[1]), 3)

# %% [markdown]
# ## 5. Does attention know the order of its sources?

# %%
# Predict: shuffle the five sources (keys and values together). Does the context change?
context_changes = ...

# %%
# Misconception 10: the same sources in another order
with reveal(context_changes, why=why.context_changes) as r:
    order = np.array([4, 2, 0, 3, 1])
    shuffled = attend(query, keys[order], values[order])
    print("weights follow their sources:", np.allclose(shuffled.weights, result.weights[order]))
    print("context:", np.round(shuffled.context, 3), " before:", np.round(result.context, 3))
    r.answer = not np.allclose(shuffled.context, result.context)

# %% [markdown]
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
# after the task: a query of its own (your explorer is untouched), key 4 lengthened step by step
with reveal(third_coordinate, why=why.third_coordinate, tol=0.1) as r:
    for length in np.arange(0.0, 10.0, 0.01):
        half = attend(length * keys[3], keys, values)
        if half.weights[3] >= 0.5:
            break
    print("weights:", np.round(half.weights, 3), " context:", np.round(half.context, 3))
    r.answer = round(float(half.context[2]), 3)

# %% [markdown]
# ## Summary
#
# * Attention is a soft lookup: every key is scored, the weights mix every value.
# * Queries and keys decide the weights; values supply the answer; the query decides what matters.
# * Soft retrieval is differentiable; hard retrieval's gradient is zero almost everywhere.
# * A weight describes routing, not dependence; attention alone knows nothing about order.
#
# Level 2 takes the operation apart: score functions, softmax, temperature, masks and windows.
