"""Fixtures shared by the test modules (helpers live in ``support.py``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from browser_support import open_chromium
from slurm_support import find_slurm_node
from support import LONG


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``long`` skip, saying how to run them, unless ``LM_LONG=1``."""
    if LONG:
        return
    skip = pytest.mark.skip(reason="long profile: LM_LONG=1 runs it (CI does)")
    for item in items:
        if item.get_closest_marker("long"):
            item.add_marker(skip)


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture(scope="module")
def slurm_node() -> tuple[str, int]:
    """(name, CPUs) of a usable Slurm node; the test skips, saying why, without one."""
    return find_slurm_node()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Chromium WebDriver for the module; skips, saying why, without one."""
    yield from open_chromium()
