"""CSV text as the grader writes it (``grades.csv``, ``written.csv``, ``gradebook.csv``).

UTF-8 without a byte-order mark, ``\\n`` line ends, and no cell a spreadsheet would run as a
formula: a cell starting with ``= + - @``, a tab or a carriage return (student ids and answers
are text from students) gets a leading ``'``, and so does one that already starts with ``'``, so
:func:`csv_value` gives back the exact text. Numbers are written as they are (``-1`` stays).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

_ESCAPED = ("=", "+", "-", "@", "\t", "\r", "'")
#: how every file the grader writes shows text that UTF-8 cannot hold (a lone surrogate: a file
#: name that is not UTF-8, a JSON ``\ud800`` from a notebook or a kernel): as the text ``\udcff``
NOT_UNICODE = "backslashreplace"


def csv_text(rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for row in rows:
        w.writerow([_neutral(v) for v in row])
    return buf.getvalue()


def csv_value(text: str) -> str:
    """The text :func:`csv_text` was given for a cell."""
    if len(text) > 1 and text[0] == "'" and text[1] in _ESCAPED:
        return text[1:]
    return text


def read_rows(path, error: type[Exception], prefix: str = "") -> list[list[str]]:
    """The rows of a CSV file a spreadsheet saved: UTF-8 with or without a byte-order mark, and
    ``;`` between cells for a header with more semicolons than commas (a European spreadsheet),
    else ``,``. ``error(prefix + message)`` names what is wrong with the file."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise error(f"{prefix}cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise error(f"{prefix}{path.name} is not UTF-8 text (save it from your spreadsheet as "
                    f"'CSV UTF-8')") from None
    header = text.split("\n", 1)[0]
    delimiter = ";" if header.count(";") > header.count(",") else ","
    try:
        return list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True))
    except csv.Error as exc:
        raise error(f"{prefix}{path.name} is not a readable CSV file ({exc})") from None


def points_text(x) -> str:
    """Points as a CSV shows them: ``3``, ``2.5``, ``0.25`` (never ``3.0``)."""
    return f"{round(float(x), 2):g}"


def _neutral(v) -> str:
    text = "" if v is None else str(v)
    if text[:1] in _ESCAPED and not _is_number(text):
        return "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False
