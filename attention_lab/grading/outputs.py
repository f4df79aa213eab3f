"""Every file ``grade`` writes into OUT_DIR, from one :class:`.report.Report`: the grades
(``grades.csv``, ``grades.json``), then the course's ``written.csv``, ``gradebook.csv``, the LMS
import files, ``feedback/`` and ``summary.html``. :func:`write_report` runs the writers into a
staging folder and moves the results into place only when all succeeded (``grade``, ``merge``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .feedback import write_feedback
from .gradebook import write_gradebook, write_lms_gradebooks
from .report import Report, write_grades_csv, write_grades_json
from .summary import write_summary
from .written import write_written_csv


def write_report(report: Report, out: Path, writers=None) -> list[Path]:
    """Run every writer (default: :data:`REPORT_WRITERS`) on ``report`` and move what they wrote
    into ``out`` (created); the paths written, in order. The writers write into a staging folder
    inside ``out``: if one fails, nothing in ``out`` has changed."""
    writers = REPORT_WRITERS if writers is None else writers
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    try:
        made = [write(report, staging) for write in writers]
        for p in made:
            dest = out / p.name
            if p.is_dir() and dest.exists():  # a folder is not replaced: move the old one away
                os.replace(dest, staging / (".old-" + p.name))  # (removed with the staging)
            os.replace(p, dest)
        return [out / p.name for p in made]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


#: What ``grade`` writes into OUT_DIR, in order: functions ``(report, out) -> path written``
#: (a file or a folder directly in ``out``).
REPORT_WRITERS = (write_grades_csv, write_grades_json, write_written_csv, write_gradebook,
                  write_lms_gradebooks, write_feedback, write_summary)
#: what an interrupted grading writes (the grades so far; no gradebook to import by mistake)
PARTIAL_WRITERS = (write_grades_csv, write_grades_json)


__all__ = ["write_report", "REPORT_WRITERS", "PARTIAL_WRITERS"]
