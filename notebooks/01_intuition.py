# %% [markdown]
# # Level 1: Intuition, attention as retrieval
#
# An encoder reads a source sequence and produces one state per position. A plain encoder-decoder
# squeezes everything into the *last* state, and every decoding step has to work from that single
# vector. Attention keeps all the source states and lets each decoding step **retrieve** from them:
# the decoder says what it is looking for, every source is scored against that request, the scores
# become weights, and the weighted mix of the sources comes back.
#
# This notebook builds that picture with a small constructed example: five source positions, each
# with a 3-number key and a 3-number value, and a decoder query. The numbers are made up to make
# the mechanics visible; they are not learned vectors.
#
# Cells marked **Misconception N** demonstrate one of the chapter's common misconceptions; the
# table at the end lists them. Run the cells from top to bottom (Shift+Enter).

# %%
import numpy as np

from attention_lab import attend, plots, widgets
from attention_lab.examples import LATER_QUERY, running_example

ex = running_example()
query, keys, values = ex.query, ex.keys, ex.values
later_query = np.array(LATER_QUERY)
print("the decoder's query:", query)
print("keys (one row per source):\n", keys)
print("values (one row per source):\n", values)

# %% [markdown]
# ## 1. One fixed vector, or a retrieval per step
#
# Suppose the decoder can only see the final source state (here: the value of source 5). Whatever
# it is looking for, it gets the same vector. With attention, two different queries get two
# different answers from the same five sources.

# %%
fixed_summary = values[-1]
for name, q in [("early-detail query", query), ("later-detail query", later_query)]:
    context = attend(q, keys, values).context
    print(f"{name:19s}: fixed summary {fixed_summary}   attention context {np.round(context, 3)}")

# %% [markdown]
# ## 2. Query, key and value do different jobs
#
# * the **query** describes what the current step is looking for;
# * a **key** is what a source offers for *matching*;
# * a **value** is what a source *returns* once it is matched.
#
# Matching happens between the query and the keys only; the values never enter the scores. They
# only enter at the end, mixed by the weights. The query matches key 2 best (score 0.98), so
# value 2 gets the largest share of the answer.

# %%
r = attend(query, keys, values)
print("scores  (query vs each key):", np.round(r.scores, 2))
print("weights (softmax of scores):", np.round(r.weights, 3))
print("context (weighted values)  :", np.round(r.context, 3))

# %% [markdown]
# ### Misconception 2: "keys and values must be identical"
#
# In the running example they differ: matching happens in one space (keys) and the retrieved
# content lives in another (values). Early encoder-decoder models did use the same state for both,
# and that is a valid special case: same weights, but the answer is then a mix of keys. Trained
# models usually learn separate projections, so the two roles can specialise.

# %%
# Misconception 2: keys and values may differ (and may also coincide)
print("keys == values in the running example?", np.array_equal(keys, values))
same = attend(query, keys, keys)  # the early design: one state serves as key and value
print("weights, values = keys :", np.round(same.weights, 3), " (the same weights)")
print("context, values = keys :", np.round(same.context, 3))
print("context, separate values:", np.round(r.context, 3))

# %% [markdown]
# ## 3. The whole operation in one picture
#
# **The figure below** follows the chapter's query from left to right. Five blue source boxes each
# hold a key and a value; the purple query is compared with every key, giving the five orange score
# boxes; softmax turns the scores into the five green weight boxes (darker = larger weight); and a
# green line from every weight box to the vermillion context box shows how much that source
# contributes (thicker = more). Every source reaches the context; source 2 contributes most.

# %%
plots.overview_figure(r.scores, r.weights)

# %% [markdown]
# ## 4. Same sources, different queries
#
# Nothing about the sources decides which one is "important": the query does. **The heatmap
# below** has one row per query and one column per source. The chapter's query puts most weight on
# source 2; the later query puts most on sources 4 and 5. (The chapter draws this idea with
# illustrative weights; here the two rows are computed from two real queries.)

# %%
later = attend(later_query, keys, values)
print("early-detail query weights:", np.round(r.weights, 3))
print("later-detail query weights:", np.round(later.weights, 3))
plots.two_query_heatmap(np.vstack([r.weights, later.weights]),
                        ["early-detail query", "later-detail query"])

# %% [markdown]
# ## 5. Soft retrieval, not a choice of one item
#
# *Hard* retrieval would pick the best-scoring source and return its value. *Soft* attention
# returns a weighted mix, so the answer usually equals none of the values, and it changes smoothly
# when the query changes. That smoothness is what lets gradients flow through every score during
# training.
#
# ### Misconception 1: "attention chooses exactly one source item"
#
# Below, the query moves in five steps from the chapter's query to the later query. The soft
# context's first coordinate moves gradually; the hard one stays at one value and then jumps when
# the best-scoring key changes.

# %%
# Misconception 1: soft attention mixes; hard retrieval picks one item and jumps
from attention_lab.softmax import hardmax
from attention_lab.attention import weighted_sum

print("every soft weight is positive:", bool((r.weights > 0).all()),
      "| is the soft context one of the values?", any(np.allclose(r.context, v) for v in values))
for t in np.linspace(0, 1, 5):
    q = (1 - t) * query + t * later_query
    soft = attend(q, keys, values)
    hard_weights = hardmax(soft.scores)
    hard = weighted_sum(hard_weights, values)
    print(f"step {t:.2f}: soft c[1] = {soft.context[0]:.3f}   hard c[1] = {hard[0]:.3f} "
          f"(source {hard_weights.argmax() + 1})")

# %% [markdown]
# ## 6. A large weight is not an explanation
#
# A weight records how one attention computation routed its retrieval. It does not say that the
# output *depends* on that source: other sources, later layers or other paths can supply the same
# information. Only an intervention (remove or replace the source and measure the output) can
# show dependence.
#
# ### Misconception 9: "attention weights are causal explanations"
#
# Here source 2's value is replaced by the mix that the other four sources already provide. Its
# weight is unchanged and still the largest, but removing source 2 altogether (masking it) leaves
# the context exactly where it was, while removing any other source moves it, even source 4, which
# has the smallest weight.

# %%
# Misconception 9: the largest weight, and removing that source changes nothing
others = np.array([True, False, True, True, True])
redundant_values = values.copy()
redundant_values[1] = attend(query, keys, values, mask=others).context
full = attend(query, keys, redundant_values)
print("weights:", np.round(full.weights, 3))
for i in range(5):
    without_i = attend(query, keys, redundant_values, mask=np.arange(5) != i)
    change = np.abs(without_i.context - full.context).max()
    print(f"remove source {i + 1} (weight {full.weights[i]:.3f}): context moves by {change:.3f}")

# %% [markdown]
# ## 7. Attention does not supply order
#
# Attention treats the sources as a set: it scores each one against the query and never looks at
# where it sits. Shuffle the sources (keys and values together) and the weights are shuffled the
# same way while the context does not change at all. Order must come from the representations
# themselves (a recurrent or convolutional encoder, or positional information, Chapter 21).
#
# ### Misconception 10: "attention supplies order"

# %%
# Misconception 10: shuffling the sources leaves the context unchanged
order = np.array([4, 2, 0, 3, 1])
shuffled = attend(query, keys[order], values[order])
print("new order of the sources:", order + 1)
print("weights, shuffled        :", np.round(shuffled.weights, 3))
print("weights, original order  :", np.round(r.weights[order], 3))
print("context unchanged        :", np.allclose(shuffled.context, r.context))
twins_k, twins_v = keys.copy(), values.copy()
twins_k[0], twins_v[0] = twins_k[1], twins_v[1]  # sources 1 and 2 now identical
swap = np.array([1, 0, 2, 3, 4])
a, b = attend(query, twins_k, twins_v), attend(query, twins_k[swap], twins_v[swap])
print("two identical sources swapped: same weights", np.allclose(a.weights, b.weights),
      "and context", np.allclose(a.context, b.context))

# %% [markdown]
# ## 8. Query explorer
#
# The explorer below has three sliders for the query (or a preset), the temperature, and a switch
# between soft and hard retrieval. The diagram, the weight bars, the heatmap row and the context
# bars all follow the same numbers; the table below the figure lists them. The blue dots in the
# context panel are the five values: every context coordinate stays between the smallest and the
# largest of them.
#
# Setting a control from code does exactly what dragging it does, so you can also drive it from a
# cell. For example, the later query, then hard retrieval, then back to the start:

# %%
query_explorer = widgets.QueryExplorer()
query_explorer.controls["preset"].value = "later"
print("later query :", np.round(query_explorer.state.weights, 3))
query_explorer.controls["retrieval"].value = "hard"
print("hard        :", query_explorer.state.weights, "context", query_explorer.state.context)
query_explorer.reset()
print("after reset :", np.round(query_explorer.state.weights, 3))

# %% [markdown]
# Now it is your turn: drag the sliders.

# %%
query_explorer

# %% [markdown]
# ## Summary
#
# * Attention keeps every source state and retrieves a query-dependent mix of them.
# * Queries and keys decide the weights; values supply what is returned.
# * The answer is a soft mixture that changes smoothly with the query.
# * A weight describes routing, not dependence; attention alone knows nothing about order.
#
# Level 2 takes the operation apart: score functions, softmax, temperature, masks and windows.
#
# ## The chapter's misconceptions: where each one is demonstrated
#
# | # | misconception | demonstrated in |
# |---|---|---|
# | 1 | attention chooses exactly one source item | **this notebook**, section 5, cell "Misconception 1" |
# | 2 | keys and values must be identical | **this notebook**, section 2, cell "Misconception 2" |
# | 3 | attention weights are independent probabilities | notebook 02, section 2 |
# | 4 | scores are probabilities | notebook 02, section 1 |
# | 5 | a larger score always means a larger final contribution | notebook 02, section 2 |
# | 6 | masking after softmax is equivalent to masking before it | notebook 02, section 4 |
# | 7 | padding masks and causal masks are interchangeable | notebook 02, section 4 |
# | 8 | a sharp distribution proves the model found the correct evidence | notebook 02, section 3 |
# | 9 | attention weights are causal explanations | **this notebook**, section 6, cell "Misconception 9" |
# | 10 | attention supplies order | **this notebook**, section 7, cell "Misconception 10" |
# | 11 | global attention is always preferable | notebook 02, section 5 |
# | 12 | attention removes quadratic cost in self-attention | notebook 03, section 2 |
# | 13 | all-masked rows have zero attention by default | notebook 03, section 4 |
# | 14 | matching output shape proves the correct softmax axis | notebook 03, section 2 |
