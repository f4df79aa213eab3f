"""A feedback page, as a student sees it in Chromium: opened from disk with the network cut off,
read by its headings, summary table and status words (not colour alone), with the check's
messages, the written answer (as text, never markup), the instructor's score and comment, and
neither a reference output nor one of the grader's hidden cases. The page is made by the grader's
writer from grades judged by the real checks (no kernel needed)."""

from __future__ import annotations

import numpy as np
import pytest

import harness as H

if H.browser_unavailable_reason() and not H.browser_required():
    pytest.skip(H.browser_unavailable_reason(), allow_module_level=True)

from attention_lab.exercises.judging import cases_for  # noqa: E402
from attention_lab.exercises.specs.base import fmt  # noqa: E402
from attention_lab.exercises.registry import EXERCISES  # noqa: E402
from attention_lab.exercises.student import evaluate  # noqa: E402
from attention_lab.grading.assignments import ASSIGNMENTS  # noqa: E402
from attention_lab.grading.feedback import write_feedback  # noqa: E402
from attention_lab.grading.report import ExerciseGrade, Report, SubmissionGrade  # noqa: E402
from attention_lab.grading.runner import Limits  # noqa: E402

SEED = 5
HOSTILE = "<img src=x onerror=alert(1)> exp(c) cancels"


def masked_after_softmax(scores, mask):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) * mask


# computed here: an answer that called the checks' module would earn no mark for that alone
FIXED = {c.args[1].shape for c in cases_for(EXERCISES["2.1"], SEED) if not c.hidden}


def test_masked_softmax(masked_softmax):
    scores, mask = np.array([[0.5, 2.0, -1.0]]), np.array([[True, False, True]])
    w = masked_softmax(scores, mask)
    return bool(np.all(w[~mask] == 0) and np.allclose(w.sum(-1), 1))


test_masked_softmax.__test__ = False  # the student's test of 2.6, not one of pytest's


def fixed_only(query, keys):
    """Right on the public edge cases, wrong on the grader's own random ones."""
    return keys @ query if keys.shape in FIXED else keys @ query + 1


ANSWERS = {"2.1": fixed_only, "2.2": [0.659, 0.242, 0.099],
           "2.3": {"derivation": HOSTILE, "consequence": "subtract the maximum"},
           "2.4": (lambda scores, temperature: (_ for _ in ()).throw(ValueError("oops")),
                   {"largest_weight": [0.539, 0.361, 0.276], "same_order": True}),
           "2.6": (masked_after_softmax, test_masked_softmax)}


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    grades = {}
    for ex in ASSIGNMENTS["02_mechanics"].exercises:
        if ex.id in ANSWERS:
            v = evaluate(ex, ANSWERS[ex.id], seed=SEED)
            grades[ex.id] = ExerciseGrade(v.status, v.message, v.score, v.summary,
                                          v.details.get("answer") if not ex.auto else None)
        else:
            grades[ex.id] = ExerciseGrade("not_attempted", f"no `{ex.answer_label}` is defined",
                                          0)
    grades["2.3"].status, grades["2.3"].score = "hand_graded", 2.5
    grades["2.3"].comment = "Right idea; now say why c may be negative."
    sub = SubmissionGrade("José Núñez/02_mechanics_exercises.submission.json", "0" * 64,
                          "graded", exercises=grades,
                          meta={"student": "José Núñez", "assignment": "02_mechanics"})
    out = tmp_path_factory.mktemp("feedback")
    folder = write_feedback(Report("/subs", [sub], [], [], SEED, Limits(), "", 0.0, 1), out)
    (page,) = folder.rglob("*.html")
    return page, grades


def contrast(rgb: str) -> float:
    """WCAG contrast ratio of an ``rgb(r, g, b)`` colour against white."""
    def lum(c):
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (int(x) for x in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
    return 1.05 / (0.2126 * lum(r) + 0.7152 * lum(g) + 0.0722 * lum(b) + 0.05)


def test_a_student_reads_their_feedback_offline(browser_page, page_file):
    page, steps = browser_page
    path, grades = page_file
    requests, dialogs = [], []
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
               else route.abort())
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    steps("opened")
    assert requests == [path.as_uri()]  # nothing else was fetched: it opens offline
    assert "Mechanics" in page.title() and "José Núñez" in page.title()

    # structure a screen reader navigates by
    assert page.get_by_role("heading", level=1).all_inner_texts() == ["Feedback: Mechanics"]
    h2 = page.get_by_role("heading", level=2).all_inner_texts()
    assert h2[0] == "Summary" and len(h2) == 1 + 7
    table = page.get_by_role("table", name="Your result for each exercise")
    statuses = table.locator("tbody td:nth-child(2)").all_inner_texts()
    assert len(statuses) == 7
    words = ["fail", "pass", "written answer, graded by your instructor",
             "fail (your code raised an error)", "not attempted", "fail", "not attempted"]
    assert [s.split(" ", 1)[1] for s in statuses] == words  # a word after every symbol
    snapshot = page.locator("main").aria_snapshot()
    assert "✔" not in snapshot and "✘" not in snapshot  # symbols are hidden from screen readers
    assert "pass" in snapshot and "not attempted" in snapshot
    colours = page.locator(".status").evaluate_all(
        "els => els.map(e => getComputedStyle(e).color)")
    assert colours and all(contrast(c) >= 4.5 for c in colours), colours

    # what the checks said, as check() says it, and never the reference or a hidden case
    text = page.locator("body").inner_text()
    for i in ("2.1", "2.4", "2.6"):
        assert grades[i].message.strip() in text, i
    assert "without renormalising" in text and "raised ValueError" in text
    assert "one of the grader's own random cases" in text
    for case in cases_for(EXERCISES["2.1"], SEED):
        expected = fmt(case.args[1] @ case.args[0])
        assert expected not in text
        if case.hidden:
            assert all(fmt(a) not in text for a in case.args)
    assert 'hint("2.1")' in text

    # the written answer is text, the rubric and the instructor's word are there
    assert HOSTILE in text and page.locator("img").count() == 0 and dialogs == []
    assert "Score: 2.5 of 4 points" in text and "now say why c may be negative" in text
    assert EXERCISES["2.3"].rubric[0] in text

    # the summary links lead to the exercise, from the keyboard
    link = page.get_by_role("link", name="2.6 Test that masked keys get exactly zero weight")
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("location.hash === '#ex-2-6'")
    assert page.locator("#ex-2-6").is_visible()
    steps("followed a link")

    # and it reads on a phone: nothing wider than the screen
    page.set_viewport_size({"width": 380, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    steps("narrow screen")
