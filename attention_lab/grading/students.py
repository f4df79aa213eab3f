"""Students: who handed in each submission, which submission counts, and safe folder names.

Where a student id comes from, in this order (the first that gives one wins, and the report says
which; a disagreement is noted):

1. the **folder**: a file under ``SUBMISSIONS_DIR/<student>/`` (what an LMS bulk download or
   nbgrader's exchange produces) belongs to ``<student>``. The folder was made by whoever
   collected the files, so it is trusted over what a notebook says about itself;
2. the **notebook metadata**: ``python -m attention_lab submit --student ID`` stores the id in
   the notebook (``{"attention_lab": {"student": ID}}``);
3. the **file name** (without its extension), as a last resort, flagged in the summary.

Two submissions of one student for one assignment: the latest counts (the time recorded in a
``.submission.json`` by ``submit``, else the file's modification time; ties by path), the others
are graded and listed as superseded, never dropped silently. A file that is not a notebook at all
never supersedes one that is.

Student ids are text from students: :func:`path_names` turns them into folder names that are a
single safe path component, distinct for distinct ids (also on case-insensitive file systems).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import unicodedata
from pathlib import Path

from .assignments import METADATA_KEY

MAX_ID = 200
FOLDER, METADATA, FILE_NAME = "folder", "notebook metadata", "file name"
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
             *(f"lpt{i}" for i in range(10))}


def clean_id(value) -> str | None:
    """A usable student id (stripped, NFC), or None: not text, empty, too long, or holding
    control characters."""
    if not isinstance(value, str):
        return None
    text = unicodedata.normalize("NFC", value).strip()
    if not text or len(text) > MAX_ID:
        return None
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text):
        return None
    return text


def check_id(value: str) -> str:
    """``submit --student``: the cleaned id, or ``ValueError`` saying what is wrong with it."""
    text = clean_id(value)
    if text is None:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("the student id is empty")
        if len(value.strip()) > MAX_ID:
            raise ValueError(f"the student id is longer than {MAX_ID} characters")
        raise ValueError("the student id holds control characters (a line break, a tab...)")
    return text


def from_metadata(metadata) -> tuple[str | None, str]:
    """(student id or None, note) from a notebook's metadata (untrusted JSON)."""
    own = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    value = own.get("student") if isinstance(own, dict) else None
    if value is None:
        return None, ""
    sid = clean_id(value)
    return sid, "" if sid else "the notebook's student id is unusable (empty, too long or " \
                               "holding control characters)"


def identify(rel: str, metadata) -> tuple[str, str, str]:
    """``(student id, source, note)`` for a submission at ``rel`` (its path relative to the
    submissions folder, ``/``-separated) whose notebook has ``metadata``."""
    parts = Path(rel).parts
    folder = clean_id(parts[0]) if len(parts) > 1 else None
    claimed, note = from_metadata(metadata)
    if folder:
        if claimed and claimed != folder:
            note = f"the notebook says it is from student {claimed!r}, its folder says {folder!r}"
        return folder, FOLDER, note
    if claimed:
        return claimed, METADATA, note
    stem = Path(rel).name.removesuffix(".submission.json").removesuffix(".ipynb")
    return stem, FILE_NAME, "; ".join(n for n in (note, "no student id in the notebook and no "
                                                  "student folder: the file name is used") if n)


def submitted_at(created, mtime: float) -> tuple[str, str]:
    """(UTC ISO time, source): the time a ``.submission.json`` records, else ``mtime``."""
    if isinstance(created, str):
        try:
            t = _dt.datetime.fromisoformat(created)
            if t.tzinfo is None:
                t = t.replace(tzinfo=_dt.timezone.utc)
            return t.astimezone(_dt.timezone.utc).isoformat(timespec="seconds"), "submission file"
        except ValueError:
            pass
    t = _dt.datetime.fromtimestamp(mtime, _dt.timezone.utc)
    return t.isoformat(timespec="seconds"), "file modification time"


def mark_superseded(metas: list[dict], rels: list[str], readable: list[bool]) -> None:
    """Among submissions with the same student and assignment, mark all but the one that counts
    (the latest readable one; the latest when none is readable): ``meta["superseded_by"]`` (the
    file that counts) and, on the one that counts, ``meta["replaces"]``."""
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(metas):
        if m.get("student") and m.get("assignment"):
            groups.setdefault((m["student"], m["assignment"]), []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda i: (readable[i], metas[i].get("submitted", ""), rels[i]))
        latest = members[-1]
        metas[latest]["replaces"] = [rels[i] for i in members[:-1]]
        for i in members[:-1]:
            metas[i]["superseded_by"] = rels[latest]


def _safe(sid: str) -> str:
    text = unicodedata.normalize("NFC", sid)
    safe = "".join(c if (c.isalnum() or c in "-_.@") else "_" for c in text)
    return re.sub(r"_+", "_", safe).strip("._-")[:60]


def path_names(ids) -> dict[str, str]:
    """A folder name per student id: the id itself when it is already a safe name (letters,
    digits, ``-_.@``), else its safe form plus a short hash of the id; names that would clash
    on a case-insensitive file system all get the hash."""
    ids = sorted(set(ids))
    names = {}
    for sid in ids:
        safe = _safe(sid)
        if safe != sid or not safe or safe.lower() in _RESERVED:
            safe = f"{safe or 'student'}-{_digest(sid)}"
        names[sid] = safe
    folded: dict[str, list[str]] = {}
    for sid, name in names.items():
        folded.setdefault(name.casefold(), []).append(sid)
    for clash in folded.values():
        if len(clash) > 1:
            for sid in clash:
                names[sid] = f"{_safe(sid) or 'student'}-{_digest(sid)}"
    return names


def _digest(sid: str) -> str:
    return hashlib.sha256(sid.encode("utf-8")).hexdigest()[:8]


__all__ = ["FOLDER", "METADATA", "FILE_NAME", "clean_id", "check_id", "from_metadata",
           "identify", "submitted_at", "mark_superseded", "path_names"]
