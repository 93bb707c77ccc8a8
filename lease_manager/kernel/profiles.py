"""Tests over a profile of free room, shared by the slot table and the count table."""

from __future__ import annotations

import numpy as np


def may_move(times: np.ndarray, free: np.ndarray, counts: np.ndarray, durations: np.ndarray,
             starts: np.ndarray, after: float) -> np.ndarray:
    """Could a reservation of ``counts[i]`` VMs for ``durations[i]``, now starting at
    ``starts[i] > after``, start in ``[after, starts[i])`` if it were given up? A necessary
    test for many reservations at once, on the rows from the one holding ``after`` on: their
    start times ``times`` and the VMs each could host, ``free``.

    A window that starts earlier either covers the instant just before ``starts[i]`` (the row
    there must have room) or lies wholly before it (some row starting by ``starts[i] -
    durations[i]`` must)."""
    before = np.searchsorted(times, starts, side="left") - 1   # the row before the start
    room_before = free[np.maximum(before, 0)] >= counts
    most = np.maximum.accumulate(free)
    latest = starts - durations   # the latest start of a window wholly before it
    early = np.searchsorted(times, latest, side="right") - 1
    room_early = (latest >= after) & (most[np.maximum(early, 0)] >= counts)
    return (room_before | room_early) & (starts > after)
