"""The notebook's measurements on the trained reversal model (numbers computed, never typed in).

* :func:`bottleneck_models`, :func:`accuracy_by_length`: the chapter's opening problem measured,
  held-out accuracy against source length with attention and with the encoder's final state only.
* :func:`alignment_report`: attention against the true alignment (output t -> source S-1-t).
* :func:`entropy_by_length`: entropy of the attention rows grouped by source length.
* :func:`perfect_retrieval`: the readout fed the value at the true position (retrieval made
  perfect) with the model's own values and with values that lost detail.
* :func:`readout_step`, :func:`step_of`: one decoder step of the model as an
  :class:`~attention_lab.analysis.explain.ReadoutStep` (its scores, values and the layers after
  the context, with its query held fixed).
* :func:`explanation_table`: every intervention of :mod:`attention_lab.analysis.explain` on many
  steps; :func:`summarise` its headline numbers.

Steps are studied with the correct previous outputs fed to the decoder (teacher forcing), so that
every step asks the question the task defines.
"""

from __future__ import annotations

import copy
import numbers

import numpy as np
import torch

from .. import _validate
from ..analysis import explain
from ..softmax import entropy, softmax
from . import data
from .audit import _attending
from .model import Decoded, ReversalModel, one_thread

#: the source lengths of the bottleneck pair (trained on them, measured on each of them)
BOTTLENECK_LENGTHS = (4, 24)


def bottleneck_models() -> dict:
    """The shipped pair trained by the same code, with the same budget, on sources of 4 to 24
    symbols: ``{"attention": ..., "final state only": ...}`` (additive attention; a decoder that
    sees only the encoder's final state)."""
    from .store import load

    return {"attention": load(lengths=BOTTLENECK_LENGTHS),
            "final state only": load(context="final_state", lengths=BOTTLENECK_LENGTHS)}


@one_thread
def accuracy_by_length(models: dict, lengths=None, *, n: int = 200, seed: int = 11) -> dict:
    """Held-out accuracy of each model against the source length, greedy decoding.

    ``models``: name -> model, all on the same task (symbols and longest source); ``lengths``:
    the source lengths to measure (default: every length the models were trained on). For each
    length, ``n`` held-out sequences of exactly that length (drawn with ``seed``, the same for
    every model). Returns ``{"length": (L,), "n": n, name: {"symbol": (L,), "exact": (L,)}}``:
    the share of output symbols that are right, and of sequences reversed without a mistake.
    """
    if not isinstance(models, dict):
        raise TypeError(f"models must be a dict name -> model, e.g. {{'attention': model}}, got "
                        f"{type(models).__name__}")
    if not models:
        raise ValueError("models is empty; give at least one model, e.g. bottleneck_models()")
    n = _validate.count(n, "n")
    configs = {name: m.config for name, m in models.items()}
    tasks = {(c.n_symbols, c.max_len) for c in configs.values()}
    if len(tasks) != 1:
        raise ValueError(f"the models are not on the same task (symbols, longest source): "
                         f"{ {name: (c.n_symbols, c.max_len) for name, c in configs.items()} }")
    n_symbols, max_len = tasks.pop()
    lo = max(c.min_len for c in configs.values())
    lengths = np.arange(lo, max_len + 1) if lengths is None else np.asarray(lengths)
    if lengths.size and not np.issubdtype(lengths.dtype, np.integer):
        raise TypeError(f"lengths must be whole numbers of symbols, got {lengths.tolist()}")
    if lengths.ndim != 1 or not len(lengths) or not ((lo <= lengths) & (lengths <= max_len)).all():
        raise ValueError(f"lengths must be a list of source lengths the models were trained on, "
                         f"{lo}..{max_len}; got {lengths.tolist()}")
    rng = np.random.default_rng(seed)
    each = np.repeat(lengths, n)                                        # (L * n,)
    tokens, each = data.sample(rng, len(each), n_symbols, lo, max_len, split="heldout",
                               lengths=each)
    targets = data.reverse_targets(tokens, each)
    valid = np.arange(max_len)[None, :] < each[:, None]                 # (L * n, max_len)
    out = {"length": lengths, "n": int(n)}
    for name, model in models.items():
        decoded = np.concatenate([model.decode(tokens[i:i + 1000], each[i:i + 1000]).tokens
                                  for i in range(0, len(tokens), 1000)])
        right = (decoded == targets) & valid                            # (L * n, max_len)
        symbol = right.sum(1).reshape(len(lengths), n) / lengths[:, None]
        exact = (right.sum(1) == each).reshape(len(lengths), n)
        out[name] = {"symbol": symbol.mean(1), "exact": exact.mean(1)}
    return out


def study_set(model: ReversalModel, n: int = 60, seed: int = 7):
    """Held-out sequences (never trained on) with lengths cycling through the trained range."""
    c = model.config
    return data.heldout_set(n, c.n_symbols, c.min_len, c.max_len, seed=seed)


def decode_forced(model: ReversalModel, tokens, lengths, **kwargs) -> Decoded:
    """Decode with the true previous outputs fed back (teacher forcing)."""
    targets = data.reverse_targets(np.asarray(tokens), np.asarray(lengths))
    return model.decode(tokens, lengths, force=targets, **kwargs)


def alignment_report(model: ReversalModel, tokens, lengths) -> dict:
    """Per-step arrays and summary numbers of attention vs the true alignment (greedy decoding)."""
    _attending(model)
    d = model.decode(tokens, lengths)
    L = model.config.max_len
    valid = np.arange(L)[None, :] < d.lengths[:, None]
    truth = d.lengths[:, None] - 1 - np.arange(L)[None, :]
    argmax = d.weights.argmax(-1)
    on_truth = np.take_along_axis(d.weights, np.clip(truth, 0, L - 1)[..., None], -1)[..., 0]
    targets = data.reverse_targets(np.asarray(tokens), d.lengths)
    same_symbol = np.take_along_axis(np.asarray(tokens), argmax, 1) == targets
    return {
        "alignment_accuracy": float(((argmax == truth) & valid).sum() / valid.sum()),
        "mean_weight_on_true_position": float(on_truth[valid].mean()),
        "exact_sequence_accuracy": float(((d.tokens == targets) | ~valid).all(1).mean()),
        # argmax on a wrong position that holds the same symbol: right output, "wrong" attention
        "misaligned_but_same_symbol": int(((argmax != truth) & same_symbol & valid).sum()),
        # the right symbol although the true position got less than a tenth of the weight: the
        # information came from somewhere the weights do not point to
        "right_with_little_weight_on_truth": int(((d.tokens == targets) & (on_truth < 0.1)
                                                  & valid).sum()),
        "n_steps": int(valid.sum()),
        "decoded": d,
    }


def entropy_by_length(model: ReversalModel, tokens, lengths) -> dict:
    """Mean attention entropy (nats) per source length, raw and divided by log S (the entropy of
    uniform attention over S positions)."""
    _attending(model)
    d = decode_forced(model, tokens, lengths)
    L = model.config.max_len
    H = entropy(d.weights)  # (B, L); padding steps have zero weights -> 0
    lengths_seen = np.unique(d.lengths)
    h = [H[d.lengths == S][:, :S] for S in lengths_seen]  # each (sequences of length S, S)
    means = np.array([x.mean() for x in h])
    uniform = np.log(np.maximum(lengths_seen, 2))  # S = 1: entropy 0, normalised 0 (as the audit)
    return {"length": lengths_seen.astype(int), "mean_entropy": means,
            "normalised": np.where(lengths_seen > 1, means / uniform, 0.0),
            "n_steps": np.array([x.size for x in h]),
            "max_len": L}


def source_values(model: ReversalModel, tokens, lengths) -> np.ndarray:
    """The values (B, L, D_v) the model attends over: symbol embeddings or encoder states."""
    with torch.no_grad():
        _, values, _ = model.encode(torch.as_tensor(np.asarray(tokens)),
                                    torch.as_tensor(np.asarray(lengths)))
    return values.double().numpy()


def control_value(model: ReversalModel) -> np.ndarray:
    """The control value (D_v,): the mean value over every position of 200 fixed held-out
    sources, so no particular symbol and no particular position."""
    tokens, lengths = study_set(model, n=200, seed=3)
    values = source_values(model, tokens, lengths)                      # (B, L, D_v)
    valid = np.arange(model.config.max_len)[None, :] < lengths[:, None]  # (B, L)
    return values[valid].mean(0)


@one_thread
def perfect_retrieval(model: ReversalModel, tokens, lengths) -> dict:
    """Symbol accuracy when retrieval is perfect: every step's context is the value at its true
    position (weight 1 there, the correct previous symbols fed back), with the model's own
    values and with values that lost detail (the embedding table's symbols merged in pairs, a/b,
    c/d, ...; every symbol given the same value). Needs ``values="embedding"``."""
    if _attending(model).values != "embedding":
        raise ValueError("perfect_retrieval needs a model whose values are the symbol embeddings")
    if model.config.n_symbols % 2:
        raise ValueError(f"perfect_retrieval merges the symbols in pairs: n_symbols must be even, "
                         f"got {model.config.n_symbols}")
    tokens, lengths = np.asarray(tokens), np.asarray(lengths)
    d = decode_forced(model, tokens, lengths)
    L, n = model.config.max_len, model.config.n_symbols
    valid = np.arange(L)[None, :] < lengths[:, None]                    # (B, T)
    truth = np.clip(lengths[:, None] - 1 - np.arange(L)[None, :], 0, L - 1)
    symbol = np.take_along_axis(tokens, truth, axis=1)                  # (B, T) what to output
    table = model.src_emb.weight.detach()                               # (n + 1, emb)
    pairs = table.clone()
    pairs[1:] = table[1:].reshape(n // 2, 2, -1).mean(1).repeat_interleave(2, dim=0)
    same = table.clone()
    same[1:] = table[1:].mean(0)
    h = torch.from_numpy(d.queries)                                     # (B, T, hidden)
    out = {}
    for name, tab in (("the model's own values", table), ("a/b, c/d, ... merged", pairs),
                      ("every symbol the same value", same)):
        with torch.no_grad():
            logits = model.readout(h, tab[torch.from_numpy(symbol)])    # (B, T, n_symbols)
        right = (logits.argmax(-1).numpy() + 1 == symbol) & valid
        out[name] = float(right.sum() / valid.sum())
    return out


def readout_step(model: ReversalModel, d: Decoded, values, b: int, t: int) -> explain.ReadoutStep:
    """Step t of sequence b of a decoding ``d`` as a ReadoutStep: its scores, its values (``values``
    (B, L, D_v) from :func:`source_values`), its mask, and the layers after the context with the
    decoder state held fixed. Its readout maps one context (D_v,) or several (N, D_v) to output
    probabilities (C,) or (N, C)."""
    S = int(d.lengths[b])
    h = torch.from_numpy(d.queries[b, t]).float()                       # (hidden,)

    def readout(contexts):
        c = torch.as_tensor(np.asarray(contexts), dtype=torch.float32)  # (D_v,) or (N, D_v)
        with torch.no_grad():
            logits = model.readout(h.expand(*c.shape[:-1], -1), c)      # (..., C)
        return torch.softmax(logits.double(), dim=-1).numpy()

    return explain.ReadoutStep(scores=d.scores[b, t, :S].astype(float), values=values[b, :S],
                               mask=d.mask[b, t, :S], readout=readout)


def step_of(model: ReversalModel, source: str, step: int) -> explain.ReadoutStep:
    """Output step ``step`` (1..S) of reversing ``source``, with the correct previous symbols fed
    back, as a ReadoutStep: its scores (S,), values (S, D_v), mask and readout (context ->
    output probabilities over the symbols). The exercise notebook's way into the model."""
    c = model.config
    toks = data.encode(source, c.n_symbols, c.max_len, c.min_len)
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        _validate.count(step, "step")  # raises: a TypeError naming what step is
    if not 1 <= step <= len(toks):
        raise ValueError(f"step must lie in 1..{len(toks)} for the source {source!r}, got {step}")
    tokens, lengths = data.pad_batch([toks], c.max_len)
    d = decode_forced(model, tokens, lengths)
    return readout_step(model, d, source_values(model, tokens, lengths), 0, step - 1)


@one_thread
def gradients_of_sequence(model: ReversalModel, tokens, lengths, b: int) -> np.ndarray:
    """Gradient importance (S, S) for sequence b: row t holds, for each source position j, the
    norm of the gradient of the log-probability of step t's correct symbol with respect to
    position j's embedding (which feeds the encoder, hence the keys, and the values).

    One forward and one backward pass: the sequence is copied S times and copy t contributes only
    its step t to the summed objective, so each copy's gradient is its own step's gradient.
    Computed in float64, on a copy of the model: float32 gradient norms of two positions can lie
    within the round-off of the CPU's kernels (1e-6 apart), which would let Kendall tau's order of
    them, and a stored figure, change from one machine to another.
    """
    model = copy.deepcopy(model).double()
    S = int(np.asarray(lengths)[b])
    tok = torch.as_tensor(np.asarray(tokens)[b:b + 1]).expand(S, -1).contiguous()
    ln = torch.as_tensor(np.asarray(lengths)[b:b + 1]).expand(S).contiguous()
    targets = torch.from_numpy(data.reverse_targets(tok.numpy(), ln.numpy()))
    emb = model.src_emb(tok).detach()                                    # (S, L, emb)
    with torch.enable_grad():
        e = emb[:, :S].clone().requires_grad_(True)
        logits = model(tok, ln, targets, embedded=torch.cat([e, emb[:, S:]], dim=1))
        logp = torch.log_softmax(logits, -1)
        steps = torch.arange(S)
        picked = logp[steps, steps, targets[steps, steps] - 1]
        (g,) = torch.autograd.grad(picked.sum(), e)
    return g.norm(dim=-1).numpy()                                        # (copy t, position j)


@one_thread
def explanation_table(model: ReversalModel, tokens, lengths, *, n_permutations: int = 100,
                      seed: int = 0, gradients: bool = True) -> dict:
    """Every intervention on every valid step of the given sequences; arrays with one entry per
    step (sequence b, step t): the maximum weight, the median permutation TVD, the TVDs of the
    uniform baseline, of replacing the top value by the control value and of leaving the top
    position out (and whether each changes the predicted symbol), Kendall tau of leave-one-out
    and gradient importance against the weights, and whether each importance's top position is
    the attention's."""
    tokens, lengths = np.asarray(tokens), np.asarray(lengths)
    d = decode_forced(model, tokens, lengths)
    values = source_values(model, tokens, lengths)
    control = control_value(model)
    rows = []
    for b in range(len(tokens)):
        grads = gradients_of_sequence(model, tokens, lengths, b) if gradients else None
        for t in range(int(lengths[b])):
            step = readout_step(model, d, values, b, t)
            grad = None if grads is None else grads[t]
            r = explain.explain_step(step, control, n_permutations=n_permutations,
                                     seed=seed + 1000 * b + t, gradient=grad)
            top = int(np.argmax(r.weights))
            left_out = step.mask.copy()
            left_out[top] = False
            without_top = step.outputs(softmax(step.scores, mask=left_out))
            rows.append({
                "b": b, "t": t, "length": int(lengths[b]), "max_weight": float(r.weights.max()),
                "perm_median": r.permutation.median, "uniform": r.uniform.tvd,
                "replace": r.replace.tvd, "replace_changed": r.replace.prediction_changed,
                "uniform_changed": r.uniform.prediction_changed, "loo_top": float(r.loo[top]),
                "loo_top_changed": int(np.argmax(without_top)) != int(np.argmax(step.probs)),
                "tau_loo": r.tau_loo, "tau_gradient": np.nan if grad is None else r.tau_gradient,
                "top1_loo": top == int(np.nanargmax(r.loo)),
                "top1_gradient": grad is not None and top == int(np.argmax(grad)),
            })
    return {k: np.array([row[k] for row in rows]) for k in rows[0]}


def summarise(tab: dict) -> dict:
    """The explanation table's headline numbers (medians and fractions over steps), rounded."""
    def r(x):
        return round(float(x), 3)
    grads = not np.isnan(tab["tau_gradient"]).all()  # False: computed with gradients=False
    return {
        "steps": int(len(tab["b"])),
        "median max weight": r(np.median(tab["max_weight"])),
        "median TVD, permuted weights": r(np.median(tab["perm_median"])),
        "median TVD, uniform weights": r(np.median(tab["uniform"])),
        "median TVD, top value replaced": r(np.median(tab["replace"])),
        "share of steps whose symbol changes, top value replaced": r(tab["replace_changed"].mean()),
        "share of steps whose symbol changes, uniform weights": r(tab["uniform_changed"].mean()),
        "median Kendall tau, attention vs leave-one-out": r(np.nanmedian(tab["tau_loo"])),
        "median Kendall tau, attention vs gradient": r(np.nanmedian(tab["tau_gradient"]))
        if grads else None,
        "share of steps, same top position as leave-one-out": r(tab["top1_loo"].mean()),
        "share of steps, same top position as gradient": r(tab["top1_gradient"].mean())
        if grads else None,
    }
