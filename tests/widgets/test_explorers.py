"""The explorers, driven like a student drives them: by setting ``controls[name].value``.

After every change: ``state`` equals the core's result, the artists show it, the figure and its
artists are the same objects as before (no rebuild) and the static layer was not re-rendered.
"""

from __future__ import annotations

import base64
import warnings

import numpy as np
import pytest
from explorer_checks import check_explorer, heights
from matplotlib.backends.backend_agg import FigureCanvasAgg

import ipywidgets as W

from attention_lab import widgets
from attention_lab.examples import HULL_WEIGHTS
from attention_lab.widgets import _canvas

NAMES = list(widgets.EXPLORERS)

#: per explorer, a walk through its controls including the edge cases the issue names
SCENARIOS = {
    "query": [("q1", -1.5), ("q2", 1.5), ("temperature", 0.05), ("retrieval", "hard"),
              ("q3", 0.0), ("retrieval", "soft"), ("temperature", 5.0), ("preset", "later"),
              ("preset", "chapter"), ("q1", 0.0), ("q2", 0.0), ("q3", 0.0)],
    "score": [("score", "bilinear"), ("q1", -1.5), ("score", "additive"), ("q3", 1.5),
              ("score", "scaled_dot"), ("q2", -1.5), ("score", "dot")],
    "temperature": [("temperature", 0.05), ("temperature", 5.0), ("temperature", 0.5),
                    ("temperature", 2.0)],
    "mask": [("after_softmax", True), ("length", 5), ("keep2", False), ("length", 0),
             ("empty", "nan"), ("empty", "raise"), ("length", 1), ("keep1", False),
             ("empty", "zeros"), ("keep1", True), ("after_softmax", False)],
    "window": [("half_width", 0.0), ("centre", 5.0), ("target", 5), ("half_width", 5.0),
               ("centre", 1.0), ("centre", 10.0), ("target", 1), ("half_width", 0.0),
               ("centre", 9.5)],
    "axis": [("axis", -2), ("batch", 1), ("axis", 0), ("batch", 0), ("axis", -1)],
    "precision": [("length", 0), ("fill", "-inf"), ("softmax", "naive"), ("dtype", "bfloat16"),
                  ("fill", "finfo.min"), ("empty", "nan"), ("empty", "raise"), ("length", 5),
                  ("scale", 1e4), ("dtype", "float32"), ("softmax", "stable"),
                  ("fill", "-1e4"), ("dtype", "float16"), ("scale", 20.0)],
    "hull": [("w1", 1.0), ("w2", 0.0), ("temperature", 0.05), ("temperature", 5.0),
             ("preset", "chapter2"), ("preset", "uniform"), ("w3", 0.0), ("w1", 0.0),
             ("w2", 0.0), ("w3", 0.5)],
    "geometry": [("angle", 61), ("length", 3.0), ("angle", 180), ("length", 0.0),
                 ("angle", -180), ("length", 0.05), ("angle", 0), ("angle", 104)],
    "localp": [("logit", 4.0), ("half_width", 0.0), ("logit", -4.0), ("half_width", 5.0),
               ("target", 1), ("logit", 0.0), ("half_width", 0.5), ("target", 10)],
}


def artist_ids(e):
    ids = [id(e.figure), id(e.figure.canvas)] + [id(a) for a in e.figure.dynamic_artists]
    for ax in e.figure.axes:
        ids += [id(ax)] + [id(a) for a in ax.get_children()]
    return ids


@pytest.mark.parametrize("explorer", NAMES, indirect=True)
def test_every_step_matches_the_core_without_rebuilding(explorer, request):
    name = request.node.callspec.params["explorer"]
    check_explorer(name, explorer)
    before_ids = artist_ids(explorer)
    renders = explorer.figure.static_renders
    for control, value in SCENARIOS[name]:
        explorer.controls[control].value = value
        check_explorer(name, explorer)
        assert artist_ids(explorer) == before_ids, f"{name}: artists replaced after {control}"
        assert explorer.figure.static_renders == renders, f"{name}: static layer re-rendered"
    explorer.figure.canvas.draw()


@pytest.mark.parametrize("explorer", NAMES, indirect=True)
def test_reset_restores_every_control_and_the_state(explorer, request):
    name = request.node.callspec.params["explorer"]
    start = {k: c.value for k, c in explorer.controls.items()}
    start_weights = np.array(explorer.state.weights, dtype=float)
    with explorer.hold():
        for control, value in SCENARIOS[name]:
            explorer.controls[control].value = value
    explorer.reset()
    assert {k: c.value for k, c in explorer.controls.items()} == start
    np.testing.assert_array_equal(np.array(explorer.state.weights, dtype=float), start_weights)
    check_explorer(name, explorer)
    explorer.reset_button.click()
    assert {k: c.value for k, c in explorer.controls.items()} == start


@pytest.mark.parametrize("explorer", NAMES, indirect=True)
def test_cached_drawing_equals_a_full_drawing(explorer, request):
    """The static-layer cache must never show stale pixels."""
    name = request.node.callspec.params["explorer"]
    fig = explorer.figure
    for control, value in SCENARIOS[name][:4]:
        explorer.controls[control].value = value
    fig.canvas.draw()
    cached = np.asarray(fig.canvas.buffer_rgba()).copy()
    fig.cache_enabled = False
    try:
        fig.canvas.draw()
        full = np.asarray(fig.canvas.buffer_rgba()).copy()
    finally:
        fig.cache_enabled = True
    assert np.array_equal(cached, full)


@pytest.mark.parametrize("explorer", NAMES, indirect=True)
def test_callbacks_print_nothing_and_warn_nothing(explorer, request, capsys):
    name = request.node.callspec.params["explorer"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for control, value in SCENARIOS[name]:
            explorer.controls[control].value = value
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


@pytest.mark.parametrize("explorer", NAMES, indirect=True)
def test_display_bundle_has_widget_text_and_png(explorer):
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == explorer.describe()
    assert base64.b64decode(bundle["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert explorer.widget is explorer.widget  # built once


def test_query_presets_and_sliders_stay_in_sync(explorers):
    e = explorers["query"]
    e.reset()
    e.controls["preset"].value = "later"
    assert (e.controls["q1"].value, e.controls["q2"].value, e.controls["q3"].value) == (
        -1.0, -0.8, -0.3)
    assert e.state.weights.argmax() >= 3  # the later query retrieves the later sources
    e.controls["q1"].value = 0.2
    assert e.controls["preset"].value == "custom"
    e.set(q1=0.8, q2=-0.3, q3=0.5)
    assert e.controls["preset"].value == "chapter"
    np.testing.assert_allclose(np.round(e.state.weights, 3), [0.123, 0.361, 0.2, 0.101, 0.215])
    e.reset()


def test_hull_presets_reproduce_the_chapter_weights(explorers):
    e = explorers["hull"]
    e.reset()
    for preset, w in zip(("chapter1", "chapter2"), HULL_WEIGHTS):
        e.controls["preset"].value = preset
        np.testing.assert_allclose(e.state.weights, w, atol=1e-12)
    e.controls["w2"].value = 1.0
    assert e.controls["preset"].value == "custom"
    e.set(w1=0.15, w2=0.25, w3=0.6000000000000001)  # what a browser may send back
    assert e.controls["preset"].value == "chapter2"
    e.reset()


def test_hold_batches_changes_into_one_update(explorers, monkeypatch):
    e = explorers["query"]
    e.reset()
    calls = []
    original = e._compute
    monkeypatch.setattr(e, "_compute", lambda: calls.append(1) or original())
    e.set(q1=0.1, q2=0.2, q3=0.3, temperature=0.5)
    assert len(calls) == 1
    assert e.state.temperature == pytest.approx(0.5)
    with pytest.raises(KeyError, match="unknown control"):
        e.set(q4=1.0)
    monkeypatch.undo()
    e.reset()


@pytest.mark.parametrize("name", NAMES)
def test_a_browsers_rounding_of_a_slider_value_is_not_a_move(name, explorers, monkeypatch):
    """A page that opens sends each float slider's value back snapped to ``min + k * step`` in
    the browser's arithmetic (0.8 comes back as 0.7999999999999998): no recomputation, no frame
    (a Voila page opening cost two extra frames per figure); a real move still updates."""
    e = explorers[name]
    e.reset()
    sliders = {n: c for n, c in e.controls.items()
               if isinstance(c, (W.FloatSlider, W.FloatLogSlider)) and c.value != 0}
    if not sliders:
        pytest.skip("no float slider away from 0")
    updates, frames = [], []
    monkeypatch.setattr(e, "_compute", lambda original=e._compute: updates.append(1) or original())
    monkeypatch.setattr(e.view, "refresh", lambda: frames.append(1))
    for c in sliders.values():
        c.value = c.value * (1 + 4e-16) if c.value > 0 else c.value * (1 - 4e-16)
    assert updates == [] and frames == []
    n, c = next(iter(sliders.items()))
    lo, hi = ((c.base ** c.min, c.base ** c.max) if isinstance(c, W.FloatLogSlider)
              else (c.min, c.max))
    c.value = hi if abs(c.value - hi) > abs(c.value - lo) else lo  # a real move
    assert updates == [1] and frames == [1], n
    monkeypatch.undo()
    e.reset()


def test_an_unexpected_error_is_shown_in_the_figure_not_raised(explorers, monkeypatch, capsys):
    e = explorers["temperature"]
    e.reset()

    def boom():
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(e, "_compute", boom)
    e.controls["temperature"].value = 0.3  # must not raise
    assert isinstance(e.last_error, RuntimeError)
    assert "simulated bug" in e.plot.messages()["error"]
    assert capsys.readouterr().out == ""
    monkeypatch.undo()
    e.controls["temperature"].value = 0.4
    assert e.last_error is None and "error" not in e.plot.messages()
    e.reset()


def test_the_issue_edge_cases_draw_a_message():
    m = widgets.MaskExplorer(backend="agg")
    m.controls["length"].value = 0
    assert m.plot.messages()["before"] == (
        "all positions masked:\nweights are 0 by the 'zeros' policy")
    assert m.state.row_sum == 0 and not np.isnan(m.state.weights).any()
    w = widgets.WindowExplorer(backend="agg")
    w.set(centre=5.5, half_width=0.0)
    assert "no source position" in w.plot.messages()["local"]
    w.set(centre=5.0)
    assert w.state.scored == 1 and w.state.weights[4] == 1.0
    p = widgets.PrecisionExplorer(backend="agg")
    p.set(dtype="float16", fill="-1e9", length=0)
    assert p.state.fill_overflows and np.isnan(p.state.kernel_weights).all()
    assert "-inf in float16" in p.plot.messages()["kernel"]
    assert not np.isnan(p.state.weights).any()  # the library's 'zeros' policy: no NaN
    p.set(fill="finfo.min")
    assert np.allclose(p.state.kernel_weights, 0.2, atol=1e-3)
    assert "uniform weights over padding" in p.plot.messages()["kernel"]
    p.set(length=3, scale=1e4, softmax="naive")
    assert "overflows float16" in p.plot.messages()["kernel"]
    t = widgets.TemperatureExplorer(backend="agg")
    t.controls["temperature"].value = 0.05
    assert t.state.max_weight > 0.99 and t.last_error is None
    for e in (m, w, p, t):
        e.figure.canvas.draw()


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="backend must be one of"):
        widgets.QueryExplorer(backend="svg")
    with pytest.raises(ValueError, match="Q must have shape"):
        widgets.AxisExplorer(np.zeros((3, 4)), np.zeros((5, 4)), np.zeros((5, 6)), backend="agg")


# --- canvases: ipympl, the inline fallback, presentation size -------------------------------

@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # ipympl's Toolbar, not ours
def test_ipympl_canvas_is_attached_without_touching_the_global_backend(monkeypatch):
    pytest.importorskip("ipympl")
    import matplotlib
    from ipympl.backend_nbagg import Canvas

    backend_before = matplotlib.get_backend()
    e = widgets.TemperatureExplorer()
    assert e.backend == "ipympl" and isinstance(e.canvas, Canvas)
    assert e.canvas.figure is e.figure and e.canvas in e.widget.children
    assert matplotlib.get_backend() == backend_before
    idle = []
    monkeypatch.setattr(e.canvas, "draw_idle", lambda: idle.append(1))
    e.controls["temperature"].value = 0.2
    assert idle == [1]
    e.canvas.draw()  # the real ipympl draw path (renders and diffs the image) works headless
    np.testing.assert_array_equal(heights(e.plot.bars), e.state.weights)
    assert not e.canvas.toolbar_visible and not e.canvas.header_visible


def test_inline_fallback_redraws_a_png_and_says_so_once(monkeypatch):
    monkeypatch.setattr(_canvas, "ipympl_unavailable", lambda: "ipympl is not available here")
    monkeypatch.setattr(_canvas, "_fallback_announced", False)
    first = widgets.TemperatureExplorer()
    second = widgets.MaskExplorer()
    assert first.backend == second.backend == "inline"
    assert isinstance(first.canvas, FigureCanvasAgg)
    notes = [c for e in (first, second) for c in e.widget.children
             if isinstance(c, W.HTML) and "ipympl is not available" in c.value]
    assert len(notes) == 1 and notes[0] in first.widget.children
    png = first.view.image.value
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    first.controls["temperature"].value = 0.1
    assert first.view.image.value != png
    with pytest.raises(ImportError, match="pip install ipympl"):
        widgets.QueryExplorer(backend="ipympl")


def test_an_untested_ipympl_falls_back_to_the_picture_and_names_its_version(monkeypatch):
    from attention_lab import _compat

    real = _compat.metadata.version
    monkeypatch.setattr(_compat.metadata, "version",
                        lambda name: "0.99.1" if name == "ipympl" else real(name))
    monkeypatch.setattr(_canvas, "_fallback_announced", False)
    monkeypatch.delenv(_compat.ALLOW_UNTESTED, raising=False)
    e = widgets.TemperatureExplorer()
    assert e.backend == "inline" and not widgets.ipympl_available()
    note = e.view.note.value
    assert "ipympl 0.99.1" in note and "ipympl&gt;=0.10,&lt;0.11" in note, note
    with pytest.raises(ImportError, match="ipympl 0.99.1"):
        widgets.QueryExplorer(backend="ipympl")


@pytest.mark.parametrize("name", NAMES)
def test_every_explorer_works_in_presentation_mode(name, explorers):
    big = widgets.EXPLORERS[name](backend="agg", presentation=True)
    assert big.figure.get_figwidth() > 1.3 * explorers[name].figure.get_figwidth()
    for control, value in SCENARIOS[name]:
        big.controls[control].value = value
        check_explorer(name, big)
    big.reset()
    check_explorer(name, big)


def test_presentation_mode_is_bigger():
    small = widgets.HullExplorer(backend="agg")
    big = widgets.HullExplorer(backend="agg", presentation=True)
    assert big.figure.get_figwidth() > 1.3 * small.figure.get_figwidth()
    assert big.plot.style.fs > 1.4 * small.plot.style.fs
    assert "attention-lab-presentation" in big.controls["w1"]._dom_classes
    big.controls["w1"].value = 0.9
    assert big.last_error is None


@pytest.mark.parametrize("name", NAMES)
def test_starting_values_lie_on_the_slider_grid(name, explorers):
    """A browser snaps a slider to ``min + k * step`` and sends the snapped value back; a starting
    value off the grid would change the explorer's numbers as soon as it is drawn."""
    for control_name, c in explorers[name].controls.items():
        if isinstance(c, W.FloatLogSlider):
            x = np.log10(c.value) / np.log10(c.base)
            k = (x - c.min) / c.step
            snapped = c.base ** (c.min + round(k) * c.step)
        elif isinstance(c, (W.FloatSlider, W.IntSlider)):
            snapped = c.min + round((c.value - c.min) / c.step) * c.step
        else:
            continue
        assert snapped == pytest.approx(c.value, abs=1e-9), (name, control_name)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # ipympl's Toolbar, not ours
def test_fast_canvas_sends_the_same_pixels_as_ipympl():
    pytest.importorskip("ipympl")
    import io

    from ipympl.backend_nbagg import Canvas
    from PIL import Image

    e = widgets.QueryExplorer()
    canvas = e.canvas
    assert isinstance(canvas, Canvas) and canvas.png_compress_level == 1
    canvas.syncing_data_url = False
    frames = []
    canvas.send_binary = frames.append
    canvas.draw()  # first frame: full
    e.controls["q1"].value = -1.0
    canvas.draw()  # second frame: only the changed pixels
    full = np.asarray(Image.open(io.BytesIO(frames[0])))
    diff = np.asarray(Image.open(io.BytesIO(frames[1])))
    now = np.asarray(canvas.get_renderer().buffer_rgba())
    changed = diff[..., 3] > 0
    assert 0 < changed.mean() < 0.5  # a diff frame, not a full one
    assert np.array_equal(diff[changed], now[changed])
    assert full.shape == now.shape
    # ipympl's own encoder gives the same pixels
    canvas._png_is_old = canvas._force_full = True
    ours = np.asarray(Image.open(io.BytesIO(canvas.get_diff_image())))
    canvas._png_is_old = canvas._force_full = True
    stock = np.asarray(Image.open(io.BytesIO(Canvas.get_diff_image(canvas))))
    assert np.array_equal(ours, stock)


def test_the_mask_explorer_names_the_wrong_order_sum_only_once_shown(explorers):
    """Its first task asks for a prediction of that sum: the stored text of a displayed
    explorer (and the text a screen reader gets) must not give it before the box is ticked."""
    e = explorers["mask"]
    e.reset()
    assert "after softmax" not in e.describe() and "0.684" not in e.describe()
    e.controls["after_softmax"].value = True
    assert e.describe().endswith("masked after softmax: row sum 0.684")
    e.reset()


def test_the_mask_toggles_do_not_call_a_padded_position_eligible(explorers):
    """At the starting valid length 3 every position toggle is pressed, positions 4 and 5
    included, which the figure crosses out and the readout calls 'eligible: no': the toggles'
    label and names (a screen reader's) must not call them eligible. The label stays as short as
    the old one, which fitted the demo's row ('keep positions (within the valid length):' was cut
    off at every size)."""
    e = explorers["mask"]
    e.reset()
    assert e.controls["keep4"].value and not e.state.mask[3]
    label = e._controls_box().children[1].children[0].value
    names = [e.controls[f"keep{i}"].tooltip for i in range(1, 6)]
    assert not any("eligible" in text for text in [label, *names]), [label, *names]
    assert all("valid length" in text for text in names), names
    assert len(label) <= len("eligible positions:"), label


def test_stretching_the_query_is_lowering_the_temperature(explorers):
    """Geometry explorer: the weights at query length L are the unit query's at temperature
    1/L; at length 0 every score is 0 and the weights are uniform."""
    from attention_lab import softmax

    e = explorers["geometry"]
    e.reset()
    for length in (0.25, 1.0, 2.5):
        e.set(angle=35, length=length)
        np.testing.assert_allclose(e.state.weights, softmax(e.state.projections,
                                                             temperature=1 / length), atol=1e-12)
        assert f"τ = 1/|q| = {1 / length:.2f}" in e.readout.value
    e.controls["length"].value = 0.0
    np.testing.assert_allclose(e.state.weights, 0.25)
    assert "uniform" in e.readout.value and not e.plot.arrow.get_visible()
    e.reset()


@pytest.mark.parametrize("dtype, fill, length, scale", [
    ("float32", "-1e4", 0, 1.0), ("float16", "finfo.min", 0, 1.0), ("bfloat16", "-1e9", 0, 1.0),
    ("float16", "-inf", 1, 1e4)])
def test_the_precision_explorer_names_underflow_not_overflow_when_no_exponential_is_inf(
        explorers, dtype, fill, length, scale):
    """Naive softmax of an all-masked row with a finite fill (or of valid scores all scaled far
    below 0): every exp(...) underflows to 0 and the NaN is 0 / 0; the figure said exp(score)
    overflows and inf / inf = NaN, which no number of that row does."""
    e = explorers["precision"]
    e.reset()
    e.set(dtype=dtype, fill=fill, length=length, scale=scale, softmax="naive")
    assert e.state.kernel_nan
    msg = e._kernel_message(e.state)
    assert "overflow" not in msg and "inf / inf" not in msg
    assert "0 / 0" in msg
    e.set(length=5, scale=1e4)  # a true overflow keeps its message
    assert "overflows" in e._kernel_message(e.state)
    e.reset()


def test_the_hull_readout_does_not_call_an_all_zero_context_outside_the_range(explorers):
    """All three weights 0: the figure says 'no mixture'; the readout said 'inside the values'
    range: NO', although the context (0, 0) the 'zeros' policy returns is value 1 itself."""
    e = explorers["hull"]
    e.reset()
    e.set(w1=0.0, w2=0.0, w3=0.0)
    assert e.state.empty
    assert "range: NO" not in e.readout.value and "no mixture" in e.readout.value
    assert "no mixture" in e.plot.check.get_text()
    e.reset()
    assert "range: yes" in e.readout.value
