"""The example ``jupyterhub_config.py`` without a hub: its spawn hook, which gives each student their
copy of the student bundle's notebooks, called as JupyterHub calls it before a server starts (the
browser test, tests/browser/test_browser_hub.py, runs the whole hub).

The file is run as JupyterHub runs it (``get_config`` given), with the bundle replaced by a small
folder of the same shape, so that a test can change it as an update of the course would."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from traitlets.config import Config

from attention_lab.grading import release

ROOT = Path(__file__).resolve().parents[2]


def make_bundle(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (folder / "notebooks" / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / "notebooks" / rel).write_text(text)
    return folder


@pytest.fixture
def hub_config(tmp_path, monkeypatch):
    """The example configuration's globals (``c``, ``copy_notebooks``, ``BUNDLE``), loaded with a
    small bundle: two level notebooks and an exercise notebook."""
    bundle = make_bundle(tmp_path / "bundle-1", {"01_intuition.ipynb": "level 1, version 1",
                                                 "02_mechanics.ipynb": "level 2, version 1",
                                                 "exercises/01_ex.ipynb": "stub, version 1"})
    monkeypatch.setattr(release, "student_copy", lambda cache: bundle)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the file puts its checkout first
    config = Config()
    scope = {"get_config": lambda: config, "__file__": str(ROOT / "jupyterhub_config.py")}
    exec(compile((ROOT / "jupyterhub_config.py").read_text(), "jupyterhub_config.py", "exec"),
         scope)
    return scope


def spawner(home: Path, name: str = "ada", python: str = sys.executable):
    """What the hook reads of JupyterHub's spawner: the user, the home and the server's command."""
    return SimpleNamespace(user=SimpleNamespace(name=name), home_dir=str(home),
                           cmd=[python, "-m", "jupyterhub.singleuser"],
                           log=SimpleNamespace(warning=print))


def test_a_students_notebooks_are_theirs_alone(hub_config, tmp_path):
    """On a hub of system accounts made with useradd (Debian: homes of mode 755), bob read ada's
    notebooks and her hand-in; the copy the hook makes is now the student's alone."""
    home = tmp_path / "home" / "ada"
    hub_config["copy_notebooks"](spawner(home))
    assert (home / "notebooks" / "01_intuition.ipynb").read_text() == "level 1, version 1"
    assert (home / "notebooks").stat().st_mode & 0o077 == 0, oct((home / "notebooks").stat().st_mode)
