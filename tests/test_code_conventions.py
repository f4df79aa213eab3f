"""The conventions of the core modules, checked: the chapter section beside each core function's
equation, a shape comment on each tensor line of the torch paths, one copy of each input check,
and no test helper inside the package."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import attention_lab

torch = pytest.importorskip("torch")
# the modules (``attention_lab.softmax`` the attribute is the function of that name)
attention, local, masks, scores, softmax, streaming, tensor = (
    importlib.import_module(f"attention_lab.{m}")
    for m in ("attention", "local", "masks", "scores", "softmax", "streaming", "tensor"))

PACKAGE = Path(attention_lab.__file__).parent

# The chapter's section titles (shared/seed, rendered text), by level.
SECTIONS = {
    "Level 1": ["Attention changes access to stored representations",
                "Query, key, and value name different jobs",
                "Attention is a differentiable retrieval rule",
                "Attention does not supply order by itself"],
    "Level 2": ["Scores compare one query with every key", "Softmax makes scores compete",
                "Temperature changes concentration", "Masks define which keys are eligible",
                "Global and local access trade coverage for cost"],
    "Level 3": ["Attention has a compact tensor form", "Masked softmax requires a stable fill value",
                "Weighted sums are mixtures, not discrete selections",
                "Additive scores learn a comparison space"],
    "Level 4": ["Attention weights are not sufficient explanations",
                "Score scale, dtype, and masking affect numerical behaviour",
                "Cost follows the query-key access pattern", "Attention modules need targeted tests"],
    "Common misconceptions": [],
}
ALL_TITLES = {t for titles in SECTIONS.values() for t in titles}

CORE = [scores.dot_scores, scores.scaled_dot_scores, scores.bilinear_scores,
        scores.additive_scores, scores.compute_scores, scores.key_projections,
        softmax.softmax, softmax.naive_softmax, softmax.safe_fill, softmax.fill_softmax,
        softmax.entropy, softmax.concentration, softmax.hardmax, softmax.mask_after_softmax,
        masks.padding_mask, masks.causal_mask, masks.local_mask, masks.local_m_mask,
        masks.combine_masks, local.centre_from_logit, local.predicted_centre,
        local.gaussian_window, local.local_p,
        attention.attend, attention.attend_scores, attention.weighted_sum,
        attention.within_value_range,
        tensor.padding_mask, tensor.causal_mask, tensor.eligibility, tensor.attention,
        streaming.streaming_attention]


@pytest.mark.parametrize("fn", CORE, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_core_docstrings_name_the_chapter_section_beside_the_equation(fn):
    doc = inspect.getdoc(fn) or ""
    m = re.search(r"Chapter, (Level [1-4]|Common misconceptions)", doc)
    assert m, f"{fn.__name__}: no 'Chapter, Level N, *Section*' reference"
    cited = re.findall(r"\*([^*]+)\*", doc[m.start():].replace("\n    ", " ").replace("\n", " "))
    assert cited, f"{fn.__name__}: no section title in italics after 'Chapter, ...'"
    assert any(" ".join(c.split()) in ALL_TITLES for c in cited) or \
        m.group(1) == "Common misconceptions", f"{fn.__name__}: unknown section {cited}"
    assert "``" in doc, f"{fn.__name__}: no equation or expression in the docstring"


TENSOR_OP = re.compile(r"^\s+[\w, \[\]\"]+ = .*(torch\.\w+\(|\.masked_fill_?\(|\.to\(|\.view\(|"
                       r"\.expand\(|\.amax\(|matmul|softmax|\.exp_?\(|\.squeeze\(|\.pad\()")


@pytest.mark.parametrize("module", [tensor, streaming], ids=lambda m: m.__name__)
def test_each_tensor_line_of_the_torch_paths_has_a_shape_comment(module):
    text = inspect.getsource(module)
    docstrings = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            docstrings.update(range(node.lineno - 1, node.end_lineno))
    src = text.splitlines()
    missing = []
    for i, line in enumerate(src):
        code = line.split("#")[0]
        if i in docstrings or not TENSOR_OP.search(code) or \
                re.search(r"= (int|bool|float|not)\b|Generator", code):
            continue
        commented = "# (" in line or "# (" in src[i - 1] and src[i - 1].lstrip().startswith("#") \
            or line.rstrip().endswith("\\") and "# (" in src[i + 1]  # above, or continued
        if not commented:
            missing.append(f"{i + 1}: {line.strip()}")
    assert not missing, "tensor lines without a shape comment:\n" + "\n".join(missing)


SHARED_MESSAGES = ["must be finite and > 0", "must be an integer", "empty must be one of",
                   "must be one of {CAUSAL_ALIGNMENTS}", "expected a boolean array", "must lie in [0, S=",
                   "non-finite value(s)", "the key set is empty", "must be a bool (True or False)",
                   "every key needs exactly one value", "must be a floating dtype"]


def test_each_input_check_exists_once_in_validate():
    """The messages of the shared checks are written only in _validate.py."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_validate.py":
            continue
        text = path.read_text(encoding="utf-8")
        for msg in SHARED_MESSAGES:
            assert msg not in text, f"{path.relative_to(PACKAGE)} writes its own {msg!r} check"
    text = (PACKAGE / "_validate.py").read_text(encoding="utf-8")
    assert all(msg in text for msg in SHARED_MESSAGES)


def test_attention_reference_lives_in_the_tests():
    assert not hasattr(tensor, "attention_reference")
    assert "attention_reference" not in "".join(p.read_text(encoding="utf-8")
                                                for p in PACKAGE.rglob("*.py"))


def test_no_module_alias_that_reads_as_a_tensor_name():
    """V is the values and T the number of queries: the modules _validate and tensor keep their
    names (``validate.count``, ``tensor.attention``), in the package and in the tests."""
    alias = re.compile(r"import (?:_validate|tensor) as (?:_?V|_?T)\b|"
                       r"import attention_lab\.(?:_validate|tensor) as \w+$", re.M)
    for path in sorted([*PACKAGE.rglob("*.py"), *Path(__file__).parent.rglob("*.py")]):
        found = alias.findall(path.read_text(encoding="utf-8"))
        assert not found, f"{path.name}: {found}"
