# ---
# jupyter:
#   attention_lab:
#     assignment: 04_research
# ---

# %% [markdown]
# # Exercises, level 4: research and systems
#
# Six of the chapter's exercises on cost, interventions, audits and reproducibility (chapter
# exercises 16, 17, 19, 20, 21 and 22). Four checks are computational; four answers are
# written and recorded for your instructor, who grades them with the rubric the check shows
# once each field of your answer holds at least 12 words.
#
# Replace each `raise NotImplementedError` (or empty string) with your answer, run the cell,
# then the check; `hint("4.1")` gives one more hint per run. To hand in:
# save it (Ctrl+S), then in a terminal, in `notebooks/exercises/`, run
# `python -m attention_lab submit 04_research_exercises.ipynb` with the lab's Python (the
# README's command: in the student bundle `../../.venv/bin/python`).

# %%
import numpy as np

from attention_lab.examples import running_example
from attention_lab.exercises import check, hint, status

ex = running_example()
np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Exercise 16 (check 4.1): the size of the score tensor
#
# Write `score_matrix_size(batch, target, source, heads)` returning `(shape, elements)`: the
# shape `(B, H, T, S)` of the attention scores of one layer and their number. The chapter's
# case is batch 8, target length 64, source length 512 and 4 heads.

# %%
def score_matrix_size(batch, target, source, heads):
    """(shape (B, H, T, S), number of elements) of one layer's score tensor."""
    raise NotImplementedError  # replace this line with your code


# %%
check("4.1", score_matrix_size)

# %% [markdown]
# ## Exercise 17 (check 4.2): the arithmetic of global cross-attention
#
# With `T` queries, `S` keys, key width `D_k` and value width `D_v`, count the multiply-adds of
# one head: all the scores, then all the weighted sums of the values (leave out the softmax,
# which is of lower order). Derive the count, write it as `multiply_adds(T, S, D_k, D_v)`, and
# read its order off your formula: how does it grow with `T`, with `S` and with the widths?

# %%
def multiply_adds(T, S, D_k, D_v):
    """Multiply-adds of one head of global cross-attention: scores and weighted values."""
    raise NotImplementedError  # replace this line with your code


# %%
check("4.2", multiply_adds)

# %% [markdown]
# ## Exercise 19 (checks 4.3 and 4.4): replace a high-weight value and measure the output
#
# Write `replace_and_measure(scores, values, control, readout)`: find the position (1..S) with
# the largest softmax weight of `scores`, replace its **value** (only the value: the weights stay
# as they are) by the `control` vector, and return `(position, context_change, output_change)`:
# the position, the Euclidean norm of the change of the context, and the change of the *output*,
# the total variation distance `1/2 sum |p - q|` between the output distributions
# `readout(context)` before and after. `readout` maps a context `(D_v,)` to the model's output
# probabilities. Do not modify the arrays you are given.

# %%
def replace_and_measure(scores, values, control, readout):
    """Intervene on the value at the highest weight: (position 1..S, context change, output
    change as a total variation distance)."""
    raise NotImplementedError  # replace this line with your code


# %%
check("4.3", replace_and_measure)

# %% [markdown]
# Now on the trained model of notebook 04, which reverses strings of the symbols `a`..`l`.
# `step_of(model, source, t)` gives output step `t` of reversing `source` (the correct earlier
# symbols fed back): its attention scores over the source positions, the values, and the
# model's readout with the decoder state of that step held fixed. The control value is the mean
# value over many held-out sources. Two models: one whose values are the symbols' embeddings,
# and one whose values are its encoder's contextual states.

# %%
from attention_lab import toy
from attention_lab.toy.experiments import control_value, step_of

for values in ("embedding", "encoder"):
    model = toy.load(values=values)
    step = step_of(model, "abcdefgh", 1)  # step 1 should copy position 8, 'h'
    try:
        position, context_change, output_change = replace_and_measure(
            step.scores, step.values, control_value(model), step.readout)
    except NotImplementedError:
        print("write replace_and_measure first")
        break
    print(f"values = {values:9}: position {position} replaced, the context moves by "
          f"{context_change:.2f}, the output by a total variation distance of {output_change:.2f}")

# %% [markdown]
# Now say what this experiment does and does not establish (written).

# %%
intervention_claims = {
    "establishes": "",         # what the measured change supports
    "does_not_establish": "",  # what it cannot show, and why
    "better_design": "",       # how you would strengthen the evidence
}

# %%
check("4.4", intervention_claims)

# %% [markdown]
# ## Exercise 20 (check 4.5, written): an audit for a clinical or policy-text classifier
#
# A classifier reads clinical notes (or policy documents) with a masked cross-attention module.
# Design its audit: one short paragraph per field.

# %%
clinical_audit = {
    "interfaces": "",    # queries, keys, values: sources, shapes, projections
    "computation": "",   # score function, scale or temperature, softmax axis, dropout
    "eligibility": "",   # padding, truncation and cross-source masks; all-masked rows
    "numerics": "",      # dtype, fill value, non-finite values, score ranges
    "monitoring": "",    # entropy, masked mass, latency, memory in deployment
    "explanations": "",  # what evidence an explanation claim needs
    "domain": "",        # what is specific to clinical or policy text
}

# %%
check("4.5", clinical_audit)

# %% [markdown]
# ## Exercise 21 (checks 4.6 and 4.7): entropy across short and long sources
#
# Write `attention_entropy(weights)`: the entropy `-sum w log w` in nats over the last axis of
# `(..., S)` weights, counting `0 log 0` as 0 (masked keys, all-zero rows). When it passes, the
# check prints the entropy of uniform weights over 5 and over 50 keys.

# %%
def attention_entropy(weights):
    """Entropy in nats over the last axis, with 0 log 0 = 0."""
    raise NotImplementedError  # replace this line with your code


# %%
check("4.6", attention_entropy)

# %% [markdown]
# Now compare entropies for a short and a long source. The cell below draws 200 random sources
# of `S = 5` keys and 200 of `S = 50` keys, with one query each; every entry of the queries and
# keys is an independent standard normal number, in `D_k = 3` dimensions (the running example's
# width), and the weights are the softmax of the unscaled dot-product scores. It prints the mean
# entropy of your `attention_entropy`, the largest possible entropy `log S`, and their ratio.
# Run it, then interpret the comparison cautiously (written).

# %%
rng = np.random.default_rng(21)
D_k, n_sources = 3, 200
entropies = {}
for S in (5, 50):
    keys = rng.normal(size=(n_sources, S, D_k))
    queries = rng.normal(size=(n_sources, D_k))
    scores = np.einsum("bsd,bd->bs", keys, queries)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    try:
        entropies[S] = float(np.mean(attention_entropy(weights)))
    except NotImplementedError:
        print("write attention_entropy first")
        break
    print(f"S = {S:2d}: mean entropy {entropies[S]:.2f} nats, log S = {np.log(S):.2f}, "
          f"ratio {entropies[S] / np.log(S):.2f}")

# %%
entropy_interpretation = {
    "comparison": "",  # what you computed and what you saw
    "caution": "",     # why raw entropies of different lengths are not directly comparable
}

# %%
check("4.7", entropy_interpretation)

# %% [markdown]
# ## Exercise 22 (check 4.8, written): reproducing one attention map
#
# Someone shows you an attention map from a deployed model. Specify everything you would need
# to recompute exactly that map.

# %%
reproduction_spec = {
    "model": "",      # which model exactly: weights, code, versions
    "input": "",      # the exact input and its preprocessing
    "which_map": "",  # layer, head, query position, processing for display
    "runtime": "",    # numerical and runtime settings
}

# %%
check("4.8", reproduction_spec)

# %% [markdown]
# ## Where you stand

# %%
status()
