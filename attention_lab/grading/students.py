"""Students: who handed in each submission, which submission counts, and safe folder names.

Where a student id comes from, in this order (the first that gives one wins, and the report says
which; a disagreement is noted):

1. the **roster** (``--roster``, :mod:`.roster`): a file the LMS named (:mod:`.lms`) belongs to
   the login the roster gives its LMS id: the LMS knows who uploaded it;
2. a plain **folder** (``SUBMISSIONS_DIR/<student>/``, as nbgrader's exchange or an instructor
   makes them): trusted over what a notebook says about itself;
3. the **notebook metadata**: ``python -m attention_lab submit --student ID`` stores the id in
   the notebook (``{"attention_lab": {"student": ID}}``); it wins over a name an LMS made up
   (``Jane Doe_12345_assignsubmission_file_``), whose id is kept beside it;
4. the LMS's id of the uploader (``lms_id``: Moodle's participant id, Canvas's user id), so that
   a student's LATE and resubmitted files stay one student;
5. the **file name** (without its extension), as a last resort, flagged in the summary.

A folder name is taken as it is: ``alice`` and ``alice `` (a trailing space), ``Alice`` and
``alice``, or two Unicode spellings of one name are different ids, never merged;
:func:`near_duplicates` flags them for the instructor.

Of two submissions of one student for one assignment the latest counts; the others are graded
and listed as superseded, never dropped silently (:func:`mark_superseded`). Student ids are text
from students: :func:`path_names` turns them into safe, distinct folder names.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import unicodedata
from collections import Counter
from pathlib import Path

from .assignments import METADATA_KEY

MAX_ID = 200
FOLDER, METADATA, FILE_NAME = "folder", "notebook metadata", "file name"
ROSTER, LMS_ID = "roster", "LMS id"
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
             *(f"lpt{i}" for i in range(10))}


def clean_id(value) -> str | None:
    """A usable student id (stripped, NFC), or None: not text, empty, too long, or holding
    control characters."""
    if not isinstance(value, str):
        return None
    return folder_id(unicodedata.normalize("NFC", value).strip())


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


def folder_id(name: str) -> str | None:
    """A folder's name as a student id, exactly as it is (not stripped, not normalised: see the
    module's note on near-duplicates), or None when it is empty, too long or holds control
    characters."""
    if not name.strip() or len(name) > MAX_ID or any(
            unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in name):
        return None
    return name


def identify(rel: str, metadata, lms_name=None, roster=None,
             folder: bool = False) -> tuple[str, str, str]:
    """``(student id, source, note)`` for a submission at ``rel`` (its path relative to the
    submissions folder, ``/``-separated) whose notebook has ``metadata``; ``lms_name`` is what
    :func:`.lms.parse` read from ``rel``, ``roster`` a :class:`.roster.Roster`; ``folder``:
    ``rel`` is a student folder itself (an upload without a notebook)."""
    parts = Path(rel).parts + (("",) if folder else ())
    claimed, note = from_metadata(metadata)
    if lms_name is not None:
        known = roster.by_lms_id.get(lms_name.lms_id) if roster is not None else None
        if known is not None:
            if claimed and claimed != known.login:
                note = (f"the notebook says it is from student {claimed!r}, but {lms_name.lms} "
                        f"user {lms_name.lms_id} uploaded it (the roster's {known.login!r})")
            return known.login, ROSTER, note
        user = f"{lms_name.lms} user {lms_name.lms_id} ({lms_name.name})"
        if claimed:
            return claimed, METADATA, "; ".join(n for n in (note, roster is not None and (
                f"{user} is not in the roster: the notebook's id is used")) if n)
        why = "not in the roster" if roster is not None else "no --roster"
        return lms_name.lms_id, LMS_ID, "; ".join(n for n in (note, (
            f"no student id in the notebook and {user} is {why}: the LMS id is used")) if n)
    owner = folder_id(parts[0]) if len(parts) > 1 else None
    if owner:
        if claimed and claimed != owner:
            note = f"the notebook says it is from student {claimed!r}, its folder says {owner!r}"
        return owner, FOLDER, note
    if claimed:
        return claimed, METADATA, note
    stem = Path(rel).name.removesuffix(".submission.json").removesuffix(".ipynb")
    return stem, FILE_NAME, "; ".join(n for n in (note, "no student id in the notebook and no "
                                                  "student folder: the file name is used") if n)


def submitted_at(mtime: float) -> tuple[str, str]:
    """(UTC ISO time, source) of a submission: the file's time as the LMS's download set it.
    Never the ``created`` field a ``.submission.json`` holds: the student wrote that."""
    mtime = min(max(mtime, -62135596800), 253402300799)  # years 1-9999 (tmpfs keeps any time)
    t = _dt.datetime.fromtimestamp(mtime, _dt.timezone.utc)
    return t.isoformat(timespec="seconds"), "file time (as the download set it)"


def near_key(sid: str) -> str:
    """What two ids that a person would read as one share: NFKC, case folded, spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", sid).casefold().split())


def near_duplicates(ids) -> dict[str, list[str]]:
    """Each id that another id nearly equals (:func:`near_key`), with the others."""
    groups: dict[str, set] = {}
    for sid in ids:
        groups.setdefault(near_key(sid), set()).add(sid)
    return {sid: sorted(g - {sid}) for g in groups.values() if len(g) > 1 for sid in g}


def mark_superseded(metas: list[dict], rels: list[str], readable: list[bool]) -> None:
    """Among submissions with the same student and assignment, mark all but the one that counts
    (the latest readable one: LMS time, then Canvas's attachment id, which grows per upload;
    the latest when none is readable): ``meta["superseded_by"]`` (the file that counts) and, on
    the one that counts, ``meta["replaces"]``, and ``meta["replaces_on_metadata"]`` when only its
    notebook metadata (no folder, roster or LMS user) makes it the same student's."""
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(metas):
        if m.get("student") and m.get("assignment"):
            groups.setdefault((m["student"], m["assignment"]), []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda i: (readable[i], metas[i].get("submitted", ""),
                                    metas[i].get("lms_attachment", 0), rels[i]))
        latest = members[-1]
        metas[latest]["replaces"] = [rels[i] for i in members[:-1]]
        lms_id = metas[latest].get("lms_id")
        if metas[latest].get("student_source") == METADATA and not (
                lms_id and all(metas[i].get("lms_id") == lms_id for i in members)):
            metas[latest]["replaces_on_metadata"] = True  # nothing but the notebook says whose
        for i in members[:-1]:
            metas[i]["superseded_by"] = rels[latest]


def _safe(sid: str) -> str:
    text = unicodedata.normalize("NFC", sid)
    safe = "".join(c if (c.isalnum() or c in "-_.@") else "_" for c in text)
    return re.sub(r"_+", "_", safe).strip("._-")[:60]


def path_names(ids) -> dict[str, str]:
    """A folder name per student id: the id itself when it is already a safe name (letters,
    digits, ``-_.@``), else its safe form, ``~`` and a hash of the id (never a safe name, which
    a student could claim as an id); names that would clash on a case-insensitive file system
    all get the hash."""
    names = {sid: sid if sid and _safe(sid) == sid and sid.lower() not in _RESERVED
             else _hashed(sid) for sid in sorted(set(ids))}
    folded = Counter(name.casefold() for name in names.values())
    return {sid: _hashed(sid) if folded[name.casefold()] > 1 else name
            for sid, name in names.items()}


def _hashed(sid: str) -> str:
    return f"{_safe(sid) or 'student'}~{hashlib.sha256(sid.encode('utf-8')).hexdigest()[:16]}"


__all__ = ["FOLDER", "METADATA", "FILE_NAME", "ROSTER", "LMS_ID", "clean_id", "check_id",
           "folder_id", "from_metadata", "identify", "submitted_at", "near_key",
           "near_duplicates", "mark_superseded", "path_names"]
