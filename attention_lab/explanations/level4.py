"""Explanations of the predict cells of notebook 04 (research and systems); see the package
docstring."""

half_right_length = """The final-state model first reverses fewer than half of the sequences
at 13 symbols, while the attention model, trained by the same code on the same sequences for the
same 500 steps, still reverses almost all of them at 24. The final state is one vector of 128
numbers (the two directions of the encoder) that must carry every symbol and its position; the
longer the source, the more it must hold, and details are lost. Attention keeps every encoder
state and lets each step read the one it needs: the chapter's fixed-vector bottleneck, measured
on the lab's own task."""

sharper = """The dot model: nearly all of a step's weight sits on the true position, while the
additive model leaves much of it on the neighbours. Both reverse almost every sequence, so being
right does not need sharp attention: the right position must win the mixture by enough for the
readout to decode it."""

merged_accuracy = """About one half. Retrieval is perfect, but the value found at the true
position now means "a or b": the readout can only guess within the pair, and the decoder state
rarely settles the guess. With one value for all symbols it is left with the decoder state alone,
about one symbol in twelve. Attention decides where the decoder reads; it cannot add what the
values do not hold. Keys are the same: keys that cannot tell two positions apart leave every
query unable to prefer one."""

causal_exact = """Almost none. Step t must copy position S + 1 - t, which lies in the causal
window 1..t only from the middle of the sequence on; every earlier step reads the wrong part of
the source, and its mistakes are fed back to the next step. A causal mask protects a sequence from
its own future, so it belongs to self-attention over the target. The source is not the decoder's
future: it was read in full before decoding began."""

window_wrong = """Nine steps of ten. The window 1..3 is the same for every step, but reversal needs
position 10 at step 1, 9 at step 2 and so on: the first seven targets lie outside it, and those
steps can only output a, b or c. Two of the three steps inside the window go wrong too: the
model never saw its weights renormalised over three positions, and each wrong symbol is fed back
to the decoder. A window is an assumption about where the answer can be; here it is false (the
chapter's exercise 15). Local-p (notebook 02) predicts a centre per step instead."""

entropy_trend = """It falls: about 0.74 of uniform at S = 3 against about half at S = 12, while the
raw entropy in nats rises. Both are true; they answer different questions. Raw entropy grows with
S partly because there are more positions to spread over, and log S removes only that. Neither
number says the model is right (it is right on almost every sequence at every length), and these
are one model, one seed, lengths it was trained on."""

permuted_tvd = """About 1: shuffling the weights over the positions changes the output
distribution almost completely, on almost every step. In this model which position gets the
weight matters, the opposite of what Jain and Wallace found for several text classifiers. But
part of that is built in: a value here is a symbol's embedding, so moving weight to a position
holding another symbol retrieves another symbol (a step whose symbols repeat can keep its output,
which is what the few dots at TVD 0 are)."""

encoder_loo = """Fewer. The encoder model's values are bidirectional GRU states, and a state also
knows its neighbours' symbols: when its top position is left out, a neighbour can stand in. This
run is even right on some steps with less than a tenth of the weight on the true position, so an
attention map can point where the information did not come from. Retrained with another seed
(python -m attention_lab train --values encoder --seed 1), the model may align as sharply as the
others: redundant values allow it, they do not force it. A small effect of removing one position
does not prove that the model ignores it. Report what the values contain, and more than one
training run."""

largest_512 = """About 0.95. The variance of q . k is D_k, so at D_k = 512 the scores spread over
tens of units and the top one takes almost all the weight, whatever the query is looking for.
Divided by sqrt(D_k) the variance is 1 again and the largest weight stays near a quarter at every
width. Such sharp weights also starve the scores of gradient, as the next cell shows."""

float16_first = """Key b. Between 256 and 512 float16 can only hold multiples of 0.25, so adding
an eighth to 256 lands exactly halfway and rounds to the even 256, four times over: key a's 256.5
becomes 256, below key b's exact 256.25. The inputs were exact; only the accumulation lost the
order. The package computes float16 inputs in float32, as PyTorch's CPU kernels do, and an audit
records the precision of the accumulation, not only the dtype of the tensors."""

cache_ratio = """About 57 times. Projecting 512 encoder states of width 512 into the keys and values
of 8 heads costs S D_model (D_k + D_v) per head, 512 times one step's attention S (D_k + D_v).
Without a cache every one of the 64 steps pays it again; with one it is paid once: 64 x 513
against 512 + 64 units of one step's attention. The price is memory: the cached keys and values,
B H S (D_k + D_v) numbers, held for the whole decoding."""
