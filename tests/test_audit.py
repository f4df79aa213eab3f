"""The attention audit: a clean call passes; typical bugs are flagged by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention_lab import attend
from attention_lab.analysis.audit import AuditReport, audit


@pytest.fixture()
def qkv():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(2, 4, 3, generator=g), torch.randn(2, 6, 3, generator=g),
            torch.randn(2, 6, 5, generator=g))


LENGTHS = torch.tensor([6, 3])


def correct(Q, K, V, mask):
    s = (Q @ K.transpose(-2, -1)).masked_fill(~mask, torch.finfo(Q.dtype).min)
    w = torch.softmax(s, dim=-1).masked_fill(~mask, 0.0)
    return w @ V, w


def wrong_axis(Q, K, V, mask):
    s = (Q @ K.transpose(-2, -1)).masked_fill(~mask, torch.finfo(Q.dtype).min)
    w = torch.softmax(s, dim=-2)  # over the queries
    return w @ V, w


def post_softmax_mask(Q, K, V, mask):
    w = torch.softmax(Q @ K.transpose(-2, -1), dim=-1) * mask  # no renormalisation
    return w @ V, w


def neg_inf_fill(Q, K, V, mask):
    w = torch.softmax((Q @ K.transpose(-2, -1)).masked_fill(~mask, float("-inf")), dim=-1)
    return w @ V, w


def half_precision_fill(Q, K, V, mask):
    """The classic -1e9 fill, computed in float16: -1e9 becomes -inf."""
    s = (Q @ K.transpose(-2, -1)).half()
    s = torch.where(mask, s, torch.tensor(-1e9).half())  # the cast gives -inf
    w = torch.softmax(s.float(), dim=-1)
    return w @ V, w


def ignores_mask(Q, K, V, mask):
    w = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)
    return w @ V, w


def test_the_package_call_passes_and_report_is_readable(qkv):
    from attention_lab.tensor import attention

    r = audit(attention, *qkv, lengths=LENGTHS, fill=float("-inf"))
    assert isinstance(r, AuditReport)
    assert r.ok and not r.flags, str(r)
    text = str(r)
    for entry in ("query", "keys", "values", "score function", "scale / temperature",
                  "normalisation axis", "rules", "mask", "fill value", "all-masked rows",
                  "score range", "entropy (nats)", "masked mass", "non-finite values",
                  "output norms", "latency", "tensor memory", "materialisation",
                  "interventions"):
        assert entry in text, entry
    assert "zeros" in r["all-masked rows"].value
    assert r["materialisation"].value.startswith("yes")
    assert "no findings" in text


def test_repeat_0_leaves_the_timing_out_and_says_how_to_get_it(qkv):
    from attention_lab.tensor import attention

    timed = audit(attention, *qkv, lengths=LENGTHS, repeat=2)
    assert "ms per call (median of 2)" in timed["latency"].value and timed.data["seconds"] > 0
    assert "µs per eligible query-key pair" in timed["time per pair"].value  # not a throughput
    assert "throughput" not in str(timed)
    r = audit(attention, *qkv, lengths=LENGTHS, repeat=0)
    assert r["latency"].value.startswith("not timed (repeat=0") and "repeat=5" in r["latency"].value
    assert "time per pair" not in str(r) and r.data["seconds"] is None
    assert " ms" not in str(r).replace(r["latency"].value, "")
    assert r["tensor memory"].value == timed["tensor memory"].value
    with pytest.raises(ValueError, match="repeat must be >= 0"):
        audit(attention, *qkv, repeat=-1)


def test_a_correct_black_box_passes(qkv):
    r = audit(correct, *qkv, lengths=LENGTHS, fill=torch.finfo(torch.float32).min)
    assert not r.flags, str(r)


def test_wrong_axis_softmax_is_flagged(qkv):
    r = audit(wrong_axis, *qkv, lengths=LENGTHS)
    assert "wrong_axis" in r.flags
    assert r["normalisation axis"].status == "fail"
    assert "-2 (queries)" in r["normalisation axis"].value
    assert not r.ok


def test_post_softmax_mask_is_flagged(qkv):
    r = audit(post_softmax_mask, *qkv, lengths=LENGTHS)
    assert "post_softmax_mask" in r.flags
    assert "after the softmax" in r["normalisation axis"].value


def test_nan_producing_fill_is_flagged(qkv):
    r = audit(neg_inf_fill, *qkv, lengths=LENGTHS)
    assert "nan_fill" in r.flags
    assert r["all-masked rows"].value.startswith("NaN")
    r16 = audit(half_precision_fill, *qkv, lengths=LENGTHS, fill=-1e9)
    assert "nan_fill" in r16.flags  # probed
    # declared fill in a float16 call: flagged before anything runs
    Q, K, V = (x.half() for x in qkv)
    r = audit(lambda q, k, v, mask: correct(q.float(), k.float(), v.float(), mask), Q, K, V,
              lengths=LENGTHS, fill=-1e9)
    assert "fill_overflows" in r.flags


def test_mask_not_applied_is_flagged(qkv):
    r = audit(ignores_mask, *qkv, lengths=LENGTHS)
    assert "mask_not_applied" in r.flags


def test_non_finite_output_on_given_inputs(qkv):
    Q, K, V = qkv
    lengths = torch.tensor([6, 0])  # item 1 has no eligible key at all
    r = audit(neg_inf_fill, Q, K, V, lengths=lengths, probe=False)
    assert "non_finite" in r.flags


def test_numpy_reference_can_be_audited(qkv):
    Q, K, V = (x.double().numpy() for x in qkv)
    r = audit(attend, Q, K, V, lengths=LENGTHS.numpy())
    assert not r.flags, str(r)
    assert r["materialisation"].value.startswith("unknown")  # numpy: no torch tensors tracked


def test_streaming_is_reported_as_not_materialised():
    from attention_lab.streaming import streaming_attention

    g = torch.Generator().manual_seed(1)
    Q, K, V = torch.randn(8, 4, generator=g), torch.randn(512, 4, generator=g), \
        torch.randn(512, 4, generator=g)

    def stream(q, k, v, m):
        return streaming_attention(q, k, v, mask=m, chunk_size=32), None

    r = audit(stream, Q, K, V, probe=False)
    assert r["materialisation"].value.startswith("no")
    assert r["normalisation axis"].status == "warn"  # no weights to check


def test_bad_return_value_is_explained(qkv):
    with pytest.raises(TypeError, match="must return"):
        audit(lambda q, k, v, mask: 42, *qkv)
    with pytest.raises(TypeError, match="audit needs K"):
        audit(correct, qkv[0], None, None)
    with pytest.raises(TypeError, match="fn must be an attention callable"):
        audit(None, *qkv)


def test_inputs_without_a_query_row_are_named(qkv):
    Q, K, V = qkv
    # one query (D_k,) was 'IndexError: tuple index out of range'; no query (T=0) or no batch
    # item, 'IndexError: index 0 is out of bounds' from the all-masked-row probe
    for bad in (Q[0, 0], Q[:, :0], Q[:0]):
        with pytest.raises(ValueError, match=r"Q must have shape \(\.\.\., T, D_k\) with at "
                                             r"least one query"):
            audit(correct, bad, K if bad.dim() > 1 else K[0], V if bad.dim() > 1 else V[0],
                  repeat=0)
    assert audit(correct, Q[0, :1], K[0], V[0], repeat=0).ok  # one query as (1, D_k)


def test_any_attention_callable_with_declared_sources(qkv):
    """SDPA returns the context only and names its mask attn_mask: audited as it is, with the
    declared sources in the report."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    sources = {"query": "decoder states", "key": "encoder states", "value": "encoder states"}
    r = audit(sdpa, *qkv, lengths=LENGTHS, mask_arg="attn_mask", scale=3 ** -0.5,
              score="scaled dot", sources=sources)
    assert "source: decoder states (declared)" in str(r)
    assert r["normalisation axis"].status == "warn"  # no weights to check
    assert "zeros" in r["all-masked rows"].value and not r.findings[1:]


def test_audit_of_the_trained_model():
    from attention_lab import toy
    from attention_lab.toy.audit import audit_model, describe

    model = toy.load()
    r = audit_model(model, source=["abcde", "abcdefghijkl"])
    assert not r.flags, str(r)
    assert "additive" in r["score function"].value
    assert "decoder GRU state" in r["query"].value
    c = model.config  # the declared projections give the model's widths, v's too
    assert describe(model)["projections"] == (f"W_q ({c.hidden} -> {c.attn}), "
                                              f"W_k ({2 * c.hidden} -> {c.attn}), "
                                              f"v ({c.attn} -> 1)")
    assert r["query"].value.startswith("shape (2, 12, 64)")
    # steps after a source's end have no eligible key: 12 - 5 = 7 all-masked rows
    assert "7 all-masked row(s)" in r["mask"].value
    rw = audit_model(model, source="abcdefghij", window=(1, 1))
    assert "local window" in rw["rules"].value
    assert not rw.flags
    enc = toy.load(values="encoder")
    assert "encoder states" in describe(enc)["value"] and "embeddings" in describe(model)["value"]
    assert "encoder states" in audit_model(enc, source="cafe")["values"].value
