"""The demo's shared model: one process holds the trained model, kernels ask it through a private
socket with a key; what they get equals the model's own decoding, and they never import torch."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from multiprocessing import AuthenticationError
from pathlib import Path

import numpy as np
import pytest

from attention_lab.demo import model_server as M

ROOT = Path(__file__).resolve().parents[2]
KEY = "5e" * 32


def _start(folder: Path) -> tuple[subprocess.Popen, Path]:
    """The model server as the launcher starts it: ``python -m attention_lab.demo.model_server``
    with the key in the environment, in a private folder."""
    folder.chmod(0o700)
    socket_path = folder / "model.sock"
    proc = subprocess.Popen([sys.executable, "-m", "attention_lab.demo.model_server",
                             str(socket_path)], env={**os.environ, M.ENV_KEY: KEY}, cwd=ROOT,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not socket_path.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the model server did not start within 120 s"
        time.sleep(0.2)
    return proc, socket_path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, socket_path = _start(tmp_path_factory.mktemp("model"))
    try:
        yield socket_path
    finally:
        from attention_lab._process import stop_tree

        assert stop_tree(proc, group=proc.pid, grace=2.0) == []


def test_an_explorer_whose_model_server_died_says_so(tmp_path):
    """The model server killed during the lecture (out of memory): the open model tab's next
    decoding says the server stopped, not a bare EOFError of multiprocessing."""
    from attention_lab.toy.explorer import ModelExplorer

    proc, socket_path = _start(tmp_path)
    explorer = ModelExplorer(M.RemoteModel(str(socket_path), bytes.fromhex(KEY)))
    proc.kill()
    proc.wait()
    explorer.set(temperature=2.0)
    assert "the demo's model server has stopped" in str(explorer.last_error), explorer.last_error


def test_a_kernel_gets_the_models_decodings_without_torch(server):
    """In a fresh process with the demo's environment (as a viewer's kernel): the model explorer
    on the shared model shows what it shows on the model itself, and torch is never imported."""
    code = """
import json, sys
from attention_lab.demo import shared_model
from attention_lab.toy.explorer import ModelExplorer
ex = ModelExplorer(model=shared_model())
states = []
for values in ({}, {"temperature": 0.3}, {"source": "badge"}, {"window": True},
               {"centre": 8, "half_width": 0}):
    for k, v in values.items():
        ex.controls[k].value = v
    s = ex.state
    states.append({"title": s.title, "weights": s.weights.round(6).tolist(),
                   "eligible": s.eligible.tolist(), "output": s.output})
print(json.dumps({"states": states, "torch": "torch" in sys.modules,
                  "score": ex.model.config.score}))
"""
    env = {**os.environ, M.ENV_SOCKET: str(server), M.ENV_KEY: KEY, "MPLBACKEND": "agg"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    got = json.loads(out.stdout.splitlines()[-1])
    assert got["torch"] is False and got["score"] == "additive"
    from attention_lab.toy.explorer import ModelExplorer

    local = ModelExplorer()
    for values, remote in zip(({}, {"temperature": 0.3}, {"source": "badge"}, {"window": True},
                               {"centre": 8, "half_width": 0}), got["states"]):
        for k, v in values.items():
            local.controls[k].value = v
        assert remote["title"] == local.state.title and remote["output"] == local.state.output
        np.testing.assert_allclose(remote["weights"], local.state.weights, atol=1e-6)
        assert remote["eligible"] == local.state.eligible.tolist()


def test_the_remote_model_decodes_as_the_model_does(server):
    from attention_lab import toy
    from attention_lab.toy import data

    remote = M.RemoteModel(str(server), bytes.fromhex(KEY))
    model = toy.load()
    c = model.config
    assert vars(remote.config) == {**c.to_dict(), "vocab": c.vocab, "attends": True}
    tokens, lengths = data.pad_batch([data.encode("lkjihgfedcba", c.n_symbols, c.max_len,
                                                  c.min_len)], c.max_len)
    for kwargs in ({}, {"temperature": 2.0, "window": (3, 2)}):
        mine, theirs = model.decode(tokens, lengths, **kwargs), remote.decode(tokens, lengths,
                                                                               **kwargs)
        for name in M.DECODED_FIELDS:
            np.testing.assert_array_equal(getattr(theirs, name), getattr(mine, name))


def test_a_wrong_key_is_refused(server):
    with pytest.raises(AuthenticationError):
        M.RemoteModel(str(server), b"not the key", timeout=2)


def test_without_the_demo_there_is_no_shared_model(monkeypatch, tmp_path):
    monkeypatch.delenv(M.ENV_SOCKET, raising=False)
    assert M.shared_model() is None
    with pytest.raises(ConnectionError, match="does not answer"):
        M.RemoteModel(str(tmp_path / "none.sock"), b"k", timeout=0.3)


def test_the_command_needs_a_socket_and_the_key_in_the_environment(capsys, monkeypatch):
    monkeypatch.delenv(M.ENV_KEY, raising=False)
    assert M.main(["x.sock"]) == 2
    assert f"usage: {M.ENV_KEY}=HEX" in capsys.readouterr().err
