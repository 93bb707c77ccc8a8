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


def runs_fit(times: list[float], k0: int, blocked: np.ndarray, after: float,
             duration: float) -> bool:
    """``may_fit_before``'s answer from its ``blocked`` rows (``times[k0:]`` on, up to
    ``before``): does a run of unblocked rows, starting at ``after`` or at a row, last
    ``duration``, or reach ``before``?"""
    if not blocked[-1]:   # the last run of unblocked rows reaches ``before``
        return True
    # A window can only start at ``after`` or right after a blocked row (starting later in
    # a run of unblocked rows is never better); it must end before the next blocked row.
    # The rows where blocking changes, from row 0 on, alternately start and stop the runs
    # of unblocked rows (the last row is blocked, so every run has a stop).
    bounds = (np.nonzero(blocked[1:] != blocked[:-1])[0] + 1).tolist()
    if not blocked[0]:
        bounds.insert(0, 0)
    for start_row, stop in zip(bounds[::2], bounds[1::2]):
        s = after if start_row == 0 else times[k0 + start_row]
        if s + duration <= times[k0 + stop]:
            return True
    return False
