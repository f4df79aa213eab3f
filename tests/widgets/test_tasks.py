"""Tasks: goals a student reaches by moving an explorer's controls, confirmed live from ``.state``.

The mechanism (``Explorer(tasks=...)``, ``TASKS``, ``tasks_met``, ``tasks_reached``, the task box,
``show_tasks``) is tested generically here; every task an explorer declares must have an entry in
:data:`SOLUTIONS`: control values that reach it and control values that do not.
"""

from __future__ import annotations

import ipywidgets as W
import numpy as np
import pytest

from attention_lab import widgets
from attention_lab.widgets import Task

#: (explorer name, task index) -> (control values that reach the goal, values that do not). The
#: values lie on the sliders' grids, so a student can reach them with the keyboard.
SOLUTIONS = {
    ("query", 0): ({"q1": -1.5, "q2": 0.0, "q3": 1.5, "retrieval": "soft"},
                   {"q1": -1.0, "q2": 0.0, "q3": 0.5, "retrieval": "soft"}),
    ("query", 1): ({"q1": -1.5, "q2": 0.0, "q3": 1.5, "retrieval": "hard"},
                   {"q1": 0.8, "q2": -0.3, "q3": 0.5, "retrieval": "hard"}),
    ("score", 0): ({"score": "bilinear", "q1": 0.05, "q2": -0.3, "q3": 0.5},
                   {"score": "bilinear", "q1": 0.8, "q2": -0.3, "q3": 0.5}),
    ("score", 1): ({"score": "additive", "q1": -0.2, "q2": -0.3, "q3": 0.5},
                   {"score": "additive", "q1": 0.8, "q2": -0.3, "q3": 0.5}),
    ("temperature", 0): ({"temperature": 0.2509}, {"temperature": 0.2288}),
    ("temperature", 1): ({"temperature": 0.1}, {"temperature": 0.2}),
    ("mask", 0): ({"length": 3, "after_softmax": True}, {"length": 4, "after_softmax": True}),
    ("mask", 1): ({"length": 5, "keep1": True, "keep2": False, "keep3": False, "keep4": True,
                   "keep5": False, "after_softmax": True},
                  {"length": 5, "keep1": False, "keep2": True, "keep3": True, "keep4": False,
                   "keep5": False, "after_softmax": True}),
    ("mask", 2): ({"length": 0, "empty": "raise"}, {"length": 0, "empty": "zeros"}),
    ("window", 0): ({"centre": 8.0, "half_width": 1.0}, {"centre": 5.5, "half_width": 1.0}),
    ("window", 1): ({"centre": 5.5, "half_width": 0.0}, {"centre": 5.0, "half_width": 0.0}),
    ("axis", 0): ({"axis": -2}, {"axis": -1}),
    ("axis", 1): ({"axis": -2}, {"axis": 0}),
    ("axis", 2): ({"axis": 0}, {"axis": -2}),
    ("precision", 0): ({"dtype": "float16", "fill": "-1e9", "length": 0, "softmax": "stable"},
                       {"dtype": "float16", "fill": "finfo.min", "length": 0,
                        "softmax": "stable"}),
    ("precision", 1): ({"dtype": "float16", "fill": "finfo.min", "length": 0},
                       {"dtype": "float16", "fill": "finfo.min", "length": 3}),
    ("precision", 2): ({"softmax": "naive", "length": 5, "scale": 20.0},
                       {"softmax": "naive", "length": 5, "scale": 1.0}),
    ("hull", 0): ({"w1": 0.0, "w2": 0.0, "w3": 0.5}, {"w1": 0.1, "w2": 0.0, "w3": 0.5}),
    ("hull", 1): ({"w1": 0.5, "w2": 0.5, "w3": 0.0}, {"w1": 0.6, "w2": 0.3, "w3": 0.0}),
    ("geometry", 0): ({"angle": 61, "length": 1.0}, {"angle": 50, "length": 1.0}),
    ("geometry", 1): ({"angle": 70, "length": 1.0}, {"angle": 150, "length": 1.0}),
    ("geometry", 2): ({"angle": 0, "length": 3.0}, {"angle": 0, "length": 1.0}),
    ("localp", 0): ({"logit": 1.3, "half_width": 1.0, "target": 8},
                    {"logit": 0.0, "half_width": 1.0, "target": 8}),
    ("localp", 1): ({"logit": 0.4, "half_width": 2.0, "target": 8},
                    {"logit": 1.3, "half_width": 2.0, "target": 8}),
    ("model", 0): ({"source": "abcdefghij", "window": True, "centre": 5, "half_width": 5},
                   {"source": "abcdefghij", "window": True, "centre": 5, "half_width": 4}),
    ("model", 1): ({"source": "abcdefghij", "temperature": 5.0},
                   {"source": "abcdefghij", "temperature": 10.0}),
}


def on_grid(explorer, values: dict) -> dict:
    """``values`` moved to the nearest point a slider can take (what a browser would send)."""
    out = {}
    for name, v in values.items():
        c = explorer.controls[name]
        if isinstance(c, W.FloatLogSlider):
            import math

            k = round((math.log(v, c.base) - c.min) / c.step)
            v = c.base ** (c.min + k * c.step)
        elif isinstance(c, (W.FloatSlider, W.IntSlider)):
            v = type(c.value)(c.min + round((v - c.min) / c.step) * c.step)
        out[name] = v
    return out


def explorer_classes() -> dict:
    """Every explorer class by name, the trained model's ("model") included."""
    from attention_lab.toy.explorer import ModelExplorer

    return {**widgets.EXPLORERS, "model": ModelExplorer}


DECLARED = [(name, k) for name, cls in explorer_classes().items() for k in range(len(cls.TASKS))]


def test_every_declared_task_has_a_solution_and_a_miss_in_this_file():
    assert set(DECLARED) == set(SOLUTIONS), "add the new tasks' solutions to SOLUTIONS"


@pytest.mark.parametrize("name,k", DECLARED)
def test_a_solution_reaches_the_task_and_a_miss_does_not(name, k):
    e = explorer_classes()[name](backend="agg")
    assert not e.tasks_met[k] and not e.tasks_reached[k], "the starting state solves it"
    solution, miss = (on_grid(e, v) for v in SOLUTIONS[(name, k)])
    e.set(**miss)
    assert not e.tasks_met[k] and not e.tasks_reached[k]
    e.set(**solution)
    assert e.tasks_met[k] and e.tasks_reached[k]
    assert e.last_error is None
    e.set(**miss)  # moving away: no longer met, but it was reached
    assert not e.tasks_met[k] and e.tasks_reached[k]


def test_the_temperature_task_is_the_effective_number_of_keys():
    e = widgets.TemperatureExplorer(backend="agg")
    assert "effective number of keys" in e.tasks[0].goal
    for tau in (0.05, 0.2396, 0.2509, 0.2627, 0.3017, 1.0, 5.0):
        e.controls["temperature"].value = tau
        assert e.tasks_met[0] == (1.85 <= e.state.effective_keys <= 2.15)
    assert e.tasks_reached[0]


def test_every_explorer_of_the_notebooks_has_a_task():
    assert all(cls.TASKS for cls in widgets.EXPLORERS.values())


def test_goals_count_positions_from_1():
    """Goals name sources, values and positions as the figures and prose do (1-based): the
    query task's "source 4" is the state's weights[3]."""
    e = widgets.QueryExplorer(backend="agg")
    assert "source 4" in e.tasks[0].goal
    e.set(q1=-1.5, q2=0.0, q3=1.5)
    assert e.state.weights.argmax() == 3 and e.tasks_met[0]


def test_task_numbers_come_from_the_core():
    """The numbers a predicate reads were computed by the core: the best keys from hardmax of the
    scores, the axes whose sums are 1 from the weights, the kernel's padding weight from
    fill_softmax."""
    from attention_lab.examples import running_example
    from attention_lab.scores import compute_scores
    from attention_lab.softmax import fill_softmax, safe_fill

    ex = running_example()
    score = widgets.ScoreExplorer(backend="agg")
    score.set(score="bilinear", q1=0.05)
    q = np.array([0.05, -0.3, 0.5])
    assert score.state.best == compute_scores("bilinear", q, ex.keys, W=ex.W).argmax() == 1
    assert score.state.dot_best == (ex.keys @ q).argmax() == 2
    axis = widgets.AxisExplorer(backend="agg")
    assert axis.state.sums_to_one == ("keys",)
    axis.controls["axis"].value = 0
    assert axis.state.sums_to_one == ("batch",)
    prec = widgets.PrecisionExplorer(backend="agg")
    prec.set(fill="finfo.min", length=0)
    kernel = fill_softmax(ex.keys @ ex.query, np.zeros(5, bool), safe_fill("float16"),
                          dtype="float16")
    assert prec.state.padding_weight == pytest.approx(float(kernel.astype(float).sum()))
    assert prec.state.padding_weight == pytest.approx(1.0, abs=1e-3) and not prec.state.kernel_nan


# --- the mechanism, with tasks made up for the test ---------------------------------------------

def two_tasks(seen=None):
    def first(state):
        if seen is not None:
            seen.append(state)
        return state.retrieval == "hard"

    return [Task("Switch to hard retrieval.", first),
            Task("Put more than 0.9 of the weight on one source.",
                 lambda s: s.weights.max() > 0.9)]


def box_lines(e) -> list[str]:
    return [line for line in e.task_box.value.split("</div>") if line]


def test_tasks_form_a_sequence_checked_from_the_state():
    seen = []
    e = widgets.QueryExplorer(backend="agg", tasks=two_tasks(seen))
    assert seen[-1] is e.state  # the predicate reads the explorer's state, nothing else
    assert e.tasks_met == e.tasks_reached == (False, False)
    lines = box_lines(e)
    assert len(lines) == 1  # only the open task: the next one stays hidden
    assert "☐" in lines[0] and "Task 1 of 2 (to do):" in lines[0]
    assert "Switch to hard retrieval." in lines[0]
    e.controls["retrieval"].value = "hard"
    assert seen[-1] is e.state and e.tasks_met == (True, True)  # one-hot: weight 1 on one source
    assert e.tasks_reached == (True, True)
    lines = box_lines(e)
    assert len(lines) == 2 and all("✓" in x and "(done)" in x for x in lines)


def test_reached_tasks_stay_reached_and_reset_keeps_the_tasks():
    e = widgets.QueryExplorer(backend="agg", tasks=two_tasks())
    e.set(temperature=0.05)  # soft, but sharp: the second goal only
    assert e.tasks_met == (False, True) and e.tasks_reached == (False, True)
    assert len(box_lines(e)) == 1  # the sequence waits for task 1
    e.controls["retrieval"].value = "hard"
    e.reset()
    assert e.controls["retrieval"].value == "soft"
    assert len(e.tasks) == 2 and e.tasks_met == (False, False)
    assert e.tasks_reached == (True, True) and len(box_lines(e)) == 2


def test_tasks_are_shown_in_notebooks_and_hidden_in_presentation_unless_asked():
    plain = widgets.TemperatureExplorer(backend="agg")
    assert plain.show_tasks and plain.task_box.layout.display is None
    children = plain.widget.children
    assert children.index(plain.task_box) == 1  # under the title, before the controls
    assert "al-tasks" in plain.task_box._dom_classes
    big = widgets.TemperatureExplorer(backend="agg", presentation=True)
    assert not big.show_tasks and big.task_box.layout.display == "none"
    side = big.widget.children[1].children[0]
    assert side.children[0] is big.task_box
    big.show_tasks = True
    assert big.task_box.layout.display is None
    asked = widgets.TemperatureExplorer(backend="agg", presentation=True, show_tasks=True)
    assert asked.show_tasks and asked.task_box.layout.display is None
    hidden = widgets.TemperatureExplorer(backend="agg", show_tasks=False)
    assert hidden.task_box.layout.display == "none"
    hidden.controls["temperature"].value = 0.2509
    assert hidden.tasks_reached[0]  # hidden, still checked


def test_no_tasks_no_box_and_tasks_replace_the_class_tasks():
    none = widgets.TemperatureExplorer(backend="agg", tasks=[])
    assert none.tasks == () and none.tasks_met == () and none.task_box.layout.display == "none"
    assert widgets.HullExplorer(backend="agg", tasks=[]).task_box.layout.display == "none"
    own = widgets.TemperatureExplorer(backend="agg", tasks=two_tasks()[1:])
    assert [t.goal for t in own.tasks] == ["Put more than 0.9 of the weight on one source."]


@pytest.mark.parametrize("tasks,error,message", [
    (Task("Go.", bool), TypeError, "tasks must be a sequence of Task, got Task"),
    (["Go."], TypeError, "tasks must be a sequence of Task, got an item of type str"),
])
def test_bad_tasks_are_named(tasks, error, message):
    with pytest.raises(error, match=message):
        widgets.TemperatureExplorer(backend="agg", tasks=tasks)


def test_a_task_needs_a_sentence_and_a_predicate():
    with pytest.raises(ValueError, match="goal must be a non-empty sentence"):
        Task("  ", bool)
    with pytest.raises(TypeError, match="check must be a function of the explorer's state"):
        Task("Go.", True)


def test_a_broken_predicate_is_shown_not_raised(capsys):
    e = widgets.TemperatureExplorer(backend="agg", tasks=[Task("Never.", lambda s: s.nothing)])
    assert isinstance(e.last_error, AttributeError)
    assert "unexpected error" in e.plot.messages()["error"]
    e.controls["temperature"].value = 0.5  # still no exception into the notebook
    assert capsys.readouterr().out == ""


def test_the_model_explorers_tasks_read_what_the_model_decoded():
    """Task 1: the smallest covering window (half-width S // 2, positions 1..S) reverses a
    10-symbol source, one position less does not; task 2: a temperature that breaks the output
    while every step's largest weight stays on its true position."""
    from attention_lab.toy.explorer import ModelExplorer, smallest_covering_half_width

    assert [smallest_covering_half_width(S) for S in (3, 9, 10, 12)] == [1, 4, 5, 6]
    e = ModelExplorer(backend="agg")
    e.set(window=True, centre=6, half_width=5)  # positions 1..11: covers 1..10 too
    assert e.state.exact and e.tasks_met[0]
    e.set(window=False, temperature=5.0)
    s = e.state
    assert not s.exact and s.aligned.all() and e.tasks_met == (False, True)
    e.set(temperature=10.0)  # broken, and no longer aligned: not the lesson
    assert not e.state.exact and not e.state.aligned.all() and not e.tasks_met[1]


def test_the_model_explorer_uses_the_same_tasks():
    from attention_lab.toy.explorer import ModelExplorer

    task = Task("Find a half-width at which a window centred on position 5 still "
                "decodes 'abcdefghi' correctly.",
                lambda s: s.window is not None and s.window[0] == 5 and s.exact)
    e = ModelExplorer(backend="agg", source="abcdefghi", tasks=[task])
    assert e.show_tasks and e.tasks_met == (False,)  # no window yet
    e.set(window=True, centre=5, half_width=1)
    assert e.tasks_met == (False,) and not e.state.exact
    e.set(half_width=4)
    assert e.state.exact and e.tasks_met == (True,) and "✓" in e.task_box.value
    e.reset()
    assert e.tasks_reached == (True,)
    assert not ModelExplorer(backend="agg", presentation=True).show_tasks


def test_the_hull_edge_task_is_not_met_when_every_weight_is_0():
    """Task 1 ends with w1 = w2 = 0; sliding w3 to 0 next gives weights (0, 0, 0) and context
    0 ('nothing to mix'): no point of the edge from value 1 to value 2, yet |w1 - w2| <= 0.02
    and w3 == 0 ticked the edge task off."""
    e = widgets.HullExplorer(backend="agg")
    e.set(w1=0.0, w2=0.0, w3=0.5)
    assert e.tasks_met[0]
    e.set(w3=0.0)
    assert e.state.empty and not e.tasks_met[1] and not e.tasks_reached[1]
