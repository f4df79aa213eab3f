"""A tiny attention encoder-decoder on a task with a known alignment: sequence reversal.

    from attention_lab import toy
    model = toy.load()                # the shipped, trained model (additive scores)
    model.reverse("abcdef")           # -> "fedcba"
    d = model.decode(tokens, lengths) # weights (B, T, S), tokens, logits ...
    toy.load(score="dot"), toy.load(values="encoder")   # the two other shipped models

Modules: :mod:`.data` (task, vocabulary, held-out split), :mod:`.model` (the network, decoding,
evaluation), :mod:`.train` (``python -m attention_lab train``), :mod:`.store` (save / load with
checks), :mod:`.experiments` (notebook 04's measurements), :mod:`.audit` (the model's declared
sources and audit), :mod:`.explorer` and :mod:`.figures` (the model explorer, the notebook's
figures). Importing this package imports torch.
"""

from __future__ import annotations

from .data import decode, encode, heldout_set
from .model import Decoded, ReversalModel, ToyConfig, evaluate
from .store import WeightsError, load, read_metadata, shipped

__all__ = ["decode", "encode", "heldout_set", "Decoded", "ReversalModel", "ToyConfig",
           "evaluate", "WeightsError", "load", "read_metadata", "shipped"]
