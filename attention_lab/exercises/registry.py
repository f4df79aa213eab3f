"""The registry of the chapter's 22 exercises, as 25 checks in four level notebooks.

Ids are ``"<level>.<position>"``: ``"2.3"`` is the third check of the level-2 notebook. A chapter
exercise that asks for code *and* for a written argument has two ids (one computational, one
written), so every id has exactly one kind:

``function``  the student writes a function; the check calls it on fixed edge cases and seeded
              random cases and compares with the package's reference implementation
``value``     the student writes down a value (a number list, a dict of arrays)
``test``      the student writes a test function (for 2.6 and 3.2 also the implementation it
              tests, and for 3.2 a declared policy); the check runs the test against correct and
              broken implementations and checks the implementation as a ``function``
``written``   a structured text answer; shown with a rubric after the attempt and graded
              ``needs_instructor`` (never passed automatically)

An answer may also *declare* a value beside its functions (3.2's policy, 2.4's recorded
comparison of the temperatures): ``declared`` names it, and its check judges it.

Positions in every task and hint are numbered 1..S (position j is array index j - 1), as in the
notebooks. This module holds only metadata (no numpy), so the command line and the grader can
list exercises cheaply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("function", "value", "test", "written")

#: notebook stem per level (the student notebooks live in ``notebooks/exercises/``, the instructor
#: solutions in ``notebooks/exercises/solutions/<stem>_solutions``)
NOTEBOOKS = {
    1: "01_intuition_exercises",
    2: "02_mechanics_exercises",
    3: "03_maths_and_code_exercises",
    4: "04_research_exercises",
}

LEVEL_TITLES = {1: "Intuition", 2: "Mechanics", 3: "Maths & code", 4: "Research & systems"}

#: an exercise notebook is one assignment of a course; its id (``02_mechanics``) is stored in the
#: notebook's metadata under this key: ``{"attention_lab": {"assignment": "02_mechanics"}}``
METADATA_KEY = "attention_lab"
ASSIGNMENT_IDS = {level: stem.removesuffix("_exercises") for level, stem in NOTEBOOKS.items()}


@dataclass(frozen=True)
class Exercise:
    """One check. ``answer`` is the name the notebook binds the student's answer to (a tuple of
    names when the answer is several functions); the grader looks the answer up by that name."""

    id: str
    chapter: int
    title: str
    kind: str
    answer: str | tuple[str, ...]
    task: str
    hints: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()  # written: (field name, what to write)
    rubric: tuple[str, ...] = ()  # written: what a full answer contains
    declared: tuple[str, ...] = ()  # answer parts that declare a value instead of a function
    points: int = 1

    @property
    def level(self) -> int:
        return int(self.id.split(".")[0])

    @property
    def auto(self) -> bool:
        """True when the grader can decide pass/fail by itself."""
        return self.kind != "written"

    @property
    def answer_names(self) -> tuple[str, ...]:
        return self.answer if isinstance(self.answer, tuple) else (self.answer,)

    @property
    def answer_label(self) -> str:
        return ", ".join(self.answer_names)

    @property
    def function_names(self) -> tuple[str, ...]:
        """The answer's functions (its declared values left out)."""
        return tuple(n for n in self.answer_names if n not in self.declared)


_E: list[Exercise] = []


def _add(*args, **kwargs) -> None:
    ex = Exercise(*args, **kwargs)
    assert ex.kind in KINDS, ex
    _E.append(ex)


# ---------------------------------------------------------------- level 1: intuition
_add("1.1", 1, "Name the parts of the running example", "value", "parts",
     "A dict with the six parts of the running example as arrays: 'query', 'keys', 'values', "
     "'scores' (plain dot product), 'weights' (softmax of the scores) and 'context'.",
     hints=("running_example() gives query, keys and values; the scores are keys @ query.",
            "The weights are a softmax of the scores: exponentiate, then divide by the sum.",
            "The context mixes the *values* (not the keys) with the weights: weights @ values."))
_add("1.2", 6, "Context vector from weights and values", "function", "context_vector",
     "context_vector(weights, values): weights (S,), values (S, D_v) -> context (D_v,), the "
     "weighted sum of the value rows.",
     hints=("The context has one entry per value coordinate: D_v entries, not S.",
            "Scale row i of values by weights[i], then add the rows up (a sum, not a mean).",
            "A matrix product does both steps at once; mind which side the weights go on."))
_add("1.3", 7, "Is the context inside the convex hull of the values?", "function",
     "in_convex_hull",
     "in_convex_hull(context, values): True when context is a convex combination of the S values "
     "(weights w_i >= 0 with sum 1 and sum_i w_i v_i = context, with a tolerance of 1e-9), else "
     "False. values (S, D_v) holds at most D_v + 1 values in general position (like the "
     "chapter's three values in 2-D), so the weights, if they exist, are unique.",
     hints=("A point of the hull is sum_i w_i v_i with every w_i >= 0 and sum_i w_i = 1: find the "
            "weights that reproduce the context, then look at their signs.",
            "Stack the values' coordinates and a row of ones: [V^T; 1] w = [c; 1]. "
            "np.linalg.lstsq solves it.",
            "Inside means every weight >= -1e-9 AND the weights really give back the context (a "
            "point off the values' line or plane has a least-squares solution too). Being "
            "inside every coordinate's range is not enough."))
_add("1.4", 18, "A test that catches query-independent retrieval", "test",
     "test_query_dependence",
     "test_query_dependence(attend): attend(query, keys, values) returns a context vector. Return "
     "True when two different queries over the same keys and values retrieve different contexts "
     "(a correct attention), False when they do not (an attention that ignores its query).",
     hints=("Build one small source (keys and values) and two queries, call attend twice, compare.",
            "Pick queries that the keys can tell apart: if both queries give the same scores up to "
            "a constant, even a correct attention returns the same context.",
            "Compare the two contexts with a tolerance (np.allclose) and return a real bool. A test "
            "that always returns True proves nothing."))

# ---------------------------------------------------------------- level 2: mechanics
_add("2.1", 2, "Dot-product scores", "function", "dot_scores",
     "dot_scores(query, keys): query (D_k,), keys (S, D_k) -> scores (S,), one plain (unscaled) "
     "dot product per key.",
     hints=("One score per key: the result has S entries.",
            "Score i is the sum over the D_k coordinates of query * keys[i].",
            "keys @ query does all S dot products at once; the chapter's score is not divided by "
            "sqrt(D_k)."))
_add("2.2", 3, "Softmax by hand", "value", "softmax_by_hand",
     "The softmax weights of the scores [2.0, 1.0, 0.1], computed by hand (a calculator is fine), "
     "as a list of three numbers rounded to three decimals. They must sum to 1 (up to rounding).",
     hints=("Exponentiate each score first: exp(2.0), exp(1.0), exp(0.1).",
            "Divide each exponential by the sum of all three.",
            "Check: the largest score gets the largest weight and the three add up to 1."))
_add("2.3", 4, "Why a constant shift leaves softmax unchanged", "written", "shift_invariance",
     "Show algebraically that softmax(e + c) = softmax(e) for any constant c, and say what "
     "stable implementations gain from it.",
     fields=(("derivation", "the algebra: write softmax(e + c)_i and simplify"),
             ("consequence", "what a numerically stable softmax does with this fact, and why")),
     rubric=("exp(e_i + c) = exp(c) exp(e_i): the common factor exp(c) appears in the numerator "
             "and in every term of the denominator, so it cancels",
             "the identity holds for every real c, positive or negative",
             "choosing c = -max_j e_j makes every exponent <= 0, so exp never overflows and the "
             "largest term is exactly 1 (the denominator is >= 1)",
             "softmax is shift-invariant but not scale-invariant: multiplying the scores (or "
             "changing the temperature) does change the weights"))
_add("2.4", 5, "Softmax with a temperature, and the comparison of 0.5, 1 and 2", "function",
     ("softmax_temperature", "temperature_comparison"),
     "softmax_temperature(scores, temperature): scores (..., S) -> weights (..., S), softmax of "
     "scores / temperature over the last axis. Then compare the chapter's temperatures 0.5, 1 "
     "and 2 with it on the chapter's dot scores and record what you found: "
     "temperature_comparison = {'largest_weight': [the largest weight at 0.5, at 1 and at 2], "
     "'same_order': True or False (are the positions in the same order of weight at all "
     "three?)}. Pass both: check('2.4', (softmax_temperature, temperature_comparison)).",
     hints=("The temperature divides the scores before the exponential.",
            "Normalise over the last axis (the keys): sum(axis=-1, keepdims=True).",
            "For the comparison: print the weights at each temperature, their largest entry and "
            "np.argsort(-weights) + 1, the positions from the largest weight down."),
     declared=("temperature_comparison",))
_add("2.5", 9, "Padding mask from lengths", "function", "padding_mask",
     "padding_mask(lengths, S): lengths (B,) integers -> bool mask (B, S) with True = eligible: "
     "sequence b has the real positions 1..lengths[b] (the columns 0..lengths[b] - 1). The "
     "chapter's batch has lengths 5, 3 and 1.",
     hints=("Compare the column numbers 0..S-1 with each length: np.arange(S) against lengths.",
            "Broadcasting: lengths[:, None] has shape (B, 1), np.arange(S) shape (S,).",
            "True means 'may be attended to' (the convention of PyTorch's scaled_dot_product_"
            "attention); the mask always has S columns, even when no length reaches S."))
_add("2.6", 10, "Test that masked keys get exactly zero weight", "test",
     ("masked_softmax", "test_masked_softmax"),
     "masked_softmax(scores, mask): scores (..., S) in float64 or float32, bool mask "
     "broadcastable to scores, True = eligible -> weights (..., S) in which masked keys get "
     "exactly 0 and each row's eligible weights sum to 1 (every row has an eligible key). A "
     "fill far below every score (-np.inf, or -1e9 here) gives exactly 0; -30 does not. "
     "test_masked_softmax(masked_softmax) -> "
     "bool: True when the implementation it is given does that, False otherwise; the check runs "
     "it on correct and broken implementations. Pass both: check('2.6', (masked_softmax, "
     "test_masked_softmax)).",
     hints=("Mask before the softmax: replace masked scores by -np.inf (np.where); exp(-inf) is "
            "exactly 0, so masked keys drop out of the sum.",
            "Your test: choose scores and a mask (several rows, some masked keys, negative scores "
            "too), call the implementation, and check two things: masked weights == 0 exactly "
            "(not allclose: 1e-13 is not 0) and every row's sum close to 1.",
            "Zeroing weights after the softmax leaves the eligible weights summing to less than 1; "
            "a finite fill such as -30 leaves masked weights tiny but not zero (exp(-30 - max) > "
            "0), while -1e9 is far enough below these scores to give exactly 0 (float16 and "
            "all-masked rows are exercise 11's). A good test rejects the first two."))
_add("2.7", 15, "Global versus a local window", "function",
     ("local_attention", "window_comparison"),
     "local_attention(query, keys, values, centre, half_width) -> (weights (S,), context (D_v,)): "
     "unscaled dot-product attention restricted to the positions j with |j - centre| <= "
     "half_width, where positions and centre are numbered 1..S (position j is row j - 1 of "
     "keys). If the window holds no position, return zero weights and a zero context. Then "
     "compare it with global attention for the query 3 * keys[4], which matches key 5 best, and "
     "the window around position 1 with half-width 1, and record what you found: "
     "window_comparison = {'global': the weight on position 5 with global attention, 'local': "
     "its weight in that window}. Pass both: check('2.7', (local_attention, window_comparison)).",
     hints=("Build a boolean window mask over all S positions, then do masked attention.",
            "Positions count from 1: compare np.arange(1, S + 1) with the centre. The window is "
            "inclusive: |j - centre| == half_width is inside. Slicing keys near the edges "
            "(negative starts) is a trap: a mask avoids it.",
            "Return a weight for every key (0 outside the window), not just the window's weights.",
            "For the comparison: a window wider than the source (centre 3, half-width 10) is global "
            "attention; print both weight vectors and read position 5's weight off each."),
     declared=("window_comparison",))

# ---------------------------------------------------------------- level 3: maths & code
_add("3.1", 8, "A stable softmax", "function", ("stable_softmax", "softmax_comparison"),
     "stable_softmax(scores): scores (..., S) -> weights (..., S) over the last axis, finite for "
     "scores of +-1e4, in float16 too, and with weight 0 for a -inf score. Then compare it with "
     "the naive formula exp(e) / sum(exp(e)) on the large scores [1e4, 1e4 - 1, 0] and record "
     "what you found: softmax_comparison = {'naive': the naive formula's three weights (NaN "
     "where it gives NaN), 'stable': your stable_softmax's three weights}. Pass both: "
     "check('3.1', (stable_softmax, softmax_comparison)).",
     hints=("Subtract the maximum before exponentiating: the result does not change (exercise 2.3).",
            "Subtract each row's own maximum: scores.max(axis=-1, keepdims=True).",
            "After the shift every exponent is <= 0, so nothing overflows and the largest term is 1.",
            "For the comparison: compute np.exp(large) / np.exp(large).sum() for the naive formula "
            "and stable_softmax(large), print both and copy what they print, NaN as np.nan."),
     declared=("softmax_comparison",))
_add("3.2", 11, "Define and test the all-masked row", "test",
     ("all_masked_policy", "masked_softmax_safe", "test_all_masked_policy"),
     "all_masked_policy: what a row without an eligible key returns, 'zeros' (what PyTorch's "
     "SDPA returns from PyTorch 2.5 on; NaN before), "
     "'nan' or 'raise' (a ValueError). masked_softmax_safe(scores, mask): like masked_softmax, "
     "following that policy on all-masked rows, in float64, float32 and float16. "
     "test_all_masked_policy(masked_softmax) -> bool: True when the implementation it is given "
     "follows your policy on an all-masked row and masks the other rows correctly. Pass all "
     "three: check('3.2', (all_masked_policy, masked_softmax_safe, test_all_masked_policy)).",
     hints=("With a -inf fill an all-masked row is exp(-inf)/sum = 0/0 = NaN; a finite fill such "
            "as -1e9 makes the masked keys equally likely (uniform weights), and -1e9 is not even "
            "representable in float16 (it becomes -inf). Neither is a policy.",
            "Detect rows with no eligible key (mask.any(axis=-1)) and give them what your policy "
            "says; keep the maximum of the eligible keys only for the other rows.",
            "Your test: a batch with an all-masked row and an ordinary row; check the all-masked "
            "row against your policy (for 'raise', catch the ValueError) and the ordinary row as "
            "in exercise 10."),
     declared=("all_masked_policy",))
_add("3.3", 12, "Dot-product and bilinear attention", "function",
     ("dot_attention", "bilinear_attention", "score_comparison"),
     "dot_attention(Q, K, V) and bilinear_attention(Q, K, V, W): Q (T, D_q), K (S, D_k), "
     "V (S, D_v), W (D_q, D_k); each returns (scores (T, S), weights (T, S), context (T, D_v)). "
     "Then compare their score shapes for two queries against the running example's five keys "
     "and record them: score_comparison = {'dot': the shape of dot_attention's scores, "
     "'bilinear': the shape of bilinear_attention's scores}. Pass all three: "
     "check('3.3', (dot_attention, bilinear_attention, score_comparison)).",
     hints=("Dot scores: Q @ K.T. Bilinear scores: q^T W k for every pair, i.e. Q @ W @ K.T.",
            "W has shape (D_q, D_k): the query width may differ from the key width.",
            "Both give scores of shape (T, S); softmax over the last axis (the keys).",
            "For the comparison: print scores.shape of each function's result and copy the "
            "tuples."),
     declared=("score_comparison",))
_add("3.4", 13, "Additive attention with different widths", "function", "additive_attention",
     "additive_attention(q, keys, values, W_q, W_k, v): q (D_q,), keys (S, D_k), values (S, D_v), "
     "W_q (A, D_q), W_k (A, D_k), v (A,) -> (weights (S,), context (D_v,)), with scores "
     "e_i = v . tanh(W_q q + W_k k_i).",
     hints=("The query goes through W_q, each key through W_k: both land in the alignment width A.",
            "keys @ W_k.T gives all projected keys (S, A); add the projected query (A,) to each row.",
            "tanh comes before the dot product with v; then softmax and the weighted sum of values."))
_add("3.5", 14, "Batched cross-attention on the right axis", "function", "batched_attention",
     "batched_attention(Q, K, V): Q (B, T, D_k), K (B, S, D_k), V (B, S, D_v) -> (weights "
     "(B, T, S), context (B, T, D_v)), unscaled dot-product scores, softmax over the source axis.",
     hints=("Scores: Q @ K.transpose(0, 2, 1) (or np.swapaxes(K, -1, -2)); K.T would reverse all "
            "three axes.",
            "Softmax over axis -1 (the S source positions), never over the targets or the batch.",
            "With T = 1 a softmax over the target axis gives weights that are all 1: a quick test."))
_add("3.6", 14, "What the wrong softmax axis does", "written", "wrong_axis_explanation",
     "Explain how normalising over the wrong axis changes a batched cross-attention computation, "
     "why the output shape does not reveal it, and which test catches it.",
     fields=(("what_changes", "what the weights mean when softmax runs over the target (or batch) "
              "axis instead of the source axis"),
             ("why_shapes_agree", "why the tensors keep their shapes"),
             ("test", "a check that detects the mistake")),
     rubric=("over the target axis each *source* position's weights sum to 1 across queries; the "
             "weights of one query no longer form a distribution over sources",
             "queries now compete with each other: one query's context depends on the other "
             "queries in the batch; over the batch axis, examples leak into each other",
             "softmax preserves the shape, so (B, T, S) weights and (B, T, D_v) contexts come out "
             "either way",
             "a test: each query's weights sum to 1 over the last axis; or T = 1 (a target-axis "
             "softmax gives all-ones weights); or changing another query/example must not change "
             "this query's context"))

# ---------------------------------------------------------------- level 4: research & systems
_add("4.1", 16, "Score-matrix shape and size", "function", "score_matrix_size",
     "score_matrix_size(batch, target, source, heads) -> (shape, elements): the shape "
     "(B, H, T, S) of the score tensor and its number of elements. The chapter asks for batch 8, "
     "target 64, source 512, 4 heads.",
     hints=("One score per (batch item, head, query, key).",
            "The key axis S comes last, the query axis T before it: (B, H, T, S).",
            "The element count is the product of all four sizes; leaving out heads or batch is the "
            "usual slip."))
_add("4.2", 17, "The arithmetic of global cross-attention", "function", "multiply_adds",
     "multiply_adds(T, S, D_k, D_v): the number of multiply-adds of one head of global "
     "cross-attention with T queries, S keys, key width D_k and value width D_v: the scores, "
     "then the weighted sums of the values (the softmax's work is left out). Derive it, and read "
     "its order off your count.",
     hints=("Each of the T x S scores is a dot product of length D_k.",
            "Each of the T contexts sums S value rows of width D_v.",
            "Count multiply-adds (one per product-and-add), not FLOPs (which count 2)."))
_add("4.3", 19, "Replace a high-weight value and measure the output", "function",
     "replace_and_measure",
     "replace_and_measure(scores, values, control, readout) -> (position, context_change, "
     "output_change): find the position (1..S) with the largest softmax weight of the scores, "
     "replace its *value* by the control vector, and return that position, the Euclidean norm of "
     "the change of the context, and the total variation distance 1/2 sum |p - q| between the "
     "output distributions readout(context) before and after. Leave the caller's arrays "
     "unchanged.",
     hints=("The weights are a softmax of the scores; the position is their argmax + 1.",
            "Copy values before replacing a row, so the caller's array (and the baseline) stay "
            "intact. Only the value changes: the weights stay the same.",
            "readout(context) returns the output probabilities; pass it the context before and "
            "the context after, then take half the sum of the absolute differences."))
_add("4.4", 19, "What the intervention does and does not establish", "written",
     "intervention_claims",
     "State what the replacement experiment of 4.3 establishes, and what it does not.",
     fields=(("establishes", "what the measured change supports"),
             ("does_not_establish", "what it cannot show, and why"),
             ("better_design", "how you would strengthen the evidence")),
     rubric=("it measures the effect of this one value on this context and this output for "
             "this input, control and model: a causal statement about one intervention",
             "the result depends on the control value chosen; a different control can give a "
             "different change",
             "it does not show that the weight explains the model's behaviour in general: other "
             "heads, residual paths, later layers or redundant values can compensate, and a small "
             "change does not prove the position is irrelevant",
             "a large weight is not the same as a large effect (value magnitudes matter), and one "
             "input is not a population",
             "stronger: several controls, many inputs, effects on the final output, comparison with "
             "other positions and with weight interventions; report what was held fixed"))
_add("4.5", 20, "An audit for a masked cross-attention clinical classifier", "written",
     "clinical_audit",
     "Design an audit for a masked cross-attention module in a clinical or policy-text classifier.",
     fields=(("interfaces", "queries, keys, values: sources, shapes, projections"),
             ("computation", "score function, scale/temperature, softmax axis, dropout"),
             ("eligibility", "padding, truncation and cross-source masks; all-masked rows"),
             ("numerics", "dtype, fill value, non-finite values, score ranges"),
             ("monitoring", "entropy, masked mass, latency, memory in deployment"),
             ("explanations", "what evidence any explanation claim needs"),
             ("domain", "what is specific to clinical or policy text")),
     rubric=("records query/key/value sources, shapes, projections and parameter sharing",
             "records score function, scale or temperature, normalisation axis, dropout placement",
             "tests eligibility: padding, truncation of long documents, which sources a query may "
             "see (e.g. no other patient's notes), mask convention and broadcast shape",
             "tests numerics: mask dtype, fill value in the deployed dtype, all-masked-row "
             "policy, NaN/inf checks, score ranges",
             "monitors weight entropy, masked mass (must be 0), output norms, latency, peak memory",
             "any claim that highlighted text explains a decision is backed by interventions (and "
             "reports what was held fixed), never by weights alone",
             "domain: subgroup performance, documentation for clinicians or reviewers, privacy "
             "of the text, and who acts on the explanations"))
_add("4.6", 21, "Attention entropy", "function", "attention_entropy",
     "attention_entropy(weights): weights (..., S) -> entropy (...) in nats over the last axis, "
     "-sum w log w with 0 log 0 = 0 (masked keys and all-zero rows contribute nothing).",
     hints=("Use the natural logarithm (nats).",
            "0 * log(0) is NaN in numpy: compute the log only where w > 0 (np.where), or use "
            "np.log(np.where(w > 0, w, 1)).",
            "Sum over the last axis; uniform weights over n keys give log(n)."))
_add("4.7", 21, "Interpreting entropy across source lengths", "written",
     "entropy_interpretation",
     "Compare attention-weight entropy across short and long sources (the notebook's cell: 200 "
     "random sources of S = 5 and of S = 50 keys, one query each, entries of queries and keys "
     "independent standard normal in D_k = 3 dimensions, unscaled dot-product scores) and "
     "interpret the comparison cautiously.",
     fields=(("comparison", "what you computed and what you saw"),
             ("caution", "why raw entropies of different lengths are not directly comparable, and "
              "what they do not tell you")),
     rubric=("the maximum entropy is log(n) for n eligible keys, so longer sources allow (and "
             "uniform-ish weights give) larger entropies: compare against log(n) or normalise",
             "count only eligible keys: padding changes n",
             "entropy describes concentration of one distribution, not correctness, importance or "
             "use of the retrieved information",
             "differences may come from the inputs, training or temperature, not from length "
             "alone; one model and a few inputs are not a general finding"))
_add("4.8", 22, "What reproducing an attention map requires", "written",
     "reproduction_spec",
     "Specify the data required to reproduce one attention map from a deployed model.",
     fields=(("model", "which model exactly (weights, code, versions)"),
             ("input", "the exact input and its preprocessing"),
             ("which_map", "which weights: layer, head, query position, pre/post processing"),
             ("runtime", "numerical and runtime settings")),
     rubric=("model identity: checkpoint hash, architecture code version, tokenizer/vocabulary and "
             "library versions",
             "the exact input text or tensors, tokenisation, positions, padding, truncation and any "
             "cached state (keys/values of earlier steps)",
             "layer, head, query position; post- or pre-softmax; masks (padding, causal, window) "
             "and their conventions; scale/temperature; how heads or layers were averaged for "
             "display",
             "eval mode (dropout off), dtype, device and kernel (fused kernels may not materialise "
             "the weights), seeds, batch composition if it affects padding",
             "the stored map itself (values, not just the picture) to compare against"))

EXERCISES: dict[str, Exercise] = {ex.id: ex for ex in _E}
IDS: tuple[str, ...] = tuple(EXERCISES)


def _meant(key: str) -> str:
    """What a mistyped id probably means: an id written in it ("ex 2.1", "2,1"), or the checks of
    the chapter exercise it numbers ("10", as the notebooks' headings count)."""
    written = [i.replace(",", ".") for i in re.findall(r"(?<!\d)\d[.,]\d(?!\d)", key)]
    if written and written[0] in EXERCISES:
        return f"did you mean {written[0]!r}? "
    ids = [ex.id for ex in _E if key.isdigit() and ex.chapter == int(key)]
    return f"chapter exercise {key} is checked as {' and '.join(map(repr, ids))}; " if ids else ""


def get(exercise_id) -> Exercise:
    """The exercise ``exercise_id`` ("2.3"); ``KeyError`` with the known ids otherwise."""
    key = str(exercise_id).strip()
    if key not in EXERCISES:
        raise KeyError(f"no exercise {exercise_id!r}; {_meant(key)}the ids are {', '.join(IDS)}")
    return EXERCISES[key]


def checked_marker(notebook) -> "Path":
    """The file beside ``notebook`` in which ``check`` notes when it last ran in JupyterLab
    (``submit`` compares it with the time the notebook was saved)."""
    from pathlib import Path

    notebook = Path(notebook)
    return notebook.with_name(f".{notebook.name}.checked")


def by_level(level: int) -> list[Exercise]:
    return [ex for ex in EXERCISES.values() if ex.level == level]
