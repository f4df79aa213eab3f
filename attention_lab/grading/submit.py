"""``python -m attention_lab submit NOTEBOOK``: run an exercise notebook and write a file to hand in.

The notebook runs top to bottom in a fresh, sandboxed kernel, exactly as the grader will run it
(a scratch copy; your file is only read), every exercise is checked, and
``NOTEBOOK_STEM.submission.json`` is written next to the notebook. It holds the notebook as you
wrote it, the results (status per exercise), the package version, a timestamp and content hashes.
Upload that file. The grader re-runs the notebook itself: the results in the file are for you.
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
from pathlib import Path

from .. import _cli
from ..exercises.registry import EXERCISES, IDS
from .batch import Batch
from .runner import Limits, defined_names, skip_slow_optional_imports
from .sandbox import ScratchRoot
from .submissions import SUBMISSION_FORMAT, Submission, Unreadable, canonical_hash, parse_submission

LABEL = {"pass": "pass", "fail": "fail", "error": "error", "timeout": "timeout",
         "not_attempted": "not attempted", "needs_instructor": "needs instructor",
         "unreadable": "unreadable"}


def relevant_ids(nb) -> list[str]:
    """The exercises this notebook works on: those it checks or whose answer it defines."""
    source = "\n".join(str(c.get("source", "")) for c in nb.cells if c.get("cell_type") == "code")
    checked = set(re.findall(r"""check\(\s*["'](\d\.\d)["']""", source))
    ids = [i for i in IDS if i in checked or defined_names(source, EXERCISES[i].answer_names)]
    return ids or list(IDS)


def build_submission(name: str, text: str, grade) -> dict:
    import attention_lab

    results = {i: {"status": g.status, "summary": (g.summary or g.message).split("\n")[0][:300]}
               for i, g in grade.exercises.items()}
    body = {"notebook": text, "notebook_name": name,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "results": results, "package_version": attention_lab.__version__}
    return {"format": SUBMISSION_FORMAT, "format_version": 1, **body,
            "notebook_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "content_hash": canonical_hash(body)}


def main(argv: list[str] | None = None) -> int:
    skip_slow_optional_imports()
    parser = argparse.ArgumentParser(
        prog="python -m attention_lab submit",
        description="Run an exercise notebook in a fresh kernel, check every exercise, and write "
                    "NOTEBOOK.submission.json to hand in.")
    parser.add_argument("notebook", metavar="NOTEBOOK", help="your exercise notebook (.ipynb)")
    parser.add_argument("--out", metavar="FILE",
                        help="where to write the submission file (default: next to the notebook)")
    _cli.add_time_limits(parser)
    args, code = _cli.parse(parser, argv)
    if args is None:
        return code
    path = Path(args.notebook)
    problem = None
    if not path.exists():
        problem = f"{path} does not exist" + (
            f" (did you mean {path.with_suffix('.ipynb')}?)"
            if path.suffix != ".ipynb" and path.with_suffix(".ipynb").exists() else "")
    elif path.is_dir():
        problem = f"{path} is a folder; give the notebook file (.ipynb)"
    elif path.suffix != ".ipynb":
        problem = f"{path} is not a notebook (.ipynb)" + (
            "; submit the .ipynb, not its .py text twin" if path.suffix == ".py" else "")
    if problem is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            problem = f"{path} cannot be read: {exc.strerror}"
    if problem is None:
        try:
            nb, _ = parse_submission(path.name, data)
        except Unreadable as exc:
            problem = f"{path} cannot be submitted: {exc}"
    if problem:
        return _cli.fail("submit", problem)
    out = Path(args.out) if args.out else path.with_name(path.stem + ".submission.json")
    if args.out and (args.out.endswith(("/", os.sep)) or out.is_dir()):
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return _cli.fail("submit", f"cannot create the folder {out}: {exc.strerror}")
        out = out / (path.stem + ".submission.json")
    if not out.parent.is_dir():
        return _cli.fail("submit", f"the folder {out.parent} does not exist")
    if not os.access(out.parent, os.W_OK):
        return _cli.fail("submit", f"cannot write {out} (folder not writable); use --out")
    print(f"running {path.name} in a fresh kernel (this takes a few seconds) ...", flush=True)
    limits = Limits.for_cells(args.cell_timeout, args.timeout)
    with ScratchRoot() as scratch:
        batch = Batch(limits, secrets.randbelow(2 ** 31), scratch.path)
        grade = batch.grade(0, Submission(path, path.name, data,
                                          hashlib.sha256(data).hexdigest()))
    if grade.status == "unreadable":  # pragma: no cover - parse_submission succeeded above
        return _cli.fail("submit", grade.message)
    text = data.decode("utf-8")
    submission = build_submission(path.name, text, grade)
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(json.dumps(submission, indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        return _cli.fail("submit", f"cannot write {out}: {exc.strerror}")
    ids = relevant_ids(nb)
    width = max(len(EXERCISES[i].title) for i in ids)
    print(f"\n{'id':<4} {'exercise':<{width}}  status")
    for i in ids:
        g = grade.exercises[i]
        line = f"{i:<4} {EXERCISES[i].title:<{width}}  {LABEL.get(g.status, g.status)}"
        if g.status in ("fail", "error", "timeout"):
            line += f": {(g.summary or g.message).splitlines()[0][:90]}"
        print(line)
    auto = [i for i in ids if EXERCISES[i].auto]
    passed = sum(grade.exercises[i].status == "pass" for i in auto)
    print(f"\n{passed} of {len(auto)} checked exercises pass"
          + (f"; {sum(grade.exercises[i].status == 'needs_instructor' for i in ids)} written "
             f"answer(s) will be read by your instructor" if len(auto) < len(ids) else ""))
    if grade.message:
        print(f"note: {grade.message}")
    print(f"\nHand in this file: {out.resolve()}")
    print("(upload it as it is; the grader re-runs your notebook and checks every answer again)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
