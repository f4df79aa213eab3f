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
    (dict(target=2, source=5, dtype="int8"), ValueError, "dtype must be one of"),
])
def test_bad_input_is_named(kwargs, exc, text):
    with pytest.raises(exc, match=text):
        AttentionCost(**kwargs)
