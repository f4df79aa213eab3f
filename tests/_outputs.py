"""Stored notebook outputs that travel: the scanner for round-off and timings, and the comparison
of a run's outputs with the stored ones after nbval's sanitisers (``nbval-sanitize.cfg``).

nbval compares each cell's outputs in this process's environment; the browser run-all
(tests/browser/test_browser_lab.py) runs every notebook again with torch's generic kernels on one
thread and compares with :func:`differences`, so an output that depends on the CPU fails too.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Round-off: a number printed below what float32/float64 computations guarantee across CPUs.
ROUND_OFF = re.compile(r"\d(?:\.\d+)?e-(?:0[5-9]|[1-9]\d)"   # exponent <= -5: 2.4e-07, 1e-12
                       r"|\d\.\d{7,}")                        # 7+ decimals: 0.19995117
# A timing left in a stored output after the nbval sanitiser ran.
TIMING = re.compile(r"\d(?:\.\d+)? ?(?:ms|µs|us|ns)\b|\d(?:\.\d+)? ?s (?:per|elapsed)\b")
#: what nbval does not compare (nbval's own skip list, without --nbdime)
UNCOMPARED = {"image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json"}
#: cells nbval does not compare
UNCOMPARED_TAGS = {"nbval-ignore-output", "nbval-skip"}


def sanitisers() -> list[tuple[re.Pattern, str]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "nbval-sanitize.cfg", encoding="utf-8")
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


def sanitise(text: str, rules) -> str:
    for regex, replace in rules:
        text = regex.sub(replace, text)
    return text


def problems(text: str, rules=()) -> list[str]:
    """The round-off-looking numbers and unsanitised timings in one output's text."""
    found = []
    for line in sanitise(text, rules).splitlines():
        for kind, pattern in (("round-off", ROUND_OFF), ("timing", TIMING)):
            if pattern.search(line):
                found.append(f"{kind} {pattern.search(line).group()!r} in {line.strip()!r}")
    return found


def _join(text) -> str:
    return "".join(text) if isinstance(text, list) else (text or "")


def texts(output: dict) -> list[str]:
    """The text of one output: a stream's, else its text/plain, text/markdown and text/html."""
    if "text" in output:
        return [_join(output["text"])]
    data = output.get("data", {})
    return [_join(data[k]) for k in ("text/plain", "text/markdown", "text/html") if k in data]


def compared(outputs: list[dict], rules) -> list[tuple[str, str]]:
    """What nbval compares in one cell's outputs, sanitised: consecutive streams of one name
    merged (JupyterLab and nbclient split them differently), each data item but images and
    widget views, an error's name and value."""
    found: list[tuple[str, str]] = []
    for out in outputs:
        if out.get("output_type") == "stream":
            key = f"stream:{out.get('name')}"
            if found and found[-1][0] == key:
                found[-1] = (key, found[-1][1] + _join(out["text"]))
            else:
                found.append((key, _join(out["text"])))
        elif out.get("output_type") == "error":
            found.append(("error", f"{out.get('ename')}: {out.get('evalue')}"))
        else:
            found += [(k, _join(v)) for k, v in sorted(out.get("data", {}).items())
                      if k not in UNCOMPARED]
    return [(k, sanitise(v, rules)) for k, v in found]


def differences(stored: dict, ran: dict, rules=None) -> list[str]:
    """Where the outputs of ``ran`` (a notebook's JSON after a run) differ from ``stored``'s, cell
    by cell, in what nbval compares; [] when they agree."""
    rules = sanitisers() if rules is None else rules
    code = [[c for c in nb["cells"] if c["cell_type"] == "code"] for nb in (stored, ran)]
    if len(code[0]) != len(code[1]):
        return [f"{len(code[1])} code cells ran, {len(code[0])} stored"]
    found = []
    for i, (want, got) in enumerate(zip(*code)):
        if UNCOMPARED_TAGS & set(want.get("metadata", {}).get("tags", [])):
            continue
        w, g = compared(want.get("outputs", []), rules), compared(got.get("outputs", []), rules)
        if w != g:
            found.append(f"code cell {i}: stored {w!r}\n  ran {g!r}")
    return found
