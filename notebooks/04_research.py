# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Level 4: research and systems
#
# The earlier levels computed attention on numbers we chose. Here the questions need a model
# that *learned* its attention, and measurements instead of diagrams:
#
# 1. a small trained encoder-decoder whose correct alignment is known, and how close its
#    attention comes to it;
# 2. a model explorer: change the source, the temperature and a local window and watch it fail;
# 3. what the entropy of attention does as sources get longer (and what that does not mean);
# 4. attention as an explanation, put to the test with interventions;
# 5. what attention costs, and streaming attention that never stores the score matrix;
# 6. the chapter's audit list, run on real calls.
#
# Every number printed below is computed when the notebook runs.

# %%
# %matplotlib inline
import numpy as np
import torch

from attention_lab import toy
from attention_lab.toy import experiments as ex
from attention_lab.toy import figures

torch.manual_seed(0)
model = toy.load()  # the weights shipped with the package (additive scores)
dot_model = toy.load(score="dot")
meta = model.metadata
print("architecture:", meta["config"])
print("trained with seed", meta["seed"], "for", meta["train"]["steps"], "steps;",
      "library versions:", meta["versions"])

# %% [markdown]
# ## 1. A model with a known answer: reversing a sequence
#
# The task is to write a string of symbols (`a` to `l`, 3 to 12 of them) backwards. Output step
# `t` must copy source position `S-1-t`, so for every step we know exactly where a perfect
# model should look. Sources have different lengths within a batch, so the padding masks are
# real, not decoration.
#
# Who does what in the model (`attention_lab/toy/model.py`):
#
# * **keys**: a bidirectional GRU reads the source; its state at each position, projected, is
#   that position's key (the backward direction tells a position how far it is from the end);
# * **values**: the embedding of the symbol at each position, nothing else. A value carries only
#   its own symbol, so the decoder can only output the right symbol by weighting the right
#   position;
# * **queries**: the decoder's GRU state at step `t`, fed the previous output symbol;
# * **scores**: additive, `v^T tanh(W_q h_t + W_k k_j)` (a second model uses dot products of
#   projected queries and keys).
#
# The held-out sequences below belong to a fixed tenth of all possible sequences that the
# training sampler never draws. The accuracy recorded at training time is recomputed now:

# %%
tc = meta["train"]
cfg = model.config
tokens, lengths = toy.heldout_set(tc["heldout"], cfg.n_symbols, cfg.min_len, cfg.max_len,
                                  seed=tc["heldout_seed"])
for name, m in (("additive", model), ("dot", dot_model)):
    live = toy.evaluate(m, tokens, lengths)
    recorded = m.metadata["metrics"]["heldout"]
    print(f"{name:8} held-out exact-sequence accuracy {live['exact_sequence_accuracy']:.2%} "
          f"(recorded at training: {recorded['exact_sequence_accuracy']:.2%}), "
          f"{live['n_sequences']} sequences")

# %% [markdown]
# **Retraining.** The weights come from `python -m attention_lab train` (seeded, CPU, about 20
# to 40 seconds on a 2-core laptop; `--score dot` trains the other model, `--help` lists the
# options). It writes `toy_model/reversal_additive.pt` and a `.json` with the config, seed,
# library versions and metrics; load it with `toy.load("toy_model/reversal_additive.pt")`.
# A file that is corrupt, or whose shapes do not fit its config, is refused with a message that
# says why. This notebook only loads, so it runs in seconds.

# %% [markdown]
# ### Attention against the true alignment
#
# Alignment accuracy is the share of output steps whose largest weight sits on the true source
# position. The mean weight on that position says how *concentrated* the attention is.

# %%
study_tokens, study_lengths = ex.study_set(model, n=200)
reports = {name: ex.alignment_report(m, study_tokens, study_lengths)
           for name, m in (("additive", model), ("dot", dot_model))}
for name, r in reports.items():
    print(f"{name:8} alignment accuracy {r['alignment_accuracy']:.1%}, mean weight on the true "
          f"position {r['mean_weight_on_true_position']:.2f}, exact-sequence accuracy "
          f"{r['exact_sequence_accuracy']:.1%} ({r['n_steps']} steps)")

# %%
picks = [int(np.flatnonzero(study_lengths == n)[0]) for n in (4, 8, 12)]
panels = []
for name, r in reports.items():
    d = r["decoded"]
    for b in picks:
        S = int(study_lengths[b])
        panels.append({"weights": d.weights[b, :S, :S],
                       "source": toy.decode(study_tokens[b], cfg.n_symbols),
                       "output": toy.decode(d.tokens[b], cfg.n_symbols),
                       "title": f"{name} scores, S = {S}"})
figures.alignment_grid(panels)

# %% [markdown]
# *Figure: six heatmaps, three per model, for held-out sources of length 4, 8 and 12. Rows are
# output steps (labelled by the decoded symbol), columns are source positions (labelled by the
# source symbol); orange squares mark the true alignment, the anti-diagonal. Both models put
# their largest weight on the anti-diagonal; the additive model spreads visibly more weight
# over the neighbouring positions, the dot-product model is sharper.*
#
# Both models reverse almost every held-out sequence, and both look at the right place. The
# additive model does so with far less concentrated weights than the dot model: being right
# does not require sharp attention, only that the right position wins the mixture that the
# readout can decode.

# %% [markdown]
# ## 2. The model explorer
#
# Type a source (or pick one), change the temperature that divides the scores, and switch on a
# local window: only positions `j` with `|j - centre| <= half-width` stay eligible at every
# step, applied at inference to a model that was trained with global attention. Orange squares
# mark where each step should look; wrong symbols are shown in bold orange with a cross.

# %%
from attention_lab.toy.explorer import ModelExplorer

explorer = ModelExplorer(model)
explorer

# %% [markdown]
# The chapter's exercise 15 compares global attention with a fixed local window on a task where
# the relevant position lies outside the window. Reversal is such a task: a window around the
# start of the source cannot serve the first output steps, which need its end.

# %%
explorer.show_failure_case()
s = explorer.state
print("source", s["source"], "| window", s["window"], "| decoded", s["output"],
      "| expected", s["expected"])
print("steps whose true position lies outside the window:", int((~s["eligible"][s["truth"]]).sum()),
      "| steps decoded correctly:", int(s["correct"].sum()), "of", len(s["correct"]))
explorer.figure.fig

# %% [markdown]
# *Figure: the explorer's heatmap for `abcdefghij` with the window 0..2. Positions 3 to 9 are
# hatched grey (ineligible); all attention lands in the first three columns while the orange
# squares of steps 0 to 6 sit in the hatched area. Those steps output `a`, `b` or `c` and are
# marked wrong.*
#
# Every step whose target lies outside the window fails: the window is an assumption about where
# the answer can be, and here it is false. Inside the window things go wrong too: the model never
# saw its attention renormalised over three positions, and each wrong symbol is fed back to the
# decoder, so even some steps whose target is in the window come out wrong. Try a window that
# follows the answer (centre 9 for the first steps) or a temperature of 10: the peaks stay on
# the anti-diagonal while the weights flatten, and the output starts to break.

# %%
explorer.reset()
print(explorer)

# %% [markdown]
# ## 3. Entropy of attention against source length
#
# The entropy of one step's weights, `H = -sum_j w_j log w_j`, is 0 when one position takes all
# the weight and `log S` when the weight is spread evenly over `S` positions. The table and
# figure use the held-out study set with the correct previous symbols fed to the decoder.

# %%
ent = {name: ex.entropy_by_length(m, study_tokens, study_lengths)
       for name, m in (("additive", model), ("dot", dot_model))}
print("S        " + " ".join(f"{n:5d}" for n in ent["additive"]["length"]))
for name, e in ent.items():
    print(f"{name:8} " + " ".join(f"{h:5.2f}" for h in e["mean_entropy"]), "(nats)")
    print(f"{'':8} " + " ".join(f"{h:5.2f}" for h in e["normalised"]), "(/ log S)")
figures.entropy_plot(ent["additive"], title="additive model")

# %% [markdown]
# *Figure: left, the additive model's mean entropy (nats) against source length, rising from
# under 1 at S = 3 to about 1.3 at S = 12, beside the dashed curve log S of uniform attention;
# right, the same entropy divided by log S, which falls with length.*
#
# Read this cautiously:
#
# * Raw entropy rises with `S` partly for a trivial reason: there are more positions to spread
#   weight over. Divided by `log S` the trend reverses. Neither number alone says that longer
#   sources are "harder" or "easier" for the model.
# * Entropy is not accuracy. The additive model is right on almost every held-out sequence
#   while keeping most steps far from one-hot; the dot model is sharper and about as accurate.
#   Entropy describes the shape of one distribution, not whether the retrieved content is right.
# * These are lengths the model was trained on, one task, one seed. Outside the trained range, or
#   for a model trained differently, the curve can look different; a claim about attention
#   "in general" would need many models and tasks.

# %% [markdown]
# ## 4. Attention as explanation, measured
#
# A large weight says where one read-out looked. Whether that position *explains* the output is
# a causal question, answered only by intervening. For each decoder step of 24 held-out sources
# we hold the query, the other positions and everything after the context fixed, change one
# thing, and compare the output distribution over symbols with the total variation distance
# (TVD: 0 = unchanged, 1 = completely different):
#
# * **replace the top value**: put a control value (the average symbol embedding) at the
#   position with the largest weight, keep the weights;
# * **permute the weights**: shuffle the weights over the eligible positions, 100 times, and
#   take the median TVD (Jain & Wallace 2019 compare it with the largest weight);
# * **uniform weights**: the baseline of Wiegreffe & Pinter (2019);
# * **leave-one-out** (mask one position and renormalise) and **gradient** importance (the norm
#   of the gradient of the correct symbol's log-probability with respect to each source
#   embedding): one importance per position, compared with the weights by Kendall's tau.

# %%
exp_tokens, exp_lengths = ex.study_set(model, n=24, seed=11)
table = ex.explanation_table(model, exp_tokens, exp_lengths, n_permutations=100, seed=0)
for key, value in ex.summarise(table).items():
    print(f"{key:58} {value}")

# %%
figures.permutation_plot(table)

# %% [markdown]
# *Figure: left, one dot per decoder step: the largest attention weight (x) against the median
# output TVD over 100 permutations of the weights (y). Almost every dot sits near the top, at
# TVD close to 1, across the whole range of maximum weights; a few steps sit at 0 (typically a
# source whose symbols repeat, so that shuffled weights still retrieve the same symbol). Right,
# box plots of the TVD under the three interventions: replacing the top value and permuting
# give TVDs near 1; uniform weights give a wide spread.*

# %%
figures.tau_plot(table)

# %% [markdown]
# *Figure: histograms over decoder steps of Kendall's tau between the attention weights and
# leave-one-out importance (blue) and gradient importance (orange). Leave-one-out agrees with
# the weights' ranking more closely than the gradient does; neither agrees perfectly.*
#
# **What these results establish, and what they do not.**
#
# * *Replacing the top value* changes the output, and usually the decoded symbol. So in this
#   model the content at the most-weighted position is used, through this read-out, for these
#   inputs. It does not show that the position is the only route, and it changes a value while
#   keeping the weights computed from the original input: in the real network a different
#   symbol would also change the keys.
# * *Permuting the weights* almost always moves the output far, whatever the largest weight. In
#   this model, *which* position gets the weight matters: the opposite of what Jain & Wallace
#   found for several text classifiers, where shuffled attention often left predictions alone.
#   The result is a property of the model and task, not of attention in general, and a few
#   random permutations are not the adversarial search for alternative weights that can give
#   the same output.
# * *Uniform weights* are a baseline: if they changed little, attention would not be needed. They
#   change a lot here, so the model depends on attention; but uniform weights are far outside
#   anything the model met in training, so part of the effect may be the shock of the
#   intervention itself.
# * *Kendall's tau* measures agreement of whole rankings. The top position agrees with
#   leave-one-out in nearly every step, but the order of the many small weights is noisy and
#   pulls tau below 1; the gradient measures a local slope through keys and values alike and
#   agrees less. Agreement between two importance measures is not ground truth for either.
# * None of this turns attention weights into explanations by themselves; each claim above rests
#   on an intervention and its output change, reported together with what was held fixed.

# %% [markdown]
# ## 5. Cost: the score matrix, and streaming attention
#
# With `T` queries, `S` keys, key width `D_k` and value width `D_v`, attention scores `T x S`
# pairs per batch item and head: `T S D_k` multiply-adds for the scores and `T S D_v` for the
# weighted values, order `O(T S (D_k + D_v))`, and `T S` numbers per batch item and head if the
# weights are stored. The chapter's exercise, with a key and value width of 16:

# %%
from attention_lab.cost import AttentionCost

print(AttentionCost(batch=8, target=64, source=512, heads=4, d_k=16, d_v=16, chunk=128))

# %% [markdown]
# The weights do not have to be stored. **Streaming attention** (the online softmax of Milakov &
# Gimelshein 2018, the recurrence inside FlashAttention) walks over the keys in chunks and keeps
# three running quantities per query: the largest score so far `m`, the sum `l` of
# `exp(score - m)`, and the sum of `exp(score - m)` times each value. A new chunk with a larger
# maximum rescales both sums by `exp(m_old - m_new)`, so nothing overflows and the final
# `sum / l` equals the materialised result. `attention_lab.streaming.streaming_attention` follows
# the same mask conventions as `attention_lab.tensor.attention` (True = eligible, lengths,
# `is_causal`, the `empty=` policy) and guards rows whose first chunks are all masked.
#
# The two paths add the same terms in a different order, so in float32 they differ by round-off:
# a few times 1e-7 here, growing with `S`, and different on another CPU or thread count. The
# cells below therefore print whether they agree within a stated tolerance, not the round-off.

# %%
from attention_lab.streaming import compare, streaming_attention
from attention_lab.tensor import attention

g = torch.Generator().manual_seed(0)
Q, K, V = torch.randn(2, 5, 8, generator=g), torch.randn(2, 40, 8, generator=g), \
    torch.randn(2, 40, 3, generator=g)
lengths_qkv = torch.tensor([40, 13])
for chunk in (1, 7, 16, 40):
    diff = (streaming_attention(Q, K, V, lengths=lengths_qkv, is_causal=True, chunk_size=chunk)
            - attention(Q, K, V, lengths=lengths_qkv, is_causal=True).context).abs().max()
    print(f"chunk {chunk:2d}: streaming equals materialised within 1e-5:",
          "yes" if float(diff) <= 1e-5 else "NO")

# %%
cmp = compare(sizes=(256, 1024, 4096, 16384), T=64, D=32, chunk_size=256, repeat=3)
print("S            " + " ".join(f"{S:>9,}" for S in cmp["sizes"]))
for name in ("materialised", "streaming"):
    print(f"{name:12} " + " ".join(f"{b / 1024:7.0f} K" for b in cmp["peak_bytes"][name]),
          "(peak tensor memory)")
print("within 1e-4  " + " ".join(f"{'yes' if ok else 'NO':>9}" for ok in cmp["agrees"]),
      "(streaming vs materialised)")
figures.streaming_plot(cmp["sizes"], cmp["seconds"],
                       {k: cmp["peak_bytes"][k] for k in ("materialised", "streaming")})

# %% [markdown]
# *Figure: left, latency in milliseconds against source length (log scale) for materialised
# attention, streaming attention and torch's SDPA, within a small factor of each other at these
# sizes (the exact values vary from run to run). Right, peak tensor memory: the materialised
# path grows in proportion to S, the streaming path stays flat at one chunk of scores.*
#
# The memory column counts the tensors torch allocates during the call (deterministic, but blind
# to scratch space inside fused kernels, which is why SDPA is left out of it). The benchmark
# `python -m benchmarks.run streaming` measures the real peak resident memory of each method in a
# fresh process at up to T = 256, S = 262,144, D = 64; its table is in the README.

# %% [markdown]
# ## 6. The attention audit
#
# The chapter lists what an attention audit should record. `attention_lab.audit.audit` measures
# what can be measured on a call (normalisation axis, masked mass, what a row without eligible
# keys returns, score range, entropy, non-finite values, output norms, whether the context stays
# inside the range of the values, latency, tensor memory, whether a `T x S` matrix is formed) and
# lists what only the module's author can declare. Here it is on the trained model:

# %%
from attention_lab.audit import audit

print(audit(model, source=["abcde", "lkjihgfedcba", "cafe"]))

# %% [markdown]
# And on three broken attention functions, each a classic bug that keeps the output's shape:

# %%
def wrong_axis(Q, K, V, mask):
    scores = (Q @ K.transpose(-2, -1)).masked_fill(~mask, torch.finfo(Q.dtype).min)
    weights = torch.softmax(scores, dim=-2)  # normalises over the queries
    return weights @ V, weights


def mask_after_softmax(Q, K, V, mask):
    weights = torch.softmax(Q @ K.transpose(-2, -1), dim=-1) * mask  # no renormalisation
    return weights @ V, weights


def minus_inf_fill(Q, K, V, mask):
    weights = torch.softmax((Q @ K.transpose(-2, -1)).masked_fill(~mask, float("-inf")), dim=-1)
    return weights @ V, weights


for fn in (wrong_axis, mask_after_softmax, minus_inf_fill):
    report = audit(fn, Q, K, V, lengths=lengths_qkv)
    print(f"{fn.__name__}: flags {sorted(report.flags)}")
    for item in report.findings:
        print(f"    {item.name}: {item.value}")

# %% [markdown]
# The audit shows that a call is a valid masked retrieval (or that it is not). It cannot show
# that the weights explain the model's output: that is what the interventions of section 4 are
# for, and their results belong in the audit record beside it.
