"""The energy modules work through each other's public interfaces: no module of
``lease_manager/energy/`` reads or writes a private (``_name``) attribute of another object.
The power cap, in particular, asks the node states what it needs through
:class:`~lease_manager.energy.node_states.NodePowerStates`' public methods (issue 42)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENERGY = Path(__file__).resolve().parents[2] / "lease_manager" / "energy"


def private_reaches(source: str) -> list[tuple[int, str]]:
    """``(line, expression)`` of every ``X._name`` in ``source`` where ``X`` is not ``self``
    or ``cls`` (dunders such as ``__name__`` are not private)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_check_finds_a_reach_into_another_object():
    source = "def f(self, states):\n    self._ok = states._off\n    return type(self).__name__\n"
    assert private_reaches(source) == [(2, "states._off")]


@pytest.mark.parametrize("path", sorted(ENERGY.glob("*.py")), ids=lambda p: p.name)
def test_no_energy_module_reaches_into_another_objects_private_state(path):
    assert private_reaches(path.read_text()) == []
