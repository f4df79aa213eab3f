"""Accessibility in the explorers' widget tree (the browser test checks the page itself): an
Accessibility widget in every explorer names its figure and makes the readout a live region."""

from __future__ import annotations

import pytest

from attention_lab import widgets
from attention_lab.widgets._a11y import Accessibility


@pytest.mark.parametrize("name", list(widgets.EXPLORERS))
def test_every_explorer_carries_its_accessibility_widget(explorers, name):
    e = explorers[name]
    box = e.widget
    found = [w for w in box.children if isinstance(w, Accessibility)]
    assert len(found) == 1 and found[0] is e.accessibility
    assert e.accessibility.label == e.accessible_label
    assert e.accessible_label.startswith(f"Figure of the {e.title}") and e.figure_label in \
        e.accessible_label
    assert len(e.figure_label) > 40
    assert "al-figure" in e.view.widget._dom_classes and "al-readout" in e.readout._dom_classes


def test_the_script_sets_the_live_region_the_image_role_and_the_names():
    esm = Accessibility._esm
    for needle in ("'aria-live', 'polite'", "'role', 'status'", "'role', 'img'",
                   "'.noUi-handle'", "'aria-label'", "'.al-explorer'", "MutationObserver"):
        assert needle in esm, needle


def test_presentation_mode_keeps_accessibility():
    big = widgets.QueryExplorer(backend="agg", presentation=True)
    side, _figure = big.widget.children[1].children
    assert big.accessibility in side.children


def test_what_the_figure_says_in_words_the_readout_says_too():
    """A student who cannot see the figure reads its messages (an all-masked row's policy, an
    empty window, why the kernel returned NaN ...) in the readout, a live region, in every state
    the tasks lead to and those below."""
    from test_tasks import SOLUTIONS, on_grid

    more = {"hull": {"w1": 0.0, "w2": 0.0, "w3": 0.0}, "localp": {"half_width": 0.0, "logit": 0.1}}
    said = set()
    for name, cls in widgets.EXPLORERS.items():
        e = cls(backend="agg")
        for values in [{}, more.get(name, {})] + [v for (n, _), pair in SOLUTIONS.items()
                                                  if n == name for v in pair]:
            e.set(**on_grid(e, values))
            readout = " ".join(text_of(e.readout.value).split())
            for message in e.plot.messages().values():
                assert " ".join(message.split()) in readout, (name, values, message, readout)
                said.add(name)
    assert said == {"mask", "window", "localp", "axis", "precision", "hull"}, said


def test_an_unexpected_error_is_in_the_readout_not_the_old_numbers(monkeypatch):
    e = widgets.TemperatureExplorer(backend="agg")
    monkeypatch.setattr(e, "_compute", lambda: 1 / 0)
    e.set(temperature=0.5)
    assert text_of(e.readout.value).strip() == e.plot.messages()["error"]
    assert "ZeroDivisionError" in e.readout.value and "0.361" not in e.readout.value


def text_of(html_text: str) -> str:
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", " ", html_text))


def test_the_figures_name_says_where_its_numbers_are_as_they_are_shown():
    """The figure's accessible name told a screen reader the numbers were in a table below it
    (most readouts are paragraphs), and read "...normalise?." after a title ending in a question."""
    from attention_lab.toy.explorer import ModelExplorer

    for e in [*(cls(backend="agg") for cls in widgets.EXPLORERS.values()),
              ModelExplorer(backend="agg")]:
        assert ("table" in e.accessible_label) <= ("<table" in e.readout.value), type(e).__name__
        assert e.accessible_label.endswith("below the figure.") and "?." not in e.accessible_label
