"""Notebook 04's result figures (``attention_lab/toy/figures.py``) say what they draw in words:
each returns a StaticFigure whose description (the output's text/plain, the site's alt text) is
made from the numbers it is given, and a timing figure's description names no timing."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attention_lab.plots import StaticFigure
from attention_lab.toy import figures


def test_the_alignment_grid_names_each_panel_and_where_its_weight_peaks():
    off = np.array([[0.9, 0.1], [0.8, 0.2]])  # the true alignment is the anti-diagonal
    fig = figures.alignment_grid([
        {"weights": np.fliplr(np.eye(3)), "source": "abc", "output": "cba", "title": "right"},
        {"weights": off, "source": "ab", "output": "aa", "title": "half"}])
    assert isinstance(fig, StaticFigure) and fig.png()[:4] == b"\x89PNG"
    assert "2 heatmaps" in fig.description
    assert "right: source abc, decoded cba, the darkest cell on the orange square in 3 of 3" \
        in fig.description
    assert "half: source ab, decoded aa, the darkest cell on the orange square in 1 of 2" \
        in fig.description


def test_entropy_tau_and_permutation_descriptions_carry_their_numbers():
    table = {"length": np.array([3, 4]), "mean_entropy": np.array([0.5, 0.25]),
             "normalised": np.array([0.455, 0.18])}
    d = figures.entropy_plot(table, title="additive model").description
    assert "lengths 3 to 4" in d and "[0.50, 0.25]" in d and "[1.10, 1.39]" in d
    assert "[0.46, 0.18]" in d
    tab = {"max_weight": np.array([0.9, 0.5, 0.7]), "perm_median": np.array([1.0, 0.6, 0.0]),
           "replace": np.array([0.9, 0.8, 0.7]), "uniform": np.array([0.1, 0.2, 0.3]),
           "tau_loo": np.array([0.5, np.nan, 1.0]), "tau_gradient": np.array([-0.5, 0.0, 0.5])}
    d = figures.permutation_plot(tab).description
    assert "3 decoder steps" in d and "2 steps at 0.5 or above, 1 at 0.05 or below" in d
    assert "top value replaced 0.80; weights permuted 0.60; uniform weights 0.20" in d
    d = figures.tau_plot(tab).description
    assert "leave-one-out (blue): 2 steps, median 0.75, from 0.50 to 1.00" in d
    assert "gradient (orange): 3 steps, median 0.00, from -0.50 to 0.50" in d


def test_the_untimed_streaming_figure_draws_the_memory_alone():
    memory = {"materialised": [2048 * 1024, 8192 * 1024], "streaming": [512 * 1024, 512 * 1024]}
    f = figures.streaming_plot([256, 4096], None, memory)
    (ax,) = f.figure.axes
    assert ax.get_ylabel() == "peak tensor memory (MiB)" and len(ax.get_lines()) == 2
    assert "latency" not in f.description
    assert "streaming 512 K at S = 256, 512 K at S = 4,096." in f.description
    timed = figures.streaming_plot([256, 4096], {"sdpa": [1e-3, 2e-3]}, memory)
    assert [a.get_ylabel() for a in timed.figure.axes] == ["latency (ms)",
                                                          "peak tensor memory (MiB)"]


def test_the_memory_axis_reads_as_plain_numbers():
    """Under a decade either side of 1 MiB, the log axis labelled its ticks 6×10⁰, 4×10⁻¹."""
    memory = {"materialised": [0.13 * 2 ** 20, 8 * 2 ** 20], "streaming": [0.125 * 2 ** 20] * 2}
    fig = figures.streaming_plot([256, 16384], None, memory).figure
    fig.canvas.draw()
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True)
              if t.get_text() and t.get_visible()]
    assert len(labels) >= 3 and all(re.fullmatch(r"\d+(\.\d+)?", t) for t in labels), labels


def test_the_score_scale_description_gives_the_measured_values():
    d = figures.score_scale_plot([4, 16], [3.96, 16.2], [0.42, 0.691], [0.231, 0.24]).description
    assert "[4, 16]" in d and "D_k = 4, 16" in d
    assert "unscaled [0.42, 0.69]" in d and "1/sqrt(D_k) [0.23, 0.24]" in d


def test_the_streaming_description_gives_the_memory_and_no_timing():
    seconds = {"materialised": [0.0777, 0.0999], "streaming": [0.0333, 0.0666]}  # 78 ms, ...
    memory = {"materialised": [2048 * 1024, 8192 * 1024], "streaming": [512 * 1024, 512 * 1024]}
    d = figures.streaming_plot([256, 4096], seconds, memory).description
    assert "materialised 2048 K at S = 256, 8192 K at S = 4,096" in d
    assert "streaming 512 K at S = 256, 512 K at S = 4,096" in d
    for t in (t for ts in seconds.values() for t in ts):  # in ms or s, at any rounding
        for shown in (f"{t * 1e3:.0f}", f"{t * 1e3:.1f}", f"{t:.2f}", f"{t:.3f}"):
            assert shown not in d, f"the description shows the timing {shown}: {d}"


def test_the_bottleneck_figure_draws_every_model_it_is_given():
    # a fifth model (four line styles) was left out of the figure, though its description named it
    curve = {"symbol": np.array([1.0, 0.5]), "exact": np.array([1.0, 0.25])}
    table = {"length": np.array([4, 5]), "n": 10, **{f"model {i}": curve for i in range(5)}}
    f = figures.bottleneck_plot(table)
    for ax in f.figure.axes:
        lines = ax.get_lines()
        assert [line.get_label() for line in lines] == [f"model {i}" for i in range(5)]
        assert len({(line.get_color(), line.get_marker()) for line in lines}) == 5
    assert "model 4: 1.00 at length 4" in f.description


def test_an_alignment_grid_of_no_examples_is_named():
    """alignment_grid([]) failed inside matplotlib: 'Number of rows must be a positive integer'."""
    with pytest.raises(ValueError, match="alignment_grid needs at least one decoded example"):
        figures.alignment_grid([])
