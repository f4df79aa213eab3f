"""``python -m attention_lab release --for gradescope OUT.zip``: a Gradescope autograder that
grades the lab's exercise notebooks with the lab's own grader.

The zip holds, at its root, what Gradescope's autograder specification asks for: ``setup.sh``
(:data:`SETUP`), ``run_autograder`` (:data:`RUN`) and ``lab/``: the student bundle with the
whole package (the grader's sandbox too; never the solutions) and ``lab/autograder.json`` (the
time limits). ``run_autograder`` runs :func:`main`, which grades ``ROOT/submission`` with
``python -m attention_lab grade`` (sandboxed kernels, the checks, the limits) and turns its
``grades.json`` into ``ROOT/results/results.json``: one test per automatic exercise of the
notebook's assignment. ``ROOT`` is ``/autograder`` unless ``ATTENTION_LAB_AUTOGRADER_ROOT``
says otherwise (so it can be tried on a laptop).

**Written answers are left to Gradescope's manual questions** (their rubric, anonymous grading
and regrade requests are Gradescope's strengths): each appears as a test worth 0 of 0 points,
tagged ``manual``; the autograder's score is out of the assignment's automatic points. Create
one manual question per written answer, worth one point per line of its rubric (the
instructors' guide lists them). A submission that cannot be graded (no notebook, too large, out
of time, the worked-on notebooks of two assignments) still gets a ``results.json``, with score 0
and a message saying why; untouched notebooks of other assignments beside the one worked on (the
whole exercises folder uploaded) are left out, and named.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from ...exercises.student import LABELS
from ..assignments import ASSIGNMENTS, points
from ..submissions import SUFFIXES, no_notebook

ROOT_ENV = "ATTENTION_LAB_AUTOGRADER_ROOT"
DEFAULT_ROOT = Path("/autograder")
CONFIG_NAME = "autograder.json"

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image (base image: Ubuntu 24.04,
# whose Python 3.12 the lab's pins support). It installs the lab's CPU requirements.
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap
python3 -m venv /autograder/venv
cd /autograder/source/lab
# torch's CPU build first: from PyPI, pip would fetch the CUDA build (several GB)
/autograder/venv/bin/pip install "torch=={torch}" --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install -r requirements.txt
"""

RUN = f"""\
#!/usr/bin/env bash
# Gradescope runs this for each submission: the lab's grader grades ROOT/submission and writes
# ROOT/results/results.json. ROOT is /autograder unless {ROOT_ENV} is set.
set -u
ROOT="${{{ROOT_ENV}:-/autograder}}"
PY="$ROOT/venv/bin/python"
[ -x "$PY" ] || PY=python3
# Gradescope runs a copy of this script, /autograder/run_autograder; the zip is in ROOT/source
LAB="$(dirname "$0")/lab"
[ -d "$LAB" ] || LAB="$ROOT/source/lab"
cd "$LAB" && exec "$PY" -m attention_lab.grading.export.gradescope --root "$ROOT"
"""


class ExportError(Exception):
    pass


def build(out: Path, *, cell_timeout: float = 60.0, timeout: float = 600.0) -> list[str]:
    """Write the autograder zip ``out`` (a new ``.zip``); the names in it."""
    from .. import release

    out = Path(out)
    if out.suffix != ".zip":
        raise ExportError(f"{out} does not end in .zip; Gradescope takes the autograder as a zip")
    if out.exists():
        raise ExportError(f"{out} exists; give a new file name")
    torch = release.torch_pin()
    if torch is None:
        raise ExportError("requirements.txt pins no torch version (torch==X)")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            release.release(Path(tmp) / "lab", omit=())  # the grader's sandbox included
        except release.ReleaseError as exc:
            raise ExportError(str(exc)) from None
        files = {"setup.sh": SETUP.format(torch=torch), "run_autograder": RUN,
                 f"lab/{CONFIG_NAME}": json.dumps({"cell_timeout": cell_timeout,
                                                   "timeout": timeout}, indent=1) + "\n"}
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, text in files.items():
                info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                info.external_attr = (0o100755 if "/" not in name else 0o100644) << 16
                zf.writestr(info, text)
            for path in sorted(p for p in (Path(tmp) / "lab").rglob("*") if p.is_file()):
                zf.write(path, path.relative_to(tmp).as_posix())
            names = zf.namelist()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(buffer.getvalue())
    return names


def _test(ex, score, output: str, *, manual: bool = False) -> dict:
    test = {"name": f"{ex.id} {ex.title}", "number": ex.id, "score": score,
            "max_score": 0 if manual else points(ex), "output": output, "visibility": "visible"}
    if manual:
        test["tags"] = ["manual"]
    else:
        test["status"] = "passed" if score == points(ex) else "failed"
    return test


def results_from(grades: dict) -> dict:
    """Gradescope's results for the lab grader's ``grades.json`` of one submission folder."""
    counted = [s for s in grades.get("submissions", [])
               if s.get("meta", {}).get("superseded_by") is None]
    # a folder of the upload without a notebook (the __MACOSX/ of a zip made on a Mac) beside
    # one with a notebook: the grader's row for it is an instructor's note, not the student's
    if any(s.get("status") != "no_notebook" for s in counted):
        counted = [s for s in counted if s.get("status") != "no_notebook"]
    if not counted:
        return as_results("no notebook was graded")
    tests, notes = [], []
    # one student's upload: of two notebooks of one assignment (named apart by their files,
    # as two students) the latest readable one counts, as for a student's resubmission
    latest: dict = {}
    for sub in sorted(counted, key=lambda s: (s.get("status") != "unreadable",
                                              s.get("meta", {}).get("submitted") or "",
                                              s.get("file") or "")):
        assignment = sub.get("meta", {}).get("assignment")
        if assignment in ASSIGNMENTS:
            latest[assignment] = sub
    # the untouched notebooks of other assignments beside the one worked on (an upload of the
    # whole exercises folder) are left out; two worked-on assignments cannot both be scored
    untouched = {a for a, sub in latest.items() if {e.get("status") for e in
                 sub.get("exercises", {}).values()} <= {"not_attempted"}}
    left_out = untouched if len(latest) > 1 and untouched != set(latest) else set()
    for a in sorted(left_out):
        notes.append(f"{latest.pop(a).get('file')}: not counted: not attempted (another "
                     f"assignment's notebook in this upload is)")
    if len(latest) > 1:  # Gradescope's score is out of one assignment's points
        return as_results(
            "not graded: the upload holds the notebooks of " + str(len(latest)) + " assignments ("
            + ", ".join(f"{a}: {s.get('file')}" for a, s in sorted(latest.items()))
            + "); upload only the notebook of this assignment")
    for sub in counted:
        chosen = latest.get(sub.get("meta", {}).get("assignment"))
        if chosen is not None and chosen is not sub:
            notes.append(f"{sub.get('file')}: not counted: {chosen.get('file')} is graded for the "
                         f"same assignment (upload one notebook per assignment)")
    counted = [s for s in counted if s.get("meta", {}).get("assignment") not in left_out
               and ((c := latest.get(s.get("meta", {}).get("assignment"))) is None or c is s)]
    for sub in counted:
        assignment = ASSIGNMENTS.get(sub.get("meta", {}).get("assignment") or "")
        if sub.get("status") != "graded":
            notes.append(f"{sub.get('file')}: {sub.get('status')}: {sub.get('message')}")
        if assignment is None:
            if sub.get("status") == "graded":  # a notebook it read (not a file it could not)
                notes.append(f"{sub.get('file')}: the notebook is none of the lab's exercise "
                             f"notebooks (upload the exercise notebook you worked in)")
            continue
        for ex in assignment.exercises:
            rec = sub.get("exercises", {}).get(ex.id, {})
            status = rec.get("status", "not graded")
            label = LABELS[status][1] if status in LABELS else status.replace("_", " ")
            if ex.auto:
                message = rec.get("message") or (sub.get("message", "") if status != "pass"
                                                 else "")
                tests.append(_test(ex, points(ex) if status == "pass" else 0,
                                   f"{label}\n{message}".strip()))
            else:  # its message would show the rubric: Gradescope's manual question has it
                tests.append(_test(ex, 0, f"written answer ({points(ex)} points), graded by "
                                          f"hand in Gradescope; {label}", manual=True))
    return as_results("\n".join(notes), tests)


def as_results(message: str, tests=()) -> dict:
    """Gradescope's results: ``tests`` (none: a submission that could not be graded, score 0)
    and ``message`` (shown above them, unless empty)."""
    out = {"score": sum(t["score"] for t in tests), "tests": list(tests), "visibility": "visible",
           "stdout_visibility": "hidden"}
    if message:
        out["output"] = message
    return out


def grade(root: Path, config: dict) -> dict:
    """Grade ``root/submission`` with the lab's grader; Gradescope's results."""
    from .. import batch

    submission = Path(root) / "submission"
    notebooks = [p for p in submission.rglob("*") if p.name.endswith(SUFFIXES)]
    if not submission.is_dir():
        return as_results("no notebook in the submission: upload the exercise notebook you "
                          "worked in (an .ipynb file, or the .submission.json that submit wrote)")
    if not notebooks:  # say what it holds: a jupytext script, a zip, a PDF
        held = sorted(p.relative_to(submission).as_posix() for p in submission.rglob("*")
                      if p.is_file())
        folder = submission.resolve()
        return as_results(no_notebook(folder, folder, held).problem + " (an .ipynb file, or "
                          "the .submission.json that submit wrote)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "grades"
        code = batch.main([str(submission), "--out", str(out), "--quiet",
                           "--cell-timeout", str(config.get("cell_timeout", 60.0)),
                           "--timeout", str(config.get("timeout", 600.0))])
        if code != 0 or not (out / "grades.json").exists():
            return as_results(f"the grader could not grade the submission (exit code {code}); "
                              f"its message is in the autograder output")
        grades = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    return results_from(grades)


def main(argv: list[str] | None = None) -> int:
    """``run_autograder``'s Python side: grade, then write ``ROOT/results/results.json``."""
    parser = argparse.ArgumentParser(prog="python -m attention_lab.grading.export.gradescope")
    parser.add_argument("--root", default=os.environ.get(ROOT_ENV, str(DEFAULT_ROOT)),
                        help=f"Gradescope's folder (default ${ROOT_ENV} or /autograder)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    started = time.monotonic()
    config_path = Path(__file__).resolve().parents[3] / CONFIG_NAME
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
    try:
        results = grade(root, config)
    except Exception as exc:  # a results.json in every case: Gradescope shows nothing without
        results = as_results(f"the autograder failed ({type(exc).__name__}: {exc})")
    results["execution_time"] = round(time.monotonic() - started)
    (root / "results").mkdir(parents=True, exist_ok=True)
    target = root / "results" / "results.json"
    target.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"score {results['score']}; wrote {target}")
    for t in results["tests"]:
        print(f"  {t['name']}: {t['score']}/{t['max_score']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
