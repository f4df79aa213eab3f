"""The package's import structure: no import cycle, and the student side (``exercises``) never
imports the grader (``grading``). Read from the source with ``ast``: every import statement,
at the top of a module or inside a function, relative imports resolved."""

from __future__ import annotations

import ast
from pathlib import Path

import attention_lab

PACKAGE = Path(attention_lab.__file__).parent


def _module_name(path: Path) -> str:
    parts = ("attention_lab",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path):
    """``(target module, line)`` for each import of a module of the package in ``name``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(head + ([node.module] if node.module else []))
            subs = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t for t in subs if t in MODULES] or [base]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # `import a.b.c`: the deepest module named
                target = target.rpartition(".")[0]
            if target:
                yield target, node.lineno


GRAPH = {name: sorted({t for t, _ in _imports(name, path) if t != name})
         for name, path in MODULES.items()}


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """One cycle (its modules in import order, the first repeated last) per strongly connected
    component of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    cycles = []
    for component in components:  # the shortest way back to the first module, breadth first
        start = min(component)
        paths = {start: [start]}
        queue = [start]
        while queue:
            v = queue.pop(0)
            for w in graph[v]:
                if w == start:
                    queue = []
                    cycles.append(paths[v] + [start])
                    break
                if w in component and w not in paths:
                    paths[w] = paths[v] + [w]
                    queue.append(w)
    return sorted(cycles)


def test_the_graph_reads_the_package():
    assert len(MODULES) > 50
    assert "attention_lab.softmax" in GRAPH["attention_lab"]  # from .softmax import ...
    assert "attention_lab.exercises.registry" in GRAPH["attention_lab.exercises"]
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e"]}
    assert _cycles(graph) == [["a", "b", "c", "a"]]


def test_no_import_cycle():
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_student_side_never_imports_the_grader():
    wrong = [f"{MODULES[name].relative_to(PACKAGE.parent)}:{line} imports {target}"
             for name in MODULES if name.startswith("attention_lab.exercises")
             for target, line in _imports(name, MODULES[name])
             if target.startswith("attention_lab.grading")]
    assert not wrong, "\n".join(wrong)
