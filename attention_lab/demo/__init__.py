"""The lecture demo: the app (:mod:`.app`, explorers in tabs with a reset button, built by
``notebooks/demo.ipynb``) and its launcher (:mod:`.launch`, ``python -m attention_lab demo``, which
serves that notebook with Voila).

``from attention_lab.demo import build_demo`` is what the demo notebook uses; importing this
package does not import ipywidgets or Voila.
"""

from __future__ import annotations

from .app import Demo, build_demo

__all__ = ["Demo", "build_demo"]
