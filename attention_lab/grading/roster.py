"""``--roster CSV``: the class list, mapping an LMS's ids to the students' logins and back.

A header row (comma- or semicolon-separated, any order and case; the names each column may go
by are in :data:`_ALIASES`): ``lms_id`` (Moodle's participant id or Canvas's user id, what the
download's names carry), ``login`` (the id the grades are filed under, which ``submit
--student`` stores), ``name`` and, optionally, ``due``: this student's own due date (an
extension), ISO 8601 like ``--deadline``. Canvas's gradebook export reads as it is (``Student``,
``ID``, ``SIS Login ID``; its ``Points Possible`` row is skipped; a row without a login is
filed under its LMS id), and so does Moodle's grading worksheet (``Identifier`` is
``Participant 12345``, which counts as 12345; the login is its ``Username`` column where the site
shows one, else ``Email address``).

A submission whose LMS id is in the roster belongs to that row's login, whatever the notebook
says (the LMS knows who uploaded it; a notebook claiming someone else is flagged). The gradebook
files for Canvas and Moodle (:mod:`.gradebook`) take each student's LMS id and name from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import late
from ._csv import read_rows

_ALIASES = {"lms_id": ("lms_id", "lms id", "id", "user id", "participant", "identifier"),
            "login": ("login", "username", "sis login id", "student", "email address", "email"),
            "name": ("name", "full name", "student"),
            "due": ("due", "extension", "deadline")}


class RosterError(ValueError):
    """A problem with the roster; the message names the file and the row."""


@dataclass(frozen=True)
class Student:
    lms_id: str
    login: str
    name: str
    due: object = None  # datetime | None


@dataclass
class Roster:
    students: list

    def __post_init__(self) -> None:
        self.by_lms_id = {s.lms_id: s for s in self.students if s.lms_id}
        self.by_login = {s.login: s for s in self.students}


def read(path) -> Roster:
    path = Path(path)
    records = read_rows(path, RosterError, "--roster: ")
    if not records:
        raise RosterError(f"--roster: {path.name} is empty (expected the header lms_id,login,name)")
    header = [h.strip().lower() for h in records[0]]
    col = {key: next((header.index(n) for n in names if n in header), None)
           for key, names in _ALIASES.items()}
    missing = [k for k in ("lms_id", "login", "name") if col[k] is None]
    if missing:
        raise RosterError(f"--roster: {path.name} has no column {', '.join(missing)} (its header "
                          f"is {', '.join(header)}; expected lms_id,login,name[,due])")
    students, seen = [], {}
    for n, rec in enumerate(records[1:], start=2):
        if not any(c.strip() for c in rec):
            continue
        get = {k: (rec[i].strip() if i is not None and i < len(rec) else "")
               for k, i in col.items()}
        get["lms_id"] = re.sub(r"(?i)^participant\s*", "", get["lms_id"])  # Moodle's worksheet
        if get["name"] == "Points Possible" or not (get["lms_id"] or get["login"] or get["name"]):
            continue  # Canvas's export: its points and posting rows under the header
        get["login"] = get["login"] or get["lms_id"]  # (a Canvas without an SIS: its user id)
        if not get["login"]:
            raise RosterError(f"--roster: {path.name} row {n}: no login")
        for key in ("lms_id", "login"):
            if get[key] and (key, get[key]) in seen:
                raise RosterError(f"--roster: {path.name} row {n}: {key} {get[key]!r} is in row "
                                  f"{seen[(key, get[key])]} too")
            seen[(key, get[key])] = n
        try:
            due = late.parse_time(get["due"]) if get["due"] else None
        except ValueError as exc:
            raise RosterError(f"--roster: {path.name} row {n}: due {get['due']!r}: {exc}") \
                from None
        students.append(Student(get["lms_id"], get["login"], get["name"], due))
    return Roster(students)


__all__ = ["Roster", "RosterError", "Student", "read"]
