"""Submissions as files: finding them in a folder, reading each once, and parsing it.

A submission is an ``.ipynb`` or a ``.submission.json`` written by ``python -m attention_lab
submit``. The folder and the bytes are untrusted: the folder is walked without following a link
(an entry that is not a regular file, or a link where a student folder would be, becomes an
``unreadable`` row with its reason); a file is opened once with ``O_NOFOLLOW | O_NONBLOCK`` and
read only if the descriptor is the regular file the walk found. The work on a file's bytes is
linear in their size and bounded (``MAX_FILE_BYTES``; ``MAX_JSON_ITEMS`` counted in the bytes
before any parsing, and in a submission file's notebook text before it is parsed; ``MAX_CELLS``;
``MAX_SOURCE_BYTES``: else :class:`TooLarge`), and a file that is not a notebook gets
:class:`Unreadable` with a one-line reason, never a parser's exception.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

SUBMISSION_FORMAT = "attention-lab-submission"
MAX_FILE_BYTES = 50 * 2 ** 20
MAX_JSON_ITEMS = 1_000_000  # commas and brackets: an upper bound of the values JSON would hold
MAX_CELLS = 5_000
MAX_SOURCE_BYTES = 2 * 2 ** 20
SUFFIXES = (".ipynb", ".submission.json")
SKIPPED_FOLDERS = ("__pycache__", ".ipynb_checkpoints", "__MACOSX")  # (a Mac's zip's forks)


def discover(folder: Path, exclude: Path | None = None) -> tuple[list[Path], list[Path]]:
    """(submissions, skipped files) under ``folder``, without following links; hidden entries,
    :data:`SKIPPED_FOLDERS` and ``exclude`` (the output folder) are left out. A
    submission is an entry named ``*.ipynb`` or ``*.submission.json`` (a regular file or not),
    or a link at the first level (where student folders are)."""
    folder = folder.resolve()
    exclude = exclude.resolve() if exclude else None
    found: list[Path] = []
    skipped: list[Path] = []

    folders = [(folder, 0)]  # (a stack, not recursion: a student's folders may nest deeply)
    while folders:
        here, depth = folders.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for e in entries:
            p = here / e.name
            if e.name.startswith(".") or (exclude is not None and p == exclude):
                continue
            if e.is_dir(follow_symlinks=False):
                if e.name not in SKIPPED_FOLDERS:
                    folders.append((p, depth + 1))
            elif e.name.endswith(SUFFIXES) or (depth == 0 and e.is_symlink()):
                found.append(p)
            elif not e.is_symlink():
                skipped.append(p)
    return sorted(found), sorted(skipped)


def without_notebook(folder: Path, found: list[Path], skipped: list[Path],
                     exclude: Path | None = None) -> list[tuple[Path, list[str]]]:
    """The uploads that hold no notebook, each with the names of what it held: a first-level
    (student) folder without any submission in it, and a flat file an LMS named
    (:func:`.lms.parse`) that is not a notebook (a ``.zip``, a ``.pdf``). Each becomes a
    ``no_notebook`` row; the rest of the class is graded as usual. Not an upload of a student
    whose notebook the LMS handed over too (by its id): Moodle's online-text folder beside the
    file folder, a PDF beside the notebook on Canvas."""
    from .lms import moodle_folder, parse

    root = folder.resolve()
    exclude = exclude.resolve() if exclude else None
    used = {p.relative_to(root).parts[0] for p in found}
    handed_in = {(n.lms, n.lms_id) for p in found
                 if (n := parse(p.relative_to(root).as_posix())) is not None}
    held: dict[str, list[str]] = {}
    for p in skipped:
        parts = p.relative_to(root).parts
        held.setdefault(parts[0], []).append("/".join(parts[1:]) or parts[0])
    out = []
    for e in sorted(os.scandir(root), key=lambda e: e.name):
        p = root / e.name
        if e.name.startswith(".") or e.name in used or p == exclude:
            continue
        named = moodle_folder(e.name) if e.is_dir(follow_symlinks=False) else parse(e.name)
        if named is not None and (named.lms, named.lms_id) in handed_in:
            continue
        if e.is_dir(follow_symlinks=False) and e.name not in SKIPPED_FOLDERS:
            out.append((p, sorted(held.get(e.name, []))))
        elif e.is_file(follow_symlinks=False) and parse(e.name) is not None:
            out.append((p, [e.name]))
    return out


def no_notebook(path: Path, root: Path, held: list[str]) -> "Submission":
    """The ``no_notebook`` submission of an upload that holds ``held`` (names) and no notebook."""
    what = (f"only {', '.join(held[:5])}" + (f" and {len(held) - 5} more" if len(held) > 5
                                              else "")) if held else "nothing (it is empty)"
    if path.is_dir():
        problem = f"no notebook in this upload: it holds {what}"
    else:
        problem = f"not a notebook (*{SUFFIXES[0]} or *{SUFFIXES[1]}) but {path.suffix or 'a file'}"
    times = [os.lstat(path / name).st_mtime for name in held] if path.is_dir() else []
    return Submission(path, as_text(path.relative_to(root.resolve())), None, None,
                      problem + ": the notebook itself must be handed in",
                      mtime=max(times, default=os.lstat(path).st_mtime),  # (a zip dates files)
                      held=list(held), is_folder=path.is_dir())


def not_a_file(st: os.stat_result) -> str:
    """Why an entry of type ``st`` is not read, or ``""`` for a regular file."""
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"))
    for test, what in kinds:
        if test(st.st_mode):
            return f"not a regular file but {what}; the grader opens no such entry and " \
                   f"follows no link (hand in the notebook file itself)"
    return "" if stat.S_ISREG(st.st_mode) else "not a regular file"


@dataclass
class Submission:
    """One file to grade, as read at the start of the batch (the file is not read again).

    ``data`` is ``None`` when the file could not be read (``problem`` says why; ``too_large``:
    because of its size). ``meta`` holds what is known about the submission besides its
    content (e.g. its assignment and student, and where each came from); it is reported with
    the grade in grades.json. ``mtime``: the file's modification time, as read.
    """

    path: Path
    rel: str  # the path shown in the report, relative to the submissions folder
    data: bytes | None
    sha256: str | None
    problem: str = ""
    meta: dict = field(default_factory=dict)
    too_large: bool = False
    mtime: float = 0.0
    held: list | None = None  # an upload with no notebook: the names of what it held
    is_folder: bool = False  # that upload is a (student) folder


def _open_regular(path: Path, st: os.stat_result | None = None) -> int:
    """A descriptor of ``path`` if it is (still) the regular file ``st`` describes; never
    follows a link, never waits on a pipe."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (st is not None and (now.st_dev, now.st_ino)
                                         != (st.st_dev, st.st_ino)):
        os.close(fd)
        raise OSError(0, "it changed while it was read")
    return fd


def json_items(data: bytes | str) -> int:
    """An upper bound of the values ``json.loads(data)`` would make (linear, no parsing)."""
    return sum(data.count(c if isinstance(data, str) else c.encode()) for c in ",[{")


def read_submissions(files: list[Path], root: Path) -> list[Submission]:
    """Read and hash every file once (at most ``MAX_FILE_BYTES`` each), never through a link."""
    root = root.resolve()
    return [_read(p, as_text(p.relative_to(root) if p.is_relative_to(root) else p))
            for p in files]


def as_text(path: Path) -> str:
    """``path`` as the report shows it (and keys it by): a name that is not UTF-8 with its bytes
    escaped (``\\xff``), never as the lone surrogates Python reads it as (no file takes them)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _read(p: Path, rel: str) -> Submission:
    try:
        st = os.lstat(p)
    except OSError as exc:
        return Submission(p, rel, None, None, f"could not be read: {exc.strerror}")
    unread = functools.partial(Submission, p, rel, None, mtime=st.st_mtime)
    why = not_a_file(st)
    if why:
        return unread(None, why)
    if st.st_size > MAX_FILE_BYTES:
        return unread(None, f"larger than {MAX_FILE_BYTES // 2 ** 20} MB: too large to grade",
                      too_large=True)
    try:
        with os.fdopen(_open_regular(p, st), "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return unread(None, f"could not be read: {exc.strerror or 'unknown error'}")
    digest = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_FILE_BYTES or json_items(data) > MAX_JSON_ITEMS:
        what = (f"larger than {MAX_FILE_BYTES // 2 ** 20} MB" if len(data) > MAX_FILE_BYTES
                else f"more than {MAX_JSON_ITEMS:,} JSON values")
        return unread(digest, f"{what}: too large to grade (clear the notebook's outputs and "
                              f"hand it in again)", too_large=True)
    return Submission(p, rel, data, digest, mtime=st.st_mtime)


def sha256_file(path: Path) -> str | None:
    """The hash of the regular file at ``path`` (``None`` if it is gone, not a regular file, or
    a link), read without following links or waiting on a pipe."""
    h = hashlib.sha256()
    try:
        with os.fdopen(_open_regular(path), "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def unchanged(sub: Submission) -> str:
    """``""`` when ``sub`` still holds the bytes it was graded from, else what happened to it
    ("modified" or "deleted"); submissions that were never read are not checked."""
    if sub.sha256 is None or (now := sha256_file(sub.path)) == sub.sha256:
        return ""
    return "deleted" if now is None else "modified"


class Unreadable(Exception):
    pass


class TooLarge(Unreadable):
    """Readable, but more than the grader works on for one submission."""


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
            inner = obj.get("notebook")
            obj = json.loads(inner) if isinstance(inner, str) and json_items(
                inner) <= MAX_JSON_ITEMS else None
        if isinstance(obj, dict):
            found["notebook"] = isinstance(obj.get("cells"), list)
            if isinstance(obj.get("metadata"), dict):
                found["metadata"] = obj["metadata"]
    except (ValueError, RecursionError):
        pass
    return found


def _within_bounds(cells: list) -> None:
    """Raise :class:`TooLarge` for more than ``MAX_CELLS`` cells or ``MAX_SOURCE_BYTES`` of
    cell source."""
    if len(cells) > MAX_CELLS:
        raise TooLarge(f"{len(cells):,} cells, more than the {MAX_CELLS:,} the grader runs: too "
                       f"large to grade (remove the empty cells and hand it in again)")
    code = 0
    for cell in cells:
        src = cell.get("source", "") if isinstance(cell, dict) else ""
        code += sum(map(len, map(str, src))) if isinstance(src, list) else len(str(src))
    if code > MAX_SOURCE_BYTES:
        raise TooLarge(f"{code:,} characters of cell source, more than the "
                       f"{MAX_SOURCE_BYTES:,} the grader reads: too large to grade")


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
    except ValueError:  # (JSON sets no limit; Python reads numbers of at most 4,300 digits)
        raise Unreadable("not valid JSON (a number of thousands of digits)") from None
    notes = []
    if name.endswith(".submission.json"):
        if not isinstance(obj, dict) or obj.get("format") != SUBMISSION_FORMAT:
            raise Unreadable("not an attention-lab submission file (no "
                             f"'format': '{SUBMISSION_FORMAT}')")
        nb_text = obj.get("notebook")
        if not isinstance(nb_text, str):
            raise Unreadable("the submission file holds no notebook")
        if json_items(nb_text) > MAX_JSON_ITEMS:  # (its escapes, as \u002c, are commas now)
            raise TooLarge(f"its notebook holds more than {MAX_JSON_ITEMS:,} JSON values: too "
                           f"large to grade (clear the notebook's outputs and hand it in again)")
        if hashlib.sha256(nb_text.encode("utf-8", "surrogatepass")).hexdigest() != obj.get(
                "notebook_sha256"):  # (submit never writes a lone surrogate: no match then)
            notes.append("the notebook inside the submission file does not match its recorded "
                         "hash (edited after submitting?)")
        body = {k: obj.get(k) for k in ("notebook", "notebook_name", "created", "results",
                                        "package_version")}
        if canonical_hash(body) != obj.get("content_hash"):
            notes.append("the submission file's content hash does not match (edited after "
                         "submitting?)")
        try:
            obj = json.loads(nb_text)
        except (ValueError, RecursionError):
            raise Unreadable("the notebook inside the submission file is not valid JSON") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("cells"), list):
        raise Unreadable("valid JSON but not a notebook (no list of 'cells')")
    if not isinstance(obj.get("nbformat"), int):
        raise Unreadable("valid JSON but not a notebook (no 'nbformat' version)")
    if obj["nbformat"] != 4:  # (format 3 keeps its cells in worksheets, past the bounds below)
        raise Unreadable(f"a notebook of format {str(obj['nbformat'])[:10]}, not 4: open it in "
                         f"Jupyter and save it (Jupyter writes format 4)")
    _within_bounds(obj["cells"])
    for cell in obj["cells"]:  # the grader never looks at outputs: they are not validated
        if isinstance(cell, dict) and "outputs" in cell:
            cell["outputs"] = []
    try:
        valid = json.dumps(obj, ensure_ascii=False).encode("utf-8", "replace").decode()
        nb = nbformat.reads(valid, as_version=4)  # (a lone surrogate, JSON's \ud800, is now ?)
    except Exception as exc:
        raise Unreadable(f"not a readable notebook: {type(exc).__name__}: {str(exc)[:200]}") \
            from None
    for cell in nb.cells:
        if not isinstance(cell.get("source", ""), str) or cell.get("cell_type") not in (
                "code", "markdown", "raw"):
            raise Unreadable("not a readable notebook: a cell has no source text or an unknown "
                             "type")
    return nb, notes
