"""The toy reversal model: data, shipped weights, training, loading errors, CLI."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from attention_lab import toy
from attention_lab.toy import data, store
from attention_lab.toy.model import ReversalModel, ToyConfig, evaluate
from attention_lab.toy.train import TrainConfig, loss_fn, train

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def model():
    return toy.load()


# --- data ------------------------------------------------------------------------------------

def test_reverse_targets_and_true_alignment():
    tokens, lengths = data.pad_batch([data.encode("abc", 12, 12), data.encode("badge", 12, 12)],
                                     12)
    targets = data.reverse_targets(tokens, lengths)
    assert data.decode(targets[0], 12) == "cba"
    assert data.decode(targets[1], 12) == "egdab"
    align = data.true_alignment(lengths, 12)
    assert align[1, 0, 4] and align[1, 4, 0] and align.sum() == 3 + 5
    assert not align[0, 3].any()  # padding steps align to nothing


def test_decode_names_a_token_id_outside_the_vocabulary():
    assert toy.decode([3, 1, 2, 0, 0], 12) == "cab"
    # -1 read as the last letter 'l' (negative indexing), 13 as 'string index out of range'
    for bad in (-1, 13):
        with pytest.raises(ValueError, match=rf"token id {bad} .* 1\.\.12 .* 0 is padding"):
            toy.decode([1, bad], 12)


def test_heldout_split_is_disjoint_from_training_batches():
    rng = np.random.default_rng(0)
    tok, _ = data.sample(rng, 5000, 12, 3, 12)
    assert not data.is_heldout(tok, 12).any()
    htok, hlen = data.heldout_set(500, 12, 3, 12)
    assert data.is_heldout(htok, 12).all()
    assert sorted(set(hlen.tolist())) == list(range(3, 13))
    # about one sequence in ten is held out
    frac = data.is_heldout(np.random.default_rng(1).integers(1, 13, (20000, 12)), 12).mean()
    assert 0.08 < frac < 0.12


@pytest.mark.parametrize("args, msg", [
    ((5, 12, 5, 3), r"1 <= min_len <= max_len, got min_len=5, max_len=3"),  # (5, 3), lengths 5
    ((5, 12, 0, 12), r"1 <= min_len <= max_len, got min_len=0"),     # 'could not draw a batch'
    ((5, 30, 3, 12), r"n_symbols must lie in \[1, 26\], got 30"),    # ids past the alphabet
])
def test_heldout_set_names_an_impossible_task(args, msg):
    with pytest.raises(ValueError, match=msg):
        toy.heldout_set(*args)


@pytest.mark.parametrize("text, msg", [("abz", "contains 'z'"), ("ab", "length 2"),
                                       ("a" * 13, "length 13")])
def test_encode_rejects_bad_sources(text, msg):
    with pytest.raises(ValueError, match=msg):
        data.encode(text, 12, 12, 3)


# --- shipped weights --------------------------------------------------------------------------

SHIPPED = [("additive", "embedding"), ("dot", "embedding"), ("additive", "encoder")]


@pytest.mark.parametrize("score,values", SHIPPED)
def test_shipped_weights_reproduce_recorded_heldout_accuracy(score, values):
    m = toy.load(score=score, values=values)
    assert (m.config.score, m.config.values) == (score, values)
    meta = m.metadata
    rec = meta["metrics"]["heldout"]
    tc = meta["train"]
    tok, ln = data.heldout_set(tc["heldout"], m.config.n_symbols, m.config.min_len,
                               m.config.max_len, seed=tc["heldout_seed"])
    got = evaluate(m, tok, ln)
    assert got["n_sequences"] == rec["n_sequences"] == 2000
    for k in ("exact_sequence_accuracy", "symbol_accuracy", "alignment_accuracy"):
        assert got[k] == pytest.approx(rec[k], abs=1e-12), k
    assert got["exact_sequence_accuracy"] >= 0.99


def test_shipped_files_are_small_and_carry_provenance():
    for score, values in SHIPPED:
        pt = store.shipped(score, values)
        assert pt.stat().st_size < 2 * 1024 ** 2
        meta = json.loads(pt.with_suffix(".json").read_text())
        assert meta["config"]["score"] == score
        assert meta["config"].get("values", "embedding") == values
        assert meta["seed"] == meta["train"]["seed"]
        assert set(meta["versions"]) >= {"python", "torch", "numpy", "attention_lab"}
        assert meta["sha256"] == store.sha256(pt)
        assert meta["train_seconds"] > 0


def test_the_contrast_models_values_are_its_encoder_states():
    """values="encoder": the values are the BiGRU's states (width 2 x hidden), so a value knows
    its neighbours; the embedding models' config files keep their old form (no "values" key), so
    retraining them reproduces the shipped files byte for byte."""
    enc = toy.load(values="encoder")
    tokens, lengths = data.heldout_set(4, 12, 3, 12)
    with torch.no_grad():
        _, values, states = enc.encode(torch.as_tensor(tokens), torch.as_tensor(lengths))
    assert values.shape == (4, 12, 128) and torch.equal(values, states)
    assert enc.reverse("abcdefgh") == "hgfedcba"
    assert "values" not in ToyConfig().to_dict()
    assert ToyConfig(values="encoder").to_dict()["values"] == "encoder"
    assert ToyConfig.from_dict(ToyConfig().to_dict()) == ToyConfig()
    assert ToyConfig(values="encoder").name == "reversal_additive_encoder"
    with pytest.raises(ValueError, match="values must be one of"):
        ToyConfig(values="keys")
    with pytest.raises(toy.WeightsError, match="no shipped model with score='dot'"):
        store.shipped("dot", "encoder")


def test_perfect_retrieval_cannot_fix_poor_values(model):
    """Notebook 04, section 2: with the value at the true position handed to the readout, the
    model's own values give every symbol; values with symbols merged in pairs about half; one
    value for all about one in twelve. Only for a model whose values are the embeddings."""
    from attention_lab.toy import experiments as ex

    acc = ex.perfect_retrieval(model, *ex.study_set(model, n=60))
    own, pairs, same = acc.values()
    assert own == 1.0 and 0.35 < pairs < 0.65 and same < 0.2
    with pytest.raises(ValueError, match="values are the symbol embeddings"):
        ex.perfect_retrieval(toy.load(values="encoder"), *ex.study_set(model, n=2))


def test_pyproject_ships_the_weights():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"**/*.json"' in text and '"**/*.pt"' in text


def test_loading_is_deterministic_and_decoding_works(model):
    again = toy.load()
    for (k, a), (_, b) in zip(model.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), k
    assert model.reverse("abcdefgh") == "hgfedcba"
    d1 = model.decode(*data.heldout_set(20, 12, 3, 12))
    d2 = again.decode(*data.heldout_set(20, 12, 3, 12))
    assert np.array_equal(d1.weights, d2.weights)
    # weights are distributions over the eligible (unpadded) positions
    valid_t = np.arange(12)[None, :] < d1.lengths[:, None]
    assert np.allclose(d1.weights.sum(-1)[valid_t], 1, atol=1e-5)
    assert (d1.weights[~d1.mask] == 0).all()


def test_dot_model_uses_the_package_torch_path(model, monkeypatch):
    from attention_lab import tensor

    calls = []
    real = tensor.attention

    def spy(*a, **k):
        calls.append(k.get("mask").shape)
        return real(*a, **k)

    m = toy.load(score="dot")
    monkeypatch.setattr(tensor, "attention", spy)
    assert m.reverse("abcde") == "edcba"
    assert calls


def test_tokens_and_lengths_that_are_not_whole_numbers_are_named(model):
    """Float token ids (4.7) or lengths were cut to whole numbers without a word."""
    tokens, lengths = data.pad_batch([data.encode("abcd", 12, 12)], 12)
    for t, n, name in ((tokens + 0.7, lengths, "tokens"), (tokens, lengths + 0.5, "lengths")):
        with pytest.raises(TypeError, match=rf"{name} must hold whole numbers, got float64"):
            model.decode(t, n)
    assert (model.decode(tokens.astype(np.int32), lengths).tokens
            == model.decode(tokens, lengths).tokens).all()


def test_forced_previous_outputs_are_checked(model):
    tokens, lengths = data.pad_batch([data.encode("abcd", 12, 12)], 12)
    forced = data.reverse_targets(tokens, lengths)
    assert (model.decode(tokens, lengths, force=forced).tokens == forced).all()
    # a force of the wrong length was taken as it came (or failed at a later step)
    for bad in (forced[:, :5], np.concatenate([forced, forced]), forced[0]):
        with pytest.raises(ValueError, match=r"force must have shape \(1, 12\)"):
            model.decode(tokens, lengths, force=bad)
    # a symbol outside the vocabulary was torch's 'IndexError: index out of range in self'
    with pytest.raises(ValueError, match=r"and hold token ids 0\.\.12"):
        model.decode(tokens, lengths, force=np.full((1, 12), 13))


def test_an_empty_set_of_sources_is_named(model):
    # e.g. the held-out sequences of a length the set does not hold: ln[ln == 13]
    tok, ln = data.heldout_set(20, 12, 3, 12)
    tok, ln = tok[ln == 13], ln[ln == 13]
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, 12\) with B >= 1"):
        model.decode(tok, ln)       # was torch's 'Cannot pack empty tensors'
    with pytest.raises(ValueError, match=r"with B >= 1 sequences, got \(0, 12\)"):
        evaluate(model, tok, ln)    # was ZeroDivisionError


def test_lengths_that_disagree_with_the_padding_are_named(model):
    tokens, lengths = data.pad_batch([data.encode("abcd", 12, 12), data.encode("abcdef", 12, 12)],
                                     12)
    # lengths of another batch: padding decoded as if it were a symbol, or symbols left out,
    # and a plausible but wrong output
    for wrong, b, n in (([6, 6], 0, 4), ([4, 5], 1, 6)):
        with pytest.raises(ValueError, match=rf"row {b} of tokens is not lengths\[{b}\] = "
                                             rf"{wrong[b]} symbols .* it holds {n} symbols"):
            model.decode(tokens, wrong)
    holed = tokens.copy()
    holed[0, 1] = data.PAD                      # padding inside the source, 4 symbols still
    holed[0, 4] = 1
    with pytest.raises(ValueError, match=r"row 0 of tokens is not lengths\[0\] = 4"):
        model.decode(holed, lengths)
    assert model.decode(tokens, lengths).tokens.shape == (2, 12)


def test_evaluate_names_a_bad_batch_size(model):
    tok, ln = data.heldout_set(10, 12, 3, 12)
    assert evaluate(model, tok, ln, batch=3) == evaluate(model, tok, ln)
    with pytest.raises(ValueError, match="batch must be > 0, got -1"):  # was ZeroDivisionError
        evaluate(model, tok, ln, batch=-1)
    with pytest.raises(ValueError, match="batch must be > 0, got 0"):   # was range()'s message
        evaluate(model, tok, ln, batch=0)


def test_window_outside_the_relevant_position_breaks_the_output(model):
    # global attention reverses; a window around the start (positions 0..2) hides the rest
    assert model.reverse("abcdefghij") == "jihgfedcba"
    out = model.reverse("abcdefghij", window=(1, 1))
    # steps 0..6 need positions 9..3, outside the window: none of them can be right
    assert all(o != want for o, want in zip(out[:7], "jihgfed"))


def test_entropy_by_length_of_a_model_trained_on_one_symbol_sources():
    # `train --min-len 1`: a source of one symbol has entropy 0 over log 1 = 0 positions; the
    # normalised entropy was nan (0/0, with a RuntimeWarning), now 0 as in the audit
    import warnings

    from attention_lab.toy import experiments

    torch.manual_seed(0)
    m = ReversalModel(ToyConfig(min_len=1, max_len=4, hidden=8, emb=8, attn=8)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = experiments.entropy_by_length(m, *data.heldout_set(8, 12, 1, 4))
    assert e["length"].tolist() == [1, 2, 3, 4] and e["normalised"][0] == 0.0
    assert np.isfinite(e["normalised"]).all() and (e["normalised"][1:] > 0).all()


# --- training ---------------------------------------------------------------------------------

def test_short_training_run_lowers_the_loss():
    cfg = ToyConfig(score="dot", hidden=16, emb=8, attn=8)
    model, rec = train(cfg, TrainConfig(steps=40, batch=32, lr=0.01), progress=False,
                       evaluate_heldout=False)
    losses = rec["losses"]
    assert len(losses) == 40
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.1
    # and the loss on a fixed batch is lower than an untrained model's
    rng = np.random.default_rng(123)
    tok, ln = data.sample(rng, 64, 12, 3, 12)
    batch = (torch.from_numpy(tok), torch.from_numpy(ln),
             torch.from_numpy(data.reverse_targets(tok, ln)))
    torch.manual_seed(0)
    fresh = ReversalModel(cfg)
    with torch.no_grad():
        assert loss_fn(model, *batch) < loss_fn(fresh, *batch)


def test_training_is_seeded():
    cfg = ToyConfig(score="additive", hidden=8, emb=8, attn=8)
    tc = TrainConfig(steps=5, batch=16)
    _, a = train(cfg, tc, progress=False, evaluate_heldout=False)
    _, b = train(cfg, tc, progress=False, evaluate_heldout=False)
    assert a["losses"] == b["losses"]


def test_cli_trains_saves_and_loads(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "attention_lab", "train", "--score", "dot", "--steps", "3",
         "--batch", "8", "--out", str(tmp_path), "--no-progress"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "held-out" in out.stdout and "exact-sequence accuracy" in out.stdout
    m = toy.load(tmp_path / "reversal_dot.pt")
    assert m.config.score == "dot"
    assert m.metadata["train"]["steps"] == 3


def test_cli_rejects_bad_arguments(tmp_path):
    from attention_lab.toy.train import main

    assert main(["--steps", "0", "--out", str(tmp_path), "--no-progress"]) == 2
    with pytest.raises(SystemExit):
        main(["--score", "cosine"])
    with pytest.raises(SystemExit):
        main(["--values", "keys"])


@pytest.mark.parametrize("field, value, text", [
    ("threads", 0, "threads must be > 0"),       # was torch's RuntimeError, a traceback in the CLI
    ("clip", 0.0, "clip must be finite and > 0"),  # was silently no training (gradients x 0)
    ("clip", -1.0, "clip must be finite and > 0"),  # was gradient ascent
    ("warmup", 1.0, r"warmup .* \[0, 1\)"),        # was ZeroDivisionError
    ("heldout", 0, "heldout must be > 0"),        # was ZeroDivisionError after training
    ("lr", 0.0, "lr must be finite and > 0"),     # was a run that learns nothing
    ("seed", -1, "seed must be >= 0"),
])
def test_training_settings_out_of_range_are_named(field, value, text):
    with pytest.raises(ValueError, match=text):
        TrainConfig(**{field: value})


def test_cli_reports_bad_training_settings(tmp_path, capsys):
    from attention_lab.toy.train import main

    assert main(["--threads", "0", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "threads must be > 0" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_cli_refuses_an_out_folder_that_is_a_file_before_training(tmp_path, capsys):
    # `--out model.pt` with model.pt a file: the whole run trained, then FileExistsError
    from attention_lab.toy import train as train_module

    taken = tmp_path / "model.pt"
    taken.write_text("notes")
    assert train_module.main(["--steps", "2", "--batch", "4", "--out", str(taken),
                              "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"--out {taken} is a file" in err and "a folder" in err
    assert taken.read_text() == "notes"


# --- loading errors ---------------------------------------------------------------------------

@pytest.fixture()
def copy(tmp_path):
    src = store.shipped("additive")
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    shutil.copy(src.with_suffix(".json"), dst.with_suffix(".json"))
    return dst


def test_corrupt_weights_file_is_reported(copy):
    raw = bytearray(copy.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    copy.write_bytes(bytes(raw))
    with pytest.raises(toy.WeightsError, match="corrupt or was replaced"):
        toy.load(copy)
    # without the hash check, torch itself cannot read it (or it does not fit): still clear
    copy.write_bytes(b"not a zip file at all")
    with pytest.raises(toy.WeightsError, match="cannot be read by torch.load"):
        toy.load(copy, check_hash=False)


def test_truncated_weights_file_is_reported(copy):
    copy.write_bytes(copy.read_bytes()[:1000])
    with pytest.raises(toy.WeightsError, match="corrupt"):
        toy.load(copy)


def _rewrite(copy, mutate):
    blob = torch.load(copy, weights_only=True)
    mutate(blob)
    torch.save(blob, copy)
    meta = json.loads(copy.with_suffix(".json").read_text())
    meta["sha256"] = store.sha256(copy)
    meta["config"] = blob["config"]
    copy.with_suffix(".json").write_text(json.dumps(meta))


def test_mismatched_shapes_are_named(copy):
    def mutate(blob):
        blob["state_dict"]["W_o.weight"] = torch.zeros(5, 64)
    _rewrite(copy, mutate)
    with pytest.raises(toy.WeightsError, match=r"wrong shapes W_o.weight: file \(5, 64\), "
                                               r"model \(12, 64\)"):
        toy.load(copy)


def test_mismatched_config_is_reported(copy):
    def mutate(blob):
        blob["config"] = dict(blob["config"], hidden=32)
    _rewrite(copy, mutate)
    with pytest.raises(toy.WeightsError, match="does not match the model"):
        toy.load(copy)


def test_missing_keys_and_disagreeing_metadata(copy):
    def mutate(blob):
        del blob["state_dict"]["v.weight"]
    _rewrite(copy, mutate)
    with pytest.raises(toy.WeightsError, match=r"missing \['v.weight'\]"):
        toy.load(copy)
    meta = json.loads(copy.with_suffix(".json").read_text())
    meta["config"]["score"] = "dot"
    copy.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(toy.WeightsError, match="disagree"):
        toy.load(copy)


def test_missing_files_are_reported(tmp_path, copy):
    with pytest.raises(toy.WeightsError, match="does not exist"):
        toy.load(tmp_path / "nothing.pt")
    copy.with_suffix(".json").unlink()
    with pytest.raises(toy.WeightsError, match="no metadata file"):
        toy.load(copy)


def test_loading_a_folder_names_its_weights_files(copy):
    # `train --out toy_model` writes into a folder; toy.load("toy_model") said
    # 'no metadata file toy_model.json next to the weights'
    with pytest.raises(toy.WeightsError, match=r"is a folder.*\['reversal_additive.pt'\]"):
        toy.load(copy.parent)


def test_training_leaves_the_process_floating_point_state_alone():
    """Training switches on flush-to-zero for speed; it must switch it off again, or every later
    computation in the process (numpy included) silently loses subnormal numbers."""
    import numpy as np

    from attention_lab.toy.train import TrainConfig, train

    tiny = np.float64(5e-324)
    assert tiny > 0
    train(tc=TrainConfig(steps=2, batch=8), progress=False, evaluate_heldout=False)
    assert np.float64(5e-324) * 1.0 > 0
    assert torch.tensor(1e-42, dtype=torch.float32).item() > 0


def test_a_training_config_from_numpy_numbers_can_be_recorded():
    """A sweep's np.int64 steps or np.float32 learning rate trained, then the run's record
    failed at json.dumps ('Object of type float32 is not JSON serializable'), losing the run."""
    import json
    from dataclasses import asdict

    tc = TrainConfig(steps=np.int64(3), lr=np.float32(0.01), warmup=np.float32(0.1))
    assert json.loads(json.dumps(asdict(tc)))["steps"] == 3 and type(tc.lr) is float


def test_shipped_names_lengths_that_are_not_a_pair():
    """toy.load(lengths=5) said 'no shipped model like that: cannot unpack non-iterable int
    object'; it now says what lengths must be."""
    for bad in (5, (4,), "4-24"):
        with pytest.raises(toy.WeightsError, match=r"lengths must be a pair \(shortest, "
                                                   r"longest\), such as \(3, 12\)"):
            toy.load(lengths=bad)


def test_a_record_without_training_time_writes_valid_json(tmp_path):
    """store.save without train_seconds wrote NaN, which is not JSON (jq and browsers refuse it)."""
    from attention_lab.toy.model import ToyConfig, build

    path = store.save(build(ToyConfig()), tmp_path / "m.pt", train_config={}, record={})
    text = path.with_suffix(".json").read_text()
    assert "NaN" not in text and json.loads(text)["train_seconds"] is None


def test_a_run_records_the_cpu_kernels_its_floats_depend_on(tmp_path):
    """Retrained with the shipped command and seed on an AVX512 CPU, the additive model came out
    different from the shipped one (held-out 100.00 % against 99.95 %), and different again under
    ATEN_CPU_CAPABILITY=avx2 or default, though the library versions were the same: the help said
    a run is 'reproducible on any machine with the same library versions', and the .json did not
    record the kernels. It records them now, and the help says what a run depends on."""
    import torch

    from attention_lab.toy import store
    from attention_lab.toy.train import __doc__ as help_text

    model, rec = train(ToyConfig(hidden=8, emb=8, attn=8), TrainConfig(steps=2, batch=8),
                       progress=False, evaluate_heldout=False)
    rec["heldout"] = {}
    pt = store.save(model, tmp_path / "m.pt", train_config={}, record=rec)
    meta = json.loads(pt.with_suffix(".json").read_text())
    assert meta["versions"]["cpu"] == torch.backends.cpu.get_cpu_capability()
    flat = " ".join(help_text.split())
    assert "any machine with the same library versions" not in flat
    assert "CPU" in flat and "versions.cpu" in flat


def test_every_option_of_train_says_what_it_does(capsys):
    """--seed, --steps, --batch, --lr and --threads were listed bare in train's --help."""
    from attention_lab.toy import train

    with pytest.raises(SystemExit):
        train.main(["--help"])
    text = capsys.readouterr().out
    entries = re.split(r"\n(?=  -)", text.split("options:\n")[1].strip("\n"))
    bare = []
    for entry in entries:  # '  --lr LR  help', or the help on the lines under a long one
        head, _, under = entry.strip().partition("\n")
        if len(re.split(r"\s{2,}", head, maxsplit=1)) < 2 and not under.strip():
            bare.append(head)
    assert len(entries) > 10 and not bare, bare
    assert "initial weights and the batches (default 0)" in " ".join(text.split())
