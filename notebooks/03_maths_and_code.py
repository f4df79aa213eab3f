# %% [markdown]
# # Level 3: Maths and code
#
# The same operation for whole batches of queries, as tensor code, checked the way a careful
# implementation is checked: shapes, the softmax axis, fill values and dtypes, the all-masked row,
# the convex hull, additive scores with different widths, and agreement with PyTorch.
#
# Cells that start with `# Predict` ask first: replace the `...` and run it; the cell under it
# shows the answer, and why, once you have predicted. A prediction that is a number may also be
# `np.inf`, `-np.inf` or `np.nan`. Positions, queries and batch items are counted from 1 in the
# text (numpy and torch index from 0 in code). Cells marked **Misconception N** demonstrate the
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
import torch
import torch.nn.functional as F

from attention_lab import additive_scores, attend, plots, softmax, widgets
from attention_lab.attention import within_value_range
from attention_lab.analysis.cost import attention_flops, score_matrix_bytes, score_matrix_elements
from attention_lab.examples import HULL_VALUES, HULL_WEIGHTS, additive_example, running_example
from attention_lab.explanations import level3 as why
from attention_lab.predict import reveal
from attention_lab.softmax import fill_softmax, round_to_dtype, safe_fill
from attention_lab.tensor import attention

ex = running_example()
query, keys, values = ex.query, ex.keys, ex.values

# %% [markdown]
# ## 1. The tensor form
#
# For one query $q \in \mathbb{R}^{D_k}$, keys $K \in \mathbb{R}^{S \times D_k}$ and values
# $V \in \mathbb{R}^{S \times D_v}$ ($D_k$ and $D_v$ may differ):
#
# $$\alpha = \operatorname{softmax}(K q) \in \mathbb{R}^{S}, \qquad c = \alpha^\top V \in \mathbb{R}^{D_v}.$$
#
# A batch of $B$ sequences with $T$ queries each, $Q \in \mathbb{R}^{B \times T \times D_k}$,
# against $K \in \mathbb{R}^{B \times S \times D_k}$: one distribution over the $S$ sources for
# every query of every sequence.

# %%
# Predict: with B, T, S, D_k, D_v = 2, 3, 5, 4, 6, what is the shape of Q @ K^T? Write a tuple.
scores_shape = ...

# %%
torch.manual_seed(19)
B, T, S, D_k, D_v = 2, 3, 5, 4, 6
Q = torch.randn(B, T, D_k)
K = torch.randn(B, S, D_k)
V = torch.randn(B, S, D_v)
with reveal(scores_shape, why=why.scores_shape) as r:
    print("Q:", tuple(Q.shape), " K^T:", tuple(K.transpose(-2, -1).shape))
    scores = Q @ K.transpose(-2, -1)
    r.answer = tuple(scores.shape)

# %%
weights = torch.softmax(scores, dim=-1)   # (B, T, S): normalise over the sources
contexts = weights @ V                    # (B, T, D_v)
print("scores:  ", tuple(scores.shape))
print("weights: ", tuple(weights.shape), "row sums:", weights[0, 0].sum().item())
print("contexts:", tuple(contexts.shape))

# %%
ours = attention(Q, K, V)  # the library's torch path (scale 1: the chapter's unscaled dot)
ref = attend(Q.double().numpy(), K.double().numpy(), V.double().numpy())
print("torch path agrees within 1e-6     :", torch.allclose(ours.context, contexts, atol=1e-6))
print("numpy reference agrees within 1e-6:", np.allclose(ref.context, contexts.double().numpy(), atol=1e-6))

# %% [markdown]
# ## 2. The softmax axis, and what the score tensor costs
#
# The last axis of `scores` indexes the sources; softmax must run over it, so that each query gets
# its own distribution.
#
# ### Does the right shape prove the right axis?

# %%
# Predict: softmax over the queries (dim=-2) instead of the sources. Do the contexts still have
# the shape (2, 3, 6) (yes/no)?
same_context_shape = ...

# %%
# Misconception 14: the softmax over each axis, its shapes and its sums
with reveal(same_context_shape, why=why.same_context_shape) as r:
    for dim, name in [(-1, "sources (right)"), (-2, "queries"), (0, "batch")]:
        w = torch.softmax(scores, dim=dim)
        c = w @ V
        print(f"softmax over {name:16s}: weights {tuple(w.shape)}, contexts {tuple(c.shape)}, "
              f"query rows sum to 1: {bool(torch.allclose(w.sum(-1), torch.ones(B, T)))}, "
              f"largest context error {(c - contexts).abs().max().item():.3f}")
    r.answer = tuple((torch.softmax(scores, dim=-2) @ V).shape) == tuple(contexts.shape)

# %% [markdown]
# ### Axis explorer
#
# Which axis did a piece of code normalise? The explorer shows one batch item's weights and
# which sums are 1.

# %%
axis_explorer = widgets.AxisExplorer()
axis_explorer

# %% [markdown]
# ### What does the score matrix cost?
#
# Global attention scores every query against every key: $T \times S$ scores per batch item and
# head, $O(TS(D_k + D_v))$ arithmetic. In self-attention $T = S$: the cost grows with the square
# of the length. Attention *is* that cost; restricted patterns (local windows) score fewer pairs.

# %%
# Predict: how many MiB does one float32 score matrix take at T = S = 8192?
mib_8192 = ...

# %%
# Misconception 12: self-attention (T = S) scores T * S = T^2 pairs
with reveal(mib_8192, why=why.mib_8192, tol=16) as r:
    for n in (128, 512, 2048, 8192):
        mib = score_matrix_bytes(1, n, n, dtype="float32") / 2**20
        print(f"T = S = {n:5d}: {score_matrix_elements(1, n, n):>11,} scores, {mib:8.1f} MiB in "
              f"float32, {attention_flops(n, n, 64, 64) / 1e9:8.2f} GFLOP at D_k = D_v = 64")
    r.answer = score_matrix_bytes(1, 8192, 8192, dtype="float32") / 2**20

# %% [markdown]
# ## 3. A masked softmax with $-\infty$
#
# Ineligible keys get the score $-\infty$, a stable softmax follows, the values are mixed. With the
# running example's padding (sources 4 and 5):

# %%
def stable_softmax(scores):
    shifted = scores - scores.max()
    e = np.exp(shifted)
    return e / e.sum()


def masked_attention(query, keys, values, valid):
    scores = keys @ query
    scores = np.where(valid, scores, -np.inf)  # ineligible keys: exp(-inf) = 0
    weights = stable_softmax(scores)
    return weights, weights @ values


one_mask = ex.valid
checked_weights, checked_context = masked_attention(query, keys, values, one_mask)
print("masked weights:", np.round(checked_weights, 3))
print("masked context:", np.round(checked_context, 3))
print("masked mass:", checked_weights[~one_mask].sum())

# %% [markdown]
# ## 4. Fill values, dtypes and the all-masked row
#
# $-\infty$ is exact in numpy. Kernels often write a large *finite* negative number instead, and
# then the dtype matters: float16's largest magnitude is 65504.

# %%
# Predict: what does -1e9 become when cast to float16? Write a number.
minus_1e9_in_float16 = ...

# %%
with reveal(minus_1e9_in_float16, why=why.minus_1e9_in_float16) as r:
    for dtype in ("float32", "float16", "bfloat16"):
        print(f"{dtype:8s}: -1e9 becomes {float(round_to_dtype(-1e9, dtype)):.4g}, "
              f"most negative finite {safe_fill(dtype):.4g}, "
              f"0.361 becomes {float(round_to_dtype(0.361, dtype)):.6g}")
    r.answer = float(round_to_dtype(-1e9, "float16"))

# %% [markdown]
# A finite fill such as the dtype's most negative number avoids the NaN of $-\infty - (-\infty)$
# and, next to any eligible key, still gives the masked keys weight 0. What does it give a row in
# which every key is masked?

# %%
# Predict: float16, fill finfo(float16).min, all five positions masked. Each position's weight?
padding_weight = ...

# %% [markdown]
# ### Precision explorer
#
# A dtype, a fill, a score scale, naive or stable softmax, and the valid length down to 0. Left:
# what a typical kernel computes (cast, fill, exponentiate in that dtype); right: the library in
# float64 with its declared all-masked policy.

# %%
precision_explorer = widgets.PrecisionExplorer()
precision_explorer

# %%
# after the tasks: the kernel simulation of the core, on the cases the tasks ask for
with reveal(padding_weight, why=why.padding_weight, tol=0.01) as r:
    e = keys @ query
    nothing = np.zeros(5, dtype=bool)
    for name, mask, fill, scale, stable in [
            ("-1e9, all masked, stable    ", nothing, -1e9, 1, True),
            ("finfo.min, all masked       ", nothing, safe_fill("float16"), 1, True),
            ("naive, scores x 20, no mask ", np.ones(5, bool), -1e9, 20, False)]:
        print(f"float16, {name}:", np.round(fill_softmax(scale * e, mask, fill, dtype="float16",
                                                         stable=stable).astype(float), 3))
    uniform = fill_softmax(e, nothing, safe_fill("float16"), dtype="float16").astype(float)
    r.answer = round(float(uniform[0]), 3)

# %% [markdown]
# ### What should a row with no eligible key return?
#
# Nothing in the softmax says: with $-\infty$ the row is $0/0$, with a finite fill it is uniform
# over the padding. Neither is zero unless something decides it.

# %%
# Misconception 13: an all-masked row is zero only if a policy says so
nothing = np.zeros(5, dtype=bool)
with np.errstate(invalid="ignore"):
    naive_weights, naive_context = masked_attention(query, keys, values, nothing)
print("-inf fill, all-masked weights:", naive_weights, " context:", naive_context)
for policy in ("zeros", "nan"):
    print(f"attend(..., empty={policy!r}):", attend(query, keys, values, mask=nothing,
                                                     empty=policy).weights)
try:
    attend(query, keys, values, mask=nothing, empty="raise")
except ValueError as err:
    print("attend(..., empty='raise'): ValueError:", err)

# %% [markdown]
# The library makes the choice an argument, `empty=`. PyTorch's `scaled_dot_product_attention`
# returns zeros for such a row from PyTorch 2.5 on (earlier versions return NaN); the plain
# `masked_fill(-inf)` + `softmax` pattern gives NaN:

# %%
m = torch.ones(B, T, S, dtype=torch.bool)
m[0, 1] = False  # batch item 1, query 2: no eligible key
sdpa = F.scaled_dot_product_attention(Q, K, V, attn_mask=m, scale=1.0)
plain = torch.softmax(scores.masked_fill(~m, float("-inf")), dim=-1)
print("SDPA context of the empty row      :", sdpa[0, 1].tolist())
print("masked_fill + softmax, weights      :", plain[0, 1].tolist())
print("attention_lab.tensor.attention      :", attention(Q, K, V, mask=m).weights[0, 1].tolist())

# %% [markdown]
# ## 5. A context is a mixture: it stays inside the values' hull
#
# With non-negative weights summing to 1, $c = \sum_i \alpha_i v_i$ lies inside the convex hull of
# the values, and each coordinate between the smallest and largest value in that coordinate.
# **The figure below**: three 2-D values as the corners of a dashed triangle, and the contexts of
# the chapter's weights (0.6, 0.3, 0.1) and (0.15, 0.25, 0.6), both inside.

# %%
hull_values, hull_weights = np.array(HULL_VALUES), np.array(HULL_WEIGHTS)
hull_contexts = hull_weights @ hull_values
print("contexts:\n", np.round(hull_contexts, 3))
plots.hull_figure(hull_values, hull_weights, hull_contexts)

# %% [markdown]
# That gives a cheap debugging check: a "weighted average" outside its values' coordinate range
# means the weights were not a distribution over those values. Try it on section 2's batch-axis
# softmax (six query contexts).

# %%
# Predict: how many of the six wrong-axis contexts pass the range check (0-6)?
wrong_pass = ...

# %%
with reveal(wrong_pass, why=why.wrong_pass) as r:
    Vn = V.double().numpy()
    right = attend(Q.double().numpy(), K.double().numpy(), Vn)
    wrong_c = softmax(right.scores, axis=0) @ Vn  # normalised over the batch: wrong
    ok_right = all(within_value_range(right.context[b, t], Vn[b]).all()
                   for b in range(B) for t in range(T))
    ok_wrong = [bool(within_value_range(wrong_c[b, t], Vn[b]).all())
                for b in range(B) for t in range(T)]
    print("right axis: every context inside its values' range:", ok_right)
    print("batch axis: inside, per query:", ok_wrong)
    r.answer = sum(ok_wrong)

# %% [markdown]
# ### Hull explorer
#
# Three relative weights (normalised to sum to 1) and a temperature; the context is the vermillion
# point, joined to each value by a line as thick as its weight.

# %%
hull_explorer = widgets.HullExplorer()
hull_explorer

# %% [markdown]
# ## 6. Additive attention with different widths
#
# $$e_{ti} = v_a^\top \tanh(W_q q_t + W_h h_i + b_a)$$
#
# maps a query of width 4 and source states of width 6 into a shared alignment space of width 5,
# at the price of a small network per query-key pair. One source at a time, as the formula reads
# (the chapter's seeded example, $b_a = 0$):

# %%
a = additive_example(seed=19)  # default_rng(19): q (4,), source (5, 6), W_q (5, 4), W_h (5, 6), v_a (5,)
loop_scores = np.array([a.v_a @ np.tanh(a.W_q @ a.q + a.W_h @ h) for h in a.source])
print("additive score shape:", loop_scores.shape)
print("additive weights:    ", np.round(stable_softmax(loop_scores), 3))

# %% [markdown]
# Vectorised: project the query once and all sources at once; broadcasting adds the query to
# every source row. Here the same parameters score a longer source of 8 states, so that the
# two sizes differ.

# %%
# Predict: with 8 source states, the shape of hidden = tanh(W_q q + source W_h^T)? Write a tuple.
hidden_shape = ...

# %%
longer = np.vstack([a.source, np.random.default_rng(20).normal(size=(3, 6))])  # (8, 6)
with reveal(hidden_shape, why=why.hidden_shape) as r:
    hidden = np.tanh(a.W_q @ a.q + longer @ a.W_h.T)
    print("W_q q:", (a.W_q @ a.q).shape, " source W_h^T:", (longer @ a.W_h.T).shape)
    r.answer = hidden.shape

# %%
vector_scores = hidden @ a.v_a  # (S,) from hidden (S, A): one alignment vector per source
loop = np.array([a.v_a @ np.tanh(a.W_q @ a.q + a.W_h @ h) for h in longer])
print("vectorised equals loop:", np.allclose(vector_scores, loop))
print("library equals loop:   ", np.allclose(additive_scores(a.q, longer, a.W_q, a.W_h, a.v_a),
                                             loop))

# %% [markdown]
# ## 7. Agreement with PyTorch's kernel
#
# `torch.nn.functional.scaled_dot_product_attention` is the one call production code makes. Per
# call it picks an implementation: a fused kernel (flash, memory-efficient) where the inputs allow
# one, else its plain "math" implementation, which is what it runs for these small CPU tensors.
# With `scale=1.0` (its default is $1/\sqrt{D_k}$) it must agree with the explicit computation:

# %%
lengths = torch.tensor([5, 3])
pad = (torch.arange(S) < lengths[:, None])[:, None, :]  # (B, 1, S), True = eligible
for dtype in (torch.float32, torch.float64):
    q_, k_, v_ = Q.to(dtype), K.to(dtype), V.to(dtype)
    for mask in (None, pad):
        fused = F.scaled_dot_product_attention(q_, k_, v_, attn_mask=mask, scale=1.0)
        explicit = attention(q_, k_, v_, mask=mask).context
        diff = (fused - explicit).abs().max().item()
        print(f"{str(dtype):13s} mask={'padding' if mask is not None else 'none   '}: "
              f"largest difference below 1e-6: {diff < 1e-6}")

# %% [markdown]
# ## Summary
#
# * Scores $B \times T \times S$, softmax over the last axis, contexts $B \times T \times D_v$.
# * The wrong softmax axis keeps every shape: test the sums, not the shapes.
# * A finite fill avoids NaN but not the all-masked row: declare what that row returns.
# * Contexts stay inside the values' hull: a necessary check, not a sufficient one.
# * Additive scores allow different widths at the price of a small network per pair.
#
# Level 4 asks what attention weights can and cannot tell us, and what attention costs at scale.
