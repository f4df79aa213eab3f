"""The lecture demo: the app (:mod:`.app`, explorers in tabs with a reset button, built by
``notebooks/demo.ipynb``), its launcher (:mod:`.launch`, ``python -m attention_lab demo``), the
Voila server it runs for a lecture hall (:mod:`.server`: preheated kernels, a viewer limit,
culling) and the trained model shared by every viewer (:mod:`.model_server`).

``from attention_lab.demo import build_demo, later, shared_model`` is what the demo notebook uses;
importing this package does not import ipywidgets, Voila or torch.
"""

from __future__ import annotations

from .app import Demo, Later, build_demo, later

__all__ = ["Demo", "Later", "build_demo", "later", "shared_model"]


def __getattr__(name: str):
    # loaded on first use, so that `python -m attention_lab.demo.model_server` runs a module that
    # the package has not imported yet
    if name == "shared_model":
        from .model_server import shared_model

        return shared_model
    raise AttributeError(f"module 'attention_lab.demo' has no attribute {name!r}")
