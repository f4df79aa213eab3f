"""The trained reversal model described and audited: what only its author can declare, and the
chapter's audit of its real attention calls.

    from attention_lab.toy.audit import audit_model, describe
    describe(model)                             # where Q, K, V come from, projections, masks ...
    print(audit_model(model, source=["abcde", "cafe"]))

:func:`audit_model` decodes the sources (with the correct previous outputs fed back), takes the
model's real queries (decoder states), keys and values, and hands its attention to
:func:`attention_lab.analysis.audit.audit` with :func:`describe` as the declared sources.
"""

from __future__ import annotations

from ..analysis.audit import AuditReport, audit
from . import data
from .model import ReversalModel


def _attending(model: ReversalModel):
    """The model's config; a clear error for a model without attention."""
    if not model.config.attends:
        raise ValueError("a model without attention (it sees only the encoder's final state) "
                         "has no attention to describe, audit or measure; use one with "
                         "context='attention', e.g. toy.load()")
    return model.config


def describe(model: ReversalModel) -> dict:
    """The declared part of the audit: sources of the query, keys and values, projections,
    sharing, positions, truncation and cache, and the score function's name (``"score"``)."""
    c = _attending(model)
    if c.score == "additive":
        score = "additive (Bahdanau): v^T tanh(W_q h_t + W_k enc_j)"
    else:
        score = "dot on projections: (W_q h_t) . (W_k enc_j), unscaled"
    if c.values == "embedding":
        value = "source symbol embeddings (unprojected)"
        sharing = "the value table is the encoder's input embedding (shared)"
    else:
        value = f"bidirectional GRU encoder states (unprojected, width {c.value_width})"
        sharing = "keys are W_k x the same encoder states that serve as values"
    return {
        "query": "decoder GRU state h_t (before W_q)",
        "key": "W_k x bidirectional GRU encoder states",
        "value": value,
        "projections": f"W_q ({c.hidden} -> {c.attn}), W_k ({2 * c.hidden} -> {c.attn})"
                       + (f", v ({c.attn} -> 1)" if c.score == "additive" else ""),
        "sharing": sharing,
        "positions": "output step t (1..S) should attend to source position S + 1 - t "
                     "(reversal)",
        "truncation": f"sources of length {c.min_len}..{c.max_len}, no truncation",
        "cache": "keys and values computed once per source and reused at every step",
        "score": score,
    }


def audit_model(model: ReversalModel, source=("abc", "abcdefgh", "lkjihgfedcba"), *,
                window=None, temperature: float = 1.0, repeat: int = 5,
                title: str | None = None) -> AuditReport:
    """Audit the model's attention on ``source`` (a string or strings of its symbols).

    ``window=(centre, half_width)`` (0-based centre, as :meth:`ReversalModel.decode`) and
    ``temperature`` apply at inference. The eligibility is the one decoding used: padding (and
    the window); the steps after a source's end have no eligible key, so they count as
    all-masked rows (the model gives them zero weights)."""
    import torch

    from .._threads import single_thread
    from ..tensor import mask_fill

    c = _attending(model)
    sources = [source] if isinstance(source, str) else list(source)
    toks = [data.encode(s, c.n_symbols, c.max_len, c.min_len) for s in sources]
    tokens, lengths = data.pad_batch(toks, c.max_len)
    with single_thread(), torch.no_grad():
        d = model.decode(tokens, lengths, temperature=temperature, window=window,
                         force=data.reverse_targets(tokens, lengths))
        keys, values, _ = model.encode(torch.from_numpy(tokens), torch.from_numpy(lengths))
    Q = torch.from_numpy(d.queries)                                     # (B, L, hidden)
    declared = describe(model)
    score = declared.pop("score")
    declared["rules"] = "padding (source lengths)" + (
        "" if window is None else f", local window |j - {window[0]}| <= {window[1]} at every step")

    def model_attention(Qx, Kx, Vx, mask):
        with single_thread(), torch.no_grad():
            w, ctx, s = model.attend(Qx, Kx, Vx, mask, temperature)
        return ctx, w, s

    model_attention.__name__ = f"toy reversal model ({c.score} scores, {c.values} values)"
    if title is None:
        title = f"Audit: {model_attention.__name__}, {len(sources)} source(s)"
    report = audit(model_attention, Q, keys, values, mask=torch.from_numpy(d.mask.copy()),
                   sources=declared, score=score, temperature=temperature,
                   fill=mask_fill(torch.float32), dropout="none (no dropout in the model)",
                   repeat=repeat, title=title)
    report.data["decoded"] = d
    return report
