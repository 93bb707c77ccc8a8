"""The slot table's fit queries: where and when VMs fit (:class:`SlotFitting`).

"Does it fit" questions are answered first from the per-shape totals the table keeps (how many
VMs of a shape each row could host on the whole site), and only windows that pass are checked
node by node. :class:`SlotFitting` reads the rows of
:class:`~lease_manager.kernel.slot_rows.SlotRows` and changes nothing;
:class:`~lease_manager.kernel.slottable.SlotTable` is both.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.kernel import profiles
from lease_manager.kernel.reservation import Reservation
from lease_manager.kernel.slot_rows import EPS, MAX_SHAPES, SlotRows, _Shape

if TYPE_CHECKING:
    from lease_manager.kernel.lease import VMRequest

__all__ = ["EPS", "MAX_SHAPES", "SlotFitting"]


class SlotFitting(SlotRows):
    """Where and when VMs fit on the slot table's rows (its queries that fit VMs).

    Per-node VM counts are over the rows' nodes (:attr:`~SlotRows.width`); a sum over the
    site adds the shape's ``tail_total``, what the nodes past them host.
    """

    def _window_fits(self, shape: _Shape, ks: int, ke: int) -> np.ndarray:
        """Per-node VM counts of ``shape`` in rows ``ks:ke`` (cached while the table is unchanged:
        a queue of leases of one shape shares one computation per scheduling decision)."""
        key = shape.vector.tobytes()
        hit = self._window_cache.get(key)
        if hit is not None and hit[0] == self._version and hit[1] <= ks and hit[2] >= ke:
            return hit[3][ks - hit[1]:ke - hit[1]]
        if hit is not None and hit[0] == self._version:   # same table, more rows: take them all
            lo, hi = min(ks, hit[1]), len(self._t)
        else:
            lo, hi = ks, ke
        if hi - lo == 1:   # (often: the row where a lease would start now) a view of its slot
            fits = shape.fits(self._free[self._slot[lo]][None])
        else:
            fits = shape.fits(self._free[self._slots(lo, hi)])
        if len(self._window_cache) > MAX_SHAPES:
            self._window_cache.clear()
        self._window_cache[key] = (self._version, lo, hi, fits)
        return fits[ks - lo:ke - lo]


    def vm_fits(self, vector: np.ndarray, start: float, end: float) -> np.ndarray:
        """How many VMs of shape ``vector`` each node can host all through ``[start, end)``."""
        self._check_known(start)
        if not end > start:
            end = start + EPS
        ks, ke = self._span(start, end)
        shape = self._shape(vector)
        # one row, or free capacity only grows over the window: the first row is the least
        if ke - ks == 1 or not self.starts_within(start, end):
            fits = self._window_fits(shape, ks, ks + 1)[0]
        else:
            fits = self._least_fits(shape, ks, ke)[1].min(axis=0)
        if self._width == self._n_nodes:
            return fits
        return self._every_node(fits, shape.fits(self.capacity[self._width:]))


    def _least_fits(self, shape: _Shape, ks: int, ke: int) -> tuple[list[int], np.ndarray]:
        """Row ``ks`` and the later rows of ``ks:ke`` that begin at a reservation's start, and
        the per-node VM counts of ``shape`` in them. Only there can some node's free capacity
        fall (between them it only grows), so what a node can host all through rows ``ks:j`` is
        the least at those of them before ``j``."""
        times, slot = self._t, self._slot
        rows = [ks]
        if ke - ks > 1:
            for t in self._start_times.irange(times[ks], times[ke - 1], inclusive=(False, True)):
                rows.append(bisect_left(times, t, ks + 1, ke))   # (every start is a breakpoint)
        return rows, shape.fits(self._free[np.array([slot[k] for k in rows], dtype=np.intp)])


    # The hottest query of the replay: its closure shares precomputed rows (splitting the
    # candidates' loop would cost calls per candidate start; the set-up is split off).
    def iter_fit_starts(self, demand: VMRequest, duration: float, after: float, *,
                        not_after: float | None = None,
                        site_demand: np.ndarray | None = None,
                        own: Reservation | None = None,
                        released: Sequence[Reservation] = ()) -> Iterator[float]:
        """Candidate start times ``s >= after`` (earliest first) at which ``demand`` fits.

        At each candidate, every group of identical VMs fits on the nodes' free capacity all
        through ``[s, s + duration)`` and the site-wide resources cover ``site_demand``. For a
        lease of identical VMs the test is exact (the mapper will succeed); with several groups
        it is necessary but not sufficient, and the caller tries the mapper at each candidate.
        Candidates are ``after`` and the later breakpoints where some capacity may grow. ``own``
        (the lease's reservation) and ``released`` (reservations that would be given up, e.g.
        by preempted leases) count as free from ``after`` on."""
        if not_after is not None and not_after < after:
            return
        times = self._t
        k0 = self._row(after)
        infinite = math.isinf(duration)
        k_end = (len(times) if not_after is None or infinite   # (rows past the last window)
                 else bisect_left(times, not_after + duration, k0 + 1))
        k_rows = k_end - k0
        slots = self._slots(k0, k_end)
        groups = [(self._shape(v), c) for c, v in zip(demand.counts, demand.vectors)]
        freed = self._freed_rows(own, released, after, k0, k_end)
        # prev_blocked[i]: the last blocked row at or before row i (-1: none)
        prev_blocked_rows = self._last_blocked(groups, slots, freed, bool(released), k0, k_end,
                                               site_demand)
        prev_blocked = prev_blocked_rows.tolist()
        single = len(groups) == 1
        per_row: list[np.ndarray] = []   # per group: VMs per node and row, rows k0:k_end
        needs = self._row_needs(groups, demand.counts)

        def window_fits(i: int, j: int) -> bool:
            if prev_blocked[j - 1] >= i:
                return False
            if j - i == 1 and single:
                return True   # one row: the totals test is already exact
            if not per_row:
                per_row.extend(self._freed_window_fits(shape, k0, k_end, slots, freed,
                                                       bool(released))
                               for shape, _ in groups)
            return all(np.add.reduce(np.minimum.reduce(fits[i:j])) >= need
                       for fits, need in zip(per_row, needs))

        j = k_rows if infinite else bisect_left(times, after + duration, k0 + 1, k_end) - k0
        if window_fits(0, j):
            yield after
        if not_after is not None and not_after <= after:
            return
        last = times[k_end - 1] if not_after is None else min(not_after, times[k_end - 1])
        open_rows, ends = self._open_windows(k0, k_end, duration, prev_blocked_rows)
        grow_times = self._grow_times
        for i in open_rows:
            s = times[k0 + i]
            if s > last:
                return
            if s > after and s in grow_times:
                if window_fits(i, int(ends[i])):
                    yield s

    def _row_needs(self, groups: Sequence[tuple[_Shape, int]], counts: Sequence[int]
                   ) -> Sequence[float]:
        """Per group, the VMs the rows' nodes must host: all of them, less what the nodes
        past the rows' width host (``tail_total``) when the rows do not hold every node."""
        if self._width < self._n_nodes:
            return [count - shape.tail_total for shape, count in groups]
        return counts

    def _open_windows(self, k0: int, k_end: int, duration: float,
                      prev_blocked: np.ndarray) -> tuple[list[int], np.ndarray]:
        """The rows ``i`` of ``k0:k_end`` (relative to ``k0``) where a window of ``duration``
        holds no blocked row (``prev_blocked[i]``: the last blocked row at or before ``i``),
        and for every row the row where its window ends.

        The later candidates of :meth:`iter_fit_starts` are grow times, every one a
        breakpoint (the start of a row). A window that holds a blocked row cannot fit: those
        are passed over all at once, not one by one (re-evaluation asks about each planned
        lease across most of the plan: O(n) grow times each, O(n^2) in all)."""
        k_rows = k_end - k0
        rows = np.arange(k_rows)
        if math.isinf(duration):
            ends = np.full(k_rows, k_rows)
        else:
            starts = np.array(self._t[k0:k_end])
            ends = np.maximum(np.searchsorted(starts, starts + duration), rows + 1)
        return np.flatnonzero(prev_blocked[ends - 1] < rows).tolist(), ends

    def _freed_rows(self, own: Reservation | None, released: Sequence[Reservation],
                    after: float, k0: int, k_end: int) -> list[tuple[Reservation, int, int]]:
        """The reservations counted as free from ``after`` on (``own`` and ``released``) that
        the table holds, each with its first and end row within ``k0:k_end``, relative to
        ``k0``."""
        freed = []
        for res in ([own] if own is not None else []) + list(released):
            if res.id in self._reservations and res.end > after:
                lo, hi = self._span(max(res.start, after), res.end)
                lo, hi = max(lo, k0) - k0, min(hi, k_end) - k0
                if hi > lo:
                    freed.append((res, lo, hi))
        return freed

    def _last_blocked(self, groups: list[tuple[_Shape, int]], slots: np.ndarray,
                      freed: list[tuple[Reservation, int, int]], released: bool, k0: int,
                      k_end: int, site_demand: np.ndarray | None) -> np.ndarray:
        """For each row of ``k0:k_end`` (``slots``), relative to ``k0``: the last *blocked* row
        at or before it (-1: none). A row is blocked if some group of ``groups`` (shape,
        count) is more than the row's totals, with the ``freed`` reservations given back, or
        the site-wide resources are less than ``site_demand``."""
        blocked = None
        for shape, count in groups:
            totals = self._row_totals(shape)[k0:k_end]
            if freed:
                totals = totals.copy()
                key = shape.vector.tobytes()
                for res, lo, hi in freed:
                    if res.vm_shape == key and not released:
                        totals[lo:hi] += len(res.vm_nodes)
                    else:   # several freed reservations may share nodes: recount those rows
                        totals[lo:hi] = self._freed_totals(shape, slots, freed, lo, hi)
            b = totals < count
            blocked = b if blocked is None else blocked | b
        assert blocked is not None   # a demand has at least one VM shape
        if site_demand is not None and len(self.site_resources) > 0:
            site = self._site[slots]
            for res, lo, hi in freed:
                if res.site_amount is not None:
                    site[lo:hi] += res.site_amount
            blocked |= (site < site_demand - EPS).any(axis=1)
        return np.maximum.accumulate(np.where(blocked, np.arange(k_end - k0), -1))

    def fits_at(self, demand: VMRequest, duration: float, t: float) -> bool:
        """Does ``demand`` fit all through ``[t, t + duration)``? (Exact for identical VMs;
        necessary only for several groups, like :meth:`iter_fit_starts`.)

        Answered in O(1) from the totals when the site is too full at ``t``, and otherwise from
        per-shape cumulative minima shared by every question about the same instant.
        """
        k0 = self._row(t)
        slot = self._slot[k0]
        times = self._t
        j = len(times) if math.isinf(duration) else bisect_left(times, t + duration, k0 + 1)
        one_row = None   # (asked once some group passes the totals)
        for count, vector in zip(demand.counts, demand.vectors):
            shape = self._shape(vector)
            if shape.totals[slot] < count:
                return False
            if one_row is None:   # the window is row k0, or free capacity only grows after t
                # (no reservation starts): the first row is the least
                one_row = j - k0 == 1 or not self.starts_within(t, t + duration)
            if one_row:   # (np.add.reduce is what .sum() calls, without its wrapper)
                if np.add.reduce(self._window_fits(shape, k0, k0 + 1)[0]) < \
                        count - shape.tail_total:
                    return False
            elif self._cum_fits(shape, k0)[j - k0 - 1] < count:
                return False
        return True


    def _cum_fits(self, shape: _Shape, k0: int) -> list[float]:
        """For every ``j > k0``, at ``j - k0 - 1``: how many VMs of ``shape`` the site hosts
        all through rows ``k0:j`` (shared by every question about row ``k0`` until the table
        changes)."""
        key = (shape.vector.tobytes(), k0)
        hit = self._cum_cache.get(key)
        if hit is None or hit[0] != self._version:
            n = len(self._t)
            rows, fits = self._least_fits(shape, k0, n)   # (a node's least is at one of these)
            least = np.minimum.accumulate(fits, axis=0).sum(axis=1)
            if shape.tail_total:
                least += shape.tail_total
            cum: list[float] = []
            for value, first, stop in zip(least.tolist(), rows, rows[1:] + [n]):
                cum += [value] * (stop - first)
            if len(self._cum_cache) > MAX_SHAPES:
                self._cum_cache.clear()
            self._cum_cache[key] = hit = (self._version, cum)
        return hit[1]


    def _freed_window_fits(self, shape: _Shape, k0: int, k_end: int, slots: np.ndarray,
                           freed: list, released: bool) -> np.ndarray:
        """Per-node VM counts of ``shape`` in rows ``k0:k_end`` (``slots``) with the ``freed``
        reservations (rows relative to ``k0``) given back."""
        if not freed:
            return self._window_fits(shape, k0, k_end)
        key = shape.vector.tobytes()
        if not released and all(res.vm_shape == key for res, _, _ in freed):
            # c more VMs of a shape on a node free up exactly c places for it there (as in the
            # totals); this reuses the per-node counts shared by every lease of the shape
            fits = self._window_fits(shape, k0, k_end).copy()
            for res, lo, hi in freed:
                fits[lo:hi] += np.bincount(res.vm_nodes, minlength=fits.shape[1])
            return fits
        free = self._free[slots]
        for res, lo, hi in freed:
            free[lo:hi, res.nodes] += res.amounts
        return shape.fits(free)


    def _freed_totals(self, shape: _Shape, slots: np.ndarray, freed: list, lo: int,
                      hi: int) -> np.ndarray:
        """Totals of rows ``lo:hi`` (of ``slots``) with the ``freed`` reservations given back."""
        free = self._free[slots[lo:hi]]
        for res, a, b in freed:
            a, b = max(a, lo), min(b, hi)
            if b > a:
                free[a - lo:b - lo, res.nodes] += res.amounts
        totals = shape.fits(free).sum(axis=1)
        if shape.tail_total:
            totals += shape.tail_total
        return totals


    def earliest_fit_on(self, nodes: np.ndarray, amounts: np.ndarray, duration: float,
                        after: float, not_after: float | None = None) -> float | None:
        """The earliest start ``s >= after`` (and ``<= not_after``) at which ``amounts[i]`` is
        free on ``nodes[i]`` for every ``i`` all through ``[s, s + duration)`` (a resumption on
        the nodes holding a lease's memory images, for instance)."""
        if not_after is not None and not_after < after:
            return None
        candidates = [after]
        hi = self._t[-1] if not_after is None else not_after
        candidates += list(self._grow_times.irange(after, hi, inclusive=(False, True)))
        for s in candidates:
            if (self.min_free(s, s + duration)[nodes] - amounts >= -EPS).all():
                return s
        return None


    def may_fit_before(self, demand: VMRequest, duration: float, after: float,
                       before: float) -> bool:
        """Could ``demand``, now reserved from ``before`` on, start in ``[after, before)`` if
        that reservation were given up?

        A cheap necessary test (the rows' totals only): a window starting before ``before`` ends
        inside the lease's own reservation, where giving it up makes room for it again, so only
        the rows in ``[after, before)`` can stop it. False means it certainly cannot move.
        """
        times = self._t
        k0 = self._row(after)
        kb = bisect_left(times, before, k0 + 1)
        if kb <= k0:
            return False
        if len(demand.counts) == 1:   # (most often): the answer is often plain from two numbers
            count = demand.counts[0]
            totals = self._row_totals(self._shape(demand.vectors[0]))
            if not totals[kb - 1] < count:   # the last row is not blocked
                return True
            totals = totals[k0:kb]
            if np.maximum.reduce(totals) < count:   # every row is blocked
                return False
            blocked = totals < count
        else:
            blocked = self._blocked_rows(demand, k0, kb)
        return profiles.runs_fit(times, k0, blocked, after, duration)


    def _blocked_rows(self, demand: VMRequest, k0: int, kb: int) -> np.ndarray:
        """For rows ``k0:kb``: is some group of ``demand`` more than the row's totals?"""
        blocked = None
        for count, vector in zip(demand.counts, demand.vectors):
            b = self._row_totals(self._shape(vector))[k0:kb] < count
            blocked = b if blocked is None else blocked | b
        assert blocked is not None   # a demand has at least one VM shape
        return blocked


    def move_test(self, vector: np.ndarray, after: float
                  ) -> Callable[[int, float, float], bool]:
        """:meth:`may_fit_before`'s test, for one reservation of VM shape ``vector`` at a time,
        on the rows' totals from the row holding ``after`` on, as they are now
        (:func:`~lease_manager.kernel.profiles.move_test`). While the table only takes slots it
        stays necessary: yes whenever :meth:`may_fit_before` would say yes."""
        k0 = self._row(after)
        totals = self._row_totals(self._shape(vector))[k0:]
        return profiles.move_test(self._t[k0:], totals.tolist(), after)


    def earlier_start(self, demand: VMRequest, duration: float, after: float,
                      own: Reservation) -> float | None:
        """The earliest start in ``[after, own.start)`` at which ``demand`` fits for
        ``duration`` with ``own`` (its reservation now) given up, or ``None``:
        :meth:`may_fit_before`, then :meth:`earliest_fit`."""
        if not self.may_fit_before(demand, duration, after, own.start):
            return None
        start = self.earliest_fit(demand, duration, after, not_after=own.start, own=own)
        return start if start is not None and start < own.start else None


    def earliest_fit(self, demand: VMRequest, duration: float, after: float, *,
                     not_after: float | None = None, site_demand: np.ndarray | None = None,
                     own: Reservation | None = None,
                     released: Sequence[Reservation] = ()) -> float | None:
        """The first candidate of :meth:`iter_fit_starts`, or ``None`` if there is none."""
        return next(self.iter_fit_starts(demand, duration, after, not_after=not_after,
                                         site_demand=site_demand, own=own,
                                         released=released), None)
