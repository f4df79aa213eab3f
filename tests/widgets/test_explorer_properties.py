"""Hypothesis over the control values of every explorer: any combination renders without an
exception, matches the core, never shows NaN unless the chosen policy says so, keeps its figure
and static layer, and the canvas still draws."""

from __future__ import annotations

import ipywidgets as W
import numpy as np
import pytest
from explorer_checks import check_explorer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_lab import widgets


def value_strategy(control):
    """Every value a student can give this control (slider ranges include both ends)."""
    if isinstance(control, W.FloatLogSlider):
        exps = st.floats(control.min, control.max, allow_nan=False)
        ends = st.sampled_from([control.min, control.max])
        return st.one_of(ends, exps).map(lambda x: float(control.base ** x))
    if isinstance(control, W.FloatSlider):
        steps = int(round((control.max - control.min) / control.step))
        return st.integers(0, steps).map(lambda k: round(control.min + k * control.step, 10))
    if isinstance(control, W.IntSlider):
        return st.integers(control.min, control.max)
    if isinstance(control, (W.ToggleButton, W.Checkbox)):
        return st.booleans()
    if isinstance(control, (W.ToggleButtons, W.Dropdown)):
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return st.sampled_from(values)
    raise TypeError(f"no strategy for {type(control).__name__}")


def settings_strategy(explorer):
    return st.fixed_dictionaries({name: value_strategy(c)
                                  for name, c in explorer.controls.items()})


def nan_allowed(name, e) -> bool:
    """Where a NaN in the weights is what the student asked for."""
    c = e.controls
    if name == "mask":
        return c["empty"].value == "nan" and not e.state.mask.any()
    if name == "precision":
        return c["empty"].value == "nan" and not e.state.mask.any()
    return False


@pytest.mark.parametrize("name", list(widgets.EXPLORERS))
def test_any_control_values_render(name, explorers):
    e = explorers[name]
    e.reset()
    renders = e.figure.static_renders
    figure = e.figure

    @settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(settings_strategy(e))
    def run(values):
        e.set(**values)
        check_explorer(name, e)
        w = e.state.weights
        if w is not None and not nan_allowed(name, e):
            assert not np.isnan(np.asarray(w, dtype=float)).any()
        if e.state.context is not None and not nan_allowed(name, e):
            assert np.isfinite(np.asarray(e.state.context, dtype=float)).all()
        assert e.figure is figure and e.figure.static_renders == renders
        e.figure.canvas.draw()

    run()
    e.reset()
