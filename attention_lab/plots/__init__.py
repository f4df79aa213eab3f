"""Figures: the chapter's six figures (static PNGs) and the live figures of the explorers.

Plots never compute attention. Every function and every ``update(...)`` receives the numbers
(scores, weights, contexts, masks) that the core computed, and only draws them.

* :mod:`.chapter`: the chapter's figures (:func:`overview_figure`, :func:`two_query_heatmap`,
  :func:`temperature_panels`, :func:`mask_figure`, :func:`window_figure`, :func:`hull_figure`),
  each a :class:`StaticFigure` shown as an inline PNG with a text description.
* :mod:`.live`: the explorers' figures (:class:`QueryPlot`, :class:`ScorePlot`, ...), built once;
  ``update(...)`` changes their artists in place and its docstring is the contract with the
  explorer.
* :mod:`._render`: the engine both use: :class:`LayeredFigure` (static pixels cached, dynamic
  artists drawn on top), :class:`FastText` (labels pasted from cached glyphs), :class:`Bars`,
  the palette and the styles.
"""

from __future__ import annotations

from ._render import (CMAP, LIVE_MAX_WIDTH, PALETTE, Bars, FastText, LayeredFigure, Style,
                      add_fast_text, fmt_vec, text_on_weight)
from .chapter import (StaticFigure, hull_figure, mask_figure, overview_figure,
                      temperature_panels, two_query_heatmap, window_figure)
from .live import (AxisPlot, GeometryPlot, HullPlot, LivePlot, LocalPPlot, MaskPlot,
                   PrecisionPlot, QueryPlot, ScorePlot, TemperaturePlot, WindowPlot)

__all__ = [
    "PALETTE", "CMAP", "LIVE_MAX_WIDTH", "LayeredFigure", "FastText", "Bars", "Style",
    "add_fast_text", "fmt_vec", "text_on_weight", "StaticFigure", "LivePlot", "QueryPlot", "ScorePlot",
    "TemperaturePlot", "MaskPlot", "WindowPlot", "AxisPlot", "PrecisionPlot", "HullPlot",
    "GeometryPlot", "LocalPPlot",
    "overview_figure", "two_query_heatmap", "temperature_panels", "mask_figure", "window_figure",
    "hull_figure",
]
