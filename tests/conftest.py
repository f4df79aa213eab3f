"""Shared pytest configuration."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# Property tests: deterministic (derandomized) and bounded, so the suite is reproducible and fast.
settings.register_profile(
    "lab", max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", 60)), derandomize=True,
    deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("lab")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "allow_numpy_warnings: do not turn numpy floating-point warnings into errors")
    config.addinivalue_line(
        "markers", "hub: the JupyterHub test (about a minute; deselect with -m 'not hub')")


@pytest.fixture(autouse=True)
def _no_numpy_warnings_leak(request):
    """Overflow, invalid-value and divide-by-zero warnings from numpy inside the package are bugs
    (a student would see them in a notebook): turn them into errors in tests."""
    if request.node.get_closest_marker("allow_numpy_warnings"):
        yield
        return
    import numpy as np

    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        yield


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The lab's site, built once per test run as a maintainer builds it (``python -m
    attention_lab docs OUT_DIR`` in a fresh process: offline, nothing executed, warnings as
    errors): ``(the HTML folder, the command's stderr)``. The test command's two workers share
    one build (pytest-xdist's recipe: a lock in the run's common temporary folder)."""
    import subprocess
    import sys

    from filelock import FileLock

    run = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run = run.parent  # the folder all workers of this run share
    out, log = run / "site" / "html", run / "site" / "stderr.txt"
    with FileLock(run / "site.lock"):
        if not log.exists():
            done = subprocess.run([sys.executable, "-m", "attention_lab", "docs", str(out)],
                                  capture_output=True, text=True)
            assert done.returncode == 0, f"the site did not build:\n{done.stdout}\n{done.stderr}"
            log.write_text(done.stderr)
    return out, log.read_text()
