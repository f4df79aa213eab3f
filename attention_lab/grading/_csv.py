"""CSV text as the grader writes it (``grades.csv``, ``written.csv``, ``gradebook.csv``).

UTF-8 without a byte-order mark, ``\\n`` line ends, and no cell a spreadsheet would run as a
formula: a cell starting with ``= + - @``, a tab or a carriage return (student ids and answers
are text from students) gets a leading ``'``, and so does one that already starts with ``'``, so
:func:`csv_value` gives back the exact text. Numbers are written as they are (``-1`` stays).
"""

from __future__ import annotations

import csv
import io

_ESCAPED = ("=", "+", "-", "@", "\t", "\r", "'")


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


def sniff_delimiter(first_line: str) -> str:
    """``;`` for a header a European spreadsheet wrote (more semicolons than commas), else
    ``,``."""
    return ";" if first_line.count(";") > first_line.count(",") else ","


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
