"""No import cycles in ``lease_manager``, hidden inside functions or not.

The graph is read from the source (AST): every ``import`` and ``from ... import``, at module
level and inside functions (a function-level import that exists for start-up speed is fine,
as long as it closes no cycle). Imports under ``if TYPE_CHECKING:`` are left out: they never
run, and naming a type is how a module refers to one above it without depending on it.
``from package import name`` depends on ``package.name`` when that is a module, else on
``package``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def _modules(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package's ``__init__``)."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """The ids of every node under an ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                   "typing.TYPE_CHECKING"):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (at run time, anywhere in it)."""
    modules = _modules(root, package)

    def known(name: str) -> str | None:   # the module itself, else the package it is in
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skipped = _type_checking_nodes(tree)
        here = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [known(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                targets = [known(f"{base}.{alias.name}") for alias in node.names]
                targets = [t if t not in (None, name) else known(base) for t in targets]
            graph[name].update(t for t in targets if t is not None and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a path
    that closes: ``[a, b, ..., a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_closed_path(graph, component) for component in components]


def _closed_path(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the first module of ``component`` (breadth first)."""
    start = min(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:   # start -> ... -> v -> start
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w not in came_from:
                    came_from[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"not a cycle: {sorted(component)}")


def test_lease_manager_has_no_import_cycle() -> None:
    found = cycles(import_graph(ROOT, "lease_manager"))
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_cycle_hidden_in_a_function_is_found(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from pkg.b import f\n",
        "b.py": "def f():\n    from pkg import a\n    return a\n",
        "c.py": "from . import a\n",
    })
    assert cycles(import_graph(root, "pkg")) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_relative_and_package_imports_resolve_to_the_module_they_name(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "sub/__init__.py": "X = 1\n",
        "sub/m.py": "from .. import top\nfrom . import X\nimport pkg.sub.n\n",
        "sub/n.py": "",
        "top.py": "def g():\n    from .sub.m import X\n",
    })
    graph = import_graph(root, "pkg")
    assert graph["pkg.sub.m"] == {"pkg.top", "pkg.sub", "pkg.sub.n"}
    assert graph["pkg.top"] == {"pkg.sub.m"}
    assert cycles(graph) == [["pkg.sub.m", "pkg.top", "pkg.sub.m"]]


def test_imports_for_type_checkers_make_no_cycle(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "import pkg.b\n",
        "b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    from pkg.a import A\n"),
    })
    assert cycles(import_graph(root, "pkg")) == []
