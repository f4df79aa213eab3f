"""attention_lab.plots: the layered figure's cache, FastText, the live figures' contract and the
chapter's six figures."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from attention_lab import attend, plots, softmax
from attention_lab.examples import (CHAPTER_TEMPERATURES, HULL_VALUES, HULL_WEIGHTS, LATER_QUERY,
                                    running_example)
from attention_lab.masks import local_mask

EX = running_example()


def render(fig):
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def test_layered_figure_restores_static_pixels_and_redraws_dynamic_ones():
    fig = plots.LayeredFigure(figsize=(4, 3), dpi=80)
    FigureCanvasAgg(fig)
    ax = fig.add_axes([0.1, 0.1, 0.8, 0.8])
    ax.set_title("static title")
    (bar,) = ax.bar([0], [0.5])
    fig.add_dynamic(bar)
    first = render(fig)
    assert fig.static_renders == 1
    bar.set_height(0.9)
    second = render(fig)
    assert fig.static_renders == 1 and not np.array_equal(first, second)
    # a static change without invalidate_static would be missed by design; with it, it shows
    ax.set_title("another title")
    fig.invalidate_static()
    third = render(fig)
    assert fig.static_renders == 2 and not np.array_equal(second, third)
    fig.cache_enabled = False
    assert np.array_equal(third, render(fig))


def test_layered_figure_notices_limits_and_size_changes():
    fig = plots.LayeredFigure(figsize=(4, 3), dpi=80)
    FigureCanvasAgg(fig)
    ax = fig.add_axes([0.1, 0.1, 0.8, 0.8])
    render(fig)
    ax.set_ylim(0, 5)
    render(fig)
    assert fig.static_renders == 2
    fig.set_size_inches(5, 3)
    render(fig)
    assert fig.static_renders == 3


def test_dynamic_artists_stay_out_of_the_layout():
    """A layout is a function of the static part: a dynamic label moves no axes."""
    def laid_out(dynamic_text):
        fig = plots.LayeredFigure(figsize=(4, 3), dpi=80, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        t = ax.text(0.5, 1.0, dynamic_text, fontsize=30, transform=ax.transAxes)
        fig.add_dynamic(t)
        fig.canvas.draw()
        return ax.get_position().bounds

    assert laid_out("") == laid_out("a tall label\nover the axes")


def test_saving_renders_everything_and_keeps_the_cache():
    qp = plots.QueryPlot(EX.values)
    r = attend(EX.query, EX.keys, EX.values)
    qp.update(query=EX.query, scores=r.scores, weights=r.weights, context=r.context,
              temperature=1.0)
    qp.add_error_box()
    qp.message("error", "a figure-level dynamic label")  # not in an axes: drawn by the figure
    a = render(qp.figure)
    import io

    from PIL import Image

    assert all(d.get_animated() for d in qp.figure.dynamic_artists)  # matplotlib's blitting
    buf = io.BytesIO()
    qp.figure.savefig(buf, format="png")  # everything, dynamic artists too, as on the screen
    assert np.array_equal(np.asarray(Image.open(buf)), a)
    assert np.array_equal(a, render(qp.figure))
    svg = io.BytesIO()
    qp.figure.savefig(svg, format="svg")  # a vector renderer has no pixel cache
    assert b"<svg" in svg.getvalue()[:400]


def ink(buf):
    """Rows and columns of the dark pixels."""
    dark = buf[..., :3].min(axis=-1) < 128
    ys, xs = np.nonzero(dark)
    return dark, (ys.min(), ys.max(), xs.min(), xs.max())


@pytest.mark.parametrize("ha,va", [("left", "baseline"), ("center", "center"), ("right", "top"),
                                   ("center", "bottom")])
def test_fast_text_looks_like_text(ha, va):
    """FastText must put the same glyphs at the same place as matplotlib's Text (within 2 px)."""
    boxes, masks = [], []
    for kind in ("text", "fast"):
        fig = Figure(figsize=(3, 1), dpi=100)
        FigureCanvasAgg(fig)
        fig.patch.set_facecolor("white")
        if kind == "text":
            fig.text(0.5, 0.5, "α = 0.361", ha=ha, va=va, fontsize=12)
        else:
            t = plots.FastText(0.5, 0.5, "α = 0.361", ha=ha, va=va, fontsize=12,
                               transform=fig.transFigure)
            fig.add_artist(t)
        mask, box = ink(render(fig))
        boxes.append(np.array(box))
        masks.append(mask)
    assert np.abs(boxes[0] - boxes[1]).max() <= 2, boxes
    # glyph for glyph: Text's ink lies within 2 px of FastText's ink (FastText drops kerning)
    near = masks[1].copy()
    for _ in range(2):
        p = np.pad(near, 1)
        near = p[1:-1, 1:-1] | p[:-2, 1:-1] | p[2:, 1:-1] | p[1:-1, :-2] | p[1:-1, 2:]
    assert (masks[0] & near).sum() / max(masks[0].sum(), 1) > 0.95
    assert 0.8 < masks[1].sum() / masks[0].sum() < 1.25


def test_fast_text_keeps_a_bounded_number_of_lines_rasterised():
    """A label that shows a new number on every frame of a long session does not grow the
    kernel: at most TEXT_CACHE_LINES lines (a few MiB) stay rasterised."""
    from attention_lab.plots import _render

    fig = Figure(figsize=(2, 1), dpi=100)
    FigureCanvasAgg(fig)
    t = plots.FastText(0.5, 0.5, "", fontsize=12, transform=fig.transFigure)
    fig.add_artist(t)
    for i in range(_render.TEXT_CACHE_LINES + 100):
        t.set_text(f"w = {i / 1000:.3f}")
        fig.canvas.draw()
    assert _render.TEXT_CACHE_LINES <= 512
    assert _render._text_bitmap.cache_info().currsize <= _render.TEXT_CACHE_LINES
    assert _render._coverage.cache_info().currsize <= _render.TEXT_CACHE_LINES


def test_fast_text_api_and_bad_alignment():
    t = plots.FastText(0, 0, "a")
    t.set_text("b\nc")
    assert t.get_text() == "b\nc" and t.stale
    t.set_position((1, 2))
    assert t.get_position() == (1.0, 2.0)
    with pytest.raises(ValueError, match="ha must be"):
        plots.FastText(0, 0, "x", ha="middle")
    with pytest.raises(ValueError, match="va must be"):
        plots.FastText(0, 0, "x", va="middle")


def live_plots():
    from attention_lab.plots.live import LivePlot
    from attention_lab.toy.figures import ModelFigure

    found, todo = [], [LivePlot]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.append(sub)
            todo.append(sub)
    assert ModelFigure in found and plots.QueryPlot in found
    return found


def test_every_live_figure_documents_its_update():
    """``update(...)`` is the contract between a figure and its explorer: every live figure
    defines its own, keyword arguments only, each named in the docstring."""
    import inspect

    for cls in live_plots():
        update = cls.__dict__.get("update")
        assert update is not None, f"{cls.__name__} has no update(...) of its own"
        doc = inspect.getdoc(update) or ""
        params = [p for p in inspect.signature(update).parameters.values() if p.name != "self"]
        assert params and all(p.kind is p.KEYWORD_ONLY for p in params), cls.__name__
        missing = [p.name for p in params if p.name not in doc]
        assert not missing, f"{cls.__name__}.update's docstring does not name {missing}"


def test_fmt_vec():
    assert plots.fmt_vec([0.1234, np.nan, 1]) == "[0.123, nan, 1.000]"


# --- the chapter's six figures ----------------------------------------------------------------

def _png_ok(fig):
    data = fig.png()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    bundle = fig._repr_mimebundle_()
    assert set(bundle) == {"image/png", "text/plain"}
    assert bundle["text/plain"] == fig.description and fig.description.startswith("Figure:")


def test_overview_figure_describes_the_current_weights():
    r = attend(EX.query, EX.keys, EX.values)
    fig = plots.overview_figure(r.scores, r.weights)
    _png_ok(fig)
    assert "[0.12, 0.36, 0.20, 0.10, 0.21]" in fig.description
    assert "source 2 (weight 0.36)" in fig.description


def test_two_query_heatmap():
    w = np.vstack([attend(EX.query, EX.keys, EX.values).weights,
                   attend(np.array(LATER_QUERY), EX.keys, EX.values).weights])
    fig = plots.two_query_heatmap(w, ["first", "second"])
    _png_ok(fig)
    assert "first: most weight on source 2" in fig.description
    assert "second: most weight on source 5" in fig.description


def test_temperature_panels_describe_the_chapter_temperatures():
    e = EX.keys @ EX.query
    w = np.array([softmax(e, temperature=t) for t in CHAPTER_TEMPERATURES])
    fig = plots.temperature_panels(CHAPTER_TEMPERATURES, w)
    _png_ok(fig)
    assert "temperatures 0.5, 1, 2" in fig.description
    assert "0.539, 0.361, 0.276" in fig.description
    assert len(fig.figure.axes) == 3


def test_mask_figure():
    a = attend(EX.query, EX.keys, EX.values).weights
    b = attend(EX.query, EX.keys, EX.values, mask=EX.valid).weights
    fig = plots.mask_figure(a, b, EX.valid)
    _png_ok(fig)
    assert "[0.179, 0.528, 0.293, 0.000, 0.000]" in fig.description
    assert "positions 4 and 5 masked" in fig.description


def test_window_figure_uses_the_mask_it_is_given():
    fig = plots.window_figure(np.ones(10, bool), local_mask(4.5, 1.5, 10))
    _png_ok(fig)
    assert "positions 4-7 (4 positions)" in fig.description
    empty = plots.window_figure(np.ones(10, bool), np.zeros(10, bool))
    assert "no position" in empty.description


def test_hull_figure():
    V, Wt = np.array(HULL_VALUES), np.array(HULL_WEIGHTS)
    fig = plots.hull_figure(V, Wt, Wt @ V)
    _png_ok(fig)
    assert "[0.835, 0.285]" in fig.description and "[0.980, 1.322]" in fig.description


def test_static_figures_compute_nothing():
    """The figure functions draw what they are given: wrong numbers in, wrong numbers drawn."""
    fig = plots.temperature_panels([1.0], np.array([[0.5, 0.5, 0.0]]))
    assert "0.500" in fig.description
