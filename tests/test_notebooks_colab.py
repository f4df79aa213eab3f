"""The level notebooks open on Colab (the site's launch button): their first code cell installs
the lab when ``attention_lab`` cannot be imported, from the repository the site's buttons name
(``docs/conf.py``), and says so in one line; where the lab is installed it prints nothing, so its
stored output stays empty. (Whether Colab then runs the notebook cannot be tested here: no
network.)"""

from __future__ import annotations

import importlib.util
import runpy
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "notebooks"
CONF = runpy.run_path(str(ROOT / "docs" / "conf.py"))
LEVELS = ["01_intuition", "02_mechanics", "03_maths_and_code", "04_research"]


def install_cell(stem: str) -> str:
    """The first code cell of ``notebooks/<stem>.py``; only markdown (the title) comes before."""
    cells = jupytext.read(NB / f"{stem}.py").cells
    first = next(i for i, c in enumerate(cells) if c.cell_type == "code")
    assert all(c.cell_type == "markdown" for c in cells[:first])
    return cells[first].source


def run(source: str, monkeypatch, capsys, *, installed: bool) -> tuple[str, list]:
    """Run the cell in this process, with pip replaced by a recorder and, unless ``installed``,
    ``attention_lab`` reported missing: (what it printed, the commands it ran)."""
    commands = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: commands.append((cmd, kw)))
    if not installed:
        real = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a: None if name == "attention_lab" else real(name, *a))
    exec(compile(source, "<install cell>", "exec"), {})
    return capsys.readouterr().out, commands


@pytest.mark.parametrize("stem", LEVELS)
def test_the_first_code_cell_is_the_install_cell_and_stores_no_output(stem):
    source = install_cell(stem)
    assert source == install_cell(LEVELS[0]), f"{stem}: another install cell than 01's"
    assert "pip" in source and "find_spec(\"attention_lab\")" in source
    nb = nbformat.read(NB / f"{stem}.ipynb", as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.source == source and first.outputs == []


def test_where_the_lab_is_installed_the_cell_prints_and_installs_nothing(monkeypatch, capsys):
    out, commands = run(install_cell(LEVELS[0]), monkeypatch, capsys, installed=True)
    assert out == "" and commands == []


def test_without_the_lab_it_says_so_and_installs_it_from_the_sites_repository(monkeypatch,
                                                                                capsys):
    out, commands = run(install_cell(LEVELS[0]), monkeypatch, capsys, installed=False)
    assert len(out.splitlines()) == 1 and "installing it from" in out, out
    assert CONF["REPOSITORY"] in out
    [(cmd, kw)] = commands
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"] and kw.get("check") is True
    # the repository and branch the site's launch buttons use; torch is not named (Colab's stays)
    assert cmd[-1] == f"attention-lab[notebooks] @ git+{CONF['REPOSITORY']}@{CONF['BRANCH']}"
    assert not any("torch" in part for part in cmd)
