"""Figures: the chapter's six figures (:mod:`.chapter`, static PNGs with a text description) and
the explorers' live figures (:mod:`.live`, built once, updated in place), both drawn with
:mod:`._render` (the layered figure, fast labels, bars, the palette and the styles).

Plots never compute attention: every function and every ``update(...)`` receives the numbers
(scores, weights, contexts, masks) that the core computed, and only draws them.
"""

from __future__ import annotations

from ._render import CMAP, PALETTE, FastText, LayeredFigure, add_fast_text, fmt_vec
from .chapter import (StaticFigure, hull_figure, mask_figure, overview_figure,
                      temperature_panels, two_query_heatmap, window_figure)
from .live import (AxisPlot, GeometryPlot, HullPlot, LivePlot, LocalPPlot, MaskPlot,
                   PrecisionPlot, QueryPlot, ScorePlot, TemperaturePlot, WindowPlot)

__all__ = [
    "PALETTE", "CMAP", "LayeredFigure", "FastText", "add_fast_text", "fmt_vec", "StaticFigure",
    "LivePlot", "QueryPlot", "ScorePlot", "TemperaturePlot", "MaskPlot", "WindowPlot", "AxisPlot",
    "PrecisionPlot", "HullPlot", "GeometryPlot", "LocalPPlot",
    "overview_figure", "two_query_heatmap", "temperature_panels", "mask_figure", "window_figure",
    "hull_figure",
]
