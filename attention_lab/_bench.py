"""``python -m attention_lab bench``: the benchmark table, from a checkout of the repository.

The benchmarks (``benchmarks/`` at the top of the repository) are not part of the installed
package: they time the explorers in a browser, grade notebooks and read the notebooks folder. This
command finds the checkout the package was installed from (an editable install, or running from the
repository's folder) and runs ``benchmarks.run`` there; from a plain install it says so and exits
with 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    if not (CHECKOUT / "benchmarks" / "run.py").is_file():
        print("python -m attention_lab bench: error: the benchmarks are not installed with the "
              "package; they need a checkout of the attention-lab repository. Clone it, install "
              "it with `pip install -e .` (or the README's install command) and run "
              "`python -m attention_lab bench` (or `python -m benchmarks.run`) there.",
              file=sys.stderr)
        return 2
    if str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))
    from benchmarks import run

    return int(run.main(argv) or 0)


if __name__ == "__main__":
    sys.exit(main())
