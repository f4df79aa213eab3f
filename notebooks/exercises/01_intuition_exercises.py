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
# answer, run the cell, then run the check below it. When you are done, hand in the notebook
# with `python -m attention_lab submit 01_intuition_exercises.ipynb`.

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
# ## Exercise 7 (check 1.3): does the context stay inside the values?
#
# With non-negative weights that sum to one, the context is a convex mixture of the values,
# so each of its coordinates lies between the smallest and the largest value of that
# coordinate. Write `within_value_range(context, values)` that returns `True` exactly when
# this holds for every coordinate (bounds included, with a tolerance of `1e-9`). This
# coordinate test is necessary for lying in the convex hull, and it is the quick debugging
# test the chapter suggests: a "weighted average" outside it means a bug.

# %%
def within_value_range(context, values):
    """True when min(values[:, d]) <= context[d] <= max(values[:, d]) for every d."""
    raise NotImplementedError  # replace this line with your code


# %%
check("1.3", within_value_range)

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
