"""The instructors' guide's commands, as the tests run them: each ```{code-block} bash``` of
``docs/instructors/routes.md`` with a ``:name:``, run as written by bash from a given folder,
with this environment's Python and tools first on ``PATH``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "instructors" / "routes.md"
_BLOCK = re.compile(r"^```\{code-block\} bash\n((?::\w+:[^\n]*\n)*)(.*?)^```", re.M | re.S)


def blocks() -> dict[str, str]:
    """``{name: commands}`` for the guide's named bash blocks."""
    found = {}
    for options, body in _BLOCK.findall(GUIDE.read_text(encoding="utf-8")):
        name = re.search(r"^:name:\s*(\S+)", options, re.M)
        if name:
            found[name.group(1)] = body
    return found


def env() -> dict[str, str]:
    """This Python's ``bin`` first on ``PATH`` (``python``, ``nbgrader``, ``alembic``)."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


def run(name: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the guide's block ``name`` in ``cwd`` (bash, stopping at the first failing command);
    fails the test with its output when it exits non-zero."""
    commands = blocks()[name]
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=cwd, env=env(),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"{name} failed (exit {proc.returncode}):\n{commands}\n"
                                  f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    return proc
