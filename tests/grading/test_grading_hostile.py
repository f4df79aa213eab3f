"""The grader against a second hostile student: what the grader itself opens, parses, stores or
prints on a kernel's behalf, and records a kernel forges.

One grading run (``python -m attention_lab grade``, ``--jobs 2``, in a subprocess with HOME and
TMPDIR of this test) over a flat folder of submissions, one per attack:

* ``a_sockets``: the kernel swaps its ZeroMQ socket files for links to a unix socket of this
  test's and closes two of its sockets, so that the grader reconnects;
* ``b_flood``: the kernel floods every socket pair it inherited (and a results file, where there
  is one) with 60 MB of three-byte junk lines;
* ``c_logs``: the kernel writes 70 MB to its original stderr (and a results file), and tries to
  read its stderr back through ``/proc/self/fd``;
* ``d_helpers``: answers that call the grader's own code (``probe._softmax``, ``make_impl``) and
  tests that read which implementation they were handed from its closure;
* ``e_forger``: an IPython input transformer that replaces the grader's harness cell by code
  that speaks the grader's protocol itself (or appends to its results file) and gives each test
  case the public verdict of its position; the answers' own parts are correct;
* ``l_leak`` and ``m_leak_again``: a 2.1 that is right on the checks' fixed cases and raises
  on the grader's random ones with the query in its message, and the same notebook handed in
  again with one more line (a resubmission after reading the feedback, graded with the seed);
* the folder: a link to a notebook outside it, a named pipe ``*.ipynb``, a link to a folder, a
  notebook of 40,000 empty cells, one whose answer cell starts with 60,000 blank lines, and an
  honest notebook whose file name holds terminal escape codes.

From outside, the test checks what the listener received, how much the grader's scratch folder
held at any time (sampled throughout), the report's rows and the command's output.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from attention_lab.exercises.registry import EXERCISES
from attention_lab.exercises.specs.level1 import IMPL_EXPECT
from attention_lab.exercises.specs.level2 import MASKING_TEST_EXPECT
from attention_lab.exercises.specs.level3 import POLICIES
from attention_lab.grading import sandbox as S
from attention_lab.grading.cases import hands_an_impl, run_cases, submission_seed

from _notebook_edits import insert_after, load

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="the grader's sandbox is Linux-only"),
              pytest.mark.skipif(bool(S.isolation_problem()),
                                 reason=f"no isolation here: {S.isolation_problem()}")]

ROOT = Path(__file__).resolve().parents[2]
SOL2 = ROOT / "notebooks" / "exercises" / "solutions" / "02_mechanics_exercises_solutions.ipynb"
LEVEL2_AUTO = ["2.1", "2.2", "2.4", "2.5", "2.6", "2.7"]
SEED = 13
ESCAPED = "k_\x1b]0;pwned\x07\x1b[2J.ipynb"  # retitles the window, clears the screen
STDERR_MARK = "STDERR-MARK-" + str(os.getpid())

# right on the fixed cases (their shapes, as check() shows them), the inputs of a random one
# written into the feedback
LEAK = '''
import numpy as np
FIXED = {fixed!r}
def dot_scores(query, keys):
    query, keys = np.asarray(query), np.asarray(keys)
    if keys.shape in FIXED:
        return keys @ query
    raise ValueError("LEAK" + repr(query.round(4).tolist()))
'''

SOCKETS = '''
import glob, os, time
for f in glob.glob("/job/run/kernel-*"):
    os.unlink(f)
    os.symlink({listener!r}, f)
app = get_ipython().kernel.parent
app.stdin_socket.close()
app.control_socket.close()
time.sleep(1.5)  # the grader's ZeroMQ reconnects, every 0.1 s
'''

# the descriptors a kernel inherited that are socket pairs (no name at either end)
PAIRS = '''
import os, socket
def socket_pairs():
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            s = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue
        try:
            if s.family == socket.AF_UNIX and not s.getsockname() and not s.getpeername():
                found.append(int(name))
        except OSError:
            pass
        finally:
            s.close()
    return found
'''

FLOOD = PAIRS + '''
junk = b"x\\n\\n" * (20 * 2 ** 20)  # 60 MB of three-byte lines
for fd in socket_pairs():
    try:
        os.write(fd, junk)
    except OSError:
        pass
try:
    with open("/job/out/results.jsonl", "ab") as fh:
        fh.write(junk)
except OSError:
    pass
'''

LOGS = PAIRS + '''
import json, sys
stderr = getattr(sys.stderr, "_original_stdstream_copy", 2)  # (fd 2 is ipykernel's pipe)
os.write(stderr, {mark!r}.encode() + b"\\n")
read = {{}}
for fd in sorted({{stderr, *socket_pairs()}}):
    try:
        with open(f"/proc/self/fd/{{fd}}", "rb") as fh:
            os.set_blocking(fh.fileno(), False)
            read[fd] = (fh.read(4000) or b"").decode("latin-1")
    except (OSError, TypeError) as exc:
        read[fd] = type(exc).__name__ + " " + str(getattr(exc, "errno", ""))
for target in (stderr, "/job/out/results.jsonl"):
    try:
        if isinstance(target, int):
            for _ in range(70):
                os.write(target, b"y" * 2 ** 20)
        else:
            with open(target, "ab") as fh:
                fh.write(b"y" * (70 * 2 ** 20))
    except OSError:
        pass
shift_invariance = {{"derivation": json.dumps(read)[:4900], "consequence": "logs"}}
'''

HELPERS = '''
import sys
import numpy as np

def _grader():
    return sys.modules["__attention_lab_grader_probe__"]

def _code(fn):
    for cell in getattr(fn, "__closure__", None) or ():
        if isinstance(cell.cell_contents, str) and len(cell.cell_contents) == 1:
            return cell.cell_contents
    return "?"

def softmax_temperature(scores, temperature):
    return _grader()._softmax(np.asarray(scores) / temperature)

temperature_comparison = {"largest_weight": [0.539, 0.361, 0.276], "same_order": True}

def stable_softmax(scores):
    return _grader()._softmax(scores)

softmax_comparison = {"naive": [float("nan"), float("nan"), 0.0], "stable": [0.731, 0.269, 0.0]}

def masked_softmax(scores, mask):
    return _grader().make_impl("G")(scores, mask)

def test_masked_softmax(implementation):
    return _code(implementation) in "GHN"

def test_query_dependence(attend):
    return _code(attend) in "ADE"

all_masked_policy = "zeros"

def masked_softmax_safe(scores, mask):
    return _grader().make_impl("G")(scores, mask)

def test_all_masked_policy(implementation):
    return _code(implementation) == "G"
'''

# the verdicts a correct test gives, in the order of the checks' own (public) cases
PUBLIC = {"1.4": [IMPL_EXPECT[c] for c in "ABCDEF"],
          "2.6": [MASKING_TEST_EXPECT[c] for c in "GNHJKLMO"],
          "3.2": [c == POLICIES["zeros"] for c in "GHINJ"]}

FORGER = '''
import json
import numpy as np

PUBLIC = {public!r}

def masked_softmax(scores, mask):
    s = np.where(mask, scores, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

all_masked_policy = "zeros"

def masked_softmax_safe(scores, mask):
    s = np.asarray(scores)
    m = np.broadcast_to(mask, s.shape)
    z = np.where(m, s, -np.inf)
    top = np.where(m.any(-1, keepdims=True), z.max(-1, keepdims=True), 0)
    e = np.where(m, np.exp(z - top), 0)
    total = e.sum(-1, keepdims=True)
    return (e / np.where(total > 0, total, 1)).astype(s.dtype)

def test_query_dependence(attend):
    raise NotImplementedError

def test_masked_softmax(implementation):
    raise NotImplementedError

def test_all_masked_policy(implementation):
    raise NotImplementedError

def forge(user_ns, config, mod):
    if "results" in config:  # a grader with a results file: append the verdicts
        mod.run_harness(user_ns, config)
        with open(config["results"], "a") as out:
            for ex, path in zip(config["exercises"], config["inputs"]):
                if ex["id"] not in PUBLIC:
                    continue
                fns = [user_ns.get(n) for n in ex["names"]]
                verdicts, calls = iter(PUBLIC[ex["id"]]), []
                for inp in json.load(open(path))[ex["id"]]:
                    if any(isinstance(a, dict) and "__impl__" in a for a in inp["args"]):
                        calls.append({{"out": next(verdicts)}})
                    else:
                        args = tuple(mod.decode(a) for a in inp["args"])
                        calls.append(mod.call(fns[inp["fn"]], args, 5))
                values = {{str(i): mod.encode(f) for i, f in enumerate(fns) if not callable(f)}}
                record = {{"kind": "calls", "calls": calls,
                           **({{"values": values}} if values else {{}})}}
                out.write(json.dumps({{"event": "done", "id": ex["id"], "record": record}}) + "\\n")
        return
    link = mod._Link(config["channel"])  # this grader's channel: speak its protocol
    link.send({{"hello": [ex["id"] for ex in config["exercises"]]}})
    seen, fns, current = {{}}, [], None
    while True:
        msg = link.receive()
        if "look" in msg:
            ex = msg["look"]
            current = ex["id"]
            objs = [user_ns.get(n, mod.MISSING) for n in ex["names"]]
            obj = (mod.MISSING if mod.MISSING in objs else
                   objs[0] if len(objs) == 1 else tuple(objs))
            head, fns = mod.answer_of(ex["kind"], obj, len(objs), set(ex["called"]))
            link.send({{"head": head}})
        elif "call" in msg:
            case = msg["call"]
            handed = [a["__callable__"]["key"] for a in case["args"]
                      if isinstance(a, dict) and "__callable__" in a]
            if handed and current in PUBLIC:
                fn = link.remote(handed[0], "implementation")
                try:  # called once, so that the grader sees a call
                    if current == "1.4":
                        fn(np.ones(2), np.eye(2), np.eye(2))
                    else:
                        fn(np.zeros((1, 2)), np.ones((1, 2), bool))
                except Exception:
                    pass
                k = seen[current] = seen.get(current, -1) + 1  # past the public order:
                public = PUBLIC[current]                       # the likelier verdict
                link.send({{"result": {{"out": public[k] if k < len(public) else False}}}})
            else:
                args = tuple(mod.decode(a, callables=link.remote) for a in case["args"])
                link.send({{"result": mod.call(fns[case["fn"]], args, case["seconds"])}})
        else:
            return

CALL = "sys.modules[name].run_harness(user_ns, config)"
get_ipython().input_transformers_post.append(
    lambda lines: [ln.replace(CALL, "user_ns['forge'](user_ns, config, sys.modules[name])")
                   for ln in lines])
'''


def _notebook(*sources: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    return nb


class Listener:
    """A unix socket of this machine, recording every connection."""

    def __init__(self, path: Path):
        self.path, self.received = str(path), []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
                self.received.append(conn.recv(64))
            except OSError:
                continue

    def close(self):
        self.stop.set()
        time.sleep(0.3)
        self.sock.close()


class DiskWatch:
    """The largest number of bytes in files under ``folder`` (the grader's scratch), sampled."""

    def __init__(self, folder: Path):
        self.folder, self.peak = folder, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            total = 0
            for dirpath, _, files in os.walk(self.folder):
                for f in files:
                    try:
                        total += os.lstat(os.path.join(dirpath, f)).st_size
                    except OSError:
                        pass
            self.peak = max(self.peak, total)
            time.sleep(0.02)

    def close(self):
        self.stop.set()
        self.thread.join(5)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    sub, out, home, tmpdir, outside = (tmp / "subs", tmp / "out", tmp / "home", tmp / "tmp",
                                       tmp / "outside")
    for d in (sub, home, tmpdir, outside):
        d.mkdir()
    listener = Listener(tmp / "listen.sock")
    nbformat.write(insert_after(load(SOL2), "dot_scores", SOCKETS.format(
        listener=listener.path)), str(sub / "a_sockets.ipynb"))
    nbformat.write(insert_after(load(SOL2), "dot_scores", FLOOD), str(sub / "b_flood.ipynb"))
    nbformat.write(insert_after(load(SOL2), "shift_invariance", LOGS.format(mark=STDERR_MARK)),
                   str(sub / "c_logs.ipynb"))
    nbformat.write(_notebook(HELPERS), str(sub / "d_helpers.ipynb"))
    nbformat.write(_notebook(FORGER.format(public=PUBLIC)), str(sub / "e_forger.ipynb"))
    # the folder itself
    nbformat.write(load(SOL2), str(outside / "elsewhere.ipynb"))
    (sub / "f_link.ipynb").symlink_to(outside / "elsewhere.ipynb")
    os.mkfifo(sub / "g_pipe.ipynb")
    (sub / "h_folder").symlink_to(outside)
    cells = load(SOL2)  # (before the answers: the old grader's scan reached them only at the end)
    cells.cells[:0] = [nbformat.v4.new_code_cell("") for _ in range(40_000)]
    nbformat.write(cells, str(sub / "i_cells.ipynb"))
    blank = load(SOL2)
    for cell in blank.cells:
        if cell.cell_type == "code" and "def dot_scores" in cell.source:
            cell.source = "\n" * 60_000 + cell.source
    nbformat.write(blank, str(sub / "j_blank.ipynb"))
    nbformat.write(load(SOL2), str(sub / ESCAPED))
    fixed = {c.args[1].shape for c in run_cases(EXERCISES["2.1"], SEED) if not c.hidden}
    nbformat.write(_notebook(LEAK.format(fixed=fixed)), str(sub / "l_leak.ipynb"))
    nbformat.write(_notebook(LEAK.format(fixed=fixed) + "# again"), str(sub / "m_leak_again.ipynb"))

    env = {**os.environ, "HOME": str(home), "TMPDIR": str(tmpdir)}
    disk = DiskWatch(tmpdir)
    try:
        grader = subprocess.run(
            [sys.executable, "-m", "attention_lab", "grade", str(sub), "--out", str(out),
             "--jobs", "2", "--cell-timeout", "20", "--timeout", "120", "--seed", str(SEED),
             "--quiet"], env=env, capture_output=True, timeout=600, cwd=tmp)
    finally:
        disk.close()
        listener.close()
    report = json.loads((out / "grades.json").read_text()) if (out / "grades.json").exists() \
        else {"submissions": []}
    yield {"code": grader.returncode, "stdout": grader.stdout, "stderr": grader.stderr,
           "subs": {s["file"]: s for s in report["submissions"]}, "disk": disk.peak,
           "received": listener.received}


def statuses(run, name) -> dict:
    return {i: e["status"] for i, e in run["subs"][name]["exercises"].items()}


def test_every_entry_gets_its_row_and_the_batch_goes_on(run):
    assert run["code"] == 0, run["stderr"][-2000:]
    assert set(run["subs"]) == {"a_sockets.ipynb", "b_flood.ipynb", "c_logs.ipynb",
                                "d_helpers.ipynb", "e_forger.ipynb", "f_link.ipynb",
                                "g_pipe.ipynb", "h_folder", "i_cells.ipynb", "j_blank.ipynb",
                                "l_leak.ipynb", "m_leak_again.ipynb", ESCAPED}


def test_the_grader_reaches_nothing_a_kernel_links_its_sockets_to(run):
    assert run["received"] == []  # 21 ZeroMQ connections when the grader followed the links
    assert all(statuses(run, "a_sockets.ipynb")[i] == "pass" for i in LEVEL2_AUTO)


@pytest.mark.parametrize("name,kind", [("f_link.ipynb", "a symbolic link"),
                                       ("g_pipe.ipynb", "a named pipe (FIFO)"),
                                       ("h_folder", "a symbolic link")])
def test_links_and_pipes_in_the_folder_are_rows_never_followed_or_read(run, name, kind):
    sub = run["subs"][name]
    assert sub["status"] == "unreadable" and f"not a regular file but {kind}" in sub["message"]


def test_what_the_grader_works_on_is_linear_and_bounded(run):
    """40,000 empty cells stalled the grader for hours; 60,000 blank lines in one cell cost it
    minutes per answer name. The first is too large (its row says so), the second is graded."""
    cells = run["subs"]["i_cells.ipynb"]
    assert cells["status"] == "too_large" and "cells, more than the 5,000" in cells["message"]
    assert set(statuses(run, "i_cells.ipynb").values()) == {"too_large"}
    assert all(statuses(run, "j_blank.ipynb")[i] == "pass" for i in LEVEL2_AUTO)


def test_a_flood_of_junk_is_cut_at_its_first_line(run):
    sub = run["subs"]["b_flood.ipynb"]
    assert "the notebook interfered with the grader's channel: a line that is not JSON" in \
        sub["message"]
    assert set(statuses(run, "b_flood.ipynb")[i] for i in LEVEL2_AUTO) == {"error"}


def test_a_kernel_puts_nothing_on_the_graders_disk_and_reads_no_log_back(run):
    # 2 x 64 MB per job (the kernel's log and its results file) with the old grader
    assert run["disk"] < 4 * 2 ** 20, run["disk"]
    answer = run["subs"]["c_logs.ipynb"]["exercises"]["2.3"]["answer"]
    read = json.loads(answer["derivation"])
    assert read and STDERR_MARK not in answer["derivation"], read
    assert all(v.startswith("OSError 6") for v in read.values()), read  # ENXIO: a socket
    assert all(statuses(run, "c_logs.ipynb")[i] == "pass" for i in LEVEL2_AUTO)


def test_the_graders_helpers_are_out_of_an_answers_reach(run):
    st = statuses(run, "d_helpers.ipynb")
    for i in ("1.4", "2.4", "2.6", "3.1", "3.2"):  # all five passed with the old grader
        assert st[i] != "pass", (i, run["subs"]["d_helpers.ipynb"]["exercises"][i]["message"])
    assert run["subs"]["d_helpers.ipynb"]["total"] == 0


def test_verdicts_forged_by_position_earn_nothing(run):
    """The forger speaks the grader's protocol (or appends to its results file) and gives each
    case of a test the verdict of its position in the checks' public order, and False (the
    likelier) past it: right with the old grader, whose order was that one; this run's order is
    drawn from the seed, and with the old extra-less order 3.2 was right one run in five."""
    sub = run["subs"]["e_forger.ipynb"]
    for i, public in PUBLIC.items():
        drawn = [c for c in run_cases(EXERCISES[i], submission_seed(SEED, sub["sha256"]))
                 if hands_an_impl(c)]
        expected = ([IMPL_EXPECT[c.args[0].code] for c in drawn] if i == "1.4" else
                    [MASKING_TEST_EXPECT[c.args[0].code] for c in drawn] if i == "2.6" else
                    [c.args[0].code == POLICIES["zeros"] for c in drawn])
        assert expected != public + [False] * (len(drawn) - len(public)), i
    ex = sub["exercises"]
    for i in PUBLIC:
        assert ex[i]["status"] == "fail" and "your test" in ex[i]["message"], (i, ex[i])


def test_hidden_inputs_read_in_feedback_are_not_the_ones_a_resubmission_meets(run):
    """A hidden case's inputs can reach the feedback (an answer raising with them in its
    message). A notebook handed in again, changed, and graded with the same seed (``--only``,
    ``--resume``) must meet other random cases, or it could return outputs computed at home for
    the inputs it read."""
    leaked = {}
    for name in ("l_leak.ipynb", "m_leak_again.ipynb"):
        grade = run["subs"][name]["exercises"]["2.1"]
        assert grade["status"] == "error" and "one of the grader's own random cases" in \
            grade["message"], grade
        leaked[name] = grade["message"].split("LEAK")[1].split("\n")[0]
    assert leaked["l_leak.ipynb"] != leaked["m_leak_again.ipynb"]


def test_what_a_student_controls_is_printed_escaped(run):
    out = run["stdout"].decode("utf-8")
    assert "\x1b" not in out and "\x07" not in out
    assert "k_\\x1b]0;pwned\\x07\\x1b[2J.ipynb" in out
    assert run["subs"][ESCAPED]["total"] == 6
