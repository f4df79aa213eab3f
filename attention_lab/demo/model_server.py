"""The model server: the demo's trained model (its last tab), loaded once for every viewer.

Voila gives every viewer a kernel of their own. Loading torch and the model in each of them costs
about 200 MiB and 4-5 s of CPU per viewer (measured on the project's 2-core machine), which a
lecture hall of viewers opening the tab at the same moment cannot afford. So the demo's launcher
loads the model once, in a process of its own (:func:`serve`), and the viewers' kernels ask it for
decodings through :class:`RemoteModel`, which offers what the model explorer uses of a model
(``.config`` and ``.decode(tokens, lengths, temperature=, window=)``) and never imports torch.

Transport: :mod:`multiprocessing.managers` (standard library) on a Unix socket in a folder only
the demo's user can open, with a random key that both ends prove they hold (HMAC challenge). The
launcher hands the socket's path and the key to the kernels in two environment variables
(:data:`ENV_SOCKET`, :data:`ENV_KEY`); viewers type no code, so they never see either. Decodings
run one at a time on one torch thread (a few milliseconds each).

:func:`shared_model` is what the demo notebook calls: the shared model when the launcher runs one,
otherwise ``None`` (the explorer then loads the model in its own kernel, e.g. in JupyterLab).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from multiprocessing.managers import BaseManager
from types import SimpleNamespace

ENV_SOCKET = "ATTENTION_LAB_MODEL_SOCKET"
ENV_KEY = "ATTENTION_LAB_MODEL_KEY"
#: what a decoding sends back (numpy arrays of :class:`attention_lab.toy.model.Decoded`)
DECODED_FIELDS = ("tokens", "logits", "weights", "scores", "mask", "lengths", "queries",
                  "contexts")


class _Served:
    """The model on the server's side: its config as plain values, decodings as numpy arrays."""

    def __init__(self, model):
        self._model = model
        self._lock = threading.Lock()  # one decoding at a time (torch on one thread)

    def config(self) -> dict:
        c = self._model.config
        return {**c.to_dict(), "vocab": c.vocab, "attends": c.attends}

    def decode(self, tokens, lengths, temperature: float, window) -> dict:
        with self._lock:
            d = self._model.decode(tokens, lengths, temperature=temperature, window=window)
        return {name: getattr(d, name) for name in DECODED_FIELDS}


class _Client(BaseManager):
    pass


_Client.register("model")


class RemoteModel:
    """The shared model as the model explorer sees it: ``.config`` (its fields, ``vocab`` and
    ``attends``) and ``.decode(tokens, lengths, temperature=..., window=...)`` with numpy arrays
    as results."""

    def __init__(self, socket_path: str, key: bytes, *, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        while True:
            manager = _Client(address=str(socket_path), authkey=key)
            try:
                manager.connect()
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() >= deadline:
                    raise ConnectionError(f"the demo's model server does not answer at "
                                          f"{socket_path} (waited {timeout:g} s)") from None
                time.sleep(0.1)
        self._model = manager.model()
        self.config = SimpleNamespace(**self._model.config())

    def decode(self, tokens, lengths, *, temperature: float = 1.0, window=None):
        import numpy as np

        window = None if window is None else tuple(int(x) for x in window)
        try:
            parts = self._model.decode(np.asarray(tokens), np.asarray(lengths),
                                       float(temperature), window)
        except (EOFError, OSError):  # its process is gone (killed when memory ran out, ...)
            raise ConnectionError("the demo's model server has stopped (the demo's terminal says "
                                  "why); this tab works again once the demo is restarted") \
                from None
        return SimpleNamespace(**parts)


def shared_model() -> RemoteModel | None:
    """The demo's shared model if this kernel was started by the demo's launcher, else None."""
    socket_path, key = os.environ.get(ENV_SOCKET), os.environ.get(ENV_KEY)
    if not socket_path or not key:
        return None
    return RemoteModel(socket_path, bytes.fromhex(key))


def serve(socket_path: str, key: bytes, model=None) -> None:
    """Load the shipped model (or use ``model``) and answer decodings on ``socket_path`` until
    the process is stopped."""
    if model is None:
        import torch

        from ..toy import load

        torch.set_num_threads(1)
        model = load()
    served = _Served(model)

    class _Server(BaseManager):
        pass

    _Server.register("model", callable=lambda: served)
    server = _Server(address=str(socket_path), authkey=key).get_server()
    print(f"model server: {model.config.score} model ready", file=sys.stderr, flush=True)
    server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """``python -m attention_lab.demo.model_server SOCKET``; the key comes in
    ``$ATTENTION_LAB_MODEL_KEY``, never on the command line, where other users could read it."""
    argv = sys.argv[1:] if argv is None else argv
    key = os.environ.get(ENV_KEY)
    if len(argv) != 1 or not key:
        print(f"usage: {ENV_KEY}=HEX python -m attention_lab.demo.model_server SOCKET",
              file=sys.stderr)
        return 2
    serve(argv[0], bytes.fromhex(key))
    return 0


if __name__ == "__main__":
    sys.exit(main())
