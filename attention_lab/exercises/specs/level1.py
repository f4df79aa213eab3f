"""The checks of the level-1 exercise notebook (intuition): 1.1 the parts of the running example,
1.2 a context vector, 1.3 the convex hull, 1.4 a test of query dependence."""

from __future__ import annotations

import math

import numpy as np

from ...examples import HULL_VALUES, HULL_WEIGHTS
from ..implementations import Impl
from ...softmax import softmax
from .base import (IMPL_NOTES, RX, Case, Reject, Spec, as_bool, close, describe_type,
                   expect_shape, fmt, judge_test_answer, numeric, rand, rounded, values_or_mistake)


# ---------------------------------------------------------------- 1.1 parts of the running example
class Parts(Spec):
    FIELDS = ("query", "keys", "values", "scores", "weights", "context")

    def reference(self):
        s = RX.keys @ RX.query
        w = softmax(s)
        return {"query": RX.query, "keys": RX.keys, "values": RX.values, "scores": s,
                "weights": w, "context": w @ RX.values}

    def wrong(self, name, arr) -> str:
        """What the known mistake ``arr`` (of ``parts[name]``) is, or ''."""
        r = RX
        s, w = (self.reference()[k] for k in ("scores", "weights"))
        known = {
            "query": [],
            "keys": [(r.values, "it holds the values: keys are what the query is matched against, "
                               "values are what gets returned"),
                     (r.keys.T, "it is transposed: one row per source")],
            "values": [(r.keys, "it holds the keys: keys are matched, values are returned")],
            "scores": [(r.keys @ (r.W.T @ r.query), "these are the bilinear scores q^T W k; the "
                        "running example's scores are the plain dot product"),
                       (s / math.sqrt(3), "these are scaled by 1/sqrt(D_k); the chapter's dot "
                        "product is unscaled"),
                       (w, "these are the weights (after softmax); scores come before it")],
            "weights": [(np.exp(s), "these are exp(scores) before dividing by their sum"),
                        (s / s.sum(), "you divided the scores by their sum; softmax "
                         "exponentiates first"),
                        (softmax(s, mask=r.valid), "these are the masked weights; the running "
                         "example's weights use all five keys"),
                        (s, "these are the scores; the weights are their softmax")],
            "context": [(w @ r.keys, "it mixes the keys; attention mixes the values"),
                        (r.values.mean(axis=0), "this is the plain average of the values; the "
                         "weights decide the mix"),
                        (w, "these are the weights; the context is their mix of the values")],
        }[name]
        return next((why for wrong, why in known if np.shape(wrong) == arr.shape
                     and close(arr, wrong)), "")

    def judge_value(self, value) -> tuple[str, str]:
        if not isinstance(value, dict):
            return "fail", (f"parts is {describe_type(value)}; expected a dict with the keys "
                            f"{', '.join(self.FIELDS)}")
        missing = [k for k in self.FIELDS if k not in value]
        if len(missing) == len(self.FIELDS):
            return "fail", f"parts has none of the keys {', '.join(self.FIELDS)}"
        ref = self.reference()
        problems = []
        for k in self.FIELDS:
            if k not in value:
                problems.append(f"parts[{k!r}] is missing")
                continue
            v = value[k]
            if v is Ellipsis:
                problems.append(f"parts[{k!r}] is still `...`")
                continue
            try:
                arr = numeric(v, f"parts[{k!r}]")
                why = self.wrong(k, arr)
                if tuple(arr.shape) != ref[k].shape:
                    raise Reject(f"parts[{k!r}] has shape {tuple(arr.shape)} but the running "
                                 f"example's {k} has shape {ref[k].shape}"
                                 + (f": {why}" if why else ""))
                if not close(arr, ref[k]):
                    if not why and np.all(np.abs(arr.astype(np.float64) - ref[k]) <= 5e-3):
                        raise Reject(f"parts[{k!r}] = {fmt(arr)} is the running example's {k}, "
                                     f"rounded: compute it from running_example() instead of "
                                     f"typing rounded numbers")
                    raise Reject(f"parts[{k!r}] is wrong: {why}" if why else
                                 f"parts[{k!r}] = {fmt(arr)} is not the running example's {k}")
            except Reject as r:
                problems.append(str(r))
        if not problems:
            return "pass", ""
        more = f" (and {len(problems) - 1} more: " + "; ".join(problems[1:3]) + ")" \
            if len(problems) > 1 else ""
        return "fail", problems[0] + more


# ---------------------------------------------------------------- 1.2 context vector
class ContextVector(Spec):
    NAMES = ("weights", "values")

    def fixed(self):
        hv, hw = np.array(HULL_VALUES), np.array(HULL_WEIGHTS[0])
        return [
            self.case("the chapter's convex-hull example: three 2-D values, weights [0.6 0.3 0.1]",
                      hw, hv),
            self.case("one-hot weights pick out one value", np.array([0.0, 1.0, 0.0]), hv),
            self.case("a single source (S=1)", np.array([1.0]), np.array([[0.2, -1.0, 3.0]])),
            self.case("four values of width four (a square values matrix)",
                      np.array([0.1, 0.2, 0.3, 0.4]), rounded(7)(4, 4)),
            self.case("the running example's five values (D_v = 3) with its softmax weights",
                      softmax(RX.keys @ RX.query), RX.values),
            self.case("all-zero weights (an all-masked row): the context is 0", np.zeros(3), hv),
        ]

    def random_case(self, rng, i):
        S, D = int(rng.integers(2, 8)), int(rng.integers(1, 6))
        w = rng.dirichlet(np.ones(S)) * (i > 0)  # the first: all zero (an all-masked row)
        return self.case(f"random: S={S} values of width D_v={D}" + ", all-zero weights" * (i == 0),
                         w, rand(rng, S, D))

    def compare(self, case, out):
        w, V = case.args
        ref = w @ V  # the definition of the context: sum_i w_i v_i
        arr = numeric(out)
        if arr.shape == V.shape and arr.shape != ref.shape:
            raise Reject(f"your result has shape {arr.shape}, one row per value: you scaled the "
                         f"values but did not add them up")
        expect_shape(arr, ref.shape, "your context", "one entry per value coordinate, D_v")
        if np.isnan(arr.astype(float)).any():
            note = " (dividing by the sum of the weights fails for all-zero weights; the weights " \
                   "already sum to 1 or, for an all-masked row, to 0)" if not w.any() else ""
            raise Reject(f"your context contains NaN{note}")
        values_or_mistake(case, arr, ref, [
            (lambda c: (c.args[0][:, None] * c.args[1]).mean(axis=0),
             "you took the mean of the weighted values; the context is their sum"),
            (lambda c: c.args[1] @ c.args[0] if c.args[1].shape[0] == c.args[1].shape[1]
             else None, "you computed values @ weights, which mixes the coordinates inside "
             "each value; each weight scales one of the S values (a row), and the scaled rows "
             "are summed"),
            (lambda c: c.args[1].sum(axis=0), "you added the values up without weighting them"),
            (lambda c: c.args[1].mean(axis=0), "you averaged the values without the weights"),
        ], "your context")


# ---------------------------------------------------------------- 1.3 convex hull
def _hull_case(note, context, values, expect, kind=""):
    return Case(note, (np.asarray(context, dtype=float), np.asarray(values, dtype=float)),
                ("context", "values"), data={"expect": expect, "kind": kind})


class ConvexHull(Spec):
    """Membership of the convex hull of S <= D_v + 1 values in general position. Every case's
    answer is known by construction: inside points are mixtures with weights >= 0 that sum to 1;
    outside points have a negative barycentric weight or leave the values' affine hull."""

    def fixed(self):
        hv = np.array(HULL_VALUES)
        tri3 = np.array([[0.0, 0.0, 0.0], [1.0, 0.2, 0.4], [0.3, 1.0, 0.9]])
        edge = 0.5 * (hv[1] + hv[2])
        normal = np.array([hv[2, 1] - hv[1, 1], hv[1, 0] - hv[2, 0]])  # outward, for edge 2-3
        normal /= np.linalg.norm(normal)
        return [
            _hull_case("the chapter's context 1 (weights [0.6 0.3 0.1]), inside the triangle",
                       np.array(HULL_WEIGHTS[0]) @ hv, hv, True),
            _hull_case("a context equal to value 2 (one-hot weights): a vertex, on the boundary, "
                       "which counts as inside", hv[1], hv, True, "boundary"),
            _hull_case("the midpoint of values 2 and 3: on an edge, which counts as inside", edge,
                       hv, True, "boundary"),
            _hull_case("a context inside the coordinate ranges of the values (0..2.6 and 0..2.1) "
                       "but outside the triangle", [2.0, 1.8], hv, False, "range"),
            _hull_case("a context 0.01 beyond the edge between values 2 and 3 (inside the "
                       "coordinate ranges)", edge + 0.01 * normal, hv, False, "range"),
            _hull_case("a context outside the range in coordinate 1", [1.0, 2.5], hv, False),
            _hull_case("a single value (S=1) and a context equal to it", [0.3, -0.2, 0.5],
                       [[0.3, -0.2, 0.5]], True),
            _hull_case("two values (a segment in 2-D) and a point on it", [0.5, 1.0],
                       [[0.0, 0.0], [1.0, 2.0]], True),
            _hull_case("two values (a segment in 2-D) and a point beside it, inside the "
                       "coordinate ranges", [0.5, 0.5], [[0.0, 0.0], [1.0, 2.0]], False, "plane"),
            _hull_case("three values in 3-D and a mixture of them (weights [0.2 0.5 0.3])",
                       np.array([0.2, 0.5, 0.3]) @ tri3, tri3, True),
            _hull_case("three values in 3-D and a context 0.05 off their plane, inside the "
                       "coordinate ranges", np.array([0.2, 0.5, 0.3]) @ tri3
                       + 0.05 * np.array([0.57, 0.11, -0.81]), tri3, False, "plane"),
            _hull_case("a context 1e-12 beyond the edge between values 2 and 3 (rounding noise, "
                       "within the 1e-9 tolerance)", edge + 1e-12 * normal, hv, True, "boundary"),
        ]

    #: the kinds of random case: inside the values' hull ("") or on its boundary (a weight 0),
    #: outside it within every coordinate's range (a weight below 0) or off the values' line or
    #: plane; the grader draws six of each, in an order drawn at random, so that an answer that
    #: does not look is right on all 24 with probability 1 / C(24, 12) < 1e-6
    KINDS = ("", "boundary", "range", "plane")

    def random(self, rng, kinds=("", "range", "boundary", "plane")):
        """One random case of each kind of ``kinds`` (see :data:`KINDS`)."""
        out = []
        for kind in map(str, kinds):
            D = int(rng.integers(2, 5))
            S = int(rng.integers(3 if kind == "range" else 2, D + 1 + (kind != "plane")))
            V = rand(rng, S, D)
            w = 0.05 + rng.dirichlet(np.ones(S))
            w /= w.sum()
            j = int(rng.integers(0, S))
            context = w @ V
            if kind == "boundary":
                w[j] = 0.0
                context = w @ V / w.sum()
            elif kind == "plane":  # 0.1 off the line or plane the values span
                span = np.linalg.qr((V[1:] - V[0]).T)[0]
                off = rng.normal(size=D)
                off -= span @ (span.T @ off)
                context = context + 0.1 * off / np.linalg.norm(off)
            elif kind == "range":  # weight j below 0, by as little as keeps it within the ranges
                for u in 0.1 * 0.7 ** np.arange(10):
                    bent = w * (1 + u) / (1 - w[j])
                    bent[j] = -u
                    context = bent @ V
                    if np.all((V.min(0) < context) & (context < V.max(0))):
                        break
                else:
                    kind = "outside"
            inside = kind in ("", "boundary")
            out.append(_hull_case(f"random: S={S} values of width {D}, a context "
                                  f"{'inside' if inside else 'outside'} their hull"
                                  + (f" ({kind})" if kind else ""), context, V, inside,
                                  "" if kind == "outside" else kind))
        return out

    def hidden(self, rng):
        return self.random(rng, rng.permutation(np.repeat(self.KINDS, 6)))

    #: the message of a wrong answer, by (the right answer, the case's kind)
    MISSES = {
        (True, "boundary"): "you returned False for a context on the hull's boundary (a vertex or "
                            "an edge), which counts as inside: allow each weight down to -1e-9 "
                            "and compare with a tolerance",
        (True, ""): "you returned False for a context that is a mixture of the values with "
                    "weights >= 0 summing to 1, so inside the hull",
        (False, "range"): "you returned True for a context outside the hull although it lies "
                          "inside every coordinate's range: the coordinate test is necessary, "
                          "not sufficient; find the weights that reproduce the context and check "
                          "their signs",
        (False, "plane"): "you returned True for a context that no mixture of the values "
                          "reproduces (it lies off the line or plane they span): check that your "
                          "weights really give back the context",
        (False, ""): "you returned True for a context outside the hull (one of its weights is "
                     "negative, or it leaves the values' range)",
    }

    def compare(self, case, out):
        expect = case.data["expect"]
        if as_bool(out) != expect:
            raise Reject(self.MISSES[expect, case.data["kind"]])


# ---------------------------------------------------------------- 1.4 query-dependence test
IMPL_EXPECT = {"A": True, "B": False, "C": False, "D": True, "E": True, "F": False}


class QueryDependence(Spec):
    def fixed(self):
        return [Case(IMPL_NOTES[c], (Impl(c),), ("attend",), data={"expect": IMPL_EXPECT[c]})
                for c in ("A", "B", "C", "D", "E", "F")]

    def compare(self, case, out):
        judge_test_answer(case, out, case.data["expect"], "do your two queries really differ in a "
                          "direction the keys can see (different score patterns, not just a "
                          "constant shift)?", "it must return False when two different queries "
                          "retrieve the same context (a test that cannot fail proves nothing)")


SPECS = {"1.1": Parts(), "1.2": ContextVector(), "1.3": ConvexHull(), "1.4": QueryDependence()}
