"""The score-matrix calculator (the chapter's exercise 16 and the O(T S (D_k + D_v)) count)."""

from __future__ import annotations

import pytest

from attention_lab.analysis.cost import AttentionCost, multiply_adds


def test_chapter_exercise_numbers():
    c = AttentionCost(batch=8, target=64, source=512, heads=4, d_k=16, d_v=16)
    assert c.shape == (8, 4, 64, 512)
    assert c.elements == 1_048_576
    assert c.bytes == 4 * 1_048_576
    assert c.multiply_adds == 8 * 4 * 64 * 512 * 32
    assert c.flops == 2 * c.multiply_adds
    text = str(c)
    assert "1,048,576" in text and "4.0 MiB" in text and "O(T S (D_k + D_v))" in text


def test_cost_grows_linearly_in_each_length_and_width():
    base = multiply_adds(10, 20, 3, 5)
    assert multiply_adds(20, 20, 3, 5) == 2 * base
    assert multiply_adds(10, 40, 3, 5) == 2 * base
    assert multiply_adds(10, 20, 6, 10) == 2 * base


def test_streaming_bytes_and_dtypes():
    c = AttentionCost(target=256, source=262_144, d_k=64, dtype="float16", chunk=2048)
    assert c.bytes == 256 * 262_144 * 2
    assert c.streaming_bytes == 256 * 2048 * 2
    assert "streaming, chunk 2048" in str(c)


@pytest.mark.parametrize("kwargs, exc, text", [
    (dict(target=0, source=5), ValueError, "target must be >= 1"),
    (dict(target=2, source=5, heads=1.5), TypeError, "heads must be a positive integer"),
    (dict(target=2, source=5, dtype="int8"), ValueError, "dtype must be a floating dtype"),
])
def test_bad_input_is_named(kwargs, exc, text):
    with pytest.raises(exc, match=text):
        AttentionCost(**kwargs)


def test_caching_the_encoders_keys_and_values():
    from attention_lab.analysis import cache_cost

    c = cache_cost(steps=64, source=512, d_model=512, d_k=64, heads=8)
    assert c.projection == 8 * 512 * 512 * (64 + 64)
    assert c.attention == 8 * 512 * (64 + 64) == multiply_adds(1, 512, 64, 64, heads=8)
    assert c.without_cache == 64 * (c.projection + c.attention)
    assert c.with_cache == c.projection + 64 * c.attention
    assert c.saved == 63 * c.projection  # every step after the first projects nothing
    # T steps of one query attend as much as T queries at once
    assert 64 * c.attention == AttentionCost(target=64, source=512, heads=8, d_k=64).multiply_adds
    assert c.cache_elements == 8 * 512 * 128 and c.cache_bytes == 4 * c.cache_elements
    assert round(c.ratio, 1) == 57.0
    text = str(c)
    assert "57.0x less" in text and "2.0 MiB in float32" in text and "268,435,456" in text
    once = cache_cost(steps=1, source=100, d_model=32, d_k=8, d_v=4, dtype="float16")
    assert once.ratio == 1.0 and once.saved == 0 and once.cache_bytes == 100 * 12 * 2
    assert "1 step without a cache " in str(once) and "(the same: one step)" in str(once)
    assert cache_cost(steps=8, source=200, d_model=32).projection == 2 * cache_cost(
        steps=8, source=100, d_model=32).projection


@pytest.mark.parametrize("kwargs, exc, text", [
    (dict(steps=0, source=5, d_model=8), ValueError, "steps must be >= 1"),
    (dict(steps=2, source=5, d_model=8.0), TypeError, "d_model must be a positive integer"),
    (dict(steps=2, source=5, d_model=8, dtype="int8"), ValueError, "dtype must be a floating"),
])
def test_bad_cache_cost_input_is_named(kwargs, exc, text):
    from attention_lab.analysis import cache_cost

    with pytest.raises(exc, match=text):
        cache_cost(**kwargs)


def test_huge_configurations_are_counted_exactly():
    # 10^20 scores do not fit in an int64: the count must not wrap round (to a negative number)
    from attention_lab.analysis.cost import score_matrix_elements

    c = AttentionCost(batch=10**4, target=10**6, source=10**6, heads=10**3)
    assert c.elements == 10**19 and c.bytes == 4 * 10**19
    assert score_matrix_elements(10**20, 1, 1) == 10**20


def test_numpy_and_torch_dtypes_are_understood():
    import numpy as np
    import torch

    from attention_lab.analysis import cache_cost

    for dtype in (np.float16, np.dtype("float16"), torch.float16, "float16"):
        assert AttentionCost(target=4, source=4, dtype=dtype).bytes == 32
    assert cache_cost(steps=2, source=4, d_model=8, dtype=np.float64).dtype == "float64"


def test_human_bytes_rounds_into_the_next_unit():
    from attention_lab.analysis.cost import human_bytes

    assert [human_bytes(n) for n in (1023, 1024, 1048575, 2 ** 30 - 1, 5 * 2 ** 40)] == [
        "1,023 B", "1.0 KiB", "1.0 MiB", "1.0 GiB", "5,120.0 GiB"]
