"""The lecture demo without a browser: build_demo (tabs, reset), the stand-in explorer, and the
launcher's checks and messages (python -m attention_lab demo)."""

from __future__ import annotations

import socket

import ipywidgets as W
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_lab import demo as D
from attention_lab._standin import (SCORES, WeightsExplorer, compute, readout_text,
                                    temperature_at)


@pytest.fixture
def demo():
    return D.build_demo({
        "Query": WeightsExplorer(("query", "score")),
        "Temperature": WeightsExplorer(("temperature",)),
        "Mask": WeightsExplorer(("mask",)),
    })


# ------------------------------------------------------------------------------------------------
# build_demo
# ------------------------------------------------------------------------------------------------


def test_tabs_controls_and_repr(demo):
    assert list(demo.tabs.titles) == ["Query", "Temperature", "Mask"]
    assert [c for c in demo.tabs.children] == [ex.widget for ex in demo.explorers.values()]
    assert list(demo.controls) == ["Query/query", "Query/score", "Temperature/temperature",
                                   *[f"Mask/source_{i}" for i in range(1, 6)]]
    assert demo.changed() == []
    assert repr(demo) == ("Lecture demo: Query (2 controls), Temperature (1 control), "
                          "Mask (5 controls); reset button")
    bundle = demo._repr_mimebundle_()
    assert bundle["text/plain"] == repr(demo)
    assert bundle[D.WIDGET_MIME]["model_id"] == demo.widget.model_id
    assert "al-demo" in demo.widget._dom_classes
    assert "font-size: 20px" in demo.widget.children[0].value  # projector type, scoped to .al-demo


def move_everything(demo):
    values = {"Query/query": 0.5, "Query/score": "bilinear", "Temperature/temperature": 2.0,
              **{f"Mask/source_{i}": False for i in range(1, 6)}}
    for key, value in values.items():
        demo.controls[key].value = value
    assert sorted(demo.changed()) == sorted(values)


@pytest.mark.parametrize("how", ["method", "button"])
def test_reset_puts_every_control_and_figure_back(demo, how):
    start = {t: ex.state.weights.copy() for t, ex in demo.explorers.items()}
    heights = {t: [b.get_height() for b in ex._plot.bars] for t, ex in demo.explorers.items()}
    move_everything(demo)
    assert demo.explorers["Mask"].state.weights.sum() == 0  # all masked: nothing to show
    demo.reset() if how == "method" else demo.reset_button.click()
    assert demo.changed() == []
    for title, ex in demo.explorers.items():
        np.testing.assert_array_equal(ex.state.weights, start[title])
        assert [b.get_height() for b in ex._plot.bars] == heights[title]
        assert ex.readout.value == readout_text(compute(), 0.0)
    assert "back at its starting value" in demo.status.value
    demo.controls["Query/query"].value = 0.25
    assert demo.status.value == ""  # the message goes once something moves again


class Bare:
    """An explorer with controls only: no reset(), shown as itself (a widget)."""

    def __init__(self):
        self.controls = {"n": W.IntSlider(value=3, min=0, max=9)}


class Forgetful(WeightsExplorer):
    """reset() that forgets the temperature."""

    def reset(self):
        self.controls["query"].value = 0.0


def test_reset_covers_explorers_without_or_with_incomplete_reset():
    bare, forgetful = Bare(), Forgetful(("query", "temperature"))
    demo = D.build_demo([("Bare", bare), ("Forgetful", forgetful)])
    bare.controls["n"].value = 7
    forgetful.controls["query"].value = 0.4
    forgetful.controls["temperature"].value = 3.0
    demo.reset()
    assert demo.changed() == []
    assert forgetful.state.temperature == 1.0
    assert isinstance(demo.tabs.children[0], W.Output)  # no .widget: shown through its display


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


# ------------------------------------------------------------------------------------------------
# The stand-in explorer (the demo's provisional tabs and the browser fixtures)
# ------------------------------------------------------------------------------------------------


def test_standin_shows_the_core_numbers():
    ex = WeightsExplorer()
    ex.controls["temperature"].value = temperature_at(29)
    ex.controls["score"].value = "bilinear"
    ex.controls["source_2"].value = False
    expected = compute(temperature=temperature_at(29), score="bilinear",
                       eligible=(True, False, True, True, True))
    np.testing.assert_allclose(ex.state.weights, expected.weights, rtol=0, atol=1e-15)
    assert [b.get_height() for b in ex._plot.bars] == pytest.approx(expected.weights, abs=1e-15)
    assert ex._plot.values[1].get_text() == "masked"
    assert ex.readout.value == readout_text(expected, 0.0)
    assert "temperature 1.41" in ex.readout.value and "bilinear score" in ex.readout.value
    for i in range(1, 6):
        ex.controls[f"source_{i}"].value = False
    assert ex.state.weights.tolist() == [0.0] * 5
    assert "no eligible source" in ex._plot.message.get_text()


@pytest.mark.parametrize("controls", [(), ("colour",), "nope"])
def test_standin_rejects_unknown_controls(controls):
    with pytest.raises(ValueError, match="controls must be a non-empty subset"):
        WeightsExplorer(controls)


def agg_pixels(ex) -> np.ndarray:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    return np.asarray(FigureCanvasAgg.buffer_rgba(ex.figure.canvas)).copy()


def test_blitting_leaves_no_stale_pixels():
    """After each blitted change the canvas holds exactly what a fresh full draw of the same
    explorer gives, and nearly what the explorer without blitting draws (only the stacking of the
    bar edges over the axis line differs)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    blit, full = WeightsExplorer(), WeightsExplorer(blit=False)
    for ex in (blit, full):
        FigureCanvasAgg.draw(ex.figure.canvas)  # what the browser's first refresh does
    assert blit._blitter.background is not None
    for name, value in [("temperature", 0.3), ("score", "scaled_dot"), ("source_4", False),
                        ("query", 0.85), ("source_4", True)]:
        for ex in (blit, full):
            ex.controls[name].value = value
        incremental = agg_pixels(blit)
        FigureCanvasAgg.draw(blit.figure.canvas)
        np.testing.assert_array_equal(incremental, agg_pixels(blit))
        FigureCanvasAgg.draw(full.figure.canvas)
        differ = (agg_pixels(full) != incremental).any(axis=-1)
        assert differ.mean() < 0.005, f"{differ.mean():.2%} of the pixels differ after {name}"


@settings(max_examples=25)  # every change renders the figure (Agg + PNG): keep it short
@given(q=st.sampled_from(np.round(np.arange(0, 1.0001, 0.05), 2).tolist()),
       k=st.integers(0, 40), score=st.sampled_from([v for _, v in SCORES]),
       eligible=st.lists(st.booleans(), min_size=5, max_size=5))
def test_standin_any_control_values(q, k, score, eligible):
    ex = _shared_explorer()
    ex.controls["query"].value = q
    ex.controls["temperature"].value = temperature_at(k)
    ex.controls["score"].value = score
    for i, ok in enumerate(eligible, 1):
        ex.controls[f"source_{i}"].value = ok
    w = ex.state.weights
    assert np.isfinite(w).all() and (w[~np.array(eligible)] == 0).all()
    assert w.sum() == pytest.approx(1.0 if any(eligible) else 0.0)
    ex.reset()
    assert [c.value for c in ex.controls.values()] == list(ex.initial.values())


_EXPLORER = []


def _shared_explorer():
    if not _EXPLORER:
        _EXPLORER.append(WeightsExplorer())
    return _EXPLORER[0]


# ------------------------------------------------------------------------------------------------
# The launcher
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def notebook(tmp_path):
    path = tmp_path / "demo.ipynb"
    path.write_text("{}")
    return path


def run(capsys, *argv):
    code = D.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_missing_notebook(capsys, tmp_path):
    code, _, err = run(capsys, "--notebook", tmp_path / "nope.ipynb")
    assert code == 2 and "nope.ipynb does not exist" in err and "--notebook PATH" in err


def test_default_notebook_missing_says_to_use_a_checkout(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(D, "DEFAULT_NOTEBOOK", tmp_path / "notebooks" / "demo.ipynb")
    code, _, err = run(capsys)
    assert code == 2 and "checkout of attention-lab" in err


def test_text_notebook_gets_a_hint(capsys, tmp_path):
    code, _, err = run(capsys, "--notebook", tmp_path / "demo.py")
    assert code == 2 and "must be a .ipynb" in err and "nbtools execute" in err


def test_busy_port(capsys, notebook):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        code, _, err = run(capsys, "--notebook", notebook, "--port", port)
    assert code == 2
    assert f"port {port} on 127.0.0.1 is already in use" in err and "--port 0" in err


@pytest.mark.parametrize("argv, message", [
    (["--port", "70000"], "between 0 and 65535"),
    (["--token", "a b"], "--token must be"),
    (["--host", "0.0.0.0"], "add --allow-network to confirm"),
    (["--host", "no-such-host.invalid"], "neither an IP address nor a name"),
])
def test_bad_options(capsys, notebook, argv, message):
    code, out, err = run(capsys, "--notebook", notebook, *argv)
    assert code == 2 and message in err and out == ""


def test_network_serving_warns_and_a_failed_start_is_reported(capsys, notebook, monkeypatch):
    """--host 0.0.0.0 --allow-network prints what it exposes; a Voila that dies is reported."""
    launched = {}

    class DeadVoila:
        pid, returncode = 999_999_999, 1

        def __init__(self, cmd, **kwargs):
            launched["cmd"], launched["kwargs"] = cmd, kwargs

        def poll(self):
            return 1

        def wait(self, timeout=None):
            return 1

    monkeypatch.setattr(D.subprocess, "Popen", DeadVoila)
    code, out, err = run(capsys, "--notebook", notebook, "--host", "0.0.0.0",
                         "--allow-network", "--port", "0", "--token", "lecture")
    assert code == 1 and "Voila stopped before it was ready" in err
    assert "WARNING: serving the demo to the network" in err
    assert "starts a Python kernel here" in err and "not encrypted" in err
    cmd = launched["cmd"]
    assert "--Voila.ip=0.0.0.0" in cmd and "--Voila.token=lecture" in cmd
    assert launched["kwargs"]["start_new_session"] is True


def test_voila_command_is_a_standalone_app_without_code(notebook):
    cmd = D.voila_command(notebook, "127.0.0.1", 8866, "tok", "light")
    for option in ("--no-browser", "--Voila.ip=127.0.0.1", "--port=8866", "--Voila.port_retries=0",
                   "--Voila.token=tok", "--template=lab", "--strip_sources=True",
                   "--show_tracebacks=False",
                   "--VoilaConfiguration.extension_allowlist=jupyter-matplotlib"):
        assert option in cmd
    assert cmd[1:4] == ["-m", "voila", str(notebook)]


@pytest.mark.parametrize("host, local", [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                         ("0.0.0.0", False), ("192.168.1.10", False)])
def test_is_local_host(host, local):
    assert D.is_local_host(host) is local


def test_help_through_the_dispatcher(capsys):
    from attention_lab.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main(["demo", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--allow-network" in out and "127.0.0.1" in out
