"""Tests over a profile of free room, shared by the slot table and the count table."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate, islice

import numpy as np


def move_test(times: Sequence[float], free: Sequence[float], after: float,
              free_array: np.ndarray | None = None) -> Callable[[int, float, float], bool]:
    """A necessary test of whether a reservation, if it were given up, could start earlier,
    on the rows from the one holding ``after`` on: their start times ``times`` and the VMs
    each could host, ``free``. ``test(count, start, end)``: could ``count`` VMs for ``end -
    start``, now reserved over ``[start, end)`` with ``start > after``, start in ``[after,
    start)``? (``free_array``: ``free`` as an array, if the caller has it.)

    A window that starts earlier either covers the instant just before ``start`` (the row
    there must have room) or lies wholly before it, inside a run of rows with room that
    stops by ``start`` and lasts as long (from ``after``, for a run from the first row): the
    statement of ``may_fit_before``, on these rows. The runs are found once per VM count,
    when first needed; a lease is read straight from itself, with nothing collected first
    (a re-evaluation pass asks about a few tens of leases)."""
    # the most room of any row up to each, computed as far as a lease needs (a pass reads
    # about half the rows: leases late in the plan are long or wait for a row with room)
    most: list[float] = []
    running_most = accumulate(free, max)
    runs: dict[int, tuple[list[float], list[float]]] = {}

    def test(count: int, start: float, end: float) -> bool:
        if not start > after:
            return False
        before = bisect_left(times, start) - 1   # the row before the start
        if free[before if before > 0 else 0] >= count:
            return True
        duration = end - start
        latest = start - duration   # the latest start of a window wholly before it
        if not latest >= after:
            return False
        early = bisect_right(times, latest) - 1
        if early < 0:
            early = 0
        if early >= len(most):
            most.extend(islice(running_most, early + 1 - len(most)))
        if most[early] < count:
            return False
        found = runs.get(count)
        if found is None:
            found = runs[count] = complete_runs(
                times, free if free_array is None else free_array, count, after)
        stops, longest = found
        j = bisect_right(stops, start) - 1
        # (lenient by a few ulps: may_fit_before adds the duration to the run's start, and
        # its duration can be the lease's length, within 1e-9 of this one)
        return j >= 0 and longest[j] >= duration - 1e-9 * (abs(start) + duration + 1.0)

    return test


def complete_runs(times: Sequence[float], free: Sequence[float] | np.ndarray, count: int,
                  after: float) -> tuple[list[float], list[float]]:
    """The runs of rows with room for ``count`` that stop at a later row (a run from the
    first row starts at ``after``): each one's stop time, ascending, and the longest of the
    runs up to it."""
    room = np.asarray(free) >= count
    if not len(room):
        return [], []
    changes = np.flatnonzero(room[1:] != room[:-1]) + 1   # rows where room changes
    begins = changes[room[changes]].tolist()   # a run starts there...
    stops = changes[~room[changes]].tolist()   # ...or stops there
    if room[0]:
        begins.insert(0, 0)
    starts = [after if k == 0 else times[k] for k in begins[:len(stops)]]
    stop_times = [times[k] for k in stops]
    longest = np.maximum.accumulate(np.subtract(stop_times, starts)).tolist() if stops else []
    return stop_times, longest


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
