"""Nothing gives an answer before its question, in every level notebook (01-04).

A predict cell is a question cell (``# Predict: ...`` and ``name = ...``) and an answer cell (a
``reveal(name, ...)`` block, :mod:`attention_lab.predict`). Each reveal knows its answer: the
notebooks are run in this process (``_lessons.reveals``) and every answer is looked for, in the
forms a reader would recognise, in what a student sees before committing to a prediction:

- the *lead-in*: the markdown right above the question and the question's own comment, and the
  stored outputs between the question and its answer cell (every answer);
- every stored output above the answer cell (answers distinctive enough to search a whole
  notebook for: fractions such as 0.684 and tuples such as shapes);
- the answer cell's own stored output, which must be the prompt and nothing else.

Headings in force over a question name it, not its answer: no misconception label (a
misconception names what is false) and no negated claim ("... does not supply order").
"""

from __future__ import annotations

import numbers
import re

import numpy as np
import pytest

import _lessons as L
from attention_lab import predict

STEMS = L.LEVEL_STEMS
NEGATION = re.compile(r"\b(not|never|no|cannot|none)\b|n't\b", flags=re.I)
#: numbers that count things in a text without being an answer: "Level 2", "section 3", "## 4."
NUMBERING = re.compile(r"\b(Level|Chapter|Misconception|section|exercise|notebook|notebooks|"
                       r"levels|Figure)\s+\d+(-\d+)?\b|^#+ \d+\.|\$[^$]*\$|\b\d+-\d+\b",
                       flags=re.M | re.I)


def _number_forms(x: float) -> list[str]:
    if not np.isfinite(x):
        return ["nan", "np.nan"] if np.isnan(x) else (
            ["-inf", "-np.inf", "-∞"] if x < 0 else ["inf", "np.inf", "∞"])
    if float(x).is_integer():
        return [str(int(x))]
    return sorted({predict._show(x), f"{x:.2f}".rstrip("0").rstrip(".")})


def answer_forms(answer) -> list[str]:
    """How the answer would be written in prose or a printout (none for yes/no answers)."""
    if isinstance(answer, (bool, np.bool_)):
        return []
    if isinstance(answer, numbers.Real):
        return _number_forms(float(answer))
    if isinstance(answer, str):
        return [answer]
    items = [predict._show(v) for v in answer]
    return [f"({', '.join(items)})", f"({','.join(items)})", " x ".join(items),
            " × ".join(items)]


def distinctive(answer) -> bool:
    """Searched for in a whole notebook: a finite fraction or a tuple of numbers."""
    if isinstance(answer, (bool, np.bool_, str)):
        return False
    if isinstance(answer, numbers.Real):
        return bool(np.isfinite(answer)) and not float(answer).is_integer()
    return True


def contains(text: str, form: str) -> bool:
    text = NUMBERING.sub(" ", text) if re.fullmatch(r"-?\d+", form) else text
    return re.search(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)", text, flags=re.I) is not None


def lead_in(stem: str, q: L.Question) -> list[str]:
    """The prose that sets a question up: the markdown right above it and the question's own
    comment (less the quoted choices it offers)."""
    cells = L.notebook(stem).cells
    above = q.index
    while above > 0 and cells[above - 1].cell_type == "markdown":
        above -= 1
    asked = re.sub(r'"[^"\n]*"', '""', q.text)  # the words a question offers are no answer
    return [c.source for c in cells[above:q.index]] + [asked]


def headings_in_force(stem: str, index: int) -> list[str]:
    levels: dict[int, str] = {}
    for c in L.notebook(stem).cells[:index]:
        if c.cell_type != "markdown":
            continue
        for m in re.finditer(r"^(#+) (.+)$", c.source, flags=re.M):
            depth = len(m.group(1))
            levels = {d: t for d, t in levels.items() if d < depth}
            levels[depth] = m.group(2)
    return list(levels.values())


def leaks(stem: str, q: L.Question, answer) -> list[str]:
    """Where the answer of ``q`` shows before the student commits to a prediction."""
    cells = L.notebook(stem).cells
    forms = answer_forms(answer)
    found = [f"the prose above says {form!r}" for form in forms
             for text in lead_in(stem, q) if contains(text, form)]
    shown = cells[:q.answer_index] if distinctive(answer) else cells[q.index:q.answer_index]
    found += [f"a stored output above says {form!r}" for form in forms
              for c in shown for text in L.text_outputs(c) if contains(text, form)]
    return sorted(set(found))



@pytest.mark.parametrize("stem", STEMS)
def test_every_question_has_an_answer_cell_that_stores_only_the_prompt(stem):
    cells = L.notebook(stem).cells
    for q in L.questions(stem):
        assert q.answer_index is not None, f"{stem}: {q.name} is never revealed"
        assert not cells[q.index].get("outputs"), f"{stem}: {q.name}'s question cell has an output"
        stored = cells[q.answer_index].get("outputs", [])
        assert [(o.get("output_type"), o.get("text")) for o in stored] == [
            ("stream", predict.PROMPT + "\n")], f"{stem}: {q.name}'s answer cell stores {stored}"


@pytest.mark.parametrize("stem", STEMS)
def test_headings_and_prose_over_a_question_name_no_answer(stem):
    for q in L.questions(stem):
        prose = lead_in(stem, q)
        labelled = [m.group(0) for p in prose for m in re.finditer(r"Misconception \d+", p)]
        assert not labelled, f"{stem}: a misconception is named above {q.name}: {labelled}"
        claims = [h for h in headings_in_force(stem, q.index) if NEGATION.search(h)]
        assert not claims, f"{stem}: a heading over {q.name} states a claim: {claims}"


@pytest.mark.parametrize("stem", STEMS)
def test_no_stored_output_or_prose_before_a_question_holds_its_answer(stem):
    reveals = L.reveals(stem)
    for q in L.questions(stem):
        r = reveals[q.answer_index]
        assert not (found := leaks(stem, q, r.answer)), (stem, q.name, r.answer, found)


@pytest.mark.parametrize("stem", STEMS)
def test_every_answer_cell_explains_and_accepts_its_own_answer(stem):
    """Given its own answer as the prediction, each answer cell says right and shows what it
    held back and its explanation; the explanation is not written in the notebook (where it
    would be read before predicting), and every number it quotes (0.xxx) is one the cell
    prints."""
    reveals = L.reveals(stem)
    assert len(reveals) == len(L.questions(stem))
    sources = "\n".join(c.source for c in L.notebook(stem).cells)
    for r in reveals.values():
        answered = predict.Reveal(r.answer, why=r.why, tol=r.tol, choices=r.choices)
        answered.answer, answered.held = r.answer, r.held
        text = answered.text()
        assert text.splitlines()[0].endswith(("right", "right (within " + predict._show(r.tol)
                                              + ")")), text
        assert "Why: " in text and r.held.strip() in text
        assert " ".join(r.why.split()[:8]) not in " ".join(sources.split())
        quoted = set(re.findall(r"\d\.\d{3}", r.why)) - set(re.findall(r"\d\.\d{3}", r.held))
        assert not quoted, f"{stem}: an explanation quotes {quoted}, which its cell does not print"


@pytest.mark.parametrize("stem", STEMS)
def test_the_prompt_leads_to_the_question_even_past_an_explorer(stem):
    """An answer cell under an explorer (01's third_coordinate) must not send the student to
    "the cell above" for the ``...``: that cell is the explorer."""
    cells = L.notebook(stem).cells
    for q in L.questions(stem):
        above = max(j for j in range(q.answer_index) if cells[j].cell_type == "code")
        for line in (predict.PROMPT, predict.verdict("two", 2)):
            assert above == q.index or "the # Predict cell above" in line, (stem, q.name, line)


# --- the test's own machinery, on made-up cells ---------------------------------------------

def test_answer_forms_find_numbers_tuples_and_words_but_not_numbering():
    assert contains("the largest weight falls to 0.54 at", "0.54")
    assert not contains("a weight of 0.545", "0.54")
    assert contains("source 2 is tallest", "2") and not contains("## 2. Softmax", "2")
    assert not contains("Level 2 takes it apart; $2 \\times 3$", "2")
    assert not contains("which source (1-5)?", "5")
    assert contains("shape (2, 3, 5) here", "(2, 3, 5)") and contains("a 5 x 5 matrix", "5 x 5")
    assert contains('its weight goes "down"', "down") and not contains("downward", "down")
    assert answer_forms(True) == [] and "-np.inf" in answer_forms(float("-inf"))
    assert distinctive(0.684) and distinctive((2, 3)) and not distinctive(2)


def test_the_misconceptions_page_answers_no_question():
    """The introductions of notebooks 01-03 send the student to the misconceptions page
    (docs/students/misconceptions.md) before their first question. Where a misconception's cell is
    an answer cell, its row names the experiment as a question, not its outcome ('the row sums
    to 0.684', 'shuffled sources, same context'); and no row holds a notebook's answer. Nor
    does the notebooks page, which lists what each notebook covers."""
    import _docs

    section = _docs.section("students/misconceptions.md", "Misconceptions")
    rows = dict(re.findall(r"^\| (\d+) \| [^|]+ \| (.+) \|$", section, flags=re.M))
    for stem in STEMS:
        reveals = L.reveals(stem)
        for q in L.questions(stem):
            answer = reveals[q.answer_index].answer
            cell = L.notebook(stem).cells[q.answer_index].source
            for n in re.findall(r"^# Misconception (\d+):", cell, flags=re.M):
                assert rows[n].endswith("?)"), f"misconception {n} ({q.name}): {rows[n]}"
            if distinctive(answer):
                assert not [f for f in answer_forms(answer) for row in rows.values()
                            if contains(row, f)], (stem, q.name, answer)
    # and the notebooks page, read before any notebook, names what each covers, not claims
    covers = re.findall(r"^\| `0\d_\w+` \| ([^|]+) \|", _docs.section("students/notebooks.md",
                                                                    "The notebooks"), flags=re.M)
    assert len(covers) == 4 and not [c for c in covers if NEGATION.search(c)], covers
