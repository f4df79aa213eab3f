"""``python -m attention_lab release OUT_DIR``: the student bundle, never the solutions.

The answer code is found independently of the authoring markers: every line of a solution
notebook's cells that its student notebook does not have."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from attention_lab.grading import release

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "notebooks" / "exercises"
#: answer lines that the taught material also holds word for word: a generic line of the
#: package's own code (the package has to be in the bundle for the notebooks to run) and a line
#: the level-3 notebook teaches
SHARED = {"w = np.asarray(weights, dtype=float)": ("attention_lab/",),
          "scores = keys @ query": ("notebooks/01_intuition.ipynb",
                                    "notebooks/03_maths_and_code.ipynb")}


def cell_lines(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    return [ln.strip() for c in nb["cells"] for ln in "".join(c["source"]).splitlines()]


def answer_lines() -> set[str]:
    """Lines only the solution notebooks have (code and model answers), minus bare brackets and
    the authoring tool's markers."""
    lines = set()
    for sol in sorted((EXERCISES / "solutions").glob("*_solutions.ipynb")):
        student = EXERCISES / sol.name.replace("_solutions", "")
        lines |= set(cell_lines(sol)) - set(cell_lines(student))
    return {ln for ln in lines if re.search(r"\w", ln) and "SOLUTION" not in ln}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "course-bundle"
    assert release.main([str(out)]) == 0
    return out


def test_the_bundle_holds_what_students_need(bundle):
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    notebooks = [f for f in files if f.endswith(".ipynb")]
    assert notebooks == ["notebooks/01_intuition.ipynb", "notebooks/02_mechanics.ipynb",
                         "notebooks/03_maths_and_code.ipynb", "notebooks/04_research.ipynb",
                         "notebooks/exercises/01_intuition_exercises.ipynb",
                         "notebooks/exercises/02_mechanics_exercises.ipynb",
                         "notebooks/exercises/03_maths_and_code_exercises.ipynb",
                         "notebooks/exercises/04_research_exercises.ipynb"]
    assert {"README.md", "requirements.txt", "pyproject.toml", "attention_lab/grading/submit.py",
            "attention_lab/toy/weights/reversal_dot.pt"} <= set(files)
    assert not [f for f in files if "solution" in f.lower() or "__pycache__" in f
                or f.startswith(("tests/", "benchmarks/"))]
    for nb in notebooks[4:]:
        meta = json.loads((bundle / nb).read_text())["metadata"]
        assert meta["attention_lab"]["assignment"] == Path(nb).name.split("_exercises")[0]
    pins = (bundle / "requirements.txt").read_text()
    assert "torch==" in pins and "-e ." in pins and "pytest" not in pins
    readme = (bundle / "README.md").read_text()
    assert "submit 02_mechanics_exercises.ipynb --student YOUR_ID" in readme
    assert "{{" not in readme and "{%" not in readme


def test_the_readmes_install_steps_run_in_the_order_they_are_written(bundle):
    """A student types the README's commands from the top: the CPU build of torch (Linux
    without a GPU) must come before ``pip install -r requirements.txt``, which otherwise
    downloads the CUDA build (several GB) first."""
    steps = re.search(r"```bash\n(.*?)```", (bundle / "README.md").read_text(), re.S).group(1)
    cpu = steps.index(f"pip install torch=={release.torch_pin()} --index-url "
                      f"https://download.pytorch.org/whl/cpu")
    assert cpu < steps.index("pip install -r requirements.txt") < steps.index("jupyter lab")



#: what a Jupyter server started with a given environment runs and shows: its server extensions,
#: and JupyterLab's labconfig (page_config: the lab extensions it leaves out; its settings defaults)
JUPYTER_SEES = """import json, sys
from jupyter_server.serverapp import ServerApp
from jupyter_server.services.config.manager import ConfigManager
app = ServerApp()
app.initialize(argv=["--allow-root"], new_httpserver=False)
labconfig = ConfigManager(config_dir_name="labconfig")
print(json.dumps({"extensions": [n for n, e in app.extension_manager.extensions.items() if e.enabled],
                  "disabled": labconfig.get("page_config").get("disabledExtensions", {}),
                  "overrides": labconfig.get("default_setting_overrides")}))
"""


def jupyter_sees(env: dict, tmp_path: Path) -> dict:
    """:data:`JUPYTER_SEES` run with ``env`` (and no user configuration of this machine's)."""
    import os
    import subprocess
    import sys

    (tmp_path / "user-config").mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **env,
           "JUPYTER_CONFIG_DIR": str(tmp_path / "user-config"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    done = subprocess.run([sys.executable, "-c", JUPYTER_SEES], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_readmes_launch_line_opens_jupyterlab_without_the_news_question(bundle, tmp_path):
    """A student who followed the bundle's README was greeted by JupyterLab's 'notified about
    official Jupyter news?' pop-up (the repository's jupyter-config/ turns it off; the bundle had
    none); its launch line now points Jupyter at the bundle's jupyter-config/."""
    import shlex

    steps = re.search(r"```bash\n(.*?)```", (bundle / "README.md").read_text(), re.S).group(1)
    words = shlex.split(steps.strip().splitlines()[-1])
    env = dict(w.split("=", 1) for w in words if re.fullmatch(r"[A-Z_]+=\S+", w))
    assert words[len(env):][:2] == [".venv/bin/jupyter", "lab"], words
    seen = jupyter_sees({k: v.replace("$PWD", str(bundle)) for k, v in env.items()}, tmp_path)
    assert seen["overrides"]["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    assert "jupyterlab" in seen["extensions"]

def test_the_bundle_leaves_out_the_graders_sandbox_the_demo_and_the_authoring_tools(bundle,
                                                                                  tmp_path):
    """The bundle's package has none of the modules a student never runs, and works without
    them: an exercise checks, and ``submit`` grades a notebook (hard limits, no namespaces)."""
    import subprocess
    import sys

    package = bundle / "attention_lab"
    assert {"grading/namespaces.py", "demo/", "exercises/authoring.py", "nbtools.py",
            "grading/release.py"} <= set(release.NOT_IN_STUDENT_COPY)
    for rel in release.NOT_IN_STUDENT_COPY:
        assert not (package / rel).exists(), rel
    assert (package / "grading" / "sandbox.py").exists() and not (package / "demo").exists()
    script = (
        "import sys, attention_lab\n"
        "assert attention_lab.__file__.startswith(sys.argv[1]), attention_lab.__file__\n"
        "from attention_lab.exercises import check\n"
        "print(check('2.1', lambda query, keys: keys @ query, show=False).status)\n"
        "print(check('2.1', lambda query, keys: query, show=False).status)\n"
        "from attention_lab.grading import sandbox\n"
        "print(sandbox.isolation_problem())\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(bundle), "HOME": str(bundle)}
    out = subprocess.run([sys.executable, "-c", script, str(package)], capture_output=True,
                         text=True, env=env, cwd=bundle, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "pass", "fail", "this copy of the lab (the student bundle) has no namespace sandbox"]
    work = tmp_path / "02_mechanics_exercises.ipynb"
    shutil.copy(bundle / "notebooks" / "exercises" / work.name, work)
    out = subprocess.run([sys.executable, "-m", "attention_lab", "submit", str(work),
                          "--student", "ada"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    results = json.loads(work.with_suffix(".submission.json").read_text())["results"]
    assert results["2.1"]["status"] == "not_attempted"


def test_no_answer_code_of_the_solution_notebooks_is_anywhere_in_the_bundle(bundle):
    answers = answer_lines()
    assert len(answers) > 150  # the check has teeth: code lines and model answers
    found = {}
    for path in (p for p in bundle.rglob("*") if p.is_file()):
        text = set(release.searchable_text(path).splitlines())
        for line in answers & text:
            found.setdefault(line, []).append(path.relative_to(bundle).as_posix())
    assert set(found) <= set(SHARED), {k: v for k, v in found.items() if k not in SHARED}
    for line in found:  # and those only where the taught material has them
        assert all(p.startswith(SHARED[line]) for p in found[line]), (line, found[line])


def test_the_guard_refuses_a_bundle_with_a_solution_in_it(tmp_path, monkeypatch, capsys):
    build = release.build

    def careless(dest, omit):
        build(dest, omit)
        shutil.copy(EXERCISES / "solutions" / "02_mechanics_exercises_solutions.ipynb",
                    dest / "notebooks" / "exercises" / "extra.ipynb")

    monkeypatch.setattr(release, "build", careless)
    assert release.main([str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "a solution would be in the bundle (notebooks/exercises/extra.ipynb" in err
    assert sorted(tmp_path.iterdir()) == []  # nothing written, no scratch left


def test_release_refuses_a_used_folder_and_stale_student_notebooks(tmp_path, monkeypatch,
                                                                   capsys):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "notes.txt").write_text("mine")
    assert release.main([str(tmp_path / "used")]) == 2
    assert "is not an empty folder" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "used").iterdir()] == ["notes.txt"]
    stale = tmp_path / "stale.py"
    stale.write_text("# %%\nx = 1\n")
    monkeypatch.setattr(release.authoring, "student_path", lambda sol: stale)
    assert release.main([str(tmp_path / "new")]) == 2
    assert "authoring build --execute" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_release_into_the_empty_folder_it_is_run_in(tmp_path, monkeypatch, capsys):
    """``mkdir bundle && cd bundle && python -m attention_lab release .``: an empty folder is
    allowed, the current one too (it was an OSError traceback, 'Invalid argument: .')."""
    (tmp_path / "bundle").mkdir()
    monkeypatch.chdir(tmp_path / "bundle")
    assert release.main(["."]) == 0
    assert "wrote the student bundle" in capsys.readouterr().out
    assert (tmp_path / "bundle" / "README.md").is_file()
    assert (tmp_path / "bundle" / "notebooks" / "exercises" / "02_mechanics_exercises.ipynb"
            ).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]  # no scratch left


def test_exercise_notebooks_are_handed_out_unrun_and_level_notebooks_as_checked(bundle):
    """An exercise notebook starts with nothing run (no outputs, no execution counts); a level
    notebook is the checkout's, whose stored outputs hold no answers
    (tests/test_notebooks_spoilers.py)."""
    for stem in release.NOTEBOOKS.values():
        nb = json.loads((bundle / "notebooks" / "exercises" / f"{stem}.ipynb").read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
        checked = json.loads((EXERCISES / f"{stem}.ipynb").read_text())
        assert [c["source"] for c in nb["cells"]] == [c["source"] for c in checked["cells"]]
        assert nb["metadata"]["attention_lab"] == checked["metadata"]["attention_lab"]
    for name in release.LEVELS:
        assert (bundle / "notebooks" / f"{name}.ipynb").read_bytes() == (
            ROOT / "notebooks" / f"{name}.ipynb").read_bytes()


def test_the_student_copy_is_built_once_per_version_of_the_sources(tmp_path, monkeypatch):
    built = []
    real = release.release
    monkeypatch.setattr(release, "release", lambda out: built.append(out) or real(out))
    first = release.student_copy(tmp_path / "cache")
    assert first.parent == tmp_path / "cache" and first.name == f"bundle-{release.digest()[:16]}"
    assert (first / "notebooks" / "exercises" / "02_mechanics_exercises.ipynb").is_file()
    assert release.student_copy(tmp_path / "cache") == first and built == [first]
    # a changed source: a new bundle beside the old one, which stays as it was
    monkeypatch.setattr(release, "digest", lambda: "f" * 64)
    second = release.student_copy(tmp_path / "cache")
    assert second != first and built == [first, second] and (first / "README.md").is_file()


def test_the_digest_follows_every_source(monkeypatch, tmp_path):
    before = release.digest()
    assert before == release.digest()
    rows = release.sources()
    assert {rel for _, rel in rows} >= {"notebooks/01_intuition.ipynb", "pyproject.toml",
                                        "attention_lab/predict.py",
                                        "notebooks/exercises/04_research_exercises.ipynb"}
    assert not [rel for _, rel in rows if "__pycache__" in rel or "solution" in rel]
    changed = tmp_path / "predict.py"
    changed.write_text("# changed\n")
    monkeypatch.setattr(release, "sources", lambda: [
        (changed if rel == "attention_lab/predict.py" else src, rel) for src, rel in rows])
    assert release.digest() != before


def test_the_bundle_pins_what_the_checkout_pins_for_pip_and_for_repo2docker(bundle):
    """A JupyterHub image is built from the bundle (repo2docker reads its environment.yml), not
    from the repository, which holds the solutions: both pin files keep every pin but the test
    tools, and agree."""
    def pins(text):
        return {ln.strip().lstrip("- ") for ln in text.splitlines()
                if "==" in ln and not ln.strip().startswith("#")}

    req, env = (pins((bundle / n).read_text()) for n in ("requirements.txt", "environment.yml"))
    # a laptop install is what a student needs; the hub image also gets JupyterHub
    assert env - req == {"jupyterhub==5.4.6"} and "torch==2.13.0" in req
    assert "JupyterHub" not in (bundle / "requirements.txt").read_text()
    assert not [p for p in env if p.split("==")[0] in release.NOT_FOR_STUDENTS]
    assert pins((ROOT / "environment.yml").read_text()) - env == {
        p for p in pins((ROOT / "environment.yml").read_text())
        if p.split("==")[0] in release.NOT_FOR_STUDENTS}
    assert "- -e ." in (bundle / "environment.yml").read_text()


def _load_hub_config(monkeypatch, bundles: Path):
    """jupyterhub_config.py loaded as JupyterHub loads it (``get_config`` in its namespace)."""
    from traitlets.config import Config

    config = Config()
    monkeypatch.setenv("ATTENTION_LAB_BUNDLES", str(bundles))
    ns = {"get_config": lambda: config, "__file__": str(ROOT / "jupyterhub_config.py")}
    exec(compile((ROOT / "jupyterhub_config.py").read_text(), "jupyterhub_config.py", "exec"), ns)
    return config, ns


def test_the_hub_hands_each_student_the_bundle_and_runs_the_bundles_package(tmp_path,
                                                                            monkeypatch):
    config, ns = _load_hub_config(monkeypatch, tmp_path / "bundles")
    bundle = ns["BUNDLE"]
    assert bundle.parent == tmp_path / "bundles" and (bundle / "attention_lab").is_dir()
    assert config.Spawner.environment["PYTHONPATH"] == str(bundle)

    class Spawner:  # what the hook reads of JupyterHub's spawner
        home_dir = str(tmp_path / "home" / "ada")
        user = type("User", (), {"name": "ada"})
        cmd = config.Spawner.cmd  # the students' Python, which makes their copy

    config.Spawner.pre_spawn_hook(Spawner)
    home = tmp_path / "home" / "ada"
    got = sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file())
    assert got == sorted(p.relative_to(bundle).as_posix()
                         for p in (bundle / "notebooks").rglob("*") if p.is_file())
    assert release.leaks(home, release.answer_blocks()) == []
    mine = home / "notebooks" / "02_mechanics.ipynb"
    mine.write_text("my work")
    config.Spawner.pre_spawn_hook(Spawner)  # a later start keeps what the student did
    assert mine.read_text() == "my work"


def test_the_hub_starts_students_servers_with_its_own_python(tmp_path, monkeypatch):
    """The instructors' page starts the hub as ``.venv/bin/jupyterhub -f jupyterhub_config.py``,
    the venv not activated: a student's server must still start, with the lab's packages (not a
    ``jupyterhub-singleuser`` looked up on a PATH without the venv: none, or another Python's)."""
    import os
    import subprocess

    from jupyterhub.spawner import LocalProcessSpawner

    config, _ = _load_hub_config(monkeypatch, tmp_path / "bundles")
    cmd = LocalProcessSpawner(config=config).cmd
    program = shutil.which(cmd[0], path=os.defpath)  # the PATH of a hub outside its venv
    assert program, f"a student's server runs {cmd[0]!r}, not on PATH {os.defpath}"
    done = subprocess.run([program, *cmd[1:], "--version"], env={"PATH": os.defpath},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_hub_refuses_to_start_with_a_bundle_it_cannot_build(tmp_path, monkeypatch):
    def stale():
        raise release.ReleaseError("notebooks/exercises/x.py is not what its solution gives")

    monkeypatch.setattr(release, "check_sources", stale)
    with pytest.raises(SystemExit) as exc:
        _load_hub_config(monkeypatch, tmp_path / "bundles")
    assert str(exc.value) == ("attention-lab: cannot build the student bundle: "
                              "notebooks/exercises/x.py is not what its solution gives")
    assert not (tmp_path / "bundles").exists() or not any((tmp_path / "bundles").iterdir())


def test_students_servers_on_the_hub_have_neither_nbgrader_voila_nor_the_news_question(
        tmp_path, monkeypatch):
    """Students on the hub saw an 'Nbgrader' menu, a 'Validate' button and a 'Create Assignment'
    panel, nbgrader's server extensions ran in each of their servers (the hub's one venv has
    nbgrader, for the instructors' nbgrader route), and the news pop-up greeted each of them.
    Their servers now read the bundle's jupyter-config/ (which students can read: the checkout
    is private), which leaves nbgrader out and turns the news question off; the instructor's
    JupyterLab, opened as the repository's README says (its jupyter-config/), keeps nbgrader.
    Voila's server extension is the lecture demo's; a student's server does not start it."""
    config, ns = _load_hub_config(monkeypatch, tmp_path / "bundles")
    env = dict(config.Spawner.environment)
    assert Path(env["JUPYTER_CONFIG_PATH"]).is_relative_to(ns["BUNDLE"]), env
    student = jupyter_sees(env, tmp_path)
    assert student["overrides"]["@jupyterlab/apputils-extension:notification"][
        "fetchNews"] == "false"
    assert "jupyterlab" in student["extensions"]
    assert not [n for n in student["extensions"] if n.startswith(("nbgrader", "voila"))], student
    assert student["disabled"].get("@jupyter/nbgrader") is True, student["disabled"]
    # without the server extension, Voila's preview button would open a page that is not there
    assert student["disabled"].get("@voila-dashboards/jupyterlab-preview") is True
    instructor = jupyter_sees({"JUPYTER_CONFIG_PATH": str(ROOT / "jupyter-config")}, tmp_path)
    assert "nbgrader.server_extensions.formgrader" in instructor["extensions"], instructor
    assert not instructor["disabled"].get("@jupyter/nbgrader"), instructor["disabled"]


def test_the_bundles_command_line_offers_only_what_the_bundle_has(bundle):
    """In the bundle, ``python -m attention_lab --help`` listed release, demo, docs and bench,
    and each answered "not available: No module named 'attention_lab.demo'"; the help now lists
    the bundle's commands, and one it has not says where it runs."""
    import subprocess
    import sys

    def run(*argv):
        return subprocess.run([sys.executable, "-m", "attention_lab", *argv], cwd=bundle,
                              capture_output=True, text=True, timeout=120,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(bundle)})

    listed = re.findall(r"^  (\w+) ", run("--help").stdout, flags=re.M)
    assert "submit" in listed and "grade" in listed
    assert not {"release", "demo", "docs", "bench"} & set(listed), listed
    demo = run("demo")
    assert (demo.returncode, demo.stderr) == (2, "the command 'demo' is not in this copy of the "
                                                 "lab (a student bundle); it runs from a checkout "
                                                 "of the lab's repository\n")


def test_the_bundle_holds_no_module_only_left_out_modules_import(bundle):
    """The bundle carried ``_compat/voila.py``, ``jupyter_server.py`` and ``tornado.py``, the
    adapters of the lecture demo's server alone (Voila is not even in the students' pins)."""
    import ast

    def name(path: Path) -> str:
        return ".".join(path.relative_to(ROOT).with_suffix("").parts)

    importers: dict[str, set[Path]] = {}
    for f in (ROOT / "attention_lab").rglob("*.py"):
        base = name(f).split(".")[:-1]  # the package a relative import starts from
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                mod = ".".join(base[:len(base) - node.level + 1] if node.level else [])
                mod = ".".join(filter(None, [mod, node.module]))
                targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                importers.setdefault(target, set()).add(f.relative_to(ROOT))
    only_theirs = []
    for f in (bundle / "attention_lab").rglob("*.py"):
        users = importers.get(name(ROOT / f.relative_to(bundle)).removesuffix(".__init__"), ())
        if users and not any((bundle / user).exists() for user in users):
            only_theirs.append(f.relative_to(bundle).as_posix())
    assert not only_theirs
