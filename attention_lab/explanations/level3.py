"""Explanations of the predict cells of notebook 03 (maths and code); see the package
docstring."""

scores_shape = """(2, 3, 5), that is (B, T, S). K.transpose(-2, -1) turns each batch item's keys
(S, D_k) into (D_k, S); the batched product keeps the batch axis, multiplies (T, D_k) by
(D_k, S) in every item and sums over D_k. One score per batch item, query and source."""

same_context_shape = """Yes: (2, 3, 6) whichever axis the softmax runs over. A softmax returns
a tensor of the shape it is given, so the weights stay (B, T, S) and weights @ V stays
(B, T, D_v). What changes is the meaning: over the queries, each source's weights sum to 1
across the three queries, so the queries compete for the sources, and the contexts are wrong
(by up to 2.142 here). Nothing crashes: test the sums, not the shapes (the chapter's
misconception 14: "matching output shape proves the correct softmax axis was used")."""

mib_8192 = """256 MiB: 8192 x 8192 = 67,108,864 scores of 4 bytes each, for one batch item and
one head. Doubling the length quadruples it, and the arithmetic with it. Attention does not
remove the quadratic cost of self-attention: global attention is that cost (the chapter's
misconception 12). Restricted patterns, such as local windows, score fewer pairs."""

minus_1e9_in_float16 = """-inf: float16's largest finite magnitude is 65504, and a number
beyond it rounds to infinity. float32 keeps -1e9; bfloat16 has float32's range but few digits,
so -1e9 becomes a nearby finite number. A fill of -1e9 written with float32 in mind is -inf in
float16: harmless next to an eligible key; what it does to other rows is the precision
explorer's first task."""

padding_weight = """0.2 each, on five positions of padding. Every score of the row is the same
fill, so after subtracting the maximum every exponent is 0, each exponential is 1, and the row
is uniform: 1/5. The kernel raises no error and returns no NaN; it silently attends to padding.
A finite fill avoids the NaN of -inf - (-inf), next to an eligible key it still gives masked keys
weight 0, but it does not make an all-masked row safe. The -1e9 fill is -inf in float16 and gives
NaN instead. That row needs a declared policy."""

wrong_pass = """2 of the 6. A softmax over the batch axis still gives non-negative weights, but
a query's weights no longer sum to 1 over the sources: its context is a scaled mixture, which
can fall inside every coordinate's range of the values although it is wrong. The check is
necessary, not sufficient: a context outside the range proves a bug, one inside proves nothing.
Test the row sums as well."""

hidden_shape = """(8, 5), that is (S, A): source @ W_h^T maps each of the 8 source states
(width 6) to the alignment width 5, and W_q q, one vector of width 5, is added to every row by
broadcasting. One alignment vector per source; @ v_a then gives one score per source, (8,)."""
