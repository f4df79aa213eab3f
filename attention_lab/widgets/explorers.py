"""The explorers of the level notebooks, one per idea of the chapter.

Each is an :class:`~attention_lab.widgets.base.Explorer`: its controls, a frozen state computed by
the core (:func:`attention_lab.attend` and friends), a live figure from
:mod:`attention_lab.plots.live` and, where declared, its tasks. Nothing here computes attention:
``_compute`` calls the core, ``_show`` hands the numbers to the figure's ``update`` and the readout.
"""

from __future__ import annotations

import html
from functools import cached_property

import ipywidgets as W
import numpy as np

from .. import plots
from ..attention import attend, attend_scores, weighted_sum, within_value_range
from ..examples import (HULL_VALUES, HULL_WEIGHTS, LATER_QUERY, geometry_example,
                        local_example, running_additive_params, running_example)
from ..local import centre_from_logit, local_p
from ..masks import combine_masks, local_mask, padding_mask
from ..scores import compute_scores, dot_scores, key_projections
from ..softmax import (concentration, fill_overflows, fill_softmax, hardmax, mask_after_softmax,
                       round_to_dtype, safe_fill, softmax)
from .base import (Explorer, Task, frozen_state, html_table, int_slider, log_slider, num,
                   policy_menu, slider, values_of)

__all__ = ["QueryExplorer", "ScoreExplorer", "TemperatureExplorer", "MaskExplorer",
           "WindowExplorer", "AxisExplorer", "PrecisionExplorer", "HullExplorer",
           "GeometryExplorer", "LocalPExplorer", "EXPLORERS"]

QUERY = ("q1", "q2", "q3")
#: what the figures say of an all-masked row under each policy
POLICY_MESSAGES = {"zeros": "all positions masked:\nweights are 0 by the 'zeros' policy",
                   "nan": "all positions masked:\nweights are NaN by the 'nan' policy",
                   "raise": "all positions masked:\nthe 'raise' policy raises ValueError"}
EMPTY_WINDOW = ("the window holds no source position: all masked,\n"
                "weights are 0 by the 'zeros' policy")


def query_sliders(q) -> dict:
    """The running example's query, one slider per coordinate (-1.5 to 1.5)."""
    return {name: slider(x, -1.5, 1.5, 0.05, f"query q{sub}")
            for name, x, sub in zip(QUERY, q, "₁₂₃")}


def attend_or_refuse(scores, values, mask, policy):
    """The core's masked attention as (weights, context, masked mass, row sum, None), or
    (None, None, 0, nan, "ValueError: ...") when the 'raise' policy refuses an all-masked row."""
    try:
        r = attend_scores(scores, values, mask=mask, empty=policy)
    except ValueError as exc:  # only the 'raise' policy on an all-masked row may get here
        if not (policy == "raise" and not mask.any()):
            raise
        return None, None, 0.0, float("nan"), f"ValueError: {exc}"
    return r.weights, r.context, float(r.masked_mass), float(r.row_sums), None


# =============================================================================================
# Query explorer (notebook 01)
# =============================================================================================

@frozen_state
class QueryState:
    query: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    temperature: float
    retrieval: str


class QueryExplorer(Explorer):
    """The running example: move the query, watch scores, weights and the context change.

    Controls: ``preset`` (the chapter's query, a later query, custom), ``q1``-``q3`` (the query's
    coordinates), ``temperature`` (0.05-5, log), ``retrieval`` ("soft" softmax or "hard" arg max).
    """

    title = "Query explorer: one query, five sources, one context"
    figure_label = ("The overview diagram with the current scores and weights, the weights as "
                    "bars and as a heatmap row (darker = larger), and the context beside the five "
                    "values.")
    TASKS = (
        Task("Move the query until source 4 gets at least half of the weight (soft retrieval).",
             lambda s: s.retrieval == "soft" and s.weights[3] >= 0.5),
        Task("Keep that query and switch to hard retrieval: the context jumps to value 4 "
             "exactly.", lambda s: s.retrieval == "hard" and s.weights[3] == 1.0),
    )

    example = cached_property(lambda self: running_example())

    def __init__(self, **options):
        self.PRESETS = {"chapter": tuple(self.example.query), "later": tuple(LATER_QUERY)}
        super().__init__(**options)

    def _make_controls(self):
        q = self.example.query
        return {
            "preset": W.Dropdown(options=[("chapter's query (0.8, -0.3, 0.5)", "chapter"),
                                          ("a later query (-1.0, -0.8, -0.3)", "later"),
                                          ("custom", "custom")],
                                 value="chapter", description="query preset"),
            **query_sliders(q),
            "temperature": log_slider(1.0, 0.05, 5.0, "temperature τ"),
            "retrieval": W.ToggleButtons(options=["soft", "hard"], value="soft",
                                         description="retrieval",
                                         tooltips=["softmax weights", "all weight on the arg max"]),
        }

    def _make_plot(self):
        return plots.QueryPlot(self.example.values, presentation=self.presentation)

    def _sync(self, change):
        self._sync_preset(change, QUERY)

    def _compute(self):
        c, ex = self.controls, self.example
        q = values_of(c, QUERY)
        tau = float(c["temperature"].value)
        if c["retrieval"].value == "hard":
            scores = dot_scores(q, ex.keys)
            weights = hardmax(scores)
            context = weighted_sum(weights, ex.values)
        else:
            r = attend(q, ex.keys, ex.values, temperature=tau)
            scores, weights, context = r.scores, r.weights, r.context
        return QueryState(q, scores, weights, context, tau, c["retrieval"].value)

    def _show(self, s):
        self.plot.update(query=s.query, scores=s.scores, weights=s.weights, context=s.context,
                         temperature=s.temperature, hard=s.retrieval == "hard")
        self.readout.value = html_table(
            ["", *[f"source {i + 1}" for i in range(s.scores.size)], "sum"],
            [["score e", *[num(e, 3) for e in s.scores], ""],
             ["weight α", *[num(w, 3) for w in s.weights], num(s.weights.sum(), 3)]],
        ) + f"<p>context c = {plots.fmt_vec(s.context)}</p>"

    def describe(self):
        s = self.state
        return (f"QueryExplorer: query {plots.fmt_vec(s.query, 2)}, {s.retrieval}, temperature "
                f"{s.temperature:.2f} -> weights {plots.fmt_vec(s.weights)}, context "
                f"{plots.fmt_vec(s.context)}")


# =============================================================================================
# Score explorer (notebook 02)
# =============================================================================================

@frozen_state
class ScoreState:
    score: str
    query: np.ndarray
    scores: np.ndarray
    dot_scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    best: int          # the chosen scores' best key (0-based index; ties: the first)
    dot_best: int      # the dot product's best key


class ScoreExplorer(Explorer):
    """Dot, bilinear (the chapter's W), additive and scaled-dot scores of the running example.

    Controls: ``score`` (the score function) and ``q1``-``q3`` (the query).
    """

    title = "Score explorer: the same query and keys under four score functions"
    figure_label = ("The chosen score function's five scores as bars beside the dot product's, "
                    "and their softmax weights.")
    LABELS = {
        "dot": "dot product: eᵢ = qᵀkᵢ",
        "bilinear": "bilinear: eᵢ = qᵀ W kᵢ (the chapter's W)",
        "additive": "additive: eᵢ = vᵀ tanh(W_q q + W_k kᵢ)",
        "scaled_dot": "scaled dot product: eᵢ = qᵀkᵢ / √3",
    }
    TASKS = (
        Task("Find a query for which the bilinear score picks a different best key than the "
             "dot product.", lambda s: s.score == "bilinear" and s.best != s.dot_best),
        Task("Switch to additive scores (random, untrained parameters) and find a query on "
             "which additive and dot product agree on the best key.",
             lambda s: s.score == "additive" and s.best == s.dot_best),
    )

    example = cached_property(lambda self: running_example())

    def __init__(self, **options):
        self.additive = running_additive_params()
        super().__init__(**options)

    def _make_controls(self):
        q = self.example.query
        return {
            "score": W.ToggleButtons(options=[("dot", "dot"), ("bilinear", "bilinear"),
                                              ("additive", "additive"),
                                              ("scaled dot", "scaled_dot")],
                                     value="dot", description="score function"),
            **query_sliders(q),
        }

    def _make_plot(self):
        return plots.ScorePlot(5, score_limit=3.0, presentation=self.presentation)

    def params(self, kind: str) -> dict:
        """The parameters the core's ``compute_scores(kind, ...)`` takes for this example."""
        if kind == "bilinear":
            return {"W": self.example.W}
        if kind == "additive":
            return dict(self.additive)
        return {}

    def _compute(self):
        c, ex = self.controls, self.example
        kind = c["score"].value
        q = values_of(c, QUERY)
        scores = compute_scores(kind, q, ex.keys, **self.params(kind))
        r = attend_scores(scores, ex.values)
        dot = dot_scores(q, ex.keys)
        return ScoreState(kind, q, scores, dot, r.weights, r.context,
                          int(hardmax(scores).argmax()), int(hardmax(dot).argmax()))

    def _show(self, s):
        self.plot.update(kind_label=self.LABELS[s.score], scores=s.scores,
                         dot_scores=s.dot_scores, weights=s.weights)
        self.readout.value = html_table(
            ["", *[f"key {i + 1}" for i in range(s.scores.size)]],
            [[f"chosen score ({s.score})", *[num(e) for e in s.scores]],
             ["dot-product score", *[num(e) for e in s.dot_scores]],
             ["weight", *[num(w) for w in s.weights]]])

    def describe(self):
        s = self.state
        return (f"ScoreExplorer: {s.score} scores {plots.fmt_vec(s.scores)} -> weights "
                f"{plots.fmt_vec(s.weights)}")


# =============================================================================================
# Temperature explorer (notebook 02)
# =============================================================================================

@frozen_state
class TemperatureState:
    temperature: float
    scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    max_weight: float
    entropy: float
    effective_keys: float


class TemperatureExplorer(Explorer):
    """The chapter's dot scores at a temperature from 0.05 to 5 (log slider): the weights, the
    largest weight, the entropy and the effective number of keys exp(entropy).

    Controls: ``temperature``.
    """

    title = "Temperature explorer: same scores, different concentration"
    figure_label = ("The weights at the chosen temperature against those at temperature 1, and "
                    "the largest weight and effective number of keys along the temperature.")
    T_MIN, T_MAX = 0.05, 5.0
    TASKS = (
        Task("Find a temperature at which the effective number of keys, exp(entropy), is "
             "about 2 (between 1.85 and 2.15).", lambda s: 1.85 <= s.effective_keys <= 2.15),
        Task("Make one source take at least 0.9 of the weight. Which evidence changed?",
             lambda s: s.max_weight >= 0.9),
    )

    example = cached_property(lambda self: running_example())

    def _make_controls(self):
        return {"temperature": log_slider(1.0, self.T_MIN, self.T_MAX, "temperature τ")}

    def _make_plot(self):
        ex = self.example
        grid = np.geomspace(self.T_MIN, self.T_MAX, 121)
        scores = dot_scores(ex.query, ex.keys)
        grid_weights = np.array([softmax(scores, temperature=t) for t in grid])
        conc = concentration(grid_weights)
        return plots.TemperaturePlot(softmax(scores), grid, conc.max_weight, conc.effective_keys,
                                     presentation=self.presentation)

    def _compute(self):
        ex = self.example
        tau = float(self.controls["temperature"].value)
        r = attend(ex.query, ex.keys, ex.values, temperature=tau)
        conc = concentration(r.weights)
        return TemperatureState(tau, r.scores, r.weights, r.context, float(conc.max_weight),
                                float(conc.entropy), float(conc.effective_keys))

    def _show(self, s):
        self.plot.update(temperature=s.temperature, weights=s.weights, max_weight=s.max_weight,
                         effective_keys=s.effective_keys)
        self.readout.value = html_table(
            ["", *[f"source {i + 1}" for i in range(s.weights.size)]],
            [["score e / τ", *[num(e / s.temperature, 2) for e in s.scores]],
             ["weight α", *[num(w) for w in s.weights]]]) + (
            f"<p>τ = {s.temperature:.3g}: largest weight {s.max_weight:.3f}, entropy "
            f"{s.entropy:.3f} nats, effective keys {s.effective_keys:.2f} of {s.weights.size}; "
            f"context {plots.fmt_vec(s.context)}</p>")

    def describe(self):
        s = self.state
        return (f"TemperatureExplorer: temperature {s.temperature:.3g} -> weights "
                f"{plots.fmt_vec(s.weights)}, largest {s.max_weight:.3f}, entropy "
                f"{s.entropy:.3f} nats")


# =============================================================================================
# Mask explorer (notebook 02)
# =============================================================================================

@frozen_state
class MaskState:
    mask: np.ndarray
    scores: np.ndarray
    weights: np.ndarray | None
    context: np.ndarray | None
    masked_mass: float
    row_sum: float
    empty: str
    all_masked: bool
    error: str | None
    after_weights: np.ndarray
    after_context: np.ndarray
    after_row_sum: float
    after_softmax: bool   # the wrong order is shown


class MaskExplorer(Explorer):
    """Padding and per-position masks on the running example, masked before softmax (right) and,
    on request, after softmax without renormalising (wrong), with both row sums.

    Controls: ``length`` (valid length 0-5: positions after it are padding), ``keep1``-``keep5``
    (one toggle per source position, True = eligible), ``after_softmax`` (show the wrong order),
    ``empty`` (what an all-masked row returns: "zeros", "nan" or "raise").
    """

    title = "Mask explorer: which keys may be retrieved"
    figure_label = ("The weights without a mask, masked before the softmax, and masked after it "
                    "without renormalising, with each row's sum.")
    TASKS = (
        Task("Predict the row sum of masking AFTER softmax at valid length 3, then tick the box "
             "and compare.", lambda s: s.after_softmax
             and s.mask.tolist() == [True, True, True, False, False]),
        Task("Find a mask that keeps at least two positions but loses more than half of the "
             "mass when applied after the softmax.",
             lambda s: s.after_softmax and s.mask.sum() >= 2 and s.after_row_sum < 0.5),
        Task("Mask every position and choose the policy that refuses the row instead of "
             "returning zeros.", lambda s: s.all_masked and s.error is not None),
    )

    example = cached_property(lambda self: running_example())

    def _make_controls(self):
        c = {"length": int_slider(3, 0, 5, "valid length")}
        for i in range(5):
            c[f"keep{i + 1}"] = W.ToggleButton(value=True, description=f"{i + 1}",
                                               tooltip=f"keep source {i + 1} (if within the "
                                                       f"valid length)",
                                               layout=W.Layout(width="auto"))
        c["after_softmax"] = W.Checkbox(value=False,
                                        description="also mask AFTER softmax (wrong)",
                                        indent=False)
        c["empty"] = policy_menu("all-masked policy")
        return c

    def _controls_box(self):
        c = self.controls
        toggles = W.HBox([W.Label("keep positions:")] + [c[f"keep{i + 1}"] for i in range(5)])
        return W.VBox([c["length"], toggles, c["after_softmax"], c["empty"]])

    def _style_controls(self):
        super()._style_controls()
        for i in range(5):
            self.controls[f"keep{i + 1}"].layout.width = "64px" if self.presentation else "44px"

    def _make_plot(self):
        ex = self.example
        return plots.MaskPlot(softmax(dot_scores(ex.query, ex.keys)),
                              presentation=self.presentation)

    def _compute(self):
        c, ex = self.controls, self.example
        toggles = np.array([c[f"keep{i + 1}"].value for i in range(5)], dtype=bool)
        mask = combine_masks(padding_mask(int(c["length"].value), 5), toggles)
        policy = c["empty"].value
        scores = dot_scores(ex.query, ex.keys)
        weights, context, mass, row_sum, error = attend_or_refuse(scores, ex.values, mask, policy)
        after = mask_after_softmax(scores, mask)
        return MaskState(mask, scores, weights, context, mass, row_sum, policy, not mask.any(),
                         error, after, weighted_sum(after, ex.values), float(after.sum()),
                         bool(c["after_softmax"].value))

    def _show(self, s):
        w = s.weights if s.weights is not None else np.zeros(s.scores.size)
        self.plot.update(mask=s.mask, weights=w, row_sum=s.row_sum,
                         after_weights=s.after_weights if s.after_softmax else None,
                         after_row_sum=s.after_row_sum,
                         message=POLICY_MESSAGES[s.empty] if s.all_masked else None)
        rows = [["eligible", *["yes" if m else "no" for m in s.mask], ""]]
        if s.weights is not None:
            rows.append(["before softmax (right)", *[num(x) for x in s.weights],
                         num(s.row_sum)])
        if s.after_softmax:  # the wrong order's numbers only once asked for (a task predicts them)
            rows.append(["after softmax (wrong)", *[num(x) for x in s.after_weights],
                         num(s.after_row_sum)])
        ctx = (f"context (right) {plots.fmt_vec(s.context)}, masked mass {s.masked_mass:.3f}"
               if s.context is not None else html.escape(s.error or ""))
        wrong = (f"<br>context (wrong) {plots.fmt_vec(s.after_context)}" if s.after_softmax
                 else "")
        self.readout.value = html_table(["", *[f"pos {i + 1}" for i in range(5)], "sum"], rows) + (
            f"<p>{ctx}{wrong}</p>")

    def describe(self):
        s = self.state
        w = plots.fmt_vec(s.weights) if s.weights is not None else s.error
        after = (f"; masked after softmax: row sum {s.after_row_sum:.3f}" if s.after_softmax
                 else "")  # the wrong order's sum only once shown: a task predicts it
        return (f"MaskExplorer: eligible {s.mask.astype(int).tolist()} -> weights {w}, row sum "
                f"{num(s.row_sum)}{after}")


# =============================================================================================
# Window explorer (notebook 02)
# =============================================================================================

@frozen_state
class WindowState:
    centre: float
    half_width: float
    target: int
    mask: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    global_weights: np.ndarray
    global_context: np.ndarray
    target_weight_global: float
    target_weight_local: float
    scored: int


class WindowExplorer(Explorer):
    """Ten source positions: global attention (every key eligible) beside local attention (a window
    |j - p| <= D around a centre p), with a target position that holds what the query needs.

    Controls: ``centre`` (p, 1-10, in steps of 0.5), ``half_width`` (D, 0-5), ``target`` (1-10).
    Positions are 1-based here, as in the figure; the core's :func:`local_mask` is 0-based.
    """

    title = "Window explorer: global vs local access"
    figure_label = ("Ten source positions twice, global and inside the local window, with the "
                    "weights as bars and the target starred.")
    S = 10
    TASKS = (
        Task("With half-width 1, retrieve the target anyway: give it more weight than global "
             "attention does.", lambda s: s.half_width == 1.0
             and s.target_weight_local > s.target_weight_global),
        Task("Make the window empty (no position scored). What does the row return?",
             lambda s: s.scored == 0),
    )

    def _make_controls(self):
        return {
            "centre": slider(5.5, 1.0, 10.0, 0.5, "window centre p", ".1f"),
            "half_width": slider(1.5, 0.0, 5.0, 0.5, "half-width D", ".1f"),
            "target": int_slider(8, 1, 10, "target position"),
        }

    def _make_plot(self):
        return plots.WindowPlot(self.S, presentation=self.presentation)

    def _compute(self):
        c = self.controls
        p, D, t = float(c["centre"].value), float(c["half_width"].value), int(c["target"].value)
        ex = local_example(target=t - 1, S=self.S)
        mask = local_mask(p - 1, D, self.S)
        g = attend_scores(ex.scores, ex.values)
        loc = attend_scores(ex.scores, ex.values, mask=mask)
        return WindowState(p, D, t, mask, loc.scores, loc.weights, loc.context, g.weights,
                           g.context, float(g.weights[t - 1]), float(loc.weights[t - 1]),
                           int(mask.sum()))

    def _show(self, s):
        t = s.target - 1
        where = "inside the window" if s.mask[t] else "outside the window: missed"
        self.plot.update(
            target=t, global_weights=s.global_weights, local_weights=s.weights,
            local_mask=s.mask, centre=s.centre - 1, half_width=s.half_width,
            global_title=(f"Global: all {self.S} positions scored; target {s.target} gets weight "
                          f"{s.target_weight_global:.2f}"),
            local_title=(f"Local (p = {s.centre:g}, D = {s.half_width:g}): {s.scored} scored; "
                         f"target {s.target} gets {s.target_weight_local:.2f}, {where}"),
            message=None if s.scored else EMPTY_WINDOW)
        self.readout.value = html_table(
            ["", *[str(i + 1) for i in range(self.S)]],
            [["eligible (local)", *["yes" if m else "no" for m in s.mask]],
             ["global weight", *[num(w, 2) for w in s.global_weights]],
             ["local weight", *[num(w, 2) for w in s.weights]]]) + (
            f"<p>target {s.target}: global {s.target_weight_global:.3f}, local "
            f"{s.target_weight_local:.3f}; scored positions: global {self.S}, local "
            f"{s.scored}</p>")

    def describe(self):
        s = self.state
        return (f"WindowExplorer: centre {s.centre:g}, half-width {s.half_width:g}, target "
                f"{s.target} -> {s.scored} position(s) in the window; weight on target global "
                f"{s.target_weight_global:.3f}, local {s.target_weight_local:.3f}")


# =============================================================================================
# Axis explorer (notebook 03)
# =============================================================================================

@frozen_state
class AxisState:
    axis: int
    batch: int
    scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    correct_weights: np.ndarray
    correct_context: np.ndarray
    sums_keys: np.ndarray
    sums_queries: np.ndarray
    sums_batch: np.ndarray
    max_context_error: float
    sums_to_one: tuple      # the axes ("keys", "queries", "batch") over which every sum is 1


class AxisExplorer(Explorer):
    """Softmax over the key, query or batch axis of a (B, T, S) score tensor: the shape never
    changes, but only the key axis gives every query a distribution over the sources.

    Controls: ``axis`` (-1 keys, -2 queries, 0 batch) and ``batch`` (which batch item to draw).
    The default data are the chapter's ``torch.manual_seed(19)`` tensors (B=2, T=3, S=5).
    """

    title = "Axis explorer: which axis does softmax normalise?"
    figure_label = ("One batch item's weights normalised over the keys and over the chosen axis, "
                    "as heatmaps, and which sums equal 1.")
    AXIS_LABELS = {-1: "keys (dim=-1, right)", -2: "queries (dim=-2)", 0: "batch (dim=0)"}
    TASKS = (
        Task("Choose an axis that keeps every shape but moves some context by more than 1.",
             lambda s: s.max_context_error > 1.0),
        Task("Find the axis after which every key's weights over the queries sum to 1.",
             lambda s: "queries" in s.sums_to_one),
        Task("Find the axis after which the weights sum to 1 across the batch items.",
             lambda s: "batch" in s.sums_to_one),
    )

    def __init__(self, Q=None, K=None, V=None, **options):
        if Q is None:
            from ..examples import tensor_example

            Qt, Kt, Vt = tensor_example(19)
            Q, K, V = (x.double().numpy() for x in (Qt, Kt, Vt))
        self.Q, self.K, self.V = (np.asarray(x, dtype=float) for x in (Q, K, V))
        if self.Q.ndim != 3:
            raise ValueError(f"Q must have shape (B, T, D_k), got {self.Q.shape}")
        super().__init__(**options)

    def _make_controls(self):
        B = self.Q.shape[0]
        return {
            "axis": W.ToggleButtons(options=[(v, k) for k, v in self.AXIS_LABELS.items()],
                                    value=-1, description="softmax over"),
            "batch": W.ToggleButtons(options=[(f"item {b + 1}", b) for b in range(B)], value=0,
                                     description="batch item shown"),
        }

    def _make_plot(self):
        return plots.AxisPlot(self.Q.shape[1], self.K.shape[1], presentation=self.presentation)

    def _compute(self):
        ax, b = int(self.controls["axis"].value), int(self.controls["batch"].value)
        scores = dot_scores(self.Q, self.K)
        weights = softmax(scores, axis=ax)
        right = attend(self.Q, self.K, self.V)
        context = weighted_sum(weights, self.V)
        ones = tuple(name for name, a in (("keys", -1), ("queries", -2), ("batch", 0))
                     if np.allclose(weights.sum(axis=a), 1.0, rtol=0, atol=1e-9))
        return AxisState(ax, b, scores, weights, context, right.weights, right.context,
                         weights.sum(axis=-1)[b], weights.sum(axis=-2)[b], weights.sum(axis=0)[0],
                         float(np.abs(context - right.context).max()), ones)

    def _show(self, s):
        self.plot.update(batch=s.batch, weights_key=s.correct_weights[s.batch],
                         weights_axis=s.weights[s.batch],
                         axis_label=f"chosen: softmax over\n{self.AXIS_LABELS[s.axis]}",
                         sums_keys=s.sums_keys, sums_queries=s.sums_queries,
                         sums_batch=s.sums_batch)
        self.readout.value = (
            f"<p>scores {tuple(s.scores.shape)}, weights {tuple(s.weights.shape)}, context "
            f"{tuple(s.context.shape)}: the same shapes for every axis.<br>"
            f"largest difference from the right context: {s.max_context_error:.3f}<br>"
            f"sums over keys (item {s.batch + 1}): {plots.fmt_vec(s.sums_keys)}; over queries: "
            f"{plots.fmt_vec(s.sums_queries)}; over batch (query 1): "
            f"{plots.fmt_vec(s.sums_batch)}</p>")

    def describe(self):
        s = self.state
        return (f"AxisExplorer: softmax over axis {s.axis}, weights {tuple(s.weights.shape)}, "
                f"largest context error {s.max_context_error:.3f}")


# =============================================================================================
# Precision explorer (notebook 03)
# =============================================================================================

FILLS = {"-inf": float("-inf"), "-1e9": -1e9, "-1e4": -1e4, "finfo.min": None}


@frozen_state
class PrecisionState:
    dtype: str
    fill: str
    fill_value: float
    fill_cast: float
    fill_overflows: bool
    scale: float
    stable: bool
    length: int
    empty: str
    mask: np.ndarray
    scores: np.ndarray
    scores_cast: np.ndarray
    kernel_weights: np.ndarray
    kernel_context: np.ndarray
    weights: np.ndarray | None
    context: np.ndarray | None
    error: str | None
    kernel_nan: bool          # the kernel returned NaN somewhere
    padding_weight: float     # the kernel's total weight on masked positions (NaN ignored)

    @property
    def softmax_label(self) -> str:
        return "stable softmax" if self.stable else "naive softmax"


class PrecisionExplorer(Explorer):
    """What a typical kernel returns when it casts, fills masked scores and exponentiates in a low
    precision, beside the library's masked softmax and its declared all-masked policy.

    Controls: ``dtype`` (float32, float16, bfloat16), ``fill`` (-inf, -1e9, -1e4, the dtype's most
    negative finite number), ``scale`` (scores multiplied by 1 to 10 000), ``softmax`` ("stable"
    subtracts the row maximum, "naive" does not), ``length`` (valid length 0-5), ``empty`` (the
    library's all-masked policy).
    """

    title = "Precision explorer: dtypes, fill values, overflow and NaN"
    figure_label = ("A low-precision kernel's weights beside the library's, with masked positions "
                    "crossed and NaN flagged.")
    TASKS = (
        Task("With the stable softmax, find a dtype, fill and valid length that make the kernel "
             "return NaN.", lambda s: s.stable and s.kernel_nan),
        Task("Now find one where the kernel returns no NaN but silently puts weight on padding.",
             lambda s: not s.kernel_nan and s.padding_weight > 0.01),
        Task("Find a score scale at which the naive softmax returns NaN although no position "
             "is masked.", lambda s: not s.stable and s.kernel_nan and s.mask.all()),
    )

    example = cached_property(lambda self: running_example())

    def _make_controls(self):
        return {
            "dtype": W.ToggleButtons(options=["float32", "float16", "bfloat16"], value="float16",
                                     description="dtype"),
            "fill": W.Dropdown(options=[("-inf", "-inf"), ("-1e9", "-1e9"), ("-1e4", "-1e4"),
                                        ("finfo(dtype).min", "finfo.min")],
                               value="-1e9", description="mask fill"),
            "scale": log_slider(1.0, 1.0, 1e4, "score scale ×", step=0.05),
            "softmax": W.ToggleButtons(options=["stable", "naive"], value="stable",
                                       description="softmax",
                                       tooltips=["subtract the row maximum first", "exp(e) as is"]),
            "length": int_slider(3, 0, 5, "valid length"),
            "empty": policy_menu("library policy"),
        }

    def _make_plot(self):
        return plots.PrecisionPlot(5, presentation=self.presentation)

    def _compute(self):
        c, ex = self.controls, self.example
        dtype, fill_name = c["dtype"].value, c["fill"].value
        scale, stable = float(c["scale"].value), c["softmax"].value == "stable"
        length, policy = int(c["length"].value), c["empty"].value
        fill = FILLS[fill_name]
        if fill is None:
            fill = safe_fill(dtype)
        mask = padding_mask(length, 5)
        scores = dot_scores(ex.query, ex.keys, scale=scale)
        kernel = fill_softmax(scores, mask, fill, dtype=dtype, stable=stable)
        kernel_context = weighted_sum(kernel.astype(float), ex.values, allow_nan=True)
        weights, context, _, _, error = attend_or_refuse(scores, ex.values, mask, policy)
        return PrecisionState(
            dtype, fill_name, float(fill), float(round_to_dtype(fill, dtype)),
            fill_overflows(fill, dtype), scale, stable, length, policy, mask, scores,
            round_to_dtype(scores, dtype).astype(float), kernel.astype(float), kernel_context,
            weights, context, error, bool(np.isnan(kernel).any()),
            float(np.nansum(kernel.astype(float)[~mask])))

    def _kernel_message(self, s) -> str | None:
        w = s.kernel_weights
        all_masked = not s.mask.any()
        if np.isnan(w).any():
            if all_masked and not np.isfinite(s.fill_cast):
                how = "(-inf) - (-inf) = NaN" if s.stable else "exp(-inf) / sum = 0 / 0 = NaN"
                return f"all positions masked, fill is -inf in {s.dtype}:\n{how}"
            if not s.stable:
                filled = np.where(s.mask, s.scores_cast, s.fill_cast)
                with np.errstate(all="ignore"):
                    overflow = np.isinf(round_to_dtype(np.exp(filled), s.dtype)).any()
                if not overflow:  # every exp(...) underflowed to 0
                    return (f"naive softmax: every exp(...) underflows to 0 in {s.dtype},\n"
                            f"0 / 0 = NaN (use the stable form)")
                return (f"naive softmax: exp(score) overflows {s.dtype},\ninf / inf = NaN "
                        f"(use the stable form)")
            return "NaN weights"
        if all_masked:
            return (f"all positions masked, finite fill:\nuniform weights over padding "
                    f"({np.nanmax(w):.2f} each)")
        return None

    def _show(self, s):
        fill_txt = f"{s.fill}" if s.fill != "finfo.min" else f"finfo.min = {s.fill_value:.4g}"
        cast_txt = f"{s.fill_cast:.4g}" if np.isfinite(s.fill_cast) else "-inf"
        over = " (overflows!)" if s.fill_overflows else ""
        info = (f"scores × {s.scale:.3g}: largest {np.max(s.scores):.4g} (in {s.dtype}: "
                f"{np.max(s.scores_cast):.4g});  fill {fill_txt} in {s.dtype} = {cast_txt}{over}")
        w = s.weights if s.weights is not None else np.zeros(s.scores.size)
        self.plot.update(mask=s.mask, kernel_weights=s.kernel_weights,
                         kernel_title=f"typical kernel: {s.dtype}, {s.softmax_label}",
                         weights=w, library_title=f"attention_lab: float64, policy '{s.empty}'",
                         info=info, kernel_message=self._kernel_message(s),
                         library_message=None if s.mask.any() else POLICY_MESSAGES[s.empty])
        rows = [["kernel", *[num(x) for x in s.kernel_weights]]]
        if s.weights is not None:
            rows.append(["attention_lab", *[num(x) for x in s.weights]])
        self.readout.value = html_table(["", *[f"pos {i + 1}" for i in range(5)]], rows) + (
            f"<p>{html.escape(info)}<br>kernel context {plots.fmt_vec(s.kernel_context)}; "
            f"library context "
            f"{plots.fmt_vec(s.context) if s.context is not None else html.escape(s.error)}</p>")

    def describe(self):
        s = self.state
        return (f"PrecisionExplorer: {s.dtype}, fill {s.fill}, scale {s.scale:.3g}, "
                f"{s.softmax_label}, valid length {s.length} -> kernel weights "
                f"{plots.fmt_vec(s.kernel_weights)}")


# =============================================================================================
# Hull explorer (notebook 03)
# =============================================================================================

@frozen_state
class HullState:
    raw: np.ndarray
    scores: np.ndarray
    temperature: float
    weights: np.ndarray
    context: np.ndarray
    values: np.ndarray
    inside: np.ndarray
    empty: bool


class HullExplorer(Explorer):
    """Three 2-D values and the context of a weight vector over them: the context never leaves the
    triangle the values span.

    Controls: ``preset`` (the chapter's two weight vectors, uniform, custom), ``w1``-``w3``
    (relative weights, 0-1; they are normalised to sum to 1) and ``temperature``. The weights are
    the softmax of the scores ``log w_i`` at that temperature: at 1 that is just ``w / sum(w)``,
    below 1 the largest weight grows, above 1 they even out. A weight of 0 masks its value.
    """

    title = "Hull explorer: a context is a mixture of the values"
    figure_label = ("Three values as the corners of a triangle and the context of the current "
                    "weights as a point inside it.")
    TASKS = (
        Task("Put the context exactly on value 3, a corner of the triangle.",
             lambda s: s.weights[2] >= 0.999),
        Task("Put it halfway along the edge from value 1 to value 2 (value 3's weight exactly "
             "0). Now try to push it outside the triangle: why can't you?",
             lambda s: not s.empty and s.weights[2] == 0
             and abs(s.weights[0] - s.weights[1]) <= 0.02),
    )

    def __init__(self, **options):
        self.values = np.array(HULL_VALUES, dtype=float)
        w = np.array(HULL_WEIGHTS, dtype=float)
        self.PRESETS = {"chapter1": tuple(w[0]), "chapter2": tuple(w[1]),
                        "uniform": (1 / 3, 1 / 3, 1 / 3)}
        super().__init__(**options)

    def _make_controls(self):
        w = self.PRESETS["chapter1"]
        return {
            "preset": W.Dropdown(options=[("chapter's context 1: weights (0.6, 0.3, 0.1)",
                                           "chapter1"),
                                          ("chapter's context 2: weights (0.15, 0.25, 0.6)",
                                           "chapter2"),
                                          ("uniform weights", "uniform"), ("custom", "custom")],
                                 value="chapter1", description="weights preset"),
            **{f"w{i}": slider(x, 0.0, 1.0, 0.01, f"weight of value {i}")
               for i, x in enumerate(w, 1)},
            "temperature": log_slider(1.0, 0.05, 5.0, "temperature τ"),
        }

    def _make_plot(self):
        w = np.array(HULL_WEIGHTS, dtype=float)
        return plots.HullPlot(self.values, weighted_sum(w, self.values),
                              presentation=self.presentation)

    def _sync(self, change):
        self._sync_preset(change, ("w1", "w2", "w3"))

    def _compute(self):
        c = self.controls
        raw = values_of(c, ("w1", "w2", "w3"))
        tau = float(c["temperature"].value)
        positive = raw > 0
        scores = np.log(np.where(positive, raw, 1.0))  # log w: softmax(log w) = w / sum(w)
        r = attend_scores(scores, self.values, mask=positive, temperature=tau)
        empty = not positive.any()
        inside = (np.zeros(2, dtype=bool) if empty
                  else within_value_range(r.context, self.values, mask=positive))
        return HullState(raw, scores, tau, r.weights, r.context, self.values.copy(), inside,
                         empty)

    def _show(self, s):
        self.plot.update(weights=s.weights, context=s.context, inside=s.inside,
                         message=("all weights are 0: nothing to mix,\nthe 'zeros' policy "
                                  "returns weights 0 and context 0") if s.empty else None)
        self.readout.value = (f"<p>relative weights {plots.fmt_vec(s.raw, 2)}, τ = "
                              f"{s.temperature:.3g} → weights {plots.fmt_vec(s.weights)} (sum "
                              f"{s.weights.sum():.3f}) → context {plots.fmt_vec(s.context)}; "
                              f"inside the values' range: "
                              f"{'no mixture' if s.empty else 'yes' if s.inside.all() else 'NO'}"
                              f"</p>")

    def describe(self):
        s = self.state
        return (f"HullExplorer: weights {plots.fmt_vec(s.weights)} -> context "
                f"{plots.fmt_vec(s.context)}, inside: {bool(s.inside.all())}")


# =============================================================================================
# Geometry explorer (a score as a projection)
# =============================================================================================

@frozen_state
class GeometryState:
    angle: int               # degrees, counter-clockwise from the first axis
    length: float            # |q|
    query: np.ndarray        # (2,)
    direction: np.ndarray    # (2,) the unit vector along q (defined by the angle, also at |q| = 0)
    projections: np.ndarray  # (S,) p_i = k_i . direction
    scores: np.ndarray       # (S,) e_i = q . k_i = |q| p_i
    weights: np.ndarray
    context: np.ndarray
    max_weight: float
    best: int                # the key with the largest weight (0-based; ties: the first)
    longest: int             # the longest key (0-based)


def _top_two_gap(projections) -> float:
    top = np.sort(np.asarray(projections, float))[::-1]
    return float(top[0] - top[1])


class GeometryExplorer(Explorer):
    """Dot-product scores in two dimensions: four keys as arrows, the query as an arrow turned by
    ``angle`` and stretched by ``length``. Key i's score is ``e_i = q . k_i = |q| p_i``, where
    ``p_i`` is the signed length of its projection on the query's line; the weights are the
    softmax of the scores, and the context is their mixture of four 2-D values.

    Controls: ``angle`` (degrees, -180 to 180, counter-clockwise from the first axis) and
    ``length`` (|q|, 0 to 3). Stretching the query multiplies every score by the same factor, as
    a temperature ``tau = 1 / |q|`` would divide them.
    """

    title = "Geometry explorer: a score is a key's projection on the query"
    figure_label = ("Four keys as arrows and the query as an arrow, each key projected on the "
                    "query's line, the projections and weights as bars, and the context among "
                    "the four values.")
    TIE = 0.03
    HARD = 0.95
    TASKS = (
        Task("Turn the query until the two best keys tie: their projections end at the same "
             "point of the query's line (within 0.03).",
             lambda s: s.length > 0 and _top_two_gap(s.projections) <= GeometryExplorer.TIE),
        Task("Make the longest key, k1, lose: give a shorter key more weight while k1's own "
             "score stays positive.",
             lambda s: s.weights[s.longest] < s.max_weight and s.scores[s.longest] > 0),
        Task("Away from a tie, stretch the query until the weights turn nearly hard: the largest "
             "reaches 0.95. (A longer query acts as a lower temperature, τ = 1/|q|.)",
             lambda s: s.max_weight >= GeometryExplorer.HARD),
    )

    example = cached_property(lambda self: geometry_example())

    def _make_controls(self):
        return {
            "angle": int_slider(20, -180, 180, "query angle (°)"),
            "length": slider(1.0, 0.0, 3.0, 0.05, "query length |q|"),
        }

    def _make_plot(self):
        return plots.GeometryPlot(self.example.keys, self.example.values,
                                  presentation=self.presentation)

    def _compute(self):
        c, ex = self.controls, self.example
        angle, length = int(c["angle"].value), float(c["length"].value)
        u = np.array([np.cos(np.radians(angle)), np.sin(np.radians(angle))])   # (2,)
        q = length * u                                                           # (2,)
        r = attend(q, ex.keys, ex.values)
        p = key_projections(ex.keys, u)                                          # (S,)
        return GeometryState(angle, length, q, u, p, r.scores, r.weights, r.context,
                             float(r.weights.max()), int(np.argmax(r.weights)),
                             int(np.argmax(np.linalg.norm(ex.keys, axis=1))))

    def _temperature_text(self, s) -> str:
        if s.length == 0:
            return "|q| = 0: every score is 0 and the weights are uniform (like τ = ∞)"
        return (f"|q| = {s.length:.2f}: the weights of the unit query at τ = 1/|q| = "
                f"{1 / s.length:.2f}")

    def _show(self, s):
        self.plot.update(query=s.query, direction=s.direction, projections=s.projections,
                         scores=s.scores, weights=s.weights, context=s.context,
                         title=(f"q = {plots.fmt_vec(s.query, 2)}, angle {s.angle}°;  "
                                f"{self._temperature_text(s)}"))
        self.readout.value = html_table(
            ["", *[f"key {i + 1}" for i in range(s.scores.size)]],
            [["projection pᵢ", *[num(x, 3) for x in s.projections]],
             ["score eᵢ = |q| pᵢ", *[num(x, 3) for x in s.scores]],
             ["weight αᵢ", *[num(x, 3) for x in s.weights]]]) + (
            f"<p>query q = {plots.fmt_vec(s.query, 3)} (angle {s.angle}°); "
            f"{html.escape(self._temperature_text(s))}; context c = "
            f"{plots.fmt_vec(s.context)}</p>")

    def describe(self):
        s = self.state
        return (f"GeometryExplorer: angle {s.angle}°, length {s.length:.2f} -> projections "
                f"{plots.fmt_vec(s.projections)}, weights {plots.fmt_vec(s.weights)}")


# =============================================================================================
# Local-p explorer (Luong's predicted centre)
# =============================================================================================

@frozen_state
class LocalPState:
    logit: float
    centre: float            # p_t, 0-based
    half_width: float
    target: int              # 1-based, as in the figure
    mask: np.ndarray         # the window |j - p_t| <= D
    alignment: np.ndarray    # softmax over the window alone
    gaussian: np.ndarray     # exp(-(j - p_t)^2 / (2 sigma^2)) in the window, 0 outside
    scores: np.ndarray
    weights: np.ndarray      # local-p: alignment x gaussian
    context: np.ndarray
    row_sum: float
    target_weight: float
    target_alignment: float
    scored: int


class LocalPExplorer(Explorer):
    """Luong's local-p on ten source positions: the decoder predicts a centre
    ``p_t = (S - 1) * sigmoid(z)`` from its state (``z = v_p^T tanh(W_p h_t)``, here a slider),
    attends inside the window ``|j - p_t| <= D`` and multiplies the weights by a Gaussian of
    standard deviation ``D / 2`` around ``p_t`` (:func:`attention_lab.local.local_p`).

    Controls: ``logit`` (z, -4 to 4), ``half_width`` (D, 0 to 5) and ``target`` (1-10, the
    position whose key matches the query best). Positions are 1-based here, as in the figure.
    """

    title = "Local-p explorer: a predicted centre and a Gaussian window"
    figure_label = ("The predicted centre on the sigmoid's curve, and ten source positions with "
                    "the window around the centre, the softmax inside it, the Gaussian factors "
                    "and the local-p weights as bars.")
    S = 10
    TASKS = (
        Task("With half-width 1, move the predicted centre so that the target takes the "
             "largest weight.", lambda s: s.half_width == 1.0 and s.target_weight > 0
             and int(np.argmax(s.weights)) == s.target - 1),
        Task("Keep the target inside the window, but let the Gaussian take more than half of "
             "its weight away (less than half of its softmax weight left).",
             lambda s: bool(s.mask[s.target - 1]) and s.target_weight < 0.5 * s.target_alignment),
    )

    def _make_controls(self):
        return {
            "logit": slider(0.0, -4.0, 4.0, 0.1, "centre logit z", ".1f"),
            "half_width": slider(2.0, 0.0, 5.0, 0.5, "half-width D", ".1f"),
            "target": int_slider(8, 1, self.S, "target position"),
        }

    def _make_plot(self):
        grid = np.linspace(-4.0, 4.0, 81)
        return plots.LocalPPlot(self.S, grid, centre_from_logit(grid, self.S),
                                presentation=self.presentation)

    def _compute(self):
        c = self.controls
        z, D, t = float(c["logit"].value), float(c["half_width"].value), int(c["target"].value)
        ex = local_example(target=t - 1, S=self.S)
        p = float(centre_from_logit(z, self.S))
        r = local_p(ex.scores, ex.values, p, D)
        a, g = r.extras["alignment"], r.extras["gaussian"]
        return LocalPState(z, p, D, t, r.mask, a, g, r.scores, r.weights, r.context,
                           float(r.weights.sum()), float(r.weights[t - 1]), float(a[t - 1]),
                           int(r.mask.sum()))

    def _show(self, s):
        first, last = (np.flatnonzero(s.mask)[[0, -1]] + 1) if s.scored else (None, None)
        where = f"window {first}..{last}" if s.scored else "an empty window"
        self.plot.update(
            logit=s.logit, centre=s.centre, half_width=s.half_width, target=s.target - 1,
            alignment=s.alignment, gaussian=s.gaussian, weights=s.weights,
            title=(f"z = {s.logit:+.1f} → pₜ = {s.centre + 1:.2f}, D = {s.half_width:g}: "
                   f"{where}; the weights sum to {s.row_sum:.2f}"),
            message=None if s.scored else EMPTY_WINDOW)
        self.readout.value = html_table(
            ["", *[str(i + 1) for i in range(self.S)], "sum"],
            [["in the window", *["yes" if m else "no" for m in s.mask], ""],
             ["softmax in the window αₜⱼ", *[num(x, 2) for x in s.alignment],
              num(s.alignment.sum(), 2)],
             ["Gaussian factor", *[num(x, 2) for x in s.gaussian], ""],
             ["local-p weight aₜⱼ", *[num(x, 2) for x in s.weights], num(s.row_sum, 2)]]) + (
            f"<p>centre pₜ = 1 + (S - 1) sigmoid(z) = {s.centre + 1:.3f} (positions "
            f"1..{self.S}), "
            f"σ = D/2 = {s.half_width / 2:g}; target {s.target}: softmax weight "
            f"{s.target_alignment:.3f}, local-p weight {s.target_weight:.3f}; context "
            f"{plots.fmt_vec(s.context)}</p>")

    def describe(self):
        s = self.state
        return (f"LocalPExplorer: z {s.logit:+.1f} -> centre {s.centre + 1:.2f}, D "
                f"{s.half_width:g}, target {s.target} -> weights {plots.fmt_vec(s.weights, 2)}")


#: name -> class, in notebook order (01: geometry, query; 02: score ... local-p; 03: axis ...)
EXPLORERS = {
    "geometry": GeometryExplorer, "query": QueryExplorer, "score": ScoreExplorer,
    "temperature": TemperatureExplorer, "mask": MaskExplorer, "window": WindowExplorer,
    "localp": LocalPExplorer, "axis": AxisExplorer, "precision": PrecisionExplorer,
    "hull": HullExplorer,
}
