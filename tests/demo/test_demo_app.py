"""The lecture demo's app without a browser: build_demo (tabs, reset) with the real explorers and
the demo notebook's tabs (the launcher is tested in test_demo_launch.py, the page in tests/browser)."""

from __future__ import annotations

import json
from pathlib import Path

import ipywidgets as W
import numpy as np
import pytest

from attention_lab.demo import app as D
from attention_lab.widgets import MaskExplorer, QueryExplorer, TemperatureExplorer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def demo():
    return D.build_demo({
        "Query": QueryExplorer(backend="agg", presentation=True),
        "Temperature": TemperatureExplorer(backend="agg", presentation=True),
        "Mask": MaskExplorer(backend="agg", presentation=True),
    })


# ------------------------------------------------------------------------------------------------
# build_demo
# ------------------------------------------------------------------------------------------------


def test_tabs_controls_and_repr(demo):
    assert list(demo.tabs.titles) == ["Query", "Temperature", "Mask"]
    assert [c for c in demo.tabs.children] == [ex.widget for ex in demo.explorers.values()]
    assert list(demo.controls) == [
        *[f"Query/{k}" for k in ("preset", "q1", "q2", "q3", "temperature", "retrieval")],
        "Temperature/temperature",
        *[f"Mask/{k}" for k in ("length", "keep1", "keep2", "keep3", "keep4", "keep5",
                                "after_softmax", "empty")]]
    assert demo.changed() == []
    assert repr(demo) == ("Lecture demo: Query (6 controls), Temperature (1 control), "
                          "Mask (8 controls); reset button")
    bundle = demo._repr_mimebundle_()
    assert bundle["text/plain"] == repr(demo)
    assert bundle[D.WIDGET_MIME]["model_id"] == demo.widget.model_id
    assert "al-demo" in demo.widget._dom_classes
    assert "font-size: 20px" in demo.widget.children[0].value  # projector type, scoped to .al-demo
    assert "al-reset" in demo.reset_button._dom_classes


def move_everything(demo):
    values = {"Query/q1": -1.0, "Query/retrieval": "hard", "Query/temperature": 0.5,
              "Temperature/temperature": 2.0, "Mask/length": 5, "Mask/after_softmax": True,
              "Mask/empty": "nan", **{f"Mask/keep{i}": False for i in range(1, 6)}}
    for key, value in values.items():
        demo.controls[key].value = value
    # the preset menu follows the query sliders by itself
    assert sorted(demo.changed()) == sorted([*values, "Query/preset"])


@pytest.mark.parametrize("how", ["method", "button"])
def test_reset_puts_every_control_state_and_figure_back(demo, how):
    start = {t: (ex.state.weights.copy(), ex.readout.value) for t, ex in demo.explorers.items()}
    for ex in demo.explorers.values():
        ex.canvas.draw()
    pixels = {t: np.asarray(ex.canvas.buffer_rgba()).copy() for t, ex in demo.explorers.items()}
    move_everything(demo)
    assert np.isnan(demo.explorers["Mask"].state.weights).all()  # all masked, 'nan' policy
    demo.reset() if how == "method" else demo.reset_button.click()
    assert demo.changed() == []
    for title, ex in demo.explorers.items():
        np.testing.assert_array_equal(ex.state.weights, start[title][0])
        assert ex.readout.value == start[title][1]
        ex.canvas.draw()
        np.testing.assert_array_equal(np.asarray(ex.canvas.buffer_rgba()), pixels[title])
    assert "back at its starting value" in demo.status.value
    demo.controls["Query/q1"].value = 0.25
    assert demo.status.value == ""  # the message goes once something moves again


def test_the_browser_rounding_a_slider_value_is_not_a_change(demo):
    """A browser sends 0.8 on a grid -1.5 + k * 0.05 back as 0.7999999999999998 (at load and
    after a reset): the control has not moved, and the reset message stays."""
    demo.controls["Query/q1"].value = 0.7999999999999998
    assert demo.changed() == []
    demo.controls["Mask/length"].value = 4
    demo.reset()
    demo.controls["Query/q1"].value = 0.7999999999999998  # the browser's echo of the reset
    demo.controls["Query/q2"].value = -0.30000000000000004
    assert "back at its starting value" in demo.status.value and demo.changed() == []
    demo.controls["Query/q1"].value = 0.85  # a real move
    assert demo.status.value == "" and demo.changed() == ["Query/preset", "Query/q1"]


@pytest.mark.parametrize("a, b, same", [(0.8, 0.7999999999999998, True), (0.8, 0.85, False),
                                        (3, 3, True), (3, 4, False), (True, True, True),
                                        ("dot", "dot", True), ("dot", "additive", False),
                                        (0.0, 1e-13, True), (1.0, None, False)])
def test_same_value(a, b, same):
    assert D.same_value(a, b) is same


class Bare:
    """An explorer with controls only: no reset(), shown as itself (a widget)."""

    def __init__(self):
        self.controls = {"n": W.IntSlider(value=3, min=0, max=9)}


class Forgetful(TemperatureExplorer):
    """reset() that does nothing."""

    def reset(self):
        pass


def test_reset_covers_explorers_without_or_with_incomplete_reset():
    bare, forgetful = Bare(), Forgetful(backend="agg")
    demo = D.build_demo([("Bare", bare), ("Forgetful", forgetful)])
    bare.controls["n"].value = 7
    forgetful.controls["temperature"].value = 3.0
    demo.reset()
    assert demo.changed() == []
    assert forgetful.state.temperature == 1.0
    assert isinstance(demo.tabs.children[0], W.Output)  # no .widget: shown through its display


def test_the_demo_notebook_has_the_main_explorers_in_presentation_mode():
    """The notebook Voila serves: the five main explorers and the trained model, large, no
    stand-in; its stored output is the demo's one-line description."""
    import jupytext

    source = (ROOT / "notebooks" / "demo.py").read_text()
    namespace: dict = {}
    code = "\n".join(c.source for c in jupytext.reads(source, fmt="py:percent").cells
                     if c.cell_type == "code")
    exec(compile(code, "demo.py", "exec"), namespace)
    demo = namespace["demo"]
    assert list(demo.explorers) == ["Query", "Temperature", "Mask", "Window", "Score",
                                    "Trained model"]
    assert all(ex.presentation for ex in demo.explorers.values())
    assert "_standin" not in source
    stored = json.loads((ROOT / "notebooks" / "demo.ipynb").read_text())
    (cell,) = [c for c in stored["cells"] if c["cell_type"] == "code"]
    assert cell["outputs"][0]["data"]["text/plain"] == [repr(demo)]


def test_an_explorer_shown_through_its_mimebundle_lands_in_the_tab():
    inner = W.IntSlider()

    class Displayable:
        controls = {"x": inner}

        def _repr_mimebundle_(self, **kwargs):
            return {"text/plain": "Displayable()",
                    D.WIDGET_MIME: {"version_major": 2, "version_minor": 0,
                                    "model_id": inner.model_id}}

    demo = D.build_demo({"Only": Displayable()})
    (out,) = demo.tabs.children
    assert isinstance(out, W.Output)
    assert out.outputs[0]["data"][D.WIDGET_MIME]["model_id"] == inner.model_id


@pytest.mark.parametrize("explorers, error, message", [
    ({}, ValueError, "at least one explorer"),
    ([("A", Bare()), ("A", Bare())], ValueError, "distinct"),
    (["not a pair"], TypeError, "dict {tab title: explorer}"),
    ({"Broken": object()}, TypeError, "explorer 'Broken' \\(object\\) has no .controls"),
])
def test_bad_explorers_are_named(explorers, error, message):
    with pytest.raises(error, match=message):
        D.build_demo(explorers)


def test_bad_controls_and_widget_are_named():
    class NoValue:
        controls = {"go": W.Button()}

    with pytest.raises(TypeError, match="explorer 'T': control 'go' is a Button without a .value"):
        D.build_demo({"T": NoValue()})

    class BadWidget(Bare):
        widget = "not a widget"

    with pytest.raises(TypeError, match="explorer 'T': .widget must be an ipywidgets widget"):
        D.build_demo({"T": BadWidget()})
