"""Print the benchmark table: ``python -m benchmarks.run [GROUP ...] [--quick] [--save]``.

Every ``benchmarks/bench_*.py`` module defines ``GROUP`` (a short name) and
``run(quick) -> list[Row]``; one with ``IN_DEFAULT_RUN = False`` runs only when named.
All figures of one table come from one run on one machine; ratios compare measurements taken side by
side in that run. ``--save`` also writes the run as a dated JSON file into ``benchmarks/results/``
(committed when a maintainer records a run): the site's benchmark tables are generated from those
files (``attention_lab/docs.py``).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))


def modules():
    found = []
    for info in pkgutil.iter_modules([str(HERE)]):
        if info.name.startswith("bench_"):
            found.append(importlib.import_module(f"benchmarks.{info.name}"))
    return sorted(found, key=lambda m: getattr(m, "ORDER", 50))


def fmt(x: float | None, unit: str = "") -> str:
    if x is None:
        return ""
    if unit == "s":
        if x < 1e-3:
            return f"{x * 1e6:.0f} µs"
        if x < 1:
            return f"{x * 1e3:.2f} ms"
        return f"{x:.2f} s"
    if unit == "MiB":
        return f"{x:.1f} MiB"
    return f"{x:.3g} {unit}".strip()


HEADER = ["group", "measured", "value", "baseline (same run)", "ratio", "goal", "met"]
RESULTS = HERE / "results"


def cells(r) -> list[str]:
    """One row of the table, as shown (the printed table and the saved file alike)."""
    base = f"{fmt(r.baseline, r.unit)} {r.baseline_what}".strip() if r.baseline is not None else ""
    ratio = f"{r.ratio:.2f}x" if r.ratio is not None else ""
    met = {True: "yes", False: "NO", None: ""}[r.ok]
    return [r.group, r.what, fmt(r.value, r.unit), base, ratio, r.goal, met]


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def save(rows, command: str, folder: Path = RESULTS, now=None, load=None) -> Path:
    """Write the run into ``folder/<UTC date and time>-<groups>.json``: its date, machine, command,
    the load average at its start and end (``load``, when known), the table's columns and, per
    row, its fields and its cells as shown."""
    import dataclasses
    import datetime
    import json

    now = now or datetime.datetime.now(datetime.timezone.utc)
    groups = "-".join(dict.fromkeys(r.group for r in rows)) or "none"
    path = folder / f"{now:%Y-%m-%dT%H%M%SZ}-{groups}.json"
    record = {"date": f"{now:%Y-%m-%d %H:%M} UTC", "machine": machine(), "command": command,
              "load_average": list(load) if load else None, "columns": HEADER,
              "rows": [{**dataclasses.asdict(r), "shown": cells(r)} for r in rows]}
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def table(rows) -> str:
    lines = [HEADER] + [cells(r) for r in rows]
    header = HEADER
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        out.append("| " + " | ".join(str(c).ljust(w) for c, w in zip(line, widths)) + " |")
        if n == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    mods = modules()
    known = [m.GROUP for m in mods]
    default = [m.GROUP for m in mods if getattr(m, "IN_DEFAULT_RUN", True)]
    parser.add_argument("groups", nargs="*", help=f"only these groups, of {', '.join(known)} "
                        f"(default: every group but {', '.join(set(known) - set(default))})")
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument("--save", action="store_true",
                        help="also write the run into benchmarks/results/ (dated JSON)")
    args = parser.parse_args(argv)
    unknown = set(args.groups) - set(known)
    if unknown:
        parser.error(f"unknown group(s) {sorted(unknown)}; known: {known}")
    import os

    load_before = os.getloadavg()[0]
    rows = []
    for m in mods:
        if m.GROUP not in (args.groups or default):
            continue
        print(f"running {m.GROUP} ...", file=sys.stderr, flush=True)
        rows.extend(m.run(quick=args.quick))
    print(f"machine: {machine()}")
    print(table(rows))
    if args.save:
        command = " ".join(["python -m benchmarks.run", *(argv if argv is not None
                                                          else sys.argv[1:])])
        path = save(rows, command, load=(load_before, os.getloadavg()[0]))
        print(f"saved to {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
