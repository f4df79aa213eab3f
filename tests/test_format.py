"""The shared small helpers: non-finite numbers as words, argparse's whole numbers."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from attention_lab._cli import non_negative_int, positive_int, whole_number
from attention_lab._format import fixed, non_finite_word
from attention_lab.plots import fmt_vec


def test_non_finite_numbers_are_words_everywhere():
    assert [non_finite_word(v) for v in (np.nan, np.inf, -np.inf, 0.5)] == [
        "nan", "inf", "-inf", None]
    assert [fixed(v, 2) for v in (np.nan, -np.inf, 0.125, np.float32(2))] == [
        "nan", "-inf", "0.12", "2.00"]
    assert fmt_vec([np.nan, np.inf, -np.inf, 0.1234, -0.0]) == (
        "[nan, inf, -inf, 0.123, 0.000]")


def test_whole_numbers_say_what_they_expected():
    assert non_negative_int("0") == 0 and positive_int("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=r"whole number >= 1, got 0"):
        positive_int("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"whole number >= 0, got 'x'"):
        non_negative_int("x")
    assert whole_number(5)("5") == 5
