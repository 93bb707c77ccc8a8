"""The count table's fit queries: when VMs of the site's one shape fit (:class:`CountFitting`).

Every answer comes from the profile of free VM slots (exact: see
:mod:`~lease_manager.kernel.count_table`): a window fits when each of its rows has room, and
a run of rows with room is read once, in plain Python over a few rows or with arrays over
many.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.kernel import profiles
from lease_manager.kernel.count_rows import CountRows
from lease_manager.kernel.reservation import Reservation

if TYPE_CHECKING:
    from lease_manager.kernel.lease import VMRequest

#: queries over at most this many rows of the profile read them as lists (numpy's cost per
#: call is more than the comparisons then)
FEW_ROWS = 32


class CountFitting(CountRows):
    """When VMs of the table's one shape fit on its profile of free VM slots."""

    def room_at(self, vector: np.ndarray, t: float) -> float:
        """How many VMs of the table's shape the site could host at ``t``."""
        return float(self._room[self._row(t)])

    def profile(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The rows from the one holding ``t`` on: their start times (the first one's is at
        most ``t``) and free VM slots (views: read, do not change, do not keep)."""
        k0 = self._row(t)
        times, free = self._profile_arrays()
        return times[k0:], free[k0:]

    def profile_lists(self, t: float) -> tuple[list[float], list[int]]:
        """:meth:`profile` as lists (copies), for a reader in plain Python."""
        k0 = self._row(t)
        return self._t[k0:], self._room[k0:]

    def fits_at(self, demand: VMRequest, duration: float, t: float) -> bool:
        """Does ``demand`` fit all through ``[t, t + duration)``? (Exact.)"""
        return self.count_fits(self._count(demand), t, t + duration)

    def count_fits(self, count: int, t: float, end: float) -> bool:
        """Do ``count`` VMs of the table's shape fit all through ``[t, end)``? (:meth:`fits_at`
        for a VM count: exact.)"""
        k0 = self._row(t)
        room = self._room
        if room[k0] < count:
            return False
        ke = len(self._t) if math.isinf(end) else bisect_left(self._t, end, k0 + 1)
        return ke == k0 + 1 or min(room[k0:ke]) >= count

    def next_fitting(self, counts: Sequence[int], lengths: Sequence[float], first: int,
                     now: float, room: float) -> int:
        """The first ``k >= first`` (``len(counts)`` if none) at which ``counts[k] <= room``
        and ``counts[k]`` VMs fit all through ``[now, now + lengths[k])``: :meth:`count_fits`
        asked in turn, over one reading of the table (a backfilling pass asks it of every
        queued lease)."""
        times, free = self._t, self._room
        k0 = self._row(now)
        here = free[k0]
        n = len(times)
        k1 = k0 + 1
        following = times[k1] if k1 < n else math.inf
        for k in range(first, len(counts)):
            count = counts[k]
            if count > room or count > here:
                continue
            end = lengths[k] + now
            if end <= following:   # (within row k0: count_fits's ke == k0 + 1)
                return k
            ke = n if math.isinf(end) else bisect_left(times, end, k1)
            if ke == k1 or min(free[k0:ke]) >= count:
                return k
        return len(counts)

    def iter_fit_starts(self, demand: VMRequest, duration: float, after: float, *,
                        not_after: float | None = None,
                        site_demand: np.ndarray | None = None,
                        own: Reservation | None = None) -> Iterator[float]:
        """Candidate starts ``s >= after`` (earliest first) at which ``demand`` fits all
        through ``[s, s + duration)`` (exact); ``own`` counts as free from ``after`` on.

        Candidates are ``after`` and the later breakpoints where free slots grow: a window
        that fits from a breakpoint where they do not grow fits from the one before too.
        The first is found by :meth:`earliest_fit`'s scan; the others, as the table is
        when they are asked for (a caller that takes the first asks for no more)."""
        if not duration > 0:
            yield from self._fit_starts(demand, duration, after, not_after=not_after, own=own)
            return
        first = self.earliest_fit(demand, duration, after, not_after=not_after, own=own)
        if first is None:
            return
        yield first
        for start in self._fit_starts(demand, duration, after, not_after=not_after, own=own):
            if start > first:
                yield start

    def _fit_starts(self, demand: VMRequest, duration: float, after: float, *,
                    not_after: float | None = None,
                    own: Reservation | None = None) -> Iterator[float]:
        """Every candidate of :meth:`iter_fit_starts`, from arrays or (over a few rows) in
        plain Python."""
        if not_after is not None and not_after < after:
            return
        count = self._count(demand)
        k0 = self._row(after)
        n = len(self._t)
        k_end = (n if not_after is None or math.isinf(duration)
                 else bisect_left(self._t, not_after + duration, k0 + 1))
        if k_end - k0 <= FEW_ROWS:   # arrays cost more than they save
            yield from self._fit_starts_few(count, duration, after, not_after, own, k0, k_end)
            return
        all_times, all_free = self._profile_arrays()
        times = all_times[k0:k_end].copy()
        times[0] = after
        free = all_free[k0:k_end]
        lo, hi = self._own_rows(own, after, k0, k_end)
        if hi > lo:
            assert own is not None
            free = free.copy()
            free[lo:hi] += self.vms(own)
        rows = len(times)
        blocked = free < count
        # the first blocked row at or after each row (rows: none)
        next_blocked = np.minimum.accumulate(np.where(blocked, np.arange(rows), rows)[::-1])[::-1]
        candidates = np.flatnonzero(free[1:] > free[:-1]) + 1
        if not_after is not None:
            candidates = candidates[times[candidates] <= not_after]
        candidates = np.concatenate(([0], candidates))
        starts = times[candidates]
        # the first row at or after each window's end
        stops = (np.full(len(candidates), rows) if math.isinf(duration)
                 else np.searchsorted(times, starts + duration, side="left"))
        fits = next_blocked[candidates] >= stops
        yield from starts[fits].tolist()

    def _fit_starts_few(self, count: int, duration: float, after: float,
                        not_after: float | None, own: Reservation | None, k0: int,
                        k_end: int) -> list[float]:
        """:meth:`iter_fit_starts` over rows ``k0:k_end`` in plain Python (the same candidates
        and tests, for a window of a few rows)."""
        times = self._t[k0:k_end]
        times[0] = float(after)
        free = self._room[k0:k_end]
        lo, hi = self._own_rows(own, after, k0, k_end)
        if hi > lo:
            assert own is not None
            vms = self.vms(own)
            for k in range(lo, hi):
                free[k] += vms
        rows = len(times)
        next_blocked = [rows] * rows   # the first row at or after each row without room
        blocked = rows
        for k in range(rows - 1, -1, -1):
            if free[k] < count:
                blocked = k
            next_blocked[k] = blocked
        unlimited = math.isinf(duration)
        starts: list[float] = []
        for k in range(rows):
            # candidates: ``after`` and the later rows where free slots grow (by not_after)
            if k and (free[k] <= free[k - 1] or (not_after is not None
                                                 and times[k] > not_after)):
                continue
            stop = rows if unlimited else bisect_left(times, times[k] + duration)
            if next_blocked[k] >= stop:
                starts.append(times[k])
        return starts

    def earliest_fit(self, demand: VMRequest, duration: float, after: float, *,
                     not_after: float | None = None, site_demand: np.ndarray | None = None,
                     own: Reservation | None = None) -> float | None:
        """The first of :meth:`iter_fit_starts`' candidates, or ``None``: the start of the
        first run of rows with room that lasts ``duration`` (a window that fits from later
        in a run fits from its start too), found row by row, up to it only."""
        if not duration > 0:
            return next(self._fit_starts(demand, duration, after, not_after=not_after,
                                         own=own), None)
        if not_after is not None and not_after < after:
            return None
        count = self._count(demand)
        times, room = self._t, self._room
        k0 = self._row(after)
        k_end = (len(times) if not_after is None or math.isinf(duration)
                 else bisect_left(times, not_after + duration, k0 + 1))
        lo, hi = self._own_rows(own, after, k0, k_end)
        if hi > lo and own is not None:   # own's rows, with its VMs given back
            room = room.copy()
            extra = self.vms(own)
            for k in range(lo + k0, hi + k0):
                room[k] += extra
        # (a run up to the last row looked at fits too)
        return profiles.first_run(times, room, k0, k_end, count, after, duration, not_after)[0]

    def may_fit_before(self, demand: VMRequest, duration: float, after: float,
                       before: float) -> bool:
        """Could ``demand``, now reserved from ``before`` on, start in ``[after, before)``
        if that reservation were given up? (A cheap necessary test, as the slot table's.)"""
        count = self._count(demand)
        times = self._t
        k0 = self._row(after)
        kb = bisect_left(times, before, k0 + 1)
        if kb <= k0:
            return False
        room = self._room
        if room[kb - 1] >= count:
            return True
        # the runs of rows with room, one by one, up to the first that lasts (the last row
        # has none: a run that reaches a row at or after its end stops by then)
        return profiles.first_run(times, room, k0, kb, count, after, duration)[1]

    def earlier_start(self, demand: VMRequest, duration: float, after: float,
                      own: Reservation) -> float | None:
        """The earliest start in ``[after, own.start)`` at which ``demand`` fits for
        ``duration`` with ``own`` (its reservation now) given up, or ``None``: what
        :meth:`may_fit_before` and then :meth:`earliest_fit` answer, in one reading of the
        rows before ``own.start``. A window from there either lies in a run of rows with room
        that lasts, or runs on into ``own``'s rows, where ``own`` gives its VMs back."""
        before = own.start
        count = self._count(demand)
        times, room = self._t, self._room
        k0 = self._row(after)
        kb = bisect_left(times, before, k0 + 1)
        if kb <= k0:
            return None
        begin, lasts = profiles.first_run(times, room, k0, kb, count, after, duration)
        if lasts:
            return begin
        if begin is None:
            return None
        end = begin + duration
        if end <= own.end and self.vms(own) >= count and own.id in self._reservations:
            return begin   # the run goes on through own's rows, past the window's end
        # (a window that outlasts own, or more VMs than own gives back: read on as
        # earliest_fit does)
        start = self.earliest_fit(demand, duration, after, not_after=before, own=own)
        return start if start is not None and start < before else None

    def move_test(self, vector: np.ndarray, after: float) -> Callable[[int, float, float], bool]:
        """:meth:`may_fit_before`'s test, for one reservation of VM shape ``vector`` at a
        time, on the rows from the one holding ``after`` on, as they are now
        (:func:`~lease_manager.kernel.profiles.move_test`). While the table only takes
        slots it stays necessary: yes whenever :meth:`may_fit_before` would say yes."""
        if vector.tobytes() != self.shape_key:
            raise ValueError("a counted table holds VMs of one shape only")
        times, free = self.profile_lists(after)
        return profiles.move_test(times, free, after)
