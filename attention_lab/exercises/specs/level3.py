"""The checks of the level-3 exercise notebook (maths and code): 3.1 a stable softmax, 3.2 the
all-masked row (a declared policy, an implementation and a test of it), 3.3 dot-product and
bilinear attention, 3.4 additive attention, 3.5 batched cross-attention on the right axis."""

from __future__ import annotations

import math
import re

import numpy as np

from ...attention import attend
from ...examples import additive_example
from ..implementations import Impl
from ...masks import padding_mask
from ...scores import additive_scores
from ...softmax import naive_softmax, softmax
from .base import (IMPL_NOTES, RX, Case, Reject, Spec, as_tuple, check_values, check_weights,
                   close, describe_type, diagnose, expect_shape, fmt, judge_test_answer, numeric,
                   rand, rounded, scores_shape, softmax_axis, to_array, values_or_mistake,
                   weights_or_mistake)
from .level2 import FAR_BELOW, far_below, masked_softmax_mistakes, softmax64


def _vec(x) -> str:
    """Recorded weights as ``[0.731, 0.269, nan]`` (three decimals, NaN written as nan)."""
    return "[" + ", ".join("nan" if np.isnan(v) else f"{v:.3f}" for v in np.ravel(x)) + "]"


def _weights_and_context(case, out, ref_w, ref_c, mistakes, context_shape: str) -> None:
    """An answer's ``(weights, context)``: the weights first (a wrong array of the right shape is
    named by the mistake it matches, see :func:`diagnose`), then the context."""
    w, c = as_tuple(out, 2, "(weights, context)")
    weights_or_mistake(case, numeric(w, "your weights"), ref_w, mistakes, floats=True,
                       what="your weights")
    check_values(c, ref_c, "your context", context_shape)


#: The random cases' sizes start at 2 (D_v at 1): with one key every weight is 1, with D_k = 1
#: the scaled scores are the unscaled ones, with one query (or a 1x1 W) the wrong axis (or W
#: transposed) changes nothing; the fixed cases have such sizes, and a mistake behind a lookup
#: of them would pass hidden cases that had them too.
MIN_SIZES = [2, 2, 2, 2, 1]


# ---------------------------------------------------------------- 3.1 stable softmax
class StableSoftmax(Spec):
    """``stable_softmax(scores)`` on fixed and random cases; then the declared
    ``softmax_comparison``, the student's record of chapter exercise 8: the weights of the naive
    formula and of their stable softmax for the large scores :data:`LARGE`."""

    #: the large scores exercise 8 compares the two softmaxes on
    LARGE = np.array([1e4, 1e4 - 1, 0.0])
    KEYS = ("naive", "stable")
    NAMES = ("scores",)

    def judge_declared(self):
        name = "softmax_comparison"
        comp, fail = self.declared_dict(
            name, self.KEYS, "record the weights of the naive formula and of your stable_softmax "
            "for the scores [1e4, 1e4 - 1, 0]", "'naive' and 'stable' (three weights each)")
        if fail:
            return fail
        with np.errstate(over="ignore", invalid="ignore"):
            naive_ref = naive_softmax(self.LARGE)
        stable_ref = softmax(self.LARGE)
        got = {}
        for key in self.KEYS:
            if comp[key] is Ellipsis:
                return "fail", f"{name}: {key} is still `...`"
            try:
                arr = numeric(comp[key], key).astype(np.float64)
            except Reject as r:
                return "fail", (f"{name}: {r}; write three weights, NaN included where the "
                                "formula gives NaN")
            if arr.shape != (3,):
                return "fail", (f"{name}: {key} has shape {tuple(arr.shape)}; write the three "
                                f"weights of the scores [1e4, 1e4 - 1, 0], in order")
            got[key] = arr
        naive, stable = got["naive"], got["stable"]
        if np.isnan(stable).any():
            return "fail", (f"{name}: stable = {_vec(stable)} holds NaN: record what your "
                            f"stable_softmax returns for these scores (it passes every case, so "
                            f"it is finite)")
        if not np.all(np.abs(stable - stable_ref) <= 5e-3):
            return "fail", (f"{name}: stable = {_vec(stable)} is not your stable_softmax's weights "
                            f"for the scores [1e4, 1e4 - 1, 0]: call it on them and copy what it "
                            f"returns (three decimals)")
        if not np.isnan(naive).any():
            same = bool(np.all(np.abs(naive - stable_ref) <= 5e-3))
            return "fail", (f"{name}: naive = {_vec(naive)} "
                            + ("is the stable softmax's result: " if same else "is finite: ")
                            + "compute the naive formula exp(e) / sum(exp(e)) on these scores, "
                              "without subtracting the maximum, and record what it returns")
        if not np.allclose(naive, naive_ref, atol=5e-3, equal_nan=True):
            return "fail", (f"{name}: naive = {_vec(naive)} is not what the naive formula "
                            f"exp(e) / sum(exp(e)) returns for the scores [1e4, 1e4 - 1, 0]: "
                            f"compute it and record every weight, NaN where it gives NaN")
        return None

    def fixed(self):
        return [
            self.case("small scores [1 2 3]", np.array([1.0, 2.0, 3.0])),
            self.case("logits of +1e4: [1e4, 1e4 - 1, 0]", np.array([1e4, 1e4 - 1, 0.0]), big="+"),
            self.case("logits of -1e4: [-1e4, -1e4 + 1, -1e4 + 2]",
                      np.array([-1e4, -1e4 + 1, -1e4 + 2]), big="-"),
            self.case("two rows with very different ranges: [[1e4, 0, -1e4], [-1e4, -1e4, -1e4 + "
                      "3]]", np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4 + 3]]), big="rows"),
            self.case("a single score (S=1) of 1e4", np.array([1e4]), big="+"),
            self.case("float16 scores [12, 11, 0]: exp(12) overflows float16 (max 65504)",
                      np.array([12.0, 11.0, 0.0], dtype=np.float16), big="f16"),
            self.case("a -inf score (a masked key) gets weight 0: [0, -inf, 1]",
                      np.array([0.0, -np.inf, 1.0])),
        ]

    def random_case(self, rng, i):
        shape = scores_shape(rng, i)
        scale = float(10 ** rng.uniform(0, 3))
        # each row 1e3 to 1e4 above or below zero, the next on the other side: exp overflows or
        # underflows without the row's own maximum subtracted
        rows = shape[:-1] + (1,)
        shift = rng.choice([-1, 1]) * (-1) ** np.arange(rows[0]).reshape(rows) * np.round(
            10 ** rng.uniform(3, 4, size=rows))
        return self.case(f"random: scores of shape {shape}, spread about {scale:.0f}, far from "
                         f"zero", np.round(rng.normal(size=shape) * scale, 2) + shift)

    NOTES = {"+": "exp(1e4) overflows to inf and inf/inf is NaN; subtract each row's maximum "
                  "before exponentiating",
             "-": "exp(-1e4) underflows to 0 and 0/0 is NaN; subtracting each row's maximum makes "
                  "the largest term exp(0) = 1",
             "rows": "subtract each row's own maximum (max over axis -1, keepdims=True), not the "
                     "maximum of the whole array",
             "f16": "in float16 exp overflows above about 11.1; subtract the maximum first"}

    def compare(self, case, out):
        (s,) = case.args
        ref = softmax(s.astype(np.float64))
        arr = to_array(out, "your weights")
        dtype = s.dtype if s.dtype.kind == "f" else None  # the scores' precision, not less
        axes = [
            (lambda c: softmax_axis(c.args[0], 0),
             "you normalised over axis 0 (down the columns); softmax runs over the last "
             "axis, the keys"),
            (lambda c: softmax_axis(c.args[0], None),
             "you normalised over the whole array (axis=None, the default of "
             "scipy.special.softmax): each row must sum to 1 on its own; softmax runs "
             "over the last axis, the keys (axis=-1), with each row's own maximum"),
        ]
        weights_or_mistake(case, arr, ref, axes if s.ndim > 1 else [], mask=np.isfinite(s),
                           dtype=dtype, floats=True, what="your weights",
                           overflow_note=self.NOTES.get(case.data.get("big"), ""))

    def on_pass(self, cases, outputs):
        comp = self.declared["softmax_comparison"]
        naive, stable = (np.asarray(comp[k], dtype=np.float64) for k in self.KEYS)
        return (f"Your comparison: for the scores [1e4, 1e4 - 1, 0] the naive formula gives "
                f"{_vec(naive)} and your stable softmax {_vec(stable)}: exp(1e4) overflows to inf "
                f"and inf / inf is NaN, while after subtracting the maximum the largest term is "
                f"exp(0) = 1.")


# ---------------------------------------------------------------- 3.2 all-masked row, declared
POLICIES = {"zeros": "G", "nan": "H", "raise": "I"}  # the implementation that follows each


class SafeMaskedSoftmax(Spec):
    """The answer declares ``all_masked_policy`` ("zeros", "nan" or "raise"), implements it in
    ``masked_softmax_safe(scores, mask)`` (checked on fixed and random cases, all-masked rows
    against the declared policy) and tests it with ``test_all_masked_policy(masked_softmax) ->
    bool`` (run on implementations with each policy and broken ones)."""

    n_random = 2
    NAMES = ("scores", "mask")

    def case(self, note, *args, fn=1, **data):  # the implementation's cases (fn 0 is the policy)
        return super().case(note, *args, fn=fn, **data)

    @property
    def policy(self):
        return self.declared.get("all_masked_policy")

    def declaration_problem(self):
        p = self.policy
        if p is Ellipsis or p is None:
            return "fail", ("all_masked_policy is still `...`: declare what a row without an "
                            "eligible key returns, 'zeros', 'nan' or 'raise'")
        if p not in POLICIES:
            return "fail", (f"all_masked_policy is {fmt(p)}: declare one of 'zeros', 'nan' or "
                            f"'raise' (uniform weights, what a finite fill gives, put all the "
                            f"mass on keys that must get none)")
        return None

    def fixed(self):
        s = RX.keys @ RX.query
        b = rounded(3)(3, 5)
        big16 = np.array([[1e4, -1e4, 5.0, 0.0], [2.0, 1.0, 0.0, -1.0]], dtype=np.float16)
        far = np.array([True, True, True, False])
        return [
            self.case("the chapter's five scores, keys 4-5 masked (float64)", s, RX.valid.copy()),
            self.case("float64 eligible scores around -1e4 beside a masked key",
                      np.array([-1e4, -1e4 + 1, -1e4 + 2, 3.0]), far, far=True),
            self.case("float16 eligible scores far below zero, [-20 -19 -18], beside a masked key",
                      np.array([-20.0, -19.0, -18.0, 0.5], dtype=np.float16), far, far=True),
            self.case("float16 scores, keys 4-5 masked (no all-masked row)",
                      s.astype(np.float16), RX.valid.copy()),
            self.case("lengths 5, 3 and 0: the last row is all masked (float64)",
                      b, padding_mask([5, 3, 0], 5)),
            self.case("every key of every row masked", b[:2, :3].copy(), np.zeros((2, 3), bool)),
            self.case("a single all-masked row (1-D, S=4)", b[0, :4].copy(), np.zeros(4, bool)),
            self.case("float32 scores, lengths 2 and 0", b[:2, :4].astype(np.float32),
                      padding_mask([2, 0], 4)),
            self.case("float16 scores with logits of +-1e4, lengths 3 and 0",
                      big16, padding_mask([3, 0], 4)),
        ] + [Case(IMPL_NOTES[code], (Impl(code),), ("masked_softmax",), 2)
             for code in ("G", "H", "I", "N", "J")]

    def random_case(self, rng, i):
        """Scores far below zero; one all-masked row in every other case (the other holds
        none: with the policy "raise" an all-masked row is all a function has to see)."""
        T, S = int(rng.integers(2, 5)), int(rng.integers(2, 7))
        s, m = far_below(rng, T, S, 3.0)
        if i % 2 == 0:
            m[int(rng.integers(0, T))] = False
        dt = [np.float64, np.float32][int(rng.integers(0, 2))]
        return self.case(f"random: {np.dtype(dt).name} scores ({T}, {S}) far below zero, "
                         + ("one all-masked row" if i % 2 == 0 else "every row with an eligible "
                            "key"), s.astype(dt), m, far=True)

    @staticmethod
    def _has_empty_row(case) -> bool:
        s, m = case.args
        return bool((~np.broadcast_to(m, np.shape(s)).any(axis=-1)).any())

    def accepts_raise(self, case, raised):
        return (case.fn == 1 and self.policy == "raise" and self._has_empty_row(case)
                and raised.get("type") == "ValueError")

    def raise_note(self, case, raised):
        if case.fn == 1 and self._has_empty_row(case) and self.policy != "raise":
            return (f"your policy is {self.policy!r}: make the implementation and the "
                    f"declaration agree")
        if case.fn == 1 and self._has_empty_row(case):
            return "your policy 'raise' means a ValueError for a row without an eligible key"
        if case.fn == 2:
            return ("your test let the implementation's exception escape: catch it, and count "
                    "it as following the policy only when your policy is 'raise'")
        return ""

    def compare(self, case, out):
        if case.fn == 2:
            p = self.policy
            return judge_test_answer(
                case, out, case.args[0].code == POLICIES[p],
                f"it follows your policy {p!r} on a row without an eligible key and masks the "
                f"other rows correctly" + (" (catch its ValueError: with pytest.raises or try/"
                                           "except)" if p == "raise" else ""),
                f"your policy is {p!r}: give the implementation a batch with an all-masked row "
                f"and an ordinary one, and check both (the ordinary row: masked weights exactly "
                f"0, the others summing to 1)")
        s, m = case.args
        ref = softmax64(s, mask=m)
        arr = numeric(out, "your weights")
        expect_shape(arr, ref.shape, "your weights", "one weight per key")
        dtype = s.dtype if s.dtype.kind == "f" else None  # the scores' precision, not less
        mb = np.broadcast_to(m, ref.shape)
        S = ref.shape[-1]
        rows, erows = arr.astype(np.float64).reshape(-1, S), (~mb.any(axis=-1)).reshape(-1)
        if erows.any() and self.policy == "raise":
            raise Reject("your policy is 'raise', but your function returned weights for a row "
                         "without an eligible key: raise a ValueError there")
        for i in np.flatnonzero(erows):
            self._empty_row(rows[i], f"row {i + 1}" if arr.ndim > 1 else "the row", s.dtype)
        if case.data.get("far") and np.isnan(rows[~erows]).any():
            raise Reject(f"your weights: {FAR_BELOW}")
        keep = ~erows
        if not keep.any():
            return
        try:
            ours, right, eligible = (x.reshape(-1, S)[keep] for x in (arr, ref, mb))
            check_weights(ours, right, mask=eligible, dtype=dtype, what="your weights")
        except Reject as r:
            why = diagnose(case, arr, masked_softmax_mistakes(), dtype=dtype, ref=ref)
            raise Reject(why or str(r)) from None

    def _empty_row(self, row, where, dtype) -> None:
        """A row without an eligible key against the declared policy ("zeros" or "nan")."""
        p = self.policy
        if p == "nan":
            if np.isnan(row).all():
                return
            if np.allclose(np.nan_to_num(row, nan=-1.0), 0):
                raise Reject(f"{where} has no eligible key and your weights there are 0, but "
                             f"your policy is 'nan': make the implementation and the "
                             f"declaration agree")
            raise Reject(f"{where} has no eligible key; your policy is 'nan', so every weight "
                         f"there must be NaN, yours are {fmt(row)}")
        if np.isnan(row).any():
            if dtype == np.float16:
                raise Reject(f"{where} has no eligible key and your float16 weights there are "
                             f"NaN: in float16 a fill such as -1e9 is not representable (the "
                             f"largest float16 is 65504), it becomes -inf, and a row of -inf "
                             f"gives 0/0; detect all-masked rows and return zeros")
            raise Reject(f"{where} has no eligible key and your weights there are NaN: with a "
                         f"-inf fill every term is exp(-inf) = 0 and 0/0 = NaN; detect "
                         f"all-masked rows and return zeros, as your policy 'zeros' says")
        if np.allclose(row, 1.0 / row.size, atol=1e-3):
            raise Reject(f"{where} has no eligible key and your weights there are uniform "
                         f"(1/{row.size} each): a finite fill such as -1e9 makes every masked "
                         f"key equally likely; your policy is 'zeros'")
        if np.any(row != 0):
            raise Reject(f"{where} has no eligible key; with your policy 'zeros' its weights "
                         f"must all be 0, yours are {fmt(row)}")


# ---------------------------------------------------------------- 3.3 dot and bilinear
class DotBilinear(Spec):
    """``dot_attention`` and ``bilinear_attention`` on fixed and random cases; then the declared
    ``score_comparison``, the student's record of chapter exercise 12: the shapes of the two
    functions' scores for two queries against the running example's five keys."""

    n_random = 1
    NAMES = ("dot_attention", "bilinear_attention")
    #: the scores' shape the comparison records: T = 2 queries, S = 5 keys
    SHAPE = (2, RX.keys.shape[0])

    def judge_declared(self):
        name = "score_comparison"
        comp, fail = self.declared_dict(
            name, ("bilinear", "dot"), "record the shape of each function's scores for the two "
            "queries Q2 against the five keys", "'dot' and 'bilinear' (one shape each)")
        if fail:
            return fail
        T, S = self.SHAPE
        for key in ("dot", "bilinear"):
            x = comp[key]
            if x is Ellipsis:
                return "fail", f"{name}: {key} is still `...`"
            if not isinstance(x, (tuple, list)) or not all(
                    isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))
                    for n in x):
                return "fail", (f"{name}: {key} is {describe_type(x)}; write a shape, a tuple "
                                f"of whole numbers such as scores.shape")
            shape = tuple(int(n) for n in x)
            if shape == (S, T):
                return "fail", (f"{name}: {key} = {shape} is (S, T), keys before queries: the "
                                f"scores have one row per query and one column per key")
            if shape != self.SHAPE:
                return "fail", (f"{name}: {key} = {shape} is not the shape of your "
                                f"{key}_attention's scores for the {T} queries of Q2 against the "
                                f"{S} keys: print scores.shape and copy it")
        return None

    def fixed(self):
        q, K, V, W = RX.query, RX.keys, RX.values, RX.W
        r = rounded(12)
        Wsq = np.array([[1.0, 0.5, 0.0], [-0.3, 0.8, 0.2], [0.6, 0.0, 1.0]])
        dn, bn = ("Q", "K", "V"), ("Q", "K", "V", "W")
        return [
            Case("dot: the running example's query as one target (T=1)", (q[None], K, V), dn, 0),
            Case("dot: T=2 queries, S=4 keys, D_k=3, D_v=5", (r(2, 3), r(4, 3), r(4, 5)), dn, 0),
            Case("dot: one key (S=1), T=3", (r(3, 2), r(1, 2), r(1, 4)), dn, 0),
            Case("bilinear: the running example with the chapter's W (T=1)", (q[None], K, V, W),
                 bn, 1),
            Case("bilinear: W = identity, the same as dot-product attention",
                 (r(2, 3), r(4, 3), r(4, 2), np.eye(3)), bn, 1),
            Case("bilinear: a non-symmetric square W, T=2", (r(2, 3), r(5, 3), r(5, 3), Wsq),
                 bn, 1),
            Case("bilinear: queries of width D_q=2 against keys of width D_k=3, W (2, 3)",
                 (r(2, 2), r(4, 3), r(4, 5), r(2, 3)), bn, 1),
        ]

    def random(self, rng):
        T, S, Dq, Dk, Dv = (int(x) for x in rng.integers(MIN_SIZES, 6))
        return [
            Case(f"dot: random T={T}, S={S}, D_k={Dk}, D_v={Dv}",
                 (rand(rng, T, Dk), rand(rng, S, Dk), rand(rng, S, Dv)), ("Q", "K", "V"), 0),
            Case(f"bilinear: random T={T}, S={S}, D_q={Dq}, D_k={Dk}, D_v={Dv}",
                 (rand(rng, T, Dq), rand(rng, S, Dk), rand(rng, S, Dv), rand(rng, Dq, Dk)),
                 ("Q", "K", "V", "W"), 1),
        ]

    def compare(self, case, out):
        Q, K, V = case.args[:3]
        W = case.args[3] if case.fn == 1 else None
        ref = attend(Q, K, V) if W is None else attend(Q, K, V, score="bilinear", W=W)
        scores, weights, context = ref.scores, ref.weights, ref.context
        name = self.NAMES[case.fn]
        s, w, c = as_tuple(out, 3, "(scores, weights, context)")
        sarr = numeric(s, f"{name}'s scores")
        if sarr.shape == scores.shape[::-1] and sarr.shape != scores.shape:
            raise Reject(f"{name}'s scores have shape {sarr.shape} = (S, T): put the queries on the "
                         f"rows, scores (T, S)")
        expect_shape(sarr, scores.shape, f"{name}'s scores", "(T, S): one row per query")
        values_or_mistake(case, sarr, scores, [
            (lambda c: Q @ K.T / math.sqrt(K.shape[1]),
             "your scores are divided by sqrt(D_k); the chapter's dot product is unscaled")
        ] if W is None else [
            (lambda c: Q @ W.T @ K.T if W.shape[0] == W.shape[1] else None,
             "your scores use W transposed: with W of shape (D_q, D_k) the score is "
             "q^T W k: the query on W's left, the key on its right"),
            (lambda c: Q @ K.T if Q.shape[1] == K.shape[1] else None,
             "your bilinear scores ignore W"),
        ], f"{name}'s scores")
        warr = numeric(w, f"{name}'s weights")
        try:
            check_weights(warr, weights, what=f"{name}'s weights")
        except Reject:
            if warr.shape == weights.shape and warr.dtype.kind == "f" and weights.shape[0] > 1:
                if close(warr, softmax_axis(scores, 0)):
                    raise Reject(f"{name}'s weights are normalised over the queries (axis 0); "
                                 f"softmax runs over the keys (axis -1)") from None
            raise
        check_values(c, context, f"{name}'s context", "(T, D_v)")

    def on_pass(self, cases, outputs):
        comp = self.declared["score_comparison"]
        dot, bil = (tuple(int(n) for n in comp[k]) for k in ("dot", "bilinear"))
        return (f"Your comparison: for 2 queries against 5 keys the dot scores have shape {dot} "
                f"and the bilinear scores {bil}: one score per query and key, (T, S), for both; "
                f"W changes the values of the scores, not their shape, and lets the query width "
                f"D_q differ from the key width D_k.")


# ---------------------------------------------------------------- 3.4 additive
TRANSPOSE_NOTE = " (with any other widths that product raises a shape error)"


class Additive(Spec):
    n_random = 2
    NAMES = ("q", "keys", "values", "W_q", "W_k", "v")

    def fixed(self):
        r = rounded(13)
        ex = additive_example(19)
        return [
            self.case("every width 3: D_q = D_k = A = 3, so W_q and W_k are square",
                      r(3), r(4, 3), r(4, 2), r(3, 3), r(3, 3), r(3)),
            self.case("equal widths D_q = D_k = 3, alignment width A = 4",
                      r(3), r(5, 3), r(5, 3), r(4, 3), r(4, 3), r(4)),
            self.case("the chapter's example: D_q = 4, D_k = 6, A = 5 (default_rng(19))",
                      ex.q, ex.source, ex.source, ex.W_q, ex.W_h, ex.v_a),
            self.case("one key (S=1), D_q = 2, D_k = 3",
                      r(2), r(1, 3), r(1, 2), r(3, 2), r(3, 3), r(3)),
            self.case("alignment width A = 1", r(3), r(4, 2), r(4, 3), r(1, 3), r(1, 2), r(1)),
            self.case("values of width D_v = 2 (D_v differs from D_k = 4)",
                      r(3), r(5, 4), r(5, 2), r(6, 3), r(6, 4), r(6)),
        ]

    def random_case(self, rng, i):
        S, Dq, Dk, Dv, A = (int(x) for x in rng.integers([2, 2, 2, 1, 2], 7))  # (see MIN_SIZES)
        return self.case(f"random: S={S}, D_q={Dq}, D_k={Dk}, D_v={Dv}, A={A}", rand(rng, Dq),
                         rand(rng, S, Dk), rand(rng, S, Dv), rand(rng, A, Dq), rand(rng, A, Dk),
                         rand(rng, A))

    def compare(self, case, out):
        q, K, V, Wq, Wk, v = case.args
        ref_w = softmax64(additive_scores(q, K, Wq, Wk, v))
        square_k, square_q = Wk.shape[0] == Wk.shape[1], Wq.shape[0] == Wq.shape[1]
        _weights_and_context(case, out, ref_w, ref_w @ V, [
            (lambda c: softmax64(np.tanh(K @ Wq.T + Wk @ q) @ v)
             if Wq.shape == Wk.shape and q.shape[0] == K.shape[1] else None,
             "your scores match the two matrices swapped: the query goes through W_q "
             "(width D_q) and each key through W_k (width D_k)"),
            (lambda c: softmax64(np.tanh(K @ Wk + Wq @ q) @ v) if square_k else None,
             f"your scores match keys @ W_k, with W_k not transposed: W_k is (A, D_k), so "
             f"the projected keys are keys @ W_k.T, shape (S, A){TRANSPOSE_NOTE}"),
            (lambda c: softmax64(np.tanh(K @ Wk.T + q @ Wq) @ v) if square_q else None,
             f"your scores match q @ W_q, which multiplies by W_q transposed: W_q is "
             f"(A, D_q), so the projected query is W_q @ q, shape (A,){TRANSPOSE_NOTE}"),
            (lambda c: softmax64(np.tanh(K @ Wk + q @ Wq) @ v)
             if square_k and square_q else None,
             f"your scores match keys @ W_k and q @ W_q: both matrices are used "
             f"transposed; the projections are keys @ W_k.T (S, A) and W_q @ q (A,)"
             f"{TRANSPOSE_NOTE}"),
            (lambda c: softmax64((K @ Wk.T + Wq @ q) @ v),
             "your scores leave out the tanh: e_i = v . tanh(W_q q + W_k k_i)"),
            (lambda c: softmax64(np.tanh((K @ Wk.T + Wq @ q) @ v)),
             "you applied tanh after the dot product with v; it comes before"),
        ], "one entry per value coordinate, D_v")

    def raise_note(self, case, raised):
        """A matrix product of mismatched shapes: which shapes the projections need."""
        if not re.search(r"matmul|aligned|shape|mismatch|size", raised.get("message", "")):
            return ""
        q, K, V, Wq, Wk, v = case.args
        return (f"a matrix product got shapes that do not fit: here q is {q.shape}, keys "
                f"{K.shape}, W_q {Wq.shape} = (A, D_q) and W_k {Wk.shape} = (A, D_k), so the "
                f"query is projected with W_q @ q and the keys with keys @ W_k.T; keys @ W_k or "
                f"q @ W_q uses the matrix untransposed")

    def on_pass(self, cases, outputs):
        chapter = next(i for i, c in enumerate(cases) if c.note.startswith("the chapter's"))
        return (f"On the chapter's example (query width 4, key width 6) your weights are "
                f"{fmt(np.asarray(outputs[chapter][0]))}.")


# ---------------------------------------------------------------- 3.5 batched, right axis
class Batched(Spec):
    n_random = 2
    NAMES = ("Q", "K", "V")

    def fixed(self):
        r = rounded(14)
        return [
            self.case("one query: B=1, T=1, S=3", r(1, 1, 2), r(1, 3, 2), r(1, 3, 3)),
            self.case("every axis a different size: B=2 sequences of T=1 query, S=3 keys",
                      r(2, 1, 2), r(2, 3, 2), r(2, 3, 2)),
            self.case("the chapter's shapes: B=2, T=3, S=5, D_k=4, D_v=6",
                      r(2, 3, 4), r(2, 5, 4), r(2, 5, 6)),
            self.case("T = S = 4: a square score matrix, where a wrong axis keeps the shape",
                      r(2, 4, 3), r(2, 4, 3), r(2, 4, 2)),
            self.case("one key (S=1): every weight is 1", r(3, 2, 2), r(3, 1, 2), r(3, 1, 3)),
        ]

    def random_case(self, rng, i):
        B, T, S, Dk, Dv = (int(x) for x in rng.integers(MIN_SIZES, 6))
        return self.case(f"random: B={B}, T={T}, S={S}, D_k={Dk}, D_v={Dv}",
                         rand(rng, B, T, Dk), rand(rng, B, S, Dk), rand(rng, B, S, Dv))

    def compare(self, case, out):
        Q, K, V = case.args
        ref = attend(Q, K, V)
        scores = ref.scores
        _weights_and_context(case, out, ref.weights, ref.context, [
            (lambda c: softmax_axis(scores, 1),
             "your softmax runs over the target axis (axis 1): each source position's "
             "weights sum to 1 across the queries instead of each query's weights across "
             "the sources (axis -1)"),
            (lambda c: softmax_axis(scores, 0),
             "your softmax runs over the batch axis (axis 0): examples in the batch "
             "compete with each other; use axis -1"),
            (lambda c: softmax_axis(scores / math.sqrt(Q.shape[-1]), -1),
             "your scores are divided by sqrt(D_k) (the scaled dot product of most "
             "attention code, e.g. PyTorch's scaled_dot_product_attention); this "
             "exercise asks for the chapter's unscaled dot product"),
        ], "(B, T, D_v)")


SPECS = {"3.1": StableSoftmax(), "3.2": SafeMaskedSoftmax(), "3.3": DotBilinear(),
         "3.4": Additive(), "3.5": Batched()}
