"""The site's build time: ``python -m attention_lab docs OUT_DIR`` from the stored outputs.

One build in a fresh process (as a maintainer runs it: Sphinx, myst-nb and the theme imported,
the student bundle made, the notebooks staged, every page written), wall time; goal (issue 29):
under 60 s on this project's machine. Quick mode builds once too (the build is the measurement).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import Row

GROUP = "docs"
ORDER = 80
GOAL_S = 60.0


def run(quick: bool = False) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-docs-") as tmp:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "attention_lab", "docs", str(Path(tmp) / "site")],
                       check=True, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    return [Row(GROUP, "build the site (python -m attention_lab docs OUT_DIR, fresh process, "
                       "nothing executed)", seconds, "s", goal=f"< {GOAL_S:.0f} s",
                ok=seconds < GOAL_S)]
