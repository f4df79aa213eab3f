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
# after your attempt.
#
# Replace each `raise NotImplementedError` (or empty string) with your answer, run the cell,
# then the check; `hint("4.1")` gives one more hint per run. Hand in with
# `python -m attention_lab submit 04_research_exercises.ipynb`.

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
# one head: all scores plus the weighted sums of the values (leave out the softmax, which is of
# lower order). Write `multiply_adds(T, S, D_k, D_v)`. Its growth is the chapter's
# `O(T S (D_k + D_v))`.

# %%
def multiply_adds(T, S, D_k, D_v):
    """Multiply-adds of scores (T S D_k) plus weighted values (T S D_v)."""
    raise NotImplementedError  # replace this line with your code


# %%
check("4.2", multiply_adds)

# %% [markdown]
# ## Exercise 19 (checks 4.3 and 4.4): replace a high-weight value and measure the change
#
# Write `replace_and_measure(query, keys, values, control)`: find the source position with the
# largest dot-product attention weight, replace its **value** (only the value) by the `control`
# vector, and return `(position, change)`, where `change` is the Euclidean norm of the
# difference between the new and the old context. Do not modify the arrays you are given.

# %%
def replace_and_measure(query, keys, values, control):
    """Intervene on the value at the highest weight; return (position, context change)."""
    raise NotImplementedError  # replace this line with your code


# %%
check("4.3", replace_and_measure)

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
# Compare entropies for a short and a long source (for example, attention over the chapter's
# five keys and over fifty random keys) and interpret the comparison cautiously (written).

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
