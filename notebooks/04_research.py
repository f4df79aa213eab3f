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
# Here the models *learned* their attention, on a task whose right answer is known, and every
# claim is a measurement. Predict cells work as in notebooks 01-03: replace the `...`, run it,
# then the cell under it. Positions are numbered 1..S. Each section ends with a **checkpoint**:
# a question to answer, in a sentence, before going on.

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
# %matplotlib inline
import inspect

import numpy as np
import torch

from attention_lab import toy
from attention_lab.analysis.audit import audit
from attention_lab.analysis.cost import cache_cost
from attention_lab.explanations import level4 as why
from attention_lab.predict import reveal
from attention_lab.softmax import softmax
from attention_lab.streaming import compare, streaming_attention
from attention_lab.tensor import attention
from attention_lab.toy import experiments as ex
from attention_lab.toy import figures
from attention_lab.toy.audit import audit_model
from attention_lab.toy.explorer import ModelExplorer
from attention_lab.toy.model import ReversalModel, masked_softmax

torch.manual_seed(0)
model = toy.load()                      # additive scores; values: the symbols' embeddings
dot_model = toy.load(score="dot")       # dot-product scores; the same kind of values
enc_model = toy.load(values="encoder")  # additive scores; values: the encoder's states
meta = model.metadata
print("architecture:", meta["config"])
print("trained with seed", meta["seed"], "for", meta["train"]["steps"], "steps;",
      "library versions:", meta["versions"])

# %% [markdown]
# ## 1. What does a fixed summary lose as the source grows?
#
# The task: write a string of the symbols `a` to `l` backwards; output step `t` must copy source
# position `S + 1 - t`. In the models (`attention_lab/toy/model.py`) a bidirectional GRU reads the
# source and its states, projected, are the **keys**, `k_j = W_k enc_j`; the **values** are the
# symbols' embeddings; the **query** is the decoder's GRU state at step `t`; scores are additive,
# `v^T tanh(W_q h_t + b_a + k_j)` (`dot_model`: dot products; `enc_model`: the GRU's states as
# values).
#
# The chapter opens with the problem attention solves: a decoder that sees only the encoder's
# **final state**, one vector for the whole source. Two models on sources of 4 to 24 symbols,
# trained by the same code with the same budget, one with attention and one without
# (`python -m attention_lab train --context final_state --min-len 4 --max-len 24`), are measured
# on 200 held-out sources of every length.

# %%
# Predict: from which source length on does the final-state model reverse fewer than half of the
# sequences without a mistake? (a length from 4 to 24)
half_right_length = ...

# %%
with reveal(half_right_length, why=why.half_right_length, tol=2) as r:
    bottleneck = ex.accuracy_by_length(ex.bottleneck_models())
    print("S                 " + " ".join(f"{n:4d}" for n in bottleneck["length"]))
    for name in ("attention", "final state only"):
        print(f"{name:17} " + " ".join(f"{a:4.2f}" for a in bottleneck[name]["exact"]),
              "(share of sequences right)")
    r.answer = int(bottleneck["length"][np.flatnonzero(
        bottleneck["final state only"]["exact"] < 0.5)[0]])

# %%
figures.bottleneck_plot(bottleneck, chance=1 / 12)

# %% [markdown]
# *Figure: held-out accuracy against source length, 200 sequences per length: left, the share of
# output symbols that are right; right, the share of sequences without a mistake; dashed,
# guessing (1/12). With attention both stay near 1; without it both fall with the length.*
#
# **Checkpoint.** At 24 symbols the final-state model still gets about a third of the *symbols*
# right (left panel) but no *sequence*: which output steps do you expect it to get right, and why?
#
# The rest of the notebook studies three models trained on 3 to 12 symbols, on held-out
# sequences (a fixed tenth of all sequences that training never draws):

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
# ### Open the box
#
# The model's attention, printed from its source: the scores and weighted sum, the masked
# softmax, the readout. Then step 1 of reversing `cafe` (copy position 4, `e`) by hand.

# %%
for piece in (ReversalModel.attend, masked_softmax, ReversalModel.readout):
    print(inspect.getsource(piece))

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
# ### Where does each model look?
#
# Alignment accuracy is the share of output steps whose largest weight sits on the true position;
# the mean weight there says how *concentrated* the attention is.

# %%
# Predict: which model puts more weight on the true position on average, "additive" or "dot"?
sharper = ...

# %%
with reveal(sharper, why=why.sharper, choices=("additive", "dot")) as r:
    study_tokens, study_lengths = ex.study_set(model, n=200)
    reports = {name: ex.alignment_report(m, study_tokens, study_lengths)
               for name, m in models.items()}
    for name, rep in reports.items():
        print(f"{name:14} alignment accuracy {rep['alignment_accuracy']:.1%}, mean weight on the "
              f"true position {rep['mean_weight_on_true_position']:.2f}, exact-sequence accuracy "
              f"{rep['exact_sequence_accuracy']:.1%} ({rep['n_steps']} steps)")
    r.answer = max(("additive", "dot"),
                   key=lambda n: reports[n]["mean_weight_on_true_position"])

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
# *Figure: six heatmaps, three per model, for held-out sources of length 4, 8 and 12, on the
# lab's weight scale (white 0, darker larger). Rows are output steps (labelled by the decoded
# symbol), columns are source positions (labelled by the source symbol); orange squares mark the
# true alignment, the anti-diagonal. The additive model spreads more weight over neighbours.*
#
# **Checkpoint.** The encoder-values model is right as often as the others while its largest
# weight misses the true position more often. Where could its symbols come from?

# %% [markdown]
# ## 2. Can perfect access rescue values that lost detail?
#
# Make retrieval perfect: at every step give the readout exactly the value at the true position.
# Then let the values lose detail, as a weaker encoder would: merge the symbols in pairs (`a`
# and `b` get one value, `c` and `d`, ...), or give every symbol the same value.

# %%
# Predict: retrieval perfect, symbols merged in pairs: what share of output symbols is right (0-1)?
merged_accuracy = ...

# %%
with reveal(merged_accuracy, why=why.merged_accuracy, tol=0.1) as r:
    perfect = ex.perfect_retrieval(model, study_tokens, study_lengths)
    for name, accuracy in perfect.items():
        print(f"perfect retrieval, {name:28} symbol accuracy {accuracy:.0%}")
    r.answer = round(perfect["a/b, c/d, ... merged"], 2)

# %% [markdown]
# **Checkpoint.** A source like `abab` read without any order information gives positions 1 and 3
# the same key. Can any query prefer one of them?
#
# ## 3. Cross-attention and self-attention
#
# | | queries from | keys and values from | score matrix | masks that belong |
# |---|---|---|---|---|
# | cross-attention (this chapter) | the decoder (target) states | the encoder (source) states | T x S | the source's padding |
# | self-attention (Chapter 20) | the sequence | the same sequence | T x T | padding; in a decoder, causal: t sees 1..t |
#
# Three target states attend to five source states (the last is padding), and to themselves
# with a causal mask; 1 marks a key a query may use:

# %%
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
# Now put a causal mask on the trained model's *cross*-attention: step `t` may read source
# positions 1..t only.

# %%
# Predict: with that mask, what share of the study sequences does the model reverse without a
# mistake (0-1)?
causal_exact = ...

# %%
with reveal(causal_exact, why=why.causal_exact, tol=0.1) as r:
    L = cfg.max_len
    causal = np.broadcast_to(np.tril(np.ones((L, L), bool)), (len(study_tokens), L, L)).copy()
    for name, kwargs in (("global cross-attention", {}),
                         ("causal mask on the cross-attention", {"extra_mask": causal})):
        res = toy.evaluate(model, study_tokens, study_lengths, **kwargs)
        print(f"{name:35} exact-sequence accuracy {res['exact_sequence_accuracy']:.0%}, symbol "
              f"accuracy {res['symbol_accuracy']:.0%}")
    r.answer = round(res["exact_sequence_accuracy"], 2)

# %% [markdown]
# **Checkpoint.** In a decoder with both self-attention and cross-attention, which of the two gets
# the causal mask?
#
# ## 4. The model explorer
#
# Type a source, change the temperature that divides the scores, and switch on a local window:
# the positions `j` with `|j - centre| <= half-width` stay eligible, the same window for every
# output step, on a model trained with global attention. Orange squares mark where each step
# should look; wrong symbols are bold orange with a cross. First, the chapter's exercise 15: the
# relevant position outside the window.

# %%
# Predict: window 1..3 (centre 2, half-width 1) on the source abcdefghij. How many of the 10
# output steps decode wrong?
window_wrong = ...

# %%
with reveal(window_wrong, why=why.window_wrong) as r:
    failure = ModelExplorer(model)  # a second explorer, for this case; yours is below
    failure.show_failure_case()
    s = failure.state
    print("source", s.source, "| window positions", f"{s.window_bounds[0]}..{s.window_bounds[1]}",
          "| decoded", s.output, "| expected", s.expected)
    print("steps whose true position lies outside the window:",
          int((~s.eligible[s.truth]).sum()))
    r.answer = int((~s.correct).sum())

# %%
failure.still()

# %% [markdown]
# *Figure: the explorer's heatmap for `abcdefghij` with the window 1..3. Positions 4 to 10 are
# hatched grey (ineligible); all the weight lands in the first three columns, while the orange squares
# of steps 1 to 7 sit in the hatched area. Those steps output `a`, `b` or `c`, marked wrong.*
#
# Your explorer, with its tasks:

# %%
explorer = ModelExplorer(model)
explorer

# %% [markdown]
# **Checkpoint.** The window stays where it is for every step. A window centred on 10 serves the
# first steps; which steps does it starve? (Notebook 02's local-p explorer moves the centre.)
#
# ## 5. Entropy of attention against source length
#
# Do exercise 21 (checks 4.6 and 4.7 in `exercises/04_research_exercises`) first. The entropy
# of one step's weights, `H = -sum_j w_j log w_j`, is 0 when one position takes all the weight
# and `log S` when it is spread evenly over `S` positions.

# %%
# Predict: divided by log S, does the additive model's mean entropy "rise" or "fall" from S = 3
# to S = 12?
entropy_trend = ...

# %%
with reveal(entropy_trend, why=why.entropy_trend, choices=("rise", "fall")) as r:
    ent = {name: ex.entropy_by_length(m, study_tokens, study_lengths)
           for name, m in (("additive", model), ("dot", dot_model))}
    print("S        " + " ".join(f"{n:5d}" for n in ent["additive"]["length"]))
    for name, e in ent.items():
        print(f"{name:8} " + " ".join(f"{h:5.2f}" for h in e["mean_entropy"]), "(nats)")
        print(f"{'':8} " + " ".join(f"{h:5.2f}" for h in e["normalised"]), "(/ log S)")
    trend = ent["additive"]["normalised"]
    r.answer = "fall" if trend[-1] < trend[0] else "rise"

# %%
figures.entropy_plot(ent["additive"], title="additive model")

# %% [markdown]
# *Figure: left, the additive model's mean entropy (nats) against source length beside the dashed
# curve log S of uniform attention; right, the same entropy divided by log S.*
#
# **Checkpoint.** The dot model's entropy is near 0 and the additive model's is not, at the same
# accuracy. What does entropy tell you about whether a model is right?
#
# ## 6. Attention as explanation, measured
#
# Do exercise 19 (checks 4.3 and 4.4) first. Whether a weighted position *explains* the output
# is causal, answered by intervening. For each step of 24 held-out sources we hold the query and
# everything after the context fixed, change one thing, and compare the output distributions by
# total variation distance (TVD, half the summed absolute differences: 0 when unchanged, at its
# largest when they share nothing): **replace the top value** by a control (the mean value over
# many sources); **permute the weights** over the eligible positions (100 times, median; Jain &
# Wallace 2019); **uniform weights** (the baseline of Wiegreffe & Pinter 2019); and rank the
# positions by **leave-one-out** (mask one, renormalise) and by **gradient** importance,
# compared with the weights by Kendall's tau.

# %%
# Predict: the median TVD when the weights are permuted (0-1)?
permuted_tvd = ...

# %%
with reveal(permuted_tvd, why=why.permuted_tvd, tol=0.15) as r:
    exp_tokens, exp_lengths = ex.study_set(model, n=24, seed=11)
    table = ex.explanation_table(model, exp_tokens, exp_lengths, n_permutations=100, seed=0)
    summary = ex.summarise(table)
    for key, value in summary.items():
        print(f"{key:58} {value}")
    r.answer = summary["median TVD, permuted weights"]

# %%
figures.permutation_plot(table)

# %% [markdown]
# *Figure: left, one dot per decoder step: its largest weight (x) against the median TVD over 100
# permutations (y); almost every dot sits near 1 whatever its largest weight, a few at 0. Right,
# box plots of the TVD under the three interventions.*

# %%
figures.tau_plot(table)

# %% [markdown]
# *Figure: histograms over decoder steps of Kendall's tau between the weights and leave-one-out
# importance (blue) and gradient importance (orange).*
#
# Leave-one-out picks the same top position as the weights in every step here, yet tau stays
# below 1 (the many small weights are ordered noisily); the gradient agrees less. Agreement
# between two importance measures is ground truth for neither. And replacing a value keeps the
# weights of the original input, while a different symbol would also change the keys.
#
# ### Redundant values
#
# Jain & Wallace's classifiers read *contextual* states, where positions hold overlapping
# evidence. The third model's values are the GRU's states, which know their neighbours' symbols.

# %%
# Predict: with the encoder's states as values, does leaving out the top position change the
# output symbol on "more" or "fewer" steps than with the embeddings?
encoder_loo = ...

# %%
with reveal(encoder_loo, why=why.encoder_loo, choices=("more", "fewer")) as r:
    enc_table = ex.explanation_table(enc_model, exp_tokens, exp_lengths, n_permutations=100,
                                     seed=0)
    both = {"embedding values": (reports["additive"], table),
            "encoder states": (reports["encoder values"], enc_table)}
    rows = [
        ("alignment accuracy (largest weight on the true position)",
         lambda rep, t: f"{rep['alignment_accuracy']:.1%}"),
        ("steps decoded right with < 0.1 weight on the true position",
         lambda rep, t: f"{rep['right_with_little_weight_on_truth']} of {rep['n_steps']}"),
        ("share of steps whose symbol changes, top value replaced",
         lambda rep, t: f"{t['replace_changed'].mean():.0%}"),
        ("share of steps whose symbol changes, top position left out",
         lambda rep, t: f"{t['loo_top_changed'].mean():.0%}"),
        ("median TVD, weights permuted", lambda rep, t: f"{np.median(t['perm_median']):.2f}"),
        ("median TVD, uniform weights", lambda rep, t: f"{np.median(t['uniform']):.2f}"),
    ]
    print(f"rows 1-2: the {reports['additive']['n_steps']} steps of the 200 study sources; the "
          f"others: the {len(table['b'])} steps of the {len(exp_tokens)} sources above")
    print(f"{'':60}" + "".join(f"{name:>18}" for name in both))
    for label, cell in rows:
        print(f"{label:60}" + "".join(f"{cell(*pair):>18}" for pair in both.values()))
    loo = [t["loo_top_changed"].mean() for _, t in both.values()]
    r.answer = "fewer" if loo[1] < loo[0] else "more"

# %% [markdown]
# Permuted weights still wreck both models: reversal needs a different position at every step. In
# a classifier whose evidence is spread over many positions, redundancy can hide the dependence
# almost completely.
#
# **Checkpoint.** An attention map is offered as the explanation of a classifier's decision. Name
# two things you would ask for before believing it.
#
# ## 7. Score scale and precision
#
# For queries and keys with independent entries of mean 0 and variance 1, `q . k` sums `D_k`
# products of variance 1, so its variance is `D_k`. Dividing by `sqrt(D_k)` (the *scaled* dot
# product, derived in Chapter 20) brings it back to 1. Measured on 500 queries against 16 keys:

# %%
# Predict: unscaled, the mean largest of the 16 weights at D_k = 512 (0-1)?
largest_512 = ...

# %%
with reveal(largest_512, why=why.largest_512, tol=0.1) as r:
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
    r.answer = round(float(largest[-1]), 2)

# %%
figures.score_scale_plot(widths, variance, largest, largest_scaled)

# %% [markdown]
# *Figure: left, the measured variance of `q . k` against `D_k` (log-log) on the dashed line
# `D_k`; right, the mean largest of 16 weights against `D_k`, unscaled and scaled.*
#
# ### Sharp weights make learning sensitive
#
# Every gradient that reaches the scores is multiplied by the softmax's Jacobian,
# `(diag(w) - w w^T) / tau`. Its size against the temperature, for a clear winner and a near tie
# (torch autograd):

# %%
score_rows = {"clear winner [2, 1, 0.5, -1]": [2.0, 1.0, 0.5, -1.0],
              "near tie [1, 0.98, -0.5, -1]": [1.0, 0.98, -0.5, -1.0]}
print("temperature " + "".join(f"{name:>32}" for name in score_rows))
for tau in (2.0, 1.0, 0.5, 0.25, 0.1, 0.05, 0.02, 0.005, 0.002):
    sizes = [torch.autograd.functional.jacobian(
        lambda s: torch.softmax(s / tau, dim=-1), torch.tensor(r, dtype=torch.float64)).norm()
        for r in score_rows.values()]
    print(f"{tau:11} " + "".join(f"{float(x):32.3f}" for x in sizes))

# %% [markdown]
# With a clear winner, sharpening starves the scores of gradient: at 0.05 the weights no longer
# respond. With a near tie the response grows like `1/tau` while `tau` is at least about the gap
# between the two scores (0.02); far below it one key wins and the response falls to 0 as well.
# Near the tie, a change in the second decimal of a score swaps which key gets the weight.
#
# ### Low precision can flip a close ranking
#
# float16 has 10 bits of mantissa: between 256 and 512 it holds only multiples of 0.25. Two keys
# score 256.5 and 256.25 against the query; a kernel accumulates the dot products in float16, one
# product at a time.

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


# %%
# Predict: accumulated in float16, which key ranks first, "a" or "b"?
float16_first = ...

# %%
with reveal(float16_first, why=why.float16_first, choices=("a", "b")) as r:
    for name, dot in (("float64", lambda q, k: q @ k), ("float16 accumulation", float16_dot)):
        sa, sb = float(dot(query16, key_a)), float(dot(query16, key_b))
        print(f"{name:21} scores {sa:.2f} and {sb:.2f}: key {'a' if sa > sb else 'b'} ranks first")
    r16 = attention(torch.tensor(query16[None], dtype=torch.float16),
                    torch.tensor(np.stack([key_a, key_b]), dtype=torch.float16),
                    torch.eye(2, dtype=torch.float16))
    print("attention_lab.tensor.attention on float16 inputs (computed in float32): weights",
          np.round(r16.weights.float().numpy()[0], 3), "-> key a keeps the larger weight")
    r.answer = "a" if float16_dot(query16, key_a) > float16_dot(query16, key_b) else "b"

# %% [markdown]
# **Checkpoint.** An attention layer's weights are nearly one-hot at initialisation. What will
# its first training steps do to the scores, and what would you change?
#
# ## 8. Cost: caching, the score matrix, and streaming
#
# Do exercises 16 and 17 (checks 4.1 and 4.2) first: the size of the score tensor and the
# arithmetic of global cross-attention.
#
# A decoder computes one query per step, but the keys `K = H W_k` and values `V = H W_v` of the
# encoder states `H` are the same at every step: a decoder can project them once and keep them.
# Take `S = 512` encoder states of width `D_model = 512`, 8 heads with `D_k = D_v = 64`, and 64
# decoder steps. Count the multiply-adds of the projections and of each step's attention.

# %%
# Predict: how many times more multiply-adds does decoding take without the cache than with it?
cache_ratio = ...

# %%
with reveal(cache_ratio, why=why.cache_ratio, tol=3) as r:
    cost = cache_cost(steps=64, source=512, d_model=512, d_k=64, heads=8)
    print(cost)
    r.answer = round(cost.ratio, 1)

# %% [markdown]
# The score matrix need not be stored either. **Streaming attention** (the online softmax of
# Milakov & Gimelshein 2018, inside FlashAttention) walks over the keys in chunks keeping, per
# query, the largest score so far `m`, the sum `l` of `exp(score - m)` and the sum of
# `exp(score - m)` times each value; a larger maximum rescales both sums by `exp(m_old - m_new)`,
# and `sum / l` is the materialised result. The order of the additions differs, so the cells
# print agreement within a tolerance, not the round-off.

# %%
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
cmp = compare(sizes=(256, 1024, 4096, 16384), T=64, D=32, chunk_size=256,
              repeat=0)  # repeat=3: also time the three paths on this machine
print("S            " + " ".join(f"{S:>9,}" for S in cmp["sizes"]))
for name in ("materialised", "streaming"):
    print(f"{name:12} " + " ".join(f"{b / 1024:7.0f} K" for b in cmp["peak_bytes"][name]),
          "(peak tensor memory)")
print("within 1e-4  " + " ".join(f"{'yes' if ok else 'NO':>9}" for ok in cmp["agrees"]),
      "(streaming vs materialised)")
figures.streaming_plot(cmp["sizes"], cmp["seconds"],
                       {k: cmp["peak_bytes"][k] for k in ("materialised", "streaming")})

# %% [markdown]
# *Figure: peak tensor memory against source length (log scales): the materialised path grows
# in proportion to S, the streaming path stays flat at one chunk.* Run the cell with `repeat=3`
# and a left panel shows the latency of materialised attention, streaming attention and torch's
# SDPA on your machine. The stored notebook shows none: timings change between runs and
# machines (at S = 4,096, runs of this cell so far ranged from all three within a factor of 2
# to one about 9 times slower than another).
#
# The memory column counts tensors torch allocates (blind to fused kernels' scratch space, so
# SDPA is left out); `python -m attention_lab bench streaming` measures the real peak memory.
#
# **Checkpoint.** Streaming removes the `T x S` memory. Does it remove the `T x S` arithmetic?
#
# ## 9. The attention audit
#
# The chapter lists what an audit should record. `audit` takes any attention callable and
# measures what a call shows; what only the module's author knows is *declared*. `audit_model`
# audits the trained model's real attention calls (`repeat=5` adds the latency measured here;
# `repeat=0` leaves it out of the stored notebook):

# %%
print(audit_model(model, source=["abcde", "lkjihgfedcba", "cafe"], repeat=0))

# %% [markdown]
# And three broken attention functions, each a classic bug that keeps the output's shape:

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
# The audit shows that a call is a valid masked retrieval, or that it is not. It cannot show that
# the weights explain the output: the interventions of section 6 belong in the record beside it,
# with what the values contain.
