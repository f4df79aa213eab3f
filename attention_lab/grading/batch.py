"""``python -m attention_lab grade SUBMISSIONS_DIR --out OUT_DIR``: grade a folder of submissions.

Every ``.ipynb`` and ``.submission.json`` under the folder is graded into ``OUT_DIR/grades.csv``
(one row per submission) and ``OUT_DIR/grades.json`` (per exercise: status, score, message), plus
the course's outputs (:mod:`.written`, :mod:`.gradebook`, :mod:`.feedback`). Each submission is
graded as one assignment (:mod:`.assignments`) and belongs to one student (:mod:`.students`).

How a submission is graded: its bytes are read once, hashed and copied into a scratch folder of
its own (the original is never opened for writing, and is re-hashed at the end); a fresh kernel
runs the student's cells in a sandbox (:mod:`.runner`, :mod:`.sandbox`); the grader's harness
calls each answer on the grader's cases (:mod:`.cases`, :mod:`.channel`) and the grader judges the
raw outputs against the package's references in its own process, so redefining ``check`` or
patching ``attention_lab.exercises`` in the notebook changes nothing.

Statuses per exercise: ``pass | fail | error | not_attempted | timeout | unreadable |
too_large | needs_instructor``. The batch never aborts: one bad notebook only ever affects its
own row. The command exits 0 when the report is written, 2 for a bad folder or argument.

The steps: :func:`collect` the files (:mod:`.submissions`), :func:`identify` them (facts besides
their content go in ``Submission.meta``), :class:`Batch` grades each into a
:class:`.report.SubmissionGrade`, :func:`grade_folder` collects those into a
:class:`.report.Report`, and :func:`.outputs.write_report` runs every writer.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import datetime as _dt
import os
import secrets
import shutil
import signal
import sys
import threading
import time
import zipfile
from pathlib import Path

from .. import _cli
from ..exercises.judging import BadRecord, Verdict, decode_record, judge
from ..exercises.registry import EXERCISES
from . import assignments, late, lms, students, written
from .cases import run_cases, submission_seed
from .outputs import PARTIAL_WRITERS, write_report
from .report import (UNREADABLE, ExerciseGrade, Report, SubmissionGrade, counts, read_report,
                     summary_table)
from .runner import Limits, names_defined, run_notebook, skip_slow_optional_imports
from .sandbox import JobFolders, ScratchRoot, for_job, isolation_problem, others_run_python
from .submissions import (Submission, TooLarge, Unreadable, as_text, discover, no_notebook,
                          parse_submission, peek, read_submissions, unchanged, without_notebook)


# ====================================================================== judging
def _grade(status: str, message: str, summary: str, answer=None) -> ExerciseGrade:
    """An exercise's grade: scored 1 for a pass, None for a written answer (scored by hand),
    else 0."""
    score = None if status == "needs_instructor" else int(status == "pass")
    return ExerciseGrade(status, message, score, summary, answer)


def _all(status: str, message: str, ids, summary: str = "") -> dict:
    return {i: _grade(status, message, summary or message) for i in ids}


def exercises_of(sub: Submission) -> list:
    """The exercises ``sub`` is graded on: its assignment's, or all when it is unknown."""
    a = assignments.ASSIGNMENTS.get(sub.meta.get("assignment", ""))
    return a.exercises if a else list(EXERCISES.values())


def _judged(ex, raw, cases: list, cell_events: list, earlier: list) -> ExerciseGrade:
    """The grade of a recorded answer: its verdict, told apart when the answer is missing
    because a cell that defines it (``cell_events``), or one before it (``earlier``, its
    time-outs), failed."""
    try:
        rec = decode_record(raw)
    except BadRecord as exc:
        return _grade("error", f"the grader could not read the outputs recorded for this answer "
                               f"({exc}); the notebook may have interfered with the grader",
                      "unreadable outputs")
    v: Verdict = judge(ex, cases, rec)
    status, message, summary = v.status, v.message, v.summary
    own = [e for e in cell_events if e.kind == "timeout"]
    defines = f"; that cell defines `{ex.answer_label}`, so the answer could not be checked"
    if status == "not_attempted" and (own or earlier):
        # the answer was never defined and a cell ran out of time: its own cell, or an earlier
        # one (which may define it in a way the grader does not read, as with exec, or whose
        # names it needs): a time-out, never "not attempted"
        status = "timeout"
        message = (own[0].describe() + defines if own else
                   f"{earlier[0].describe()}; `{ex.answer_label}` was not defined after it, so "
                   f"the answer could not be checked")
    elif status == "not_attempted" and cell_events:
        ev = cell_events[0]  # a ReferenceNotAvailable (kernel_view.py) gets no marks either
        status = "fail" if ev.name == "ReferenceNotAvailable" else "error"
        message = ev.describe() + defines
    elif cell_events and status != "pass":
        message += "\n(Note: " + "; ".join(e.describe() for e in cell_events[:2]) + ")"
    if status != v.status:  # the check's summary ("not attempted") is not what happened
        summary = message.split("\n")[0][:200]
    return _grade(status, message, summary,
                  v.details.get("answer") if ex.kind == "written" else None)


def _unrecorded(ex, run, timeouts: list) -> ExerciseGrade:
    """The grade of an answer the run has no record of, and why."""
    if run.interrupted.get(ex.id) == "crash":
        return _grade("error", f"the kernel died while your answer `{ex.answer_label}` was "
                               f"running (os._exit, a crash in compiled code, or memory)",
                      "kernel died in the answer")
    if ex.id in run.interrupted:
        return _grade("timeout", f"your answer `{ex.answer_label}` did not return, even after "
                                 f"being interrupted", "timeout")
    if run.too_large:
        return _grade("too_large", run.too_large, "too large")
    if run.timed_out:
        where = f" ({timeouts[-1].describe()})" if timeouts else ""
        return _grade("timeout", f"the notebook did not finish within the whole-notebook time "
                                 f"limit{where}", "timeout")
    if run.error:
        return _grade("error", run.error, "the notebook did not run")
    return _grade("error", f"the grader could not collect this answer "
                           f"({run.harness_errors.get(ex.id, 'no record')}); the notebook may "
                           f"have interfered with the grader", "not collected")


def verdicts_from_run(run, cases: dict, nb, exercises=None) -> tuple[dict, str, str]:
    """Per-exercise grades (of ``exercises``, default all), the submission status and its
    message, from a runner result."""
    exercises = list(EXERCISES.values()) if exercises is None else exercises
    by_cell: dict[str, list] = {}  # exercise id -> the events of the cells defining its answer
    timeouts = [ev for ev in run.events if ev.kind == "timeout"]
    for ev in run.events:
        src = str(nb.cells[ev.index].get("source", "")) if ev.index < len(nb.cells) else ""
        defined = names_defined(src)
        for ex in exercises:
            if defined & set(ex.answer_names):
                by_cell.setdefault(ex.id, []).append(ev)
    grades = {}
    for ex in exercises:
        events = by_cell.get(ex.id, [])
        first = events[0].index if events else len(nb.cells)
        grades[ex.id] = (_judged(ex, run.records[ex.id], cases[ex.id], events,
                                 [e for e in timeouts if e.index < first])
                         if ex.id in run.records else _unrecorded(ex, run, timeouts))
    if run.too_large:
        return grades, "too_large", run.too_large
    if run.error:
        return grades, "error", run.error
    if run.timed_out:
        return grades, "timeout", "the notebook did not finish within the time limit"
    msgs = [e.describe() for e in run.events if e.kind in ("timeout", "crash")]
    if run.harness_errors:
        msgs.append(f"the grader's harness recorded nothing for {len(run.harness_errors)} "
                    f"exercise(s)")
    if run.channel_problem:
        msgs.append(run.channel_problem)
    return grades, "graded", "; ".join(msgs)


# ====================================================================== the batch
class Batch:
    """Grades submissions, one thread each; every job's kernels run in a sandbox of their own
    (:func:`.sandbox.for_job`), which :meth:`kill_all` stops (Ctrl-C)."""

    def __init__(self, limits: Limits, seed: int, scratch: Path):
        self.limits, self.seed, self.scratch = limits, seed, scratch
        self.active: set = set()  # the sandboxes of the jobs running now
        self.lock = threading.Lock()
        self.stopping = False  # interrupted: no job starts, the running ones are cancelled

    def grade(self, index: int, sub: Submission) -> SubmissionGrade:
        """The grade of ``sub`` (job number ``index``). Never raises."""
        t0, cpu0 = time.monotonic(), time.thread_time()
        try:
            g = self._grade(index, sub)
        except Exception as exc:  # never abort the batch
            message = f"internal grader error: {type(exc).__name__}: {exc}"
            ids = [ex.id for ex in exercises_of(sub)]  # its assignment's, as any other grade
            g = SubmissionGrade(sub.rel, sub.sha256, "error", message, _all("error", message, ids))
        g.meta = dict(sub.meta)
        g.seconds = time.monotonic() - t0
        g.grader_seconds = time.thread_time() - cpu0
        return g

    def _grade(self, index: int, sub: Submission) -> SubmissionGrade:
        rel, digest = sub.rel, sub.sha256
        exercises = exercises_of(sub)

        def not_run(status: str, message: str, each: str = "", summary: str = ""):
            """A submission that is not run: every exercise gets the same grade."""
            return SubmissionGrade(rel, digest, status, message, _all(
                each or status, message, [ex.id for ex in exercises], summary))

        if sub.held is not None:
            return not_run("no_notebook", sub.problem)
        if sub.data is None:
            return not_run("too_large" if sub.too_large else "unreadable",
                           sub.problem or "could not be read")
        try:
            nb, notes = parse_submission(sub.path.name, sub.data)
        except Unreadable as exc:
            return not_run("too_large" if isinstance(exc, TooLarge) else "unreadable", str(exc))
        if not any(c.get("cell_type") == "code" and c.get("source", "").strip() for c in nb.cells):
            g = not_run("graded", "the notebook has no code cells", "not_attempted",
                        "not attempted")
            g.message = "; ".join(notes + [g.message])
            return g
        cases = {ex.id: run_cases(ex, submission_seed(self.seed, digest)) for ex in exercises}
        run = self._run(index, nb, exercises, cases)
        grades, status, message = verdicts_from_run(run, cases, nb, exercises)
        return SubmissionGrade(
            rel, digest, status, "; ".join(notes + ([message] if message else [])), grades,
            attempts=run.attempts, sandbox=run.sandbox,
            cells=[{"cell": e.index, "event": e.kind, "name": e.name, "message": e.message}
                   for e in run.events])

    def _run(self, index: int, nb, exercises, cases: dict):
        """Run ``nb`` in a job folder of its own (removed after) and a sandbox of its own,
        recording the answers of ``exercises``; its report keeps the sandbox's ``REPORT_KEYS``."""
        folders = JobFolders(self.scratch / f"job-{index:04d}-{secrets.token_hex(4)}" / "work",
                             shared=self.scratch / "shared")
        folders.work.mkdir(parents=True)
        sandbox = for_job(folders, self.limits)
        with self.lock:
            self.active.add(sandbox)
            if self.stopping:
                sandbox.cancel()
        try:
            run = run_notebook(nb, folders.work, exercises, cases, self.limits,
                               sandbox=sandbox)
        finally:
            with self.lock:
                self.active.discard(sandbox)
            sandbox.close()
            shutil.rmtree(folders.work.parent, ignore_errors=True)
        if getattr(sandbox, "cpu_used", None) is not None:
            run.sandbox["cpu_seconds_used"] = round(sandbox.cpu_used, 3)
        run.sandbox = {k: run.sandbox[k] for k in sandbox.REPORT_KEYS if k in run.sandbox}
        return run

    def kill_all(self) -> None:
        """Stop: kill every running job's kernels and start no further kernel (Ctrl-C)."""
        with self.lock:
            self.stopping = True
            running = list(self.active)
        for sandbox in running:
            sandbox.cancel()


# ====================================================================== the folder
#: earlier files of one student's assignment (or of one LMS user's) graded besides the latest:
#: each may take up to --timeout, and a student handing in hundreds must not hold the class up
EARLIER_GRADED = 2


def not_graded(subs: list[Submission]) -> set[int]:
    """The submissions left ungraded: a student's earlier files of one assignment beyond the
    latest :data:`EARLIER_GRADED` (the file that counts lists them, ``meta["not_graded"]``), and
    as many of one LMS user's files of an assignment, whatever students their notebooks claim
    (the user's latest file lists them)."""
    index = {sub.rel: i for i, sub in enumerate(subs)}
    left: set[int] = set()
    for sub in subs:
        older = sub.meta.get("replaces", [])[:-EARLIER_GRADED]  # oldest first
        if older:
            sub.meta["not_graded"] = older
            left.update(index[rel] for rel in older)
    users: dict[tuple, list[int]] = {}
    for i, m in enumerate(s.meta for s in subs):
        if m.get("lms_id") and i not in left:
            users.setdefault((m["lms"], m["lms_id"], m.get("assignment")), []).append(i)
    for files in users.values():
        files.sort(key=lambda i: (subs[i].meta.get("submitted", ""),
                                  subs[i].meta.get("lms_attachment", 0), subs[i].rel))
        older = files[:-1 - EARLIER_GRADED]
        if older:
            subs[files[-1]].meta.setdefault("not_graded", []).extend(subs[i].rel for i in older)
            left.update(older)
    return left


def identify(subs: list[Submission], assignment: str | None = None, roster=None,
             deadline=None, policy: late.Policy | None = None) -> None:
    """Fill each submission's ``meta``: its assignment and student, where each came from (and
    what was odd), when the LMS says it was handed in and how late, and which submissions a
    later one supersedes. ``assignment`` (``--assignment``) grades every submission as that
    assignment; ``roster`` (:mod:`.roster`) maps LMS ids to logins and holds extensions;
    ``deadline`` (UTC datetime) and ``policy`` (:class:`.late.Policy`) make late work."""
    policy = policy or late.Policy()
    readable = []
    for sub in subs:
        seen = peek(sub.path.name, sub.data)
        found, source, note = assignments.detect(seen["metadata"], sub.path.name,
                                                 str(seen["notebook_name"] or "")[:255])
        if assignment is not None:
            note = (f"graded as {assignment} (--assignment); the notebook looks like {found.id} "
                    f"({source})" if found is not None and found.id != assignment else "")
            found, source = assignments.ASSIGNMENTS[assignment], "--assignment"
        meta = sub.meta
        meta.update(assignment=found.id if found else None, assignment_source=source)
        if note:
            meta["assignment_note"] = note
        rel = Path(sub.rel).as_posix()
        named = lms.moodle_folder(rel) if sub.is_folder else lms.parse(rel)
        if named is not None:
            meta.update(named.as_meta())
        sid, ssource, snote = students.identify(rel, seen["metadata"], named, roster,
                                                folder=sub.is_folder)
        meta.update(student=sid, student_source=ssource)
        if snote:
            meta["student_note"] = snote
        meta["submitted"], meta["submitted_source"] = students.submitted_at(sub.mtime)
        readable.append(seen["notebook"])
    _one_id_per_lms_user([s.meta for s in subs])
    _flag_one_id_of_several_lms_users([s.meta for s in subs])
    for sub in subs:
        meta = sub.meta
        due = deadline
        person = roster.by_login.get(meta["student"]) if roster is not None else None
        if person is not None:  # the LMS's id and name, for the LMS's gradebook import
            meta["lms_id"], meta["lms_name"] = (person.lms_id or meta.get("lms_id", ""),
                                                person.name or meta.get("lms_name", ""))
        if person is not None and person.due is not None:
            due, meta["due_source"] = person.due, "roster (extension)"
        if due is not None:
            meta["due"] = due.isoformat(timespec="seconds")
        when = _dt.datetime.fromisoformat(meta["submitted"])
        meta.update(late.lateness(when, due, bool(meta.get("lms_late")), meta.get("lms")))
        meta.update(late_kept=policy.kept(meta["late_days"]), late_policy=policy.describe())
    twins = students.near_duplicates({s.meta["student"] for s in subs})
    for sub in subs:
        if sub.meta["student"] in twins:
            sub.meta["near_duplicates"] = twins[sub.meta["student"]]
    students.mark_superseded([s.meta for s in subs], [s.rel for s in subs], readable)


def _one_id_per_lms_user(metas: list[dict]) -> None:
    """The files of one LMS user without a student id of their own take the id another of
    their files stored (so a LATE file without metadata and its earlier one stay one student)."""
    stored: dict[tuple, str] = {}
    for m in metas:
        if m.get("lms_id") and m["student_source"] == students.METADATA:
            stored.setdefault((m["lms"], m["lms_id"]), m["student"])
    for m in metas:
        key = (m.get("lms"), m.get("lms_id"))
        if m.get("student_source") == students.LMS_ID and key in stored:
            m["student"], m["student_source"] = stored[key], students.METADATA + " (another file)"


def _flag_one_id_of_several_lms_users(metas: list[dict]) -> None:
    """Note, on each file, a student id stored in the notebooks of more than one LMS user (one
    copied another's notebook?): the stored id wins over the LMS's, so one user's file would
    supersede the other's with nothing in the rows saying the LMS knows them as two."""
    users: dict[tuple, set] = {}
    for m in metas:
        if m.get("lms_id") and m["student_source"].startswith(students.METADATA):
            users.setdefault((m["lms"], m["student"]), set()).add(m["lms_id"])
    for m in metas:
        ids = users.get((m.get("lms"), m.get("student")), set())
        if len(ids) > 1 and m["student_source"].startswith(students.METADATA):
            note = (f"the notebook says it is from student {m['student']!r}, as do files "
                    f"{m['lms']} users {', '.join(sorted(ids))} uploaded (this one: user "
                    f"{m['lms_id']})")
            m["student_note"] = "; ".join(n for n in (m.get("student_note", ""), note) if n)


class NotGraded(ValueError):
    """Nothing was graded: ``--only`` names no student or assignment of any submission in the
    folder, or the grading would drop hand scores of ``previous`` (:func:`_hand_scores_dropped`)."""


class Interrupted(Exception):
    """The batch was stopped (SIGINT or SIGTERM); ``report`` holds what was graded before."""

    def __init__(self, report: Report, missing: int):
        super().__init__(f"interrupted with {missing} submission(s) not graded")
        self.report, self.missing = report, missing


def _stop_on_signals(batch: Batch, stop: threading.Event):
    """Make SIGINT and SIGTERM stop the batch (kernels killed at once, no exception raised
    inside the cleanup, so a second Ctrl-C changes nothing); a function restoring the old
    handlers. Outside the main thread (signals cannot be caught there) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_signal(signum, frame):
        stop.set()
        batch.kill_all()

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    return lambda: [signal.signal(sig, h) for sig, h in old.items()]


def collect(folder, out=None, files=None, skipped=None) -> tuple[list[Submission], list[Path]]:
    """(every submission under ``folder``, read once, in path order, with a ``no_notebook`` one
    per upload that holds none; the files skipped). ``files`` and ``skipped``: what
    :func:`.submissions.discover` found (found again when not given)."""
    folder = Path(folder)
    root = folder.resolve()
    if files is None:
        files, skipped = discover(folder, Path(out) if out else None)
    skipped = list(skipped or [])
    empty = without_notebook(folder, files, skipped, Path(out) if out else None)
    subs = read_submissions(files, root) + [no_notebook(p, root, held) for p, held in empty]
    subs.sort(key=lambda sub: sub.rel)
    return subs, skipped


def grade_folder(folder, out=None, *, jobs: int = 1, limits: Limits | None = None,
                 seed: int | None = None, progress: bool = True, files=None, skipped=None,
                 assignment: str | None = None, roster=None, deadline=None, policy=None,
                 previous: Report | None = None, resume: bool = False, only=None) -> Report:
    """Grade every submission under ``folder`` (or the given ``files``) and return the report;
    ``assignment`` (an id of :data:`.assignments.ASSIGNMENTS`) grades all as that assignment,
    ``roster``, ``deadline`` and ``policy`` as in :func:`identify`; ``files`` and ``skipped``
    as in :func:`collect`.

    With ``previous`` (the report already in OUT_DIR): ``resume`` keeps its grade of every file
    whose bytes and assignment are unchanged and grades only the others (the seed must be the
    previous one); ``only`` (a set of student or assignment ids) grades only the submissions of
    those and keeps the previous report's other rows. Hand scores of unchanged written answers
    are carried over from ``previous`` (:func:`.written.carry`); :class:`NotGraded`, before any
    kernel runs, when no submission is of ``only`` or when hand scores of ``previous`` would
    not be carried over.

    SIGINT or SIGTERM stops the batch within about a second: every kernel is killed, the scratch
    folder removed, and :class:`Interrupted` raised with the submissions graded so far."""
    folder = Path(folder)
    limits = limits or Limits()
    seed = secrets.randbelow(2 ** 31) if seed is None else int(seed)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.monotonic()
    root = folder.resolve()
    subs, skipped_paths = collect(folder, out, files, skipped)
    identify(subs, assignment, roster, deadline, policy)
    kept: dict[int, SubmissionGrade] = {}
    extra: list[SubmissionGrade] = []
    if previous is not None and resume:
        done = {(g.file, g.sha256): g for g in previous.submissions}
        kept = {i: done[(sub.rel, sub.sha256)] for i, sub in enumerate(subs)
                if (sub.rel, sub.sha256) in done  # its grade is one of this run's assignment
                and done[(sub.rel, sub.sha256)].assignment == sub.meta.get("assignment")}
    if only:
        chosen = [i for i, sub in enumerate(subs)
                  if {sub.meta.get("student"), sub.meta.get("assignment")} & set(only)]
        if not chosen:
            raise NotGraded(
                f"--only {', '.join(sorted(only))}: no submission in {folder} is of that student "
                f"or assignment (a student id as grades.csv shows it, or one of "
                f"{', '.join(assignments.ASSIGNMENTS)}); nothing was graded or written")
        kept.update({i: None for i in range(len(subs)) if i not in chosen})
        if previous is not None:  # (not the old row of a file graded again, under another id)
            regraded = {(subs[i].rel, subs[i].sha256) for i in chosen if subs[i].sha256}
            extra = [g for g in previous.submissions
                     if not {g.student, g.assignment} & set(only)
                     and (g.file, g.sha256) not in regraded]
    if problem := _hand_scores_dropped(previous, [s.meta for s in subs] + [g.meta for g in extra],
                                       Path(out or folder)):
        raise NotGraded(problem)
    if previous is not None and not (resume or only) and previous.folder != str(root):
        raise NotGraded(
            f"{Path(out or folder)} holds the grading of {previous.folder} (seed "
            f"{previous.seed}), which grading {folder} there would replace; nothing was graded "
            f"or written: to add to it, grade with --only ID (a student or an assignment), "
            f"else give another --out")
    kept.update({i: None for i in not_graded(subs)})
    todo = [i for i in range(len(subs)) if i not in kept]
    scratch = ScratchRoot()
    batch = Batch(limits, seed, scratch.path)
    results: list = [kept.get(i) for i in range(len(subs))]
    stop = threading.Event()
    restore = _stop_on_signals(batch, stop)
    from tqdm import tqdm

    bar = tqdm(total=len(todo), desc="grading", unit="notebook", file=sys.stderr,
               dynamic_ncols=True, disable=not progress)
    pool = cf.ThreadPoolExecutor(max_workers=max(1, int(jobs)),
                                 thread_name_prefix="attention-lab-grade")
    try:
        futures = {pool.submit(batch.grade, i, subs[i]): i for i in todo}
        pending = set(futures)
        while pending and not stop.is_set():
            finished, pending = cf.wait(pending, timeout=0.1, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                i = futures[fut]
                results[i] = fut.result()
                bar.set_postfix_str(f"{_cli.shown(results[i].file[:30])}: {results[i].status}",
                                    refresh=False)
                bar.update(1)
    except KeyboardInterrupt:  # outside the main thread's handlers (no signal handler there)
        stop.set()
    finally:
        if stop.is_set():
            batch.kill_all()
            pool.shutdown(wait=False, cancel_futures=True)
            cf.wait(pending, timeout=1.5)  # the cancelled jobs end; their grades are not kept
        pool.shutdown(wait=not stop.is_set())
        bar.close()
        scratch.close()
        restore()
    changed = []
    for sub, res in zip(subs, results):
        if res is not None and (what := unchanged(sub)):
            changed.append({"file": sub.rel, "change": what})
            res.message = (res.message + "; " if res.message else "") + \
                f"WARNING: this file was {what} while the batch was graded (it was graded " \
                f"from the copy read at the start)"
    for i, res in kept.items():  # a kept grade takes this run's view of its file (on a copy:
        if res is not None:       # the previous report's stays as it was, for written.carry)
            results[i] = dataclasses.replace(res, meta=dict(subs[i].meta))
    empty_rel = {sub.rel for sub in subs if sub.held is not None}
    skipped = [as_text(p.relative_to(root)) for p in skipped_paths
               if as_text(p.relative_to(root).parts[0]) not in empty_rel]
    graded = [r for r in results if r is not None] + extra
    fresh = {id(results[i]) for i in todo if results[i] is not None}
    report = Report(str(root), graded, skipped, changed, seed, limits, started,
                    time.monotonic() - t0, int(jobs), isolation_record(),
                    {n for n, g in enumerate(graded) if id(g) in fresh})
    if previous is not None:
        written.carry(report, previous)
    if stop.is_set():
        raise Interrupted(report, len(todo) - sum(1 for i in todo if results[i] is not None))
    return report


def isolation_record() -> dict:
    """The batch's isolation, for grades.json: the sandbox, or why there is none."""
    if problem := isolation_problem():
        return {"sandbox": None, "problem": problem}
    from .namespaces import cgroup_parents, visible_paths

    return {"sandbox": "bubblewrap", "problem": "",
            "visible_read_only": sorted(a[2] for a in visible_paths() if a[0] == "--ro-bind"),
            "cgroups": sorted(c for c, _ in cgroup_parents())}


# ====================================================================== command line
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m attention_lab grade",
        description="Grade every .ipynb and .submission.json under SUBMISSIONS_DIR (flat, or "
                    "SUBMISSIONS_DIR/<student>/<file> as an LMS download gives them) into "
                    "OUT_DIR: grades.csv and grades.json (every submission), written.csv (the "
                    "written answers to score by hand), gradebook.csv (one row per student, for "
                    "an LMS) and feedback/<student>/<assignment>.html (to hand back). Each "
                    "submission runs in its own sandboxed kernel on a scratch copy; submissions "
                    "are never modified.")
    p.add_argument("submissions", metavar="SUBMISSIONS_DIR",
                   help="folder of submissions; a first-level subfolder is a student's")
    p.add_argument("--out", required=True, metavar="OUT_DIR",
                   help="folder for the grades, gradebook and feedback (created if missing)")
    p.add_argument("--assignment", metavar="ID",
                   help="grade every submission as this assignment: "
                        + ", ".join(assignments.ASSIGNMENTS) + " (or its level number); by "
                        "default each submission's notebook metadata, else its file name, says")
    p.add_argument("--merge", metavar="WRITTEN_CSV",
                   help="after grading, fold in the scores and comments of a filled-in "
                        "written.csv (the row of any bad line is named and nothing is written); "
                        "without regrading: python -m attention_lab merge OUT_DIR")
    p.add_argument("--jobs", type=_cli.positive_int, default=1, metavar="N",
                   help="submissions graded in parallel (default 1)")
    _cli.add_time_limits(p)
    p.add_argument("--memory-mb", type=_cli.positive_int, default=2048, metavar="MB",
                   help="address-space limit of each kernel (default 2048)")
    p.add_argument("--seed", type=_cli.non_negative_int, default=None,
                   help="seed of the random test cases (default: a fresh one, recorded in "
                        "grades.json); the same seed regrades a folder into identical CSVs")
    p.add_argument("--require-sandbox", action="store_true",
                   help="refuse to run when kernels cannot be isolated (bubblewrap namespaces)")
    p.add_argument("--roster", metavar="CSV",
                   help="the class list: lms_id,login,name[,due] (an LMS id maps to the login "
                        "the grades are filed under; due: a student's extension)")
    p.add_argument("--deadline", metavar="WHEN",
                   help="the due date, ISO 8601 (2026-03-01T23:59+01:00; a date alone: the end "
                        "of that day, UTC); the LMS's file times decide what is late")
    p.add_argument("--late-penalty", metavar="P%/day",
                   help="late work loses P%% of its points per day started (e.g. 10%%/day)")
    p.add_argument("--late", choices=("flag", "zero"), default=None,
                   help="late work: flag (shown, not penalised; the default) or zero")
    p.add_argument("--resume", action="store_true",
                   help="after an interrupted (or finished) grading into OUT_DIR: grade only "
                        "the submissions without a grade there (same seed, same results)")
    p.add_argument("--only", metavar="ID", action="append",
                   help="grade only this student's (or this assignment's) submissions and keep "
                        "every other row of the grading already in OUT_DIR (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _folder_problem(folder: Path, out: Path) -> str:
    """Why ``folder`` cannot be graded into ``out`` (``""`` when it can; creates ``out``)."""
    if not folder.exists():
        return f"the submissions folder {folder} does not exist"
    if not folder.is_dir() and zipfile.is_zipfile(folder):
        return (f"{folder} is a zip file: unpack it into an empty folder as it is (unzip -q "
                f"{folder} -d {folder.stem}/) and grade that folder")
    if not folder.is_dir():
        return f"{folder} is a file, not a folder of submissions"
    if not os.access(folder, os.R_OK | os.X_OK):
        return f"the submissions folder {folder} cannot be read (permissions)"
    if out.resolve() == folder.resolve() or out.resolve().is_relative_to(folder.resolve()):
        return (f"--out {out} is inside the submissions folder {folder}: its files would be "
                f"graded as submissions next time; give a folder outside it")
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file; give a folder for grades.csv and grades.json"
    if out.exists() and not os.access(out, os.W_OK | os.X_OK):
        return f"cannot write to --out {out} (permissions)"
    parent = next((p for p in out.absolute().parents if p.exists()), None)
    if not out.exists() and (parent is None or not parent.is_dir()
                             or not os.access(parent, os.W_OK | os.X_OK)):
        return f"cannot create --out {out} (its parent folder is not writable)"
    return ""


def _hand_scores_at_risk(out: Path, merge, previous: Report | None = None) -> str:
    """``OUT_DIR/written.csv`` holding hand scores or comments that a new grading would replace,
    when they are not being merged and not already in ``previous`` (OUT_DIR's grades.json,
    whose hand scores a new grading carries over) (``""`` when nothing is at risk)."""
    path = out / "written.csv"
    if not path.is_file() or (merge and Path(merge).resolve() == path.resolve()):
        return ""
    merged = {(s.student, s.assignment, i, g.score, g.comment)
              for s in (previous.counted() if previous is not None else [])
              for i, g in s.exercises.items() if g.status == "hand_graded" or g.comment}
    try:
        rows = written.read(path)
        filled = sum(1 for r in rows if (r.score is not None or r.comment) and (
            r.student, r.assignment, r.exercise, r.score, r.comment) not in merged)
    except written.WrittenError:
        filled = -1
    if not filled:
        return ""
    what = f"holds {filled} hand score(s) or comment(s)" if filled > 0 else \
        "is there and cannot be read as a written.csv"
    return (f"{path} {what} that this grading would replace: add --merge {path} to keep them, "
            f"or move the file away")


def _hand_scores_dropped(previous: Report | None, metas: list[dict], out: Path) -> str:
    """Why a grading of the submissions ``metas`` must not replace ``previous`` (OUT_DIR's
    grading): hand scores or comments of a student and assignment that no counted submission
    of ``metas`` is of, so that nothing carries them over (``""`` when there are none)."""
    now = {(m["student"], m["assignment"]) for m in metas if counts(m)}
    lost = sorted({(s.student, s.assignment) for s in (previous.counted() if previous else [])
                   if (s.student, s.assignment) not in now and any(
                       g.status == "hand_graded" or g.comment for g in s.exercises.values())})
    if not lost:
        return ""
    return (f"{out / 'grades.json'} holds hand scores of {len(lost)} submission(s) this grading "
            f"does not include ({_cli.shown(', '.join(f'{a} {b}' for a, b in lost[:3]))}"
            f"{' ...' if len(lost) > 3 else ''}); nothing was written: to add to that grading, "
            f"grade with --only ID (a student or an assignment), else give another --out")


def main(argv: list[str] | None = None) -> int:
    skip_slow_optional_imports()
    args, code = _cli.parse(build_parser(), argv)
    if args is None:
        return code
    folder, out = Path(args.submissions), Path(args.out)
    if problem := _folder_problem(folder, out):
        return _cli.fail("grade", problem)
    files, skipped = discover(folder, out)
    if not files and not without_notebook(folder, files, skipped, out):
        found = f"; found only: {', '.join(p.name for p in skipped[:5])}" if skipped else ""
        return _cli.fail("grade", f"no submissions in {folder} (looked for *.ipynb and "
                                  f"*.submission.json{found})")
    assignment = None
    if args.assignment is not None:
        try:
            assignment = assignments.resolve(args.assignment).id
        except assignments.UnknownAssignment as exc:
            return _cli.fail("grade", f"--assignment: {exc}")
    merge_rows = None
    if args.merge is not None:
        try:
            merge_rows = written.read(Path(args.merge))
        except written.WrittenError as exc:
            return _cli.fail("grade", f"--merge: {exc}")
    options, problem = _course_options(args, out)
    if problem:
        return _cli.fail("grade", problem)
    if problem := _hand_scores_at_risk(out, args.merge, options["previous"]):
        return _cli.fail("grade", problem)
    try:
        import nbclient  # noqa: F401
        import tqdm  # noqa: F401
    except ImportError as exc:
        return _cli.fail("grade", f"grading needs the 'grading' extras ({exc.name} is missing): "
                                  f"pip install 'attention-lab[grading]'")
    if args.memory_mb < 256:
        return _cli.fail("grade", "--memory-mb below 256 leaves no room for a Python kernel")
    problem = isolation_problem()
    if problem and args.require_sandbox:
        return _cli.fail("grade", f"--require-sandbox: kernels cannot be isolated here: {problem}")
    if problem:
        user = "this user" if os.geteuid() else "any user" if others_run_python() else (
            "root (no other user can run this Python), so a kernel can also change any file, "
            "its grade included,")
        print(f"note: kernels run without isolation ({problem}): each has hard time, memory and "
              f"file-size limits, but can read what {user} can read and reach the network; "
              f"--require-sandbox refuses to run in that case", file=sys.stderr)
    limits = Limits.for_cells(args.cell_timeout, args.timeout, memory_mb=args.memory_mb,
                              require_sandbox=args.require_sandbox)
    seed = options.pop("seed", args.seed)
    try:
        report = grade_folder(folder, out, jobs=args.jobs, limits=limits, seed=seed,
                              progress=not args.quiet, files=files, skipped=skipped,
                              assignment=assignment, **options)
    except NotGraded as exc:
        return _cli.fail("grade", _cli.shown(str(exc)))
    except Interrupted as stopped:
        for sig in (signal.SIGINT, signal.SIGTERM):  # a further Ctrl-C must not cut this short
            signal.signal(sig, signal.SIG_IGN)
        write_report(stopped.report, out, PARTIAL_WRITERS)
        print(f"grade: interrupted; {len(stopped.report.submissions)} submission(s) graded are "
              f"kept in {out / 'grades.json'}, {stopped.missing} not graded; run the same "
              f"command with --resume to grade only those", file=sys.stderr)
        return 130
    stale = []
    if merge_rows is not None:
        stale = written.changed_answers(report, merge_rows)
        try:
            written.apply(report, merge_rows, Path(args.merge).name, skip_changed=True)
        except written.WrittenError as exc:
            return _cli.fail("grade", f"--merge: {exc}; nothing was written (the notebooks were "
                                      f"graded: fix the row and run again)")
    paths = write_report(report, out)
    print(summary_table(report))
    if report.skipped:
        print(f"skipped {len(report.skipped)} file(s) that are neither .ipynb nor "
              f".submission.json: {_cli.shown(', '.join(report.skipped[:5]))}"
              + (" ..." if len(report.skipped) > 5 else ""))
    print(f"wrote {', '.join(map(str, paths))}")
    if stale:
        print(f"note: {len(stale)} answer(s) of {Path(args.merge).name} changed since they were "
              f"scored (resubmitted) and were not merged; score them again in "
              f"{out / 'written.csv'}: " + _cli.shown(", ".join(
                  f"{r.student} {r.exercise}" for r in stale[:5])))
    print(f"seed {report.seed}: grading again with --seed {report.seed} gives the same CSVs")
    return 0


def _course_options(args, out: Path) -> tuple[dict, str]:
    """The keyword arguments of :func:`grade_folder` from ``--roster``, ``--deadline``, the
    late policy, ``--resume`` and ``--only`` (the report already in ``out`` as ``previous``),
    or why they cannot be used."""
    from . import roster as roster_

    options: dict = {"previous": None}
    try:
        options["policy"] = late.Policy.parse(args.late_penalty, args.late)
    except ValueError as exc:
        return options, str(exc)
    if args.deadline is not None:
        try:
            options["deadline"] = late.parse_time(args.deadline)
        except ValueError as exc:
            return options, f"--deadline {args.deadline!r}: {exc}"
    if args.roster is not None:
        try:
            options["roster"] = roster_.read(args.roster)
        except roster_.RosterError as exc:
            return options, str(exc)
    grades = out / "grades.json"
    if grades.is_file():
        try:
            options["previous"] = read_report(grades)
        except UNREADABLE as exc:
            return options, f"{grades} cannot be read back ({type(exc).__name__}: {exc})"
    if (args.resume or args.only) and options["previous"] is None:
        flag = "--resume" if args.resume else "--only"
        return options, f"{flag}: there is no grading in {out} to add to (no grades.json)"
    if args.resume:
        previous = options["previous"].seed
        if args.seed is not None and args.seed != previous:
            return options, (f"--resume: the grading in {out} used --seed {previous}, not "
                             f"{args.seed} (resuming keeps the seed, so the results match)")
        options.update(resume=True, seed=previous)
    if args.only:
        options.update(only=set(args.only), seed=options["previous"].seed
                       if args.seed is None else args.seed)
    return options, ""


if __name__ == "__main__":
    sys.exit(main())
