"""Notebooks 01-03: the chapter's printed numbers in the stored outputs (to the digit), its six
figures with their descriptions, the explorers (shown with their tasks, never driven from code),
the predict-then-run cells, the prose budgets, the corrections of issue 13 (each checked against
the notebook's own stored outputs), and the 14 misconceptions each demonstrated once and listed
correctly in the site's one table (docs/students/misconceptions.md)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

import jupytext

import _docs
import _lessons
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


def revealed_text(stem: str) -> str:
    """What the answer cells print once a prediction is written (held back until then)."""
    return "\n".join(r.held for r in _lessons.reveals(stem).values())


def explanation(stem: str, name: str) -> str:
    """The explanation the answer cell of the question ``name`` shows."""
    q = next(q for q in _lessons.questions(stem) if q.name == name)
    return " ".join(_lessons.reveals(stem)[q.answer_index].why.split())


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
    ("01_intuition", ["GeometryExplorer", "QueryExplorer"]),
    ("02_mechanics", ["ScoreExplorer", "TemperatureExplorer", "MaskExplorer", "WindowExplorer",
                      "LocalPExplorer"]),
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


def test_the_site_has_the_one_correct_misconception_table():
    where = _where()
    section = _docs.section("students/misconceptions.md", "Misconceptions")
    rows = re.findall(r"^\| (\d+) \| [^|]+ \| (.+) \|$", section, flags=re.M)
    assert [int(n) for n, _ in rows] == list(range(1, 15))
    for n, place in rows:
        nb_num, sec = where[int(n)]
        assert place.startswith(f"notebook {nb_num}, section {sec}, cell \"Misconception {n}\""), \
            (n, place)


@pytest.mark.parametrize("stem", LEVELS.values())
def test_each_notebook_points_to_the_table_and_has_none_of_its_own(stem):
    text = prose(stem)
    pointer = "the table *Misconceptions* on the lab's site (`docs/students/misconceptions.md`)"
    assert pointer in " ".join(text.split()) and "README" not in text
    assert (ROOT / "docs" / "students" / "misconceptions.md").is_file()
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
    """The first code cell after the one that installs the lab where it is missing (Colab:
    tests/test_notebooks_colab.py) holds every import."""
    install, imports, *code = [c.source for c in cells(stem) if c.cell_type == "code"]
    assert "find_spec(\"attention_lab\")" in install and "from attention_lab" in imports
    late = [src.splitlines()[0] for src in code
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
    ("01_intuition", 2), ("02_mechanics", 5), ("03_maths_and_code", 3)])
def test_explorers_show_their_first_task_in_the_stored_output(name, explorers):
    nb = nbformat.read(NB / f"{name}.ipynb", as_version=4)
    views = [out for cell in nb.cells for out in cell.get("outputs", [])
             if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    assert len(views) == explorers


# --- predict, then run (what they may show: tests/test_notebooks_spoilers.py) -----------------

@pytest.mark.parametrize("stem", LEVELS.values())
def test_six_or_more_predictions_each_revealed_after_the_question(stem):
    found = _lessons.questions(stem)
    assert len(found) >= 6, f"{stem}: only {len(found)} predict-then-run cells"
    cs = _lessons.notebook(stem).cells
    for q in found:
        assert q.answer_index is not None, f"{stem}: the prediction {q.name} is never revealed"
        between = "\n".join(cs[k].source for k in range(q.index + 1, q.answer_index))
        assert not re.search(rf"\b{q.name}\b", between), f"{stem}: {q.name} is used before its answer"


# --- the corrections of issue 13, against the notebooks' own outputs ---------------------------

def test_03_the_finite_fill_is_not_called_safe_and_its_all_masked_row_is_shown():
    text = prose("03_maths_and_code")
    assert "safe finite fill" not in text and "safe fill" not in stored_text("03_maths_and_code")
    assert "does not make an all-masked row safe" in explanation("03_maths_and_code",
                                                                 "padding_weight")
    line = next(x for x in revealed_text("03_maths_and_code").splitlines()
                if "finfo.min, all masked" in x)
    weights = [float(v) for v in re.findall(r"\d\.\d+|\d", line.split(":")[1])]
    assert len(weights) == 5 and all(abs(w - 0.2) < 1e-3 for w in weights)  # uniform on padding


def test_03_the_hull_check_is_necessary_not_sufficient_with_its_own_count():
    text = prose("03_maths_and_code")
    why = explanation("03_maths_and_code", "wrong_pass")
    assert "strong" not in text + why and "necessary, not sufficient" in why
    assert "a necessary check, not a sufficient one" in text
    line = next(x for x in revealed_text("03_maths_and_code").splitlines()
                if x.startswith("batch axis: inside"))
    passing = line.count("True")
    assert passing > 0, "the claim needs wrong contexts that pass"
    assert why.startswith(f"{passing} of the 6.")


def test_02_dot_and_bilinear_rank_alike_only_additive_differs():
    out = dict(re.findall(r"^ranking, (\w+)\s*: (.+)$", revealed_text("02_mechanics"), flags=re.M))
    assert out["dot"] == out["bilinear"] != out["additive"]
    text = " ".join(prose("02_mechanics").split())
    assert "rank the same keys differently" not in text
    assert "Dot and bilinear scores rank the running example's keys the same way" in text


def test_02_the_window_loses_nothing_the_task_needs_when_it_holds_the_target():
    """The claim and the example agree: what the task needs is the target's value, and the
    window's context is closer to it than global attention's when the target is inside the
    window (6), farther when it is outside (8)."""
    out = revealed_text("02_mechanics")
    rows = re.findall(r"^target (\d+) \((inside|outside) the window\): weight on the target: "
                      r"global ([\d.]+), local ([\d.]+)\n    context's distance from the target's "
                      r"value: global ([\d.]+), local ([\d.]+)$", out, flags=re.M)
    assert [r[:2] for r in rows] == [("6", "inside"), ("8", "outside")]
    (_, _, g6, l6, dg6, dl6), (_, _, g8, l8, dg8, dl8) = rows
    assert (g6, l6) == ("0.545", "0.784") and float(l8) == 0
    assert float(dl6) < float(dg6) and float(dl8) > float(dg8)
    text = " ".join(prose("02_mechanics").split())
    assert all(m.group(0).endswith("the task needs")
               for m in re.finditer(r"loses nothing[a-z ]*", text)), "an unqualified 'loses nothing'"


def test_02_the_window_centre_counts_from_1_like_the_figure():
    src = (NB / "02_mechanics.py").read_text()
    assert "p_centre, D = 5.5, 1.5" in src and "0-based" not in src
    assert "local window, eligible positions: [4 5 6 7]" in stored_text("02_mechanics")
    assert "positions 4-7" in stored_text("02_mechanics")  # the figure's description


def _int_rows(block: str) -> list[list[int]]:
    return [[int(v) for v in row.split()] for row in re.findall(r"\[([\d ]+)\]", block)]


def test_02_each_mask_alone_breaks_what_the_other_guards_on_a_real_query():
    """Padding alone lets a query see its future; causal alone lets a *real* query (not a padding
    position, whose output is discarded anyway) see padding, as it does with left padding."""
    out = stored_text("02_mechanics")
    both = _int_rows(out.split("padding AND causal (rows: queries):", 1)[1].split("\n\n")[0])[:4]
    padding = [j for j in range(4) if not any(row[j] for row in both)]  # sequence 2's padding
    shown = revealed_text("02_mechanics")
    m = re.search(r"causal only, +sequence 2, position (\d) \(its first real token\): \[([\d. ]+)\] "
                  r"\(uses padding\)", shown)
    position, weights = int(m.group(1)), [float(v) for v in m.group(2).split()]
    assert position - 1 not in padding, "the causal-only case is a padding query"
    assert sum(weights[j] for j in padding) > 0.5
    m = re.search(r"padding only, sequence 1, position 1: \[([\d. ]+)\] \(sees the future\)", shown)
    assert sum(float(v) for v in m.group(1).split()[1:]) > 0.5
    assert "causal, lower-right" in out and "causal, upper-left" in out
    text = " ".join(prose("02_mechanics").split())
    for phrase in ("*self*-attention", "needs padding only", "alignment", "convention",
                   "padded on the *left*"):
        assert phrase in text


def test_02_says_which_pytorch_mask_means_what_and_shows_the_conversion():
    text = " ".join(prose("02_mechanics").split())
    assert "PyTorch's convention" not in text
    assert "`attn_mask` in PyTorch's `scaled_dot_product_attention`" in text
    assert "`key_padding_mask` is the opposite (`True` = ignore)" in text
    assert "key_padding_mask for nn.MultiheadAttention (True = ignore): [False False False  True  " \
           "True]" in stored_text("02_mechanics")


def test_02_sets_up_local_m_and_the_causal_alignment_before_using_them():
    cs = cells("02_mechanics")
    for name in ("local_m_mask(", 'align="lower_right"'):
        first = next(i for i, c in enumerate(cs) if c.cell_type == "code" and name in c.source
                     and not c.source.startswith("import"))
        before = " ".join(c.source for c in cs[:first] if c.cell_type == "markdown")
        assert name.rstrip("(") in before, f"{name} is used before the prose introduces it"
    alignment = next(c.source for c in cs if "needs an *alignment*" in c.source)
    assert "cache" in alignment and "`causal_mask(3, 5)`" in alignment


@pytest.mark.parametrize("stem,name,explorer,task", [
    # the window explorer's first task: give the target more weight than global attention does
    ("02_mechanics", "local_target", "WindowExplorer", "more weight than global attention"),
    # the axis explorer's first task: an axis that keeps every shape but moves a context
    ("03_maths_and_code", "same_context_shape", "AxisExplorer", "keeps every shape"),
    # the geometry explorer's third task: a longer query turns the weights nearly hard
    ("01_intuition", "best_changes", "GeometryExplorer", "stretch the query"),
    # the local-p explorer's title shows what the weights sum to
    ("02_mechanics", "local_p_sums_to_1", "LocalPExplorer", "Gaussian take more than half"),
])
def test_an_explorer_whose_task_answers_a_question_comes_after_that_question(stem, name,
                                                                            explorer, task):
    from attention_lab import widgets

    assert any(task in t.goal for t in getattr(widgets, explorer).TASKS)  # it does answer it
    q = next(q for q in _lessons.questions(stem) if q.name == name)
    shown = [i for i, c in enumerate(_lessons.notebook(stem).cells)
             if f"widgets.{explorer}()" in c.source]
    assert shown and all(i > q.answer_index for i in shown)


def test_03_says_from_which_pytorch_version_sdpa_returns_zeros():
    text = " ".join(prose("03_maths_and_code").split())
    assert ("returns zeros for such a row from PyTorch 2.5 on (earlier versions return NaN)"
            in text)


def test_03_the_all_masked_row_is_described_the_same_way_everywhere():
    """Not "NaN unless a policy says otherwise" next to the uniform weights of a finite fill: the
    row is 0/0 with -inf, uniform with a finite fill, and zero only by a declared policy."""
    src = (NB / "03_maths_and_code.py").read_text()
    assert "is NaN unless a policy says otherwise" not in src
    section = src.split("### What should a row with no eligible key return?")[1]
    prose_13 = " ".join(section.split("# %%\n", 1)[0].replace("#", " ").split())
    assert "with $-\\infty$ the row is $0/0$, with a finite fill it is uniform" in prose_13
    assert "# Misconception 13: an all-masked row is zero only if a policy says so" in src


def test_01_the_later_query_asks_about_its_near_tie_not_a_winner():
    """The later query's two largest weights differ by less than 0.01: a fair prediction cannot
    tell them apart, so the question asks for the pair."""
    q = next(q for q in _lessons.questions("01_intuition") if q.name == "later_pair")
    assert "almost equally" in q.text and "Which two?" in q.text
    line = next(x for x in revealed_text("01_intuition").splitlines()
                if x.startswith("later query weights"))
    w = sorted((float(v) for v in re.findall(r"\d\.\d+", line)), reverse=True)
    assert w[0] - w[1] < 0.01 < w[1] - w[2]
    assert not any(q.name == "later_best" for q in _lessons.questions("01_intuition"))


def test_shape_questions_use_sizes_that_differ():
    """A predicted shape whose sizes are equal (5, 5) cannot show which size is which."""
    for stem in LEVELS.values():
        for r in _lessons.reveals(stem).values():
            if isinstance(r.answer, tuple):
                assert len(set(r.answer)) == len(r.answer), (stem, r.answer)


def test_01_counts_the_steps_of_the_path_and_explains_the_jacobian():
    text = " ".join(prose("01_intuition").split())
    src = (NB / "01_intuition.py").read_text()
    assert "np.linspace(0, 1, 5)" in src and "in four equal steps: five queries" in text
    assert "five steps" not in text
    assert ("the *Jacobian*) whose entry in row $i$, column $j$ says how fast context coordinate "
            "$i$ changes when query coordinate $j$ moves a little") in text


def test_01_no_code_hands_over_a_query_that_solves_the_explorer_task():
    """The query explorer's first task asks for a query giving source 4 half of the weight; no
    query written out in the notebook's code does that (the task is the student's)."""
    from attention_lab import attend
    from attention_lab.examples import running_example

    ex = running_example()
    code = "\n".join(c.source for c in cells("01_intuition") if c.cell_type == "code")
    for literal in re.findall(r"np\.array\(\[([-\d., ]+)\]\)", code):
        q = np.array([float(v) for v in literal.split(",")])
        if q.shape == (3,):
            assert attend(q, ex.keys, ex.values).weights[3] < 0.5, literal


def test_01_uses_no_mask_before_masks_are_taught():
    assert "mask" not in "\n".join(c.source for c in cells("01_intuition") if c.cell_type == "code")


def test_01_has_no_widget_api_lesson():
    src = (NB / "01_intuition.py").read_text()
    for api in (".controls[", ".reset()", ".state", ".set("):
        assert api not in src


def test_01_shows_differentiable_retrieval():
    out = revealed_text("01_intuition")
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


def test_the_notebooks_page_lists_every_explorer_of_each_notebook():
    # it listed 01's query explorer but not its geometry explorer, and not 02's local-p
    from attention_lab import widgets

    section = _docs.section("students/notebooks.md", "The notebooks")
    for stem in (*LEVELS.values(), "04_research"):
        row = re.search(rf"^\| `{stem}` \|.*\| ([^|]+) \|$", section, flags=re.M).group(1)
        listed = {name.strip() for name in row.split(",")}
        source = (NB / f"{stem}.py").read_text()
        used = {name for name, cls in widgets.EXPLORERS.items()
                if f"widgets.{cls.__name__}(" in source}
        used |= {"model"} if "ModelExplorer(model)" in source else set()
        assert listed == used, (stem, listed, used)


def test_02_says_its_local_p_centre_is_not_the_papers():
    """Luong et al. predict the centre as ``S * sigmoid(z)``, in [0, S]; the lab's is
    ``1 + (S - 1) * sigmoid(z)`` (positions 1..S), which the prose gave as Luong's: at the
    notebook's z = 1 and S = 10 the two are 7.58 (printed) and 7.31."""
    from attention_lab.local import centre_from_logit

    S, z = 10, 1.0
    ours, papers = 1 + float(centre_from_logit(z, S)), S / (1 + np.exp(-z))
    assert f"centre p_t = {ours:.2f};" in revealed_text("02_mechanics")
    assert round(ours, 2) != round(papers, 2)
    text = " ".join(prose("02_mechanics").split())
    assert "the paper's centre is $p_t = S\\,\\sigma(z_t)$" in text
    assert "Luong's *local-p* lets the decoder state $h_t$ predict the centre, $p_t = 1" not in text


def test_01_says_its_two_query_heatmap_is_computed_where_the_chapters_is_made_up():
    """The chapter's two-query figure draws made-up rows (its first on sources 2 and 3); the
    notebook's first row is the chapter's query, whose second-largest weight is on source 5, so
    a reader holding the chapter sees other numbers: the prose says why."""
    ex = running_example()
    from attention_lab import attend

    weights = attend(ex.query, ex.keys, ex.values).weights
    top_two = sorted(int(i) + 1 for i in np.argsort(-weights)[:2])
    assert top_two != [2, 3]
    text = " ".join(prose("01_intuition").split())
    assert "The chapter's figure draws two made-up rows" in text


def test_prose_names_the_widths_as_the_chapter_does():
    """The chapter writes the key and value widths D_k and D_v, and so does every notebook's
    prose; 02 wrote the Transformer scale as 1/sqrt(d_k)."""
    texts = {stem: prose(stem) for stem in (*LEVELS.values(), "04_research")}
    assert all("D_k" in texts[s] for s in ("03_maths_and_code", "04_research"))
    other = {s: m.group(0) for s, t in texts.items()
             if (m := re.search(r".{0,40}\bd_[kv]\b", t))}
    assert not other, other
