"""Saving and loading trained reversal models, with their provenance.

A model is two files side by side:

* ``<name>.pt`` (:attr:`~attention_lab.toy.model.ToyConfig.name`: ``reversal_<score>``,
  ``reversal_<score>_encoder`` for contextual values, ``reversal_final_state_len4to24`` for the
  model without attention on sources of 4 to 24 symbols ...): ``torch.save``
  of ``{"format", "config", "state_dict"}`` (tensors and plain Python values only, so it loads
  with ``torch.load(weights_only=True)``: no code is run);
* the ``.json`` beside it: the config, the training settings and seed, the library versions, the
  metrics on the held-out set, the training time and loss curve summary, and the SHA-256 of the
  ``.pt`` file.

:func:`load` checks all of it and raises :class:`WeightsError` (a ``ValueError``) with a message
that says what is wrong: a missing file, a ``.pt`` whose hash differs from the one recorded
(corrupt or replaced), a file torch cannot read, a config that disagrees between the two files, or
weights whose names or shapes do not fit the model the config describes.
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

FORMAT = "attention-lab/toy-reversal/1"
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"


class WeightsError(ValueError):
    """A weights file that cannot be loaded, and why."""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def versions() -> dict:
    import numpy
    import torch

    from .. import __version__

    return {"python": platform.python_version(), "torch": torch.__version__,
            "numpy": numpy.__version__, "attention_lab": __version__,
            "cpu": torch.backends.cpu.get_cpu_capability()}  # the kernels: a run's floats differ


def save(model, path, *, train_config: dict, record: dict) -> Path:
    """Write ``path`` (.pt) and its ``.json`` record; returns the .pt path."""
    import torch

    path = Path(path)
    if path.suffix != ".pt":
        raise ValueError(f"path must end in .pt, got {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    cfg = model.config.to_dict()
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    torch.save({"format": FORMAT, "config": cfg, "state_dict": state}, path)
    losses = record.get("losses", [])
    meta = {
        "format": FORMAT,
        "weights_file": path.name,
        "sha256": sha256(path),
        "bytes": path.stat().st_size,
        "n_parameters": int(model.n_parameters()),
        "config": cfg,
        "train": train_config,
        "seed": train_config.get("seed"),
        "versions": versions(),
        "train_seconds": (round(float(record["train_seconds"]), 2)
                          if "train_seconds" in record else None),
        "loss": {"first": round(losses[0], 5) if losses else None,
                 "last": round(losses[-1], 6) if losses else None,
                 "mean_last_50": round(sum(losses[-50:]) / len(losses[-50:]), 6) if losses
                 else None},
        "metrics": {"heldout": record.get("heldout")},
    }
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    return path


def shipped(score: str = "additive", values: str = "embedding", *, context: str = "attention",
            lengths: tuple[int, int] = (3, 12)) -> Path:
    """Path of the weights shipped in the package.

    On sources of 3 to 12 symbols: ``score`` "additive" or "dot", ``values`` "embedding" or
    "encoder" (the contrast model, additive scores only). On ``lengths=(4, 24)`` (the bottleneck
    pair): the additive model and ``context="final_state"``, the model without attention."""
    from .model import ToyConfig

    if isinstance(lengths, str) or not hasattr(lengths, "__len__") or len(lengths) != 2:
        raise WeightsError(f"lengths must be a pair (shortest, longest), such as (3, 12) or "
                           f"(4, 24); got {lengths!r}")
    lo, hi = lengths
    try:
        name = ToyConfig(score=score, values=values, context=context, min_len=lo,
                         max_len=hi).name
    except (TypeError, ValueError) as exc:
        raise WeightsError(f"no shipped model like that: {exc}") from None
    path = WEIGHTS_DIR / f"{name}.pt"
    if not path.exists():
        raise WeightsError(f"no shipped model with score={score!r}, values={values!r}, "
                           f"context={context!r} and lengths={tuple(lengths)}; shipped: "
                           f"{sorted(p.stem for p in WEIGHTS_DIR.glob('*.pt'))}")
    return path


def read_metadata(path) -> dict:
    """The ``.json`` record beside a ``.pt`` file (or given directly)."""
    path = Path(path)
    meta_path = path if path.suffix == ".json" else path.with_suffix(".json")
    if not meta_path.exists():
        raise WeightsError(f"no metadata file {meta_path} next to the weights; a model is a .pt "
                           f"file plus the .json that `python -m attention_lab train` writes")
    try:
        meta = json.loads(meta_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WeightsError(f"metadata file {meta_path} is not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise WeightsError(f"metadata file {meta_path} has format {got!r}; expected {FORMAT!r}")
    return meta


def load(path=None, *, score: str = "additive", values: str = "embedding",
         context: str = "attention", lengths: tuple[int, int] = (3, 12),
         check_hash: bool = True):
    """Load a trained :class:`~attention_lab.toy.model.ReversalModel` (in eval mode; a
    :class:`~attention_lab.toy.model.FinalStateModel` for a model without attention).

    ``path`` defaults to the weights shipped in the package for ``score``, ``values``,
    ``context`` and ``lengths`` (see :func:`shipped`). The model carries the
    metadata as ``model.metadata``. Raises :class:`WeightsError` with the reason when the files
    are missing, corrupt or do not match.
    """
    import torch

    from .model import ToyConfig, build

    path = shipped(score, values, context=context, lengths=lengths) if path is None else Path(path)
    if path.is_dir():
        raise WeightsError(f"{path} is a folder; give the path of one of its weights files: "
                           f"{sorted(p.name for p in path.glob('*.pt'))}")
    if path.suffix == ".json":
        path = path.with_suffix(".pt")
    if not path.exists():
        raise WeightsError(f"weights file {path} does not exist; train one with "
                           f"`python -m attention_lab train --out {path.parent}`")
    meta = read_metadata(path)
    if check_hash:
        digest = sha256(path)
        if digest != meta.get("sha256"):
            raise WeightsError(
                f"weights file {path} is corrupt or was replaced: its SHA-256 is {digest[:12]}... "
                f"but {path.with_suffix('.json').name} records {str(meta.get('sha256'))[:12]}...; "
                f"retrain with `python -m attention_lab train` or restore the file")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # truncated zip, pickle errors, foreign objects ...
        raise WeightsError(f"weights file {path} cannot be read by torch.load (corrupt or not a "
                           f"torch file): {type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        got = blob.get("format") if isinstance(blob, dict) else type(blob).__name__
        raise WeightsError(f"weights file {path} has format {got!r}; expected {FORMAT!r}")
    if blob.get("config") != meta.get("config"):
        raise WeightsError(f"weights file {path} and its metadata disagree about the model: "
                           f"{blob.get('config')} vs {meta.get('config')}")
    try:
        cfg = ToyConfig.from_dict(blob["config"])
    except (TypeError, ValueError) as exc:
        raise WeightsError(f"weights file {path} has an invalid config: {exc}") from None
    model = build(cfg)
    state = blob.get("state_dict")
    if not isinstance(state, dict):
        raise WeightsError(f"weights file {path} holds no state_dict")
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = [f"{k}: file {tuple(state[k].shape)}, model {tuple(expected[k].shape)}"
             for k in expected if k in state and tuple(state[k].shape) != tuple(expected[k].shape)]
    parts = [text for text, found in ((f"missing {missing}", missing),
                                      (f"unexpected {unexpected}", unexpected),
                                      ("wrong shapes " + "; ".join(wrong), wrong)) if found]
    if parts:
        raise WeightsError(f"weights file {path} does not match the model its config describes "
                           f"({cfg}): " + ", ".join(parts))
    model.load_state_dict(state)
    model.eval()
    model.metadata = meta
    model.source_path = path
    return model
