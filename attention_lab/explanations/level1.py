"""Explanations of the predict cells of notebook 01 (intuition); see the package docstring."""

best_source = """Key 2, (0.9, -0.2, 0.4), has the sign of the query (0.8, -0.3, 0.5) in every
coordinate, and large entries where the query has them: its dot product, 0.98, is the largest.
Keys 1 and 4 point partly against the query and score below zero."""

best_changes = """No. Doubling the query doubles every score, q . k = |q| p: the order of the keys is
set by the query's direction alone, so source 2 stays best. What changes is the gap between the
scores, so the weights grow sharper: a longer query acts as a lower temperature. The geometry
explorer below lets you turn and stretch a query and watch both."""

weights_change = """The weights come from the scores, and the scores compare the query with the
keys only: the values never enter them. Replacing the values changes what is returned (the
context), not how the sources are weighted. So keys and values may be different vectors, and the
early encoder-decoders that used one state for both were a special case (the chapter's
misconception 2: "keys and values must be identical")."""

later_pair = """The later query (-1, -0.8, -0.3) scores keys 4 and 5 at 0.29 and 0.30 and the
first three keys below -0.5. Two nearly equal scores give two nearly equal weights: 0.322 and
0.325. A near tie is the normal case, not an exception: attention does not have to pick a
winner."""

hard_contexts = """Hard retrieval returns one of the five values, so along the way it can only
jump from one value to another: value 2 while key 2 scores best, value 5 once key 5 does.
Soft attention returns a mixture that moves a little with every step of the query. The chapter's
misconception 1, "attention chooses exactly one source item", describes hard retrieval, not
attention."""

hard_gradient_zero = """Hard retrieval's context is a value, and it stays the same value until
the best key changes; then it jumps. A small move of the query changes nothing, so every entry
of dc/dq is 0 (almost everywhere), and gradient descent gets no signal about which way to move
the query. Soft attention's context moves with every score, so its Jacobian is not zero: that is
what makes attention trainable."""

removed_source = """Source 2 carries the largest weight, yet the context does not move at all
when it is removed: its value is exactly the mix the other four already supply, so without it
the other four give the same context. Removing source 3 moves it most (0.126). A weight records
how one computation routed its retrieval; whether the output depends on a source takes an
intervention like this one. That is the chapter's misconception 9: "attention weights are
causal explanations"."""

context_changes = """Shuffling the sources shuffles their scores and weights with them, and a
weighted sum does not care in which order it adds its terms: the context is exactly the same.
Attention treats its sources as a set (the chapter's misconception 10: "attention supplies
order"). Order must come from the representations themselves: a recurrent encoder, or
positional information (Chapter 21)."""

third_coordinate = """With half of the weight on source 4, value 4 supplies half of the
context: 0.5 x 0.8 = 0.4 of the third coordinate. The other half mixes the other values, whose
third coordinates lie between 0.1 and 1: so the third coordinate lies between 0.45 and 0.9,
whichever query gives source 4 half of the weight. For the query here it is 0.557."""

same_weight = """Yes. W_k keeps only the first two coordinates, where states 1 and 3 are equal, so
their keys are equal and so are their scores and weights: matching happens in the key space,
which cannot see the third coordinate. Their values differ, because W_v reads it: the content
retrieved comes from another space than the matching. Learned projections let a model decide
separately what a source is found by and what it delivers."""
