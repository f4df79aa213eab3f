"""Explorers: ipywidgets controls + a live figure + the core's numbers, nothing else (how they
work, for students and maintainers: ``docs/design/explorers.md``).

    from attention_lab import widgets
    explorer = widgets.QueryExplorer()
    explorer.controls["q1"].value = 0.2      # what a drag does
    explorer.state.weights                   # the core's numbers behind the figure
    explorer                                 # displays it
"""

from __future__ import annotations

from ._canvas import ipympl_available
from ._png import encode_png
from .base import Explorer, Task
from .explorers import (EXPLORERS, AxisExplorer, GeometryExplorer, HullExplorer,
                        LocalPExplorer, MaskExplorer, PrecisionExplorer, QueryExplorer,
                        ScoreExplorer, TemperatureExplorer, WindowExplorer)

__all__ = [
    "Explorer", "Task", "QueryExplorer", "ScoreExplorer", "TemperatureExplorer", "MaskExplorer",
    "WindowExplorer", "AxisExplorer", "PrecisionExplorer", "HullExplorer", "GeometryExplorer",
    "LocalPExplorer", "EXPLORERS", "ipympl_available", "encode_png",
]
