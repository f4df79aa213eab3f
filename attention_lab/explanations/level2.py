"""Explanations of the predict cells of notebook 02 (mechanics); see the package docstring."""

same_ranking = """Yes: both put the keys in the order 2, 5, 3, 1, 4. Here W is close to the
identity (ones on the diagonal, 0.8 in the middle, small entries elsewhere), so q^T W k stays
close to q^T k, and the small differences do not swap any two keys. The random, untrained
additive scores rank them differently. A trained W or additive network learns its own notion of
a match: the score function is part of the model."""

shift_changes = """No. exp(e_i + 100) = exp(100) exp(e_i): the same factor exp(100) multiplies
the numerator and every term of the denominator, and cancels. Adding one constant to every
score changes nothing, which is why a softmax may subtract the largest score first: then no
exponential can overflow (the largest becomes exp(0) = 1)."""

source1_weight = """Down: 0.123 before, 0.076 after, although score 1 did not change. All
weights share one denominator, sum_j exp(e_j); raising score 2 makes that sum larger, so every
other weight shrinks while weight 2 grows, and they still sum to 1. The weights compete: they are
not independent probabilities (the chapter's misconception 3)."""

largest_at_half = """Dividing the scores by 0.5 doubles every gap between them, and the
exponential turns gaps into ratios: the largest weight grows from 0.361 to 0.539, the small ones
shrink, and the order stays the same. A temperature below 1 sharpens the distribution, above 1
it flattens it towards uniform; it never changes which key is ahead."""

row_sum_after = """0.684: the weights of positions 1-3 before masking, 0.123 + 0.361 + 0.2.
Zeroing positions 4 and 5 after the softmax throws their mass away instead of sharing it among
the eligible keys, so the row no longer sums to 1 and the context shrinks towards zero, by an
amount that depends on how much padding there is. Masking before the softmax (or renormalising)
gives the right weights. That is the chapter's misconception 6: "masking after the softmax is the
same as masking before it"."""

future_weight = """0.75: sequence 1 has no padding, so the padding mask lets position 1 see all
four positions equally, three of them in its future. A padding mask knows lengths, not time. The
causal mask alone breaks the other promise: with left padding, the first real token of sequence
2 (position 3) sees positions 1-3, and two of those three are padding. Each mask guards what the
other cannot, so a padded decoder batch needs both, combined by AND (the chapter's misconception
7: "padding masks and causal masks are interchangeable")."""

local_target = """Higher: 0.784 instead of 0.545. Fewer keys compete for the weight, and the
target is the strongest of those left, so it takes a larger share; the context even moves
closer to the target's value. With the target at position 8, outside the window, its weight is
0 and the context moves away from it. A window is not worse than global access when the task's
position lies inside it; it is blind outside (the chapter's misconception 11: "global attention
is always preferable")."""

local_p_sums_to_1 = """No: they sum to less than 1. The softmax inside the window sums to 1, and
every Gaussian factor is at most 1, reaching 1 only at the centre itself, so the product loses
weight wherever a position lies off the centre. Luong et al. apply the Gaussian after the
softmax, as here, so the context is a shrunk mixture of the values. Renormalising would make the
weights a distribution again; the paper does not."""
