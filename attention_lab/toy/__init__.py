"""A tiny attention encoder-decoder on a task with a known alignment: sequence reversal.

    from attention_lab import toy
    model = toy.load()                # the shipped, trained model (additive scores)
    model.reverse("abcdef")           # -> "fedcba"
    d = model.decode(tokens, lengths) # weights (B, T, S), tokens, logits ...
    toy.load(score="dot"), toy.load(values="encoder")   # the two other shipped models
    toy.load(lengths=(4, 24)), toy.load(context="final_state", lengths=(4, 24))
                                      # the bottleneck pair: with attention, final state only

Modules: :mod:`.data` (task, vocabulary, held-out split), :mod:`.model` (the network, its variant
without attention, decoding, evaluation), :mod:`.train` (``python -m attention_lab train``),
:mod:`.store` (save / load with checks), :mod:`.experiments` (the notebooks' measurements),
:mod:`.audit` (the model's declared sources and audit), :mod:`.explorer` and :mod:`.figures` (the
model explorer, the notebooks' figures). The names below load their module on first use: torch is
imported by ``toy.load``, ``toy.ReversalModel`` ..., not by ``import attention_lab.toy.explorer``
(the lecture demo's kernels show the model explorer with the demo's shared model and never import
torch).
"""

from __future__ import annotations

import importlib

#: name -> the submodule that defines it
_EXPORTS = {
    "decode": "data", "encode": "data", "heldout_set": "data",
    "Decoded": "model", "FinalStateModel": "model", "ReversalModel": "model",
    "ToyConfig": "model", "evaluate": "model",
    "WeightsError": "store", "load": "store", "read_metadata": "store", "shipped": "store",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'attention_lab.toy' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_EXPORTS])
