"""``python -m attention_lab submit NOTEBOOK``: run an exercise notebook and write a file to hand in.

The notebook runs top to bottom in a fresh, sandboxed kernel, exactly as the grader will run it
(a scratch copy), every exercise is checked, and ``NOTEBOOK_STEM.submission.json`` is written
next to the notebook. It holds the notebook as you wrote it, the results (status per exercise),
the package version, a timestamp and content hashes. Upload that file. The grader re-runs the
notebook itself: the results in the file are for you.

``--student ID`` records who you are: the id goes into the notebook's metadata, in the submission
file and in your notebook (the only change ``submit`` ever makes to it), so that you are asked
only once. Without it and with no id stored yet, ``submit`` asks for it when run in a terminal.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import re
import secrets
import sys
import textwrap
from pathlib import Path

from .. import _cli
from ..exercises.registry import EXERCISES, IDS, checked_marker
from .assignments import METADATA_KEY
from .batch import Batch, identify
from .students import check_id, clean_id, from_metadata
from .runner import CellEvent, Limits, defined_names, skip_slow_optional_imports
from .sandbox import ScratchRoot
from .submissions import SUBMISSION_FORMAT, Submission, Unreadable, canonical_hash, parse_submission


def relevant_ids(nb) -> list[str]:
    """The exercises this notebook works on: those it checks or whose answer it defines."""
    source = "\n".join(str(c.get("source", "")) for c in nb.cells if c.get("cell_type") == "code")
    checked = set(re.findall(r"""check\(\s*["'](\d\.\d)["']""", source))
    ids = [i for i in IDS if i in checked or defined_names(source, EXERCISES[i].answer_names)]
    return ids or list(IDS)


def reason(g) -> str:
    """One line on an exercise's grade: its summary (what happened, for an answer whose cell
    raised or ran out of time), else its message."""
    return (g.summary or g.message).split("\n")[0]


def build_submission(name: str, text: str, grade) -> dict:
    import attention_lab

    results = {i: {"status": g.status, "summary": reason(g)[:300]}
               for i, g in grade.exercises.items()}
    body = {"notebook": text, "notebook_name": name,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "results": results, "package_version": attention_lab.__version__}
    return {"format": SUBMISSION_FORMAT, "format_version": 1, **body,
            "notebook_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "content_hash": canonical_hash(body)}


def with_student(text: str, student: str) -> str:
    """The notebook JSON ``text`` with ``student`` in its metadata, written as Jupyter writes a
    notebook (sorted keys, one-space indent), so nothing else in the file changes."""
    nb = json.loads(text)
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    own = meta.get(METADATA_KEY) if isinstance(meta.get(METADATA_KEY), dict) else {}
    meta[METADATA_KEY] = {**own, "student": student}
    nb["metadata"] = meta
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def ask_student(ask=input) -> str | None:
    """The student id typed at the prompt (None when nothing usable was typed)."""
    try:
        return clean_id(ask("Your student id (as your course uses it, e.g. your university "
                            "login): "))
    except (EOFError, KeyboardInterrupt):
        return None


def resolve_student(given: str | None, metadata, ask=None) -> tuple[str | None, str]:
    """(student id or None, where it came from): ``--student`` (unless the notebook holds that id
    already), else the notebook's metadata, else ``ask()`` (a terminal prompt), else None.
    ``ValueError`` for an unusable ``given``."""
    stored, _ = from_metadata(metadata)
    if given is not None and (given := check_id(given)) != stored:
        return given, "--student"
    if stored:
        return stored, "the notebook"
    typed = ask() if ask is not None else None
    return (typed, "typed") if typed else (None, "")


class Refused(Exception):
    """Why ``submit`` cannot go on: one line, ``submit: error: ...``, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m attention_lab submit",
        description="Run an exercise notebook in a fresh kernel, check every exercise, and write "
                    "NOTEBOOK.submission.json to hand in.")
    parser.add_argument("notebook", metavar="NOTEBOOK", help="your exercise notebook (.ipynb)")
    parser.add_argument("--out", metavar="FILE",
                        help="where to write the submission file: NAME.submission.json, or a folder "
                             "(default: next to the notebook)")
    parser.add_argument("--student", metavar="ID",
                        help="your student id, as your course uses it; stored in the notebook "
                             "so that later submissions need not repeat it (asked for once when "
                             "missing and run in a terminal)")
    _cli.add_time_limits(parser)
    return parser


def read_notebook(path: Path) -> tuple[bytes, object]:
    """The notebook file's bytes and the notebook, or :class:`Refused` saying what is wrong."""
    if not path.exists():
        raise Refused(f"{path} does not exist" + (
            f" (did you mean {path.with_suffix('.ipynb')}?)"
            if path.suffix != ".ipynb" and path.with_suffix(".ipynb").exists() else ""))
    if path.is_dir():
        raise Refused(f"{path} is a folder; give the notebook file (.ipynb)")
    if path.suffix != ".ipynb":
        raise Refused(f"{path} is not a notebook (.ipynb)" + (
            "; submit the .ipynb, not its .py text twin" if path.suffix == ".py" else ""))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Refused(f"{path} cannot be read: {exc.strerror}") from None
    try:
        return data, parse_submission(path.name, data)[0]
    except Unreadable as exc:
        raise Refused(f"{path} cannot be submitted: {exc}") from None


def output_path(path: Path, given: str | None) -> Path:
    """Where the submission file goes: ``--out`` (a file, or a folder to create), else next to
    the notebook; :class:`Refused` when it cannot be written there."""
    out = Path(given) if given else path.with_name(path.stem + ".submission.json")
    if given and (given.endswith(("/", os.sep)) or out.is_dir()):
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Refused(f"cannot create the folder {out}: {exc.strerror}") from None
        out = out / (path.stem + ".submission.json")
    if not out.parent.is_dir():
        raise Refused(f"the folder {out.parent} does not exist")
    if not os.access(out.parent, os.W_OK):
        raise Refused(f"cannot write {out} (folder not writable); use --out")
    if not out.name.endswith(".submission.json"):  # the grader reads a submission by its name
        raise Refused(f"--out {given}: the file to hand in must end in .submission.json (the "
                      f"grader reads no other name); give such a file, or a folder ending in /")
    return out


def unsaved_work(path: Path) -> str:
    """A warning when ``check`` ran in JupyterLab after the notebook was last saved (the
    kernel's latest answers are then not in the file), else ``""``."""
    try:
        checked = float(checked_marker(path).read_text(encoding="utf-8"))
        saved = path.stat().st_mtime
    except (OSError, ValueError):
        return ""
    if checked <= saved:
        return ""
    at = [_dt.datetime.fromtimestamp(t).strftime("%H:%M:%S") for t in (checked, saved)]
    return (f"warning: check() ran in {path.name} at {at[0]}, after the notebook was last saved "
            f"({at[1]}): answers changed since then are not in this submission. Save it in "
            f"JupyterLab (Ctrl+S) and run submit again.")


def store_student(path: Path, text: str, student: str) -> None:
    """Write the notebook's ``text`` (with ``student`` in it) back, for the next time (the
    submission file carries the id in any case)."""
    try:
        replace_text(path, text)
        print(f"student id {student!r} recorded in {path.name} (if the notebook is open in "
              f"JupyterLab, reload it before saving again)")
    except OSError as exc:
        print(f"note: could not store the student id in {path} ({exc.strerror}); it is in "
              f"the submission file")


def run_checks(path: Path, data: bytes, limits: Limits):
    """The notebook graded as the grader grades it, in a scratch folder of its own."""
    print(f"running {path.name} in a fresh kernel (this takes a few seconds) ...", flush=True)
    with ScratchRoot() as scratch:
        batch = Batch(limits, secrets.randbelow(2 ** 31), scratch.path)
        sub = Submission(path, path.name, data, hashlib.sha256(data).hexdigest())
        identify([sub])
        return batch.grade(0, sub)


def replace_text(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (a scratch file beside it, then moved over it)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_submission(out: Path, submission: dict) -> None:
    try:
        replace_text(out, json.dumps(submission, indent=1, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise Refused(f"cannot write {out}: {exc.strerror}") from None


def print_results(grade, nb, student: str | None, out: Path) -> None:
    ids = list(grade.exercises) if grade.meta.get("assignment") else relevant_ids(nb)
    width = max(len(EXERCISES[i].title) for i in ids)
    print(f"\n{'id':<4} {'exercise':<{width}}  status")
    for i in ids:
        g = grade.exercises[i]
        line = f"{i:<4} {EXERCISES[i].title:<{width}}  {g.status.replace('_', ' ')}"
        if g.status in ("fail", "error", "timeout"):
            line += f": {textwrap.shorten(reason(g), 100, placeholder=' ...')}"
        print(line)
    auto = [i for i in ids if EXERCISES[i].auto]
    passed = sum(grade.exercises[i].status == "pass" for i in auto)
    print(f"\n{passed} of {len(auto)} checked exercises pass"
          + (f"; {sum(grade.exercises[i].status == 'needs_instructor' for i in ids)} written "
             f"answer(s) will be read by your instructor" if len(auto) < len(ids) else ""))
    if grade.message:
        print(f"note: {grade.message}")
    raised = next((CellEvent(c["cell"], c["event"], c["name"], c["message"]).describe()
                   for c in grade.cells if c["event"] == "error"), "")
    if raised and not any(raised in g.message for g in grade.exercises.values()):
        print(f"note: the first cell to fail: {raised[:200]}")  # a set-up cell, perhaps
    if student:
        print(f"student: {student}")
    if grade.meta.get("assignment"):
        print(f"assignment: {grade.meta['assignment']} (from the "
              f"{grade.meta['assignment_source']})")
    else:
        print(f"warning: {grade.meta.get('assignment_note')}, so the grader cannot tell from it "
              f"which assignment this is: work in the exercise notebook you were given and hand "
              f"it in")
    if grade.status == "error":
        print("\nThe notebook did not run here (the note above says why), so none of your answers "
              "was checked: this is no verdict on them. Try again; if it happens again, tell your "
              "instructor. The file can still be handed in.")
    print(f"\nHand in this file: {out.resolve()}")
    print("(upload it as it is; the grader re-runs your notebook and checks every answer again)")


def main(argv: list[str] | None = None) -> int:
    """Read the notebook, settle who submits and where the file goes, run the checks, write the
    submission file, print the results."""
    skip_slow_optional_imports()
    args, code = _cli.parse(build_parser(), argv)
    if args is None:
        return code
    path = Path(args.notebook)
    try:
        data, nb = read_notebook(path)
        interactive = sys.stdin is not None and sys.stdin.isatty()
        try:
            student, source = resolve_student(args.student, nb.metadata,
                                              ask_student if interactive else None)
        except ValueError as exc:
            raise Refused(f"--student: {exc}") from None
        out = output_path(path, args.out)
        unsaved = unsaved_work(path)  # before store_student writes the notebook
        text = data.decode("utf-8")
        if student is not None and source != "the notebook":
            text = with_student(text, student)
            data = text.encode("utf-8")
            if not unsaved:  # else JupyterLab's next save of the unsaved work would conflict
                store_student(path, text, student)
        elif student is None:
            print("note: no student id recorded; your instructor will tell you whether to give "
                  "one (python -m attention_lab submit NOTEBOOK --student ID)")
        grade = run_checks(path, data, Limits.for_cells(args.cell_timeout, args.timeout))
        write_submission(out, build_submission(path.name, text, grade))
    except Refused as exc:
        return _cli.fail("submit", str(exc))
    print_results(grade, nb, student, out)
    if unsaved:
        print(f"\n{unsaved}")
    return 0
