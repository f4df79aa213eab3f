"""No silent wrong answer on any path: numpy (``attend``), torch with weights, torch without
weights (SDPA) and streaming are held to one table of mask shapes, one eligibility rule (the mask
only), one low-precision policy (float32 inside), one non-finite-input policy and one set of
argument checks. Every case listed in issue 10 has a test here."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _reference import mask_shapes
from hypothesis import given
from hypothesis import strategies as st

import attention_lab as al
from attention_lab.softmax import hardmax
from attention_lab.streaming import streaming_attention
from attention_lab.tensor import attention
from attention_lab.tensor import causal_mask as torch_causal_mask


def _numpy(Q, K, V, **kw):
    """The numpy reference through the same arguments (chunk-free, weights-returning)."""
    kw = dict(kw)
    kw.pop("chunk_size", None)
    if kw.pop("is_causal", False):
        m = al.causal_mask(Q.shape[-2], K.shape[-2])
        kw["mask"] = m if kw.get("mask") is None else np.asarray(kw["mask"]) & m
    for key in ("mask", "lengths"):
        if isinstance(kw.get(key), torch.Tensor):
            kw[key] = kw[key].numpy()
    out = al.attend(Q.numpy(), K.numpy(), V.numpy(), **kw).context
    return torch.from_numpy(np.ascontiguousarray(out))


PATHS = {
    "numpy": _numpy,
    "torch": lambda Q, K, V, **kw: attention(Q, K, V, **kw).context,
    "torch_fused": lambda Q, K, V, **kw: attention(Q, K, V, need_weights=False, **kw).context,
    "streaming": lambda Q, K, V, **kw: streaming_attention(Q, K, V, chunk_size=2, **kw),
}
TORCH_PATHS = {k: v for k, v in PATHS.items() if k != "numpy"}


def _qkv(batch, T=4, S=5, D=3, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*batch, n, D, generator=g, dtype=dtype) for n in (T, S, S))


def _sdpa(Q, K, V, mask=None, scale=1.0):
    """SDPA with the mask broadcast to the full score shape (its all-masked rows are zeros)."""
    if mask is not None:
        shape = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2]) + (Q.shape[-2], K.shape[-2])
        mask = torch.as_tensor(mask).expand(shape)
    return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, scale=scale)


# --- one table of mask shapes ---------------------------------------------------------------------

BATCHES = [(), (2,), (2, 3)]


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"batch{b}")
def test_every_path_accepts_every_mask_shape_of_the_table(batch):
    Q, K, V = _qkv(batch)
    accepted, _ = mask_shapes(batch + (4, 5))
    assert (5,) in accepted and () in accepted and batch + (4, 5) in accepted
    g = torch.Generator().manual_seed(1)
    for shape in accepted:
        mask = torch.rand(shape, generator=g) < 0.6
        ref = _sdpa(Q, K, V, mask)
        for name, fn in PATHS.items():
            out = fn(Q, K, V, mask=mask)
            torch.testing.assert_close(out, ref, rtol=0, atol=1e-12,
                                       msg=lambda m: f"{name}, mask {shape}: {m}")


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"batch{b}")
def test_every_path_rejects_every_bad_mask_shape_of_the_table(batch):
    Q, K, V = _qkv(batch)
    _, rejected = mask_shapes(batch + (4, 5))
    for shape in rejected:
        mask = torch.ones(shape, dtype=torch.bool)
        for name, fn in PATHS.items():
            with pytest.raises(ValueError, match=r"mask has shape .* without adding dimensions"):
                fn(Q, K, V, mask=mask)


def test_a_1d_mask_with_4d_inputs_and_no_weights():
    """Issue 10: a (S,) mask with (B, H, T, D) inputs and need_weights=False raised IndexError."""
    Q, K, V = _qkv((2, 3), dtype=torch.float32)
    mask = torch.tensor([True, False, True, True, False])
    out = attention(Q, K, V, mask=mask, need_weights=False).context
    torch.testing.assert_close(out, attention(Q, K, V, mask=mask).context, rtol=0, atol=1e-6)
    out0 = attention(Q, K, V, mask=torch.tensor(True), need_weights=False).context  # 0-d mask
    torch.testing.assert_close(out0, attention(Q, K, V).context, rtol=0, atol=1e-6)


# --- eligibility from the mask only; low precision computed in float32 ---------------------------

LOW = [torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", LOW)
def test_an_eligible_key_whose_low_precision_score_overflows_keeps_its_weight(dtype):
    """Q=300, K=(-300, -200): the scores -90000 and -60000 are -inf in float16. The eligible key
    keeps all the weight (SDPA returns V[0] with the mask, V[1] without)."""
    Q = torch.tensor([[300.0]], dtype=dtype)
    K = torch.tensor([[-300.0], [-200.0]], dtype=dtype)
    V = torch.tensor([[1.0], [2.0]], dtype=dtype)
    mask = torch.tensor([True, False])
    for name, fn in TORCH_PATHS.items():
        assert fn(Q, K, V, mask=mask).item() == 1.0, name
        assert fn(Q, K, V).item() == 2.0, name
        assert fn(Q, K, V, mask=mask).dtype == dtype, name
    assert _sdpa(Q, K, V, mask).item() == 1.0 and _sdpa(Q, K, V).item() == 2.0
    if dtype == torch.float16:  # numpy has no bfloat16
        assert _numpy(Q, K, V, mask=mask).item() == 1.0
        assert _numpy(Q, K, V).item() == 2.0


@pytest.mark.parametrize("dtype", LOW)
def test_a_key_at_minus_65504_does_not_tie_with_the_fill(dtype):
    """An eligible key whose score is float16's most negative number (the finfo.min fill) still
    gets all the weight; masked keys get exactly 0."""
    Q = torch.tensor([[1.0]], dtype=dtype)
    K = torch.tensor([[torch.finfo(torch.float16).min], [3.0]], dtype=dtype)
    V = torch.tensor([[1.0], [2.0]], dtype=dtype)
    mask = torch.tensor([True, False])
    w = attention(Q, K, V, mask=mask).weights
    assert w.tolist() == [[1.0, 0.0]]
    for name, fn in TORCH_PATHS.items():
        assert fn(Q, K, V, mask=mask).item() == 1.0, name


@pytest.mark.parametrize("dtype", LOW)
def test_temperature_1e_4_in_low_precision_gives_the_argmax_rows(dtype):
    """scores / 1e-4 overflow float16; computed in float32 every path returns SDPA's rows."""
    Q, K, V = _qkv((2,), T=3, S=6, D=4, dtype=torch.float32, seed=3)
    Q, K, V = (8 * Q).to(dtype), K.to(dtype), V.to(dtype)  # scores / 1e-4 up to about 3e5
    if dtype == torch.float16:
        assert not torch.isfinite((Q @ K.transpose(-2, -1)) * 1e4).all()  # beyond float16
    ref = F.scaled_dot_product_attention(Q, K, V, scale=1e4)
    top = (Q.double() @ K.double().transpose(-2, -1)).argmax(-1)          # (B, T)
    argmax_rows = torch.gather(V, 1, top[..., None].expand(-1, -1, V.shape[-1]))
    torch.testing.assert_close(ref, argmax_rows, rtol=0, atol=0)
    for name, fn in PATHS.items():
        if name == "numpy" and dtype == torch.bfloat16:
            continue
        out = fn(Q, K, V, temperature=1e-4)
        torch.testing.assert_close(out, ref, rtol=0, atol=0, msg=lambda m: f"{name}: {m}")


def test_a_temperature_that_overflows_float32_names_the_temperature():
    Q, K, V = _qkv((1,), dtype=torch.float32)
    for name, fn in TORCH_PATHS.items():
        with pytest.raises(ValueError, match=r"scale / temperature = 1e\+40"):
            fn(Q * 10, K, V, temperature=1e-40)
        # the opt-out checks nothing: the overflow comes back as it is
        out = fn(Q * 10, K, V, temperature=1e-40, check_finite=False)
        assert not torch.isfinite(out).all(), name


# float16 / bfloat16 extremes: integer-valued inputs make every score exact in float32 (D = 1), so
# a float64 SDPA on the same (rounded) inputs is the exact answer. Each example forces one extreme
# on a random key of every row (eligible unless the mask says otherwise): a score beyond float16's
# range (-90000), a score at -65504 (the finfo.min fill), a score near +65504, or scores that
# overflow only after scaling (temperature 1e-4); the other keys are random, ties included.
EXTREME_Q = [0.0, 1.0, -1.0, 2.0, 255.0, -256.0, 300.0, -300.0]
EXTREME_K = [0.0, 1.0, -1.0, 255.0, -255.0, 300.0, -300.0, -65504.0, 65504.0]
SCENARIOS = {  # name: (query value, key value at the forced key, kwargs)
    "beyond float16": (300.0, -300.0, {}),
    "at the fill": (1.0, -65504.0, {}),
    "near +65504": (1.0, 65504.0, {"scale": 0.5}),
    "overflow after scaling": (2.0, 255.0, {"temperature": 1e-4}),
}


@st.composite
def extreme_low_precision(draw):
    dtype = draw(st.sampled_from(LOW))
    q_forced, k_forced, kwargs = SCENARIOS[draw(st.sampled_from(sorted(SCENARIOS)))]
    B, T, S = draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 6))
    Q = torch.tensor(draw(st.lists(st.sampled_from(EXTREME_Q), min_size=B * T, max_size=B * T)))
    K = torch.tensor(draw(st.lists(st.sampled_from(EXTREME_K), min_size=B * S, max_size=B * S)))
    Q, K = Q.reshape(B, T, 1), K.reshape(B, S, 1)
    j = draw(st.integers(0, S - 1))
    Q[:, 0], K[:, j] = q_forced, k_forced       # row 0 meets the extreme at key j
    g = torch.Generator().manual_seed(draw(st.integers(0, 2 ** 16)))
    V = (torch.rand(B, S, 2, generator=g) * 2 - 1).to(dtype)
    mask = None
    if draw(st.booleans()):
        mask = torch.rand(B, T, S, generator=g) < draw(st.sampled_from([0.3, 0.7]))
        mask[:, 0, j] = True  # the extreme key is eligible ...
        if draw(st.booleans()):
            mask[:, 0, :j] = False  # ... and, sometimes, the only eligible key of row 0
            mask[:, 0, j + 1:] = False
    return Q.to(dtype), K.to(dtype), V, mask, kwargs, draw(st.integers(1, S + 1))


@given(extreme_low_precision())
def test_low_precision_extremes_equal_the_exact_answer_on_every_path(case):
    Q, K, V, mask, kwargs, chunk = case
    factor = kwargs.get("scale", 1.0) / kwargs.get("temperature", 1.0)
    exact = _sdpa(Q.double(), K.double(), V.double(), mask, scale=factor)
    atol = 1e-3 if Q.dtype == torch.float16 else 4e-3  # the final cast to the input dtype
    outs = {
        "torch": attention(Q, K, V, mask=mask, **kwargs).context,
        "torch_fused": attention(Q, K, V, mask=mask, need_weights=False, **kwargs).context,
        "streaming": streaming_attention(Q, K, V, mask=mask, chunk_size=chunk, **kwargs),
    }
    if Q.dtype == torch.float16:
        outs["numpy"] = _numpy(Q, K, V, mask=mask, **kwargs)
    for name, out in outs.items():
        assert out.dtype == Q.dtype, name
        torch.testing.assert_close(out.double(), exact, rtol=0, atol=atol,
                                   msg=lambda m: f"{name}: {m}")
    w = attention(Q, K, V, mask=mask, **kwargs).weights
    if mask is not None:
        assert (w[~mask] == 0).all()


# --- one non-finite-input policy --------------------------------------------------------------------

@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")], ids=str)
@pytest.mark.parametrize("which", ["Q", "K", "V"])
def test_non_finite_inputs_are_refused_by_every_path(which, bad):
    """Also at a masked key and beyond every length (where no row could see it), and -inf in Q
    (SDPA returns 0 for that row, as for an all-masked one)."""
    Q, K, V = _qkv((2,))
    x = {"Q": Q, "K": K, "V": V}[which]
    x[1, -1, 0] = bad  # the last key is masked for batch item 1 (lengths 3)
    names = {"numpy": {"Q": "query", "K": "keys", "V": "values"}[which]}
    for name, fn in PATHS.items():
        label = names.get(name, which)
        with pytest.raises(ValueError, match=rf"{label} contains 1 non-finite value"):
            fn(Q, K, V, lengths=torch.tensor([5, 3]))


# --- arguments ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["no", 1, None, torch.tensor(True)], ids=repr)
def test_is_causal_must_be_a_bool(value):
    Q, K, V = _qkv((1,))
    for name, fn in TORCH_PATHS.items():
        with pytest.raises(TypeError, match=r"is_causal must be a bool"):
            fn(Q, K, V, is_causal=value)
    with pytest.raises(TypeError, match=r"is_causal' must be bool"):
        F.scaled_dot_product_attention(Q, K, V, is_causal=value)  # as SDPA itself
    assert torch.equal(attention(Q, K, V, is_causal=np.bool_(True)).context,
                       attention(Q, K, V, is_causal=True).context)


BAD_MASKS = [("a string", "mask has dtype <U"), ("a ragged list", "mask could not be read"),
             ("a float array", "mask has dtype float64")]
BAD_LENGTHS = [("a string", "lengths must be integers, got dtype <U"),
               ("a ragged list", "lengths could not be read"),
               ("a float array", "lengths must be integers, got dtype float64")]
BAD = {"a string": "abcde", "a ragged list": [[True, False], [True]],
       "a float array": np.ones((4, 5))}


@pytest.mark.parametrize("what, message", BAD_MASKS)
def test_bad_masks_are_named_on_every_path(what, message):
    Q, K, V = _qkv((2,))
    for name, fn in PATHS.items():
        with pytest.raises(TypeError, match=message):
            fn(Q, K, V, mask=BAD[what])


@pytest.mark.parametrize("what, message", BAD_LENGTHS)
def test_bad_lengths_are_named_on_every_path(what, message):
    Q, K, V = _qkv((2,))
    value = {"a ragged list": [[1, 2], [3]], "a float array": np.array([2.0, 3.0])}.get(
        what, BAD[what])
    for name, fn in PATHS.items():
        with pytest.raises(TypeError, match=message):
            fn(Q, K, V, lengths=value)
    with pytest.raises(TypeError, match=message):
        al.padding_mask(value, 5)


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda: torch_causal_mask(-1), ValueError, r"T must be > 0, got -1"),
    (lambda: torch_causal_mask(2.5), TypeError, r"T must be an integer, got float 2.5"),
    (lambda: torch_causal_mask(3, -2), ValueError, r"S must be > 0, got -2"),
    (lambda: al.causal_mask(-1), ValueError, r"T must be > 0, got -1"),
    (lambda: al.causal_mask(2.5), TypeError, r"T must be an integer, got float 2.5"),
    (lambda: al.softmax([]), ValueError, r"scores has shape \(0,\): axis -1 is empty"),
    (lambda: al.softmax(np.zeros((2, 0))), ValueError, r"scores has shape \(2, 0\)"),
    (lambda: hardmax([]), ValueError, r"scores has shape \(0,\): no keys"),
    (lambda: al.scaled_dot_scores([1.0, 0.0], [[1.0, 2.0], [3.0]]), TypeError,
     r"keys could not be read"),
    (lambda: al.attend([1.0, 0.0], [[1.0, 2.0], [3.0]], [[1.0], [2.0]], score="scaled_dot"),
     TypeError, r"keys could not be read"),
    (lambda: al.entropy("abc"), TypeError, r"weights has dtype <U3"),
    (lambda: al.entropy([0.5, -0.5]), ValueError, r"weights must be non-negative, got -0.5"),
    (lambda: al.safe_fill("int32"), ValueError, r"dtype must be a floating dtype.*'int32'"),
    (lambda: al.softmax([1.0, 2.0], temperature=np.float32(0)), ValueError,
     r"temperature must be finite and > 0"),
])
def test_errors_name_the_argument(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_chunk_size_takes_every_integer_type():
    Q, K, V = _qkv((2,), S=9)
    ref = streaming_attention(Q, K, V, chunk_size=2)
    for chunk in (np.int64(2), np.int32(2), np.uint8(2), torch.tensor(2)):
        assert torch.equal(streaming_attention(Q, K, V, chunk_size=chunk), ref), type(chunk)
    for chunk, exc in ((2.0, TypeError), (True, TypeError), (np.float64(2), TypeError),
                       (0, ValueError), (-3, ValueError)):
        with pytest.raises(exc, match="chunk_size"):
            streaming_attention(Q, K, V, chunk_size=chunk)


# --- lengths are per batch item ---------------------------------------------------------------------

def test_lengths_index_batch_items_not_heads_when_b_equals_h():
    """(B,) lengths with (B, H, T, D) inputs and B == H: item 1 has one valid key in every head
    (broadcasting against the head axis would give head 1 one key in every item)."""
    Q, K, V = _qkv((2, 2), T=3, S=5)
    lengths = torch.tensor([5, 1])
    mask = torch.tensor([[True] * 5, [True] + [False] * 4])[:, None, None, :]  # (B, 1, 1, S)
    ref = _sdpa(Q, K, V, mask)
    torch.testing.assert_close(ref[1], V[1, :, :1].expand(2, 3, 3))  # item 1: V[1, h, 0]
    for name, fn in PATHS.items():
        torch.testing.assert_close(fn(Q, K, V, lengths=lengths), ref, rtol=0, atol=1e-12,
                                   msg=lambda m: f"{name}: {m}")
        # one per item and head: (B, H)
        per_head = torch.tensor([[5, 2], [1, 3]])
        m2 = torch.arange(5) < per_head[..., None, None]
        torch.testing.assert_close(fn(Q, K, V, lengths=per_head), _sdpa(Q, K, V, m2), rtol=0,
                                   atol=1e-12, msg=lambda m: f"{name} (B, H): {m}")
        with pytest.raises(ValueError, match=r"lengths has shape \(3,\); expected a single "
                                             r"length or one per batch item, shape \(2,\)"):
            fn(Q, K, V, lengths=[5, 1, 2])


def test_check_finite_false_skips_the_checks_and_says_so():
    """The opt-out (as scipy.linalg's check_finite): neither the inputs nor the result are checked,
    so SDPA's answer for a NaN query (zeros) comes back, and the other paths' NaN row; the default
    refuses it on every path. A non-bool is refused."""
    Q, K, V = _qkv((1, 1), dtype=torch.float32)  # 4-D: SDPA's fused CPU kernel
    Q[0, 0, 1, 0] = float("nan")
    for name, fn in PATHS.items():
        with pytest.raises(ValueError, match=r"(Q|query) contains 1 non-finite value"):
            fn(Q, K, V)  # the numpy reference calls it the query
    out = attention(Q, K, V, need_weights=False, check_finite=False).context
    assert (out[0, 0, 1] == 0).all()  # silently zero: what the scan is there to prevent
    for name in ("torch", "streaming"):
        out = PATHS[name](Q, K, V, check_finite=False)
        assert out[0, 0, 1].isnan().all() and torch.isfinite(out[0, 0, [0, 2, 3]]).all(), name
    for name, fn in TORCH_PATHS.items():
        with pytest.raises(TypeError, match="check_finite must be a bool"):
            fn(Q, K, V, check_finite="yes")
