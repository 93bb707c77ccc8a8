"""Fixtures shared by the test modules (helpers live in ``support.py``)."""

from __future__ import annotations

import sys

import pytest

from slurm_support import find_slurm_node


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture(scope="module")
def slurm_node() -> tuple[str, int]:
    """(name, CPUs) of a usable Slurm node; the test skips, saying why, without one."""
    return find_slurm_node()
