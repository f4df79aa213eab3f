"""Command-line helpers shared by the commands (``grade``, ``submit``, ``demo``).

Argument types that say what they expected, the time-limit flags the grading commands share, the
commands' convention for bad input (one line ``COMMAND: error: ...`` on stderr and exit code 2,
returned, not raised, so that ``main(argv)`` can be called from tests and from other code), and
:func:`shown`: text a student controls (a file name, a message quoting a notebook) as it may
reach a terminal. Standard library only, so every command's ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import math
import re
import sys

#: control characters (C0, DEL, C1) and the bidirectional overrides and isolates: what can move
#: the cursor, clear the screen, retitle the window or reorder the text a terminal shows
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(text) -> str:
    """``text`` with every character a terminal would act on escaped (``\x1b``, ``\n``,
    ``\u202e``): for everything a student controls that a command prints."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def whole_number(minimum: int):
    """argparse type: a whole number >= ``minimum``."""

    def parse_whole(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number >= {minimum}, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {v}")
        return v

    return parse_whole


#: argparse type: a whole number >= 1
positive_int = whole_number(1)
#: argparse type: a whole number >= 0
non_negative_int = whole_number(0)


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}") \
            from None
    if not v > 0 or not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text}")
    return v


def add_time_limits(parser: argparse.ArgumentParser) -> None:
    """``--cell-timeout S`` and ``--timeout S``: the limits every notebook runs under."""
    parser.add_argument("--cell-timeout", type=positive_seconds, default=60.0, metavar="S",
                        help="seconds per notebook cell (default 60)")
    parser.add_argument("--timeout", type=positive_seconds, default=600.0, metavar="S",
                        help="seconds per notebook, all cells and checks (default 600)")


def parse(parser: argparse.ArgumentParser, argv) -> tuple[argparse.Namespace | None, int]:
    """``(args, 0)``, or ``(None, exit code)`` once argparse has printed help or the problem."""
    try:
        return parser.parse_args(argv), 0
    except SystemExit as exc:
        return None, int(exc.code or 0)


def fail(command: str, message: str) -> int:
    """Print ``COMMAND: error: MESSAGE`` on stderr (escaped: :func:`shown`) and return the exit
    code for bad input (2)."""
    print(f"{command}: error: {shown(message)}", file=sys.stderr)
    return 2


__all__ = ["whole_number", "positive_int", "non_negative_int", "positive_seconds",
           "add_time_limits", "parse", "fail", "shown"]
