"""The daemon's default node names, ``node-1`` ... ``node-N``, made when asked for (a tuple of a
million of them was 73 MB of the daemon's memory)."""

from __future__ import annotations

import tracemalloc

import pytest

from lease_manager.enactment.base import NumberedNodes


def test_numbered_nodes_read_as_the_tuple_they_replace():
    names = NumberedNodes(5)
    plain = tuple(f"node-{i + 1}" for i in range(5))
    assert len(names) == 5 and tuple(names) == plain
    assert names[0] == "node-1" and names[4] == "node-5" and names[-1] == "node-5"
    assert names[1:4] == list(plain[1:4]) and names[::-2] == list(plain[::-2])
    assert "node-3" in names and "node-6" not in names
    for bad in (5, -6):
        with pytest.raises(IndexError):
            names[bad]


def test_a_million_names_cost_nothing_until_read():
    tracemalloc.start()
    try:
        names = NumberedNodes(1_000_000)
        allocated = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert allocated < 1024
    assert names[999_999] == "node-1000000"
    assert len(names) == 1_000_000
