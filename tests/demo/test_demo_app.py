"""The lecture demo's app without a browser: build_demo (tabs, reset, tabs built on first opening,
figures rendered ahead) with the real explorers and the demo notebook's tabs (the launcher is tested
in test_demo_launch.py, the server in test_demo_server.py, the page in tests/browser)."""

from __future__ import annotations

import json
from pathlib import Path

import ipywidgets as W
import numpy as np
import pytest

from attention_lab.demo import app as D
from attention_lab.widgets import MaskExplorer, QueryExplorer, TemperatureExplorer
from attention_lab.widgets.base import same_value

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
    assert same_value(a, b) is same


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


def _demo_notebook_code() -> str:
    """The code of notebooks/demo.py (what the demo's kernels run)."""
    import jupytext

    source = (ROOT / "notebooks" / "demo.py").read_text()
    return "\n".join(c.source for c in jupytext.reads(source, fmt="py:percent").cells
                     if c.cell_type == "code")


def test_the_demo_notebook_has_the_main_explorers_and_imports_no_torch(tmp_path):
    """The notebook Voila serves, run as a viewer's kernel runs it (a process of its own): the
    five main explorers built at once and their figures rendered ahead, the trained model's tab
    built when opened, all large, no stand-in, and no torch (about 200 MiB and seconds of CPU per
    viewer); its stored output is the demo's description."""
    import os
    import subprocess
    import sys

    script = tmp_path / "run.py"
    script.write_text(_demo_notebook_code().replace("\ndemo\n", "\n") + """
import json, sys
print(json.dumps({"titles": demo.titles, "built": list(demo.explorers),
                  "presentation": [ex.presentation for ex in demo.explorers.values()],
                  "static_renders": [ex.figure.static_renders for ex in demo.explorers.values()],
                  "repr": repr(demo), "torch": "torch" in sys.modules}))
""")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT,
                         timeout=180, env={**os.environ, "MPLBACKEND": "agg"})
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["titles"] == ["Query", "Temperature", "Mask", "Window", "Score", "Trained model"]
    assert got["built"] == got["titles"][:5]
    assert all(got["presentation"]) and got["static_renders"] == [1] * 5
    assert "Trained model (built when opened)" in got["repr"]
    assert got["torch"] is False
    assert "_standin" not in _demo_notebook_code()
    stored = json.loads((ROOT / "notebooks" / "demo.ipynb").read_text())
    (cell,) = [c for c in stored["cells"] if c["cell_type"] == "code"]
    assert cell["outputs"][0]["data"]["text/plain"] == [got["repr"]]


# ------------------------------------------------------------------------------------------------
# Tabs built on first opening, figures rendered ahead
# ------------------------------------------------------------------------------------------------


class Counting:
    """Builds TemperatureExplorers and counts them."""

    def __init__(self):
        self.built = 0

    def __call__(self, **kwargs):
        self.built += 1
        return TemperatureExplorer(backend="agg", **kwargs)


def test_a_later_tab_is_built_once_when_first_opened():
    factory = Counting()
    demo = D.build_demo({"Query": QueryExplorer(backend="agg"),
                         "Later": D.later(factory, presentation=True)})
    assert factory.built == 0 and list(demo.explorers) == ["Query"]
    assert "Later (built when opened)" in repr(demo)
    assert not any(k.startswith("Later/") for k in demo.controls)
    holder = demo.tabs.children[1]
    assert "opens when you choose this tab" in holder.children[0].value
    demo.tabs.selected_index = 1  # a viewer clicks the tab
    assert factory.built == 1 and list(demo.explorers) == ["Query", "Later"]
    later = demo.explorers["Later"]
    assert later.presentation and holder.children == (later.widget,)
    assert demo.controls["Later/temperature"] is later.controls["temperature"]
    demo.tabs.selected_index = 0
    demo.tabs.selected_index = 1
    assert factory.built == 1  # built once
    assert demo.explorer("Later") is later
    assert repr(demo).endswith("Later (1 control); reset button")
    # the reset button covers the tab built later
    later.controls["temperature"].value = 3.0
    assert demo.changed() == ["Later/temperature"]
    demo.reset_button.click()
    assert demo.changed() == [] and later.state.temperature == 1.0


def test_a_later_tab_on_screen_first_is_built_at_once():
    factory = Counting()
    demo = D.build_demo({"First": D.later(factory), "Second": Bare()})
    assert factory.built == 1 and list(demo.explorers) == ["First", "Second"]


def test_a_tab_that_fails_to_build_says_why_and_is_tried_again():
    calls = []

    def broken():
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("no model server at demo.sock")
        return Bare()

    demo = D.build_demo({"Query": Bare(), "Model": D.later(broken)})
    demo.tabs.selected_index = 1  # a callback: must not raise into the kernel
    box = demo.tabs.children[1]
    assert "could not be opened: ConnectionError: no model server at demo.sock" in \
        box.children[0].value
    assert demo.errors == {"Model": "ConnectionError: no model server at demo.sock"}
    demo.reset()  # the rest of the demo works
    demo.tabs.selected_index = 0
    demo.tabs.selected_index = 1
    assert len(calls) == 2 and "Model" in demo.explorers and demo.errors == {}
    with pytest.raises(KeyError, match="no tab 'Nope'"):
        demo.explorer("Nope")


def test_a_first_tab_that_fails_to_build_leaves_the_demo_running():
    """The tab on screen first is built with the app: its failure is shown there, as any tab's,
    instead of taking the whole demo (every other tab) down."""
    def broken():
        raise ConnectionError("no model server at demo.sock")

    demo = D.build_demo({"Model": D.later(broken), "Query": Bare()})
    assert demo.errors == {"Model": "ConnectionError: no model server at demo.sock"}
    assert "could not be opened" in demo.tabs.children[0].children[0].value
    assert list(demo.explorers) == ["Query"]


def test_later_needs_a_callable():
    with pytest.raises(TypeError, match="later\\(\\) needs a callable"):
        D.later(TemperatureExplorer(backend="agg"))


def test_prerender_renders_each_static_layer_once_ahead_of_the_first_frame():
    """The figures' static layers (axes, ticks, labels) are rendered when the app is built, on
    ipympl's canvas without sending a frame, and kept small; the first frame a page asks for is
    the frame encoded then."""
    explorers = {"Query": QueryExplorer(presentation=True),
                 "Mask": MaskExplorer(presentation=True)}
    assert all(ex.backend == "ipympl" for ex in explorers.values())
    assert all(ex.figure.static_renders == 0 for ex in explorers.values())
    sent = []
    for ex in explorers.values():
        ex.canvas.send = lambda *a, **k: sent.append(a)
    D.build_demo(explorers)
    assert [ex.figure.static_renders for ex in explorers.values()] == [1, 1]
    assert sent == []  # nothing went to a page
    # ... and each keeps only that frame and its static layer, compressed (no pixel buffer)
    assert all(ex.canvas._cold and ex.canvas.renderer is None and ex.figure._packed
               for ex in explorers.values())
    kept = [ex.canvas._whole_png for ex in explorers.values()]  # their first whole frames
    frames = []
    for ex in explorers.values():
        ex.canvas.syncing_data_url = False  # a page's view is ready
        ex.canvas.send_binary = frames.append
        ex.canvas._force_full = True        # what a page's "refresh" asks for
        ex.canvas.draw()                    # what its first "draw" request runs
    assert [ex.figure.static_renders for ex in explorers.values()] == [1, 1]
    assert all(f is k for f, k in zip(frames, kept))  # sent as encoded in the preheating
    unrendered = D.build_demo({"Query": QueryExplorer()}, prerender=False)
    assert unrendered.explorers["Query"].figure.static_renders == 0


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
