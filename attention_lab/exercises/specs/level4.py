"""The checks of the level-4 exercise notebook (research and systems): 4.1 the score tensor's
size, 4.2 the arithmetic of global cross-attention, 4.3 replacing a value and measuring the
output, 4.6 attention entropy."""

from __future__ import annotations

import math

import numpy as np

from ...analysis.cost import multiply_adds, score_matrix_elements
from ..implementations import Readout, make_readout
from ...softmax import entropy, softmax
from .base import (RX, Reject, Spec, as_tuple, close, describe_type, diagnosis, expect_shape,
                   numeric, rand, rounded, values_or_mistake, whole_number)


# ---------------------------------------------------------------- 4.1 score-matrix size
class ScoreSize(Spec):
    n_random = 2
    NAMES = ("batch", "target", "source", "heads")

    def fixed(self):
        return [
            self.case("the chapter's case: batch 8, target 64, source 512, 4 heads", 8, 64, 512, 4),
            self.case("everything 1", 1, 1, 1, 1),
            self.case("one head: (B, T, S) or (B, 1, T, S) are both fine", 2, 3, 5, 1),
            self.case("batch 3, target 7, source 11, 2 heads", 3, 7, 11, 2),
            self.case("one query per item: batch 8, target 1, source 512, 4 heads", 8, 1, 512, 4),
        ]

    def random_case(self, rng, i):
        B, T, S, H = (int(x) for x in rng.integers(2, 40, size=4))  # (1: a factor left out)
        return self.case(f"random: batch {B}, target {T}, source {S}, {H} heads", B, T, S, H)

    def compare(self, case, out):
        B, T, S, H = case.args
        shape, n = as_tuple(out, 2, "(shape, elements)")
        if not isinstance(shape, (tuple, list, np.ndarray)):
            raise Reject(f"the shape is {describe_type(shape)}; expected a tuple such as "
                         f"(B, H, T, S)")
        entries = np.asarray(shape).reshape(-1) if isinstance(shape, np.ndarray) else shape
        shape = tuple(whole_number(x, "each entry of the shape") for x in entries)
        count = whole_number(n, "the element count")
        ref_n = score_matrix_elements(B, T, S, H)
        ok_shapes = {(B, H, T, S)} | ({(B, T, S)} if H == 1 else set())
        if count != ref_n:
            guesses = [(B * T * S, "your count leaves out the heads"),
                       (H * T * S, "your count leaves out the batch"),
                       (T * S, "your count is one T x S score matrix: multiply by the batch and "
                               "the heads"),
                       (B * H * T, "your count leaves out the source length"),
                       (B * H * T * T, "your count is T x T per item and head, the square score "
                                       "matrix of self-attention: cross-attention scores the T "
                                       "target queries against the S source keys")]
            # several can fit one case (the chapter's: B H T T = H T S); another case tells
            diagnosis([why for val, why in guesses if count == val])
            raise Reject(f"{count:,} is not the number of scores for batch {B}, target {T}, source "
                         f"{S}, {H} heads")
        if shape not in ok_shapes:
            if sorted(shape) == sorted((B, H, T, S)):
                raise Reject(f"your shape {shape} has the right sizes in the wrong order: scores "
                             f"are (B, H, T, S), with the key axis S last")
            raise Reject(f"your shape {shape} is not the score tensor's shape for batch {B}, "
                         f"target {T}, source {S}, {H} heads")

    def on_pass(self, cases, outputs):
        shape, n = outputs[0]
        mib = n * 4 / 2 ** 20
        return (f"Batch 8, target 64, source 512, 4 heads: {tuple(int(x) for x in shape)}, "
                f"{int(n):,} scores ({mib:.0f} MiB in float32, per attention layer).")


# ---------------------------------------------------------------- 4.2 multiply-adds
class MultiplyAdds(Spec):
    n_random = 2
    NAMES = ("T", "S", "D_k", "D_v")

    def fixed(self):
        return [
            self.case("everything 1", 1, 1, 1, 1),
            self.case("T=3, S=5, D_k=4, D_v=6 (D_k differs from D_v)", 3, 5, 4, 6),
            self.case("the chapter's sizes: T=64, S=512, D_k = D_v = 64", 64, 512, 64, 64),
            self.case("one query (T=1), S=10, D_k=8, D_v=2", 1, 10, 8, 2),
            self.case("T=7, S=3, D_k=2, D_v=9", 7, 3, 2, 9),
        ]

    def random_case(self, rng, i):
        T, S, Dk, Dv = (int(x) for x in rng.integers(1, 100, size=4))
        return self.case(f"random: T={T}, S={S}, D_k={Dk}, D_v={Dv}", T, S, Dk, Dv)

    def compare(self, case, out):
        T, S, Dk, Dv = case.args
        got = whole_number(out, "your count")
        ref = multiply_adds(T, S, Dk, Dv)
        if got == ref:
            return
        guesses = [(T * S * Dk, "you counted the scores (T S D_k) but not the weighted sum of the "
                                "values (T S D_v)"),
                   (T * S * Dv, "you counted the weighted sum of the values but not the scores"),
                   (2 * ref, "you counted FLOPs (2 per multiply-add); count multiply-adds"),
                   (T * S * Dk * Dv, "you multiplied D_k and D_v; the scores and the weighted "
                                     "sums are two steps, and their counts add up"),
                   (T * S, "T S is the number of scores, not the work to compute them"),
                   ((T + S) * (Dk + Dv), "the work grows with T times S (every query meets every "
                                         "key), not T plus S"),
                   (2 * T * S * Dk, "you used D_k for both steps; the weighted sums run over "
                                    "the values, of width D_v"),
                   (T * T * (Dk + Dv), "your count is T x T: the queries scored against each "
                                       "other, as in self-attention; cross-attention scores the T "
                                       "queries against the S keys")]
        guesses += [(ref + k * T * S, "you added the softmax's work (T S exponentials, sums or "
                                      "divisions); leave the softmax out") for k in (1, 2, 3)]
        # several can fit one case (everything 1); the judge then heads with a case that tells
        diagnosis([why for val, why in guesses if got == val])
        raise Reject(f"{got:,} is not the number of multiply-adds")


# ---------------------------------------------------------------- 4.3 intervention on the output
def _readout(rng, D_v: int, hidden: int = 5, n_out: int = 6, width: int = 4) -> Readout:
    """A small readout like the toy model's: softmax(W_o tanh(W_c [h; c] + b_c) + b_o)."""
    r = rounded(rng)
    return Readout({"h": r(width), "W_c": r(hidden, width + D_v), "b_c": r(hidden),
                    "W_o": 1.5 * r(n_out, hidden), "b_o": r(n_out)})


def _replaced(scores, values, control):
    """(the weights, the index of the largest, the context before and after the value there
    becomes ``control``)."""
    weights = softmax(np.asarray(scores, dtype=float))
    top = int(np.argmax(weights))
    intervened = np.array(values, dtype=float)
    intervened[top] = control
    return weights, top, weights @ values, weights @ intervened


def intervene(scores, values, control, readout) -> tuple[int, float, float]:
    """The reference: (position 1..S of the largest weight, the context's change (Euclidean),
    the output's change (total variation distance)) when that position's value becomes
    ``control``."""
    _, top, old, new = _replaced(scores, values, control)
    p_old, p_new = readout(old), readout(new)
    return top + 1, float(np.linalg.norm(new - old)), float(0.5 * np.abs(p_new - p_old).sum())


def leave_one_out(scores, values, j, readout) -> tuple[float, float]:
    """The wrong intervention 4.3's check recognises: position ``j`` (0-based) masked and the
    other weights renormalised, (the context's change, the output's change)."""
    weights = softmax(np.asarray(scores, dtype=float))
    kept = weights.copy()
    kept[j] = 0.0
    kept = kept / kept.sum() if kept.sum() > 0 else kept
    old, new = weights @ values, kept @ values
    return float(np.linalg.norm(new - old)), float(0.5 * np.abs(readout(new) - readout(old)).sum())


def _near(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


class Intervention(Spec):
    """``replace_and_measure(scores, values, control, readout) -> (position, context_change,
    output_change)``; positions 1..S; the readout is the layers after the context."""

    n_random = 2
    NAMES = ("scores", "values", "control", "readout")

    def fixed(self):
        s, V = RX.keys @ RX.query, RX.values
        rng = np.random.default_rng(15)
        r = rounded(rng)
        return [
            self.case("the running example's dot scores, control = the mean of the values",
                      s, V, V.mean(axis=0), _readout(rng, 3)),
            self.case("the running example, control = zeros", s, V, np.zeros(3), _readout(rng, 3)),
            self.case("one source (S=1)", s[:1], V[:1], np.ones(3), _readout(rng, 3)),
            self.case("six sources, values of width 4, control = ones",
                      r(6), r(6, 4), np.ones(4), _readout(rng, 4)),
        ]

    def random_case(self, rng, i):
        S, Dv = int(rng.integers(2, 8)), int(rng.integers(2, 5))
        return self.case(f"random: S={S}, D_v={Dv}", rand(rng, S, scale=2), rand(rng, S, Dv),
                         rand(rng, Dv), _readout(rng, Dv))

    def compare(self, case, out):
        s, V, ctl, ro = case.args
        readout = make_readout(ro.params)
        pos, change, tvd = intervene(s, V, ctl, readout)
        w, _, before, after = _replaced(s, V, ctl)
        p, ch, oc = as_tuple(out, 3, "(position, context_change, output_change)")
        got_p = whole_number(p, "the position")
        if got_p != pos:
            if got_p == pos - 1:
                raise Reject(f"position {got_p} is one too low: positions are numbered 1..S, so "
                             f"the position is the array index + 1")
            if got_p - 1 == int(np.argmin(w)) or got_p == int(np.argmin(w)):
                raise Reject(f"position {got_p} has the smallest weight; replace the value at the "
                             f"largest weight (argmax)")
            raise Reject(f"position {got_p} is not the position with the largest attention weight")
        numbers = []
        for x, name in ((ch, "context_change"), (oc, "output_change")):
            try:
                if x is None:  # np.asarray(None, dtype=float) would read it as NaN
                    raise TypeError(name)
                numbers.append(float(np.asarray(x, dtype=np.float64).reshape(())))
            except Exception:
                raise Reject(f"{name} is {describe_type(x)}; expected one number") from None
        got_c, got_o = numbers
        left_out = leave_one_out(s, V, pos - 1, readout)
        if _near(got_c, left_out[0]) and not _near(got_c, change):
            raise Reject("you left the top position out (masked it and renormalised the other "
                         "weights): that is leave-one-out, another intervention. Replace its "
                         "value by the control vector instead, and keep every weight as it is")
        if not _near(got_c, change):
            if _near(got_c, change ** 2):
                raise Reject("your context_change is the squared distance; use the Euclidean norm "
                             "(np.linalg.norm of the difference)")
            if got_c == 0:
                raise Reject("your context_change is 0: replacing a value leaves the weights "
                             "unchanged but changes the context")
            raise Reject(f"your context_change {got_c:.6g} is not the norm of the context "
                         f"difference")
        if _near(got_o, tvd):
            return
        p_before, p_after = readout(before), readout(after)
        for wrong, why in (
                (2 * tvd, "your output_change is sum |p - q|, twice the total variation distance "
                          "1/2 sum |p - q|"),
                (float(np.linalg.norm(p_after - p_before)),
                 "your output_change is the Euclidean distance of the two output distributions; "
                 "the exercise asks for the total variation distance 1/2 sum |p - q|"),
                (change, "your output_change equals the context's change: pass both contexts "
                         "through readout and compare the two output distributions")):
            if _near(got_o, wrong):
                raise Reject(why)
        raise Reject(f"your output_change {got_o:.6g} is not the total variation distance between "
                     f"the outputs before and after the replacement")

    def on_pass(self, cases, outputs):
        p, ch, oc = outputs[0]
        return (f"Running example with a small readout: replacing the value at position {int(p)} "
                f"(the largest weight) by the mean value moves the context by {float(ch):.4f} "
                f"and the output distribution by a total variation distance of {float(oc):.4f}.")


# ---------------------------------------------------------------- 4.6 entropy
class Entropy(Spec):
    n_random = 2
    NAMES = ("weights",)

    def fixed(self):
        return [
            self.case("uniform weights over five keys", np.full(5, 0.2)),
            self.case("one-hot weights", np.array([0.0, 1.0, 0.0, 0.0])),
            self.case("two eligible keys and two masked zeros: [0.5 0.5 0 0]",
                      np.array([0.5, 0.5, 0.0, 0.0])),
            self.case("the running example's softmax weights", softmax(RX.keys @ RX.query)),
            self.case("a batch of rows, the last one all zeros (an all-masked row, zeros policy)",
                      np.array([[0.7, 0.2, 0.1], [0.0, 0.5, 0.5], [0.0, 0.0, 0.0]])),
            self.case("a single key (S=1)", np.array([1.0])),
        ]

    def random_case(self, rng, i):
        T, S = int(rng.integers(2, 5)), int(rng.integers(2, 9))
        w = rng.dirichlet(np.ones(S), size=T)
        w[0, 0] = 0.0
        w[0] /= w[0].sum()
        w[-1] = 0.0  # an all-masked row
        return self.case(f"random: {T} weight rows over S={S} keys, one zero weight, the last "
                         f"row all zero", w)

    def compare(self, case, out):
        (w,) = case.args
        ref = entropy(w)
        arr = numeric(out, "your entropy")
        if arr.shape != ref.shape:
            if arr.size == 1 and ref.shape == ():
                arr = arr.reshape(())
            else:
                expect_shape(arr, ref.shape, "your entropy", "one entropy per row: the weights' "
                             "shape without the last axis")
        a = arr.astype(np.float64)
        if np.isnan(a).any():
            zero_rows = ~(np.asarray(w) != 0).any(axis=-1)
            if zero_rows.any() and np.array_equal(np.isnan(a), zero_rows):
                raise Reject("your entropy is NaN only for the row whose weights are all 0 (an "
                             "all-masked row) and right elsewhere: something divides by the "
                             "row's total, 0/0 there (scipy.stats.entropy renormalises its input "
                             "so). The weights already sum to 1, or are all 0 with entropy 0: "
                             "use them as they are")
            raise Reject("your entropy is NaN where a weight is 0: 0 * log(0) is NaN in numpy, but "
                         "it must count as 0 (compute the log only where w > 0)")
        if not close(a, ref) and np.allclose(a, ref, rtol=0, atol=1e-4):
            raise Reject(f"your entropy is off by up to {np.abs(a - ref).max():.1g} nats: a small "
                         f"number added inside the log (log(w + eps)) shifts every term; take "
                         f"the log only where w > 0")
        values_or_mistake(case, a, ref, [
            (lambda c: entropy(w, base=2), "your entropy is in bits (log base 2); use the natural "
                                           "log (nats)"),
            (lambda c: -entropy(w), "your entropy has the wrong sign: H = -sum w log w >= 0"),
            (lambda c: entropy(w) / np.log(w.shape[-1]) if w.shape[-1] > 1 else None,
             "you divided by log(S) (a normalised entropy); the exercise asks for the entropy in "
             "nats"),
        ], "your entropy")

    def on_pass(self, cases, outputs):
        return (f"Uniform weights: {float(np.asarray(outputs[0])):.3f} nats over 5 keys (log 5); "
                f"over 50 keys log 50 = {math.log(50):.3f}. The running example's weights: "
                f"{float(np.asarray(outputs[3])):.3f} nats.")


SPECS = {"4.1": ScoreSize(), "4.2": MultiplyAdds(), "4.3": Intervention(), "4.6": Entropy()}
