"""The demo's kernel: ipykernel without its debugger and without the history of inputs.

A Voila page shows outputs only, so no viewer can reach a debugger or the input history. Without
them a kernel starts with less CPU and memory (measured: 0.36-0.38 s instead of 0.45-0.70 s of
CPU, 42 MiB instead of 51 MiB RSS, a thread fewer): debugpy and pydevd are not imported, and no
SQLite thread writes each execution to the one history file that every kernel of the machine
shares. :class:`attention_lab.demo.server.DemoKernelSpecManager` starts the demo's kernels with
``python -m attention_lab.demo.kernel -f CONNECTION_FILE``; otherwise it is ipykernel's launcher.
"""

from __future__ import annotations

import sys

#: appended to the kernel's command line
NO_HISTORY = "--HistoryManager.enabled=False"


def main(argv: list[str] | None = None) -> None:
    # ipykernel imports debugpy to offer a debugger; a None entry makes that import fail, and
    # ipykernel then runs without one, as on a Python without debugpy
    sys.modules["debugpy"] = None
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(argv=[*(sys.argv[1:] if argv is None else argv), NO_HISTORY])


if __name__ == "__main__":
    main()
