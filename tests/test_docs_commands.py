"""The maintainers' commands as the site describes them (``docs/maintainers/``): each command's
``--help`` says what the command and each of its arguments is, and a command does what its page
says it does."""

from __future__ import annotations

import argparse
import importlib

import pytest

from attention_lab.__main__ import COMMANDS

#: every command line of the checkout: the lab's commands and the maintainers' tools
MODULES = [module for module, _ in COMMANDS.values()] + [
    "attention_lab.nbtools", "attention_lab.exercises.authoring", "benchmarks.run",
    "benchmarks.bench_demo", "benchmarks.class_generator"]


class _Parsed(Exception):
    pass


def parsers_of(module: str, monkeypatch) -> list[argparse.ArgumentParser]:
    """The parsers ``module.main(["--help"])`` asks to parse its arguments (stopped there)."""
    seen = []

    def record(self, *args, **kwargs):
        seen.append(self)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", record)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", record)
    with pytest.raises(_Parsed):
        importlib.import_module(module).main(["--help"])
    return seen


def unexplained(parser: argparse.ArgumentParser, name: str) -> list[str]:
    """What of ``parser`` (and its subcommands) its ``--help`` lists without a word about it."""
    bare = [] if parser.description else [f"{name}: no description"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            said = {a.dest: a.help for a in action._choices_actions}
            bare += [f"{name} {sub}: no help" for sub in action.choices if not said.get(sub)]
            for sub, subparser in action.choices.items():
                bare += unexplained(subparser, f"{name} {sub}")
        elif not action.help and not isinstance(action, argparse._HelpAction):
            bare.append(f"{name}: {'/'.join(action.option_strings) or action.dest}")
    return bare


@pytest.mark.parametrize("module", MODULES)
def test_every_commands_help_says_what_it_and_each_argument_is(module, monkeypatch):
    """``nbtools --help`` listed ``paths`` and ``folder`` bare, under no description, as did
    ``exercises.authoring`` and its ``build``; ``demo``'s ``--theme`` and the load benchmark's
    ``--slider-seconds`` and ``--plain-max-n`` had no help either."""
    parsers = parsers_of(module, monkeypatch)
    assert parsers, module
    assert not [b for p in parsers for b in unexplained(p, p.prog)]


def test_the_benchmarks_default_run_leaves_out_the_demos_long_run(monkeypatch, capsys):
    """``python -m benchmarks.run``, 'every group but demo's long run' on the benchmarks page,
    ran the demo's 20 minutes too; it runs it only when named, and its help says so."""
    from benchmarks import run

    ran = []
    for m in run.modules():
        monkeypatch.setattr(m, "run", lambda quick, group=m.GROUP: ran.append(group) or [])
    assert run.main(["--quick"]) == 0
    assert "demo" not in ran and {"core", "grading", "docs"} <= set(ran), ran
    ran.clear()
    assert run.main(["demo", "--quick"]) == 0 and ran == ["demo"]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        run.main(["--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "default: every group but demo" in said and "core" in said


def test_a_notebook_cell_that_raises_is_named_not_a_traceback(tmp_path, capsys):
    """``nbtools execute`` of a notebook whose cell raised printed some 30 lines of nbclient's
    traceback before the cell's error; it now says which cell raised what, and that the .ipynb
    was not written, exit code 2."""
    from attention_lab import nbtools

    (tmp_path / "a.py").write_text("# %%\nx = 1\n\n# %% [markdown]\n# text\n\n# %%\nx / 0\n")
    assert nbtools.main(["execute", str(tmp_path / "a.py")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"nbtools: error: {tmp_path / 'a.py'}: cell 2 ('x / 0') raised ZeroDivisionError: "
        f"division by zero; a.ipynb was not written"]
    assert not (tmp_path / "a.ipynb").exists()


@pytest.mark.parametrize("cell,said", [
    ("import time\ntime.sleep(30)", "ran longer than 2 s"),
    ("import os\nos._exit(1)", "stopped the kernel (it died)")])
def test_a_cell_that_hangs_or_kills_the_kernel_is_named_not_a_traceback(tmp_path, cell, said):
    """A cell past the time limit, or one whose kernel died, is named like a cell that raised."""
    from attention_lab import nbtools

    (tmp_path / "a.py").write_text(f"# %%\nx = 1\n\n# %%\n{cell}\n\n# %%\ny = 2\n")
    with pytest.raises(nbtools.CellFailed) as err:
        nbtools.execute(tmp_path / "a.py", timeout=2)
    first = cell.splitlines()[0]
    assert str(err.value) == (f"{tmp_path / 'a.py'}: cell 1 ({first!r}) {said}; a.ipynb was not "
                              f"written")
    assert not (tmp_path / "a.ipynb").exists()


def test_a_solution_with_a_broken_marker_is_named_not_a_traceback(tmp_path, monkeypatch,
                                                                  capsys):
    """``exercises.authoring build`` over a solution whose block was not closed raised
    MarkerError with a traceback and without the file's name; it now names the file and the
    problem, exit code 2."""
    from attention_lab.exercises import authoring

    monkeypatch.setattr(authoring, "SOLUTIONS", tmp_path / "solutions")
    monkeypatch.setattr(authoring, "FOLDER", tmp_path)
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "02_mechanics_exercises_solutions.py").write_text(
        "# %%\ndef f():\n    # BEGIN SOLUTION\n    return 1\n")
    assert authoring.main(["build"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "authoring: error: 02_mechanics_exercises_solutions.py: a solution block is not closed "
        "(missing END SOLUTION); nothing more was written"]
