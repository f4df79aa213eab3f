"""Notebooks 01-03: the chapter's printed numbers in the stored outputs (to the digit), its six
figures with their descriptions, the explorers, and the 14 misconceptions each demonstrated once
and listed correctly in every notebook's table."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from attention_lab import softmax
from attention_lab.examples import CHAPTER_TEMPERATURES, running_example
from attention_lab.nbtools import pair_problems

NB = Path(__file__).resolve().parent.parent / "notebooks"
LEVELS = {"01": "01_intuition", "02": "02_mechanics", "03": "03_maths_and_code"}


def outputs(name: str, mime: str = "text/plain") -> list[str]:
    nb = nbformat.read(NB / f"{name}.ipynb", as_version=4)
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                found.append(out["text"])
            elif mime in out.get("data", {}):
                found.append(out["data"][mime])
    return found


def stored_text(name: str) -> str:
    return "\n".join(outputs(name))


def _temperature_lines():
    ex = running_example()
    e = ex.keys @ ex.query
    return [f"temperature {t}: weights {np.round(softmax(e, temperature=t), 3)}"
            for t in CHAPTER_TEMPERATURES]


#: every number the chapter prints for Levels 1-3, as the chapter prints it
CHAPTER_PRINTS = {
    "02_mechanics": [
        "dot-product scores: [-0.1   0.98  0.39 -0.29  0.46]",
        "bilinear scores:    [ 0.024  1.018  0.394 -0.352  0.4  ]",
        "weights: [0.123 0.361 0.2   0.101 0.215] sum: 1.0",
        "context: [0.511 0.398 0.417]",
        "masked weights: [0.179 0.528 0.293 0.    0.   ]",
        "masked context: [0.607 0.475 0.176]",
        *_temperature_lines(),
    ],
    "03_maths_and_code": [
        "scores:   (2, 3, 5)",
        "weights:  (2, 3, 5) row sums: 1.0",
        "contexts: (2, 3, 6)",
        "masked weights: [0.179 0.528 0.293 0.    0.   ]",
        "masked context: [0.607 0.475 0.176]",
        "masked mass: 0.0",
        "additive score shape: (5,)",
        "additive weights:     [0.012 0.073 0.498 0.26  0.157]",
    ],
}


@pytest.mark.parametrize("name,line", [(n, line) for n, lines in CHAPTER_PRINTS.items()
                                       for line in lines])
def test_chapter_numbers_are_in_the_stored_outputs(name, line):
    assert line in stored_text(name), f"{name}.ipynb has no stored output with {line!r}"


def test_temperature_lines_hold_the_expected_weights():
    assert _temperature_lines()[0] == "temperature 0.5: weights [0.062 0.539 0.166 0.043 0.191]"
    assert _temperature_lines()[2] == "temperature 2.0: weights [0.161 0.276 0.205 0.146 0.213]"


#: the chapter's six figures: notebook, a phrase of the generated description
FIGURES = [
    ("01_intuition", "five source boxes, each with a key and a value"),
    ("01_intuition", "a heatmap with one row per query"),
    ("02_mechanics", "bar charts of the weights over 5 source positions at temperatures 0.5, 1, 2"),
    ("02_mechanics", "two bar charts over 5 positions"),
    ("02_mechanics", "a line of 10 source positions drawn twice"),
    ("03_maths_and_code", "value vectors as the corners of a dashed triangle"),
]


@pytest.mark.parametrize("name,phrase", FIGURES)
def test_chapter_figures_are_stored_as_png_with_a_description(name, phrase):
    nb = nbformat.read(NB / f"{name}.ipynb", as_version=4)
    hits = [out for cell in nb.cells for out in cell.get("outputs", [])
            if phrase in str(out.get("data", {}).get("text/plain", ""))]
    assert len(hits) == 1
    assert hits[0]["data"]["image/png"], "the figure has no PNG"


@pytest.mark.parametrize("name,explorers", [
    ("01_intuition", ["QueryExplorer"]),
    ("02_mechanics", ["ScoreExplorer", "TemperatureExplorer", "MaskExplorer", "WindowExplorer"]),
    ("03_maths_and_code", ["AxisExplorer", "PrecisionExplorer", "HullExplorer"]),
])
def test_explorers_are_displayed_with_a_widget_view_and_a_snapshot(name, explorers):
    nb = nbformat.read(NB / f"{name}.ipynb", as_version=4)
    shown = [out["data"] for cell in nb.cells for out in cell.get("outputs", [])
             if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    names = [d["text/plain"].split(":")[0] for d in shown]
    assert names == explorers
    assert all(d.get("image/png") for d in shown)


def test_pairs_are_in_sync():
    for stem in LEVELS.values():
        assert pair_problems(NB / f"{stem}.ipynb", NB / f"{stem}.py") == []


def _sections_and_misconceptions(stem):
    """{misconception number: section number} of the demonstrating code cells of one notebook."""
    text = (NB / f"{stem}.py").read_text()
    found, section = {}, None
    for cell in re.split(r"^# %%", text, flags=re.M):
        m = re.search(r"^# ## (\d+)\.", cell, flags=re.M)
        if m:
            section = int(m.group(1))
        if not cell.startswith(" [markdown]"):
            for n in re.findall(r"^# Misconception (\d+):", cell.lstrip("\n"), flags=re.M):
                found.setdefault(int(n), []).append(section)
    return found


def test_each_misconception_is_demonstrated_by_exactly_one_code_cell():
    where = {}
    for num, stem in LEVELS.items():
        for n, sections in _sections_and_misconceptions(stem).items():
            assert n not in where and len(sections) == 1, f"misconception {n} demonstrated twice"
            where[n] = (num, sections[0])
    assert sorted(where) == list(range(1, 15))


@pytest.mark.parametrize("num", list(LEVELS))
def test_each_notebook_ends_with_a_correct_misconception_table(num):
    where = {}
    for other, stem in LEVELS.items():
        for n, sections in _sections_and_misconceptions(stem).items():
            where[n] = (other, sections[0])
    text = (NB / f"{LEVELS[num]}.py").read_text()
    rows = re.findall(r"^# \| (\d+) \| [^|]+ \| (.+) \|$", text, flags=re.M)
    assert [int(n) for n, _ in rows] == list(range(1, 15))
    for n, place in rows:
        nb_num, section = where[int(n)]
        if nb_num == num:
            assert place.startswith(f"**this notebook**, section {section}, cell "
                                    f"\"Misconception {n}\""), place
        else:
            assert place.startswith(f"notebook {nb_num}, section {section}"), place
