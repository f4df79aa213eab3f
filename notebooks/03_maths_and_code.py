# %% [markdown]
# # Level 3: Maths and code
#
# Level 2 followed one query through scores, softmax, masks and windows. Here the same operation
# is written for whole batches of queries as tensor code, and then checked the way a careful
# implementation is checked: shapes, the normalisation axis, mask fill values and dtypes, the
# all-masked row, the convex-hull property, the additive score with different widths, and
# agreement with PyTorch's own kernel.
#
# Cells marked **Misconception N** demonstrate one of the chapter's common misconceptions; the
# table at the end lists them. Run the cells from top to bottom (Shift+Enter).

# %%
import numpy as np
import torch

from attention_lab import attend, dot_scores, plots, softmax, widgets
from attention_lab.examples import running_example

ex = running_example()
query, keys, values = ex.query, ex.keys, ex.values

# %% [markdown]
# ## 1. The tensor form
#
# For one query $q \in \mathbb{R}^{D_k}$, keys $K \in \mathbb{R}^{S \times D_k}$ and values
# $V \in \mathbb{R}^{S \times D_v}$:
#
# $$\alpha = \operatorname{softmax}(K q) \in \mathbb{R}^{S}, \qquad c = \alpha^\top V \in \mathbb{R}^{D_v}.$$
#
# $D_k$ and $D_v$ need not be equal: keys only have to match queries, values only have to be
# mixed. A batch of $B$ sequences with $T$ queries each, $Q \in \mathbb{R}^{B \times T \times D_k}$,
# against $K \in \mathbb{R}^{B \times S \times D_k}$ gives a score tensor of shape $B \times T \times S$:
# one distribution over the $S$ sources for every query of every sequence. In PyTorch, with the
# chapter's seed:

# %%
torch.manual_seed(19)
B, T, S, D_k, D_v = 2, 3, 5, 4, 6
Q = torch.randn(B, T, D_k)
K = torch.randn(B, S, D_k)
V = torch.randn(B, S, D_v)
scores = Q @ K.transpose(-2, -1)          # (B, T, S)
weights = torch.softmax(scores, dim=-1)   # normalise over the sources
contexts = weights @ V                    # (B, T, D_v)
print("scores:  ", tuple(scores.shape))
print("weights: ", tuple(weights.shape), "row sums:", weights[0, 0].sum().item())
print("contexts:", tuple(contexts.shape))

# %% [markdown]
# The library's torch path computes the same thing (its `scale` defaults to 1, the chapter's
# unscaled dot product), and so does the numpy reference on the same numbers:

# %%
from attention_lab.tensor import attention

ours = attention(Q, K, V)
ref = attend(Q.double().numpy(), K.double().numpy(), V.double().numpy())
print("torch path agrees within 1e-6     :", torch.allclose(ours.context, contexts, atol=1e-6))
print("numpy reference agrees within 1e-6:", np.allclose(ref.context, contexts.double().numpy(), atol=1e-6))

# %% [markdown]
# ## 2. The softmax axis, and what the score tensor costs
#
# The last axis of `scores` indexes the sources, and softmax must run over it: each query gets its
# own distribution over the sources. Normalising over another axis still gives a tensor of the
# right shape, so nothing crashes, but it is a different model.
#
# ### Misconception 14: "matching output shape proves the correct softmax axis was used"

# %%
# Misconception 14: the wrong axis keeps every shape and changes the model
for dim, name in [(-1, "sources (right)"), (-2, "queries"), (0, "batch")]:
    w = torch.softmax(scores, dim=dim)
    c = w @ V
    print(f"softmax over {name:16s}: weights {tuple(w.shape)}, contexts {tuple(c.shape)}, "
          f"query rows sum to 1: {bool(torch.allclose(w.sum(-1), torch.ones(B, T)))}, "
          f"largest context error {(c - contexts).abs().max().item():.3f}")

# %% [markdown]
# ### Axis explorer
#
# The left heatmap is the right normalisation (over keys) for one batch item; the middle one uses
# the axis you choose; the bars on the right show which sums are 1. Only the key axis gives every
# query (row) a distribution.

# %%
axis_explorer = widgets.AxisExplorer()
axis_explorer

# %% [markdown]
# ### Misconception 12: "attention removes the quadratic cost of self-attention"
#
# Global attention scores every query against every key: $T \times S$ scores per batch item and
# head, and $O(TS(D_k + D_v))$ arithmetic. In self-attention the sequence queries itself, $T = S$,
# so the score matrix grows with the square of the length. Attention does not remove that cost; it
# *is* that cost (restricted patterns such as local windows reduce it by scoring fewer pairs).

# %%
# Misconception 12: self-attention (T = S) scores T * S = T^2 pairs
from attention_lab.analysis.cost import attention_flops, score_matrix_bytes, score_matrix_elements

for n in (128, 512, 2048, 8192):
    elements = score_matrix_elements(1, n, n)
    mib = score_matrix_bytes(1, n, n, dtype="float32") / 2**20
    gflop = attention_flops(n, n, 64, 64) / 1e9
    print(f"T = S = {n:5d}: {elements:>11,} scores, {mib:8.1f} MiB in float32, "
          f"{gflop:8.2f} GFLOP at D_k = D_v = 64")

# %% [markdown]
# ## 3. A masked softmax with $-\infty$
#
# A masked attention function in numpy: replace the scores of ineligible keys by $-\infty$, take a
# stable softmax, mix the values. With the running example's padding (sources 4 and 5):

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
# $-\infty$ is exact in numpy float64. GPU kernels often write a large *finite* negative number
# instead, and then the dtype matters: float16 cannot hold $-10^9$ (its largest magnitude is
# 65504), so the cast turns it into $-\infty$ anyway. The safe finite fill is the dtype's most
# negative number. bfloat16 has float32's range but only 8 bits of precision.

# %%
from attention_lab.softmax import fill_overflows, round_to_dtype, safe_fill

for dtype in ("float32", "float16", "bfloat16"):
    print(f"{dtype:8s}: -1e9 becomes {float(round_to_dtype(-1e9, dtype)):.4g}, "
          f"safe fill {safe_fill(dtype):.4g}, "
          f"0.361 becomes {float(round_to_dtype(0.361, dtype)):.6g}")
print("does -1e9 overflow float16?", fill_overflows(-1e9, "float16"))

# %% [markdown]
# ### Misconception 13: "all-masked rows have zero attention by default"
#
# If *every* key of a row is masked (an empty source, a fully padded sequence), the naive masked
# softmax computes $\exp(-\infty - (-\infty))$ or $0/0$: NaN, which then spreads into everything
# the context touches. What such a row should return is a decision, and the library makes it an
# explicit argument, `empty=`: `"zeros"` (the default, which is what PyTorch's
# `scaled_dot_product_attention` returns today), `"nan"` or `"raise"`.

# %%
# Misconception 13: an all-masked row is NaN unless a policy says otherwise
nothing = np.zeros(5, dtype=bool)
with np.errstate(invalid="ignore"):
    naive_weights, naive_context = masked_attention(query, keys, values, nothing)
print("naive all-masked weights:", naive_weights, " context:", naive_context)
for policy in ("zeros", "nan"):
    print(f"attend(..., empty={policy!r}):", attend(query, keys, values, mask=nothing,
                                                     empty=policy).weights)
try:
    attend(query, keys, values, mask=nothing, empty="raise")
except ValueError as err:
    print("attend(..., empty='raise'): ValueError:", err)

# %% [markdown]
# PyTorch agrees with the `"zeros"` policy for its fused kernel, while the plain
# `masked_fill(-inf)` + `softmax` pattern gives NaN:

# %%
import torch.nn.functional as F

m = torch.ones(B, T, S, dtype=torch.bool)
m[0, 1] = False  # batch item 1, query 2: no eligible key
sdpa = F.scaled_dot_product_attention(Q, K, V, attn_mask=m, scale=1.0)
plain = torch.softmax(scores.masked_fill(~m, float("-inf")), dim=-1)
print("SDPA context of the empty row      :", sdpa[0, 1].tolist())
print("masked_fill + softmax, weights      :", plain[0, 1].tolist())
print("attention_lab.tensor.attention      :", attention(Q, K, V, mask=m).weights[0, 1].tolist())

# %% [markdown]
# ### Precision explorer
#
# Choose a dtype, a fill value, a score scale and naive or stable softmax, and shorten the valid
# length down to 0. The left panel is what a typical kernel computes (cast, fill, exponentiate in
# that dtype); the right panel is the library in float64 with its declared all-masked policy.
# The cell first tries three settings from code (float16 with fill -1e9 and valid length 0: NaN
# from the fill; a finite fill: uniform weights over padding; naive softmax at a score scale of 20:
# overflow), then resets the explorer and shows it.

# %%
precision_explorer = widgets.PrecisionExplorer()
precision_explorer.set(dtype="float16", fill="-1e9", length=0)
print("float16, -1e9, all masked :", precision_explorer.state.kernel_weights.round(3))
precision_explorer.set(fill="finfo.min")
print("float16, finfo.min        :", precision_explorer.state.kernel_weights.round(3))
precision_explorer.set(length=5, scale=20.0, softmax="naive")
print("naive, scores x 20        :", precision_explorer.state.kernel_weights.round(3))
precision_explorer.reset()
precision_explorer

# %% [markdown]
# ## 5. A context is a mixture: it stays inside the values' hull
#
# With non-negative weights that sum to 1, $c = \sum_i \alpha_i v_i$ is a convex combination of
# the values: it lies inside their convex hull, and each coordinate lies between the smallest and
# the largest value in that coordinate. Moving weight moves the context continuously; it never
# jumps and never leaves the hull (only a later projection or a residual path could take it out).
#
# **The figure below** shows three 2-D values as the corners of a dashed triangle, and the
# contexts of the chapter's two weight vectors, (0.6, 0.3, 0.1) near the first corner and
# (0.15, 0.25, 0.6) nearer the third, both inside the triangle.

# %%
from attention_lab.examples import HULL_VALUES, HULL_WEIGHTS

hull_values, hull_weights = np.array(HULL_VALUES), np.array(HULL_WEIGHTS)
hull_contexts = hull_weights @ hull_values
print("contexts:\n", np.round(hull_contexts, 3))
plots.hull_figure(hull_values, hull_weights, hull_contexts)

# %% [markdown]
# That makes a cheap debugging check: a "weighted average" outside the coordinate range of its
# values means the weights were not a distribution over those values. The wrong-axis weights of
# section 2 fail it for some queries:

# %%
from attention_lab.attention import within_value_range

Vn = V.double().numpy()
right = attend(Q.double().numpy(), K.double().numpy(), Vn)
wrong_w = softmax(right.scores, axis=0)  # normalised over the batch: wrong
wrong_c = wrong_w @ Vn
ok_right = all(within_value_range(right.context[b, t], Vn[b]).all() for b in range(B) for t in range(T))
ok_wrong = [bool(within_value_range(wrong_c[b, t], Vn[b]).all()) for b in range(B) for t in range(T)]
print("right axis: every context inside its values' range:", ok_right)
print("batch axis: inside, per query:", ok_wrong)

# %% [markdown]
# ### Hull explorer
#
# Three sliders give relative weights (normalised to sum to 1) and the temperature sharpens or
# flattens them; the context is the vermillion point, joined to each value by a line as thick as
# its weight. Push one weight to 1 and the others to 0, or try extreme temperatures: the point can
# reach a corner but never leave the triangle.

# %%
hull_explorer = widgets.HullExplorer()
hull_explorer

# %% [markdown]
# ## 6. Additive attention with different widths
#
# The additive (Bahdanau) score
#
# $$e_{ti} = v_a^\top \tanh(W_q q_t + W_h h_i + b_a)$$
#
# maps a query of width 4 and source states of width 6 into a shared alignment space of width 5,
# so the two widths need not match. It costs a small nonlinear network per query-key pair. First
# one source at a time, exactly as the formula reads (the chapter's seeded example, $b_a = 0$):

# %%
from attention_lab.examples import additive_example

a = additive_example(seed=19)  # rng = default_rng(19): q (4,), source (5, 6), W_q (5, 4), W_h (5, 6), v_a (5,)
loop_scores = np.array([a.v_a @ np.tanh(a.W_q @ a.q + a.W_h @ h) for h in a.source])
print("additive score shape:", loop_scores.shape)
print("additive weights:    ", np.round(stable_softmax(loop_scores), 3))

# %% [markdown]
# Vectorised: project the query once, project all sources at once, let broadcasting add the
# query to every source row, and reduce with $v_a$. Same numbers, no Python loop; the library's
# `additive_scores` does the same for batches.

# %%
from attention_lab import additive_scores

hidden = np.tanh(a.W_q @ a.q + a.source @ a.W_h.T)  # (5, 5): one alignment vector per source
vector_scores = hidden @ a.v_a
print("vectorised equals loop:", np.allclose(vector_scores, loop_scores))
print("library equals loop:   ", np.allclose(additive_scores(a.q, a.source, a.W_q, a.W_h, a.v_a),
                                             loop_scores))

# %% [markdown]
# ## 7. Agreement with PyTorch's kernel
#
# `torch.nn.functional.scaled_dot_product_attention` is the fused kernel that production code calls.
# With `scale=1.0` (its default is $1/\sqrt{D_k}$) it must agree with the explicit computation, with
# and without a padding mask, in float32 and float64:

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
# * Mask with $-\infty$ or the dtype's most negative number; decide what an all-masked row returns.
# * Contexts stay inside the values' hull: a cheap, strong check.
# * Additive scores allow different widths at the price of a small network per pair.
#
# Level 4 asks what attention weights can and cannot tell us, and what attention costs at scale.
#
# ## The chapter's misconceptions: where each one is demonstrated
#
# | # | misconception | demonstrated in |
# |---|---|---|
# | 1 | attention chooses exactly one source item | notebook 01, section 5 |
# | 2 | keys and values must be identical | notebook 01, section 2 |
# | 3 | attention weights are independent probabilities | notebook 02, section 2 |
# | 4 | scores are probabilities | notebook 02, section 1 |
# | 5 | a larger score always means a larger final contribution | notebook 02, section 2 |
# | 6 | masking after softmax is equivalent to masking before it | notebook 02, section 4 |
# | 7 | padding masks and causal masks are interchangeable | notebook 02, section 4 |
# | 8 | a sharp distribution proves the model found the correct evidence | notebook 02, section 3 |
# | 9 | attention weights are causal explanations | notebook 01, section 6 |
# | 10 | attention supplies order | notebook 01, section 7 |
# | 11 | global attention is always preferable | notebook 02, section 5 |
# | 12 | attention removes quadratic cost in self-attention | **this notebook**, section 2, cell "Misconception 12" |
# | 13 | all-masked rows have zero attention by default | **this notebook**, section 4, cell "Misconception 13" |
# | 14 | matching output shape proves the correct softmax axis | **this notebook**, section 2, cell "Misconception 14" |
