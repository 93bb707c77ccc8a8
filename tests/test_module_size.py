"""Size: no module of lease_manager (or of a plugin package) over 500 lines, no function over
60, except the declarative tables that ``CONTRIBUTING.md`` names (issue 42).

A declarative table (the option table, the argument parser) is one long function that only
lists things; its lines count toward neither limit. :data:`DECLARATIVE` is the one list of
them, and ``CONTRIBUTING.md``'s "Size" section must name exactly those.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULE_LINES = 500
FUNCTION_LINES = 60
#: the declarative tables: (module path, function's qualified name)
DECLARATIVE = frozenset({
    ("lease_manager/config/core_options.py", "core_options"),
    ("lease_manager/cli.py", "build_parser"),
    ("lease_manager/daemon/client.py", "add_client_commands"),
})
def modules() -> list[Path]:
    found = list((ROOT / "lease_manager").rglob("*.py"))
    found += (ROOT / "plugins").glob("*/lm_*/**/*.py")
    return sorted(found)


def functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """Every function in ``tree`` (nested ones too) as (qualified name, lines)."""
    out = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            out.append((name, node.end_lineno - node.lineno + 1))
            out += functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            out += functions(node, prefix + node.name + ".")
        else:
            out += functions(node, prefix)
    return out


def offenders() -> set[str | tuple[str, str]]:
    """Modules over :data:`MODULE_LINES` (their declarative tables not counted) and
    functions over :data:`FUNCTION_LINES` (declarative tables aside)."""
    found: set[str | tuple[str, str]] = set()
    for path in modules():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        lines = len(text.splitlines())
        for name, length in functions(ast.parse(text)):
            if (rel, name) in DECLARATIVE:
                lines -= length
            elif length > FUNCTION_LINES:
                found.add((rel, name))
        if lines > MODULE_LINES:
            found.add(rel)
    return found


def test_no_module_or_function_is_too_long():
    unexpected = offenders()
    assert not unexpected, (f"over {MODULE_LINES} lines a module or {FUNCTION_LINES} a "
                            f"function: {sorted(unexpected, key=str)}")


def test_every_declarative_table_exists():
    for rel, name in DECLARATIVE:
        assert name in dict(functions(ast.parse((ROOT / rel).read_text()))), (rel, name)


def test_contributing_names_exactly_the_declarative_tables():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = re.search(r"^## Size\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "CONTRIBUTING.md has no '## Size' section"
    named = set(re.findall(r"`([\w/]+\.py)` `([\w.]+)`", section.group(1)))
    assert named == set(DECLARATIVE)


@pytest.mark.parametrize("source, expected", [
    ("def f():\n    pass\n", [("f", 2)]),
    ("class A:\n    def m(self):\n        def g():\n            pass\n",
     [("A.m", 3), ("A.m.g", 2)]),
    ("if True:\n    def h():\n        return 1\n", [("h", 2)]),
])
def test_functions_are_named_and_measured(source, expected):
    assert functions(ast.parse(source)) == expected
