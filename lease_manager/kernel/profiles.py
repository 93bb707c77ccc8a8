"""Tests over a profile of free room, shared by the slot table and the count table."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate, islice

import numpy as np


def move_test(times: Sequence[float], free: Sequence[float],
              after: float) -> Callable[[int, float, float], bool]:
    """A necessary test of whether a reservation, if it were given up, could start earlier,
    on the rows from the one holding ``after`` on: their start times ``times`` and the VMs
    each could host, ``free``. ``test(count, start, end)``: could ``count`` VMs for ``end -
    start``, now reserved over ``[start, end)`` with ``start > after``, start in ``[after,
    start)``?

    A window that starts earlier either covers the instant just before ``start`` (the row
    there must have room) or lies wholly before it, inside a run of rows with room that
    stops by ``start`` and lasts as long (from ``after``, for a run from the first row): the
    statement of ``may_fit_before``, on these rows. The runs are read once per VM count,
    row by row as far as the leases asked about start (:class:`_Runs`); a lease is read
    straight from itself, with nothing collected first (a re-evaluation pass asks about a
    few tens of leases)."""
    # the most room of any row up to each, computed as far as a lease needs (a pass reads
    # about half the rows: leases late in the plan are long or wait for a row with room)
    most: list[float] = []
    running_most = accumulate(free, max)
    runs: dict[int, _Runs] = {}

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
            found = runs[count] = _Runs(times, free, count, after)
        found.read_to(bisect_right(times, start))   # the rows that begin by the start
        stops, longest = found.stops, found.longest
        j = bisect_right(stops, start) - 1
        # (lenient by a few ulps: may_fit_before adds the duration to the run's start, and
        # its duration can be the lease's length, within 1e-9 of this one)
        return j >= 0 and longest[j] >= duration - 1e-9 * (abs(start) + duration + 1.0)

    return test


class _Runs:
    """The runs of rows with room for ``count`` that stop at a later row (a run from the
    first row starts at ``after``), read row by row as far as asked: each one's stop time,
    ascending, and the longest of the runs up to it. (Plain Python: a profile has some tens
    of rows, and a test reads those before one lease's start.)"""

    __slots__ = ("_times", "_free", "_count", "_after", "_row", "_begin", "_best", "stops",
                 "longest")

    def __init__(self, times: Sequence[float], free: Sequence[float], count: int,
                 after: float) -> None:
        self._times, self._free, self._count, self._after = times, free, count, after
        self._row = 0   # the next row to read
        self._begin: float | None = None   # the start of the run being read (None: none)
        self._best = -math.inf
        self.stops: list[float] = []
        self.longest: list[float] = []

    def read_to(self, end: int) -> None:
        """Read the rows before ``end`` (those not read yet)."""
        times, free, count = self._times, self._free, self._count
        begin, best = self._begin, self._best
        for k in range(self._row, min(end, len(free))):
            if free[k] >= count:
                if begin is None:
                    begin = self._after if k == 0 else times[k]
            elif begin is not None:
                stop = times[k]
                if stop - begin > best:
                    best = stop - begin
                self.stops.append(stop)
                self.longest.append(best)
                begin = None
        self._row = max(self._row, end)
        self._begin, self._best = begin, best


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


def first_run(times: Sequence[float], room: Sequence[float], k0: int, k_end: int, count: int,
              after: float, duration: float,
              not_after: float | None = None) -> tuple[float | None, bool]:
    """The first window of ``duration`` in rows ``k0:k_end`` (start times ``times``, room
    ``room``) whose every row has room for ``count``, read row by row up to it only: a window
    starts at ``after`` (in row ``k0``) or at a row, at the start of a run of rows with room
    (one that fits from later in a run fits from its start too).

    ``(start, True)`` if a run lasts ``duration`` before ``k_end``; else ``(start, False)``
    for a run that reaches ``k_end`` (it may go on after), or ``(None, False)`` if none does
    or the first run that lasts or reaches ``k_end`` starts after ``not_after``."""
    begin = None   # the start of the run of rows with room being read (None: none)
    end = math.inf
    for k in range(k0, k_end):
        if begin is not None and times[k] >= end:
            return begin, True   # no row without room before the window's end
        if room[k] >= count:
            if begin is None:
                begin = float(after) if k == k0 else times[k]
                if not_after is not None and begin > not_after:
                    return None, False
                end = begin + duration
        else:
            begin = None
    return begin, False
