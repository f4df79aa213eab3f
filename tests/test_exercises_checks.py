"""The exercise checks: every computational check passes a correct answer (for several seeds) and
rejects realistic wrong answers with the specific reason; checks never raise, whatever the answer
does; written exercises are never passed automatically; feedback never prints the reference."""

from __future__ import annotations

import html
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import _exercise_answers as A
from attention_lab.exercises import EXERCISES, IDS, check, get, hint, reset, status
from attention_lab.exercises.judging import cases_for
from attention_lab.exercises.specs import SPECS
from attention_lab.exercises.student import evaluate

ROOT = Path(__file__).resolve().parent.parent
COMPUTATIONAL = [i for i in IDS if EXERCISES[i].kind != "written"]
WRITTEN = [i for i in IDS if EXERCISES[i].kind == "written"]


# ------------------------------------------------------------------ registry
def test_registry_covers_all_22_chapter_exercises_once_or_twice():
    chapters = sorted({ex.chapter for ex in EXERCISES.values()})
    assert chapters == list(range(1, 23))
    assert len(IDS) == 25
    for ex in EXERCISES.values():
        assert ex.id == f"{ex.level}.{ex.id.split('.')[1]}"
        assert ex.task and ex.title
        if ex.kind == "written":
            assert ex.fields and ex.rubric and not ex.hints
        else:
            assert ex.id in SPECS and len(ex.hints) >= 2
    names = [n for ex in EXERCISES.values() for n in ex.answer_names]
    assert len(names) == len(set(names)), "every answer needs its own variable name"
    # ids are numbered 1, 2, 3, ... within a level
    for level in (1, 2, 3, 4):
        pos = [int(i.split(".")[1]) for i in IDS if i.startswith(f"{level}.")]
        assert pos == list(range(1, len(pos) + 1))


def test_every_check_has_a_correct_answer_and_at_least_two_wrong_ones():
    assert set(A.CORRECT) == set(COMPUTATIONAL)
    for i in COMPUTATIONAL:
        assert len(A.WRONG.get(i, [])) >= 2, i


def test_function_checks_cover_the_issue_edge_cases():
    notes = " | ".join(c.note for i in COMPUTATIONAL for c in cases_for(get(i), 1))
    for needle in ("lengths 5, 3, 1", "all masked", "+1e4", "-1e4", "T=1", "float16",
                   "D_v differs", "random:"):
        assert needle in notes, needle


# ------------------------------------------------------------------ correct and wrong answers
@pytest.mark.parametrize("ex_id", COMPUTATIONAL)
@pytest.mark.parametrize("seed", [None, 1, 987654321])
def test_correct_answer_passes(ex_id, seed):
    kw = {} if seed is None else {"seed": seed}
    v = evaluate(get(ex_id), A.CORRECT[ex_id], **kw)
    assert v.status == "pass", v.message
    assert v.score == 1


WRONG_CASES = [(i, k) for i in A.WRONG for k in range(len(A.WRONG[i]))]


@pytest.mark.parametrize("ex_id,k", WRONG_CASES, ids=[f"{i}-wrong{k}" for i, k in WRONG_CASES])
def test_wrong_answer_is_rejected_with_the_specific_reason(ex_id, k):
    answer, status_, fragments = A.WRONG[ex_id][k]
    v = evaluate(get(ex_id), answer)
    assert v.status == status_, v.message
    assert v.score == 0
    for frag in fragments:
        assert frag in v.message, f"{frag!r} not in:\n{v.message}"
    # a summary taken from the message (submit's table, the .submission.json; others are labels
    # such as 'wrong answer object') keeps the reason of its first line: it was cut at the first
    # colon, leaving 'softmax_by_hand = [0.6 0.3 0.1]' (the student's own value) or
    # 'temperature_comparison' (the name of the part that is wrong)
    if v.message.startswith(v.summary):
        said = [frag for frag in fragments if frag in v.message.split("\n")[0]]
        assert all(frag in v.summary for frag in said), (v.summary, said)
    declared_part = re.search(r"pass(es)? all \d+ cases", v.message)
    if v.status == "fail" and get(ex_id).kind == "function" and not declared_part \
            and v.summary != "wrong answer object":
        assert re.search(r"^(Minimal failing case|Smallest failing case that shows it):",
                         v.message, flags=re.M), v.message


@pytest.mark.parametrize("policy", ["zeros", "nan", "raise"])
def test_every_declared_all_masked_policy_can_pass(policy):
    """3.2: the implementation is checked against the policy the answer declares, and the
    student's test must accept exactly the implementation that follows it."""
    v = evaluate(get("3.2"), (policy, A.safe(policy), A.policy_test(policy)))
    assert v.status == "pass", v.message
    other = {"zeros": "nan", "nan": "raise", "raise": "zeros"}[policy]
    v = evaluate(get("3.2"), (policy, A.safe(other), A.policy_test(policy)))
    assert v.status in ("fail", "error") and f"policy {policy!r}" in v.message.replace(
        "policy is", "policy"), v.message


def test_feedback_never_prints_the_reference_answer():
    # 2.2: the hand-computed weights
    v = evaluate(get("2.2"), [0.6, 0.3, 0.2])
    for ref in ("0.659", "0.242", "0.099"):
        assert ref not in v.message
    # 2.4: the correct weights of the failing case are not shown, only the student's
    from attention_lab.examples import running_example
    from attention_lab.softmax import softmax

    r = running_example()
    s = r.keys @ r.query
    v = evaluate(get("2.4"), (lambda scores, temperature: A._softmax(np.asarray(scores)
                                                                    * temperature),
                              A.OK_COMPARISON))
    ref = np.round(softmax(s, temperature=0.5), 3)
    assert " ".join(f"{x:g}" for x in ref[:2]) not in v.message
    assert "0.062" not in v.message and "0.539" not in v.message
    # 2.6: masked weights of the chapter's example are never printed as the expected answer
    v = evaluate(get("2.6"), (lambda scores, mask: A._softmax(scores) * mask,
                              A.ok_test_masked_softmax))
    assert v.status == "fail"
    assert "0.179" not in v.message and "0.528" not in v.message
    # 4.1: the chapter's count is not revealed when a student gets it wrong
    v = evaluate(get("4.1"), lambda b, t, s, h: ((b, t, s), b * t * s))
    assert "1,048,576" not in v.message and "1048576" not in v.message
    # 4.2: the count to derive is not spelled out to an answer that multiplied the widths
    v = evaluate(get("4.2"), lambda T, S, D_k, D_v: T * S * D_k * D_v)
    assert v.status == "fail" and "multiplied D_k and D_v" in v.message
    assert "T S D_k + T S D_v" not in v.message and "T S (D_k + D_v)" not in v.message


# ------------------------------------------------------------------ checks never raise
def _stub(*args):
    raise NotImplementedError


def _loop(*args):
    while True:
        try:
            pass
        except BaseException:  # even code that swallows every exception is stopped
            pass


class Hostile:
    def __repr__(self):
        raise RuntimeError("no repr for you")

    def __array__(self, *a, **k):
        raise RuntimeError("no array either")


def _exit(*args):
    sys.exit(3)


def _interrupt(*args):
    raise KeyboardInterrupt


def _chatty(query, keys):
    for i in range(10000):
        print("debugging", i)
    return keys @ query


@pytest.mark.parametrize("answer,status_,fragment", [
    (_stub, "not_attempted", "NotImplementedError"),
    (lambda q, k: 1 / 0, "error", "ZeroDivisionError"),
    (lambda q, k: "scores", "fail", "got text ('scores')"),
    (lambda q, k: None, "fail", "forget `return`"),
    (lambda q, k: np.zeros((2, 2)), "fail", "shape (2, 2)"),
    (lambda q, k: np.ones(len(k), dtype=bool), "fail", "dtype bool"),
    (lambda q, k: (x for x in k), "fail", "generator"),
    (lambda q, k: Hostile(), "fail", "Hostile"),
    (lambda q, k: np.zeros(3_000_000), "fail", "too large"),
    (_exit, "error", "SystemExit"),
    (_interrupt, "error", "KeyboardInterrupt"),
    (_chatty, "pass", "printed"),
    (None, "not_attempted", "None"),
    (Ellipsis, "not_attempted", "..."),
    (42, "fail", "pass the function itself"),
    (np.array([1.0, 2.0]), "fail", "pass the function itself"),
])
def test_check_never_raises(answer, status_, fragment):
    v = evaluate(get("2.1"), answer)
    assert v.status == status_, v.message
    assert fragment in v.message, v.message


def test_endless_loop_is_stopped_by_the_time_limit():
    v = evaluate(get("2.1"), _loop, call_seconds=0.3, total_seconds=5)
    assert v.status == "timeout"  # stopped by the call's limit (0.3 s), not the total's (5 s):
    assert "did not finish within 0.3 s" in v.message
    assert "the chapter's query and its first three keys" in v.message


def test_a_function_that_modifies_its_input_is_told_so():
    def scaled(query, keys):
        keys *= 2
        return keys @ query / 2

    v = evaluate(get("2.1"), scaled)
    assert v.status == "fail" and "changed its input `keys` in place" in v.message


def test_numpy_warnings_inside_a_student_function_do_not_escape():
    with np.errstate(all="raise"):
        v = evaluate(get("3.1"), (lambda s: A._naive(s), A.OK_SOFTMAX_COMPARISON))
    assert v.status == "fail" and "NaN" in v.message


def test_multi_function_answer_shapes():
    ex = get("3.3")
    assert evaluate(ex, A.ok_dot_attention).status == "fail"
    assert "pass the answer's parts together, as a tuple: check('3.3', (dot_attention, " \
           "bilinear_attention, score_comparison)); got a function" in evaluate(
               ex, A.ok_dot_attention).message
    v = evaluate(ex, (_stub, _stub, ...))
    assert v.status == "not_attempted"
    # (was "`dot_attention, bilinear_attention` still raises NotImplementedError (the stub)")
    assert "`dot_attention` and `bilinear_attention` still raise NotImplementedError (the " \
           "stubs)" in v.message, v.message
    v = evaluate(ex, (A.ok_dot_attention, _stub, A.OK_SCORE_COMPARISON))
    assert v.status == "fail" and "`bilinear_attention` is not written yet" in v.message


@pytest.mark.parametrize("ex_id,functions", [("3.1", (A.ok_stable_softmax,)),
                                             ("3.3", (A.ok_dot_attention, A.ok_bilinear_attention))])
def test_a_comparison_is_recorded_not_computed_by_the_check(ex_id, functions):
    """Exercises 8 and 12 ask the student to compare: the functions alone do not pass, and the
    feedback of a pass shows the student's own record (not numbers the check computed)."""
    v = evaluate(get(ex_id), functions)
    assert v.status == "fail" and "pass the answer's parts together" in v.message
    comparison = dict(A.CORRECT[ex_id][-1])
    v = evaluate(get(ex_id), (*functions, comparison))
    assert v.status == "pass" and "Your comparison:" in v.message
    if ex_id == "3.1":
        assert "the naive formula gives [nan, nan, 0.000] and your stable softmax " \
               "[0.731, 0.269, 0.000]" in v.message
    else:
        assert "the dot scores have shape (2, 5) and the bilinear scores (2, 5)" in v.message


def test_answers_that_delegate_to_the_package_earn_no_mark():
    """``stable_softmax = attention_lab.softmax``, or a body calling ``attend``: the check sees the
    call into the package's own implementation and says why there is no mark (in the grader the
    implementation is not even there: tests/grading/test_grading_isolation.py)."""
    import attention_lab

    v = evaluate(get("3.1"), (attention_lab.softmax, A.OK_SOFTMAX_COMPARISON))
    assert v.status == "fail" and "`attention_lab.softmax.softmax`" in v.message
    assert "the package's own implementation" in v.message and "no mark" in v.message

    def dot_attention(Q, K, V):
        return attention_lab.attend(Q[0], K, V).context[None]

    v = evaluate(get("3.3"), (dot_attention, A.ok_dot_attention, A.OK_SCORE_COMPARISON))
    assert v.status == "fail" and "`attention_lab.attention.attend`" in v.message
    assert evaluate(get("3.1"), A.CORRECT["3.1"]).status == "pass"  # numpy alone is fine


def test_value_answers_not_attempted_and_malformed():
    assert evaluate(get("2.2"), ...).status == "not_attempted"
    assert "three numbers" in evaluate(get("2.2"), "0.66, 0.24, 0.1").message
    parts = dict.fromkeys(("query", "keys", "values", "scores", "weights", "context"), ...)
    assert evaluate(get("1.1"), parts).status == "not_attempted"
    partial = A.ok_parts()
    partial["context"] = ...
    v = evaluate(get("1.1"), partial)
    assert v.status == "fail" and "parts['context'] is still `...`" in v.message


def test_the_query_dependence_test_receives_opaque_implementations():
    seen = []

    def spy(attend):
        seen.append(attend.__name__)
        return A.ok_test_query_dependence(attend)

    assert evaluate(get("1.4"), spy).status == "pass"
    assert set(seen) == {"attend"}


# ------------------------------------------------------------------ written exercises
@pytest.mark.parametrize("ex_id", WRITTEN)
def test_written_exercises_are_never_passed_automatically(ex_id):
    ex = get(ex_id)
    empty = {name: "" for name, _ in ex.fields}
    assert evaluate(ex, empty).status == "not_attempted"
    full = {name: "a long and perfect answer " * 20 for name, _ in ex.fields}
    v = evaluate(ex, full)
    assert v.status == "needs_instructor" and v.score is None
    assert ex.rubric[0] in v.message  # the rubric is shown after the attempt
    assert v.details["answer"][ex.fields[0][0]].startswith("a long and perfect answer")
    assert evaluate(ex, "just a string answer").status == "needs_instructor"
    assert evaluate(ex, 42).status == "fail"
    assert "rubric" not in evaluate(ex, empty).message.lower()


def test_partly_written_answer_names_the_empty_fields():
    ex = get("4.5")
    answer = {name: "" for name, _ in ex.fields}
    answer["numerics"] = "fill value representable in float16; policy for all-masked rows"
    v = evaluate(ex, answer)
    assert v.status == "needs_instructor"
    assert "1 of 7 field(s) answered" in v.message and "still empty: interfaces" in v.message


def test_a_misspelled_field_of_a_written_answer_is_named_not_counted():
    # {"derivaton": ...} read '1 of 2 field(s) answered, 20 words; still empty: derivation,
    # consequence': answered and empty at once, and nothing said about the misspelling
    text = "exp(e_i + c) = exp(e_i) exp(c), and exp(c) cancels in every ratio of the softmax"
    v = evaluate(get("2.3"), {"derivaton": text, "consequence": ""})
    assert "0 of 2 field(s) answered" in v.message, v.message
    assert "still empty: derivation, consequence" in v.message
    assert "'derivaton' is not one of its fields (did you mean 'derivation'?)" in v.message
    assert v.details["answer"] == {"derivaton": text}  # the instructor still reads it
    assert "answered, 1 word;" in evaluate(get("2.3"), {"derivation": "cancels"}).message
    assert "is not one of its fields" not in evaluate(get("2.3"), text).message  # one text


def test_a_tuple_of_the_wrong_length_is_told_its_length():
    # score_matrix_size returning the shape alone read 'your function returned a tuple; it must
    # return a tuple (shape, elements)': a tuple was what it had returned
    v = evaluate(get("4.1"), lambda batch, target, source, heads: (batch, heads, target, source))
    assert "returned a tuple of 4 items; it must return a tuple of 2, (shape, elements)" \
        in v.message, v.message
    v = evaluate(get("3.4"), lambda *args: A.CORRECT["3.4"](*args)[:1])
    assert "returned a tuple of 1 item; it must return a tuple of 2, (weights, context)" \
        in v.message, v.message


# ------------------------------------------------------------------ check, hint, status
def test_check_displays_and_returns(capsys):
    reset()
    res = check("2.1", A.ok_dot_scores)
    out = capsys.readouterr().out
    assert res.passed and bool(res) and res.status == "pass"
    assert out.startswith("✔ 2.1 Dot-product scores (dot_scores): pass")
    assert res.html().startswith("<div") and "pass" in res.html()
    res = check("2.1", _stub, show=False)
    assert capsys.readouterr().out == "" and res.status == "not_attempted"


def test_check_with_unknown_id_or_missing_answer_does_not_raise(capsys):
    res = check("9.9", A.ok_dot_scores)
    assert res.status == "fail" and "the ids are 1.1" in capsys.readouterr().out
    res = check("2.1")
    assert res.status == "not_attempted" and "check('2.1', dot_scores)" in res.message


@pytest.mark.parametrize("typed, says", [
    ("ex 2.1", "did you mean '2.1'?"), ("2,1", "did you mean '2.1'?"),
    (10, "chapter exercise 10 is checked as '2.6'"), ("14", "checked as '3.5' and '3.6'")])
def test_a_mistyped_id_is_told_the_id_it_probably_means(typed, says):
    """The notebooks' headings say 'Exercise 10 (check 2.6)': a student may type either."""
    res = check(typed, A.ok_dot_scores, show=False)
    assert res.status == "fail" and says in res.message and "the ids are 1.1" in res.message
    assert "did you mean" not in check("2.10", A.ok_dot_scores, show=False).message  # not 2.1


def test_parts_passed_in_the_wrong_order_are_shown_the_whole_call():
    """The suggested call must be one that can pass: for a two-part answer, both parts, in order
    (the one part alone is told to pass a tuple: a loop)."""
    comparison = {"largest_weight": [0.5, 0.4, 0.3], "same_order": True}
    res = check("2.4", (comparison, A.ok_softmax_temperature), show=False)
    assert res.status == "fail"
    assert "check('2.4', (softmax_temperature, temperature_comparison))" in res.message
    assert "check('2.1', dot_scores)" in check("2.1", "keys @ query", show=False).message


def test_check_survives_an_internal_error(monkeypatch):
    import attention_lab.exercises.student as student

    def boom(*a, **k):
        raise RuntimeError("bug")

    monkeypatch.setattr(student, "evaluate", boom)
    res = check("2.1", A.ok_dot_scores, show=False)
    assert res.status == "error" and "could not run" in res.message


def test_hints_come_one_at_a_time(capsys):
    reset()
    ex = get("2.6")
    for n in range(len(ex.hints)):
        hint("2.6")
        assert f"Hint {n + 1} of {len(ex.hints)}" in capsys.readouterr().out
    hint("2.6")
    assert "no more hints" in capsys.readouterr().out
    hint("2.3")
    assert "no hints for a written exercise" in capsys.readouterr().out
    hint("7.7")
    assert "no exercise '7.7'" in capsys.readouterr().out


def test_asking_again_after_the_last_hint_shows_every_hint_again(capsys):
    """Rerunning a hint cell replaces its output: once the last hint is out, the earlier ones
    would be out of sight for good unless asking again shows them all."""
    reset()
    ex = get("2.1")
    for _ in ex.hints:
        hint("2.1")
    capsys.readouterr()
    hint("2.1")
    out = capsys.readouterr().out
    assert "all 3 hints" in out and all(h in out for h in ex.hints)


def test_status_table_reflects_the_session(capsys):
    reset()
    check("2.1", A.ok_dot_scores, show=False)
    check("2.6", A.WRONG["2.6"][0][0], show=False)
    check("2.3", {"derivation": "exp(c) cancels", "consequence": ""}, show=False)
    table = status(show=False)
    assert [ex.level for ex, _ in table.rows] == [2] * 7
    assert table.counts() == {"pass": 1, "fail": 1, "needs_instructor": 1, "not_checked": 4}
    text = table.text()
    assert "1 of 6 checked exercises pass; 1 written answer(s)" in text
    assert len(status(4, show=False).rows) == 8
    reset()
    assert len(status(show=False).rows) == 25


@pytest.mark.parametrize("level", [5, "two", 0])
def test_status_of_a_level_that_does_not_exist_says_which_levels_do(level):
    table = status(level, show=False)  # JupyterLab shows its html, a terminal its text
    for text in (table.text(), html.unescape(table.html())):
        assert f"no level {level!r}" in text and "1, 2, 3, 4" in text and "status(2)" in text


def test_student_time_limits_can_be_set_from_the_environment():
    code = ("import attention_lab.exercises.student as s; print(s.CALL_SECONDS, s.CHECK_SECONDS)")
    import subprocess

    env = dict(os.environ, ATTENTION_LAB_CALL_SECONDS="1.5", ATTENTION_LAB_CHECK_SECONDS="9")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["1.5", "9.0"]


def test_messages_count_positions_and_rows_from_1_with_numpys_index_beside():
    """Issue 13's one indexing convention: a message that names a position or a row counts from
    1, as the notebooks do, and gives numpy's index (from 0) beside it."""
    from attention_lab.exercises.specs.base import Reject, check_weights

    ref = np.array([0.5, 0.5, 0.0, 0.0])
    mask = np.array([True, True, False, False])
    with pytest.raises(Reject, match=r"masked key at position 3 \(numpy index 2\)"):
        check_weights(np.array([0.4, 0.4, 0.2, 0.0]), ref, mask=mask)
    rows = np.array([[0.5, 0.5], [0.3, 0.3]])
    with pytest.raises(Reject, match=r"\(row 2\) sum to 0\.6, not 1"):
        check_weights(rows, np.array([[0.5, 0.5], [0.5, 0.5]]))
    with pytest.raises(Reject, match=r"entry \(2, 1\) counting from 1 \(numpy index \[1, 0\]\)"):
        check_weights(np.array([[0.5, 0.5], [0.6, 0.4]]), np.array([[0.5, 0.5], [0.5, 0.5]]))


# ------------------------------------------------------------------ messages that misled (issue 24)
def _first_line(v) -> str:
    return v.message.splitlines()[0]


def test_3_5_names_the_axis_on_a_case_where_the_axes_differ_in_size():
    """With B = T = 1 a softmax over the batch axis and one over the target axis give the same
    all-ones weights: the diagnosis comes from a case whose axes differ."""
    v = evaluate(get("3.5"), lambda Q, K, V: A._batched_axis(Q, K, V, 0))
    assert _first_line(v).startswith("your softmax runs over the batch axis (axis 0)")
    assert "target axis" not in v.message
    shown = v.message.split("Smallest failing case that shows it: ", 1)[1].splitlines()[0]
    case = next(c for c in cases_for(get("3.5"), 1) if c.note == shown)
    B, T, S = case.args[0].shape[0], case.args[0].shape[1], case.args[1].shape[1]
    assert len({B, T, S}) == 3


def _additive(score):
    def additive_attention(q, keys, values, W_q, W_k, v):
        e = score(q, keys, W_q, W_k, v)
        w = np.exp(e - e.max())
        w = w / w.sum()
        return w, w @ values
    return additive_attention


@pytest.mark.parametrize("score,says", [
    (lambda q, K, Wq, Wk, v: np.tanh(K @ Wk + Wq @ q) @ v, "keys @ W_k, with W_k not transposed"),
    (lambda q, K, Wq, Wk, v: np.tanh(K @ Wk.T + q @ Wq) @ v, "q @ W_q, which multiplies by W_q "
                                                           "transposed"),
    (lambda q, K, Wq, Wk, v: np.tanh(K @ Wk + q @ Wq) @ v, "both matrices are used transposed"),
])
def test_3_4_says_which_matrix_is_transposed_instead_of_a_bare_shape_error(score, says):
    v = evaluate(get("3.4"), _additive(score))
    assert v.status == "fail" and says in _first_line(v)
    assert "matmul" not in _first_line(v)
    assert "raised ValueError" in v.message  # the cases with other widths, listed below it


def test_3_4_a_shape_error_names_the_shapes_the_projections_need():
    def only_errors(q, keys, values, W_q, W_k, v):
        if W_k.shape[0] == W_k.shape[1]:
            raise ValueError("matmul: Input operand 1 has a mismatch in its core dimension 0")
        return _additive(lambda q, K, Wq, Wk, v: np.tanh(K @ Wk + Wq @ q) @ v)(
            q, keys, values, W_q, W_k, v)

    v = evaluate(get("3.4"), only_errors)
    assert v.status == "error"
    assert ("a matrix product got shapes that do not fit: here q is (3,), keys (4, 3), W_q (3, 3) "
            "= (A, D_q) and W_k (3, 3) = (A, D_k)") in v.message
    assert "keys @ W_k.T" in v.message


def test_2_5_an_off_by_one_mask_is_not_also_called_inverted():
    v = evaluate(get("2.5"), lambda lengths, S: np.arange(S) <= np.asarray(lengths)[:, None])
    assert _first_line(v).startswith("one position too many is eligible")
    assert "inverted" not in v.message
    inverted = evaluate(get("2.5"), lambda lengths, S: np.arange(S) >= np.asarray(lengths)[:, None])
    assert _first_line(inverted).startswith("your mask is inverted")


def _fill(value):
    def masked_softmax(scores, mask):
        s = np.where(mask, scores, value)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return masked_softmax


def test_2_6_text_and_check_agree_on_finite_fills_and_ask_for_no_float16():
    """The Annotated Transformer's -1e9 fill gives exactly 0 in float64 and float32, which is all
    2.6 asks for: it passes, in numpy and with torch's masked_fill; -30 does not, and the
    message says why. No case is float16, which the exercise text does not name."""
    import torch

    def torch_fill(scores, mask):
        t = torch.as_tensor(scores)
        m = torch.as_tensor(np.broadcast_to(mask, t.shape))
        return torch.softmax(t.masked_fill(~m, -1e9), dim=-1).numpy()

    ex = get("2.6")
    assert all(np.asarray(a).dtype != np.float16 for c in cases_for(ex, 1) for a in c.args
               if isinstance(a, np.ndarray))
    for impl in (_fill(-1e9), torch_fill):
        assert evaluate(ex, (impl, A.ok_test_masked_softmax)).status == "pass"
    v = evaluate(ex, (_fill(-30.0), A.ok_test_masked_softmax))
    assert v.status == "fail" and "not far enough below the eligible scores" in v.message
    text = " ".join((ex.task + " ".join(ex.hints)).split())
    assert "float64 or float32" in text and "-1e9 here" in text and "-30 does not" in text
    nb = (ROOT / "notebooks" / "exercises" / "02_mechanics_exercises.py").read_text()
    assert "float64 or float32 array" in nb and "a fill of `-30`" in " ".join(nb.split())


@pytest.mark.parametrize("ex_id", WRITTEN)
def test_a_thin_written_answer_gets_no_rubric_and_is_told_so(ex_id):
    ex = get(ex_id)
    thin = {f: "it cancels out" for f, _ in ex.fields}
    v = evaluate(ex, thin)
    assert v.status == "needs_instructor" and v.score is None
    assert not any(item in v.message for item in ex.rubric)
    assert "The rubric is shown once every field holds an answer of at least 12 words" in v.message
    full = {f: " ".join(["word"] * 12) for f, _ in ex.fields}
    assert all(item in evaluate(ex, full).message for item in ex.rubric)


def test_2_4_records_the_comparison_and_shows_it_on_a_pass():
    v = evaluate(get("2.4"), A.CORRECT["2.4"])
    assert v.status == "pass" and "Your comparison: the largest weight is [0.539 0.361 0.276]" \
        in v.message
    assert get("2.4").declared == ("temperature_comparison",)
    nb = (ROOT / "notebooks" / "exercises" / "02_mechanics_exercises.py").read_text()
    assert 'check("2.4", (softmax_temperature, temperature_comparison))' in nb


def test_2_7_shows_the_recorded_window_comparison_on_a_pass():
    v = evaluate(get("2.7"), A.CORRECT["2.7"])
    assert v.status == "pass" and "Your comparison: position 5, the key the query matches best, " \
        "gets 0.732 of the weight with global attention and 0.000 in the window" in v.message


def test_student_exercise_notebooks_have_no_empty_markdown_cell():
    """A markdown cell that held only a model answer is left out of the student notebook (the
    comparison of exercise 5 left an empty one)."""
    import jupytext

    from attention_lab.exercises import authoring

    made = authoring.student_version("# %%\nx = 1\n\n# %% [markdown]\n# <!-- BEGIN SOLUTION -->\n"
                                     "# *Model answer.* ...\n# <!-- END SOLUTION -->\n\n"
                                     "# %% [markdown]\n# ## Next\n")
    assert made == "# %%\nx = 1\n\n# %% [markdown]\n# ## Next\n"
    for path in sorted((ROOT / "notebooks" / "exercises").glob("*_exercises.py")):
        empty = [i for i, c in enumerate(jupytext.read(path).cells)
                 if c.cell_type == "markdown" and not c.source.strip()]
        assert not empty, (path.name, empty)


def test_4_3_a_part_left_as_none_is_named_not_shown_as_nan():
    """A half-done replace_and_measure that returns None for a measurement is told that it is
    None (np.asarray(None, dtype=float) is NaN, which the message used to show as 'nan')."""
    def half_done(scores, values, control, readout):
        position, _, _ = A.ok_replace_and_measure(scores, values, control, readout)
        return position, None, None

    v = evaluate(get("4.3"), half_done)
    assert v.status == "fail" and "context_change is None; expected one number" in v.message, \
        v.message
    assert "nan" not in v.message.split("\n")[0], v.message


def test_a_row_sum_off_by_less_than_4_digits_is_not_shown_as_1():
    """Weights rounded to five decimals sum to 0.99999...: the message must not say 'sum to 1,
    not 1'."""
    v = evaluate(get("2.4"), (lambda s, t: np.round(A.ok_softmax_temperature(s, t), 5),
                              A.OK_COMPARISON))
    assert v.status == "fail"
    assert "sum to 1, not 1" not in v.message, v.message


def test_2_7_a_nan_in_the_window_comparison_is_not_accepted():
    for comp in ({"global": float("nan"), "local": 0.0}, {"global": 0.732, "local": np.nan}):
        v = evaluate(get("2.7"), (A.ok_local_attention, comp))
        assert v.status == "fail" and "window_comparison" in v.message, v.message


@pytest.mark.parametrize("ex_id", ["1.2", "2.1", "2.4", "3.5"])
def test_an_answer_computed_in_float32_is_told_so_not_that_its_values_are_wrong(ex_id):
    """An answer that computes in float32 (torch's .float(), astype(np.float32)) is right to
    float32's precision but not to the float64 these checks ask for: the message says that,
    instead of 'wrong at 2 of 5 entries' beside numbers that look right."""
    def f32(x):
        if isinstance(x, tuple):
            return tuple(f32(y) for y in x)
        return np.asarray(x).astype(np.float32) if isinstance(x, np.ndarray) else x

    def in_float32(fn):
        return lambda *a: f32(fn(*(f32(x) for x in a)))

    answer = A.CORRECT[ex_id]
    answer = ((in_float32(answer[0]), *answer[1:]) if isinstance(answer, tuple)
              else in_float32(answer))
    v = evaluate(get(ex_id), answer)
    assert v.status == "fail"
    head = v.message.split("\n")[0]
    assert "float32" in head and "float64" in head and "wrong at" not in head, v.message


def test_3_2_the_raise_policy_with_another_exception_is_told_to_raise_valueerror():
    """Policy 'raise' means a ValueError (the task says so); an implementation that raises
    RuntimeError on an all-masked row is told that, not only that it raised."""
    def raises_runtime_error(scores, mask):
        if not np.broadcast_to(mask, np.shape(scores)).any(axis=-1).all():
            raise RuntimeError("a row has no eligible key")
        return A.safe("zeros")(scores, mask)

    v = evaluate(get("3.2"), ("raise", raises_runtime_error, A.policy_test("raise")))
    assert v.status == "error" and "RuntimeError" in v.message
    assert "ValueError" in v.message.split("\n")[0], v.message


@pytest.mark.parametrize("make,says", [
    (lambda s: __import__("torch").tensor(s, dtype=__import__("torch").bfloat16), "BFloat16"),
    (lambda s: np.matrix(s), "shape (1, 3), but it should be (3,)"),  # np.matrix is 2-D
])
def test_an_output_the_probe_cannot_record_is_not_blamed_on_the_students_code(make, says):
    """A bfloat16 tensor (numpy has no bfloat16) or an np.matrix returned by a correct
    computation: the student's function did not raise, the recording of its output failed; the
    message says what came back (a bfloat16 tensor; a 2-D matrix) instead of 'your function
    raised TypeError'."""
    v = evaluate(get("2.1"), lambda q, k: make(k @ q))
    assert v.status == "fail", v.message
    assert "raised" not in v.message and says in v.message, v.message


def test_1_1_parts_typed_from_the_printed_numbers_are_told_they_are_rounded():
    """Weights typed from the notebook's printout, [0.123 0.361 0.2 0.101 0.215], are the running
    example's weights to three decimals: the message must not say they are not its weights (it
    showed exactly those numbers), but that they are rounded."""
    parts = {k: np.round(v, 3) for k, v in A.ok_parts().items()}
    v = evaluate(get("1.1"), parts)
    assert v.status == "fail"
    assert "is not the running example's weights" not in v.message, v.message
    assert "rounded" in v.message, v.message


@pytest.mark.parametrize("ex_id,answer,what", [
    ("2.4", (A.CORRECT["2.4"][0], {"largest_weight": ["0.539", "0.361", "0.276"],
                                   "same_order": True}), "largest_weight"),
    ("2.4", (A.CORRECT["2.4"][0], {"largest_weight": "0.539, 0.361, 0.276", "same_order": True}),
     "largest_weight"),
    ("2.2", ["0.659", "0.242", "0.099"], "softmax_by_hand"),
    ("2.1", lambda query, keys: str(keys @ query), "your scores"),
])
def test_numbers_written_as_text_are_told_to_lose_the_quotes(ex_id, answer, what):
    # a student who wrote largest_weight = ["0.539", ...] read 'dtype <U5, expected real numbers'
    v = evaluate(get(ex_id), answer)
    assert v.status == "fail" and f"{what}: got text" in v.message, v.message
    assert "without quotes" in v.message and "dtype" not in v.message and "<U" not in v.message


def _solution_code() -> dict[str, set[str]]:
    """Per exercise, the expressions of its solution's code (the solution notebooks' lines
    between BEGIN and END SOLUTION, without ``return`` or an assignment's target) of 10
    characters or more that compute something."""
    by_name = {n: i for i in IDS for n in EXERCISES[i].answer_names}
    code: dict[str, set[str]] = {}
    for path in sorted((ROOT / "notebooks" / "exercises" / "solutions").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"# BEGIN SOLUTION\n(.*?)# END SOLUTION", text, re.S):
            names = re.findall(r"^(?:def (\w+)|(\w+) =)", text[:m.start()], re.M)
            owner = next((by_name[a or b] for a, b in reversed(names) if (a or b) in by_name),
                         None)
            for line in m.group(1).splitlines():
                expr = re.sub(r"^\s*(return\s+|\w+\s*=\s*)", "", line).split("#")[0].strip()
                if owner and len(expr) >= 10 and re.search(r"[@<>*/+\-(]", expr):
                    code.setdefault(owner, set()).add(expr)
    return code


def test_no_check_message_gives_its_exercises_solution_code():
    """A check tells a student what is wrong, never the line to write (that is what hint() is
    asked for): 1.2, 2.1, 2.6, 3.2 and 3.3 ended known mistakes' messages with the solution's
    own expression (': weights @ values', ': keys @ query', 'i.e. Q @ W @ K.T', '(np.where(
    mask, scores, -np.inf))')."""
    code = _solution_code()
    assert {"1.2", "2.1", "2.5", "2.6", "3.3"} <= set(code), sorted(code)
    for ex_id, answers in A.WRONG.items():
        for answer, _, _ in answers:
            message = evaluate(get(ex_id), answer).message
            given = [expr for expr in code.get(ex_id, ()) if expr in message]
            assert not given, (ex_id, given, message)


@pytest.mark.parametrize("ex_id", ["2.1", "2.6", "3.1", "3.2"])
def test_an_answer_less_precise_than_its_inputs_is_told_to_compute_in_their_precision(ex_id):
    """2.1 asked a float32 or float16 answer to float64 inputs to be computed in float64, while
    2.6, 3.1 and 3.2 held an answer to its own dtype's tolerance: a masked softmax that returned
    float16 (1 % tolerance) passed every case. (A float32 copy of a float64 result is within
    float64's tolerance: what float32 computing adds fails, with this message.)"""
    low = np.float16
    answer = A.CORRECT[ex_id]
    parts = list(answer) if isinstance(answer, tuple) else [answer]
    k = next(i for i, p in enumerate(parts) if callable(p))  # the function computing weights
    parts[k] = lambda *args, fn=parts[k]: np.asarray(fn(*args)).astype(low)
    v = evaluate(get(ex_id), tuple(parts) if isinstance(answer, tuple) else parts[0])
    assert v.status == "fail", v.message
    assert f"{np.dtype(low).name} numbers, right to {np.dtype(low).name}'s precision but not " \
           f"to float64's" in v.message and "compute in float64" in v.message, v.message


def test_4_1_a_self_attention_t_by_t_count_is_named_not_called_a_missing_batch():
    """(B, H, T, T) is the square score matrix of self-attention. On the chapter's case its count
    8 x 4 x 64 x 64 equals H T S = 4 x 64 x 512 (B T = S), and the check said 'your count leaves
    out the batch' to a student who had every factor but used T for S."""
    v = evaluate(get("4.1"), lambda batch, target, source, heads: (
        (batch, heads, target, target), batch * heads * target * target))
    assert v.status == "fail"
    assert _first_line(v).startswith("your count is T x T"), v.message
    assert "leaves out the batch" not in v.message


@pytest.mark.parametrize("answer,says,never", [
    # T = 3, S = 5, D_k = 4, D_v = 6: T T (D_k + D_v) = 90 = T S D_v
    (lambda T, S, D_k, D_v: T * T * (D_k + D_v), "your count is T x T",
     "weighted sum of the values but not the scores"),
    # T = 1, S = 10, D_k = 8, D_v = 2: T S (D_k + D_v) + T S = 110 = (T + S)(D_k + D_v)
    (lambda T, S, D_k, D_v: T * S * (D_k + D_v) + T * S, "you added the softmax's work",
     "not T plus S"),
    # T = 1, S = 10, D_k = 8, D_v = 2: 2 T S D_k = 160 = T S D_k D_v
    (lambda T, S, D_k, D_v: 2 * T * S * D_k, "you used D_k for both steps",
     "you multiplied D_k and D_v"),
])
def test_4_2_a_count_that_matches_a_known_mistake_by_coincidence_is_not_called_it(answer, says,
                                                                                 never):
    """4.2 took the first known mistake whose count equalled the student's on one case: the
    self-attention count T T (D_k + D_v) was told it left out the scores, a count with the
    softmax's T S added that it added T and S."""
    v = evaluate(get("4.2"), answer)
    assert v.status == "fail"
    assert _first_line(v).startswith(says), v.message
    assert never not in v.message, v.message


@pytest.mark.parametrize("eps", [1e-9, 1e-6])
def test_4_6_an_epsilon_inside_the_log_is_named(eps):
    """-sum w log(w + eps) is off by about eps: with eps = 1e-6 the failing case showed 'yours =
    1.60943', log 5 to the digits printed, under 'your entropy: not the expected value'."""
    v = evaluate(get("4.6"), lambda weights: -(np.asarray(weights)
                                               * np.log(np.asarray(weights) + eps)).sum(-1))
    assert v.status == "fail"
    assert "log(w + eps)" in _first_line(v) and "not the expected value" not in v.message
