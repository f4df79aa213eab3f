"""``python -m attention_lab train``: train the reversal model on CPU, seeded, with a progress bar.

    python -m attention_lab train                         # additive scores -> ./toy_model/
    python -m attention_lab train --score dot --out runs/  # the dot-product variant
    python -m attention_lab train --values encoder        # contextual values (the contrast model)
    python -m attention_lab train --ship                  # overwrite the weights in the package

The bottleneck pair (notebook: accuracy against source length, with and without attention), the
same task on longer sources, trained by the same code with the same budget:

    python -m attention_lab train --min-len 4 --max-len 24                        # attention
    python -m attention_lab train --context final_state --min-len 4 --max-len 24  # final state only

The run is seeded (``--seed``) and single-threaded by default (``--threads 1``): float results of
a training run depend on the number of threads, and on the CPU kernels torch picks (AVX512, AVX2
or DEFAULT, recorded in the .json as versions.cpu), so a run repeats exactly with the same seed,
threads, kernels and library versions. On another CPU the same command trains a slightly
different model (a shipped model and its recorded metrics stay as they are). Denormal floats are
flushed to zero (tiny gradients near convergence otherwise slow a CPU down many times over).

At the end the model is evaluated on the held-out set (sequences the training sampler never
draws, see :mod:`attention_lab.toy.data`) and written as ``reversal_<score>.pt`` (with
``_encoder`` before ``.pt`` for contextual values) with a ``.json`` beside it: config, seed,
training settings, library versions, metrics and the SHA-256 of the weights file.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from .. import _validate
from . import data
from .model import CONTEXTS, SCORES, VALUES, ReversalModel, ToyConfig, build, evaluate


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser settings of a run (the architecture is :class:`ToyConfig`)."""

    seed: int = 0
    steps: int = 500
    batch: int = 128
    lr: float = 0.007
    warmup: float = 0.15  # fraction of the steps spent raising the learning rate (one-cycle)
    clip: float = 1.0
    threads: int = 1
    heldout: int = 2000
    heldout_seed: int = 2024

    def __post_init__(self):
        # kept as Python numbers (numpy's from a sweep would stop the run's record at json.dumps)
        checked = {n: _validate.count(getattr(self, n), n, allow_zero=n.endswith("seed"))
                   for n in ("steps", "batch", "threads", "heldout", "seed", "heldout_seed")}
        checked.update(lr=_validate.temperature(self.lr, "lr"),  # clip 0 would stop training:
                       clip=_validate.temperature(self.clip, "clip"),
                       warmup=float(self.warmup))
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup is the fraction of the steps spent raising the learning "
                             f"rate; it must lie in [0, 1), got {self.warmup}")


def _batch(rng, cfg: ToyConfig, size: int):
    tok, ln = data.sample(rng, size, cfg.n_symbols, cfg.min_len, cfg.max_len)
    tg = data.reverse_targets(tok, ln)
    return torch.from_numpy(tok), torch.from_numpy(ln), torch.from_numpy(tg)


def loss_fn(model: ReversalModel, tokens, lengths, targets) -> torch.Tensor:
    """Mean cross-entropy over the valid output steps (padding steps are left out)."""
    logits = model(tokens, lengths, targets)
    steps = logits.shape[1]
    valid = torch.arange(steps)[None, :] < lengths[:, None]
    return torch.nn.functional.cross_entropy(logits[valid], targets[:, :steps][valid] - 1)


def train(cfg: ToyConfig = ToyConfig(), tc: TrainConfig = TrainConfig(), *,
          progress: bool = True, evaluate_heldout: bool = True) -> tuple[ReversalModel, dict]:
    """Train a model; returns it and a record (losses, timings, held-out metrics)."""
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(tc.threads)
    torch.set_flush_denormal(True)  # faster on CPU; process-wide, so switched off again below
    try:
        torch.manual_seed(tc.seed)
        rng = np.random.default_rng(tc.seed)
        model = build(cfg)
        opt = torch.optim.Adam(model.parameters(), lr=tc.lr)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=tc.lr, total_steps=tc.steps,
                                                    pct_start=tc.warmup)
        bar = _progress(tc.steps, progress)
        losses = []
        t0 = time.perf_counter()
        for _ in range(tc.steps):
            loss = loss_fn(model, *_batch(rng, cfg, tc.batch))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), tc.clip)
            opt.step()
            sched.step()
            losses.append(loss.item())
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.4f}", refresh=False)
        bar.close()
        train_seconds = time.perf_counter() - t0
        model.eval()
        record = {"losses": losses, "train_seconds": train_seconds}
        if evaluate_heldout:
            tok, ln = data.heldout_set(tc.heldout, cfg.n_symbols, cfg.min_len, cfg.max_len,
                                       seed=tc.heldout_seed)
            record["heldout"] = evaluate(model, tok, ln)
        return model, record
    finally:
        torch.set_num_threads(previous_threads)
        torch.set_flush_denormal(False)  # the process default; numpy and hypothesis rely on it


class _NoBar:
    def update(self, n): pass
    def set_postfix(self, **kw): pass
    def close(self): pass


def _progress(total: int, enabled: bool):
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is a dependency of the grading extra; training works without it
        return _NoBar()
    return tqdm(total=total, desc="training", unit="step", file=sys.stderr, dynamic_ncols=True,
                disable=not enabled)


def main(argv: list[str] | None = None) -> int:
    from . import store

    p = argparse.ArgumentParser(prog="python -m attention_lab train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--score", choices=SCORES, default="additive", help="score function")
    p.add_argument("--values", choices=VALUES, default="embedding",
                   help="what the values are: the symbol embeddings (default) or the encoder's "
                        "contextual states")
    p.add_argument("--context", choices=CONTEXTS, default="attention",
                   help="what the decoder reads: attention over the source (default) or only "
                        "the encoder's final state (no attention)")
    dc = ToyConfig()
    p.add_argument("--min-len", type=int, default=dc.min_len, help="shortest source")
    p.add_argument("--max-len", type=int, default=dc.max_len, help="longest source")
    p.add_argument("--out", type=Path, default=Path("toy_model"),
                   help="folder for the .pt/.json files (default: ./toy_model)")
    p.add_argument("--ship", action="store_true",
                   help="write into the package's weights folder (maintainers)")
    tuned = {"seed": "seed of the initial weights and the batches", "steps": "optimiser steps",
             "batch": "sequences per step", "lr": "peak learning rate (one-cycle schedule)",
             "threads": "torch threads (a run's floats depend on them)"}
    for name, help_ in tuned.items():
        default = getattr(TrainConfig(), name)
        p.add_argument(f"--{name}", type=type(default), default=default,
                       help=f"{help_} (default {default})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    folder = store.WEIGHTS_DIR if args.ship else args.out
    try:
        if folder.exists() and not folder.is_dir():  # found before training, not after it
            raise ValueError(f"--out {folder} is a file; give a folder for the .pt and .json "
                             f"files (created if missing)")
        tc = TrainConfig(**{name: getattr(args, name) for name in tuned})
        cfg = ToyConfig(score=args.score, values=args.values, context=args.context,
                        min_len=args.min_len, max_len=args.max_len)
        model, record = train(cfg, tc, progress=not args.no_progress)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    path = store.save(model, folder / f"{cfg.name}.pt", train_config=asdict(tc),
                      record=record)
    m = record["heldout"]
    print(f"trained {cfg.name} in {record['train_seconds']:.1f} s "
          f"({tc.steps} steps, final loss {record['losses'][-1]:.4f})")
    align = ("" if m["alignment_accuracy"] is None
             else f", alignment accuracy {m['alignment_accuracy']:.2%}")
    print(f"held-out ({m['n_sequences']} sequences never seen in training): exact-sequence "
          f"accuracy {m['exact_sequence_accuracy']:.2%}, symbol accuracy "
          f"{m['symbol_accuracy']:.2%}{align}")
    print(f"wrote {path} and {path.with_suffix('.json')}")
    print(f"load it with: attention_lab.toy.load({str(path)!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
