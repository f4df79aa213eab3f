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
    assert e.accessible_label.startswith(f"Figure of the {e.title}. {e.figure_label}")
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
