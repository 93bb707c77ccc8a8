"""The kernel is the floor of lease_manager: nothing in ``lease_manager/kernel/`` imports
from above it.

Below the kernel are only :data:`FLOOR` modules, which import nothing of lease_manager but
each other: ``errors`` (the exception types) and ``numbers`` (reading numbers). Every import
counts, wherever it is written: at module level, inside a function, or under
``TYPE_CHECKING`` (a type the kernel names is a dependency of the kernel as much as a call).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lease_manager"
KERNEL = PACKAGE / "kernel"
#: the modules below the kernel, which it may import
FLOOR = frozenset({"lease_manager.errors", "lease_manager.numbers"})
def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every lease_manager module (or package) the module at ``path`` imports."""
    return imports_of(path.read_text(), module_name(path), path.name == "__init__.py")


def imports_of(source: str, here: str, is_package: bool) -> set[str]:
    """Every lease_manager module (or package) ``source``, module ``here``, imports,
    anywhere in it. ``from X import y`` counts as importing ``X.y`` when that is a module,
    else ``X``."""
    package = here if is_package else here.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if _is_module(full) else base)
    return {name for name in found
            if name == "lease_manager" or name.startswith("lease_manager.")}


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or path.is_dir()   # (energy/ has no __init__)


def allowed(name: str) -> bool:
    return name == "lease_manager.kernel" or name.startswith("lease_manager.kernel.") \
        or name in FLOOR


def upward_imports() -> set[tuple[str, str]]:
    return {(module_name(path), name) for path in KERNEL.rglob("*.py")
            for name in imported(path) if not allowed(name)}


def test_the_kernel_imports_nothing_above_it():
    unexpected = sorted(upward_imports())
    assert not unexpected, f"kernel modules import from above the kernel: {unexpected}"


def test_the_floor_imports_only_the_floor():
    for name in FLOOR:
        path = PACKAGE.parent.joinpath(*name.split(".")).with_suffix(".py")
        assert imported(path) <= FLOOR, name


def test_the_walk_sees_imports_in_functions_and_under_type_checking():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from lease_manager.context import RunContext\n"
              "def f():\n    from lease_manager import policies, __version__\n"
              "    import lease_manager.run\n    from .slottable import SlotTable\n"
              "    from ..errors import LeaseManagerError\n")
    assert imports_of(source, "lease_manager.kernel.lease", False) == {
        "lease_manager.context", "lease_manager.policies", "lease_manager",
        "lease_manager.run", "lease_manager.kernel.slottable", "lease_manager.errors"}
