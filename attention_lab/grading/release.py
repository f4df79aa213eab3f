"""``python -m attention_lab release OUT_DIR``: the student copy of the lab, which every path
that hands the lab to students uses (the site; the JupyterHub set-up, ``jupyterhub_config.py``,
through :func:`student_copy`, built once per version of the sources).

The repository ships the instructor solutions (``notebooks/exercises/solutions/``) for
self-study; a graded course hands students this bundle instead: the four level notebooks (their
stored outputs hold no answers: see :mod:`attention_lab.predict`), the four student exercise
notebooks (each carrying its assignment id, without stored outputs), the package, its pins, the
JupyterLab settings of ``jupyter-config/`` and a README for students
(``templates/release_README.md``). Never the solutions, nor what a student never runs
(:data:`NOT_IN_STUDENT_COPY`).

Before writing, ``release`` checks that the student notebooks are the ones the authoring tool
makes from the current solutions (a stale student notebook could be an old copy of a solution),
and after building it searches the whole bundle for the code and text of every solution block;
a hit, an existing non-empty OUT_DIR or a checkout without notebooks is a one-line error and exit
code 2, with nothing written. The bundle is built in a scratch folder beside OUT_DIR and moved
into place when complete. ``release --for nbgrader COURSE_DIR | gradescope OUT.zip`` writes the
exercises for those platforms instead (:mod:`.export`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from .. import _cli
from ..exercises import authoring
from ..exercises.registry import NOTEBOOKS
from .report import files_sha256

ROOT = authoring.ROOT
TEMPLATES = Path(__file__).resolve().parent / "templates"
LEVELS = ["01_intuition", "02_mechanics", "03_maths_and_code", "04_research"]
#: the pins, written into the bundle without the lines of NOT_FOR_STUDENTS
PINS = ("requirements.txt", "environment.yml")
#: pins of requirements.txt a student does not need (the tests, the lecture demo, nbgrader, the site)
NOT_FOR_STUDENTS = {"pytest", "pytest-xdist", "filelock", "hypothesis", "nbval", "playwright",
                    "voila", "nbgrader", "sphinx", "myst-nb", "myst-parser", "sphinx-book-theme",
                    "pydata-sphinx-theme", "sphinx-mathjax-offline"}
#: what of the package a student never runs, left out of the bundle: the grader's namespace
#: sandbox (``submit`` in the bundle confines its kernel with the hard limits only, as the grader
#: does where bubblewrap is missing), the lecture demo (and its server's adapters) and the
#: authoring tools
NOT_IN_STUDENT_COPY = ("grading/namespaces.py", "grading/kernel_view.py", "demo/",
                       "_compat/voila.py", "_compat/jupyter_server.py", "_compat/tornado.py",
                       "exercises/authoring.py", "nbtools.py", "grading/release.py",
                       "grading/export/", "docs.py", "_bench.py")
#: ``release --for``: the student bundle, or an export for a platform (:mod:`.export`)
TARGETS = ("bundle", "nbgrader", "gradescope")
#: pins only a JupyterHub image needs (its environment.yml keeps them): not in the
#: requirements.txt a student installs on a laptop
HUB_ONLY = {"jupyterhub"}


def student_pins(lines: list[str], drop: set[str]) -> str:
    """``lines`` of a pin file without the pins named in ``drop`` and the comment lines right
    above each of them (which describe it)."""
    out: list[str] = []
    for ln in lines:
        if ln.strip().lstrip("- ").split("==")[0].strip() in drop:
            while out and out[-1].strip().startswith("#"):
                out.pop()
            continue
        out.append(ln)
    return "\n".join(out) + "\n"


class ReleaseError(Exception):
    pass


def torch_pin() -> str | None:
    """The torch version ``requirements.txt`` pins (``torch==X``), if it pins one."""
    pins = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return next((ln.split("==")[1].strip() for ln in pins if ln.startswith("torch==")), None)


def contents() -> list[tuple[str, str]]:
    """(path in the bundle, what it is), for the README."""
    rows = [(f"notebooks/{n}.ipynb", f"level {i}: {n.split('_', 1)[1].replace('_', ' ')}")
            for i, n in enumerate(LEVELS, 1)]
    rows += [(f"notebooks/exercises/{stem}.ipynb", f"exercises of level {level}")
             for level, stem in sorted(NOTEBOOKS.items())]
    rows += [("attention_lab/", "the package the notebooks use (checks, hints, submit)"),
             ("requirements.txt, pyproject.toml",
              "what `pip install -r requirements.txt` installs"),
             ("environment.yml", "the same pins for conda, and for repo2docker (a JupyterHub "
                                 "image built from this folder)"),
             ("jupyter-config/", "JupyterLab's settings for this lab (no news pop-up, no nbgrader "
                                 "menus, no Voila), which the last line above uses")]
    return rows


def answer_blocks() -> list[str]:
    """The code and text of every solution block of the solution notebooks (stub lines
    ``#> ...`` excluded: they are what students get)."""
    blocks = []
    for sol in authoring.solution_files():
        block = None
        for line in sol.read_text(encoding="utf-8").splitlines():
            kind = authoring._marker(line)
            if kind == "begin":
                block = []
            elif kind == "end":
                text = "\n".join(b.strip() for b in block
                                 if b.strip() and not b.strip().startswith("#>"))
                if text:
                    blocks.append(text)
                block = None
            elif block is not None:
                block.append(line)
    return blocks


def searchable_text(path: Path) -> str:
    """A file's text as a reader sees it: a notebook's cell sources and text outputs, one stripped
    line each; other text files as they are; binary files as ``""``."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return ""
    if path.suffix == ".ipynb":
        nb = json.loads(raw)
        parts = []
        for cell in nb.get("cells", []):
            src = cell.get("source", "")
            parts.append("".join(src) if isinstance(src, list) else src)
            for out in cell.get("outputs", []):
                text = out.get("text") or out.get("data", {}).get("text/plain", "")
                parts.append("".join(text) if isinstance(text, list) else str(text))
        raw = "\n".join(parts)
    return "\n".join(line.strip() for line in raw.splitlines())


def leaks(folder: Path, blocks: list[str]) -> list[str]:
    """``path: first line of the block`` for every solution block found in a file of ``folder``."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = searchable_text(path)
        for block in blocks:
            if block in text:
                found.append(f"{path.relative_to(folder)}: {block.splitlines()[0][:60]}")
    return found


def check_sources() -> None:
    """The checkout has the notebooks, and the student notebooks are up to date."""
    from ..nbtools import pair_problems

    for need in ["notebooks", *PINS, "pyproject.toml"]:
        if not (ROOT / need).exists():
            raise ReleaseError(f"release needs a checkout of the repository ({ROOT / need} is "
                               f"missing)")
    for sol in authoring.solution_files():
        student = authoring.student_path(sol)
        text = authoring.with_header(sol.read_text(encoding="utf-8"), authoring.assignment_of(sol))
        if not student.exists() or authoring.student_version(text) != student.read_text(
                encoding="utf-8"):
            shown = student.relative_to(ROOT) if student.is_relative_to(ROOT) else student
            raise ReleaseError(f"{shown} is not what its solution gives; run "
                               f"python -m attention_lab.exercises.authoring build --execute")
        if problems := pair_problems(student.with_suffix(".ipynb"), student):
            raise ReleaseError(f"{problems[0].splitlines()[0]} (run python -m "
                               f"attention_lab.exercises.authoring build --execute)")


def sources(omit=NOT_IN_STUDENT_COPY) -> list[tuple[Path, str]]:
    """(file of the checkout, its path in the bundle) for every file the bundle copies, the
    package without ``omit``; the README and ``requirements.txt`` are written from
    ``templates/`` and the checkout's pins."""
    rows = [(ROOT / "notebooks" / f"{n}.ipynb", f"notebooks/{n}.ipynb") for n in LEVELS]
    rows += [(ROOT / "notebooks" / "exercises" / f"{stem}.ipynb",
              f"notebooks/exercises/{stem}.ipynb") for stem in NOTEBOOKS.values()]
    package = ROOT / "attention_lab"
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(package)
        if path.is_file() and path.suffix != ".pyc" and not any(
                part.startswith(".") or part == "__pycache__" for part in rel.parts) \
                and not rel.as_posix().startswith(tuple(omit)):
            rows.append((path, f"attention_lab/{rel.as_posix()}"))
    rows.append((ROOT / "pyproject.toml", "pyproject.toml"))
    # JupyterLab's defaults (no news pop-up) and, for students, nbgrader left out (a JupyterHub's
    # venv has it for the instructors; they keep it, with the checkout's jupyter-config/ alone)
    for config in (ROOT / "jupyter-config", TEMPLATES / "jupyter-config"):
        rows += [(path, f"jupyter-config/{path.relative_to(config).as_posix()}")
                 for path in sorted(config.rglob("*")) if path.is_file()]
    return rows


def without_outputs(src: Path, dest: Path) -> None:
    """Copy a notebook with its code cells' outputs and execution counts removed: a student's
    exercise notebook starts as it will be handed in, with nothing run."""
    import nbformat

    nb = nbformat.read(src, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, dest)


def build(dest: Path, omit=NOT_IN_STUDENT_COPY) -> None:
    """Write the bundle into the empty folder ``dest`` (the package without ``omit``)."""
    import jinja2

    import attention_lab

    for src, rel in sources(omit):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.startswith("notebooks/exercises/"):
            without_outputs(src, target)
        else:
            shutil.copy2(src, target)
    for name in PINS:
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        drop = NOT_FOR_STUDENTS | (HUB_ONLY if name == "requirements.txt" else set())
        (dest / name).write_text(student_pins(lines, drop), encoding="utf-8")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             keep_trailing_newline=True)
    readme = env.get_template("release_README.md").render(
        version=attention_lab.__version__, torch=torch_pin() or "", contents=contents())
    (dest / "README.md").write_text(readme, encoding="utf-8")


def release(out: Path, omit=NOT_IN_STUDENT_COPY) -> list[Path]:
    """Build the bundle into ``out`` (absent or empty); the files written. ``omit=()``: with the
    whole package (the Gradescope autograder's copy, which grades)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out} exists and is not an empty folder; give a new folder")
    check_sources()
    parent = out.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=parent))
    except OSError as exc:
        raise ReleaseError(f"cannot write into {parent}: {exc.strerror}") from None
    try:
        bundle = scratch / "bundle"
        build(bundle, omit)
        if found := leaks(bundle, answer_blocks()):
            raise ReleaseError(f"a solution would be in the bundle ({found[0]}); nothing written")
        if out.exists():  # an empty folder (perhaps the current one, "."): filled in place
            for entry in bundle.iterdir():
                os.replace(entry, out / entry.name)
        else:
            os.replace(bundle, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return sorted(p for p in out.rglob("*") if p.is_file())


def digest() -> str:
    """A hash of everything the bundle is made from (its files' paths and bytes, and the pins)."""
    return files_sha256([*sources(), *((ROOT / name, name) for name in PINS)])


def student_copy(cache: Path) -> Path:
    """The student bundle of the current sources: ``cache/bundle-<digest>``, built by
    :func:`release` on first use and reused while the sources stay the same. A changed source
    gives a new folder, so a restarted JupyterHub never changes a bundle that running servers use
    (old bundles are left for the site to delete). Raises :class:`ReleaseError` as ``release``."""
    target = Path(cache) / f"bundle-{digest()[:16]}"
    if not target.is_dir() or not any(target.iterdir()):
        release(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attention_lab release",
        description="Write the student bundle of a graded course into OUT_DIR: the level "
                    "notebooks, the student exercise notebooks, the package and a README for "
                    "students; never the solutions (the bundle is searched for them). With "
                    "--for nbgrader, write the exercises as nbgrader assignments into the "
                    "course folder OUT_DIR (source/<assignment>/); with --for gradescope, "
                    "write a Gradescope autograder zip OUT_DIR.")
    parser.add_argument("out", metavar="OUT_DIR", help="a new (or empty) folder for the bundle; "
                        "the course folder (nbgrader); the zip to write (gradescope)")
    parser.add_argument("--for", dest="target", choices=TARGETS, default="bundle",
                        help="what to write (default: the student bundle)")
    _cli.add_time_limits(parser)  # the Gradescope autograder's limits
    args, code = _cli.parse(parser, argv)
    if args is None:
        return code
    if args.target != "bundle":
        return _export(args.target, Path(args.out), args)
    try:
        files = release(Path(args.out))
    except ReleaseError as exc:
        return _cli.fail("release", str(exc))
    notebooks = [p for p in files if p.suffix == ".ipynb"]
    print(f"wrote the student bundle to {args.out}: {len(notebooks)} notebooks, the package and "
          f"README.md ({len(files)} files); no solutions")
    return 0


def _export(target: str, out: Path, args) -> int:
    import importlib

    module = importlib.import_module(f".export.{target}", __package__)
    try:
        written = (module.write_course(out) if target == "nbgrader" else
                   module.build(out, cell_timeout=args.cell_timeout, timeout=args.timeout))
    except module.ExportError as exc:
        return _cli.fail("release", str(exc))
    if target == "nbgrader":
        print(f"wrote {len(written)} files into the nbgrader course {out}: source/<assignment>/ "
              f"for {', '.join(p.parent.name for p in written if p.suffix == '.ipynb')}; next: "
              f"cd {out} && nbgrader generate_assignment ASSIGNMENT")
    else:
        print(f"wrote the Gradescope autograder {out} ({len(written)} files); upload it as the "
              f"assignment's autograder (zip file)")
    return 0
