"""Submissions as files: finding them in a folder, reading each once, and parsing it.

A submission is an ``.ipynb`` or a ``.submission.json`` written by ``python -m attention_lab
submit`` (the notebook as text plus the student's own results, the package version, a timestamp
and content hashes). Everything here treats the bytes as untrusted: a file that is not a notebook
gets :class:`Unreadable` with a one-line reason, never an exception from a parser.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

SUBMISSION_FORMAT = "attention-lab-submission"
MAX_FILE_BYTES = 50 * 2 ** 20
SUFFIXES = (".ipynb", ".submission.json")


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


@dataclass
class Submission:
    """One file to grade, as read at the start of the batch (the file is not read again).

    ``data`` is ``None`` when the file could not be read (``problem`` says why). ``meta`` holds
    what is known about the submission besides its content (e.g. its assignment and student,
    and where each came from); it is reported with the grade in grades.json.
    """

    path: Path
    rel: str  # the path shown in the report, relative to the submissions folder
    data: bytes | None
    sha256: str | None
    problem: str = ""
    meta: dict = field(default_factory=dict)


def read_submissions(files: list[Path], root: Path) -> list[Submission]:
    """Read and hash every file once (at most ``MAX_FILE_BYTES`` each)."""
    root = root.resolve()
    subs = []
    for p in files:
        rel = str(p.resolve().relative_to(root)) if p.resolve().is_relative_to(root) else str(p)
        try:
            if p.stat().st_size > MAX_FILE_BYTES:
                subs.append(Submission(p, rel, None, sha256_file(p),
                                       f"larger than {MAX_FILE_BYTES // 2 ** 20} MB"))
                continue
            data = p.read_bytes()
            subs.append(Submission(p, rel, data, hashlib.sha256(data).hexdigest()))
        except OSError as exc:
            subs.append(Submission(p, rel, None, None, f"could not be read: {exc.strerror}"))
    return subs


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


def peek(name: str, data: bytes | None) -> dict:
    """What a submission says about itself, read cheaply and never raising: ``notebook`` (True
    when it looks like a notebook: JSON with a list of cells), ``metadata`` (the notebook's
    metadata dict, ``{}`` if none), and for a ``.submission.json`` its ``created`` time and
    original ``notebook_name``. Untrusted: the values are whatever JSON the file holds."""
    found: dict = {"notebook": False, "metadata": {}, "created": None, "notebook_name": None}
    try:
        obj = json.loads(data.decode("utf-8")) if data else None
        if name.endswith(".submission.json") and isinstance(obj, dict):
            found["created"] = obj.get("created")
            found["notebook_name"] = obj.get("notebook_name")
            obj = json.loads(obj["notebook"]) if isinstance(obj.get("notebook"), str) else None
        if isinstance(obj, dict):
            found["notebook"] = isinstance(obj.get("cells"), list)
            if isinstance(obj.get("metadata"), dict):
                found["metadata"] = obj["metadata"]
    except (ValueError, RecursionError):
        pass
    return found


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
