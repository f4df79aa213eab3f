"""The example ``jupyterhub_config.py`` without a hub: its spawn hook, which gives each student
their copy of the student bundle's notebooks, called as JupyterHub calls it before a server
starts (the browser test, tests/browser/test_browser_hub.py, runs the whole hub).

The file is run as JupyterHub runs it (``get_config`` given), with the bundle replaced by a small
folder of the same shape, so that a test can change it as an update of the course would."""

from __future__ import annotations

import os
import pwd
import shutil
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


def spawner(home: Path, name: str = "ada", python: str = sys.executable,
            log=SimpleNamespace(warning=print)):
    """What the hook reads of JupyterHub's spawner: the user, the home, the server's command and
    the hub's log."""
    return SimpleNamespace(user=SimpleNamespace(name=name), home_dir=str(home),
                           cmd=[python, "-m", "jupyterhub.singleuser"], log=log)


def test_a_students_notebooks_are_theirs_alone(hub_config, tmp_path):
    """On a hub of system accounts made with useradd (Debian: homes of mode 755), bob read ada's
    notebooks and her hand-in; the copy the hook makes is now the student's alone."""
    home = tmp_path / "home" / "ada"
    hub_config["copy_notebooks"](spawner(home))
    assert (home / "notebooks" / "01_intuition.ipynb").read_text() == "level 1, version 1"
    mode = (home / "notebooks").stat().st_mode
    assert mode & 0o077 == 0, oct(mode)


def test_a_course_update_adds_what_is_new_and_keeps_the_students_work(hub_config, tmp_path):
    """A second start after the instructor updated the course (a new bundle) gives the student
    what their copy lacks (a new exercise notebook, the notebook they deleted), and never touches a
    file they have, changed or not."""
    home = tmp_path / "home" / "ada"
    hook = hub_config["copy_notebooks"]
    hook(spawner(home))
    mine = home / "notebooks" / "exercises" / "01_ex.ipynb"
    mine.write_text("ada's answers")
    (home / "notebooks" / "02_mechanics.ipynb").unlink()
    hook(spawner(home))  # a restart: nothing changes but the deleted notebook is back
    assert mine.read_text() == "ada's answers"
    assert (home / "notebooks" / "02_mechanics.ipynb").read_text() == "level 2, version 1"
    hub_config["BUNDLE"] = make_bundle(tmp_path / "bundle-2", {
        "01_intuition.ipynb": "level 1, version 2", "02_mechanics.ipynb": "level 2, version 2",
        "exercises/01_ex.ipynb": "stub, version 2", "exercises/02_ex.ipynb": "new exercises"})
    hook(spawner(home))
    assert mine.read_text() == "ada's answers"
    assert (home / "notebooks" / "01_intuition.ipynb").read_text() == "level 1, version 1"
    assert (home / "notebooks" / "exercises" / "02_ex.ipynb").read_text() == "new exercises"


def _root_with(account: str) -> str | None:
    if os.geteuid() != 0:
        return "needs root: the hook switches to the student's account only in a hub run as root"
    try:
        pwd.getpwnam(account)
    except KeyError:
        return f"no {account!r} account"
    return None


@pytest.mark.skipif(bool(_root_with("nobody")), reason=str(_root_with("nobody")))
def test_a_python_students_cannot_run_is_named_when_the_first_student_starts(hub_config,
                                                                               tmp_path):
    """The page's venv, made with a Python under /root (pyenv's), gave every student a bare
    '500: Unhandled error starting server' and the hub's log 'Permission denied:
    .venv/bin/python3'; the hook, which runs that Python as the student, now stops the start with
    what is wrong and what to do."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "python3").symlink_to(sys.executable)
    home = tmp_path / "home" / "nobody"
    home.mkdir(parents=True)
    shutil.chown(home, "nobody")
    with pytest.raises(RuntimeError) as err:
        hub_config["copy_notebooks"](spawner(home, "nobody", python=str(private / "python3")))
    said = str(err.value)
    assert str(private / "python3") in said and "nobody" in said, said
    assert "every account can run" in said and "jupyterhub.md" in said, said


@pytest.mark.skipif(bool(_root_with("nobody")) or not os.access("/usr/bin/python3", os.X_OK),
                    reason=str(_root_with("nobody") or "no /usr/bin/python3"))
def test_the_copy_is_made_as_the_student(hub_config, tmp_path):
    """A hub run as root copies as the student's own account: their files are theirs, and a link
    they made in their copy leads the hub's writes nowhere they could not write themselves."""
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="al-hub-"))  # the account can reach it, unlike tmp_path
    try:
        top.chmod(0o755)
        hub_config["BUNDLE"] = shutil.copytree(hub_config["BUNDLE"], top / "bundle")
        (top / "checkout").mkdir(mode=0o700)
        hub_config["LAB"] = top / "checkout"  # private, as the page asks
        home = top / "home"
        home.mkdir()
        shutil.chown(home, "nobody")
        hook = hub_config["copy_notebooks"]
        hook(spawner(home, "nobody", python="/usr/bin/python3"))
        assert (home / "notebooks" / "01_intuition.ipynb").owner() == "nobody"
        assert (home / "notebooks" / "exercises" / "01_ex.ipynb").owner() == "nobody"
        shutil.rmtree(home / "notebooks" / "exercises")
        elsewhere = top / "root-only"
        elsewhere.mkdir(mode=0o755)
        (home / "notebooks" / "exercises").symlink_to(elsewhere)
        hook(spawner(home, "nobody", python="/usr/bin/python3"))  # a later start
        assert list(elsewhere.iterdir()) == []  # nobody cannot write there, so neither did the hub
        assert (home / "notebooks").stat().st_mode & 0o077 == 0
    finally:
        shutil.rmtree(top)


@pytest.mark.skipif(bool(_root_with("nobody")) or not os.access("/usr/bin/python3", os.X_OK),
                    reason=str(_root_with("nobody") or "no /usr/bin/python3"))
def test_a_checkout_students_can_read_stops_their_start(hub_config, tmp_path):
    """With the page's chmod of notebooks/exercises/solutions/ alone, a student's terminal still
    read the answers in the checkout's tests/ (tests/_exercise_answers.py) and its git history;
    a hub run as root now starts no student's server while their account can enter the
    checkout, and says how to keep it private."""
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="al-hub-"))
    try:
        top.chmod(0o755)
        hub_config["BUNDLE"] = shutil.copytree(hub_config["BUNDLE"], top / "bundle")
        (top / "checkout").mkdir(mode=0o755)
        hub_config["LAB"] = top / "checkout"
        home = top / "home"
        home.mkdir()
        shutil.chown(home, "nobody")
        with pytest.raises(RuntimeError) as err:
            hub_config["copy_notebooks"](spawner(home, "nobody", python="/usr/bin/python3"))
        assert f"chmod 700 {top / 'checkout'}" in str(err.value), str(err.value)
    finally:
        shutil.rmtree(top)


def test_a_student_whose_notebooks_is_broken_gets_the_notebooks_beside_it_with_a_note(hub_config,
                                                                                      tmp_path):
    """A student with a file where their ``notebooks/`` would go got a server without the lab's
    notebooks, and only a warning in the hub's log. Their server now starts with the notebooks in
    ``attention-lab-notebooks/``, beside what they have, with a note that says why and how to
    have them in ``notebooks/`` again; their file is left as it was. A later start adds there
    what their copy lacks."""
    home = tmp_path / "home" / "ada"
    home.mkdir(parents=True)
    (home / "notebooks").write_text("ada's notes")
    warnings = []
    hook = hub_config["copy_notebooks"]
    hook(spawner(home, log=SimpleNamespace(warning=lambda *a: warnings.append(a[0] % a[1:]))))
    assert (home / "notebooks").read_text() == "ada's notes"
    elsewhere = home / "attention-lab-notebooks"
    assert (elsewhere / "01_intuition.ipynb").read_text() == "level 1, version 1"
    assert (elsewhere / "exercises" / "01_ex.ipynb").read_text() == "stub, version 1"
    assert elsewhere.stat().st_mode & 0o077 == 0
    note = (elsewhere / "NOTE.md").read_text()
    assert "notebooks" in note and "rename" in note and "Stop My Server" in note, note
    assert any("ada" in w and "attention-lab-notebooks" in w for w in warnings), warnings
    (elsewhere / "02_mechanics.ipynb").unlink()
    (elsewhere / "01_intuition.ipynb").write_text("ada's work")
    hook(spawner(home))  # a later start
    assert (elsewhere / "02_mechanics.ipynb").read_text() == "level 2, version 1"
    assert (elsewhere / "01_intuition.ipynb").read_text() == "ada's work"


def test_a_home_the_notebooks_cannot_be_copied_into_stops_the_start_with_what_to_do(hub_config,
                                                                                    tmp_path):
    """Where neither ``notebooks/`` nor ``attention-lab-notebooks/`` can be written, the start
    fails with a message the student sees on the hub's page (JupyterHub shows an error's
    ``jupyterhub_message``, and passes an HTTPError of a quick failure through to the page),
    saying what went wrong and what to do, instead of a server without the lab."""
    from tornado.web import HTTPError

    home = tmp_path / "home" / "ada"
    home.mkdir(parents=True)
    for name in ("notebooks", "attention-lab-notebooks"):
        (home / name).write_text("a file")
    with pytest.raises(HTTPError) as err:
        hub_config["copy_notebooks"](spawner(home))
    said = err.value.jupyterhub_message
    assert "attention-lab-notebooks" in said and "instructor" in said, said
    assert said in str(err.value)  # and the hub's log
