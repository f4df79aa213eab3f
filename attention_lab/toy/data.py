"""The toy task: reverse a sequence of symbols. Its alignment is known exactly.

A source of length S, say ``"abcd"``, has the target ``"dcba"``: output step t must copy source
position ``S - 1 - t``. That is the true alignment the trained model's attention is compared with.

Encoding: the symbols ``a b c ...`` are token ids ``1 .. n_symbols``; id ``0`` is padding. A batch
is an int64 array ``(B, max_len)`` with the valid tokens first and padding after them, plus the
lengths ``(B,)``. Lengths vary, so the padding masks are real.

Held-out split: every possible sequence is assigned once and for all to "train" or "held out" by a
fixed hash of its tokens (about 1 in 10 sequences is held out). Training batches never contain a
held-out sequence, so held-out accuracy measures generalisation to sequences the model never saw.
The split does not depend on the training seed.
"""

from __future__ import annotations

import numpy as np

PAD = 0
ALPHABET = "abcdefghijklmnopqrstuvwxyz"
HELDOUT_EVERY = 10  # 1 in HELDOUT_EVERY sequences is held out
_HASH_SEED = 20240519


def symbols(n_symbols: int) -> str:
    """The first ``n_symbols`` letters: the model's vocabulary, in token-id order 1, 2, ..."""
    if not 1 <= n_symbols <= len(ALPHABET):
        raise ValueError(f"n_symbols must lie in [1, {len(ALPHABET)}], got {n_symbols}")
    return ALPHABET[:n_symbols]


def encode(text: str, n_symbols: int, max_len: int, min_len: int = 1) -> np.ndarray:
    """The token ids (S,) of ``text``; a clear ``ValueError`` for symbols or lengths out of range."""
    if not isinstance(text, str):
        raise TypeError(f"source must be a string of symbols, got {type(text).__name__}")
    vocab = symbols(n_symbols)
    text = text.strip()
    bad = sorted({ch for ch in text if ch not in vocab})
    if bad:
        raise ValueError(f"source {text!r} contains {''.join(bad)!r}; the model knows only the "
                         f"symbols {vocab!r}")
    if not min_len <= len(text) <= max_len:
        raise ValueError(f"source {text!r} has length {len(text)}; the model was trained on "
                         f"lengths {min_len}..{max_len}")
    return np.array([vocab.index(ch) + 1 for ch in text], dtype=np.int64)


def decode(tokens, n_symbols: int) -> str:
    """Symbols of the token ids (padding, id 0, is skipped)."""
    vocab = symbols(n_symbols)
    ids = [int(t) for t in np.asarray(tokens).ravel()]
    bad = [t for t in ids if not 0 <= t <= n_symbols]
    if bad:
        raise ValueError(f"token id {bad[0]} is not a symbol: ids are 1..{n_symbols} "
                         f"({vocab[0]}..{vocab[-1]}), 0 is padding")
    return "".join(vocab[t - 1] for t in ids if t != PAD)


def pad_batch(sequences, max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Token arrays of different lengths -> (tokens (B, max_len), lengths (B,))."""
    seqs = [np.asarray(s, dtype=np.int64) for s in sequences]
    out = np.zeros((len(seqs), max_len), dtype=np.int64)
    lengths = np.zeros(len(seqs), dtype=np.int64)
    for i, s in enumerate(seqs):
        if len(s) > max_len:
            raise ValueError(f"sequence {i} has length {len(s)} > max_len={max_len}")
        out[i, :len(s)] = s
        lengths[i] = len(s)
    return out, lengths


def reverse_targets(tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Targets (B, max_len): the valid part of every row reversed, padding kept at the end."""
    B, L = tokens.shape
    t = np.arange(L)[None, :]
    src = np.clip(lengths[:, None] - 1 - t, 0, L - 1)
    out = np.take_along_axis(tokens, src, axis=1)
    return np.where(t < lengths[:, None], out, PAD)


def true_alignment(lengths, max_len: int) -> np.ndarray:
    """Bool (B, max_len, max_len): ``[b, t, j]`` is True where output step t should attend to j."""
    lengths = np.asarray(lengths)
    t = np.arange(max_len)[:, None]
    j = np.arange(max_len)[None, :]
    return (j == lengths[:, None, None] - 1 - t) & (t < lengths[:, None, None])


def _hash_table(n_symbols: int, max_len: int) -> np.ndarray:
    rng = np.random.default_rng(_HASH_SEED)
    return rng.integers(0, 2**62, size=(max_len, n_symbols + 1), dtype=np.int64)


def is_heldout(tokens: np.ndarray, n_symbols: int) -> np.ndarray:
    """Bool (B,): whether each padded row belongs to the held-out part of the sequence space."""
    tokens = np.asarray(tokens)
    table = _hash_table(n_symbols, tokens.shape[1])
    h = np.bitwise_xor.reduce(table[np.arange(tokens.shape[1])[None, :], tokens], axis=1)
    return (h % HELDOUT_EVERY) == 0


def _task(n_symbols: int, min_len: int, max_len: int) -> None:
    symbols(n_symbols)
    if not 1 <= min_len <= max_len:
        raise ValueError(f"source lengths must satisfy 1 <= min_len <= max_len, got "
                         f"min_len={min_len}, max_len={max_len}")


def sample(rng: np.random.Generator, batch: int, n_symbols: int, min_len: int, max_len: int,
           *, split: str = "train", lengths=None) -> tuple[np.ndarray, np.ndarray]:
    """A batch (tokens (B, max_len), lengths (B,)) from ``split`` ("train" or "heldout").

    Lengths are uniform on ``min_len..max_len`` unless given; symbols are uniform.
    """
    _task(n_symbols, min_len, max_len)
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    if lengths is None:
        lengths = rng.integers(min_len, max_len + 1, size=batch)
    lengths = np.asarray(lengths, dtype=np.int64)
    tokens = np.zeros((len(lengths), max_len), dtype=np.int64)
    todo = np.arange(len(lengths))
    for _ in range(1000):
        draw = rng.integers(1, n_symbols + 1, size=(len(todo), max_len))
        draw = np.where(np.arange(max_len)[None, :] < lengths[todo, None], draw, PAD)
        tokens[todo] = draw
        held = is_heldout(tokens[todo], n_symbols)
        todo = todo[held] if split == "train" else todo[~held]
        if len(todo) == 0:
            return tokens, lengths
    raise RuntimeError("could not draw a batch from the split (is the length range too small?)")


def heldout_set(n: int, n_symbols: int, min_len: int, max_len: int, seed: int = 2024):
    """The fixed held-out evaluation set: ``n`` sequences, lengths cycling through the range."""
    _task(n_symbols, min_len, max_len)
    rng = np.random.default_rng(seed)
    lengths = min_len + np.arange(n) % (max_len - min_len + 1)
    return sample(rng, n, n_symbols, min_len, max_len, split="heldout", lengths=lengths)
