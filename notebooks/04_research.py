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
# The earlier levels computed attention on numbers we chose. Here the questions need models
# that *learned* their attention, and measurements instead of diagrams:
#
# 1. small trained encoder-decoders whose correct alignment is known, opened up to the lines
#    that compute their attention;
# 2. perfect access is not a good representation;
# 3. cross-attention and self-attention: where the queries, keys and values come from, and
#    where a causal mask belongs;
# 4. a model explorer: change the source, the temperature and a local window and watch it fail;
# 5. what the entropy of attention does as sources get longer (and what that does not mean);
# 6. attention as an explanation, put to the test with interventions, on two models whose
#    values differ, and how redundant values hide what the output depends on;
# 7. the scale of the scores and the precision they are computed in;
# 8. what attention costs, and streaming attention that never stores the score matrix;
# 9. the chapter's audit list, run on real calls.
#
# Positions are numbered 1..S, as in notebooks 01-03. Every number printed below is computed
# when the notebook runs.

# %%
# %matplotlib inline
import inspect

import numpy as np
import torch

from attention_lab import toy
from attention_lab.toy import experiments as ex
from attention_lab.toy import figures

torch.manual_seed(0)
model = toy.load()                      # additive scores; values: the symbols' embeddings
dot_model = toy.load(score="dot")       # dot-product scores; the same kind of values
enc_model = toy.load(values="encoder")  # additive scores; values: the encoder's states
meta = model.metadata
print("architecture:", meta["config"])
print("trained with seed", meta["seed"], "for", meta["train"]["steps"], "steps;",
      "library versions:", meta["versions"])

# %% [markdown]
# ## 1. A model with a known answer: reversing a sequence
#
# The task is to write a string of symbols (`a` to `l`, 3 to 12 of them) backwards. Output step
# `t` (1..S) must copy source position `S + 1 - t`, so for every step we know exactly where a
# perfect model should look. Sources have different lengths within a batch, so the padding masks
# are real, not decoration.
#
# Who does what in the model (`attention_lab/toy/model.py`):
#
# * **keys**: a bidirectional GRU reads the source; its state at each position, projected, is
#   that position's key (the backward direction tells a position how far it is from the end);
# * **values**: the embedding of the symbol at each position, nothing else. A value carries only
#   its own symbol, so the decoder can only output the right symbol by weighting the right
#   position. (The third model, `enc_model`, uses the GRU's states as values instead; section 6
#   explains why that matters.)
# * **queries**: the decoder's GRU state at step `t`, fed the previous output symbol;
# * **scores**: additive, `v^T tanh(W_q h_t + W_k k_j)` (the second model uses dot products of
#   projected queries and keys).
#
# The held-out sequences below belong to a fixed tenth of all possible sequences that the
# training sampler never draws. The accuracy recorded at training time is recomputed now:

# %%
tc = meta["train"]
cfg = model.config
tokens, lengths = toy.heldout_set(tc["heldout"], cfg.n_symbols, cfg.min_len, cfg.max_len,
                                  seed=tc["heldout_seed"])
models = {"additive": model, "dot": dot_model, "encoder values": enc_model}
for name, m in models.items():
    live = toy.evaluate(m, tokens, lengths)
    recorded = m.metadata["metrics"]["heldout"]
    print(f"{name:14} held-out exact-sequence accuracy {live['exact_sequence_accuracy']:.2%} "
          f"(recorded at training: {recorded['exact_sequence_accuracy']:.2%}), "
          f"{live['n_sequences']} sequences")

# %% [markdown]
# **Retraining.** The weights come from `python -m attention_lab train` (seeded, CPU, well under
# a minute on a 2-core laptop; `--score dot` and `--values encoder` train the other two models,
# `--help` lists the options). It writes `toy_model/reversal_additive.pt` and a `.json` with the
# config, seed, library versions and metrics; load it with
# `toy.load("toy_model/reversal_additive.pt")`. A retrained file is byte-identical to the shipped
# one. A file that is corrupt, or whose shapes do not fit its config, is refused with a message
# that says why. This notebook only loads, so it runs in seconds.
#
# ### Open the box
#
# Everything this notebook calls the model's attention happens in three short pieces of
# `attention_lab/toy/model.py`: the scores and the weighted sum (`attend`), the masked softmax,
# and the readout that turns the decoder state and the context into scores for the 12 symbols.
# Here they are, printed from the source the model runs:

# %%
from attention_lab.toy.model import ReversalModel, masked_softmax

for piece in (ReversalModel.attend, masked_softmax, ReversalModel.readout):
    print(inspect.getsource(piece))

# %% [markdown]
# The same step by hand, from the model's parameters: output step 1 of reversing `cafe`, which
# must copy position 4 (`e`). The decoder state `h` comes from the model (with the correct
# previous symbol fed back); the rest is the formula.

# %%
src_tokens, src_lengths = toy.data.pad_batch([toy.encode("cafe", 12, 12)], cfg.max_len)
decoded = ex.decode_forced(model, src_tokens, src_lengths)
with torch.no_grad():
    keys, values, _ = model.encode(torch.from_numpy(src_tokens), torch.from_numpy(src_lengths))
    k, v = keys[0, :4], values[0, :4]                             # (S, attn), (S, D_v)
    h = torch.from_numpy(decoded.queries[0, 0])                   # (hidden,) step 1's query
    q = model.W_q.weight @ h + model.W_q.bias                     # (attn,)
    e = torch.tanh(q[None, :] + k) @ model.v.weight[0]            # (S,) e_j = v . tanh(q + k_j)
    alpha = torch.softmax(e, dim=-1)                              # (S,) the weights
    c = alpha @ v                                                 # (D_v,) the context
    logits = model.W_o(torch.tanh(model.W_c(torch.cat([h, c]))))  # (12,) one per symbol
print("weights over the positions 1..4:", np.round(alpha.numpy(), 2))
print("equal to the model's weights within 1e-5:",
      "yes" if np.allclose(alpha.numpy(), decoded.weights[0, 0, :4], atol=1e-5) else "NO")
print("output symbol:", toy.decode([int(logits.argmax()) + 1], cfg.n_symbols))

# %% [markdown]
# ### Attention against the true alignment
#
# Alignment accuracy is the share of output steps whose largest weight sits on the true source
# position. The mean weight on that position says how *concentrated* the attention is.

# %%
study_tokens, study_lengths = ex.study_set(model, n=200)
reports = {name: ex.alignment_report(m, study_tokens, study_lengths)
           for name, m in models.items()}
for name, r in reports.items():
    print(f"{name:14} alignment accuracy {r['alignment_accuracy']:.1%}, mean weight on the true "
          f"position {r['mean_weight_on_true_position']:.2f}, exact-sequence accuracy "
          f"{r['exact_sequence_accuracy']:.1%} ({r['n_steps']} steps)")

# %%
picks = [int(np.flatnonzero(study_lengths == n)[0]) for n in (4, 8, 12)]
panels = []
for name in ("additive", "dot"):
    d = reports[name]["decoded"]
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
# readout can decode. (The third model is right as often while its largest weight misses the
# true position more often: section 6.)

# %% [markdown]
# ## 2. Access is not representation quality
#
# Attention decides *where* the decoder reads; what it finds there is the encoder's business.
# To separate the two, make retrieval perfect: at every step, give the readout exactly the value
# at the true position (weight 1 there, 0 elsewhere). With the model's own values, reversal is
# then trivially right. Now keep retrieval perfect but let the values lose detail, as a weaker
# encoder would: merge the symbols in pairs (`a` and `b` get the same value, `c` and `d`, ...),
# or give every symbol the same value. Predict the accuracy of each before you run the cell.

# %%
perfect = ex.perfect_retrieval(model, study_tokens, study_lengths)
for name, accuracy in perfect.items():
    print(f"perfect retrieval, {name:28} symbol accuracy {accuracy:.0%}")

# %% [markdown]
# With pairs merged the readout can only guess between the two symbols of a pair, and with one
# value for all it is left with the decoder's state alone: about one symbol in twelve. Retrieval
# was perfect every time. The same holds on the other side of the score: keys that cannot tell
# two positions apart (a source like `abab` read without any order information) leave every
# query unable to prefer one of them, however well it is trained. Attention widens access to
# the encoder's states; it cannot add what those states do not hold.

# %% [markdown]
# ## 3. Cross-attention and self-attention
#
# Both compute scores, a softmax and a weighted sum of values; they differ in where the three
# inputs come from, in their shapes, and in the masks that make sense.
#
# | | queries from | keys and values from | score matrix | masks that belong |
# |---|---|---|---|---|
# | cross-attention (this chapter) | the decoder (target) states | the encoder (source) states | T x S, T and S differ | the source's padding; the decoder may read the whole source |
# | self-attention (Chapter 20) | the sequence | the same sequence | T x T | padding; in a decoder, a causal mask: position t sees positions 1..t |
#
# One small computation with the package's `attention`: three target states attend to five
# source states of which the last is padding, and the target attends to itself with a causal
# mask. The printed patterns mark which keys each query may use (1) and which not (0).

# %%
from attention_lab.tensor import attention

g = torch.Generator().manual_seed(1)
source_states = torch.randn(1, 5, 4, generator=g)  # (B, S, D): the encoder's output
target_states = torch.randn(1, 3, 4, generator=g)  # (B, T, D): the decoder's states
W_q, W_k, W_v = (torch.randn(4, 4, generator=g) for _ in range(3))
cross = attention(target_states @ W_q, source_states @ W_k, source_states @ W_v,
                  lengths=torch.tensor([4]))       # padding: source position 5 is not real
self_ = attention(target_states @ W_q, target_states @ W_k, target_states @ W_v,
                  is_causal=True)                  # position t sees positions 1..t
for name, r in (("cross-attention", cross), ("self-attention, causal", self_)):
    print(f"{name}: weights {tuple(r.weights.shape)}, every row sums to 1:",
          "yes" if torch.allclose(r.weights.sum(-1), torch.ones(1)) else "NO")
    print(r.mask.expand(r.weights.shape)[0].int().numpy())

# %% [markdown]
# A causal mask protects a sequence from reading its own future, so it belongs to
# self-attention over the target. The source is not the decoder's future: it was read in full
# before decoding began. Put a causal mask on the trained model's cross-attention (step `t`
# may read source positions 1..t only) and see what reversal, which needs position `S + 1 - t`
# at step `t`, makes of it:

# %%
L = cfg.max_len
causal = np.broadcast_to(np.tril(np.ones((L, L), bool)), (len(study_tokens), L, L)).copy()
for name, kwargs in (("global cross-attention", {}),
                     ("causal mask on the cross-attention", {"extra_mask": causal})):
    r = toy.evaluate(model, study_tokens, study_lengths, **kwargs)
    print(f"{name:35} exact-sequence accuracy {r['exact_sequence_accuracy']:.0%}, symbol "
          f"accuracy {r['symbol_accuracy']:.0%}")

# %% [markdown]
# ## 4. The model explorer
#
# Type a source (or pick one), change the temperature that divides the scores, and switch on a
# local window: only positions `j` with `|j - centre| <= half-width` stay eligible at every
# step, applied at inference to a model that was trained with global attention. Orange squares
# mark where each step should look; wrong symbols are shown in bold orange with a cross. The
# explorer's tasks ask for the smallest window that still reverses a 10-symbol source, and for a
# temperature that breaks the output while every step still looks at the right place.

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
print("source", s.source, "| window positions", f"{s.window_bounds[0]}..{s.window_bounds[1]}",
      "| decoded", s.output, "| expected", s.expected)
print("steps whose true position lies outside the window:", int((~s.eligible[s.truth]).sum()),
      "| steps decoded correctly:", int(s.correct.sum()), "of", len(s.correct))
explorer.figure

# %% [markdown]
# *Figure: the explorer's heatmap for `abcdefghij` with the window 1..3. Positions 4 to 10 are
# hatched grey (ineligible); all attention lands in the first three columns while the orange
# squares of steps 1 to 7 sit in the hatched area. Those steps output `a`, `b` or `c` and are
# marked wrong.*
#
# Every step whose target lies outside the window fails: the window is an assumption about where
# the answer can be, and here it is false. Inside the window things go wrong too: the model never
# saw its attention renormalised over three positions, and each wrong symbol is fed back to the
# decoder, so even some steps whose target is in the window come out wrong. Try a window that
# follows the answer (centre 10 for the first steps) or a temperature of 5: the peaks stay on
# the anti-diagonal while the weights flatten, and the output starts to break.

# %%
explorer.reset()
print(explorer)

# %% [markdown]
# ## 5. Entropy of attention against source length
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
# ## 6. Attention as explanation, measured
#
# A large weight says where one read-out looked. Whether that position *explains* the output is
# a causal question, answered only by intervening. For each decoder step of 24 held-out sources
# we hold the query, the other positions and everything after the context fixed, change one
# thing, and compare the output distribution over symbols with the total variation distance
# (TVD: 0 = unchanged, 1 = completely different):
#
# * **replace the top value**: put a control value (the mean value over many held-out sources)
#   at the position with the largest weight, keep the weights;
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
#   But this model's values are the bare symbol embeddings: a value holds its own symbol and
#   nothing else, so moving the weight to another position *must* retrieve another symbol. The
#   result is built into the architecture, which the next subsection tests.
# * *Uniform weights* are a baseline: if they changed little, attention would not be needed. They
#   change a lot here, so the model depends on attention; but uniform weights are far outside
#   anything the model met in training, so part of the effect may be the shock of the
#   intervention itself.
# * *Kendall's tau* measures agreement of whole rankings. The top position agrees with
#   leave-one-out in nearly every step, but the order of the many small weights is noisy and
#   pulls tau below 1; the gradient measures a local slope through keys and values alike and
#   agrees less. Agreement between two importance measures is not ground truth for either.
#
# ### Redundancy hides dependence
#
# Jain & Wallace's classifiers read *contextual* encoder states: each state also carries
# what the encoder saw around its position, so several positions hold overlapping evidence. The
# third model is the contrast: the same task, scores and training, but its values are the
# bidirectional GRU's states, not the symbol embeddings. A state knows its neighbours' symbols
# too. The same measurements on both:

# %%
enc_table = ex.explanation_table(enc_model, exp_tokens, exp_lengths, n_permutations=100, seed=0)
both = {"embedding values": (reports["additive"], table),
        "encoder states": (reports["encoder values"], enc_table)}
rows = [
    ("alignment accuracy (largest weight on the true position)",
     lambda r, t: f"{r['alignment_accuracy']:.1%}"),
    ("steps decoded right with < 0.1 weight on the true position",
     lambda r, t: f"{r['right_with_little_weight_on_truth']} of {r['n_steps']}"),
    ("share of steps whose symbol changes, top value replaced",
     lambda r, t: f"{t['replace_changed'].mean():.0%}"),
    ("share of steps whose symbol changes, top position left out",
     lambda r, t: f"{t['loo_top_changed'].mean():.0%}"),
    ("median TVD, weights permuted", lambda r, t: f"{np.median(t['perm_median']):.2f}"),
    ("median TVD, uniform weights", lambda r, t: f"{np.median(t['uniform']):.2f}"),
]
print(f"{'':60}" + "".join(f"{name:>18}" for name in both))
for label, cell in rows:
    print(f"{label:60}" + "".join(f"{cell(*pair):>18}" for pair in both.values()))

# %% [markdown]
# Both models reverse almost every held-out sequence. The embedding model never gets a symbol
# right without weighting its position: it cannot, since no other value holds that symbol. The
# encoder model does so on about one step in fifteen, with less than a tenth of the weight on
# the true position: on those steps the symbol came from a neighbour's state, and the attention
# map points somewhere the information did not come from. The interventions move the same way:
# replacing or leaving out the top position changes the output on fewer steps, because the
# neighbours' states can stand in for it.
#
# The difference is real but modest here, and permuted weights still wreck both models'
# outputs: reversal needs a different position at every step, so attention stays necessary.
# In a classifier whose evidence is spread over many positions, redundancy can hide the
# dependence almost completely. Two lessons for any explanation claim: report what the values
# contain (raw embeddings or contextual states), and know that a small effect of removing one
# position does not prove that the model ignores what sits there.

# %% [markdown]
# ## 7. Score scale and precision
#
# ### Dot products grow with the key width
#
# For queries and keys with independent entries of mean 0 and variance 1, `q . k` is a sum of
# `D_k` independent products of variance 1, so its variance is `D_k`. Larger scores make the
# softmax sharper: at a large width almost every query puts nearly all its weight on one key,
# whatever it is looking for. Dividing the scores by `sqrt(D_k)` (the *scaled* dot product,
# which Chapter 20 derives) brings the variance back to 1. Measured on 500 queries against 16
# keys each:

# %%
from attention_lab.softmax import softmax

rng = np.random.default_rng(4)
widths, variance, largest, largest_scaled = (4, 16, 64, 256, 512), [], [], []
print("  D_k   var(q . k)   var(q . k / sqrt(D_k))   mean largest weight: unscaled, scaled")
for D_k in widths:
    q = rng.normal(size=(500, D_k))                        # (n, D_k)
    K = rng.normal(size=(500, 16, D_k))                    # (n, S, D_k)
    scores = np.einsum("nd,nsd->ns", q, K)                 # (n, S)
    scaled = scores / np.sqrt(D_k)
    variance.append(scores.var())
    largest.append(softmax(scores).max(axis=-1).mean())
    largest_scaled.append(softmax(scaled).max(axis=-1).mean())
    print(f"{D_k:5d} {variance[-1]:12.0f} {scaled.var():24.1f} {largest[-1]:22.2f} "
          f"{largest_scaled[-1]:8.2f}")
figures.score_scale_plot(widths, variance, largest, largest_scaled)

# %% [markdown]
# *Figure: left, the measured variance of `q . k` against `D_k` on log-log axes, on top of the
# dashed line `D_k`; right, the mean largest of 16 softmax weights against `D_k`: unscaled it
# climbs from about 0.4 at `D_k = 4` towards 1 at 512, scaled by `1/sqrt(D_k)` it stays flat
# near 0.24.*
#
# ### Sharp weights make learning sensitive
#
# Every gradient that reaches the scores passes through the softmax, multiplied by how much the
# weights move when a score moves: the softmax's Jacobian, `(diag(w) - w w^T) / tau`. Its size
# against the temperature, for a score row with a clear winner and for one with a near tie
# (computed with torch's autograd):

# %%
score_rows = {"clear winner [2, 1, 0.5, -1]": [2.0, 1.0, 0.5, -1.0],
              "near tie [1, 0.98, -0.5, -1]": [1.0, 0.98, -0.5, -1.0]}
print("temperature " + "".join(f"{name:>32}" for name in score_rows))
for tau in (2.0, 1.0, 0.5, 0.25, 0.1, 0.05, 0.02):
    sizes = [torch.autograd.functional.jacobian(
        lambda s: torch.softmax(s / tau, dim=-1), torch.tensor(r, dtype=torch.float64)).norm()
        for r in score_rows.values()]
    print(f"{tau:11} " + "".join(f"{float(x):32.3f}" for x in sizes))

# %% [markdown]
# With a clear winner, sharpening the weights starves the scores of gradient: at temperature
# 0.05 the weights no longer respond to the scores at all, so training cannot move them. With a
# near tie, the same sharpening does the opposite: the response grows like `1/tau`, and a change
# of the scores in the third decimal swaps which key gets the weight. Both are the chapter's
# sensitivity of very sharp distributions; unscaled dot products at a large `D_k` produce such
# sharp weights by themselves, which is why the scaling above matters for training.
#
# ### Low precision can flip a close ranking
#
# float16 has 10 bits of mantissa: between 256 and 512 it can only represent multiples of 0.25.
# Two keys whose scores against the query are 256.5 and 256.25: the first should win. A kernel
# that accumulates the dot product in float16, one product at a time, rounds after every
# addition (256 + 0.125 is exactly halfway to 256.25 and rounds to the even 256):

# %%
query16 = np.ones(5)
key_a = np.array([256.0, 0.125, 0.125, 0.125, 0.125])  # q . k = 256.5
key_b = np.array([256.25, 0.0, 0.0, 0.0, 0.0])         # q . k = 256.25


def float16_dot(q, k):
    """A dot product accumulated in float16, one product at a time."""
    total = np.float16(0)
    for a, b in zip(q.astype(np.float16), k.astype(np.float16)):
        total = np.float16(total + a * b)
    return total


for name, dot in (("float64", lambda q, k: q @ k), ("float16 accumulation", float16_dot)):
    sa, sb = float(dot(query16, key_a)), float(dot(query16, key_b))
    print(f"{name:21} scores {sa:.2f} and {sb:.2f}: key {'a' if sa > sb else 'b'} ranks first")
r16 = attention(torch.tensor(query16[None], dtype=torch.float16),
                torch.tensor(np.stack([key_a, key_b]), dtype=torch.float16),
                torch.eye(2, dtype=torch.float16))
print("attention_lab.tensor.attention on float16 inputs (computed in float32): weights",
      np.round(r16.weights.float().numpy()[0], 3), "-> key a keeps the larger weight")

# %% [markdown]
# The inputs are exactly representable in float16; only the accumulation lost the order, and
# with it the top key. The package computes float16 and bfloat16 inputs in float32 (as
# PyTorch's CPU kernels do) and casts the result back. An audit records which precision the
# scores are *accumulated* in, not only the dtype of the tensors.

# %% [markdown]
# ## 8. Cost: the score matrix, and streaming attention
#
# With `T` queries, `S` keys, key width `D_k` and value width `D_v`, attention scores `T x S`
# pairs per batch item and head: `T S D_k` multiply-adds for the scores and `T S D_v` for the
# weighted values, order `O(T S (D_k + D_v))`, and `T S` numbers per batch item and head if the
# weights are stored. The chapter's exercise, with a key and value width of 16:

# %%
from attention_lab.analysis.cost import AttentionCost

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
# `python -m attention_lab bench streaming` measures the real peak resident memory of each
# method in a fresh process at up to T = 256, S = 262,144, D = 64; its table is in the README.

# %% [markdown]
# ## 9. The attention audit
#
# The chapter lists what an attention audit should record. `attention_lab.analysis.audit.audit`
# takes any attention callable and measures what can be measured on a call (normalisation axis,
# masked mass, what a row without eligible keys returns, score range, entropy, non-finite values,
# output norms, whether the context stays inside the range of the values, latency, tensor
# memory, whether a `T x S` matrix is formed); what only the module's author knows (where the
# queries, keys and values come from, projections, sharing, fill value) is *declared* and marked
# as such. `attention_lab.toy.audit.audit_model` declares the trained model's sources and audits
# its real attention calls:

# %%
from attention_lab.analysis.audit import audit
from attention_lab.toy.audit import audit_model

print(audit_model(model, source=["abcde", "lkjihgfedcba", "cafe"]))

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
# that the weights explain the model's output: that is what the interventions of section 6 are
# for, and their results belong in the audit record beside it, with what the values contain.
