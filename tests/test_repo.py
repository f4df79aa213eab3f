"""Repository-level promises: the README's commands, CI, packaging, lazy imports, notebook pairs."""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def readme_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_gives_exactly_two_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert len(commands) == 2, commands
    open_cmd, test_cmd = commands
    assert "jupyter lab" in open_cmd and "pip install -r requirements.txt" in open_cmd
    assert "pytest" in test_cmd and "pip install -r requirements.txt" in test_cmd
    ci_lines = [ln.strip() for ln in (ROOT / ".ci/run").read_text().splitlines()]
    assert test_cmd in ci_lines, "the README's test command must appear verbatim in .ci/run"
    assert ci_lines[-1] == test_cmd, ".ci/run must end with the README's test command"


def test_the_open_command_brings_the_projects_jupyterlab_defaults():
    """The README's first command points Jupyter at jupyter-config/, whose labconfig overrides
    JupyterLab's news question away; read through jupyter_server's own ConfigManager with the
    command's environment (the browser test checks the page itself)."""
    import json
    import os
    import shlex

    open_cmd = readme_commands()[0].split("&&")[-1]
    words = shlex.split(open_cmd)
    env_words = [w for w in words if re.fullmatch(r"[A-Z_]+=\S+", w)]
    assert words[len(env_words):][:2] == [".venv/bin/jupyter", "lab"], words
    env = dict(os.environ)
    env.pop("JUPYTER_CONFIG_DIR", None)
    env.update({k: v.replace("$PWD", str(ROOT)) for k, v in (w.split("=", 1) for w in env_words)})
    assert env.get("JUPYTER_CONFIG_PATH") == str(ROOT / "jupyter-config")
    code = ("import json; from jupyter_server.services.config.manager import ConfigManager; "
            "print(json.dumps(ConfigManager(config_dir_name='labconfig')"
            ".get('default_setting_overrides')))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, check=True)
    overrides = json.loads(out.stdout)
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    without = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                             text=True, check=True,
                             env={k: v for k, v in env.items() if k != "JUPYTER_CONFIG_PATH"})
    assert "apputils-extension:notification" not in without.stdout  # the command's env does it


def test_requirements_pin_the_tested_versions():
    lines = [ln.split("#")[0].strip() for ln in (ROOT / "requirements.txt").read_text().splitlines()]
    pins = dict(ln.split("==") for ln in lines if "==" in ln)
    for name in ["jupyterlab", "ipywidgets", "ipympl", "matplotlib", "numpy", "torch", "jupytext",
                 "nbval", "nbclient", "pytest", "hypothesis", "tqdm"]:
        assert name in pins, f"{name} is not pinned in requirements.txt"
    assert pins["torch"] == "2.13.0"  # the CPU build on this machine's disk; never an open range
    assert pins["jupyterlab"].startswith("4.") and pins["ipywidgets"].startswith("8.")
    assert "-e ." in lines
    open_ranges = [ln for ln in lines if ln.startswith("torch") and "==" not in ln]
    assert not open_ranges


def test_pyproject_ranges_and_environment_yml():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = meta["optional-dependencies"]
    assert {"torch", "notebooks", "grading", "test"} <= set(extras)
    torch_req = extras["torch"][0]
    assert "<" in torch_req, "an open torch range can pull a multi-GB CUDA build"
    env = (ROOT / "environment.yml").read_text()
    assert "- -e ." in env  # repo2docker ignores requirements.txt when environment.yml exists
    assert "download.pytorch.org/whl/cpu" in env and "torch==2.13.0" in env
    pins = set(re.findall(r"^([\w-]+)==", (ROOT / "requirements.txt").read_text(), re.M))
    env_pins = set(re.findall(r"^\s+- ([\w-]+)==", env, re.M))
    assert pins == env_pins, f"environment.yml and requirements.txt differ: {pins ^ env_pins}"


def test_import_loads_numpy_and_nothing_heavy_and_the_rest_on_first_use():
    """``import attention_lab`` loads the numpy reference and nothing else that is not Python's
    own (fast: no torch, matplotlib, ipywidgets, Jupyter); the other parts load on first use."""
    code = ("import json, sys; before = set(sys.modules); import attention_lab; "
            "new = set(sys.modules) - before; attention_lab.tensor; "
            "later = set(sys.modules) - before - new; "
            "print(json.dumps([sorted(new), sorted(later)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    new, later = json.loads(out)
    ours = {m for m in new if m.split(".")[0] == "attention_lab"}
    assert ours == {"attention_lab", "attention_lab._validate", "attention_lab.attention",
                    "attention_lab.examples", "attention_lab.masks", "attention_lab.scores",
                    "attention_lab.softmax"}, sorted(ours)
    others = {m.split(".")[0] for m in new} - {"attention_lab", "numpy"}
    assert others <= sys.stdlib_module_names, sorted(others - sys.stdlib_module_names)
    # lazy: the torch path is imported when first asked for, with torch
    assert {"attention_lab.tensor", "torch"} <= set(later)


def test_core_modules_do_not_import_heavy_libraries_at_top_level():
    heavy = re.compile(r"^(import|from) (torch|matplotlib|ipywidgets)\b", re.M)
    core = ["__init__", "_validate", "examples", "scores", "softmax", "masks", "attention",
            "analysis/__init__", "analysis/cost", "analysis/audit", "analysis/explain"]
    for name in core:
        src = (ROOT / "attention_lab" / f"{name}.py").read_text()
        assert not heavy.search(src), f"attention_lab/{name}.py imports a heavy library at top level"


def test_every_notebook_pair_is_in_sync():
    from attention_lab.nbtools import pair_problems, pairs

    found = pairs(ROOT / "notebooks")
    problems = [p for ipynb, py in found for p in pair_problems(ipynb, py)]
    assert not problems, "\n".join(problems)


def test_pair_check_detects_a_stale_notebook(tmp_path):
    from attention_lab.nbtools import pair_problems

    (tmp_path / "a.py").write_text("# %%\nx = 1\n\n# %%\nprint(x)\n")
    import jupytext
    import nbformat

    nb = jupytext.read(tmp_path / "a.py")
    nbformat.write(nb, tmp_path / "a.ipynb")
    problems = pair_problems(tmp_path / "a.ipynb", tmp_path / "a.py")
    assert any("no stored outputs" in p for p in problems)
    (tmp_path / "a.py").write_text("# %%\nx = 2\n\n# %%\nprint(x)\n")
    assert any("cell 0 differs" in p for p in pair_problems(tmp_path / "a.ipynb", tmp_path / "a.py"))


def test_nbtools_names_a_path_that_is_not_there(tmp_path, capsys):
    """A mistyped folder is not 'all pairs in sync', a mistyped notebook not a traceback: one
    line naming the path, exit code 2."""
    from attention_lab import nbtools

    (tmp_path / "a.ipynb").write_text("{}")
    assert nbtools.main(["check", str(tmp_path / "nowhere")]) == 2
    assert nbtools.main(["check", str(tmp_path / "a.ipynb")]) == 2
    assert nbtools.main(["execute", str(tmp_path / "a.ipynb")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"nbtools: error: {tmp_path / 'nowhere'} is not a folder",
        f"nbtools: error: {tmp_path / 'a.ipynb'} is not a folder",
        f"nbtools: error: {tmp_path / 'a.py'} does not exist (execute reads a notebook's text "
        f"file)"]


def test_cli_lists_commands():
    out = subprocess.run([sys.executable, "-m", "attention_lab", "--help"], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0
    for name in ("submit", "grade", "train", "demo"):
        assert name in out.stdout
    bad = subprocess.run([sys.executable, "-m", "attention_lab", "frobnicate"],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "unknown command 'frobnicate'" in bad.stderr
    typo = subprocess.run([sys.executable, "-m", "attention_lab", "grdae"],
                          capture_output=True, text=True, cwd=ROOT)
    assert typo.stderr.startswith("unknown command 'grdae' (did you mean 'grade'?)")


def test_output_piped_into_head_ends_quietly():
    """``python -m attention_lab grade ... | head`` closes the pipe early: the command stops
    without a BrokenPipeError traceback."""
    run = ("import sys; from attention_lab import __main__ as m\n"
           "def main(argv):\n"
           "    for i in range(100000):\n"
           "        print('row', i)\n"
           "m.COMMANDS['grade'] = ('loud', '')\n"
           "sys.modules['loud'] = type(sys)('loud'); sys.modules['loud'].main = main\n"
           "sys.exit(m.main(['grade']))")
    done = subprocess.run(f"{sys.executable} -c \"$RUN\" | head -1", shell=True,
                          capture_output=True, text=True, cwd=ROOT,
                          env={**__import__("os").environ, "RUN": run})
    assert (done.stdout, done.stderr) == ("row 0\n", "")


@pytest.mark.parametrize("body,code,said", [
    ("raise KeyboardInterrupt", 130, "submit: interrupted"),
    ("import not_installed_here",
     2, "the command 'submit' is not available: No module named 'not_installed_here'")])
def test_ctrl_c_or_a_missing_dependency_is_one_line_not_a_traceback(tmp_path, body, code, said):
    """A student pressing Ctrl-C while ``submit`` runs their notebook gets one line and exit code
    130, as ``grade`` gives; a command whose dependency is not installed (``submit`` without
    nbformat, ``merge`` without jinja2: the package installed without its extras) says which
    one, exit code 2. In every command that does not handle it itself."""
    import os

    (tmp_path / "stopped.py").write_text(f"def main(argv):\n    {body}\n")
    run = ("import sys; from attention_lab import __main__ as m; "
           "m.COMMANDS['submit'] = ('stopped', ''); sys.exit(m.main(['submit', 'x.ipynb']))")
    done = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stderr) == (code, said + "\n")


def test_bench_runs_from_the_checkout_and_says_so_elsewhere(tmp_path, monkeypatch, capsys):
    """From any folder, an editable install finds its checkout's benchmarks; an install without
    a checkout gets a one-line reason and exit code 2."""
    out = subprocess.run([sys.executable, "-m", "attention_lab", "bench", "--help"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and "python -m benchmarks.run" in out.stdout, out.stderr
    from attention_lab import _bench

    monkeypatch.setattr(_bench, "CHECKOUT", tmp_path)
    assert _bench.main(["--quick"]) == 2
    assert "need a checkout of the attention-lab repository" in capsys.readouterr().err


def test_interleaved_timings_do_not_keep_one_neighbour():
    """The benchmark harness times functions interleaved; none may always run right after the same
    one (it would inherit that one's cache traffic, as the NaN/inf scan row once did)."""
    from benchmarks.common import interleaved_medians

    order = []
    fns = {name: (lambda name=name: order.append(name)) for name in "abcde"}
    medians = interleaved_medians(fns, repeat=40, warmup=0)
    assert set(medians) == set(fns) and all(t >= 0 for t in medians.values())
    rounds = [order[i:i + 5] for i in range(0, len(order), 5)]
    assert all(sorted(r) == list("abcde") for r in rounds)  # each round runs each once
    before = {name: {r[r.index(name) - 1] for r in rounds if r.index(name) > 0} for name in fns}
    assert all(len(b) >= 3 for b in before.values()), before
