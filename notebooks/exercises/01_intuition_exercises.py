# ---
# jupyter:
#   attention_lab:
#     assignment: 01_intuition
# ---

# %% [markdown]
# # Exercises, level 1: intuition
#
# Four of the chapter's exercises about what attention retrieves: chapter exercises 1, 6, 7
# and 18. Each exercise has a cell for your answer and a cell that checks it. A check says
# **pass**, **fail** (with the reason and the smallest input that goes wrong) or **not
# attempted**; `hint("1.2")` prints one more hint each time you run it, and `status()` at the
# end lists where you stand.
#
# Work from top to bottom: replace each `raise NotImplementedError` (or each `...`) with your
# answer, run the cell, then run the check below it. When you are done, hand in the notebook:
# save it (Ctrl+S), then in a terminal, in `notebooks/exercises/`, run
# `python -m attention_lab submit 01_intuition_exercises.ipynb` with the lab's Python (the
# README's command: in the student bundle `../../.venv/bin/python`).

# %%
import numpy as np

from attention_lab.examples import running_example
from attention_lab.exercises import check, hint, status

ex = running_example()
np.set_printoptions(precision=3, suppress=True)
print("query ", ex.query)
print("keys  ", ex.keys.tolist())
print("values", ex.values.tolist())

# %% [markdown]
# ## Exercise 1 (check 1.1): name the parts of the running example
#
# The running example has one decoder query, five source keys and five source values. Fill in
# the dictionary `parts` with six numpy arrays: the `query`, the `keys`, the `values`, the
# `scores` (one plain dot product of the query with each key), the `weights` (the softmax of
# the scores) and the `context` (the weighted mix that attention returns).

# %%
parts = {
    "query": ...,
    "keys": ...,
    "values": ...,
    "scores": ...,
    "weights": ...,
    "context": ...,
}

# %%
check("1.1", parts)

# %% [markdown]
# ## Exercise 6 (check 1.2): a context vector from weights and values
#
# Write `context_vector(weights, values)`: `weights` has shape `(S,)`, `values` has shape
# `(S, D_v)`, and the result is the weighted sum of the value rows, shape `(D_v,)`. The context
# has the width of one value, whatever the number of sources.

# %%
def context_vector(weights, values):
    """Weighted sum of the rows of values: (S,) and (S, D_v) -> (D_v,)."""
    raise NotImplementedError  # replace this line with your code


# %%
check("1.2", context_vector)

# %% [markdown]
# ## Exercise 7 (check 1.3): is the context inside the convex hull of the values?
#
# With non-negative weights that sum to one, the context is a convex mixture of the values: it
# lies in their *convex hull* (for the chapter's three 2-D values, the triangle they span).
# Write `in_convex_hull(context, values)` that returns `True` exactly when `context` is such a
# mixture: weights `w_i >= 0` with `sum_i w_i = 1` and `sum_i w_i v_i = context`, with a
# tolerance of `1e-9`. The values are at most `D_v + 1` points in general position (three
# values in 2-D, for example), so if such weights exist they are unique.
#
# A quicker test compares each coordinate with the values' smallest and largest: a context
# outside that range is certainly outside the hull. Is the converse true? The check includes a
# point inside both ranges of the chapter's triangle that is not inside the triangle.

# %%
def in_convex_hull(context, values):
    """True when context is a convex combination of the rows of values (tolerance 1e-9)."""
    raise NotImplementedError  # replace this line with your code


# %%
check("1.3", in_convex_hull)

# %% [markdown]
# ## Exercise 18 (check 1.4): a test that one query retrieves a different context than another
#
# Write a *test*: `test_query_dependence(attend)` receives an attention implementation
# `attend(query, keys, values) -> context` and returns `True` when two different queries over
# the same keys and values retrieve different contexts, `False` when they do not. The check
# hands your test several implementations, correct ones and broken ones that ignore the query;
# your test must tell them apart. Choose your own small keys, values and queries.

# %%
def test_query_dependence(attend):
    """True when two queries over the same source retrieve different contexts."""
    raise NotImplementedError  # replace this line with your code


# %%
check("1.4", test_query_dependence)

# %% [markdown]
# ## Where you stand

# %%
status()
