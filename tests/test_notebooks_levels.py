"""Notebooks 01-03: the chapter's printed numbers in the stored outputs (to the digit), its six
figures with their descriptions, the explorers (shown with their tasks, never driven from code),
the predict-then-run cells, the prose budgets, the corrections of issue 13 (each checked against
the notebook's own stored outputs), and the 14 misconceptions each demonstrated once and listed
correctly in the README's one table."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

import jupytext

from attention_lab import softmax
from attention_lab.examples import CHAPTER_TEMPERATURES, running_example
from attention_lab.nbtools import pair_problems

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "notebooks"
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


def cells(stem: str):
    """The notebook's cells, from its text (py:percent) file."""
    return jupytext.read(NB / f"{stem}.py").cells


def prose(stem: str) -> str:
    return "\n".join(c.source for c in cells(stem) if c.cell_type == "markdown")


def output_lines(stem: str) -> list[str]:
    return stored_text(stem).splitlines()


# --- the misconceptions: demonstrated once each, listed in the README's one table ---------------

def _sections_and_misconceptions(stem):
    """{misconception number: [section number]} of the demonstrating code cells of one notebook."""
    found, section = {}, None
    for cell in cells(stem):
        m = re.search(r"^## (\d+)\.", cell.source, flags=re.M)
        if cell.cell_type == "markdown" and m:
            section = int(m.group(1))
        if cell.cell_type == "code":
            for n in re.findall(r"^# Misconception (\d+):", cell.source, flags=re.M):
                found.setdefault(int(n), []).append(section)
    return found


def _where():
    where = {}
    for num, stem in LEVELS.items():
        for n, sections in _sections_and_misconceptions(stem).items():
            assert n not in where and len(sections) == 1, f"misconception {n} demonstrated twice"
            where[n] = (num, sections[0])
    return where


def test_each_misconception_is_demonstrated_by_exactly_one_code_cell():
    assert sorted(_where()) == list(range(1, 15))


def test_the_readme_has_the_one_correct_misconception_table():
    where = _where()
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Misconceptions", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| [^|]+ \| (.+) \|$", section, flags=re.M)
    assert [int(n) for n, _ in rows] == list(range(1, 15))
    for n, place in rows:
        nb_num, sec = where[int(n)]
        assert place.startswith(f"notebook {nb_num}, section {sec}, cell \"Misconception {n}\""), \
            (n, place)


@pytest.mark.parametrize("stem", LEVELS.values())
def test_each_notebook_points_to_the_table_and_has_none_of_its_own(stem):
    text = prose(stem)
    assert "README's table *Misconceptions*" in " ".join(text.split())
    assert not re.search(r"^\| \d+ \| ", text, flags=re.M), "a misconception table came back"


# --- shorter: prose budgets, no widget API lesson, imports at the top -------------------------

BUDGETS = {"01_intuition": 1000, "02_mechanics": 1500, "03_maths_and_code": 1400}


def words(stem: str) -> int:
    return sum(len(re.findall(r"\S+", c.source)) for c in cells(stem) if c.cell_type == "markdown")


@pytest.mark.parametrize("stem,budget", BUDGETS.items())
def test_prose_stays_within_its_word_budget(stem, budget):
    assert words(stem) <= budget, f"{stem}: {words(stem)} words of markdown, budget {budget}"


def test_word_count_counts_markdown_only():
    assert 500 < words("01_intuition") and words("01_intuition") < len(
        (NB / "01_intuition.py").read_text().split())


@pytest.mark.parametrize("stem", LEVELS.values())
def test_imports_stay_in_the_first_code_cell(stem):
    code = [c.source for c in cells(stem) if c.cell_type == "code"]
    late = [src.splitlines()[0] for src in code[1:]
            if re.search(r"^\s*(import |from \S+ import )", src, flags=re.M)]
    assert not late, f"{stem}: imports after the first code cell: {late}"


# --- explorers: shown with their tasks, never driven from code -------------------------------

@pytest.mark.parametrize("stem", LEVELS.values())
def test_explorers_are_never_driven_from_code(stem):
    """An explorer is made and displayed; no cell sets, reads or resets it (the student moves it
    first; demonstrations compute with the core)."""
    text = (NB / f"{stem}.py").read_text()
    names = re.findall(r"^(\w+) = widgets\.\w+Explorer\(\)$", text, flags=re.M)
    assert names
    for name in names:
        uses = re.findall(rf"\b{name}\b(.?)", text)
        assert uses == ["", ""] or all(u in ("", " ", "\n") for u in uses), (name, uses)
        assert not re.search(rf"\b{name}\.", text), f"{name} is driven from code"


@pytest.mark.parametrize("name,explorers", [
    ("01_intuition", 1), ("02_mechanics", 4), ("03_maths_and_code", 3)])
def test_explorers_show_their_first_task_in_the_stored_output(name, explorers):
    nb = nbformat.read(NB / f"{name}.ipynb", as_version=4)
    views = [out for cell in nb.cells for out in cell.get("outputs", [])
             if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    assert len(views) == explorers


# --- predict, then run ------------------------------------------------------------------------

def predictions(stem: str) -> list[tuple[int, str, str]]:
    """(cell index, variable, question) of each prediction cell: a code cell holding a
    ``# Predict...`` question and only ``name = ...``, whose variable a later cell reveals."""
    cs = cells(stem)
    found = []
    for i, c in enumerate(cs):
        m = re.fullmatch(r"((?:#[^\n]*\n)+)(\w+) = \.\.\.\s*", c.source)
        if c.cell_type == "code" and m and m.group(1).startswith("# Predict"):
            found.append((i, m.group(2), m.group(1)))
    return found


@pytest.mark.parametrize("stem", LEVELS.values())
def test_six_or_more_predictions_each_revealed_after_the_question(stem):
    cs = cells(stem)
    found = predictions(stem)
    assert len(found) >= 6, f"{stem}: only {len(found)} predict-then-run cells"
    nb = nbformat.read(NB / f"{stem}.ipynb", as_version=4)
    code_outputs = {i: c for i, c in enumerate(nb.cells)}
    for i, var, question in found:
        later = [j for j in range(i + 1, len(cs))
                 if cs[j].cell_type == "code" and f"reveal({var}," in cs[j].source]
        assert later, f"{stem}: the prediction {var} is never revealed"
        j = later[0]
        # the question's cell prints nothing: the answer comes only after it
        assert not code_outputs[i].get("outputs"), f"{stem}: {var}'s cell shows an output"
        between = "\n".join(cs[k].source for k in range(i + 1, j))
        assert f"reveal({var}" not in between
        shown = "".join(o.get("text", "") for o in code_outputs[j].get("outputs", []))
        assert "answer: " in shown and "no prediction yet" in shown, (stem, var, shown)


# --- the corrections of issue 13, against the notebooks' own outputs ---------------------------

def test_03_the_finite_fill_is_not_called_safe_and_its_all_masked_row_is_shown():
    text = prose("03_maths_and_code")
    assert "safe finite fill" not in text and "safe fill" not in stored_text("03_maths_and_code")
    assert "does **not** make an\n# all-masked row safe" in (NB / "03_maths_and_code.py").read_text()
    line = next(x for x in output_lines("03_maths_and_code") if "finfo.min, all masked" in x)
    weights = [float(v) for v in re.findall(r"\d\.\d+|\d", line.split(":")[1])]
    assert len(weights) == 5 and all(abs(w - 0.2) < 1e-3 for w in weights)  # uniform on padding


def test_03_the_hull_check_is_necessary_not_sufficient_with_its_own_count():
    text = prose("03_maths_and_code")
    assert "strong" not in text and "**necessary, not sufficient**" in text
    line = next(x for x in output_lines("03_maths_and_code") if x.startswith("batch axis: inside"))
    passing = line.count("True")
    assert passing > 0, "the claim needs wrong contexts that pass"
    assert f"{passing} of the 6 wrong contexts pass it" in " ".join(text.split())


def test_02_dot_and_bilinear_rank_alike_only_additive_differs():
    out = dict(re.findall(r"^ranking, (\w+)\s*: (.+)$", stored_text("02_mechanics"), flags=re.M))
    assert out["dot"] == out["bilinear"] != out["additive"]
    text = " ".join(prose("02_mechanics").split())
    assert "rank the same keys differently" not in text
    assert "Dot and bilinear scores rank the running example's keys the same way" in text


def test_02_the_window_changes_the_context_and_loses_only_nothing_the_task_needs():
    line = next(x for x in output_lines("02_mechanics") if x.startswith("target 6 (inside"))
    assert "global weight 0.545, local weight 0.784" in line
    assert float(line.rsplit("context moves by", 1)[1]) > 0.1
    text = " ".join(prose("02_mechanics").split())
    assert all(m.group(0).endswith("the task needs")
               for m in re.finditer(r"loses nothing[a-z ]*", text)), "an unqualified 'loses nothing'"


def test_02_the_window_centre_counts_from_1_like_the_figure():
    src = (NB / "02_mechanics.py").read_text()
    assert "p_centre, D = 5.5, 1.5" in src and "0-based" not in src
    assert "local window, eligible positions: [4 5 6 7]" in stored_text("02_mechanics")
    assert "positions 4-7" in stored_text("02_mechanics")  # the figure's description


def test_02_causal_masks_in_self_attention_combined_with_padding_and_swapped():
    out = stored_text("02_mechanics")
    assert "padding AND causal" in out and "(sees the future)" in out and "(uses padding)" in out
    assert "causal, lower-right" in out and "causal, upper-left" in out
    text = " ".join(prose("02_mechanics").split())
    for phrase in ("*self*-attention", "needs padding only", "alignment", "convention"):
        assert phrase in text


def test_01_uses_no_mask_before_masks_are_taught():
    assert "mask" not in "\n".join(c.source for c in cells("01_intuition") if c.cell_type == "code")


def test_01_has_no_widget_api_lesson():
    src = (NB / "01_intuition.py").read_text()
    for api in (".controls[", ".reset()", ".state", ".set("):
        assert api not in src


def test_01_shows_differentiable_retrieval():
    out = stored_text("01_intuition")
    assert "hard: every entry of dc/dq is 0: True" in out
    soft = out.split("soft: dc/dq =", 1)[1].split("hard:", 1)[0]
    assert any(abs(float(v)) > 0.01 for v in re.findall(r"-?\d\.\d+", soft))
    assert "lookup" in prose("01_intuition")


def test_03_says_what_sdpa_runs_here():
    """The prose says SDPA runs its plain math implementation for the notebook's small CPU
    tensors (with and without the boolean padding mask): checked with torch's profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    text = " ".join(prose("03_maths_and_code").split())
    assert "fused kernel that production code calls" not in text
    assert 'plain "math" implementation, which is what it runs for these small CPU tensors' in text
    torch.manual_seed(19)
    Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    pad = (torch.arange(5) < torch.tensor([5, 3])[:, None])[:, None, :]
    for dtype in (torch.float32, torch.float64):
        for mask in (None, pad):
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                torch.nn.functional.scaled_dot_product_attention(
                    Q.to(dtype), K.to(dtype), V.to(dtype), attn_mask=mask, scale=1.0)
            ops = {e.key for e in prof.key_averages()}
            assert "aten::_scaled_dot_product_attention_math" in ops, ops


@pytest.mark.parametrize("stem", LEVELS.values())
def test_student_text_counts_from_1(stem):
    """Prose and printed labels count positions from 1; index 0 never names a source."""
    text = prose(stem) + stored_text(stem)
    assert not re.search(r"\b(source|position|query|key) 0\b", text)
    assert "0-based" not in text


def test_one_weight_scale_in_the_prose_and_descriptions():
    for stem in LEVELS.values():
        text = prose(stem) + stored_text(stem)
        assert "darker cells are smaller" not in text and "darker = smaller" not in text
    assert "darker cells are larger weights" in stored_text("01_intuition")
    assert "darker = larger" in prose("01_intuition")
