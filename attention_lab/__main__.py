"""``python -m attention_lab COMMAND ...``: the lab's command line.

Each command lives in its own module and exposes ``main(argv) -> int``; this file only dispatches,
so ``python -m attention_lab --help`` stays fast.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from pathlib import Path

COMMANDS = {
    "submit": ("attention_lab.grading.submit", "run an exercise notebook and write a file to hand in"),
    "grade": ("attention_lab.grading.batch", "grade a folder of submissions: grades, gradebook, "
                                             "feedback, written answers to score"),
    "merge": ("attention_lab.grading.merge", "fold the scores of a filled-in written.csv into "
                                             "a grading"),
    "gradebook": ("attention_lab.grading.gradebook", "combine several gradings (the weeks of a "
                                                     "term) into one gradebook"),
    "release": ("attention_lab.grading.release", "write the student bundle of a course (no "
                                                 "solutions)"),
    "train": ("attention_lab.toy.train", "train the toy reversal model (seeded, CPU)"),
    "demo": ("attention_lab.demo.launch", "launch the lecture demo (Voila) on 127.0.0.1"),
    "docs": ("attention_lab.docs", "build the lab's site (HTML) from a checkout, nothing executed"),
    "bench": ("attention_lab._bench", "print the benchmark table (from a checkout)"),
}


def present(module: str) -> bool:
    """Whether this copy of the package has ``module`` (the student bundle leaves some out)."""
    package, _, rest = module.partition(".")
    return package != __package__ or Path(__file__).parent.joinpath(
        *rest.split(".")).with_suffix(".py").is_file()


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m attention_lab COMMAND [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (module, help_) in COMMANDS.items()
              if present(module)]
    lines += ["", "python -m attention_lab COMMAND --help shows a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        near = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        print(f"unknown command {name!r}{hint}\n\n{usage()}", file=sys.stderr)
        return 2
    if not present(COMMANDS[name][0]):
        print(f"the command {name!r} is not in this copy of the lab (a student bundle); it runs "
              f"from a checkout of the lab's repository", file=sys.stderr)
        return 2
    try:  # a dependency a command imports when it runs: the package without its extras
        return int(importlib.import_module(COMMANDS[name][0]).main(rest) or 0)
    except ModuleNotFoundError as exc:
        print(f"the command {name!r} is not available: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C in a command that does not handle it itself
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the output piped into a reader that stopped early (| head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own recipe
        return 1


if __name__ == "__main__":
    sys.exit(main())
