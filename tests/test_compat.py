"""Private names of dependencies stay in the adapters (``attention_lab/_compat/``), and each
adapter checks the version of its dependency.

The package (outside ``_compat``) and the benchmarks are read as Python, and these are refused:

* importing a dependency's private module (``from torch.utils._python_dispatch import ...``);
* a private attribute of a dependency's module (``np._core``, ``mpl._val_or_rc``);
* any other ``._name`` (or ``getattr(x, "_name")``) whose name a dependency defines (a ``def``, a
  class attribute, a ``self._name =``, a module variable), unless this package defines it itself:
  in one of its own classes or modules, or in a subclass of a dependency's class whose
  dependency part of the MRO does not define it (a name of ours, not one taken over).

* a private name given as a string (``getattr(x, "_name")``, ``name.endswith(("_name", ...))``);
* ``x.__dict__`` of an object other than ``self``;
* a private name of a dependency's base class that one of our classes defines (an override).

IPython's display protocol (``_repr_mimebundle_``, ``_ipython_display_``) is public despite its
underscore. What the test cannot see: a name a dependency adds to our class at run time (Voila's
pool subclasses the kernel manager), and names of packages the package never imports itself
(their classes are checked only through a base class's MRO); torch's sources are not read (its
private modules and module attributes are checked).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import sys
import tomllib
from functools import lru_cache
from pathlib import Path

import pytest

from attention_lab import _compat

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attention_lab"
OURS = {"attention_lab", "benchmarks", "harness", "interactions", "__future__"}
DISPLAY_PROTOCOL = re.compile(r"_(repr_\w+|ipython_\w+)_$")
#: dependencies whose sources are too large to read here; only their private modules and module
#: attributes are checked (the package uses their public API otherwise)
NOT_READ = {"torch"}


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and not DISPLAY_PROTOCOL.match(name)


def scanned() -> list[Path]:
    return sorted([p for p in PACKAGE.rglob("*.py") if "_compat" not in p.parts]
                  + list((ROOT / "benchmarks").glob("*.py")))


@lru_cache(maxsize=None)
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def where(path: Path, node) -> str:
    return f"{path.relative_to(ROOT)}:{node.lineno}"


def top(module: str) -> str:
    return module.split(".")[0]


def is_dependency(module: str) -> bool:
    return top(module) not in OURS and top(module) not in sys.stdlib_module_names


def imported_modules(t: ast.Module) -> dict[str, str]:
    """Local name -> the module it is bound to (``import numpy as np``: np -> numpy)."""
    names = {}
    for n in ast.walk(t):
        if isinstance(n, ast.Import):
            for a in n.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else top(a.name)
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            for a in n.names:  # from matplotlib import pyplot: maybe a module
                names.setdefault(a.asname or a.name, f"{n.module}.{a.name}")
        elif isinstance(n, ast.ImportFrom):  # relative: from ..exercises import authoring
            for a in n.names:
                names.setdefault(a.asname or a.name, f"attention_lab.{n.module or ''}.{a.name}")
    return names


def private_module_imports(path: Path) -> list[str]:
    bad = []
    for n in ast.walk(tree(path)):
        modules = ([a.name for a in n.names] if isinstance(n, ast.Import) else
                   [n.module] if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module
                   else [])
        if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            modules += [f"{n.module}.{a.name}" for a in n.names if is_private(a.name)]
        for m in modules:
            if is_dependency(m) and any(is_private(part) for part in m.split(".")):
                bad.append(f"{where(path, n)} imports {m}")
    return bad


IDENTIFIER = re.compile(r"_[A-Za-z]\w*")
NAME_FUNCTIONS = ("getattr", "setattr", "hasattr", "delattr")
MATCHERS = ("endswith", "startswith")


def accessed_private_names(path: Path):
    """(name, node, the node's object or None) for each ``x._name``, and each private name given
    as a string to ``getattr`` (``setattr``, ``hasattr``, ``delattr``) or matched by name
    (``qualname.endswith(("_name", ...))``)."""
    for n in ast.walk(tree(path)):
        if isinstance(n, ast.Attribute) and is_private(n.attr):
            yield n.attr, n, n.value
        elif isinstance(n, ast.Call):
            by_name = (isinstance(n.func, ast.Name) and n.func.id in NAME_FUNCTIONS
                       and len(n.args) > 1)
            matched = isinstance(n.func, ast.Attribute) and n.func.attr in MATCHERS
            strings = ([n.args[1]] if by_name else
                       [c for a in n.args for c in ast.walk(a)] if matched else [])
            for c in strings:
                if (isinstance(c, ast.Constant) and isinstance(c.value, str)
                        and IDENTIFIER.fullmatch(c.value) and is_private(c.value)):
                    yield c.value, c, n.args[0] if by_name else None


def instance_dicts(path: Path) -> list[str]:
    """``x.__dict__`` of an object that is not ``self``: reading past its attributes' logic."""
    return [f"{where(path, n)}: {ast.unparse(n)}" for n in ast.walk(tree(path))
            if isinstance(n, ast.Attribute) and n.attr == "__dict__"
            and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"))]


def dependency_module_attributes(path: Path) -> list[str]:
    modules = {k: v for k, v in imported_modules(tree(path)).items() if is_dependency(v)}
    return [f"{where(path, n)}: {modules[obj.id]}.{name}"
            for name, n, obj in accessed_private_names(path)
            if isinstance(obj, ast.Name) and obj.id in modules]


@lru_cache(maxsize=None)
def dependency_definitions(names: frozenset[str]) -> dict[str, set[str]]:
    """Which of ``names`` each dependency defines: name -> dependencies."""
    alternatives = "|".join(sorted(map(re.escape, names)))
    definition = re.compile(
        rf"(?:def|class)\s+({alternatives})\b"                     # def _x / class _x
        rf"|\.({alternatives})\s*(?::[^\n=]*)?=(?!=)"              # obj._x = / self._x: T =
        rf"|^[ \t]*({alternatives})\s*(?::[^\n=]*)?=(?!=)", re.M)  # _x = (module or class)
    found: dict[str, set[str]] = {}
    for dep in sorted(dependencies() - NOT_READ):
        spec = importlib.util.find_spec(dep)
        if spec is None:
            continue
        roots = [Path(p) for p in (spec.submodule_search_locations or [])] or [Path(spec.origin)]
        for root in roots:
            for f in ([root] if root.is_file() else root.rglob("*.py")):
                for m in definition.finditer(f.read_text(errors="replace")):
                    found.setdefault(next(g for g in m.groups() if g), set()).add(dep)
    return found


@lru_cache(maxsize=None)
def dependencies() -> frozenset[str]:
    deps = set()
    for path in scanned():
        deps |= {top(m) for m in imported_modules(tree(path)).values() if is_dependency(m)}
    return frozenset(deps)


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def dependency_bases(path: Path, cls: ast.ClassDef) -> set[str] | None:
    """The dependencies a class's bases come from (empty: a class of ours); None when a base is
    an expression this test cannot place (a factory's result)."""
    imported = imported_modules(tree(path))
    deps = set()
    for base in cls.bases:
        root = base
        while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if not isinstance(root, ast.Name):
            return None
        if root.id in imported and is_dependency(imported[root.id]):
            deps.add(top(imported[root.id]))
        elif root.id in imported and top(imported[root.id]) in ("attention_lab",):
            if isinstance(base, ast.Call):  # a class made by one of our adapters
                return None
    return deps


def taken_over(path: Path, cls: ast.ClassDef, defined: dict[str, set[str]]) -> set[str]:
    """The private names a dependency's part of ``cls``'s MRO defines (its own, not ours)."""
    try:
        obj = getattr(importlib.import_module(module_name(path)), cls.name)
    except Exception:  # a class inside a function: every name a dependency defines
        return set(defined)
    names = set()
    for base in inspect.getmro(obj)[1:]:
        if not is_dependency(base.__module__):
            continue
        names |= {n for n in vars(base) if is_private(n)}
        try:
            names |= set(re.findall(r"self\.(_\w+)\s*(?::[^\n=]*)?=(?!=)",
                                    inspect.getsource(base)))
        except (OSError, TypeError):
            pass
    return names


def our_definitions(defined: dict[str, set[str]], overridden: list | None = None) -> set[str]:
    """Private names this package's classes define themselves (see the module docstring); a
    module's own private names are read as attributes of that module (:func:`of_our_module`).
    A private name of a dependency's base class that one of our classes defines (overrides) is
    added to ``overridden``."""
    ours = set()
    for path in scanned():
        t = tree(path)
        classes = {id(c): c for c in ast.walk(t) if isinstance(c, ast.ClassDef)}
        for cls_node in classes.values():
            own = set()
            for n in ast.walk(cls_node):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    own.add(n.name)
                targets = (n.targets if isinstance(n, ast.Assign) else
                           [n.target] if isinstance(n, (ast.AnnAssign, ast.AugAssign)) else [])
                for target in targets:
                    if isinstance(target, ast.Name):
                        own.add(target.id)
                    elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                          and target.value.id in ("self", "cls")):
                        own.add(target.attr)
            own = {n for n in own if is_private(n)}
            if dependency_bases(path, cls_node) == set():
                ours |= own
            else:
                taken = own & taken_over(path, cls_node, defined)
                ours |= own - taken
                if overridden is not None:
                    overridden += [f"{where(path, cls_node)}: {cls_node.name} defines .{n}, "
                                   f"a private name of its base class" for n in sorted(taken)]
    return ours


def of_our_module(path: Path, obj) -> bool:
    """Whether ``obj`` (the object of an attribute) is one of our modules (``_canvas._deflate``)."""
    imported = imported_modules(tree(path))
    return isinstance(obj, ast.Name) and top(imported.get(obj.id, "?")) in OURS


def private_dependency_names() -> list[str]:
    accessed = [(name, path, n) for path in scanned()
                for name, n, obj in accessed_private_names(path) if not of_our_module(path, obj)]
    defined = dependency_definitions(frozenset(name for name, _, _ in accessed))
    overridden: list[str] = []
    ours = our_definitions(defined, overridden)
    return sorted({f"{where(path, n)}: .{name} (defined by {', '.join(sorted(defined[name]))})"
                   for name, path, n in accessed if name in defined and name not in ours}
                  | set(overridden))


def test_no_private_module_of_a_dependency_is_imported_outside_the_adapters():
    bad = [b for path in scanned() for b in private_module_imports(path)]
    assert not bad, "move these into attention_lab/_compat/:\n" + "\n".join(bad)


def test_no_private_attribute_of_a_dependency_module_outside_the_adapters():
    bad = [b for path in scanned() for b in dependency_module_attributes(path)]
    assert not bad, "move these into attention_lab/_compat/:\n" + "\n".join(bad)


def test_no_instance_dict_of_a_dependency_object_outside_the_adapters():
    bad = [b for path in scanned() for b in instance_dicts(path)]
    assert not bad, "move these into attention_lab/_compat/:\n" + "\n".join(bad)


def test_no_private_name_of_a_dependency_outside_the_adapters():
    bad = private_dependency_names()
    assert not bad, "move these into attention_lab/_compat/:\n" + "\n".join(bad)


def test_the_check_finds_a_private_name_of_a_dependency(tmp_path, monkeypatch):
    """The checks above see each kind of private use (not only that the package has none)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import numpy as np\n"
        "from torch.utils._python_dispatch import TorchDispatchMode\n"
        "from matplotlib.backend_bases import DrawEvent\n"
        "from ipympl.backend_nbagg import Canvas\n"
        "def f(canvas, renderer, text):\n"
        "    DrawEvent('draw_event', canvas, renderer)._process()\n"
        "    text._renderer = None\n"
        "    return np._core, getattr(canvas, '_png_is_old')\n"
        "class Mine(Canvas):\n"
        "    def draw(self):\n"
        "        self._force_full = True\n"
        "        self._mine = 1\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "scanned", lambda: [sample])
    tree.cache_clear()
    dependencies.cache_clear()
    try:
        assert private_module_imports(sample) == [
            "sample.py:2 imports torch.utils._python_dispatch"]
        assert dependency_module_attributes(sample) == ["sample.py:8: numpy._core"]
        found = " ".join(private_dependency_names())
        for name in ("_process", "_renderer", "_png_is_old", "_force_full"):
            assert f".{name} " in found, (name, found)
        assert "_mine" not in found
    finally:
        tree.cache_clear()
        dependencies.cache_clear()


# ------------------------------------------------------------------------------------------------
# The adapters' versions
# ------------------------------------------------------------------------------------------------

ADAPTERS = {  # adapter module -> the distribution it checks
    "ipympl": "ipympl", "matplotlib": "matplotlib", "voila": "voila",
    "jupyter_server": "jupyter_server", "jupyter_client": "jupyter_client",
    "tornado": "tornado", "torch": "torch", "zmq": "pyzmq",
}


def test_every_adapter_is_listed_and_states_its_tested_versions():
    found = {p.stem for p in (PACKAGE / "_compat").glob("*.py")} - {"__init__"}
    assert found == set(ADAPTERS)
    for name in ADAPTERS:
        adapter = importlib.import_module(f"attention_lab._compat.{name}")
        assert len(adapter.ACCEPTS) == 2 and "Tested with" in adapter.__doc__, name
        assert f">={adapter.ACCEPTS[0]},<{adapter.ACCEPTS[1]}" in adapter.__doc__, name


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_an_adapter_refuses_an_untested_version_by_name(adapter, monkeypatch):
    """Importing an adapter on a version outside what it accepts fails with a message naming the
    dependency, the version and what to install; ATTENTION_LAB_ALLOW_UNTESTED=1 lets it through."""
    distribution = ADAPTERS[adapter]
    module = f"attention_lab._compat.{adapter}"
    # the real adapter again after the test, for whoever imports it from the package
    monkeypatch.setattr(_compat, adapter, importlib.import_module(module), raising=False)
    monkeypatch.delitem(sys.modules, module, raising=False)
    real = _compat.metadata.version
    monkeypatch.setattr(_compat.metadata, "version",
                        lambda d: "99.0.0" if d == distribution else real(d))
    monkeypatch.delenv(_compat.ALLOW_UNTESTED, raising=False)
    if adapter == "ipympl":  # no error: the explorers fall back to the picture (test_explorers)
        assert "99.0.0" in importlib.import_module(module).tested()
        return
    with pytest.raises(_compat.UntestedVersion) as err:
        importlib.import_module(module)
    message = str(err.value)
    assert f"{distribution} 99.0.0" in message and "pip install" in message
    monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setenv(_compat.ALLOW_UNTESTED, "1")
    assert importlib.import_module(module).VERSION == "99.0.0"


def test_the_versions_compared_are_numbers():
    assert _compat.version_tuple("2.13.0+cpu") == (2, 13, 0)
    assert _compat.accepts("0.5.13", "0.6", "0.5.13") and not _compat.accepts("0.5.13", "0.6",
                                                                               "0.5.9")
    assert _compat.accepts("0.10", "0.11", "0.10.0") and not _compat.accepts("0.10", "0.11",
                                                                             "0.11.0")
    assert _compat.require("not-a-distribution-here", "1", "2") is None


def test_pyproject_ranges_are_the_adapters_ranges():
    """pyproject.toml's range of each adapted dependency is what its adapter accepts."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = [s for group in project["optional-dependencies"].values() for s in group]
    ranges = {}
    for spec in specs:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)(.*)", spec.replace(" ", ""))
        ranges[m.group(1).lower().replace("-", "_")] = m.group(2)
    for name, distribution in ADAPTERS.items():
        adapter = importlib.import_module(f"attention_lab._compat.{name}")
        lower, upper = adapter.ACCEPTS
        assert ranges.get(distribution.lower().replace("-", "_")) == f">={lower},<{upper}", (
            distribution, ranges.get(distribution))


def test_the_voila_websocket_workaround_names_its_cause_and_is_guarded_by_version():
    """The demo refuses legacy websocket clients only on the Voila releases that read every
    binary message as protocol v1 (0.5.8, which brought voila#1489, to 0.5.x)."""
    from attention_lab._compat import voila

    assert voila.WEBSOCKET_READS_V1_ONLY is _compat.accepts("0.5.8", "0.6", voila.VERSION)
    assert voila.WEBSOCKET_READS_V1_ONLY  # the tested 0.5.13 is one of them
    assert not _compat.accepts("0.5.8", "0.6", "0.5.7")
    assert "voila-dashboards/voila#1489" in inspect.getsource(voila)
