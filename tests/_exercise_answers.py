"""Student-style answers for the exercise checks: one correct answer per computational check and
realistic wrong answers, each with the fragments the check's message must contain.

Written independently of the checkers' own mistake detectors (they are code a student would
write), so a test that a wrong answer is recognised is not circular.
"""

from __future__ import annotations

import math

import numpy as np

from attention_lab.examples import running_example

R = running_example()


# ------------------------------------------------------------------ correct answers
def _softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def ok_parts():
    s = R.keys @ R.query
    w = _softmax(s)
    return {"query": R.query, "keys": R.keys, "values": R.values, "scores": s, "weights": w,
            "context": w @ R.values}


def ok_context_vector(weights, values):
    return weights @ values


def ok_in_convex_hull(context, values):
    A = np.vstack([values.T, np.ones(len(values))])  # (D_v + 1, S)
    b = np.append(context, 1.0)
    w = np.linalg.lstsq(A, b, rcond=None)[0]
    return bool(np.all(w >= -1e-9) and np.allclose(A @ w, b, rtol=0, atol=1e-9))


def ok_test_query_dependence(attend):
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    values = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    a = attend(np.array([2.0, 0.0]), keys, values)
    b = attend(np.array([0.0, 2.0]), keys, values)
    return not np.allclose(a, b)


def ok_dot_scores(query, keys):
    return keys @ query


OK_BY_HAND = [0.659, 0.242, 0.099]


def ok_softmax_temperature(scores, temperature):
    return _softmax(np.asarray(scores) / temperature)


#: exercise 5's comparison of the temperatures 0.5, 1 and 2, as 2.4 records it
OK_COMPARISON = {"largest_weight": [0.539, 0.361, 0.276], "same_order": True}


#: exercise 15's comparison of global attention and the window around position 1, as 2.7
#: records it
OK_WINDOW = {"global": 0.732, "local": 0.0}

#: exercise 8's comparison of the naive formula and the stable softmax on [1e4, 1e4 - 1, 0], as
#: 3.1 records it
OK_SOFTMAX_COMPARISON = {"naive": [np.nan, np.nan, 0.0], "stable": [0.731, 0.269, 0.0]}

#: exercise 12's comparison of the score shapes for two queries against five keys, as 3.3
#: records it
OK_SCORE_COMPARISON = {"dot": (2, 5), "bilinear": (2, 5)}


def ok_padding_mask(lengths, S):
    return np.arange(S) < np.asarray(lengths)[:, None]


def ok_masked_softmax(scores, mask):
    return _softmax(np.where(mask, scores, -np.inf))


def _mask_ok(w, mask) -> bool:
    masked = ~np.broadcast_to(mask, w.shape)
    return bool(np.all(w[masked] == 0) and np.allclose(w.sum(axis=-1), 1.0))


def ok_test_masked_softmax(masked_softmax):
    scores = np.array([[0.5, 2.0, -1.0, 3.0], [-4.0, -5.0, 1.0, 0.0]])
    mask = np.array([[True, False, True, True], [True, True, False, False]])
    return _mask_ok(np.asarray(masked_softmax(scores, mask), dtype=float), mask)


def ok_local_attention(query, keys, values, centre, half_width):
    S = keys.shape[0]
    inside = np.abs(np.arange(1, S + 1) - centre) <= half_width
    if not inside.any():
        return np.zeros(S), np.zeros(values.shape[1])
    w = _softmax(np.where(inside, keys @ query, -np.inf))
    return w, w @ values


def ok_stable_softmax(scores):
    s = np.asarray(scores)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def safe(policy):
    """A masked softmax following ``policy`` ("zeros", "nan", "raise") on all-masked rows."""
    def masked_softmax_safe(scores, mask):
        s = np.asarray(scores, dtype=np.float64)
        mask = np.broadcast_to(mask, s.shape)
        any_ok = mask.any(axis=-1, keepdims=True)
        if policy == "raise" and not any_ok.all():
            raise ValueError("a row has no eligible key")
        filled = np.where(mask, s, -np.inf)
        m = np.where(any_ok, filled.max(axis=-1, keepdims=True), 0.0)
        e = np.where(mask, np.exp(filled - m), 0.0)
        total = e.sum(axis=-1, keepdims=True)
        w = np.where(any_ok, e / np.where(any_ok, total, 1.0), 0.0)
        return np.where(any_ok, w, np.nan) if policy == "nan" else w
    return masked_softmax_safe


def policy_test(policy):
    """A student's test of an all-masked-row policy: one empty row beside an ordinary one."""
    def test_all_masked_policy(masked_softmax):
        scores = np.array([[1.0, -2.0, 0.5], [0.3, 0.1, -0.4]])
        mask = np.array([[True, False, True], [False, False, False]])
        try:
            w = np.asarray(masked_softmax(scores, mask), dtype=float)
        except ValueError:
            return policy == "raise" and _mask_ok(
                np.asarray(masked_softmax(scores[:1], mask[:1]), dtype=float), mask[:1])
        if policy == "raise" or not _mask_ok(w[:1], mask[:1]):
            return False
        return bool(np.isnan(w[1]).all()) if policy == "nan" else bool(np.all(w[1] == 0))
    return test_all_masked_policy


ok_masked_softmax_safe = safe("zeros")


def ok_dot_attention(Q, K, V):
    s = Q @ K.T
    w = _softmax(s)
    return s, w, w @ V


def ok_bilinear_attention(Q, K, V, W):
    s = Q @ W @ K.T
    w = _softmax(s)
    return s, w, w @ V


def ok_additive_attention(q, keys, values, W_q, W_k, v):
    e = np.tanh(keys @ W_k.T + W_q @ q) @ v
    w = _softmax(e)
    return w, w @ values


def ok_batched_attention(Q, K, V):
    w = _softmax(Q @ np.swapaxes(K, -1, -2))
    return w, w @ V


def ok_score_matrix_size(batch, target, source, heads):
    shape = (batch, heads, target, source)
    return shape, batch * heads * target * source


def ok_multiply_adds(T, S, D_k, D_v):
    return T * S * D_k + T * S * D_v


def ok_replace_and_measure(scores, values, control, readout):
    w = _softmax(scores)
    j = int(np.argmax(w))
    new = values.copy()
    new[j] = control
    before, after = w @ values, w @ new
    return j + 1, float(np.linalg.norm(after - before)), \
        float(0.5 * np.abs(readout(after) - readout(before)).sum())


def ok_attention_entropy(weights):
    w = np.asarray(weights, dtype=float)
    logs = np.log(np.where(w > 0, w, 1.0))
    return -(w * logs).sum(axis=-1)


CORRECT = {
    "1.1": ok_parts(), "1.2": ok_context_vector, "1.3": ok_in_convex_hull,
    "1.4": ok_test_query_dependence, "2.1": ok_dot_scores, "2.2": OK_BY_HAND,
    "2.4": (ok_softmax_temperature, OK_COMPARISON), "2.5": ok_padding_mask,
    "2.6": (ok_masked_softmax, ok_test_masked_softmax),
    "2.7": (ok_local_attention, OK_WINDOW), "3.1": (ok_stable_softmax, OK_SOFTMAX_COMPARISON),
    "3.2": ("zeros", ok_masked_softmax_safe, policy_test("zeros")),
    "3.3": (ok_dot_attention, ok_bilinear_attention, OK_SCORE_COMPARISON),
    "3.4": ok_additive_attention,
    "3.5": ok_batched_attention, "4.1": ok_score_matrix_size, "4.2": ok_multiply_adds,
    "4.3": ok_replace_and_measure, "4.6": ok_attention_entropy,
}


# ------------------------------------------------------------------ wrong answers
def _naive(x, axis=-1):
    e = np.exp(np.asarray(x))
    return e / e.sum(axis=axis, keepdims=True)


def parts_swapped():
    p = ok_parts()
    p["keys"], p["values"] = p["values"], p["keys"]
    return p


def parts_unnormalised():
    p = ok_parts()
    p["weights"] = np.exp(p["scores"])
    return p


def parts_context_from_keys():
    p = ok_parts()
    p["context"] = p["weights"] @ R.keys
    return p


def _stub(*args):
    raise NotImplementedError


def _bil(s, V):
    w = _softmax(s)
    return s, w, w @ V


def _bil_axis0(s, V):
    w = _softmax(s, axis=0)
    return s, w, w @ V


def _additive(e, values):
    w = _softmax(e)
    return w, w @ values


def _window(query, keys, values, centre, half_width, strict=False, first=1, scale=1.0):
    S = keys.shape[0]
    d = np.abs(np.arange(first, first + S) - centre)
    inside = d < half_width if strict else d <= half_width
    if not inside.any():
        return np.zeros(S), np.zeros(values.shape[1])
    w = _softmax(np.where(inside, scale * (keys @ query), -np.inf))
    return w, w @ values


def _window_after(query, keys, values, centre, half_width):
    S = keys.shape[0]
    inside = np.abs(np.arange(1, S + 1) - centre) <= half_width
    w = _softmax(keys @ query) * inside
    return w, w @ values


def _window_sliced(query, keys, values, centre, half_width):
    lo, hi = max(centre - 1 - half_width, 0), min(centre + half_width, keys.shape[0])
    w = _softmax(keys[lo:hi] @ query)
    return w, w @ values[lo:hi]


def _minus_1e9_in_dtype(scores, mask):
    filled = np.where(mask, scores, -1e9).astype(scores.dtype)
    e = np.exp(filled - filled.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _batched_axis(Q, K, V, axis):
    w = _softmax(Q @ np.swapaxes(K, -1, -2), axis=axis)
    return w, w @ V


def _batched_axis_T(Q, K, V):
    w = _softmax(Q @ K.T)
    return w, w @ V


def _replacer(*, copy=True, argmin=False, base=1, squared=False, tvd="half"):
    """replace_and_measure with one realistic slip."""
    def replace_and_measure(scores, values, control, readout):
        w = _softmax(scores)
        j = int(np.argmin(w) if argmin else np.argmax(w))
        new = values.copy() if copy else values
        before = w @ values
        new[j] = control
        after = w @ new
        change = float(np.linalg.norm(after - before))
        p, q = readout(before), readout(after)
        out = {"half": 0.5 * np.abs(p - q).sum(), "sum": np.abs(p - q).sum(),
               "euclid": np.linalg.norm(p - q), "context": change}[tvd]
        return j + base, change ** 2 if squared else change, float(out)
    return replace_and_measure


def _leave_one_out(scores, values, control, readout):
    """The other intervention: the top position masked, the other weights renormalised (the
    control never used)."""
    w = _softmax(scores)
    j = int(np.argmax(w))
    kept = w.copy()
    kept[j] = 0.0
    if kept.sum() > 0:
        kept = kept / kept.sum()
    before, after = w @ values, kept @ values
    return j + 1, float(np.linalg.norm(after - before)), \
        float(0.5 * np.abs(readout(after) - readout(before)).sum())


def _naive_masked(scores, mask):
    return _naive(np.where(mask, scores, -np.inf))


def _zeroed_scores(scores, mask):
    """Masked scores set to 0 (scores * mask), shifted by the row's maximum, renormalised."""
    s = scores * mask
    e = np.exp(s - s.max(axis=-1, keepdims=True)) * mask
    return e / e.sum(axis=-1, keepdims=True)


def _test_allclose(masked_softmax):
    """A test of masking that compares masked weights with allclose: 1e-13 passes as 0."""
    scores = np.array([[0.5, 2.0, -1.0, 3.0]])
    mask = np.array([[True, False, True, True]])
    w = np.asarray(masked_softmax(scores, mask), dtype=float)
    return bool(np.allclose(w[~mask], 0) and np.allclose(w.sum(-1), 1))


def _test_zeros_only(masked_softmax):
    """A test that checks the masked weights but not the sums."""
    scores = np.array([[0.5, 2.0, -1.0, 3.0]])
    mask = np.array([[True, False, True, True]])
    return bool(np.all(np.asarray(masked_softmax(scores, mask))[~mask] == 0))


def _test_uncaught(masked_softmax):
    """A test of the all-masked row that lets an implementation's exception escape."""
    w = masked_softmax(np.array([[1.0, 2.0], [0.0, 0.0]]),
                       np.array([[True, True], [False, False]]))
    return bool(np.all(np.asarray(w)[1] == 0))


def _scipy_like_entropy(weights):
    """Renormalises each row first, as scipy.stats.entropy does: 0/0 on an all-zero row."""
    w = np.asarray(weights, dtype=float)
    p = w / w.sum(axis=-1, keepdims=True)
    return -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=-1)


def _range_only(context, values):
    lo, hi = values.min(axis=0), values.max(axis=0)
    return bool(np.all((context >= lo - 1e-9) & (context <= hi + 1e-9)))


def _hull_no_residual(context, values):
    A = np.vstack([values.T, np.ones(len(values))])
    w = np.linalg.lstsq(A, np.append(context, 1.0), rcond=None)[0]
    return bool(np.all(w >= -1e-9))


def _hull_strict(context, values):
    A = np.vstack([values.T, np.ones(len(values))])
    b = np.append(context, 1.0)
    w = np.linalg.lstsq(A, b, rcond=None)[0]
    return bool(np.all(w > 0) and np.allclose(A @ w, b, atol=1e-9))


WRONG: dict[str, list[tuple[object, str, tuple[str, ...]]]] = {
    "1.1": [
        (parts_swapped(), "fail", ("parts['keys']", "holds the values")),
        (parts_unnormalised(), "fail", ("parts['weights']", "before dividing by their sum")),
        (parts_context_from_keys(), "fail", ("parts['context']", "mixes the keys")),
    ],
    "1.2": [
        (lambda weights, values: (weights[:, None] * values).mean(axis=0), "fail",
         ("mean of the weighted values",)),
        (lambda weights, values: weights[:, None] * values, "fail", ("did not add them up",)),
        (lambda weights, values: values @ weights, "error", ("raised ValueError",)),
        (lambda weights, values: (weights / weights.sum()) @ values, "fail",
         ("NaN", "all-zero weights")),
    ],
    "1.3": [
        (_range_only, "fail", ("returned True for a context outside the hull", "range",
                               "necessary, not sufficient", "outside the triangle")),
        (_hull_no_residual, "fail", ("off the line or plane", "give back the context")),
        (_hull_strict, "fail", ("on the hull's boundary", "vertex")),
        (lambda context, values: (context >= values.min(0)) & (context <= values.max(0)), "fail",
         ("array of shape", "all()")),
    ],
    "1.4": [
        (lambda attend: True, "fail", ("accepted an attention that ignores the query",
                                       "cannot fail")),
        (lambda attend: not np.allclose(attend(np.ones(2), np.eye(2), np.eye(2)),
                                        attend(np.ones(2), np.eye(2), np.eye(2))), "fail",
         ("rejected a correct dot-product attention",)),
        (lambda attend: not np.allclose(
            attend(np.array([1.0, 1.0]), np.eye(2), np.eye(2)),
            attend(np.array([2.0, 2.0]), np.eye(2), np.eye(2))), "fail",
         ("rejected a correct", "constant shift")),
    ],
    "2.1": [
        (lambda query, keys: keys @ query / math.sqrt(len(query)), "fail",
         ("divided by sqrt(D_k)", "unscaled", "the chapter's query and its first three keys")),
        (lambda query, keys: (keys * query).sum(axis=0), "fail", ("summed over the keys",)),
        (lambda query, keys: query @ keys, "fail", ("query @ keys", "raised ValueError")),
    ],
    "2.2": [
        ([7.389, 2.718, 1.105], "fail", ("exp(e_i) before dividing",)),
        ([0.645, 0.323, 0.032], "fail", ("divided the scores by their sum",)),
        ([0.6, 0.3, 0.2], "fail", ("sums to 1.1000",)),
    ],
    "2.4": [
        ((lambda scores, temperature: _softmax(np.asarray(scores) * temperature), OK_COMPARISON),
         "fail", ("softmax(scores * temperature)", "divides", "temperature 0.5")),
        ((lambda scores, temperature: _softmax(scores), OK_COMPARISON), "fail",
         ("do not change with the temperature",)),
        ((lambda scores, temperature: _softmax(np.asarray(scores) / temperature, axis=0),
          OK_COMPARISON), "fail", ("axis 0",)),
        ((ok_softmax_temperature, ...), "fail",
         ("temperature_comparison is still `...`", "passes all")),
        ((ok_softmax_temperature, {"largest_weight": ..., "same_order": ...}), "fail",
         ("largest_weight, same_order is still `...`",)),
        ((ok_softmax_temperature, {**OK_COMPARISON, "same_order": False}), "fail",
         ("same_order is False", "keeps their order")),
        ((ok_softmax_temperature, {**OK_COMPARISON, "largest_weight": [0.276, 0.361, 0.539]}),
         "fail", ("reverse order",)),
        ((ok_softmax_temperature, {**OK_COMPARISON, "largest_weight": [0.539, 0.4, 0.276]}),
         "fail", ("largest_weight[1] = 0.400 is not the largest weight at temperature 1",)),
        ((ok_softmax_temperature, {"largest": [0.539, 0.361, 0.276]}), "fail",
         ("keys 'largest_weight' (three numbers) and 'same_order'",)),
        (ok_softmax_temperature, "fail",
         ("as a tuple: check('2.4', (softmax_temperature, temperature_comparison)); got a "
          "function",)),
    ],
    "2.5": [
        (lambda lengths, S: np.arange(S) >= np.asarray(lengths)[:, None], "fail",
         ("inverted", "True = eligible")),
        (lambda lengths, S: np.arange(S) <= np.asarray(lengths)[:, None], "fail",
         ("one position too many is eligible", "positions 1..n"),),
        (lambda lengths, S: np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]],
                                     dtype=bool), "fail", ("shape (3, 5)", "one sequence")),
        (lambda lengths, S: np.arange(max(lengths)) < np.asarray(lengths)[:, None], "fail",
         ("needs S=6 columns",)),
        (lambda lengths, S: (np.arange(S) < np.asarray(lengths)[:, None]).astype(int), "fail",
         ("dtype int64", "booleans")),
    ],
    "2.6": [
        ((lambda scores, mask: _softmax(scores) * mask, ok_test_masked_softmax), "fail",
         ("masked after the softmax without renormalising",)),
        ((lambda scores, mask: _softmax(np.where(mask, scores, -100.0)), ok_test_masked_softmax),
         "fail", ("not exactly 0", "did not underflow to 0", "not far enough below",
                  "-np.inf, which always gives 0")),
        ((lambda scores, mask: _softmax(np.where(mask, -np.inf, scores)), ok_test_masked_softmax),
         "fail", ("sit on the masked keys", "True means eligible")),
        ((_zeroed_scores, ok_test_masked_softmax), "fail",
         ("far below zero", "scores * mask", "-inf", "float64 eligible scores around -1e4")),
        ((_naive_masked, ok_test_masked_softmax), "fail", ("far below zero", "no shift")),
        ((ok_masked_softmax, _test_allclose), "fail",
         ("your test accepted", "-30", "not allclose")),
        ((ok_masked_softmax, _test_zeros_only), "fail",
         ("your test accepted", "without renormalising", "sum to 1")),
        ((ok_masked_softmax, lambda masked_softmax: True), "fail",
         ("your test accepted", "ignores the mask")),
        ((ok_masked_softmax, lambda masked_softmax: policy_test("zeros")(masked_softmax)),
         "fail", ("your test rejected", "exercise 11")),
    ],
    "2.7": [
        (lambda query, keys, values, centre, half_width: _window(query, keys, values, centre,
                                                                 half_width, strict=True),
         "fail", ("inclusive",)),
        (lambda query, keys, values, centre, half_width: _window_after(query, keys, values, centre,
                                                                       half_width),
         "fail", ("after the softmax without renormalising",)),
        (_window_sliced, "fail", ("only the window's keys",)),
        (lambda query, keys, values, centre, half_width: _window(query, keys, values, centre,
                                                                 half_width, first=0),
         "fail", ("one position to the right", "numbered 1..S")),
        (lambda query, keys, values, centre, half_width: _window(
            query, keys, values, centre, half_width, scale=1 / math.sqrt(keys.shape[1])),
         "fail", ("sqrt(D_k)", "unscaled")),
        ((ok_local_attention, ...), "fail", ("window_comparison is still `...`", "passes all")),
        ((ok_local_attention, {"global": 0.732, "local": 0.22}), "fail",
         ("local = 0.220 is not position 5's weight in the window",)),
        ((ok_local_attention, {"global": 0.732}), "fail", ("keys 'global' and 'local'",)),
        ((ok_local_attention, {"global": "high", "local": 0.0}), "fail",
         ("global is a str", "one number")),
    ],
    "3.1": [
        (lambda scores: _naive(scores), "fail", ("NaN", "logits of +1e4", "overflows")),
        (lambda scores: _naive(np.asarray(scores) - np.max(scores)), "fail",
         ("NaN in row 2", "each row's own maximum")),
        (lambda scores: _softmax(scores, axis=0) if np.ndim(scores) > 1 else _softmax(scores),
         "fail", ("axis 0",)),
        (lambda scores: _softmax(scores, axis=None), "fail",
         ("whole array", "axis=None", "scipy.special.softmax")),
        ((ok_stable_softmax, ...), "fail", ("softmax_comparison is still `...`", "passes all")),
        ((ok_stable_softmax, {"naive": [0.731, 0.269, 0.0], "stable": [0.731, 0.269, 0.0]}),
         "fail", ("naive = [0.731, 0.269, 0.000] is the stable softmax's result",
                  "without subtracting the maximum")),
        ((ok_stable_softmax, {"naive": [np.nan, np.nan, np.nan],
                              "stable": [0.731, 0.269, 0.0]}),
         "fail", ("naive = [nan, nan, nan] is not what the naive formula", "NaN where")),
        ((ok_stable_softmax, {"naive": [np.nan, np.nan, 0.0], "stable": [np.nan, np.nan, 0.0]}),
         "fail", ("stable = [nan, nan, 0.000] holds NaN",)),
        ((ok_stable_softmax, {"naive": [np.nan, np.nan, 0.0], "stable": [0.5, 0.5, 0.0]}),
         "fail", ("stable = [0.500, 0.500, 0.000] is not your stable_softmax's weights",)),
        ((ok_stable_softmax, {"naive": [np.nan, 0.0], "stable": [0.731, 0.269, 0.0]}),
         "fail", ("naive has shape (2,)", "three weights")),
        ((ok_stable_softmax, {"stable": [0.731, 0.269, 0.0]}), "fail",
         ("keys 'naive' and 'stable'",)),
        ((ok_stable_softmax, {"naive": "overflows", "stable": [0.731, 0.269, 0.0]}), "fail",
         ("softmax_comparison: naive", "got text")),
    ],
    "3.2": [
        (("zeros", lambda scores, mask: _softmax(np.where(mask, scores, -np.inf)),
          policy_test("zeros")), "fail", ("NaN", "no eligible key", "-inf fill")),
        (("zeros", lambda scores, mask: _softmax(np.where(mask, scores, np.finfo(np.float64).min)),
          policy_test("zeros")), "fail", ("uniform", "policy is 'zeros'")),
        (("zeros", _minus_1e9_in_dtype, policy_test("zeros")), "fail",
         ("uniform", "float16", "65504")),
        (("zeros", lambda scores, mask: _softmax(scores) * mask, policy_test("zeros")), "fail",
         ("without renormalising",)),
        (("zeros", lambda scores, mask: np.where(np.broadcast_to(mask, np.shape(scores)).any(
            -1, keepdims=True), _zeroed_scores(scores, mask), 0.0), policy_test("zeros")),
         "fail", ("far below zero", "scores * mask")),
        ((..., ok_masked_softmax_safe, policy_test("zeros")), "fail",
         ("all_masked_policy is still `...`", "'zeros', 'nan' or 'raise'")),
        (("uniform", ok_masked_softmax_safe, policy_test("zeros")), "fail",
         ("all_masked_policy is 'uniform'",)),
        (("nan", ok_masked_softmax_safe, policy_test("nan")), "fail",
         ("your policy is 'nan'", "agree")),
        (("raise", ok_masked_softmax_safe, policy_test("raise")), "fail",
         ("your policy is 'raise'", "raise a ValueError")),
        (("zeros", ok_masked_softmax_safe, lambda masked_softmax: True), "fail",
         ("your test accepted", "NaN")),
        (("zeros", ok_masked_softmax_safe, policy_test("nan")), "fail",
         ("your test rejected", "all zeros")),
        (("raise", safe("raise"), _test_uncaught), "fail",
         ("your test accepted", "`test_all_masked_policy` raised ValueError")),
    ],
    "3.3": [
        ((ok_dot_attention, lambda Q, K, V, W: _bil(Q @ W.T @ K.T, V)), "fail",
         ("W transposed",)),
        ((lambda Q, K, V: _bil(Q @ K.T / np.sqrt(K.shape[1]), V), ok_bilinear_attention), "fail",
         ("sqrt(D_k)",)),
        ((lambda Q, K, V: _bil_axis0(Q @ K.T, V), ok_bilinear_attention), "fail",
         ("normalised over the queries",)),
        ((lambda Q, K, V: (K @ Q.T, _softmax(Q @ K.T), _softmax(Q @ K.T) @ V),
          ok_bilinear_attention), "fail", ("(S, T)",)),
        ((ok_dot_attention, _stub), "fail", ("bilinear_attention", "not written yet")),
        ((ok_dot_attention, ok_bilinear_attention, ...), "fail",
         ("score_comparison is still `...`", "dot_attention and bilinear_attention pass all")),
        ((ok_dot_attention, ok_bilinear_attention, {"dot": (5, 2), "bilinear": (2, 5)}), "fail",
         ("dot = (5, 2) is (S, T)", "one row per query")),
        ((ok_dot_attention, ok_bilinear_attention, {"dot": (2, 5), "bilinear": (2, 3)}), "fail",
         ("bilinear = (2, 3) is not the shape of your bilinear_attention's scores",)),
        ((ok_dot_attention, ok_bilinear_attention, {"dot": (2, 5), "bilinear": "(2, 5)"}),
         "fail", ("bilinear is a str", "tuple of whole numbers")),
        ((ok_dot_attention, ok_bilinear_attention, {"dot": (2, 5)}), "fail",
         ("keys 'dot' and 'bilinear'",)),
    ],
    "3.4": [
        (lambda q, keys, values, W_q, W_k, v: _additive(np.tanh(keys @ W_q.T + W_k @ q) @ v,
                                                         values),
         "fail", ("swapped", "every width 3")),
        (lambda q, keys, values, W_q, W_k, v: _additive((keys @ W_k.T + W_q @ q) @ v, values),
         "fail", ("leave out the tanh",)),
        (lambda q, keys, values, W_q, W_k, v: _additive(np.tanh((keys @ W_k.T + W_q @ q) @ v),
                                                         values),
         "fail", ("tanh after",)),
    ],
    "3.5": [
        (lambda Q, K, V: _batched_axis(Q, K, V, 1), "fail",
         ("your softmax runs over the target axis", "every axis a different size")),
        (lambda Q, K, V: (lambda w: (w, w @ V))(_softmax(Q @ np.swapaxes(K, -1, -2)
                                                         / np.sqrt(Q.shape[-1]))), "fail",
         ("sqrt(D_k)", "scaled_dot_product_attention", "unscaled")),
        (lambda Q, K, V: _batched_axis(Q, K, V, 0), "fail", ("batch axis",)),
        (lambda Q, K, V: _batched_axis_T(Q, K, V), "error", ("raised ValueError",)),
    ],
    "4.1": [
        (lambda batch, target, source, heads: ((batch, target, source), batch * target * source),
         "fail", ("leaves out the heads",)),
        (lambda batch, target, source, heads: ((heads, target, source), heads * target * source),
         "fail", ("leaves out the batch",)),
        (lambda batch, target, source, heads: ((batch, target, source, heads),
                                               batch * target * source * heads), "fail",
         ("wrong order",)),
    ],
    "4.2": [
        (lambda T, S, D_k, D_v: T * S * D_k, "fail", ("not the weighted sum",)),
        (lambda T, S, D_k, D_v: 2 * T * S * (D_k + D_v), "fail", ("FLOPs",)),
        (lambda T, S, D_k, D_v: T * S * D_k * D_v, "fail", ("multiplied D_k and D_v",)),
    ],
    "4.3": [
        (_replacer(copy=False), "fail", ("changed its input `values` in place",)),
        (_replacer(argmin=True), "fail", ("smallest weight",)),
        (_replacer(base=0), "fail", ("one too low", "numbered 1..S")),
        (_replacer(squared=True), "fail", ("squared distance",)),
        (_replacer(tvd="sum"), "fail", ("twice the total variation distance",)),
        (_replacer(tvd="euclid"), "fail", ("Euclidean distance of the two output",)),
        (_replacer(tvd="context"), "fail", ("equals the context's change",)),
        (_leave_one_out, "fail", ("left the top position out", "leave-one-out",
                                  "Replace its value by the control")),
    ],
    "4.6": [
        (lambda weights: -(np.asarray(weights) * np.log(weights)).sum(axis=-1), "fail",
         ("NaN", "0 * log(0)", "one-hot")),
        (lambda weights: -(np.asarray(weights) * np.log2(np.where(np.asarray(weights) > 0,
                                                                   weights, 1))).sum(-1),
         "fail", ("bits",)),
        (lambda weights: -(np.asarray(weights) * np.log(np.where(np.asarray(weights) > 0, weights,
                                                                 1))).sum(axis=0), "fail",
         ("shape",)),
        (_scipy_like_entropy, "fail", ("NaN only for the row whose weights are all 0",
                                       "scipy.stats.entropy", "row's total")),
    ],
}


WRONG["2.7"] = [((answer, OK_WINDOW) if callable(answer) else answer, status, why)
                for answer, status, why in WRONG["2.7"]]
WRONG["3.1"] = [((answer, OK_SOFTMAX_COMPARISON) if callable(answer) else answer, status, why)
                for answer, status, why in WRONG["3.1"]]
WRONG["3.3"] = [((*answer, OK_SCORE_COMPARISON) if len(answer) == 2 else answer, status, why)
                for answer, status, why in WRONG["3.3"]]
