"""Streaming (online-softmax) attention equals materialised attention and SDPA, never forms T x S."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_lab.streaming import streaming_attention
from attention_lab.tensor import attention, eligibility


def _inputs(seed, batch, T, S, dk, dv, dtype=torch.float32, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(*batch, T, dk, generator=g, dtype=dtype) * spread
    K = torch.randn(*batch, S, dk, generator=g, dtype=dtype)
    V = torch.randn(*batch, S, dv, generator=g, dtype=dtype)
    return Q, K, V


@st.composite
def cases(draw):
    batch = draw(st.sampled_from([(), (2,), (2, 3)]))
    T = draw(st.integers(1, 6))
    S = draw(st.integers(1, 20))
    dk, dv = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**31 - 1))
    kwargs = {}
    kind = draw(st.sampled_from(["none", "mask", "lengths", "causal", "mask+causal",
                                 "lengths+causal"]))
    g = torch.Generator().manual_seed(seed + 1)
    if "mask" in kind:
        shape = draw(st.sampled_from([batch + (T, S), (T, S), (S,), batch + (1, S)]))
        density = draw(st.sampled_from([0.1, 0.5, 0.9]))
        kwargs["mask"] = torch.rand(shape, generator=g) < density
    if "lengths" in kind:
        if not batch:
            batch = (2,)
        kwargs["lengths"] = torch.randint(0, S + 1, batch, generator=g)
    if "causal" in kind:
        kwargs["is_causal"] = True
        kwargs["causal_align"] = draw(st.sampled_from(["upper_left", "lower_right"]))
    kwargs["temperature"] = draw(st.sampled_from([0.5, 1.0, 2.0]))
    kwargs["scale"] = draw(st.sampled_from([1.0, "sqrt_dk"]))
    chunk = draw(st.integers(1, S + 2))
    return (seed, batch, T, S, dk, dv), kwargs, chunk


@settings(max_examples=120)
@given(cases())
def test_equals_materialised_and_sdpa_float32(case):
    dims, kwargs, chunk = case
    Q, K, V = _inputs(*dims)
    out = streaming_attention(Q, K, V, chunk_size=chunk, **kwargs)
    ref = attention(Q, K, V, **kwargs).context
    assert out.shape == ref.shape
    assert torch.allclose(out, ref, atol=1e-5, rtol=0), (out - ref).abs().max()
    # SDPA with the same eligibility (its all-masked rows are zeros, our default policy)
    m = eligibility(Q, K, mask=kwargs.get("mask"), lengths=kwargs.get("lengths"),
                    is_causal=kwargs.get("is_causal", False),
                    causal_align=kwargs.get("causal_align", "upper_left"))
    scale = kwargs["scale"]
    scale = 1 / math.sqrt(Q.shape[-1]) if scale == "sqrt_dk" else scale
    sdpa = F.scaled_dot_product_attention(Q, K, V, attn_mask=m,
                                          scale=scale / kwargs["temperature"])
    assert torch.allclose(out, sdpa, atol=1e-5, rtol=0), (out - sdpa).abs().max()


@settings(max_examples=40)
@given(cases(), st.sampled_from(["zeros", "nan"]))
def test_float64_and_empty_policies(case, empty):
    dims, kwargs, chunk = case
    Q, K, V = _inputs(*dims, dtype=torch.float64)
    out, lse = streaming_attention(Q, K, V, chunk_size=chunk, empty=empty,
                                   return_logsumexp=True, **kwargs)
    res = attention(Q, K, V, empty=empty, **kwargs)
    assert torch.allclose(out, res.context, atol=1e-12, rtol=0, equal_nan=True)
    # the running normaliser is the logsumexp of the eligible scores
    scale = kwargs["scale"]
    scale = 1 / math.sqrt(Q.shape[-1]) if scale == "sqrt_dk" else scale
    scores = torch.matmul(Q, K.transpose(-2, -1)) * scale / kwargs["temperature"]
    if res.mask is not None:
        scores = scores.masked_fill(~res.mask, -math.inf)
    assert torch.allclose(lse, torch.logsumexp(scores, dim=-1), atol=1e-10, equal_nan=True)


def test_every_chunk_size_with_rows_whose_first_chunks_are_masked():
    """Row 0 sees only the last key, row 1 nothing, row 2 everything: the guard for m = -inf."""
    Q, K, V = _inputs(7, (2,), 3, 11, 4, 3)
    mask = torch.ones(3, 11, dtype=torch.bool)
    mask[0, :10] = False
    mask[1] = False
    ref = attention(Q, K, V, mask=mask).context
    for chunk in range(1, 13):
        out = streaming_attention(Q, K, V, chunk_size=chunk, mask=mask)
        assert torch.isfinite(out).all(), chunk
        assert torch.allclose(out, ref, atol=1e-6, rtol=0), chunk
        assert torch.equal(out[:, 1], torch.zeros_like(out[:, 1]))


def test_large_scores_do_not_overflow():
    Q, K, V = _inputs(3, (), 4, 50, 8, 2, spread=200.0)  # scores in the thousands
    out = streaming_attention(Q, K, V, chunk_size=7)
    assert torch.isfinite(out).all()
    assert torch.allclose(out, attention(Q, K, V).context, atol=1e-5)


def test_empty_policy_raise_and_nan():
    Q, K, V = _inputs(1, (), 2, 5, 3, 3)
    mask = torch.tensor([[True] * 5, [False] * 5])
    with pytest.raises(ValueError, match="1 row\\(s\\) have no eligible key"):
        streaming_attention(Q, K, V, mask=mask, empty="raise", chunk_size=2)
    out = streaming_attention(Q, K, V, mask=mask, empty="nan", chunk_size=2)
    assert torch.isnan(out[1]).all() and torch.isfinite(out[0]).all()


def test_gradients_match_materialised():
    Q, K, V = _inputs(5, (2,), 4, 9, 3, 2, dtype=torch.float64)
    mask = torch.rand(2, 4, 9, generator=torch.Generator().manual_seed(0)) < 0.6
    mask[0, 1] = False  # an all-masked row: zero gradient, no NaN
    grads = []
    for fn in (lambda q, k, v: streaming_attention(q, k, v, mask=mask, chunk_size=2),
               lambda q, k, v: attention(q, k, v, mask=mask).context):
        q, k, v = (x.clone().requires_grad_() for x in (Q, K, V))
        (fn(q, k, v) ** 2).sum().backward()
        grads.append((q.grad, k.grad, v.grad))
    for a, b in zip(*grads):
        assert torch.isfinite(a).all()
        assert torch.allclose(a, b, atol=1e-10)


def test_gradcheck_with_broadcast_batches_masks_and_logsumexp():
    """The in-place chunk steps and the detached running maximum give exact gradients, for the
    context and the logsumexp, with Q's batch broadcast against K's and rows masked at first."""
    Q, _, _ = _inputs(4, (2, 2), 3, 7, 3, 2, dtype=torch.float64)
    _, K, V = _inputs(6, (2,), 3, 7, 3, 2, dtype=torch.float64)
    mask = torch.rand(3, 7, generator=torch.Generator().manual_seed(1)) < 0.7
    mask[0, :4], mask[0, 4] = False, True  # row 0 (causal: keys 0..4) sees key 4 only

    def fn(q, k, v):
        out, lse = streaming_attention(q, k, v, mask=mask, is_causal=True, chunk_size=2,
                                       causal_align="lower_right", return_logsumexp=True)
        return out, lse

    inputs = tuple(x.clone().requires_grad_() for x in (Q, K, V))
    assert torch.autograd.gradcheck(fn, inputs)


def test_one_code_path_with_and_without_autograd():
    """Each chunk step is written once: the operators run are the same whether or not the
    inputs require gradients (no switch between in-place and out-of-place steps)."""
    from attention_lab._compat.torch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is not torch.ops.aten.detach.default:  # autograd adds views, not steps
                ops.append(str(func))
            return func(*args, **(kwargs or {}))

    Q, K, V = _inputs(8, (2,), 3, 9, 4, 2)
    mask = torch.rand(3, 9, generator=torch.Generator().manual_seed(2)) < 0.7
    runs = []
    for grad in (False, True):
        ops = []
        q, k, v = (x.clone().requires_grad_(grad) for x in (Q, K, V))
        with Ops():
            streaming_attention(q, k, v, mask=mask, is_causal=True, chunk_size=4)
        runs.append(ops)
    assert runs[0] == runs[1]
    assert any("masked_fill_" in op for op in runs[1]) and any("exp_" in op for op in runs[1])


def test_never_materialises_the_score_matrix():
    """Record every tensor the computation creates: none has T*S elements or more."""
    from attention_lab._compat.torch import TorchDispatchMode

    class Largest(TorchDispatchMode):
        biggest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in (out if isinstance(out, (tuple, list)) else (out,)):
                if isinstance(t, torch.Tensor):
                    Largest.biggest = max(Largest.biggest, t.numel())
            return out

    T, S, D, chunk = 16, 4096, 8, 64
    Q, K, V = _inputs(0, (1,), T, S, D, D)
    lengths = torch.tensor(4000)
    with Largest():
        streaming_attention(Q, K, V, chunk_size=chunk, is_causal=True,
                            causal_align="lower_right", lengths=lengths[None])
    assert Largest.biggest <= max(S * D, T * chunk * 2), Largest.biggest  # inputs are S x D
    assert Largest.biggest < T * S
    Largest.biggest = 0
    with Largest():
        attention(Q, K, V)
    assert Largest.biggest >= T * S  # the materialised path does form it


def test_skips_chunks_no_row_can_see():
    """Keys beyond every length (or above the causal diagonal) are never multiplied: record the
    key columns of every matmul's second operand."""
    from attention_lab._compat.torch import TorchDispatchMode

    widths = []

    class Keys(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in (torch.ops.aten.bmm.default, torch.ops.aten.mm.default):
                widths.append(args[1].shape[-1])
            return func(*args, **(kwargs or {}))

    Q, K, V = _inputs(2, (2,), 3, 10, 4, 4)
    lengths = torch.tensor([4, 6])
    with Keys():
        out = streaming_attention(Q, K, V, lengths=lengths, chunk_size=3)
    assert torch.allclose(out, attention(Q, K, V, lengths=lengths).context, atol=1e-6)
    assert sum(w for w in widths if w != V.shape[-1] + 1) == 6  # keys 0..5, chunks of 3: 3 + 3
    widths.clear()
    with Keys():
        streaming_attention(Q, K, V, is_causal=True, chunk_size=2)  # T=3: keys 0..2 only
    assert sum(w for w in widths if w != V.shape[-1] + 1) == 4  # chunks [0, 2) and [2, 4)


@pytest.mark.parametrize("kwargs, exc, text", [
    (dict(chunk_size=0), ValueError, "chunk_size must be > 0, got 0"),
    (dict(chunk_size=2.0), TypeError, "chunk_size must be an integer, got float 2.0"),
    (dict(mask=torch.ones(3, 4)), TypeError, "mask has dtype torch.float32; expected a boolean"),
    (dict(mask=torch.ones(3, 7, dtype=torch.bool)), ValueError, "mask has shape \\(3, 7\\)"),
    (dict(empty="maybe"), ValueError, "empty must be one of"),
    (dict(temperature=0.0), ValueError, "temperature must be finite and > 0"),
    (dict(causal_align="middle"), ValueError, "causal_align must be one of"),
    (dict(lengths=torch.tensor(9)), ValueError, "lengths must lie in \\[0, S=5\\]"),
    (dict(lengths=torch.tensor([5, 3, 1])), ValueError, "lengths has shape \\(3,\\); expected a single"),
])
def test_bad_arguments_are_named(kwargs, exc, text):
    Q, K, V = _inputs(0, (), 3, 5, 2, 2)
    with pytest.raises(exc, match=text):
        streaming_attention(Q, K, V, **kwargs)


def test_non_finite_input_is_reported():
    Q, K, V = _inputs(0, (), 3, 5, 2, 2)
    V[2, 0] = float("inf")
    with pytest.raises(ValueError, match="V contains 1 non-finite value"):
        streaming_attention(Q, K, V, chunk_size=2)


def test_small_comparison_for_the_notebook():
    from attention_lab.streaming import compare

    r = compare(sizes=(64, 512), T=8, D=4, chunk_size=32, repeat=1)
    assert r["sizes"] == [64, 512]
    assert max(r["max_diff"]) < 1e-5
    assert r["largest_numel"]["materialised"] == [8 * 64, 8 * 512]
    assert r["largest_numel"]["streaming"] == [8 * 32, 8 * 32]  # one chunk of scores
    assert r["peak_bytes"]["streaming"][1] < r["peak_bytes"]["materialised"][1]
    assert all(t > 0 for ts in r["seconds"].values() for t in ts)


def test_a_comparison_with_repeat_0_times_nothing_and_measures_the_rest():
    """What a stored notebook runs: no time (it differs per run), the same memory and verdicts."""
    from attention_lab.streaming import compare

    timed = compare(sizes=(64, 512), T=8, D=4, chunk_size=32, repeat=1)
    untimed = compare(sizes=(64, 512), T=8, D=4, chunk_size=32, repeat=0)
    assert untimed["seconds"] is None
    for key in ("peak_bytes", "largest_numel", "agrees"):
        assert untimed[key] == timed[key], key
    for bad, error in ((-1, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="repeat"):
            compare(sizes=(64,), repeat=bad)
