"""The ``merge`` command: fold a filled-in ``written.csv`` (:mod:`.written`) into a finished
grading and write its files again (:func:`.outputs.write_report`), running no notebook."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import _cli
from .outputs import write_report
from .report import UNREADABLE, read_report
from .written import WrittenError, apply, read


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attention_lab merge",
        description="Fold the scores and comments of a filled-in written.csv into a finished "
                    "grading (OUT_DIR, as written by grade) without running any notebook again: "
                    "grades.json, grades.csv, gradebook.csv, written.csv and feedback/ are "
                    "rewritten. All or nothing: a bad row stops it with the row named.")
    parser.add_argument("out", metavar="OUT_DIR", help="the folder grade wrote (with grades.json)")
    parser.add_argument("written", metavar="WRITTEN_CSV", nargs="?",
                        help="the filled-in written.csv (default: OUT_DIR/written.csv)")
    args, code = _cli.parse(parser, argv)
    if args is None:
        return code
    out = Path(args.out)
    source = Path(args.written) if args.written else out / "written.csv"
    grades = out / "grades.json"
    if not grades.is_file():
        return _cli.fail("merge", f"{grades} does not exist; run grade first")
    try:
        report = read_report(grades)
    except UNREADABLE as exc:
        return _cli.fail("merge", f"{grades} cannot be read back ({type(exc).__name__}: {exc})")
    if not source.is_file():
        return _cli.fail("merge", f"{source} does not exist")
    try:
        changed = apply(report, read(source), source.name)
    except WrittenError as exc:
        return _cli.fail("merge", f"{exc}; nothing was written")
    try:
        written = write_report(report, out)
    except OSError as exc:
        return _cli.fail("merge", f"cannot write {exc.filename or out}: {exc.strerror or exc}; "
                                  f"run merge again once it can be written (merging is "
                                  f"idempotent)")
    waiting = sum(s.needs_instructor for s in report.counted())
    print(f"merged {source}: {changed} answer(s) changed; {waiting} written answer(s) still "
          f"without a score")
    print(f"wrote {', '.join(str(p) for p in written)}")
    return 0
