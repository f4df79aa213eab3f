"""What an LMS download's names say: who uploaded a file, and whether the LMS called it late.

Two layouts, recognised by their documented naming (nothing else in a name is trusted):

* **Moodle**, *Download all submissions*: a folder per student (``Jane Doe_12345_assignsubmission_
  file_/notebook.ipynb``; Moodle 4.1 and later leave out the last ``_``) or, without "download
  submissions in folders", flat files with the same prefix (``Jane Doe_12345_assignsubmission_
  file_notebook.ipynb``). ``12345`` is the participant id (the ``Participant 12345`` of Moodle's
  grading worksheet); blind marking writes ``Participant_12345_...``.
* **Canvas**, *Download Submissions*: flat files ``doejane_22222_3333333_notebook.ipynb``, that is
  ``<sortable name>[_LATE]_<user id>_<attachment id>_<file name>`` (the sortable name in lower
  case, its letters and digits only: ``müllerjosé`` for "Müller, José"); ``_LATE`` is Canvas's
  mark of a submission after the due date, and a file handed in again under the same name gets
  ``-1``, ``-2`` ... before its extension. Anonymous grading gives ``[LATE_]anon_<anonymous id>``
  for the name and user id (``anon_Ab3xY_3333333_notebook.ipynb``).

:func:`parse` gives an :class:`LmsName` for a path relative to the submissions folder, or
``None`` for a name no LMS made (a plain ``alice/`` folder, or a file handed in directly).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath

MOODLE, CANVAS = "Moodle", "Canvas"
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)"
                     r"(?:_(?P<rest>.*))?$", re.S)
_CANVAS = re.compile(r"^(?P<name>[^\W_A-Z]+?)(?P<late>_LATE)?_(?P<id>\d+)_(?P<attachment>\d+)_"
                     r"(?P<rest>.+)$", re.S)
_CANVAS_ANON = re.compile(r"^(?P<name>)(?P<late>LATE_)?(?P<id>anon_[A-Za-z0-9]+)_"
                          r"(?P<attachment>\d+)_(?P<rest>.+)$", re.S)  # anonymous grading
_AGAIN = re.compile(r"-(?P<n>\d{1,3})$")


@dataclass(frozen=True)
class LmsName:
    lms: str  # MOODLE or CANVAS
    lms_id: str  # Moodle's participant id, Canvas's user id
    name: str  # the LMS's name of the student ("Jane Doe", "doejane")
    late: bool = False  # the LMS marked it late (Canvas's _LATE)
    attempt: int = 0  # Canvas: 0 for the first file of a name, n for its "-n" resubmission
    attachment: int = 0  # Canvas: the attachment id (later uploads get larger ones)

    def as_meta(self) -> dict:
        return {"lms": self.lms, "lms_id": self.lms_id, "lms_name": self.name,
                "lms_late": self.late, "lms_attempt": self.attempt,
                "lms_attachment": self.attachment}


def moodle_folder(name: str) -> LmsName | None:
    """The student of a Moodle submission folder name (``Jane Doe_12345_assignsubmission_file_``,
    or ``..._file`` as Moodle 4.1+ names it)."""
    m = _MOODLE.match(name)
    if not m or m["rest"]:
        return None
    return LmsName(MOODLE, m["id"], m["name"])


def parse(rel: str) -> LmsName | None:
    """What the LMS's naming of ``rel`` (``/``-separated, relative to the submissions folder)
    says, or ``None`` when no LMS made the name. The download may sit in a folder of its own (a
    Mac's unzip makes ``submissions/`` of ``submissions.zip``): the first Moodle folder on the
    path names the student, else the file's own name (inside a folder, a Canvas name only with
    ids of Canvas's size, so that ``alice/hw_2_3_final.ipynb`` stays in alice's plain folder)."""
    parts = PurePosixPath(rel).parts
    folder = next((n for p in parts[:-1] if (n := moodle_folder(p)) is not None), None)
    if folder is not None:
        return folder
    name = parts[-1] if parts else ""
    m = _MOODLE.match(name)
    if m and m["rest"]:
        return LmsName(MOODLE, m["id"], m["name"])
    name = unicodedata.normalize("NFC", name)  # (a Mac's unzip decomposes é)
    m = _CANVAS.match(name) or _CANVAS_ANON.match(name)
    if m and (len(parts) == 1 or min(len(m["id"]), len(m["attachment"])) >= 4):
        stem = m["rest"].removesuffix(".submission.json")
        if stem == m["rest"]:
            stem = stem.rsplit(".", 1)[0]
        again = _AGAIN.search(stem)
        return LmsName(CANVAS, m["id"], m["name"] or "anonymous", late=bool(m["late"]),
                       attempt=int(again["n"]) if again else 0, attachment=int(m["attachment"]))
    return None


__all__ = ["MOODLE", "CANVAS", "LmsName", "moodle_folder", "parse"]
