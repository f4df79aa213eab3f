"""Fixtures of the explorer tests (the checks they share are in explorer_checks.py)."""

from __future__ import annotations

import pytest

from attention_lab import widgets


@pytest.fixture(scope="session")
def explorers():
    """One headless (Agg) instance of every explorer, shared by the tests of a session; tests
    reset the ones they use."""
    return {name: cls(backend="agg") for name, cls in widgets.EXPLORERS.items()}


@pytest.fixture
def explorer(request, explorers):
    e = explorers[request.param]
    e.reset()
    yield e
    e.reset()
