"""The model explorer (an Explorer like the others): controls drive the model, the figure updates
in place, never prints; its state is frozen; positions are numbered 1..S wherever a student reads
them."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

from attention_lab.toy.explorer import FAILURE_CASE, ModelExplorer


@pytest.fixture(scope="module")
def model():
    from attention_lab import toy

    return toy.load()


@pytest.fixture()
def ex(model):
    return ModelExplorer(model, backend="agg")


def test_starts_with_a_correct_reversal(ex):
    s = ex.state
    assert s.source == "abcdefghij" and s.output == "jihgfedcba" and s.exact
    assert s.weights.shape == (10, 10)
    assert np.allclose(s.weights.sum(-1), 1, atol=1e-5)
    assert np.array_equal(s.truth, 9 - np.arange(10))
    shown = ex.plot.image.get_array()
    assert np.allclose(shown[:10, :10], s.weights)
    assert shown.mask[10:, :].all() and shown.mask[:, 10:].all()  # unused cells hidden
    x, y = ex.plot.truth.get_data()
    assert np.array_equal(x, s.truth) and np.array_equal(y, np.arange(10))
    assert not ex.plot.left.get_visible() and not ex.plot.right.get_visible()
    assert "10/10 right" in ex.plot.title.get_text()


def test_typing_a_source_updates_state_and_artists_in_place(ex, capsys):
    fig, image, truth = ex.figure, ex.plot.image, ex.plot.truth
    ex.controls["source"].value = "badge"
    assert ex.state.source == "badge" and ex.state.expected == "egdab"
    assert ex.state.weights.shape == (5, 5)
    assert ex.figure is fig and ex.plot.image is image and ex.plot.truth is truth
    assert ex.plot.ax.get_xlim() == (-0.5, 4.5)
    assert [t.get_text() for t in ex.plot.ax.get_xticklabels()] == \
        ["1\nb", "2\na", "3\nd", "4\ng", "5\ne"]
    assert ex.plot.ax.get_yticklabels()[0].get_text() == "1: e (e)"
    assert ex.state.output in ex.plot.title.get_text()
    assert capsys.readouterr().out == ""


def test_window_failure_case_shows_the_failure(ex):
    ex.show_failure_case()
    s = ex.state
    assert s.window == (FAILURE_CASE["centre"], FAILURE_CASE["half_width"])
    assert s.eligible.tolist() == [True] * 3 + [False] * 7
    # attention can only land in the window ...
    assert np.allclose(s.weights[:, 3:], 0)
    # ... so the steps that need positions 9..3 all fail
    assert not s.correct[:7].any()
    assert not s.exact
    assert ex.plot.right.get_visible() and not ex.plot.left.get_visible()
    assert ex.plot.right.get_x() == pytest.approx(2.5)
    assert ex.plot.right.get_width() == pytest.approx(7)
    assert s.window_bounds == (1, 3)
    assert "window 1..3: 7 step(s) need a position outside it" in ex.plot.title.get_text()
    labels = ex.plot.ax.get_yticklabels()
    assert "\u2717" in labels[0].get_text() and labels[0].get_color() != labels[9].get_color()


def test_a_still_of_the_explorer_says_what_its_figure_shows(ex):
    """``still()``: the figure as a picture with a description (notebook 04's failure case)."""
    ex.show_failure_case()
    s, still = ex.state, ex.still()
    assert still.figure is ex.figure and still.png()[:4] == b"\x89PNG"
    d = still.description
    assert d.startswith("Figure: the model explorer's heatmap of the additive model")
    assert "the window 1..3" in d and "hatched grey" in d
    assert "the true position of 7 of 10 steps lies outside it" in d
    assert f"decodes {s.output} (expected jihgfedcba): {int(s.correct.sum())} of 10" in d
    ex.set(window=False)
    assert "no window" in ex.still().description and "hatched" not in ex.still().description


def test_empty_window_gives_zero_attention_not_nan(ex):
    ex.controls["window"].value = True
    ex.controls["centre"].value = 11
    ex.controls["source"].value = "abc"  # the window 10..12 holds no source position
    assert np.all(ex.state.weights == 0) and np.isfinite(ex.state.weights).all()
    assert "empty window" in ex.plot.title.get_text()
    assert ex.plot.left.get_visible()


def test_temperature_flattens_attention(ex):
    h1 = ex.state.entropy.mean()
    ex.controls["temperature"].value = 10.0
    assert ex.state.entropy.mean() > h1 + 0.5
    ex.controls["temperature"].value = 0.1
    assert ex.state.entropy.mean() < h1


def test_bad_source_is_reported_in_the_figure_and_keeps_last_state(ex, capsys):
    before = ex.state.weights.copy()
    ex.controls["source"].value = "hello"
    assert "'o'" in ex.state.error or "contains" in ex.state.error
    assert ex.plot.title.get_text().startswith("cannot decode")
    assert np.array_equal(ex.state.weights, before)
    ex.controls["source"].value = "ab"  # too short
    assert "length 2" in ex.state.error
    ex.controls["source"].value = "cab"
    assert ex.state.error == "" and ex.state.output == "bac"
    assert capsys.readouterr().out == ""


def test_reset_restores_every_control(ex):
    start = {k: w.value for k, w in ex.controls.items()}
    ex.show_failure_case()
    ex.controls["temperature"].value = 3.0
    ex.controls["source"].value = "cafe"
    ex.reset()
    assert {k: w.value for k, w in ex.controls.items()} == start
    assert ex.state.output == "jihgfedcba"
    assert not ex.plot.right.get_visible()


def test_presentation_uses_larger_fonts(model):
    small = ModelExplorer(model)
    big = ModelExplorer(model, presentation=True)
    assert big.plot.title.get_fontsize() > small.plot.title.get_fontsize()
    assert big.figure.get_size_inches()[0] > small.figure.get_size_inches()[0]


def test_ipympl_canvas_without_switching_backend(model):
    import matplotlib

    backend = matplotlib.get_backend()
    ex = ModelExplorer(model)
    assert ex.backend == "ipympl" and ex.canvas.figure is ex.figure
    assert matplotlib.get_backend() == backend
    bundle = ex.widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_inline_fallback_without_ipympl(model, monkeypatch):
    real_import = builtins.__import__

    def no_ipympl(name, *args, **kwargs):
        if name.startswith("ipympl"):
            raise ImportError("no ipympl")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ipympl)
    ex = ModelExplorer(model)
    assert ex.backend == "inline" and ex.view.widget is ex.view.image in ex.widget.children
    png = ex.view.image.value
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    ex.controls["source"].value = "cafe"
    assert ex.view.image.value != png


def test_display_text_is_a_short_description(ex):
    bundle = ex._repr_mimebundle_()
    assert bundle["text/plain"] == repr(ex) == ("ModelExplorer(additive model): source "
                                                "'abcdefghij' -> 'jihgfedcba', temperature 1, "
                                                "window off")
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_typed_capitals_are_read_as_symbols(ex):
    ex.controls["source"].value = " CAFE "
    assert ex.state.error == "" and ex.state.source == "cafe"


def test_the_state_is_frozen(ex):
    """The state is the Explorer base's frozen dataclass, with the base's scores, weights and
    context; the dict-style access and the figure's .fig alias of the old explorer are gone."""
    import dataclasses

    from attention_lab.widgets import Explorer

    assert isinstance(ex, Explorer)
    assert not hasattr(ex.figure, "fig")
    s = ex.state
    with pytest.raises(TypeError):
        s["output"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.output = "x"
    assert s.scores.shape == s.weights.shape == (10, 10)
    assert s.context.shape[0] == 10 and np.isfinite(s.context).all()
    assert set(s.as_dict()) >= {"source", "output", "weights", "scores", "context", "window"}


def test_the_window_counts_positions_from_1(ex):
    """The centre slider runs 1..12 and the window keeps the positions j with |j - centre| <=
    half_width, j = 1..S: centre 1 with half-width 0 keeps the first position only."""
    c = ex.controls["centre"]
    assert (c.min, c.max) == (1, 12)
    ex.set(window=True, centre=1, half_width=0)
    assert ex.state.eligible.tolist() == [True] + [False] * 9
    assert ex.state.window_bounds == (1, 1)
    assert "window 1..1" in ex.readout.value
    ex.set(centre=10, half_width=1)
    assert ex.state.eligible.tolist() == [False] * 8 + [True] * 2


def test_failure_case_decodes_once_and_the_reset_button_works(ex, monkeypatch):
    calls = []
    decode = ex.model.decode
    monkeypatch.setattr(ex.model, "decode", lambda *a, **k: calls.append(1) or decode(*a, **k))
    ex.show_failure_case()
    assert len(calls) == 1 and ex.state.window == (2, 1)
    ex.reset_button.click()
    assert ex.state.window is None and ex.state.exact


def test_a_bad_starting_source_starts_from_an_example(model):
    ex = ModelExplorer(model, source="hello", backend="agg")
    assert ex.controls["source"].value == "abcdefghij" and ex.state.error == ""
    ex.controls["source"].value = "cafe"
    ex.reset()
    assert ex.state.source == "abcdefghij"


def test_an_empty_window_puts_no_weight_peak_on_a_true_position(ex):
    """An empty window (centre 12 beyond a 10-symbol source) leaves every weight 0: no step's
    largest weight sits on its true position, but argmax of a zero row (index 0) matched the last
    step's true position 1, so the title, the readout and the still said '1/10 steps'."""
    ex.set(source="abcdefghij", window=True, centre=12, half_width=0)
    s = ex.state
    assert s.weights.max() == 0 and not s.aligned.any()
    assert "peaks on the true position in 0/10 steps" in s.title
    assert "in 0/10 steps" in ex.readout.value
    assert "in 0 of 10 steps" in ex.still().description
