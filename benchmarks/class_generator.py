"""A generated class to grade: ``submissions/<student>/<file>`` across the four assignments.

``make_class(folder, n=300)`` writes ``n`` submissions (75 students x 4 assignments for 300), each
the student notebook of its assignment with its answer cells filled in one of these ways, drawn
with a fixed seed (the same class every time):

* **right** (about 40 %): every answer cell is the instructor solution's;
* **wrong** (about 25 %): about half the answers right, the others return ``None`` (a forgotten
  ``return`` value: every check of that exercise fails);
* **partly done** (about 30 %): the first answers right, the rest still the stubs;
* **hostile** (12 of 300; one of each in any class of 12 or more): right answers plus a cell
  with an endless loop, a kernel crash (``os._exit``), a memory bomb, an output flood (stdout
  and forged IOPub messages), a fork bomb, or reads of other folders and a network attempt.

Half the files are ``.submission.json`` (as ``submit`` writes them), half plain ``.ipynb``. The
student notebooks and their solutions have the same cells (but the solutions' model answers to the
written exercises), so an answer cell is a code cell where the two differ. ``python -m benchmarks.class_generator OUT_DIR [--n 300]`` writes a class to grade by
hand.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "notebooks" / "exercises"
STUB = "raise NotImplementedError  # replace this line with your code"
HOSTILE = {
    "endless loop": "while True:\n    pass",
    "crash": "import os\nos._exit(3)",
    "memory bomb": "blocks = []\nwhile True:\n    blocks.append(bytearray(64 * 2**20))",
    "output flood": ('print("x" * 2**26)\nk = get_ipython().kernel\nfor _ in range(50):\n'
                     '    k.session.send(k.iopub_socket, "status", '
                     '{"execution_state": "y" * 2**19}, ident=b"kernel.x.status")'),
    "fork bomb": ("import subprocess\nps = []\ntry:\n    while len(ps) < 300:\n"
                  "        ps.append(subprocess.Popen(['sleep', '60']))\nexcept OSError:\n"
                  "    pass\nfor p in ps[3:]:\n    p.kill()\n    p.wait()"),
    "snooping": ("import glob, socket\nfound = {}\n"
                 "for p in glob.glob('/tmp/*') + ['/etc/passwd', '/proc/1/environ']:\n"
                 "    try:\n        found[p] = open(p).read(100)\n    except OSError:\n"
                 "        pass\ntry:\n    socket.create_connection(('127.0.0.1', 22), timeout=1)\n"
                 "except OSError:\n    pass"),
}
KINDS = ("right", "wrong", "partly done")
WEIGHTS = (0.42, 0.26, 0.32)


def _pair(stem: str) -> tuple[dict, list[int]]:
    """The student notebook (as JSON) and the indices of its answer cells, with the solution's
    sources for them."""
    student = json.loads((EXERCISES / f"{stem}.ipynb").read_text(encoding="utf-8"))
    solution = json.loads((EXERCISES / "solutions" / f"{stem}_solutions.ipynb").read_text(
        encoding="utf-8"))
    # a model answer to a written exercise is a markdown cell of the solutions alone
    solution["cells"] = [c for c in solution["cells"] if not (
        c["cell_type"] == "markdown" and "".join(c["source"]).startswith("<!-- BEGIN SOLUTION"))]
    assert len(solution["cells"]) == len(student["cells"]), f"{stem}: the cells do not pair"
    answers = [i for i, (a, b) in enumerate(zip(student["cells"], solution["cells"]))
               if a["cell_type"] == "code" and "".join(a["source"]) != "".join(b["source"])]
    for i in answers:
        student["cells"][i]["solution"] = "".join(solution["cells"][i]["source"])
    return student, answers


def _fill(template: dict, answers: list[int], kind: str, rng: random.Random) -> dict:
    nb = json.loads(json.dumps(template))
    right = len(answers)
    if kind == "partly done":
        right = rng.randrange(1, max(2, len(answers)))
    chosen = {i for n, i in enumerate(answers) if n < right}
    if kind == "wrong":
        chosen = set(rng.sample(answers, max(1, len(answers) // 2)))
    for i, cell in enumerate(nb["cells"]):
        solution = cell.pop("solution", None)
        if solution is None:
            continue
        if i in chosen or kind not in KINDS:
            cell["source"] = solution
        elif kind == "wrong":
            cell["source"] = "".join(cell["source"]).replace(STUB, "return None")
        cell["outputs"], cell["execution_count"] = [], None
    if kind in HOSTILE:
        at = answers[len(answers) // 2] + 1
        nb["cells"].insert(at, {"cell_type": "code", "execution_count": None, "id": "hostile",
                                "metadata": {}, "outputs": [], "source": HOSTILE[kind]})
    return nb


def make_class(folder: Path, n: int = 300, seed: int = 2024) -> dict[str, str]:
    """Write ``n`` submissions under ``folder``; the kind of each (by path under ``folder``)."""
    from attention_lab.exercises.registry import NOTEBOOKS
    from attention_lab.grading.submit import build_submission

    rng = random.Random(seed)
    stems = [NOTEBOOKS[level] for level in sorted(NOTEBOOKS)]
    pairs = {stem: _pair(stem) for stem in stems}
    hostile = [k for k in HOSTILE for _ in range(max(1, n // 150))] if n >= 12 else []
    at = set(rng.sample(range(n), len(hostile)))
    hostile_at = dict(zip(sorted(at), hostile))
    kinds: dict[str, str] = {}
    for j in range(n):
        student, stem = f"student{j // 4 + 1:03d}", stems[j % 4]
        kind = hostile_at.get(j) or rng.choices(KINDS, WEIGHTS)[0]
        template, answers = pairs[stem]
        nb = _fill(template, answers, kind, rng)
        text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        home = folder / student
        home.mkdir(parents=True, exist_ok=True)
        if j % 2:
            sub = build_submission(f"{stem}.ipynb", text, SimpleNamespace(exercises={}))
            name = f"{stem}.submission.json"
            (home / name).write_text(json.dumps(sub, indent=1) + "\n", encoding="utf-8")
        else:
            name = f"{stem}.ipynb"
            (home / name).write_text(text, encoding="utf-8")
        kinds[f"{student}/{name}"] = kind
    return kinds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.class_generator",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="a new folder for the class")
    parser.add_argument("--n", type=int, default=300, help="submissions (default 300)")
    args = parser.parse_args(argv)
    kinds = make_class(args.out, args.n)
    counts = {k: list(kinds.values()).count(k) for k in sorted(set(kinds.values()))}
    print(f"wrote {args.n} submissions to {args.out}: "
          + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
