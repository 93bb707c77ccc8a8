"""Tests over a profile of free room, shared by the slot table and the count table."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate

import numpy as np


def move_test(times: Sequence[float], free: Sequence[float], after: float
              ) -> Callable[[int, float, float], bool]:
    """A necessary test of whether a reservation, if it were given up, could start earlier,
    on the rows from the one holding ``after`` on: their start times ``times`` and the VMs
    each could host, ``free``. ``test(count, start, end)``: could ``count`` VMs for ``end -
    start``, now reserved over ``[start, end)`` with ``start > after``, start in ``[after,
    start)``?

    A window that starts earlier either covers the instant just before ``start`` (the row
    there must have room) or lies wholly before it (some row starting by ``start - (end -
    start)`` must). In plain Python, one reservation at a time: a re-evaluation pass asks
    about a few tens of leases, read straight from them, with nothing collected first."""
    most = list(accumulate(free, max))   # the most room of any row up to each

    def test(count: int, start: float, end: float) -> bool:
        if not start > after:
            return False
        before = bisect_left(times, start) - 1   # the row before the start
        if free[before if before > 0 else 0] >= count:
            return True
        latest = start - (end - start)   # the latest start of a window wholly before it
        if not latest >= after:
            return False
        early = bisect_right(times, latest) - 1
        return most[early if early > 0 else 0] >= count

    return test


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
