# ---
# jupyter:
#   attention_lab:
#     assignment: 04_research
# ---

# %% [markdown]
# # Exercises, level 4: research and systems
#
# Six of the chapter's exercises on cost, interventions, audits and reproducibility (chapter
# exercises 16, 17, 19, 20, 21 and 22). Four checks are computational; four answers are
# written and recorded for your instructor, who grades them with the rubric the check shows
# once each field of your answer holds at least 12 words.
#
# Replace each `raise NotImplementedError` (or empty string) with your answer, run the cell,
# then the check; `hint("4.1")` gives one more hint per run. To hand in:
# save it (Ctrl+S), then in a terminal, in `notebooks/exercises/`, run
# `python -m attention_lab submit 04_research_exercises.ipynb` with the lab's Python (the
# README's command: in the student bundle `../../.venv/bin/python`).
# <!-- BEGIN SOLUTION -->
#
# **Instructor solutions.** Running this notebook shows every computational check passing and
# model written answers. The student notebook `../04_research_exercises.py` is generated from
# this file (`python -m attention_lab.exercises.authoring build`).
# <!-- END SOLUTION -->

# %%
import numpy as np

from attention_lab.examples import running_example
from attention_lab.exercises import check, hint, status

ex = running_example()
np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Exercise 16 (check 4.1): the size of the score tensor
#
# Write `score_matrix_size(batch, target, source, heads)` returning `(shape, elements)`: the
# shape `(B, H, T, S)` of the attention scores of one layer and their number. The chapter's
# case is batch 8, target length 64, source length 512 and 4 heads.

# %%
def score_matrix_size(batch, target, source, heads):
    """(shape (B, H, T, S), number of elements) of one layer's score tensor."""
    # BEGIN SOLUTION
    shape = (batch, heads, target, source)
    return shape, batch * heads * target * source
    # END SOLUTION


# %%
check("4.1", score_matrix_size)

# %% [markdown]
# ## Exercise 17 (check 4.2): the arithmetic of global cross-attention
#
# With `T` queries, `S` keys, key width `D_k` and value width `D_v`, count the multiply-adds of
# one head: all the scores, then all the weighted sums of the values (leave out the softmax,
# which is of lower order). Derive the count, write it as `multiply_adds(T, S, D_k, D_v)`, and
# read its order off your formula: how does it grow with `T`, with `S` and with the widths?

# %%
def multiply_adds(T, S, D_k, D_v):
    """Multiply-adds of one head of global cross-attention: scores and weighted values."""
    # BEGIN SOLUTION
    scores = T * S * D_k  # T x S dot products of length D_k
    mixing = T * S * D_v  # T contexts, each a sum of S value rows of width D_v
    return scores + mixing
    # END SOLUTION


# %%
check("4.2", multiply_adds)

# %% [markdown]
# ## Exercise 19 (checks 4.3 and 4.4): replace a high-weight value and measure the output
#
# Write `replace_and_measure(scores, values, control, readout)`: find the position (1..S) with
# the largest softmax weight of `scores`, replace its **value** (only the value: the weights stay
# as they are) by the `control` vector, and return `(position, context_change, output_change)`:
# the position, the Euclidean norm of the change of the context, and the change of the *output*,
# the total variation distance `1/2 sum |p - q|` between the output distributions
# `readout(context)` before and after. `readout` maps a context `(D_v,)` to the model's output
# probabilities. Do not modify the arrays you are given.

# %%
def replace_and_measure(scores, values, control, readout):
    """Intervene on the value at the highest weight: (position 1..S, context change, output
    change as a total variation distance)."""
    # BEGIN SOLUTION
    w = np.exp(scores - scores.max())
    w = w / w.sum()
    j = int(np.argmax(w))                  # the array index; the position is j + 1
    replaced = values.copy()
    replaced[j] = control
    before, after = w @ values, w @ replaced
    output_change = 0.5 * np.abs(readout(after) - readout(before)).sum()
    return j + 1, float(np.linalg.norm(after - before)), float(output_change)
    # END SOLUTION


# %%
check("4.3", replace_and_measure)

# %% [markdown]
# Now on the trained model of notebook 04, which reverses strings of the symbols `a`..`l`.
# `step_of(model, source, t)` gives output step `t` of reversing `source` (the correct earlier
# symbols fed back): its attention scores over the source positions, the values, and the
# model's readout with the decoder state of that step held fixed. The control value is the mean
# value over many held-out sources. Two models: one whose values are the symbols' embeddings,
# and one whose values are its encoder's contextual states.

# %%
from attention_lab import toy
from attention_lab.toy.experiments import control_value, step_of

for values in ("embedding", "encoder"):
    model = toy.load(values=values)
    step = step_of(model, "abcdefgh", 1)  # step 1 should copy position 8, 'h'
    try:
        position, context_change, output_change = replace_and_measure(
            step.scores, step.values, control_value(model), step.readout)
    except NotImplementedError:
        print("write replace_and_measure first")
        break
    print(f"values = {values:9}: position {position} replaced, the context moves by "
          f"{context_change:.2f}, the output by a total variation distance of {output_change:.2f}")

# %% [markdown]
# Now say what this experiment does and does not establish (written).

# %%
# BEGIN SOLUTION
#> intervention_claims = {
#>     "establishes": "",         # what the measured change supports
#>     "does_not_establish": "",  # what it cannot show, and why
#>     "better_design": "",       # how you would strengthen the evidence
#> }
intervention_claims = {
    "establishes": (
        "For this input, this model and this control vector, replacing the value at the "
        "highest-weight position moves the context by the measured amount: a causal effect of "
        "that one value on that one context, under that one intervention."),
    "does_not_establish": (
        "It does not show that the weight explains the model's output in general. The size "
        "depends on the control chosen; value magnitudes, not weights alone, set the effect; "
        "later layers, residual paths or other heads can compensate, so a change in the "
        "context need not change the prediction, and a small change does not prove the "
        "position is irrelevant (redundant values). One input is not a population."),
    "better_design": (
        "Measure the effect on the final output, over many inputs and several controls "
        "(mean value, zero, a value from another position), compare with interventions on "
        "other positions and on the weights themselves, and report what was held fixed."),
}
# END SOLUTION

# %%
check("4.4", intervention_claims)

# %% [markdown]
# ## Exercise 20 (check 4.5, written): an audit for a clinical or policy-text classifier
#
# A classifier reads clinical notes (or policy documents) with a masked cross-attention module.
# Design its audit: one short paragraph per field.

# %%
# BEGIN SOLUTION
#> clinical_audit = {
#>     "interfaces": "",    # queries, keys, values: sources, shapes, projections
#>     "computation": "",   # score function, scale or temperature, softmax axis, dropout
#>     "eligibility": "",   # padding, truncation and cross-source masks; all-masked rows
#>     "numerics": "",      # dtype, fill value, non-finite values, score ranges
#>     "monitoring": "",    # entropy, masked mass, latency, memory in deployment
#>     "explanations": "",  # what evidence an explanation claim needs
#>     "domain": "",        # what is specific to clinical or policy text
#> }
clinical_audit = {
    "interfaces": (
        "Record which states give queries (label or decoder states) and which give keys and "
        "values (the note's token states), their shapes, the projection matrices and whether "
        "they are shared."),
    "computation": (
        "Record the score function, its scale or temperature, that softmax runs over the key "
        "axis, and where dropout sits (off at inference). Unit-test each against a reference."),
    "eligibility": (
        "Test padding masks from the true lengths, what truncation of long notes removes, that "
        "a query can never see another patient's or another document's tokens, the mask "
        "convention (True = eligible) and its broadcast shape, and the declared policy for a "
        "row with no eligible key."),
    "numerics": (
        "Check the mask fill in the deployed dtype (float16 cannot hold -1e9), that no NaN or "
        "inf appears, and the range of scores on real inputs."),
    "monitoring": (
        "Log weight entropy, masked mass (must be exactly 0), output norms, latency, peak memory "
        "and valid-token throughput; alert on drift."),
    "explanations": (
        "Highlighted tokens are not evidence by themselves: any claim that a passage drove a "
        "decision needs interventions (remove or replace it, measure the output) with the "
        "controls and fixed components reported."),
    "domain": (
        "Evaluate subgroups (age, sex, site, language), protect the privacy of the text in logs "
        "and in displayed attention maps, document limits for the clinicians or reviewers who "
        "see the explanations, and keep a human responsible for decisions."),
}
# END SOLUTION

# %%
check("4.5", clinical_audit)

# %% [markdown]
# ## Exercise 21 (checks 4.6 and 4.7): entropy across short and long sources
#
# Write `attention_entropy(weights)`: the entropy `-sum w log w` in nats over the last axis of
# `(..., S)` weights, counting `0 log 0` as 0 (masked keys, all-zero rows). When it passes, the
# check prints the entropy of uniform weights over 5 and over 50 keys.

# %%
def attention_entropy(weights):
    """Entropy in nats over the last axis, with 0 log 0 = 0."""
    # BEGIN SOLUTION
    w = np.asarray(weights, dtype=float)
    logs = np.log(np.where(w > 0, w, 1.0))
    return -(w * logs).sum(axis=-1)
    # END SOLUTION


# %%
check("4.6", attention_entropy)

# %% [markdown]
# Now compare entropies for a short and a long source. The cell below draws 200 random sources
# of `S = 5` keys and 200 of `S = 50` keys, with one query each; every entry of the queries and
# keys is an independent standard normal number, in `D_k = 3` dimensions (the running example's
# width), and the weights are the softmax of the unscaled dot-product scores. It prints the mean
# entropy of your `attention_entropy`, the largest possible entropy `log S`, and their ratio.
# Run it, then interpret the comparison cautiously (written).

# %%
rng = np.random.default_rng(21)
D_k, n_sources = 3, 200
entropies = {}
for S in (5, 50):
    keys = rng.normal(size=(n_sources, S, D_k))
    queries = rng.normal(size=(n_sources, D_k))
    scores = np.einsum("bsd,bd->bs", keys, queries)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    try:
        entropies[S] = float(np.mean(attention_entropy(weights)))
    except NotImplementedError:
        print("write attention_entropy first")
        break
    print(f"S = {S:2d}: mean entropy {entropies[S]:.2f} nats, log S = {np.log(S):.2f}, "
          f"ratio {entropies[S] / np.log(S):.2f}")

# %%
# BEGIN SOLUTION
#> entropy_interpretation = {
#>     "comparison": "",  # what you computed and what you saw
#>     "caution": "",     # why raw entropies of different lengths are not directly comparable
#> }
H5, H50 = entropies[5], entropies[50]
entropy_interpretation = {
    "comparison": (
        f"Softmax weights of random queries over 5 random keys had a mean entropy of {H5:.2f} "
        f"nats (the maximum is log 5 = {np.log(5):.2f}); over 50 keys {H50:.2f} nats (maximum "
        f"log 50 = {np.log(50):.2f}). The longer source gave the larger entropy, "
        f"{H50 / np.log(50):.2f} of its maximum against {H5 / np.log(5):.2f} for the short one."),
    "caution": (
        "The maximum entropy grows as log n with the number of eligible keys, so a larger "
        "entropy for a longer source is expected and does not by itself mean more diffuse "
        "attention; divide by log n (counting only eligible keys, not padding) before "
        "comparing. These numbers come from random vectors with a fixed scale (D_k = 3, "
        "unscaled scores): another scale or temperature changes them. Entropy measures the "
        "concentration of one distribution, not whether the right source was used. Random "
        "keys are not a trained model: one setting does not make a general finding."),
}
# END SOLUTION

# %%
check("4.7", entropy_interpretation)

# %% [markdown]
# ## Exercise 22 (check 4.8, written): reproducing one attention map
#
# Someone shows you an attention map from a deployed model. Specify everything you would need
# to recompute exactly that map.

# %%
# BEGIN SOLUTION
#> reproduction_spec = {
#>     "model": "",      # which model exactly: weights, code, versions
#>     "input": "",      # the exact input and its preprocessing
#>     "which_map": "",  # layer, head, query position, processing for display
#>     "runtime": "",    # numerical and runtime settings
#> }
reproduction_spec = {
    "model": (
        "The checkpoint with a hash, the architecture code at a fixed version, the tokenizer and "
        "vocabulary, and the versions of the libraries that run it."),
    "input": (
        "The exact input text or tensors, the tokenisation, positions, padding and truncation, "
        "and any cached state such as keys and values of earlier decoding steps."),
    "which_map": (
        "Layer, head and query position; whether the weights are after softmax; the masks and "
        "their conventions; the scale or temperature; and how heads or layers were averaged or "
        "renormalised for display. Ideally the stored numbers, not only the picture."),
    "runtime": (
        "Evaluation mode with dropout off, dtype, device and attention kernel (fused kernels may "
        "never materialise the weights), random seeds, and the batch composition when it "
        "changes padding."),
}
# END SOLUTION

# %%
check("4.8", reproduction_spec)

# %% [markdown]
# ## Where you stand

# %%
status()
