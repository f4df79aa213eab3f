"""Checks shared by the explorer tests.

``check_explorer(name, explorer)`` recomputes, with the core, what the explorer's current control
values should give, asserts that ``explorer.state`` holds exactly that, and that the figure's
artists show it (bar heights, mesh arrays, marker positions, visible messages).
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from attention_lab import attend, attend_scores
from attention_lab.attention import weighted_sum, within_value_range
from attention_lab.examples import (HULL_VALUES, geometry_example, local_example,
                                    running_additive_params, running_example)
from attention_lab.local import centre_from_logit, gaussian_window
from attention_lab.masks import local_mask, padding_mask
from attention_lab.scores import compute_scores, dot_scores
from attention_lab.softmax import (concentration, fill_softmax, hardmax, mask_after_softmax,
                                   safe_fill, softmax)

EX = running_example()


def heights(bars):
    return bars.heights


def _same(a, b):
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=0, atol=1e-12,
                               equal_nan=True)


def visible_messages(plot):
    return plot.messages()


def check_query(e):
    c = e.controls
    q = np.array([c["q1"].value, c["q2"].value, c["q3"].value])
    if c["retrieval"].value == "hard":
        scores = dot_scores(q, EX.keys)
        w = hardmax(scores)
        ctx = weighted_sum(w, EX.values)
    else:
        r = attend(q, EX.keys, EX.values, temperature=c["temperature"].value)
        scores, w, ctx = r.scores, r.weights, r.context
    s = e.state
    _same(s.query, q), _same(s.scores, scores), _same(s.weights, w), _same(s.context, ctx)
    p = e.plot
    _same(heights(p.bars), w)
    _same(np.ravel(p.image.get_array()), w)
    _same(heights(p.context_bars), ctx)
    assert [t.get_text() for t in p.diagram.weight_text] == [f"α = {x:.2f}" for x in w]
    assert [t.get_text() for t in p.diagram.score_text] == [f"e = {x:+.2f}" for x in scores]


def check_score(e):
    c = e.controls
    kind = c["score"].value
    q = np.array([c["q1"].value, c["q2"].value, c["q3"].value])
    params = {"bilinear": {"W": EX.W}, "additive": running_additive_params()}.get(kind, {})
    scores = compute_scores(kind, q, EX.keys, **params)
    w = softmax(scores)
    s = e.state
    _same(s.scores, scores), _same(s.weights, w), _same(s.dot_scores, dot_scores(q, EX.keys))
    _same(s.context, w @ EX.values)
    _same(heights(e.plot.bars), np.clip(scores, -3, 3))
    _same(e.plot.dot_marks.get_ydata(), dot_scores(q, EX.keys))
    _same(heights(e.plot.weight_bars), w)
    assert e.plot.title.get_text() == e.LABELS[kind]


def check_temperature(e):
    tau = e.controls["temperature"].value
    r = attend(EX.query, EX.keys, EX.values, temperature=tau)
    conc = concentration(r.weights)
    s = e.state
    _same(s.weights, r.weights), _same(s.context, r.context), _same(s.scores, r.scores)
    assert s.max_weight == pytest.approx(conc.max_weight, abs=1e-12)
    assert s.effective_keys == pytest.approx(conc.effective_keys, abs=1e-12)
    _same(heights(e.plot.bars), r.weights)
    assert tuple(e.plot.vline.get_xdata()) == (tau, tau)
    _same(np.ravel(e.plot.pt_max.get_data()), [tau, conc.max_weight])


def check_mask(e):
    c = e.controls
    mask = padding_mask(c["length"].value, 5) & np.array([c[f"keep{i}"].value
                                                           for i in range(1, 6)])
    policy = c["empty"].value
    s = e.state
    assert s.mask.tolist() == mask.tolist()
    scores = dot_scores(EX.query, EX.keys)
    if policy == "raise" and not mask.any():
        with pytest.raises(ValueError):
            attend_scores(scores, EX.values, mask=mask, empty="raise")
        assert s.weights is None and s.error.startswith("ValueError")
        _same(heights(e.plot.before), np.zeros(5))
    else:
        r = attend_scores(scores, EX.values, mask=mask, empty=policy)
        _same(s.weights, r.weights), _same(s.context, r.context)
        _same(heights(e.plot.before), np.nan_to_num(r.weights))
        assert np.all(s.weights[~mask] == 0) or (policy == "nan" and not mask.any())
    after = mask_after_softmax(scores, mask)
    _same(s.after_weights, after)
    assert s.after_row_sum == pytest.approx(after.sum(), abs=1e-12)
    facecolors = [tuple(c) for c in e.plot.before.get_facecolor()]
    assert len({facecolors[i] for i in np.flatnonzero(mask)} & {facecolors[i] for i in
                                                                 np.flatnonzero(~mask)}) == 0
    assert e.plot.cross[0].get_xdata().tolist() == np.flatnonzero(~mask).tolist()
    if c["after_softmax"].value:
        assert e.plot.after.get_visible()
        _same(heights(e.plot.after), after)
    else:
        assert not e.plot.after.get_visible()
    msgs = visible_messages(e.plot)
    if not mask.any():
        assert "all positions masked" in msgs.get("before", "")
        assert f"'{policy}' policy" in msgs["before"]
    else:
        assert "before" not in msgs


def check_window(e):
    c = e.controls
    p, D, t = c["centre"].value, c["half_width"].value, c["target"].value
    ex = local_example(target=t - 1)
    mask = local_mask(p - 1, D, 10)
    g = attend_scores(ex.scores, ex.values)
    loc = attend_scores(ex.scores, ex.values, mask=mask)
    s = e.state
    assert s.mask.tolist() == mask.tolist()
    _same(s.weights, loc.weights), _same(s.global_weights, g.weights)
    _same(s.context, loc.context), _same(s.global_context, g.context)
    assert s.target_weight_local == loc.weights[t - 1]
    _same(heights(e.plot.rows[1]["bars"]), 0.8 * loc.weights)
    _same(heights(e.plot.rows[0]["bars"]), 0.8 * g.weights)
    assert e.plot.rows[0]["star"].get_xdata()[0] == pytest.approx(t - 1 + 0.475)
    msgs = visible_messages(e.plot)
    if mask.any():
        assert "local" not in msgs
    else:
        assert "no source position" in msgs["local"]
        assert np.all(loc.weights == 0)


def check_axis(e):
    ax, b = e.controls["axis"].value, e.controls["batch"].value
    scores = dot_scores(e.Q, e.K)
    w = softmax(scores, axis=ax)
    right = attend(e.Q, e.K, e.V)
    s = e.state
    _same(s.weights, w), _same(s.context, w @ e.V), _same(s.correct_weights, right.weights)
    assert s.weights.shape == right.weights.shape  # the shape never gives the mistake away
    _same(np.ravel(e.plot.images[0].get_array()), np.ravel(right.weights[b]))
    _same(np.ravel(e.plot.images[1].get_array()), np.ravel(w[b]))
    expected = np.concatenate([w.sum(-1)[b], w.sum(-2)[b], w.sum(0)[0]])
    _same(heights(e.plot.sum_bars), np.minimum(expected, 2.0))
    name = {-1: "keys", -2: "queries", 0: "batch"}[ax]
    assert name in visible_messages(e.plot)["sums"]
    if ax == -1:
        assert s.max_context_error == 0
    else:
        assert s.max_context_error > 0.01


def check_precision(e):
    c = e.controls
    dtype, fill_name = c["dtype"].value, c["fill"].value
    fill = {"-inf": -np.inf, "-1e9": -1e9, "-1e4": -1e4}.get(fill_name)
    if fill is None:
        fill = safe_fill(dtype)
    mask = padding_mask(c["length"].value, 5)
    scores = dot_scores(EX.query, EX.keys, scale=c["scale"].value)
    kernel = fill_softmax(scores, mask, fill, dtype=dtype, stable=c["softmax"].value == "stable")
    s = e.state
    _same(s.scores, scores), _same(s.kernel_weights, kernel.astype(float))
    flags = [t.get_text() for t in e.plot.panels[0]["flags"]]
    assert flags == ["NaN" if np.isnan(x) else "" for x in kernel.astype(float)]
    _same(heights(e.plot.panels[0]["bars"]), np.clip(np.nan_to_num(kernel.astype(float)), 0, 1.1))
    policy = c["empty"].value
    if policy == "raise" and not mask.any():
        assert s.weights is None and "ValueError" in s.error
    else:
        r = attend_scores(scores, EX.values, mask=mask, empty=policy)
        _same(s.weights, r.weights), _same(s.context, r.context)
    msgs = visible_messages(e.plot)
    if np.isnan(kernel.astype(float)).any():
        assert "kernel" in msgs
    if not mask.any():
        assert f"'{policy}' policy" in msgs["library"]


def check_hull(e):
    c = e.controls
    raw = np.array([c["w1"].value, c["w2"].value, c["w3"].value])
    V = np.array(HULL_VALUES)
    positive = raw > 0
    scores = np.log(np.where(positive, raw, 1.0))
    r = attend_scores(scores, V, mask=positive, temperature=c["temperature"].value)
    s = e.state
    _same(s.weights, r.weights), _same(s.context, r.context)
    if c["temperature"].value == 1.0 and positive.any():
        _same(s.weights, raw / raw.sum())  # at temperature 1 the weights are the normalised sliders
    _same(np.ravel(e.plot.point.get_data()), r.context)
    _same(heights(e.plot.bars), r.weights)
    if positive.any():
        assert s.inside.all(), "a context left the values' range"
        assert within_value_range(r.context, V).all()
        assert "hull" not in e.plot.messages()
    else:
        assert s.empty and np.all(s.weights == 0) and "nothing to mix" in e.plot.messages()["hull"]


def check_geometry(e):
    """The scores are q . k_i for q = length (cos angle, sin angle), and each is the query's
    length times the key's projection, drawn as a foot on the query's line."""
    c = e.controls
    G = geometry_example()
    theta = np.radians(c["angle"].value)
    u = np.array([np.cos(theta), np.sin(theta)])
    q = c["length"].value * u
    r = attend(q, G.keys, G.values)
    s = e.state
    _same(s.query, q), _same(s.scores, r.scores), _same(s.weights, r.weights)
    _same(s.context, r.context)
    np.testing.assert_allclose(s.scores, c["length"].value * s.projections, rtol=0, atol=1e-12)
    feet = s.projections[:, None] * u
    np.testing.assert_allclose(np.column_stack(e.plot.feet.get_data()), feet, atol=1e-12)
    for seg, key, foot in zip(e.plot.drops.get_segments(), G.keys, feet):
        _same(seg, [key, foot])
        assert abs(np.dot(seg[1] - seg[0], u)) < 1e-9  # the drop line is perpendicular to q
    _same(heights(e.plot.proj_bars), s.projections)
    _same(heights(e.plot.weight_bars), r.weights)
    _same(np.ravel(e.plot.point.get_data()), r.context)
    assert [t.get_text() for t in e.plot.score_text] == [f"{x:+.2f}" for x in r.scores]
    assert e.plot.arrow.get_visible() == (c["length"].value > 0)
    assert within_value_range(r.context, G.values).all()


def check_localp(e):
    c = e.controls
    z, D, t = c["logit"].value, c["half_width"].value, c["target"].value
    ex = local_example(target=t - 1)
    p = float(centre_from_logit(z, 10))
    window = local_mask(p, D, 10)
    inner = attend_scores(ex.scores, ex.values, mask=window)
    g = gaussian_window(p, D, 10)
    s = e.state
    assert s.centre == p and s.mask.tolist() == window.tolist()
    _same(s.alignment, inner.weights), _same(s.gaussian, g)
    _same(s.weights, inner.weights * g), _same(s.context, (inner.weights * g) @ ex.values)
    assert s.row_sum <= 1 + 1e-12
    _same(heights(e.plot.bars), inner.weights * g)
    _same(e.plot.gaussian.get_ydata(), g)
    _same(e.plot.centre_line.get_xdata(), [p, p])
    msgs = visible_messages(e.plot)
    if window.any():
        assert "window" not in msgs
    else:
        assert "no source position" in msgs["window"] and np.all(s.weights == 0)


CHECKS = {"query": check_query, "score": check_score, "temperature": check_temperature,
          "mask": check_mask, "window": check_window, "axis": check_axis,
          "precision": check_precision, "hull": check_hull, "geometry": check_geometry,
          "localp": check_localp}


def check_explorer(name, e):
    assert e.last_error is None, f"{name}: {e.last_error!r}"
    CHECKS[name](e)
    assert isinstance(e.figure.canvas, FigureCanvasAgg)
