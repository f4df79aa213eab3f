"""The checks of the level-2 exercise notebook (mechanics): 2.1 dot-product scores, 2.2 softmax by
hand, 2.4 temperature, 2.5 a padding mask, 2.6 masked softmax and a test of it, 2.7 a local
window. Positions are numbered 1..S in every message, as in the notebooks."""

from __future__ import annotations

import math

import numpy as np

from ...attention import attend
from ..implementations import Impl
from ..probe import TooLarge, Unsupported
from ...masks import local_mask, padding_mask
from ...scores import dot_scores
from ...softmax import softmax
from .base import (IMPL_NOTES, RX, Case, Reject, Spec, as_tuple, check_values, describe_type,
                   diagnosis, expect_shape, fmt, judge_test_answer, numeric, rand, rounded,
                   scores_shape, softmax_axis, to_array, values_or_mistake, weights_or_mistake)


def softmax64(scores, temperature=1.0, **kw):
    """The reference softmax in float64 (the cases hold float32 scores too)."""
    return softmax(np.asarray(scores, dtype=np.float64), temperature=temperature, **kw)


# ---------------------------------------------------------------- 2.1 dot scores
class DotScores(Spec):
    NAMES = ("query", "keys")

    def fixed(self):
        r = rounded(11)
        return [
            self.case("the chapter's query and its first three keys", RX.query, RX.keys[:3]),
            self.case("one key (S=1)", RX.query, RX.keys[:1]),
            self.case("keys of width D_k=1", np.array([2.0]),
                      np.array([[1.0], [-0.5], [0.0], [3.0]])),
            self.case("five keys of width two (S=5, D_k=2)", np.array([0.5, -1.0]), r(5, 2)),
            self.case("two keys of width four (S=2, D_k=4)", np.array([1.0, 0.0, -1.0, 2.0]),
                      r(2, 4)),
        ]

    def random_case(self, rng, i):
        S, D = int(rng.integers(1, 8)), int(rng.integers(2, 7))  # (D_k = 1: scaled = unscaled)
        return self.case(f"random: S={S} keys of width D_k={D}", rand(rng, D), rand(rng, S, D))

    def compare(self, case, out):
        q, K = case.args
        ref = dot_scores(q, K)
        arr = numeric(out, "your scores")
        if arr.shape == (K.shape[1],) and arr.shape != ref.shape:
            raise Reject(f"your scores have shape {arr.shape}, one per key coordinate: you summed "
                         f"over the keys (axis 0) instead of over each key's coordinates")
        expect_shape(arr, ref.shape, "your scores", "one score per key")
        values_or_mistake(case, arr, ref, [
            (lambda c: (c.args[1] @ c.args[0]) / math.sqrt(c.args[1].shape[1]),
             "your scores are divided by sqrt(D_k); the chapter's dot product is unscaled "
             "(scaling is the separate 'scaled dot product')"),
            (lambda c: (c.args[1] @ c.args[0]) / (np.linalg.norm(c.args[1], axis=1)
                                                  * np.linalg.norm(c.args[0])),
             "you divided by the norms (cosine similarity); the dot product does not"),
            (lambda c: (c.args[1] * c.args[0]).sum(axis=0) if c.args[1].shape[0]
             == c.args[1].shape[1] else None,
             "you summed over the keys (axis 0) instead of over each key's coordinates"),
            (lambda c: c.args[0] @ c.args[1] if c.args[1].shape[0] == c.args[1].shape[1]
             else None, "you computed query @ keys, which combines the keys' columns; each "
             "score pairs the query with one key (a row of keys)"),
            (lambda c: softmax(c.args[1] @ c.args[0]),
             "these are softmax weights; the scores come before the softmax"),
            (lambda c: -(c.args[1] @ c.args[0]), "your scores have the wrong sign"),
        ], "your scores")


# ---------------------------------------------------------------- 2.2 softmax by hand
class ByHand(Spec):
    SCORES = np.array([2.0, 1.0, 0.1])

    def judge_value(self, value) -> tuple[str, str]:
        if isinstance(value, (dict, str)) or value is None:
            return "fail", (f"softmax_by_hand is {describe_type(value)}; expected a list of three "
                            f"numbers")
        try:
            arr = numeric(value, "softmax_by_hand")
        except Reject as r:
            return "fail", str(r)
        if arr.shape != (3,):
            return "fail", (f"softmax_by_hand has shape {tuple(arr.shape)}; expected three "
                            f"numbers, one weight per score")
        ref = softmax(self.SCORES)
        a = arr.astype(np.float64)
        wrongs = [(np.exp(self.SCORES), "these look like exp(e_i) before dividing by their sum"),
                  (self.SCORES / self.SCORES.sum(), "you divided the scores by their sum; "
                   "softmax exponentiates each score first"),
                  (ref[::-1], "the weights are in reverse order: the largest score (2.0, first) "
                   "gets the largest weight")]
        if np.all(np.abs(a - ref) <= 1.1e-3):
            return "pass", ""
        for wrong, why in wrongs:
            if np.all(np.abs(a - wrong) <= 2e-2):
                return "fail", f"softmax_by_hand = {fmt(a)} is wrong: {why}"
        total = a.sum()
        if abs(total - 1) > 3e-3:
            return "fail", (f"softmax_by_hand = {fmt(a)} sums to {total:.4f}, not 1: the weights "
                            f"of a softmax always add up to 1")
        bad = np.abs(a - ref) > 1.1e-3
        i = int(np.argmax(bad))
        return "fail", (f"softmax_by_hand = {fmt(a)}: entry {i + 1} (for score "
                        f"{self.SCORES[i]}) is off by more than rounding to three decimals allows")


# ---------------------------------------------------------------- 2.4 temperature
class Temperature(Spec):
    """``softmax_temperature(scores, temperature)`` on fixed and random cases; then the declared
    ``temperature_comparison``, the student's record of chapter exercise 5: the largest weight
    of the chapter's dot scores at the temperatures 0.5, 1 and 2, and whether the order of the
    positions stays the same."""

    COMPARED = (0.5, 1.0, 2.0)
    KEYS = ("largest_weight", "same_order")
    NAMES = ("scores", "temperature")

    def judge_declared(self):
        comp, fail = self.declared_dict(
            "temperature_comparison", self.KEYS,
            "record your comparison of the temperatures 0.5, 1 and 2 in it",
            "'largest_weight' (three numbers) and 'same_order' (True or False)")
        if fail:
            return fail
        missing = [k for k in self.KEYS if comp[k] is Ellipsis]
        if missing:
            return "fail", f"temperature_comparison: {', '.join(missing)} is still `...`"
        try:
            largest = numeric(comp["largest_weight"], "largest_weight").astype(np.float64)
        except Reject as r:
            return "fail", f"temperature_comparison: {r}"
        if largest.shape != (3,):
            return "fail", (f"temperature_comparison: largest_weight has shape "
                            f"{tuple(largest.shape)}; write three numbers, the largest weight at "
                            f"the temperatures 0.5, 1 and 2 in that order")
        scores = RX.keys @ RX.query
        ref = np.array([softmax64(scores, t).max() for t in self.COMPARED])
        near = np.abs(largest - ref) <= 5e-3
        if not near.all():
            if np.all(np.abs(largest - ref[::-1]) <= 5e-3):
                return "fail", ("temperature_comparison: largest_weight is in reverse order; list "
                                "the temperatures as 0.5, 1, 2")
            i = int(np.flatnonzero(~near)[0])
            return "fail", (f"temperature_comparison: largest_weight[{i}] = {largest[i]:.3f} is "
                            f"not the largest weight at temperature {self.COMPARED[i]:g}: compute "
                            f"it with your softmax_temperature on the chapter's dot scores")
        same = comp["same_order"]
        if not isinstance(same, (bool, np.bool_)):
            return "fail", (f"temperature_comparison: same_order is {describe_type(same)}; "
                            f"write True or False")
        if not same:
            return "fail", ("temperature_comparison: same_order is False, but compare the orders "
                            "again: dividing every score by one positive number keeps their "
                            "order, so the positions come in the same order of weight at every "
                            "temperature")
        return None

    def on_pass(self, cases, outputs):
        shown = fmt(np.asarray(self.declared["temperature_comparison"]["largest_weight"],
                               dtype=np.float64))
        return (f"Your comparison: the largest weight is {shown} at the temperatures 0.5, 1 and 2, "
                f"and the order of the positions stays the same.")

    def fixed(self):
        s = RX.keys @ RX.query
        return [
            *(self.case(f"the chapter's dot scores at temperature {t:g}", s, t)
              for t in (1.0, 0.5, 2.0)),
            self.case("scores [1 2 3] at a high temperature (10): nearly uniform",
                      np.array([1.0, 2.0, 3.0]), 10.0),
            self.case("two rows of scores (2, 4) at temperature 0.7: each row is one distribution",
                      np.array([[0.5, -1.0, 2.0, 0.0], [3.0, 1.0, 1.0, -2.0]]), 0.7),
            self.case("a single key (S=1)", np.array([0.3]), 0.5),
            self.case("a 3x3 block of scores at temperature 0.25",
                      np.array([[0.1, 0.5, -0.2], [1.0, 0.0, 0.3], [-0.4, 0.2, 0.6]]), 0.25),
        ]

    def random_case(self, rng, i):
        shape = scores_shape(rng, i)
        tau = float(np.round(rng.uniform(0.2, 5.0), 2))
        return self.case(f"random: scores of shape {shape} at temperature {tau}",
                         rand(rng, *shape), tau)

    def compare(self, case, out):
        s, tau = case.args
        ref = softmax64(s, tau)
        arr = out if isinstance(out, (Unsupported, TooLarge)) else to_array(out)
        weights_or_mistake(case, arr, ref, [
            (lambda c: softmax64(c.args[0] * c.args[1]) if c.args[1] != 1 else None,
             "your weights match softmax(scores * temperature): the temperature divides the "
             "scores"),
            (lambda c: softmax64(c.args[0]) if c.args[1] != 1 else None,
             "your weights do not change with the temperature"),
            (lambda c: softmax_axis(c.args[0] / c.args[1], 0) if c.args[0].ndim > 1 else None,
             "you normalised over axis 0 (down the columns); each row of scores is one "
             "distribution over keys: use axis -1"),
        ], floats=True)


# ---------------------------------------------------------------- 2.5 padding mask
class PaddingMask(Spec):
    n_random = 2
    NAMES = ("lengths", "S")

    def fixed(self):
        return [
            self.case("the chapter's batch: lengths 5, 3, 1 and S=5", np.array([5, 3, 1]), 5),
            self.case("one sequence of length 1, S=1", np.array([1]), 1),
            self.case("lengths 2 and 4 with S=6: no sequence reaches S", np.array([2, 4]), 6),
            self.case("lengths 0 and 3, S=3: an empty sequence (an all-masked row)",
                      np.array([0, 3]), 3),
            self.case("three full sequences, lengths 3, 3, 3 and S=3", np.array([3, 3, 3]), 3),
        ]

    def random_case(self, rng, i):
        B, S = int(rng.integers(1, 5)), int(rng.integers(2, 9))
        lengths = rng.integers(0, S, size=B)  # none reaching S (S columns, not max(lengths))
        lengths[rng.integers(0, B)] = rng.integers(1, S)  # and one of 1 or more
        return self.case(f"random: {B} lengths, S={S}", lengths, S)

    def compare(self, case, out):
        L, S = case.args
        ref = padding_mask(L, S)
        arr = to_array(out, "your mask")
        if arr.dtype != bool:
            raise Reject(f"your mask has dtype {arr.dtype}; return booleans (True = eligible), "
                         f"which a comparison of each position with its row's length gives")
        if arr.shape != ref.shape and arr.ndim == 2 and arr.shape[0] == len(L) \
                and arr.shape[1] == int(L.max(initial=0)):
            raise Reject(f"your mask has shape {arr.shape}: {arr.shape[1]} columns = the longest "
                         f"length, but the mask needs S={S} columns (one per source position)")
        expect_shape(arr, ref.shape, "your mask", "one row per sequence, one column per position")
        if np.array_equal(arr, ref):
            return
        pos = np.arange(S)
        diagnosis([why for wrong, why in [
            (~ref, "your mask is inverted: True marks padding here, but the convention is True = "
                   "eligible (that of SDPA's attn_mask; nn.MultiheadAttention's key_padding_mask "
                   "is the opposite: convert with ~)"),
            (pos <= L[:, None], "one position too many is eligible: a sequence of length n has "
                                "the real positions 1..n, which are the columns 0..n-1 (column < "
                                "length)"),
            (pos < (L[:, None] - 1), "the last real position of each sequence is masked: a "
                                     "sequence of length n has the real positions 1..n, the "
                                     "columns 0..n-1 (column < length)"),
        ] if np.array_equal(arr, wrong)])
        b = int(np.argwhere((arr != ref).any(axis=1))[0][0])
        raise Reject(f"row {b + 1} (length {int(L[b])}) is wrong: yours {fmt(arr[b])}")


# ---------------------------------------------------------------- 2.6 masked softmax, tested
FAR_BELOW = ("NaN in a row whose eligible scores are all far below zero: every exp(score - max) "
             "underflowed to 0 and the row became 0/0. Subtract the maximum over the *eligible* "
             "keys: a masked score set to 0 (scores * mask) becomes the row's maximum, and so does "
             "no shift at all; fill the masked scores with -inf before the maximum")


def masked_softmax_mistakes():
    """Known wrong masked softmaxes of a case ``(scores, mask)`` and their messages, shared by
    checks 2.6 and 3.2."""
    def mask_of(c):
        return np.broadcast_to(c.args[1], np.shape(c.args[0]))

    def zeroed(c):
        sc = np.asarray(c.args[0], dtype=np.float64) * mask_of(c)
        return softmax64(sc) * mask_of(c)

    return [
        (lambda c: softmax64(c.args[0]) * mask_of(c),
         "you masked after the softmax without renormalising: masked keys are 0 but the "
         "eligible weights no longer sum to 1 (mask before the softmax, or divide by the new sum)"),
        (lambda c: softmax64(np.asarray(c.args[0], dtype=np.float64) * mask_of(c)),
         "your masked keys get weight: setting masked scores to 0 (scores * mask) makes them "
         "ordinary keys with score 0; fill them with -inf"),
        (lambda c: zeroed(c) / zeroed(c).sum(-1, keepdims=True),
         "you set the masked scores to 0 (scores * mask) and renormalised: right in exact "
         "arithmetic, but a masked 0 then sets the row's maximum; fill masked scores with -inf"),
        (lambda c: softmax64(c.args[0], mask=~mask_of(c))
         if (~mask_of(c)).any(axis=-1).all() else None,
         "your weights sit on the masked keys: True means eligible"),
    ]


def far_below(rng, T: int, S: int, scale: float):
    """Random scores (T, S), each row shifted 1e3 to 1e4 below zero (so that every check of
    masking, not only a public one, needs the eligible keys' maximum subtracted: without it, or
    with masked scores set to 0, exp underflows and the row is 0/0), and a mask with an
    eligible and a masked key in every row."""
    scores = rand(rng, T, S, scale=scale) - np.round(10 ** rng.uniform(3, 4, size=(T, 1)))
    return scores, rng.random((T, S)).argsort(axis=-1) < rng.integers(1, S, size=(T, 1))


#: what a correct test of masking says about each implementation (2.6): the masked keys get
#: exactly 0 and the other weights sum to 1, on rows that have an eligible key
MASKING_TEST_EXPECT = {"G": True, "N": True, "H": True, "J": False, "K": False, "L": False,
                       "M": False, "O": False}


class MaskedSoftmax(Spec):
    """``masked_softmax(scores, mask)`` on fixed and random cases, and the student's test
    ``test_masked_softmax(masked_softmax) -> bool`` on correct and broken implementations."""

    n_random = 2
    NAMES = ("scores", "mask")

    def fixed(self):
        s = RX.keys @ RX.query
        r = rounded(5)
        m3 = np.array([[[True, True, False, True]], [[False, True, True, False]]])
        return [
            self.case("the chapter's five dot scores, keys 4 and 5 masked", s, RX.valid.copy()),
            self.case("three rows with lengths 5, 3 and 1 (a padding mask)", r(3, 5),
                      padding_mask([5, 3, 1], 5)),
            self.case("no key masked: a plain softmax", s, np.ones(5, dtype=bool)),
            self.case("a single eligible key (S=1)", np.array([0.7]), np.array([True])),
            self.case("a masked key with by far the largest score (8.0)",
                      np.array([0.5, 8.0, -0.3, 1.0]), np.array([True, False, True, True])),
            self.case("scores (2, 3, 4) with a mask (2, 1, 4) that broadcasts over the queries",
                      r(2, 3, 4), m3),
            self.case("float32 scores: the chapter's five, keys 4 and 5 masked",
                      s.astype(np.float32), RX.valid.copy()),
            self.case("float64 eligible scores around -1e4 beside a masked key",
                      np.array([-1e4, -1e4 + 1, -1e4 + 2, 3.0]),
                      np.array([True, True, True, False]), far=True),
        ] + [Case(IMPL_NOTES[code], (Impl(code),), ("masked_softmax",), 1) for code in
             MASKING_TEST_EXPECT]

    def random_case(self, rng, i):
        T, S = int(rng.integers(1, 4)), int(rng.integers(2, 7))
        return self.case(f"random: scores ({T}, {S}) far below zero with a random mask",
                         *far_below(rng, T, S, 2.0), far=True)

    def compare(self, case, out):
        if case.fn == 1:
            return judge_test_answer(
                case, out, MASKING_TEST_EXPECT[case.args[0].code],
                "check masked keys for exactly 0 and each row's sum against 1 with a tolerance, "
                "on rows that have an eligible key (rows without one are exercise 11's)",
                "a test of masking checks that every masked weight is exactly 0 (== 0, not "
                "allclose) and that every row's weights sum to 1")
        s, m = case.args
        ref = softmax64(s, mask=m)
        mask = np.broadcast_to(m, ref.shape)
        arr = numeric(out)
        dtype = s.dtype if s.dtype.kind == "f" else None  # the scores' precision, not less
        if case.data.get("far") and arr.shape == ref.shape and np.isnan(arr).any():
            raise Reject(f"your weights: {FAR_BELOW}")
        weights_or_mistake(case, arr, ref, masked_softmax_mistakes(), mask=mask, dtype=dtype)


# ---------------------------------------------------------------- 2.7 local window
class LocalWindow(Spec):
    """``local_attention(query, keys, values, centre, half_width)``: positions 1..S, the window
    ``|j - centre| <= half_width``."""

    n_random = 2
    NAMES = ("query", "keys", "values", "centre", "half_width")

    def fixed(self):
        q, K, V = RX.query, RX.keys, RX.values
        return [
            self.case("the running example, centre 3, half-width 1 (positions 2-4)", q, K, V, 3, 1),
            self.case("centre 1 at the left edge, half-width 1 (positions 1-2)", q, K, V, 1, 1),
            self.case("centre 5 at the right edge, half-width 1 (positions 4-5)", q, K, V, 5, 1),
            self.case("half-width 0: only position 4", q, K, V, 4, 0),
            self.case("half-width 10, wider than the source: the same as global attention",
                      q, K, V, 3, 10),
            self.case("the relevant key (position 5) lies outside the window around position 1 "
                      "(half-width 1)", K[4] * 3.0, K, V, 1, 1, demo=True),
            self.case("a window centred outside the source (centre 9, half-width 1): no eligible "
                      "key, so zero weights and a zero context", q, K, V, 9, 1),
        ]

    def random_case(self, rng, i):
        S, Dk, Dv = int(rng.integers(6, 10)), int(rng.integers(2, 5)), int(rng.integers(2, 6))
        c, h = int(rng.integers(1, S + 1)), int(rng.integers(1, 4))  # (h = 0: one key, any scale)
        return self.case(f"random: S={S}, D_k={Dk}, D_v={Dv}, centre {c}, half-width {h}",
                         rand(rng, Dk), rand(rng, S, Dk), rand(rng, S, Dv), c, h)

    @staticmethod
    def window(c, h, S, *, first=1, strict=False):
        """The eligible keys (S,) of the window around position ``c``, positions counted from
        ``first``."""
        d = np.abs(np.arange(first, first + S) - c)
        return d < h if strict else d <= h

    def compare(self, case, out):
        q, K, V, c, h = case.args
        S = K.shape[0]
        mask = local_mask(float(c - 1), float(h), S)
        ref = attend(q, K, V, mask=mask)
        w, ctx = as_tuple(out, 2, "(weights, context)")
        warr = numeric(w, "your weights")
        if warr.ndim == 1 and warr.shape[0] == int(mask.sum()) and warr.shape[0] != S:
            raise Reject(f"your weights have shape {warr.shape}, only the window's keys: return "
                         f"one weight per key (S={S}), 0 outside the window")

        def masked(m, scale=1.0):
            return attend(q, K, V, mask=m, scale=scale).weights if m.any() else None

        weights_or_mistake(case, warr, ref.weights, [
            (lambda cs: masked(self.window(c, h, S, first=0)),
             "your window sits one position to the right: positions are numbered 1..S, so "
             "position j is index j - 1 (compare np.arange(1, S + 1) with the centre)"),
            (lambda cs: masked(self.window(c, h, S, strict=True)),
             "keys at distance exactly half_width are left out: the window "
             "|j - centre| <= half_width is inclusive"),
            (lambda cs: masked(mask, 1 / math.sqrt(K.shape[1])),
             "your scores are divided by sqrt(D_k) (the scaled dot product of most attention "
             "code); the chapter's dot product is unscaled"),
            (lambda cs: softmax64(K @ q) * mask,
             "you zeroed the weights outside the window after the softmax without "
             "renormalising"),
            (lambda cs: softmax64(K @ q),
             "your weights ignore the window (this is global attention)"),
        ], mask=mask, what="your weights")
        check_values(ctx, ref.context, "your context", "one entry per value coordinate",
                     " (the weights are right: the context is weights @ values)")

    #: the comparison 2.7 records: position 5's weight for the query 3 * keys[4], globally and in
    #: the window around position 1
    COMPARED = {"global": "with global attention", "local": "in the window"}

    def judge_declared(self):
        comp, fail = self.declared_dict(
            "window_comparison", self.COMPARED, "record the weight on position 5 with global "
            "attention and in the window around position 1", "'global' and 'local' (one number "
            "each)")
        if fail:
            return fail
        q, K = 3.0 * RX.keys[4], RX.keys
        inside = local_mask(0, 1, K.shape[0])  # positions 1..2 (counted from 0 here)
        ref = {"global": float(attend(q, K, RX.values).weights[4]),
               "local": float(softmax64(np.where(inside, K @ q, -np.inf))[4])}
        for key, where in self.COMPARED.items():
            x = comp[key]
            if x is Ellipsis:
                return "fail", f"window_comparison: {key} is still `...`"
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.number)):
                return "fail", (f"window_comparison: {key} is {describe_type(x)}; write one "
                                f"number, position 5's weight {where}")
            if not abs(float(x) - ref[key]) <= 5e-3:  # (NaN is not near)
                return "fail", (f"window_comparison: {key} = {float(x):.3f} is not position 5's "
                                f"weight {where}: compute it with your local_attention and read "
                                f"entry 5 (index 4) of the weights")
        return None

    def on_pass(self, cases, outputs):
        comp = self.declared["window_comparison"]
        g, loc = float(comp["global"]), float(comp["local"])
        return (f"Your comparison: position 5, the key the query matches best, gets {g:.3f} of "
                f"the weight with global attention and {loc:.3f} in the window around position "
                f"1: a window that does not hold the relevant position cannot retrieve it.")


SPECS = {"2.1": DotScores(), "2.2": ByHand(), "2.4": Temperature(), "2.5": PaddingMask(),
         "2.6": MaskedSoftmax(), "2.7": LocalWindow()}
