"""``attention_lab`` as a graded kernel sees it: the chapter's data and check/hint/status only.

Not imported by the grader: :func:`.namespaces.build_view` copies this file as
``attention_lab/__init__.py`` into the folder the kernel's sandbox mounts over the package. So an
answer cannot delegate to the package's implementations: they are not there, and using one raises
:class:`ReferenceNotAvailable`, reported as not earning its mark. ``check``, ``hint`` and
``status`` only say that the grader checks every answer itself.
"""

import importlib.abc
import sys
from pathlib import Path

from .examples import *  # noqa: F401,F403 - the chapter's data, as the full package has it

__version__ = "grading"
#: the modules of this view: the chapter's data, what it imports, and exercises (check, ...)
ALLOWED = {p.stem for p in Path(__file__).parent.glob("*.py")} - {"__init__"} | {"exercises"}


class ReferenceNotAvailable(ImportError):
    """An answer asked for a part of the package that answers are checked against."""


def _refuse(name: str) -> ReferenceNotAvailable:
    return ReferenceNotAvailable(
        f"attention_lab.{name} is not available to graded answers: the package's "
        f"implementations are what answers are checked against, so an answer that calls them "
        f"earns no mark; compute the result in your own code (the running example and "
        f"check/hint/status are available)")


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(name)
    raise _refuse(name)


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        head, _, rest = fullname.partition(".")
        if head == __name__ and rest and rest not in ALLOWED:
            raise _refuse(rest)
        return None


sys.meta_path.insert(0, _Refuse())


def check(*args, **kwargs) -> None:
    """In the grader, checks are the grader's: this only says so."""
    print("(graded: the grader checks every answer itself)")


hint = status = check
