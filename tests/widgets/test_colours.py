"""Colours: the palette stays distinguishable under deuteranopia and protanopia, and attention
weights have one colour scale with one meaning (0 white, 1 darkest, darker = larger) everywhere.

Colour-vision deficiency is simulated with the matrices of Machado, Oliveira & Fernandes (2009),
severity 1.0 (full dichromacy), applied in linear sRGB; distances are CIEDE2000 in CIELAB (D65).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.patches import Rectangle

from attention_lab import plots, widgets
from attention_lab.plots._render import Bars

#: Machado et al. (2009), severity 1.0, on linear RGB
MACHADO = {
    "normal vision": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
}
#: the smallest CIEDE2000 distance two roles' colours may have (about 2.3 is "just noticeable")
MIN_DELTA_E = 10.0
#: every role of the palette ("wrong" is the context's vermillion, always hatched)
ROLES = ["source", "query", "score", "weight", "context", "sky", "yellow", "masked", "grey",
         "reference"]


def _linear(rgb):
    c = np.asarray(rgb, float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab_seen(color, vision: str) -> np.ndarray:
    """CIELAB (D65) of ``color`` as seen with ``vision`` (a key of :data:`MACHADO`)."""
    rgb = np.clip(MACHADO[vision] @ _linear(to_rgb(color)), 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ rgb / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e2000(lab1, lab2) -> float:
    """CIEDE2000 colour difference (Sharma, Wu & Dalal 2005)."""
    L1, a1, b1 = lab1
    L2, a2, b2 = lab2
    cbar = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(cbar ** 7 / (cbar ** 7 + 25 ** 7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = np.hypot(a1, b1), np.hypot(a2, b2)
    h1, h2 = np.degrees(np.arctan2(b1, a1)) % 360, np.degrees(np.arctan2(b2, a2)) % 360
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    dH = 2 * np.sqrt(c1 * c2) * np.sin(np.radians(dh) / 2)
    Lm, cm = (L1 + L2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        hm = h1 + h2
    elif abs(h1 - h2) <= 180:
        hm = (h1 + h2) / 2
    else:
        hm = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (1 - 0.17 * np.cos(np.radians(hm - 30)) + 0.24 * np.cos(np.radians(2 * hm))
         + 0.32 * np.cos(np.radians(3 * hm + 6)) - 0.20 * np.cos(np.radians(4 * hm - 63)))
    sl = 1 + 0.015 * (Lm - 50) ** 2 / np.sqrt(20 + (Lm - 50) ** 2)
    sc, sh = 1 + 0.045 * cm, 1 + 0.015 * cm * t
    rt = (-np.sin(np.radians(60 * np.exp(-((hm - 275) / 25) ** 2)))
          * 2 * np.sqrt(cm ** 7 / (cm ** 7 + 25 ** 7)))
    dl, dc, dhh = (L2 - L1) / sl, (c2 - c1) / sc, dH / sh
    return float(np.sqrt(dl ** 2 + dc ** 2 + dhh ** 2 + rt * dc * dhh))


def test_the_colour_difference_matches_published_values():
    # Sharma, Wu & Dalal (2005), test pairs 1 and 7
    assert delta_e2000((50, 2.6772, -79.7751), (50, 0, -82.7485)) == pytest.approx(2.0425, abs=1e-4)
    assert delta_e2000((50, 0, 0), (50, -1, 2)) == pytest.approx(2.3669, abs=1e-4)


def test_the_simulation_merges_red_and_green_but_not_lightness():
    red, green = "#FF0000", "#00A000"
    normal = delta_e2000(lab_seen(red, "normal vision"), lab_seen(green, "normal vision"))
    for vision in ("protanopia", "deuteranopia"):
        assert delta_e2000(lab_seen(red, vision), lab_seen(green, vision)) < normal / 2
    assert lab_seen("white", "protanopia")[0] == pytest.approx(100, abs=0.1)


@pytest.mark.parametrize("vision", list(MACHADO))
def test_every_pair_of_palette_roles_stays_distinguishable(vision):
    close = [(a, b, round(d, 1)) for a, b in itertools.combinations(ROLES, 2)
             if (d := delta_e2000(lab_seen(plots.PALETTE[a], vision),
                                  lab_seen(plots.PALETTE[b], vision))) < MIN_DELTA_E]
    assert not close, f"{vision}: these roles' colours are too close: {close}"


@pytest.mark.parametrize("vision", list(MACHADO))
def test_the_weight_scale_gets_darker_as_the_weight_grows(vision):
    """Lightness falls strictly from weight 0 to 1 and each tenth is a visible step, with or
    without colour vision: the scale means the same thing to every reader."""
    labs = [lab_seen(plots.CMAP(x)[:3], vision) for x in np.linspace(0, 1, 11)]
    lightness = [lab[0] for lab in labs]
    assert all(b < a for a, b in zip(lightness, lightness[1:])), lightness
    assert lightness[0] > 95 and lightness[-1] < 20
    assert min(delta_e2000(a, b) for a, b in zip(labs, labs[1:])) > 5


def _meshes(figure):
    return [a for ax in figure.axes for a in ax.get_children()
            if hasattr(a, "get_cmap") and hasattr(a, "norm") and a.get_array() is not None]


def test_every_weight_heatmap_uses_the_one_scale_from_0_to_1(explorers):
    from attention_lab.toy import figures as toy_figures

    figs = [explorers["query"].figure, explorers["axis"].figure,
            plots.two_query_heatmap(np.array([[0.1, 0.9], [0.5, 0.5]]), ["a", "b"]).figure,
            toy_figures.ModelFigure(6).figure,
            toy_figures.alignment_grid([{"weights": np.eye(3), "source": "abc",
                                         "output": "cba", "title": "t"}]).figure]
    for fig in figs:
        found = [m for m in _meshes(fig) if m.get_cmap().name != "attention_weights"
                 or (m.norm.vmin, m.norm.vmax) != (0, 1)]
        assert _meshes(fig) and not found, f"another colour scale: {found}"
    assert toy_figures.CMAP is plots.CMAP


def test_the_overview_boxes_use_the_weight_scale_and_readable_labels():
    e = widgets.QueryExplorer(backend="agg")
    e.set(retrieval="hard")  # one weight 1, four 0
    d = e.plot.diagram
    np.testing.assert_allclose(d.weight_box.get_facecolor(), plots.CMAP(e.state.weights))
    colours = [t.get_color() for t in d.weight_text]
    assert colours[int(e.state.weights.argmax())][:3] == (1.0, 1.0, 1.0)  # white on dark
    assert all(c[:3] == (0.0, 0.0, 0.0) for i, c in enumerate(colours)
               if i != e.state.weights.argmax())


def test_descriptions_give_the_scale_one_meaning():
    text = plots.two_query_heatmap(np.array([[0.1, 0.9]]), ["a"]).description
    assert "darker cells are larger weights" in text and "smaller" not in text


def contrast(fg, bg) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""
    lum = [float(_linear(to_rgb(c)) @ [0.2126, 0.7152, 0.0722]) for c in (fg, bg)]
    return (max(lum) + 0.05) / (min(lum) + 0.05)


def behind(text, figure):
    """The colour behind a label: its own box, else the topmost box under its anchor (a
    Rectangle, such as the overview diagram's, or a bar of a Bars), else the white figure."""
    box = getattr(text, "_box", None) or (  # a FastText's box, or a Text's bbox patch
        (text.get_bbox_patch().get_facecolor(),) if getattr(text, "get_bbox_patch", None)
        and text.get_bbox_patch() is not None else None)
    if box:
        return box[0]
    x, y = (text.get_transform().transform(text.get_position()) if hasattr(text, "_box")
            else text.get_window_extent().get_points().mean(axis=0))
    under = [(p.zorder, p.get_facecolor()) for p in (text.axes or figure).patches
             if isinstance(p, Rectangle) and p.get_visible() and p.get_fill()
             and p.zorder <= text.zorder and p.contains_point((x, y))]
    under += [(bars.zorder, colour) for bars in getattr(text.axes, "collections", [])
              if isinstance(bars, Bars) and bars.get_visible() and bars.zorder <= text.zorder
              for path, colour in zip(bars.get_paths(), itertools.cycle(bars.get_facecolor()))
              if path.contains_point((x, y), transform=bars.get_transform())]
    return max(under, key=lambda u: u[0])[1] if under else "white"


def _bold(text) -> bool:
    return str(getattr(text, "_weight", None) or text.get_fontweight()) in ("bold", "700")


@pytest.mark.parametrize("presentation", [False, True], ids=["notebook", "projector"])
@pytest.mark.parametrize("name", list(widgets.EXPLORERS))
def test_every_label_of_an_explorer_figure_has_the_contrast_text_needs(name, presentation):
    """WCAG 1.4.3: 4.5:1, or 3:1 for large text (18 pt, or 14 pt bold), in every state the
    tasks lead to (their solutions in test_tasks.py), the flags and messages that appear
    included."""
    from test_tasks import SOLUTIONS, on_grid

    e = widgets.EXPLORERS[name](backend="agg", presentation=presentation)
    low = []
    for values in [{}] + [v for (n, _), pair in SOLUTIONS.items() if n == name for v in pair]:
        e.set(**on_grid(e, values))
        e.figure.canvas.draw()
        for t in e.figure.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_color")):
            if not (t.get_visible() and t.get_text().strip()):
                continue
            large = t.get_fontsize() >= 18 or (_bold(t) and t.get_fontsize() >= 14)
            ratio = contrast(t.get_color(), behind(t, e.figure))
            if ratio < (3.0 if large else 4.5):
                low.append((t.get_text()[:30], round(ratio, 2)))
    assert not low, f"{name}: labels below the contrast text needs: {sorted(set(low))}"


@pytest.mark.parametrize("presentation", [False, True], ids=["notebook", "projector"])
def test_every_label_of_the_model_explorers_figure_has_the_contrast_text_needs(presentation):
    """The trained model's explorer too, with wrong steps (a window away from the true
    positions) and an error title (a source the model cannot read)."""
    from attention_lab.toy.explorer import ModelExplorer

    e = ModelExplorer(backend="agg", presentation=presentation)
    low, seen = [], []
    for values in ({}, {"window": True, "centre": 1, "half_width": 0}, {"source": "abc1"}):
        e.set(**values)
        e.figure.canvas.draw()
        for t in e.figure.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_color")):
            if t.get_visible() and t.get_text().strip():
                seen.append(t.get_text())
                large = t.get_fontsize() >= 18 or (_bold(t) and t.get_fontsize() >= 14)
                if contrast(t.get_color(), behind(t, e.figure)) < (3.0 if large else 4.5):
                    low.append(t.get_text()[:30])
    assert any(t.endswith("\u2717") for t in seen) and any("cannot decode" in t for t in seen)
    assert not low, f"labels below the contrast text needs: {sorted(set(low))}"
