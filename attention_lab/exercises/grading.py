"""``python -m attention_lab grade SUBMISSIONS_DIR --out OUT_DIR``: grade a folder of submissions.

Every ``.ipynb`` and ``.submission.json`` (from ``python -m attention_lab submit``) under the
folder is graded into ``OUT_DIR/grades.csv`` (one row per submission: file, status, total, one
column per exercise) and ``OUT_DIR/grades.json`` (per exercise: status, score, message; the
written answers' text for the instructor).

How a submission is graded (see :mod:`.runner` for the kernel side):

* its bytes are read once, hashed, and copied into a scratch folder of its own; the original is
  never opened for writing, and every original is re-hashed at the end (a change is reported);
* a fresh kernel runs the student's cells (per-cell and whole-notebook time limits, a memory
  limit, a process-group kill, Landlock confinement to the scratch folder where available);
* the grader's harness calls each answer on inputs chosen by the grader (fixed edge cases plus
  cases drawn from this run's seed) and records the raw outputs as JSON;
* the grader judges those outputs against the package's reference implementations in its own
  process. Redefining ``check``, editing or deleting a check cell, or patching
  ``attention_lab.exercises`` inside the notebook changes nothing.

Statuses per exercise: ``pass | fail | error | not_attempted | timeout | unreadable |
needs_instructor``. The batch never aborts: one bad notebook only ever affects its own row.
The command exits 0 when the report is written, 2 for a bad folder or argument.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import datetime as _dt
import hashlib
import io
import json
import os
import platform
import secrets
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .checks import BadRecord, Verdict, cases_for, decode_record, encoded_inputs, judge
from .registry import EXERCISES, IDS
from .runner import Limits, defined_names, kill_job, run_notebook, skip_slow_optional_imports

STATUSES = ("pass", "fail", "error", "not_attempted", "timeout", "unreadable", "needs_instructor")
SUBMISSION_STATUSES = ("graded", "unreadable", "timeout", "error")
SUBMISSION_FORMAT = "attention-lab-submission"
MAX_FILE_BYTES = 50 * 2 ** 20
SUFFIXES = (".ipynb", ".submission.json")


# ====================================================================== finding and reading files
def discover(folder: Path, exclude: Path | None = None) -> tuple[list[Path], list[Path]]:
    """(submissions, skipped files) under ``folder``; hidden folders, ``.ipynb_checkpoints`` and
    ``exclude`` (the output folder) are left out."""
    folder = folder.resolve()
    exclude = exclude.resolve() if exclude else None
    found, skipped = [], []
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                             and d != "__pycache__" and d != ".ipynb_checkpoints"
                             and (exclude is None or (here / d).resolve() != exclude))
        for name in sorted(filenames):
            p = here / name
            if name.startswith("."):
                continue
            if name.endswith(SUFFIXES):
                found.append(p)
            else:
                skipped.append(p)
    return found, skipped


def sha256_file(path: Path) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


class Unreadable(Exception):
    pass


def canonical_hash(payload: dict) -> str:
    text = json.dumps(payload, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def parse_submission(name: str, data: bytes):
    """(notebook node, notes) or raise :class:`Unreadable` with a one-line reason."""
    import nbformat

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text (byte {exc.start}): not a notebook") from None
    if not text.strip():
        raise Unreadable("the file is empty")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unreadable(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") \
            from None
    except RecursionError:
        raise Unreadable("not valid JSON (nested too deeply)") from None
    notes = []
    if name.endswith(".submission.json"):
        if not isinstance(obj, dict) or obj.get("format") != SUBMISSION_FORMAT:
            raise Unreadable("not an attention-lab submission file (no "
                             f"'format': '{SUBMISSION_FORMAT}')")
        nb_text = obj.get("notebook")
        if not isinstance(nb_text, str):
            raise Unreadable("the submission file holds no notebook")
        if hashlib.sha256(nb_text.encode("utf-8")).hexdigest() != obj.get("notebook_sha256"):
            notes.append("the notebook inside the submission file does not match its recorded "
                         "hash (edited after submitting?)")
        body = {k: obj.get(k) for k in ("notebook", "notebook_name", "created", "results",
                                        "package_version")}
        if canonical_hash(body) != obj.get("content_hash"):
            notes.append("the submission file's content hash does not match (edited after "
                         "submitting?)")
        try:
            obj = json.loads(nb_text)
        except (json.JSONDecodeError, RecursionError):
            raise Unreadable("the notebook inside the submission file is not valid JSON") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("cells"), list):
        raise Unreadable("valid JSON but not a notebook (no list of 'cells')")
    if not isinstance(obj.get("nbformat"), int):
        raise Unreadable("valid JSON but not a notebook (no 'nbformat' version)")
    try:
        nb = nbformat.reads(json.dumps(obj), as_version=4)
    except Exception as exc:
        raise Unreadable(f"not a readable notebook: {type(exc).__name__}: {str(exc)[:200]}") \
            from None
    for cell in nb.cells:
        if not isinstance(cell.get("source", ""), str) or cell.get("cell_type") not in (
                "code", "markdown", "raw"):
            raise Unreadable("not a readable notebook: a cell has no source text or an unknown "
                             "type")
    return nb, notes


# ====================================================================== results
@dataclass
class ExerciseGrade:
    status: str
    message: str
    score: int | None
    summary: str = ""
    answer: dict | None = None

    def as_dict(self) -> dict:
        d = {"status": self.status, "score": self.score, "message": self.message}
        if self.answer is not None:
            d["answer"] = self.answer
        return d


@dataclass
class SubmissionGrade:
    file: str
    sha256: str | None
    status: str
    message: str = ""
    exercises: dict = field(default_factory=dict)
    seconds: float = 0.0
    attempts: int = 0
    sandbox: dict = field(default_factory=dict)
    cells: list = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(1 for g in self.exercises.values() if g.status == "pass")

    @property
    def needs_instructor(self) -> int:
        return sum(1 for g in self.exercises.values() if g.status == "needs_instructor")

    def as_dict(self) -> dict:
        return {"file": self.file, "sha256": self.sha256, "status": self.status,
                "message": self.message, "total": self.total,
                "out_of": sum(1 for ex in EXERCISES.values() if ex.auto),
                "needs_instructor": self.needs_instructor,
                "seconds": round(self.seconds, 2), "kernel_starts": self.attempts,
                "cells": self.cells, "sandbox": self.sandbox,
                "exercises": {i: g.as_dict() for i, g in self.exercises.items()}}


def _all(status: str, message: str) -> dict:
    return {i: ExerciseGrade(status, message, None if status == "needs_instructor" else 0,
                             message) for i in IDS}


def verdicts_from_run(run, cases: dict, nb) -> tuple[dict, str, str]:
    """Per-exercise grades, the submission status and its message, from a runner result."""
    grades: dict = {}
    by_cell = {}
    for ev in run.events:
        src = str(nb.cells[ev.index].get("source", "")) if ev.index < len(nb.cells) else ""
        for ex in EXERCISES.values():
            if defined_names(src, ex.answer_names):
                by_cell.setdefault(ex.id, []).append(ev)
    for ex in EXERCISES.values():
        cell_events = by_cell.get(ex.id, [])
        if ex.id in run.records:
            try:
                rec = decode_record(run.records[ex.id])
            except BadRecord as exc:
                grades[ex.id] = ExerciseGrade(
                    "error", f"the grader could not read the outputs recorded for this answer "
                             f"({exc}); the notebook may have interfered with the grader", 0,
                    "unreadable outputs")
                continue
            v: Verdict = judge(ex, cases[ex.id], rec)
            status, message = v.status, v.message
            if status == "not_attempted" and cell_events:
                ev = cell_events[0]
                status = {"timeout": "timeout"}.get(ev.kind, "error")
                message = (f"{ev.describe()}; that cell defines `{ex.answer_label}`, so the "
                           f"answer could not be checked")
            elif cell_events and status != "pass":
                message += "\n(Note: " + "; ".join(e.describe() for e in cell_events[:2]) + ")"
            answer = v.details.get("answer") if ex.kind == "written" else None
            grades[ex.id] = ExerciseGrade(status, message,
                                          None if status == "needs_instructor" else
                                          (1 if status == "pass" else 0),
                                          v.summary, answer)
        elif ex.id in run.interrupted:
            kind = run.interrupted[ex.id]
            if kind == "crash":
                grades[ex.id] = ExerciseGrade("error", f"the kernel died while your answer "
                                                       f"`{ex.answer_label}` was running (os._exit,"
                                                       f" a crash in compiled code, or memory)", 0,
                                              "kernel died in the answer")
            else:
                grades[ex.id] = ExerciseGrade("timeout", f"your answer `{ex.answer_label}` did "
                                                         f"not return, even after being "
                                                         f"interrupted", 0, "timeout")
        elif run.timed_out:
            grades[ex.id] = ExerciseGrade("timeout", "the notebook did not finish within the "
                                                     "whole-notebook time limit", 0, "timeout")
        elif run.error:
            grades[ex.id] = ExerciseGrade("error", run.error, 0, "error")
        else:
            why = run.harness_errors.get(ex.id, "no record")
            grades[ex.id] = ExerciseGrade("error", "the grader could not collect this answer "
                                                   f"({why}); the notebook may have interfered "
                                                   f"with the grader", 0, "not collected")
    if run.error:
        return grades, "error", run.error
    if run.timed_out:
        return grades, "timeout", "the notebook did not finish within the time limit"
    msgs = [e.describe() for e in run.events if e.kind in ("timeout", "crash")]
    if run.harness_errors:
        msgs.append(f"the grader's harness recorded nothing for {len(run.harness_errors)} "
                    f"exercise(s)")
    if run.tampered_lines:
        msgs.append(f"{run.tampered_lines} result line(s) failed verification and were ignored")
    return grades, "graded", "; ".join(msgs)


# ====================================================================== the batch
class Batch:
    """Grades files with a thread pool; each job's kernel lives in its own process group."""

    def __init__(self, limits: Limits, seed: int, scratch: Path):
        self.limits, self.seed, self.scratch = limits, seed, scratch
        self.cases = {ex.id: cases_for(ex, seed) for ex in EXERCISES.values()}
        self.inputs = {i: encoded_inputs(c) for i, c in self.cases.items()}
        self.active: dict[str, int | None] = {}
        self.lock = threading.Lock()

    def grade(self, index: int, path: Path, rel: str, data: bytes | None, digest: str | None,
              size_problem: str = "") -> SubmissionGrade:
        t0 = time.monotonic()
        try:
            return self._grade(index, path, rel, data, digest, size_problem, t0)
        except Exception as exc:  # never abort the batch
            g = SubmissionGrade(rel, digest, "error", f"internal grader error: "
                                                      f"{type(exc).__name__}: {exc}")
            g.exercises = _all("error", g.message)
            g.seconds = time.monotonic() - t0
            return g

    def _grade(self, index, path, rel, data, digest, size_problem, t0) -> SubmissionGrade:
        if data is None:
            g = SubmissionGrade(rel, digest, "unreadable", size_problem or "could not be read")
            g.exercises = _all("unreadable", g.message)
            return g
        try:
            nb, notes = parse_submission(path.name, data)
        except Unreadable as exc:
            g = SubmissionGrade(rel, digest, "unreadable", str(exc))
            g.exercises = _all("unreadable", str(exc))
            g.seconds = time.monotonic() - t0
            return g
        code = [c for c in nb.cells if c.get("cell_type") == "code" and c.get("source", "").strip()]
        if not code:
            g = SubmissionGrade(rel, digest, "graded", "; ".join(
                notes + ["the notebook has no code cells"]))
            g.exercises = {i: ExerciseGrade("not_attempted", "the notebook has no code cells", 0,
                                            "not attempted") for i in IDS}
            g.seconds = time.monotonic() - t0
            return g
        job = self.scratch / f"job-{index:04d}-{secrets.token_hex(4)}"
        work = job / "work"
        work.mkdir(parents=True)
        import nbformat

        nbformat.write(nb, str(work / "submission.ipynb"))
        token = secrets.token_hex(16)

        def on_pgid(pgid):
            with self.lock:
                self.active[token] = pgid

        with self.lock:
            self.active[token] = None
        try:
            run = run_notebook(nb, work, list(EXERCISES.values()), self.inputs, self.limits,
                               token=token, on_pgid=on_pgid)
        finally:
            with self.lock:
                pgid = self.active.pop(token, None)
            kill_job(token, pgid)
            shutil.rmtree(job, ignore_errors=True)
        grades, status, message = verdicts_from_run(run, self.cases, nb)
        g = SubmissionGrade(rel, digest, status, "; ".join(notes + ([message] if message else [])))
        g.exercises = grades
        g.attempts = run.attempts
        g.sandbox = {k: run.sandbox.get(k) for k in ("landlock", "landlock_rules", "memory_bytes",
                                                     "landlock_error") if k in run.sandbox}
        g.cells = [{"cell": e.index, "event": e.kind, "name": e.name, "message": e.message}
                   for e in run.events]
        g.seconds = time.monotonic() - t0
        return g

    def kill_all(self) -> None:
        with self.lock:
            items = list(self.active.items())
        for token, pgid in items:
            kill_job(token, pgid)


@dataclass
class Report:
    folder: str
    submissions: list
    skipped: list
    changed: list
    seed: int
    limits: Limits
    started: str
    seconds: float
    jobs: int

    def as_dict(self) -> dict:
        import attention_lab

        landlock = sorted({s.sandbox.get("landlock") for s in self.submissions
                           if s.sandbox.get("landlock")})
        return {
            "grader": {"package_version": attention_lab.__version__,
                       "python": platform.python_version(), "seed": self.seed,
                       "started": self.started, "seconds": round(self.seconds, 2),
                       "jobs": self.jobs,
                       "limits": {"cell_timeout": self.limits.cell_timeout,
                                  "timeout": self.limits.timeout,
                                  "memory_mb": self.limits.memory_mb,
                                  "call_seconds": self.limits.call_seconds,
                                  "check_seconds": self.limits.check_seconds},
                       "landlock_abi": landlock[-1] if landlock else None},
            "folder": self.folder,
            "exercises": [{"id": ex.id, "chapter": ex.chapter, "title": ex.title,
                           "kind": ex.kind, "answer": ex.answer_label,
                           "points": ex.points if ex.auto else None}
                          for ex in EXERCISES.values()],
            "submissions": [s.as_dict() for s in self.submissions],
            "skipped": self.skipped,
            "integrity": {"unchanged": not self.changed, "changed": self.changed},
        }


def grade_folder(folder, out=None, *, jobs: int = 1, limits: Limits | None = None,
                 seed: int | None = None, progress: bool = True, files=None) -> Report:
    """Grade every submission under ``folder`` (or the given ``files``) and return the report."""
    folder = Path(folder)
    limits = limits or Limits()
    seed = secrets.randbelow(2 ** 31) if seed is None else int(seed)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.monotonic()
    if files is None:
        files, skipped_paths = discover(folder, Path(out) if out else None)
    else:
        skipped_paths = []
    root = folder.resolve()
    entries = []
    for p in files:
        rel = str(p.resolve().relative_to(root)) if p.resolve().is_relative_to(root) else str(p)
        try:
            size = p.stat().st_size
            if size > MAX_FILE_BYTES:
                entries.append((p, rel, None, sha256_file(p), f"larger than "
                                                              f"{MAX_FILE_BYTES // 2 ** 20} MB"))
                continue
            data = p.read_bytes()
            entries.append((p, rel, data, hashlib.sha256(data).hexdigest(), ""))
        except OSError as exc:
            entries.append((p, rel, None, None, f"could not be read: {exc.strerror}"))
    scratch = Path(tempfile.mkdtemp(prefix="attention-lab-grading-"))
    batch = Batch(limits, seed, scratch)
    results: list = [None] * len(entries)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(entries), desc="grading", unit="notebook", file=sys.stderr,
                   dynamic_ncols=True)
    pool = cf.ThreadPoolExecutor(max_workers=max(1, int(jobs)),
                                 thread_name_prefix="attention-lab-grade")
    try:
        futures = {pool.submit(batch.grade, i, p, rel, data, digest, problem): i
                   for i, (p, rel, data, digest, problem) in enumerate(entries)}
        for fut in cf.as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            if bar is not None:
                bar.set_postfix_str(f"{results[i].file[:30]}: {results[i].status}", refresh=False)
                bar.update(1)
    except KeyboardInterrupt:
        batch.kill_all()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        if bar is not None:
            bar.close()
        shutil.rmtree(scratch, ignore_errors=True)
    changed = []
    for (p, rel, _, digest, _), res in zip(entries, results):
        now = sha256_file(p)
        if digest is not None and now != digest:
            what = "deleted" if now is None else "modified"
            changed.append({"file": rel, "change": what})
            res.message = (res.message + "; " if res.message else "") + \
                f"WARNING: this file was {what} while the batch was graded (it was graded " \
                f"from the copy read at the start)"
    skipped = [str(p.resolve().relative_to(root)) for p in skipped_paths]
    return Report(str(root), results, skipped, changed, seed, limits, started,
                  time.monotonic() - t0, int(jobs))


# ====================================================================== writing the report
def write_report(report: Report, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / "grades.csv", out / "grades.json"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    auto = sum(1 for ex in EXERCISES.values() if ex.auto)
    w.writerow(["file", "status", "total", "out_of", "needs_instructor", *IDS, "message"])
    for s in report.submissions:
        w.writerow([s.file, s.status, s.total, auto, s.needs_instructor,
                    *[s.exercises[i].status for i in IDS], s.message.replace("\n", " ")[:500]])
    _atomic_write(csv_path, buf.getvalue())
    _atomic_write(json_path, json.dumps(report.as_dict(), indent=1, ensure_ascii=False,
                                        default=str) + "\n")
    return csv_path, json_path


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def summary_table(report: Report) -> str:
    counts: dict[str, int] = {}
    for s in report.submissions:
        counts[s.status] = counts.get(s.status, 0) + 1
    lines = [f"graded {len(report.submissions)} submission(s) in {report.seconds:.1f} s "
             f"({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))})"]
    width = max([len(s.file) for s in report.submissions] + [4])
    auto = sum(1 for ex in EXERCISES.values() if ex.auto)
    for s in report.submissions:
        lines.append(f"  {s.file:<{width}}  {s.status:<10}  {s.total:>2}/{auto}"
                     + (f"  {s.needs_instructor} written" if s.needs_instructor else "")
                     + (f"  ({s.message[:80]})" if s.message else ""))
    if report.changed:
        lines.append(f"WARNING: {len(report.changed)} submission file(s) changed during grading: "
                     + ", ".join(c["file"] for c in report.changed))
    return "\n".join(lines)


# ====================================================================== command line
def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {v}")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}") \
            from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m attention_lab grade",
        description="Grade every .ipynb and .submission.json under SUBMISSIONS_DIR into "
                    "OUT_DIR/grades.csv and OUT_DIR/grades.json. Each submission runs in its own "
                    "sandboxed kernel on a scratch copy; submissions are never modified.")
    p.add_argument("submissions", metavar="SUBMISSIONS_DIR", help="folder of submissions")
    p.add_argument("--out", required=True, metavar="OUT_DIR",
                   help="folder for grades.csv and grades.json (created if missing)")
    p.add_argument("--jobs", type=_positive_int, default=1, metavar="N",
                   help="submissions graded in parallel (default 1)")
    p.add_argument("--cell-timeout", type=_positive_float, default=60.0, metavar="S",
                   help="seconds per notebook cell (default 60)")
    p.add_argument("--timeout", type=_positive_float, default=600.0, metavar="S",
                   help="seconds per notebook, all cells and checks (default 600)")
    p.add_argument("--memory-mb", type=_positive_int, default=2048, metavar="MB",
                   help="address-space limit of each kernel (default 2048)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the random test cases (default: a fresh one, recorded in "
                        "grades.json)")
    p.add_argument("--require-sandbox", action="store_true",
                   help="refuse to run notebooks when Linux Landlock is unavailable")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    skip_slow_optional_imports()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed what was wrong
        return int(exc.code or 0)
    folder = Path(args.submissions)
    out = Path(args.out)
    problem = None
    if not folder.exists():
        problem = f"the submissions folder {folder} does not exist"
    elif not folder.is_dir():
        problem = f"{folder} is a file, not a folder of submissions"
    elif not os.access(folder, os.R_OK | os.X_OK):
        problem = f"the submissions folder {folder} cannot be read (permissions)"
    elif out.exists() and not out.is_dir():
        problem = f"--out {out} is a file; give a folder for grades.csv and grades.json"
    if problem is None:
        try:
            out.mkdir(parents=True, exist_ok=True)
            probe = out / ".write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            problem = f"cannot write to --out {out}: {exc.strerror}"
    if problem:
        print(f"grade: error: {problem}", file=sys.stderr)
        return 2
    files, skipped = discover(folder, out)
    if not files:
        print(f"grade: error: no submissions in {folder} (looked for *.ipynb and "
              f"*.submission.json{'; found only: ' + ', '.join(p.name for p in skipped[:5]) if skipped else ''})",
              file=sys.stderr)
        return 2
    try:
        import nbclient  # noqa: F401
        import tqdm  # noqa: F401
    except ImportError as exc:
        print(f"grade: error: grading needs the 'grading' extras ({exc.name} is missing): "
              f"pip install 'attention-lab[grading]'", file=sys.stderr)
        return 2
    if args.memory_mb < 256:
        print("grade: error: --memory-mb below 256 leaves no room for a Python kernel",
              file=sys.stderr)
        return 2
    limits = Limits(cell_timeout=args.cell_timeout, timeout=args.timeout,
                    memory_mb=args.memory_mb,
                    call_seconds=min(10.0, args.cell_timeout / 2),
                    check_seconds=min(30.0, max(args.cell_timeout, 5.0)),
                    require_landlock=args.require_sandbox)
    try:
        report = grade_folder(folder, out, jobs=args.jobs, limits=limits, seed=args.seed,
                              progress=not args.quiet, files=files)
    except KeyboardInterrupt:
        print("grade: interrupted; no report written", file=sys.stderr)
        return 130
    report.skipped = [str(p.resolve().relative_to(folder.resolve())) for p in skipped]
    csv_path, json_path = write_report(report, out)
    print(summary_table(report))
    if report.skipped:
        print(f"skipped {len(report.skipped)} file(s) that are neither .ipynb nor "
              f".submission.json: {', '.join(report.skipped[:5])}"
              + (" ..." if len(report.skipped) > 5 else ""))
    ran = [s for s in report.submissions if s.sandbox]
    if ran and not any(s.sandbox.get("landlock") for s in ran):
        print("note: Linux Landlock was not available, so notebooks were not confined to their "
              "scratch folders (time, memory and process limits still applied)")
    print(f"wrote {csv_path} and {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
