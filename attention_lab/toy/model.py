"""A small encoder-decoder with attention that learns to reverse sequences.

Who plays which role (the chapter's query / key / value split made concrete):

* **keys**: a bidirectional GRU reads the source (packed, so padding never enters it); its state at
  position j, projected by ``W_k``, is key ``k_j``. The backward direction lets a key know how far
  its position is from the end of the sequence, which is what reversal needs.
* **values** (``values="embedding"``, the shipped models): the embedding of the source symbol at
  position j, unprojected (the same table the encoder reads). A value carries its own symbol and
  nothing else, so the only way for the decoder to output the right symbol is to put its weight on
  the right position: the true alignment (output step t -> source position S-1-t) is the only
  solution, and the attention maps can be scored against it.
  ``values="encoder"`` (the contrast model): the bidirectional GRU's state at position j, a
  *contextual* value that also carries what the encoder read around j, so neighbouring values are
  partly redundant (the setting of Jain & Wallace's text classifiers).
* **queries**: a GRU decoder starts from a learned state and reads the previous output symbol; its
  state ``h_t`` is the query of step t.
* **scores**: ``score="additive"`` (Bahdanau): ``e_tj = v^T tanh(W_q h_t + W_k enc_j)``;
  ``score="dot"``: ``e_tj = (W_q h_t) . (W_k enc_j)``, unscaled (the chapter's dot product, on
  projected queries and keys).
* **weights**: softmax over the eligible source positions (key axis, -1). Padding is masked with
  the conventions of :mod:`attention_lab.tensor` (bool mask, True = eligible; fill
  ``torch.finfo(dtype).min``, then exact zeros; an all-masked row gives zero weights and a zero
  context). The dot path calls :func:`attention_lab.tensor.attention` itself.
* **output**: ``logits = W_o tanh(W_c [h_t; c_t])`` (Luong's attentional hidden state).

At inference, :meth:`ReversalModel.decode` can divide the scores by a temperature and restrict
attention to a local window ``|j - centre| <= half_width`` (the chapter's global vs local access).

**Without attention** (``context="final_state"``, :class:`FinalStateModel`; the chapter's "The
problem"): the same encoder, decoder and readout, but the decoder sees only the encoder's final
state ``s = [forward state after the last symbol; backward state after the first]`` (width
2 x hidden), a fixed-width summary of the whole source. It starts from ``tanh(W_s s)``, reads
``s`` beside the previous symbol at every step, and its context is ``c_t = s`` at every step:
everything the decoder knows about the source passes through those 2 x hidden numbers. (It gets
the summary in every place a decoder without attention can use it, so the comparison is not won
by starving it.)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from .. import _validate
from .. import tensor
from .._threads import one_thread
from . import data

SCORES = ("additive", "dot")
VALUES = ("embedding", "encoder")
#: what the decoder's context is: attention's retrieval, or the encoder's final state every step
CONTEXTS = ("attention", "final_state")
#: the lengths of the first shipped models (a name mentions other lengths)
DEFAULT_LENGTHS = (3, 12)
#: config fields added after the first shipped models, with their defaults: written to a weights
#: file only when they differ, so retraining a model of before reproduces its file byte for byte
LATER_FIELDS = {"values": "embedding", "context": "attention"}


@dataclass(frozen=True)
class ToyConfig:
    """Everything that defines the model's architecture and its task."""

    score: str = "additive"
    values: str = "embedding"
    context: str = "attention"
    n_symbols: int = 12
    min_len: int = 3
    max_len: int = 12
    emb: int = 32
    hidden: int = 64
    attn: int = 32

    def __post_init__(self):
        for name, allowed in (("score", SCORES), ("values", VALUES), ("context", CONTEXTS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.context == "final_state" and (self.score, self.values) != ("additive",
                                                                            "embedding"):
            raise ValueError(f"a model without attention (context='final_state') has no score "
                             f"function and no values; got score={self.score!r}, "
                             f"values={self.values!r}")
        for name in ("n_symbols", "min_len", "max_len", "emb", "hidden", "attn"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.min_len > self.max_len:
            raise ValueError(f"min_len={self.min_len} > max_len={self.max_len}")
        data.symbols(self.n_symbols)

    def to_dict(self) -> dict:
        d = asdict(self)
        for name, default in LATER_FIELDS.items():
            if d[name] == default:
                del d[name]
        return d

    @property
    def value_width(self) -> int:
        """D_v, the context's width: the symbol embedding's, or the encoder state's (2 x hidden,
        also the width of the final state a model without attention reads)."""
        return self.emb if self.values == "embedding" and self.attends else 2 * self.hidden

    @property
    def attends(self) -> bool:
        """Whether the decoder attends (False: it sees only the encoder's final state)."""
        return self.context == "attention"

    @property
    def lengths(self) -> tuple[int, int]:
        """(min_len, max_len): the source lengths of the task."""
        return (self.min_len, self.max_len)

    @property
    def name(self) -> str:
        """The weights' file name: ``reversal_<score>`` (``_encoder`` added for contextual
        values), ``reversal_final_state`` without attention, and ``_len<min>to<max>`` for lengths
        other than 3..12."""
        if self.attends:
            name = f"reversal_{self.score}" + ("" if self.values == "embedding" else "_encoder")
        else:
            name = "reversal_final_state"
        if self.lengths != DEFAULT_LENGTHS:
            name += f"_len{self.min_len}to{self.max_len}"
        return name

    @classmethod
    def from_dict(cls, d: dict) -> ToyConfig:
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown config field(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**d)

    @property
    def vocab(self) -> str:
        return data.symbols(self.n_symbols)


@dataclass
class Decoded:
    """What one batched decoding computed. numpy arrays; B sequences, L = max_len.

    tokens     (B, L) the output symbols (0 after each sequence's length)
    logits     (B, L, n_symbols) output scores per step
    weights    (B, L, L) attention of output step t over source position j (0 where masked)
    scores     (B, L, L) attention scores (before temperature and masks)
    mask       (B, L, L) the eligibility used (padding & window), True = eligible
    lengths    (B,)
    """

    tokens: np.ndarray
    logits: np.ndarray
    weights: np.ndarray
    scores: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray
    queries: np.ndarray = field(repr=False, default=None)
    contexts: np.ndarray = field(repr=False, default=None)


class ReversalModel(nn.Module):
    """The encoder-decoder; see the module docstring for the roles of its parts.

    What the decoder reads from the encoder is four small methods (its *memory*, its starting
    state, its inputs, its context); :class:`FinalStateModel` changes only those four, so both
    kinds are trained, decoded and evaluated by the same code."""

    def __init__(self, config: ToyConfig = ToyConfig()):
        super().__init__()
        if not config.attends:
            raise ValueError("ReversalModel attends; build a model without attention with "
                             "FinalStateModel or toy.model.build(config)")
        self._layers(config)

    def _layers(self, c: ToyConfig) -> None:
        """Both kinds' layers, created in this order (the seeded initialisation of the shipped
        weights depends on it)."""
        self.config = c
        self.src_emb = nn.Embedding(c.n_symbols + 1, c.emb, padding_idx=data.PAD)
        self.encoder = nn.GRU(c.emb, c.hidden, batch_first=True, bidirectional=True)
        if c.attends:
            self.W_k = nn.Linear(2 * c.hidden, c.attn, bias=False)
            self.W_q = nn.Linear(c.hidden, c.attn, bias=c.score == "additive")
            if c.score == "additive":
                self.v = nn.Linear(c.attn, 1, bias=False)
            self.h0 = nn.Parameter(torch.zeros(c.hidden))
        else:
            self.W_s = nn.Linear(2 * c.hidden, c.hidden)  # the final state -> the starting state
        self.tgt_emb = nn.Embedding(c.n_symbols + 1, c.emb)  # id 0 = start of output
        # without attention the decoder reads the final state (2 x hidden) beside each symbol
        self.decoder = nn.GRU(c.emb + (0 if c.attends else 2 * c.hidden), c.hidden,
                              batch_first=True)
        self.W_c = nn.Linear(c.hidden + c.value_width, c.hidden)
        self.W_o = nn.Linear(c.hidden, c.n_symbols)

    # --- the pieces -----------------------------------------------------------------------
    def _encoder_run(self, tokens: torch.Tensor, lengths: torch.Tensor, embedded=None):
        """-> source embeddings (B, L, emb), encoder states (B, L, 2*hidden), final states
        (2, B, hidden) (forward after the last symbol, backward after the first)."""
        emb = self.src_emb(tokens) if embedded is None else embedded
        packed = nn.utils.rnn.pack_padded_sequence(emb, lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        out, final = self.encoder(packed)
        enc, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                  total_length=tokens.shape[1])
        return emb, enc, final

    def encode(self, tokens: torch.Tensor, lengths: torch.Tensor, embedded=None):
        """-> keys (B, L, attn), values (B, L, D_v), encoder states (B, L, 2*hidden).

        ``embedded`` (B, L, emb) replaces the source embeddings (for gradients with respect to
        them); they feed the encoder (hence the keys) and the values.
        """
        emb, enc, _ = self._encoder_run(tokens, lengths, embedded)
        values = emb if self.config.values == "embedding" else enc
        return self.W_k(enc), values, enc

    def attend(self, h, keys, values, mask, temperature: float = 1.0):
        """Attention of queries ``h`` (B, T, hidden) over ``keys`` (B, S, attn) and ``values``
        (B, S, D_v) with ``mask`` (B, T, S), True = eligible -> weights (B, T, S), context
        (B, T, D_v), scores (B, T, S) before the temperature and the mask."""
        q = self.W_q(h)                                                          # (B, T, attn)
        if self.config.score == "dot":
            scores = torch.matmul(q, keys.transpose(-2, -1))                     # (B, T, S)
            res = tensor.attention(q, keys, values, mask=mask, temperature=temperature)
            return res.weights, res.context, scores
        hidden = torch.tanh(q[:, :, None, :] + keys[:, None, :, :])              # (B, T, S, attn)
        scores = self.v(hidden).squeeze(-1)                                      # (B, T, S)
        weights = masked_softmax(scores, mask, temperature)                      # (B, T, S)
        return weights, torch.matmul(weights, values), scores                    # ..., (B, T, D_v)

    def readout(self, h: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """Output logits (..., n_symbols) from the decoder state h (..., hidden) and the context
        (..., D_v): Luong's attentional state ``tanh(W_c [h; c])``, then ``W_o``."""
        return self.W_o(torch.tanh(self.W_c(torch.cat([h, context], dim=-1))))

    # --- what the decoder reads from the encoder (FinalStateModel changes these four) -------
    def _memory(self, tokens, lengths, embedded=None):
        """The source as the decoder may read it: (keys (B, S, attn), values (B, S, D_v))."""
        keys, values, _ = self.encode(tokens, lengths, embedded)
        return keys, values

    def _start(self, memory, B: int) -> torch.Tensor:
        """The decoder's starting state (1, B, hidden): learned, the same for every source."""
        return self.h0.expand(1, B, -1).contiguous()

    def _inputs(self, prev: torch.Tensor, memory) -> torch.Tensor:
        """The decoder's inputs (B, T, emb): the previous symbols (B, T), embedded."""
        return self.tgt_emb(prev)

    def _context(self, h, memory, mask, temperature: float):
        """-> weights (B, T, S), context (B, T, D_v), scores (B, T, S) for decoder states h."""
        keys, values = memory
        return self.attend(h, keys, values, mask, temperature)

    # --- training ---------------------------------------------------------------------------
    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor,
                targets: torch.Tensor, embedded=None) -> torch.Tensor:
        """Teacher-forced logits (B, T, n_symbols) for the reversal ``targets``, T = max length.

        With teacher forcing nothing in the decoder's recurrence depends on the attention, so the
        decoder states of all steps come from one GRU call and all steps attend at once.
        ``embedded``: see :meth:`encode`.
        """
        B, L = tokens.shape
        steps = int(lengths.max())
        memory = self._memory(tokens, lengths, embedded)
        mask = (torch.arange(L)[None, :] < lengths[:, None])[:, None, :].expand(B, steps, L)
        prev = torch.cat([torch.zeros(B, 1, dtype=torch.long), targets[:, :steps - 1]], dim=1)
        h, _ = self.decoder(self._inputs(prev, memory), self._start(memory, B))
        _, context, _ = self._context(h, memory, mask, 1.0)
        return self.readout(h, context)

    # --- inference ----------------------------------------------------------------------------
    @torch.no_grad()
    @one_thread
    def decode(self, tokens, lengths, *, temperature: float = 1.0, window=None,
               extra_mask=None, force=None) -> Decoded:
        """Greedy decoding of a batch (numpy or torch ``tokens`` (B, L), ``lengths`` (B,)).

        ``temperature`` divides the scores; ``window=(centre, half_width)`` keeps only source
        positions with ``|j - centre| <= half_width`` eligible at every step (0-based; a window that
        holds no valid position gives an all-masked row: zero weights, zero context, as the
        package's ``empty="zeros"`` policy). ``extra_mask`` (B, L, L) bool is ANDed in as well.
        ``force`` (B, L): feed these symbols as the previous outputs instead of the model's own
        (teacher forcing), e.g. to study each step with a correct prefix.
        A model without attention takes none of temperature, window and extra_mask, and its
        Decoded has no weights, scores or mask (None).
        """
        tokens, lengths = self._batch(tokens, lengths)
        tau = _validate.temperature(temperature, "temperature")
        attends = self.config.attends
        if not attends and (tau != 1.0 or window is not None or extra_mask is not None):
            raise ValueError("this model has no attention (it sees only the encoder's final "
                             "state): temperature, window and extra_mask do not apply")
        B, L = tokens.shape
        memory = self._memory(tokens, lengths)
        valid = torch.arange(L)[None, :] < lengths[:, None]  # (B, L): source positions, output steps
        step_mask = valid[:, None, :].expand(B, L, L).clone()
        if window is not None:
            step_mask &= torch.from_numpy(window_mask(window, L))[None, None, :]
        if extra_mask is not None:
            em = torch.as_tensor(np.asarray(extra_mask))
            if em.dtype != torch.bool or em.shape != (B, L, L):
                raise ValueError(f"extra_mask must be a bool array of shape {(B, L, L)}, got "
                                 f"{em.dtype} {tuple(em.shape)}")
            step_mask &= em
        h = self._start(memory, B)
        prev = torch.zeros(B, dtype=torch.long)
        steps = int(lengths.max())
        out_tok = torch.zeros(B, L, dtype=torch.long)
        out_logits = torch.zeros(B, L, self.config.n_symbols)
        out_w = torch.zeros(B, L, L)
        out_s = torch.zeros(B, L, L)
        out_q = torch.zeros(B, L, self.config.hidden)
        out_c = torch.zeros(B, L, self.config.value_width)
        force_t = None if force is None else torch.as_tensor(np.asarray(force), dtype=torch.long)
        if force_t is not None and (tuple(force_t.shape) != (B, L) or (force_t < 0).any()
                                    or (force_t > self.config.n_symbols).any()):
            raise ValueError(f"force must have shape {(B, L)} and hold token ids "
                             f"0..{self.config.n_symbols} (the previous outputs to feed, e.g. "
                             f"data.reverse_targets(tokens, lengths)); got shape "
                             f"{tuple(force_t.shape)}")
        for t in range(steps):
            y, h = self.decoder(self._inputs(prev[:, None], memory), h)
            w, c, s = self._context(y, memory, step_mask[:, t:t + 1], tau)
            logits = self.readout(y, c)[:, 0]
            tok = logits.argmax(-1) + 1
            out_tok[:, t], out_logits[:, t] = tok, logits
            if attends:
                out_w[:, t], out_s[:, t] = w[:, 0], s[:, 0]
            out_q[:, t], out_c[:, t] = y[:, 0], c[:, 0]
            prev = tok if force_t is None else force_t[:, t]
        out_tok = out_tok * valid
        out_w = out_w * valid[:, :, None]
        return Decoded(tokens=out_tok.numpy(), logits=out_logits.numpy(),
                       weights=out_w.numpy() if attends else None,
                       scores=out_s.numpy() if attends else None,
                       mask=(step_mask & valid[:, :, None]).numpy() if attends else None,
                       lengths=lengths.numpy(), queries=out_q.numpy(), contexts=out_c.numpy())

    def reverse(self, text: str, **kwargs) -> str:
        """Decode one typed source, e.g. ``model.reverse("abcd") -> "dcba"`` when it works."""
        c = self.config
        toks = data.encode(text, c.n_symbols, c.max_len, c.min_len)
        tokens, lengths = data.pad_batch([toks], c.max_len)
        return data.decode(self.decode(tokens, lengths, **kwargs).tokens[0], c.n_symbols)

    def _batch(self, tokens, lengths):
        c = self.config
        tokens, lengths = np.asarray(tokens), np.asarray(lengths)
        for name, a in (("tokens", tokens), ("lengths", lengths)):
            if a.size and not np.issubdtype(a.dtype, np.integer):
                raise TypeError(f"{name} must hold whole numbers, got {a.dtype} "
                                f"(token ids 0..{c.n_symbols}; lengths count symbols)")
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        lengths = torch.as_tensor(lengths, dtype=torch.long)
        if tokens.dim() != 2 or tokens.shape[1] != c.max_len or not tokens.shape[0]:
            raise ValueError(f"tokens must have shape (B, {c.max_len}) with B >= 1 sequences, got "
                             f"{tuple(tokens.shape)}")
        if lengths.shape != tokens.shape[:1]:
            raise ValueError(f"lengths must have shape ({tokens.shape[0]},), got "
                             f"{tuple(lengths.shape)}")
        if (lengths < 1).any() or (lengths > c.max_len).any():
            raise ValueError(f"lengths must lie in 1..{c.max_len}, got {lengths.tolist()}")
        if (tokens < 0).any() or (tokens > c.n_symbols).any():
            raise ValueError(f"tokens must lie in 0..{c.n_symbols}")
        valid = torch.arange(c.max_len)[None, :] < lengths[:, None]                # (B, L)
        bad = ((tokens != data.PAD) != valid).any(1)                               # (B,)
        if bad.any():
            b = int(bad.nonzero()[0, 0])
            raise ValueError(f"row {b} of tokens is not lengths[{b}] = {int(lengths[b])} "
                             f"symbols followed by padding ({data.PAD}); it holds "
                             f"{int((tokens[b] != data.PAD).sum())} symbols. lengths must count "
                             f"each row's symbols, which come first (data.pad_batch)")
        return tokens, lengths

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class FinalStateModel(ReversalModel):
    """The encoder-decoder without attention (``context="final_state"``): the decoder sees only
    the encoder's final state s (B, 2*hidden), as its starting state ``tanh(W_s s)``, beside the
    previous symbol at every step, and as its context ``c_t = s`` at every step. The encoder,
    the decoder's recurrence, the readout and the training are those of :class:`ReversalModel`.
    """

    def __init__(self, config: ToyConfig = ToyConfig(context="final_state")):
        nn.Module.__init__(self)
        if config.attends:
            raise ValueError("FinalStateModel has no attention: give it a config with "
                             "context='final_state'")
        self._layers(config)

    def final_state(self, tokens: torch.Tensor, lengths: torch.Tensor, embedded=None):
        """The fixed-width summary s (B, 2*hidden): the forward GRU's state after the last
        symbol beside the backward GRU's state after the first."""
        _, _, final = self._encoder_run(tokens, lengths, embedded)             # (2, B, hidden)
        return torch.cat([final[0], final[1]], dim=-1)                         # (B, 2*hidden)

    def encode(self, tokens, lengths, embedded=None):
        raise TypeError("a model without attention has no keys or values; its decoder reads "
                        "final_state(tokens, lengths)")

    def attend(self, h, keys, values, mask, temperature: float = 1.0):
        raise TypeError("a model without attention does not attend")

    def _memory(self, tokens, lengths, embedded=None):
        return self.final_state(tokens, lengths, embedded)                     # (B, 2*hidden)

    def _start(self, s, B: int) -> torch.Tensor:
        return torch.tanh(self.W_s(s))[None]                                   # (1, B, hidden)

    def _inputs(self, prev, s) -> torch.Tensor:
        e = self.tgt_emb(prev)                                                 # (B, T, emb)
        return torch.cat([e, s[:, None, :].expand(-1, e.shape[1], -1)], -1)    # (B, T, emb+2H)

    def _context(self, h, s, mask, temperature: float):
        return None, s[:, None, :].expand(-1, h.shape[1], -1), None            # c_t = s


def build(config: ToyConfig) -> ReversalModel:
    """A fresh model of the kind ``config`` describes: :class:`ReversalModel` with attention,
    :class:`FinalStateModel` for ``context="final_state"``."""
    return ReversalModel(config) if config.attends else FinalStateModel(config)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, temperature: float = 1.0):
    """Softmax over the last axis with the package's conventions: ``mask`` True = eligible, fill
    ``torch.finfo(dtype).min`` before the softmax, exact zeros after it (so an all-masked row is
    all zeros, with zero gradient, never NaN)."""
    filled = (scores / temperature).masked_fill(~mask, tensor.mask_fill(scores.dtype))
    return torch.softmax(filled, dim=-1).masked_fill(~mask, 0.0)


def window_mask(window, L: int) -> np.ndarray:
    """(L,) bool: ``|j - centre| <= half_width`` for ``window=(centre, half_width)``."""
    try:
        centre, half = window
    except (TypeError, ValueError):
        raise TypeError(f"window must be a pair (centre, half_width), got {window!r}") from None
    from ..masks import local_mask

    return local_mask(float(centre), float(half), L)


@one_thread
def evaluate(model: ReversalModel, tokens, lengths, *, batch: int = 1000, **kwargs) -> dict:
    """Exact-sequence accuracy, per-symbol accuracy and alignment accuracy on a labelled set.

    Alignment accuracy: the fraction of output steps whose largest attention weight sits on the
    true source position S-1-t (None for a model without attention).
    """
    c = model.config
    model._batch(tokens, lengths)  # decode's checks, before the set's size divides anything
    batch = _validate.count(batch, "batch")
    tokens, lengths = np.asarray(tokens), np.asarray(lengths)
    targets = data.reverse_targets(tokens, lengths)
    exact = sym = align = steps = 0
    for i in range(0, len(tokens), batch):
        tk, ln, tg = tokens[i:i + batch], lengths[i:i + batch], targets[i:i + batch]
        d = model.decode(tk, ln, **kwargs)
        valid = np.arange(c.max_len)[None, :] < ln[:, None]
        ok = (d.tokens == tg) | ~valid
        exact += int(ok.all(axis=1).sum())
        sym += int((ok & valid).sum())
        steps += int(valid.sum())
        if c.attends:
            truth = ln[:, None] - 1 - np.arange(c.max_len)[None, :]
            align += int(((d.weights.argmax(-1) == truth) & valid).sum())
    n = len(tokens)
    return {"n_sequences": n, "exact_sequence_accuracy": exact / n,
            "symbol_accuracy": sym / steps,
            "alignment_accuracy": align / steps if c.attends else None}
