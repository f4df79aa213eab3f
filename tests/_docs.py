"""The site's pages (``docs/``) as the tests read them: a page's text, or one of its sections.

Tests that hold a page to the code (the exercise table, the misconception table, the course
commands, the threat model's test names) read it through here, so a moved page fails in one
place with a clear message.
"""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def page(name: str) -> str:
    """The text of ``docs/<name>`` (e.g. ``"students/exercises.md"``)."""
    path = DOCS / name
    assert path.is_file(), f"the site has no page {name} (docs/{name})"
    return path.read_text(encoding="utf-8")


def section(name: str, heading: str) -> str:
    """The text under the heading ``heading`` of page ``name``, up to the next heading of the
    same or a higher level (headings inside code blocks are not headings)."""
    lines, fence, found, level = page(name).splitlines(), False, [], None
    for line in lines:
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"(#+) (.*)", line)
        if level is None:
            if m and m.group(2).strip() == heading:
                level = len(m.group(1))
            continue
        if m and len(m.group(1)) <= level:
            break
        found.append(line)
    assert level is not None, f"docs/{name} has no heading {heading!r}"
    return "\n".join(found)
