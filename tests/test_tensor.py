"""The torch path: equal to torch SDPA and to the numpy reference; safe fills; no NaN anywhere."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
F = torch.nn.functional

from _reference import attention_reference  # noqa: E402

from attention_lab.tensor import attention, causal_mask, mask_fill  # noqa: E402

TOL = {torch.float32: 1e-6, torch.float64: 1e-12}


@st.composite
def cases(draw):
    heads = draw(st.booleans())
    B, H = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    T, S = draw(st.integers(1, 6)), draw(st.integers(1, 7))
    D_k, D_v = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    lead = (B, H) if heads else (B,)
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(*lead, T, D_k, generator=g, dtype=torch.float64)
    K = torch.randn(*lead, S, D_k, generator=g, dtype=torch.float64)
    V = torch.randn(*lead, S, D_v, generator=g, dtype=torch.float64)
    kind = draw(st.sampled_from(["none", "full", "keys", "causal", "causal+keys"]))
    mask, is_causal = None, False
    if kind == "full":
        mask = torch.rand(*lead, T, S, generator=g) < 0.7
    elif kind == "keys":  # a padding-like mask broadcast over queries (and heads)
        mask = (torch.rand(B, *((1,) if heads else ()), 1, S, generator=g) < 0.7)
    if kind.startswith("causal"):
        is_causal = True
        if kind == "causal+keys":
            mask = torch.rand(*lead, T, S, generator=g) < 0.8
    scale = draw(st.sampled_from([1.0, "sqrt_dk", 0.37]))
    return Q, K, V, mask, is_causal, scale


def sdpa(Q, K, V, mask, is_causal, scale):
    s = 1 / math.sqrt(Q.shape[-1]) if scale == "sqrt_dk" else scale
    if is_causal and mask is not None:  # SDPA cannot take both: pass the combined mask
        mask = mask & causal_mask(Q.shape[-2], K.shape[-2])
        is_causal = False
    return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, is_causal=is_causal, scale=s)


@given(cases(), st.sampled_from([torch.float32, torch.float64]))
def test_equals_sdpa(case, dtype):
    Q, K, V, mask, is_causal, scale = case
    Q, K, V = Q.to(dtype), K.to(dtype), V.to(dtype)
    ours = attention(Q, K, V, mask=mask, is_causal=is_causal, scale=scale)
    ref = sdpa(Q, K, V, mask, is_causal, scale)
    torch.testing.assert_close(ours.context, ref, rtol=0, atol=TOL[dtype])
    fused = attention(Q, K, V, mask=mask, is_causal=is_causal, scale=scale, need_weights=False)
    torch.testing.assert_close(fused.context, ref, rtol=0, atol=TOL[dtype])
    assert fused.weights is None


@given(cases())
def test_equals_numpy_reference(case):
    Q, K, V, mask, is_causal, scale = case
    s = 1 / math.sqrt(Q.shape[-1]) if scale == "sqrt_dk" else scale
    ours = attention(Q, K, V, mask=mask, is_causal=is_causal, scale=s, temperature=0.7)
    ref = attention_reference(Q, K, V, mask=mask, is_causal=is_causal, scale=s, temperature=0.7)
    torch.testing.assert_close(ours.weights, ref.weights, rtol=0, atol=1e-12)
    torch.testing.assert_close(ours.context, ref.context, rtol=0, atol=1e-12)


def test_causal_alignment_with_t_not_equal_s():
    assert causal_mask(2, 4).tolist() == [[True, False, False, False], [True, True, False, False]]
    assert causal_mask(2, 4, align="lower_right").tolist() == [[True, True, True, False],
                                                               [True, True, True, True]]
    from torch.nn.attention.bias import causal_lower_right

    g = torch.Generator().manual_seed(1)
    Q, K, V = (torch.randn(2, n, 3, generator=g) for n in (3, 5, 5))
    ours = attention(Q, K, V, is_causal=True, causal_align="lower_right", scale="sqrt_dk")
    ref = F.scaled_dot_product_attention(Q, K, V, attn_mask=causal_lower_right(3, 5))
    torch.testing.assert_close(ours.context, ref, rtol=0, atol=1e-6)
    # upper-left (the default) is SDPA's is_causal
    ours = attention(Q, K, V, is_causal=True, scale="sqrt_dk")
    ref = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    torch.testing.assert_close(ours.context, ref, rtol=0, atol=1e-6)


def _with_empty_rows(dtype=torch.float32):
    g = torch.Generator().manual_seed(3)
    Q = torch.randn(2, 4, 3, generator=g).to(dtype).requires_grad_()
    K = torch.randn(2, 5, 3, generator=g).to(dtype).requires_grad_()
    V = torch.randn(2, 5, 2, generator=g).to(dtype).requires_grad_()
    mask = torch.rand(2, 4, 5, generator=g) < 0.6
    mask[0, 1] = False  # an all-masked row
    mask[1, :, 3:] = False
    mask[1, 2] = False
    return Q, K, V, mask


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("need_weights", [True, False])
def test_all_masked_rows_give_zeros_and_zero_gradients(dtype, need_weights):
    Q, K, V, mask = _with_empty_rows(dtype)
    out = attention(Q, K, V, mask=mask, need_weights=need_weights)
    assert torch.isfinite(out.context).all()
    assert (out.context[0, 1] == 0).all() and (out.context[1, 2] == 0).all()
    if need_weights:
        assert (out.weights[0, 1] == 0).all()
        assert (out.weights[~mask] == 0).all()
        ok_rows = mask.any(-1)
        torch.testing.assert_close(out.weights.sum(-1)[ok_rows].float(),
                                   torch.ones(int(ok_rows.sum())), atol=1e-2, rtol=0)
    out.context.sum().backward()
    for x in (Q, K, V):
        assert torch.isfinite(x.grad).all()
    assert (Q.grad[0, 1] == 0).all() and (Q.grad[1, 2] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_close_to_float32_and_fill_is_finite(dtype):
    Q, K, V, mask = _with_empty_rows()
    hi = attention(Q.detach(), K.detach(), V.detach(), mask=mask).context
    lo = attention(Q.detach().to(dtype), K.detach().to(dtype), V.detach().to(dtype), mask=mask).context
    torch.testing.assert_close(lo.float(), hi, atol=3e-2, rtol=0)
    fill = mask_fill(dtype)
    assert math.isfinite(torch.tensor(fill, dtype=dtype).item())
    assert torch.tensor(-1e9, dtype=torch.float16).item() == -math.inf  # the fill we avoid


def test_a_minus_1e9_fill_in_float16_gives_nan_where_ours_does_not():
    scores = torch.randn(1, 4).half()
    mask = torch.zeros(1, 4, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="overflow"):  # torch refuses the fill outright...
        scores.masked_fill(~mask, -1e9)
    additive = torch.zeros(1, 4).masked_fill(~mask, -1e9).half()  # ...but a cast turns it into -inf
    assert torch.isinf(additive).all()
    naive = torch.softmax(scores + additive, -1)
    assert torch.isnan(naive).all()
    V = torch.randn(4, 2).half()
    out = attention(torch.randn(1, 3).half(), torch.randn(4, 3).half(), V, mask=mask)
    assert (out.context == 0).all() and (out.weights == 0).all()


def test_empty_policies():
    Q, K, V, mask = _with_empty_rows()
    n = attention(Q, K, V, mask=mask, empty="nan")
    assert torch.isnan(n.context[0, 1]).all() and torch.isnan(n.weights[0, 1]).all()
    assert torch.isfinite(n.context[0, 0]).all()
    with pytest.raises(ValueError, match=r"2 row\(s\) have no eligible key"):
        attention(Q, K, V, mask=mask, empty="raise")
    attention(Q, K, V, empty="raise")  # no mask, no empty row: fine


def test_lengths_equal_padding_mask():
    g = torch.Generator().manual_seed(5)
    Q, K, V = (torch.randn(3, n, 4, generator=g) for n in (2, 5, 5))
    a = attention(Q, K, V, lengths=[5, 3, 1])
    m = (torch.arange(5) < torch.tensor([5, 3, 1])[:, None])[:, None, :]
    b = attention(Q, K, V, mask=m)
    torch.testing.assert_close(a.context, b.context, rtol=0, atol=0)
    assert (a.weights[2, :, 1:] == 0).all()


def test_temperature_divides():
    Q, K, V = (torch.randn(1, n, 3) for n in (2, 4, 4))
    a = attention(Q, K, V, temperature=2.0).weights
    b = torch.softmax(Q @ K.transpose(-2, -1) / 2.0, -1)
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda Q, K, V: attention(Q.numpy(), K, V), TypeError, r"Q must be a torch.Tensor"),
    (lambda Q, K, V: attention(Q.long(), K, V), TypeError, r"Q has dtype torch.int64"),
    (lambda Q, K, V: attention(Q.double(), K, V), TypeError, r"share one dtype"),
    (lambda Q, K, V: attention(Q[..., :2], K, V), ValueError, r"Q has width D_k=2 .* K has width 3"),
    (lambda Q, K, V: attention(Q, K, V[:, :3]), ValueError, r"V has 3 rows .* K has S=5 keys"),
    (lambda Q, K, V: attention(Q, K[:, :0], V[:, :0]), ValueError, r"key set is empty"),
    (lambda Q, K, V: attention(Q, K, V, mask=torch.ones(2, 5)), TypeError, r"mask has dtype torch.float32"),
    (lambda Q, K, V: attention(Q, K, V, mask=torch.ones(4, dtype=torch.bool)), ValueError,
     r"mask has shape \(4,\) but the scores have shape \(2, 4, 5\) \(mask has 4 positions .* S=5"),
    (lambda Q, K, V: attention(Q, K, V, mask=torch.ones(3, 2, 4, 5, dtype=torch.bool)), ValueError,
     r"without adding dimensions"),
    (lambda Q, K, V: attention(Q, K, V, temperature=0), ValueError, r"temperature must be finite and > 0"),
    (lambda Q, K, V: attention(Q, K, V, scale=-1.0), ValueError, r"scale must be finite and > 0"),
    (lambda Q, K, V: attention(Q, K, V, empty="skip"), ValueError, r"empty must be one of"),
    (lambda Q, K, V: attention(Q, K, V, lengths=[5, 6]), ValueError, r"lengths must lie in \[0, S=5\]"),
    (lambda Q, K, V: attention(Q, K, V, lengths=[5, 3, 1]), ValueError, r"lengths has shape \(3,\); expected .* one per batch item"),
    (lambda Q, K, V: attention(Q, K, V, is_causal=True, causal_align="diag"), ValueError, r"align must be one of"),
    (lambda Q, K, V: attention(Q, K, V.index_fill(1, torch.tensor([2]), float("nan"))), ValueError,
     r"V contains 6 non-finite value\(s\), first NaN at index \(0, 2, 0\)"),
    (lambda Q, K, V: attention(Q * float("inf"), K, V), ValueError, r"Q contains .* non-finite"),
])
def test_bad_input(call, exc, pattern):
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(2, n, 3, generator=g) for n in (4, 5, 5))
    with pytest.raises(exc, match=pattern):
        call(Q, K, V)


def test_numpy_mask_accepted_and_equal():
    Q, K, V = (torch.randn(1, n, 3) for n in (2, 4, 4))
    m = np.array([True, True, False, True])
    a = attention(Q, K, V, mask=m).context
    b = attention(Q, K, V, mask=torch.from_numpy(m)).context
    torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("need_weights", [True, False])
def test_one_non_finite_input_element_is_caught_on_both_paths(need_weights):
    """The input check's fast path (a finite sum) must not let a single NaN or inf through."""
    g = torch.Generator().manual_seed(1)
    Q, K, V = (torch.randn(2, 3, n, 4, generator=g) for n in (4, 5, 5))
    for bad in (float("nan"), float("inf"), -float("inf")):
        V2 = V.clone()
        V2[1, 2, 3, 0] = bad  # one element of V
        with pytest.raises(ValueError, match=r"V contains 1 non-finite value\(s\), first .* at "
                                             r"index \(1, 2, 3, 0\)"):
            attention(Q, K, V2, need_weights=need_weights)


def test_large_finite_inputs_whose_sum_overflows_are_accepted():
    """The fast path's sum overflows for large finite inputs: the element-wise check decides."""
    Q = torch.zeros(1, 4, 2)
    K = torch.zeros(1, 6, 2)
    V = torch.full((1, 6, 2), 3e38)  # their float32 sum is inf; each is finite
    out = attention(Q, K, V, need_weights=False).context
    torch.testing.assert_close(out, torch.full((1, 4, 2), 3e38))


def test_large_but_finite_float16_context_is_accepted():
    """float16 contexts near the dtype's limit: their float16 sum would overflow, the check must
    still accept them (it sums in float32)."""
    Q, K = torch.zeros(1, 64, 8, dtype=torch.float16), torch.zeros(1, 64, 8, dtype=torch.float16)
    V = torch.full((1, 64, 8), 60000.0, dtype=torch.float16)
    for need_weights in (True, False):
        out = attention(Q, K, V, need_weights=need_weights).context
        assert torch.isfinite(out).all() and float(out.float().sum()) > 65504


def test_pure_python_broadcast_agrees_with_torch():
    """_validate.broadcast_shapes (the hot path's cheap version) gives torch's result, or None
    where torch raises."""
    import random

    from attention_lab._validate import broadcast_shapes

    rng = random.Random(0)
    for _ in range(3000):
        shapes = [tuple(rng.choice([0, 1, 2, 3]) for _ in range(rng.randint(0, 4)))
                  for _ in range(rng.randint(1, 3))]
        try:
            expected = tuple(torch.broadcast_shapes(*shapes))
        except RuntimeError:
            expected = None
        assert broadcast_shapes(*shapes) == expected, shapes


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("align", ["upper_left", "lower_right"])
def test_no_queries_with_a_causal_mask_give_an_empty_context_as_streaming_does(need_weights, align):
    # T=0 worked without is_causal and in streaming_attention with it; attention(is_causal=True)
    # raised "T must be > 0, got 0", naming an argument the caller never passed
    from attention_lab.streaming import streaming_attention

    Q, K, V = torch.randn(2, 0, 3), torch.randn(2, 5, 3), torch.randn(2, 5, 4)
    out = attention(Q, K, V, is_causal=True, causal_align=align, need_weights=need_weights)
    assert out.context.shape == (2, 0, 4)
    assert streaming_attention(Q, K, V, is_causal=True, causal_align=align).shape == (2, 0, 4)
    if need_weights:
        assert out.weights.shape == (2, 0, 5)
