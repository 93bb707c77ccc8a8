"""Node power states on a count table (``placement = at-start``): reservations that hold
nodes that are off or switching, whose ends move (:class:`CountPowerStates`).

A node that is off with no boot planned holds its VM slots until a boot is needed: its
reservation's end *rolls on* with the clock (:meth:`CountPowerStates.keep_held`) until it is
given a final one (:meth:`CountPowerStates.move_end`). The queries here say when nodes that
are off must boot for the plans the profile holds.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from lease_manager.errors import OvercommitError
from lease_manager.kernel.count_rows import CountRows
from lease_manager.kernel.reservation import Reservation


class CountPowerStates(CountRows):
    """The count table's changes and queries for node power states."""

    def move_end(self, res: Reservation, until: float, *, final: bool = True) -> None:
        """Move the end of ``res``, a reservation holding its nodes since it started, to
        ``until`` (later or earlier, after now): a node power state that lasts longer or ends
        sooner. ``final``: the node is given back at ``until`` (False: the end rolls on with
        the clock, :meth:`extend_group`, and the node stays held until it is moved again)."""
        end = res.end
        if res.id not in self._reservations or math.isinf(end) or math.isinf(until):
            raise ValueError(f"{res!r}: only a finite reservation of the table moves its end")
        if until == end:
            if final and res.id in self._rolling:
                self._rolling.discard(res.id)
                self._push_final(res, until)
            elif not final:
                self._rolling.add(res.id)
            return
        if until <= max(res.start, self.now):
            raise ValueError(f"{res!r}: cannot end at {until}, not after now ({self.now})")
        ks = self._split(min(end, until))
        ke = self._split(max(end, until))
        self._apply(res, ks, ke, -1 if until > end else +1)
        self._ref(until)
        res.end = until
        self._unref(end)
        if final:
            self._rolling.discard(res.id)
            self._push_final(res, until)
        else:
            self._rolling.add(res.id)
        self._changed(min(end, until), max(end, until), until < end)

    def _push_final(self, res: Reservation, until: float) -> None:
        """``res`` ends at ``until`` for good: its node is given back then (entries already
        pushed for that end, by an earlier move to it, still hold)."""
        if self._final_end.get(res.id) == until:
            return
        self._final_end[res.id] = until
        heapq.heappush(self._ends, (until, res.id))
        if res.id in self._held:
            heapq.heappush(self._holding, (until, res.id))

    def keep_held(self, res: Reservation) -> None:
        """``res``, a node power state just added, keeps its nodes whatever its end, until
        :meth:`move_end` gives it a final one (its end rolls on with the clock)."""
        self._rolling.add(res.id)

    def move_group_end(self, group: Sequence[Reservation], until: float, *,
                       final: bool = False, rolling: bool = False) -> None:
        """:meth:`move_end` for every reservation of ``group`` (node power states holding their
        nodes, all ending at one time) at once; by default their end rolls on with the clock
        (``rolling``: it rolled already, for each of them)."""
        if not group:
            return
        end = group[0].end
        if until == end:
            for res in group:
                self.move_end(res, until, final=final)
            return
        if until <= self.now:
            raise ValueError(f"move_group_end: {until} is not after now ({self.now})")
        ks = self._split(min(end, until))
        ke = self._split(max(end, until))
        # (with the list of free nodes, a node power state holds the node's one slot)
        total = (len(group) if self._free_nodes is not None
                 else sum(self.vms(res) for res in group))
        room = self._room
        if until > end:
            if min(room[ks:ke]) < total:
                raise OvercommitError(f"{len(group)} node power states do not fit until "
                                      f"{until}")
            total = -total
        for k in range(ks, ke):
            room[k] += total
        self._arrays = None
        refs = self._refs
        refs[until] = refs.get(until, 0) + len(group)
        if final:   # (_push_final for each, inline)
            final_end, ids, held = self._final_end, self._rolling, self._held
            for res in group:
                res.end = until
                rid = res.id
                ids.discard(rid)
                if final_end.get(rid) != until:
                    final_end[rid] = until
                    heapq.heappush(self._ends, (until, rid))
                    if rid in held:
                        heapq.heappush(self._holding, (until, rid))
        elif rolling:
            for res in group:
                res.end = until
        else:
            ids = self._rolling
            for res in group:
                res.end = until
                ids.add(res.id)
        left = refs[end] - len(group)
        if left > 0:
            refs[end] = left
        else:
            refs[end] = 1
            self._unref(end)
        self._changed(min(end, until), max(end, until), until < end)

    def need_times(self, after: float, count: int, left: int, slots: int = 1) -> list[float]:
        """When ``count`` nodes that are off (of ``slots`` VM slots each), free from ``after``
        on, must be on, the earliest first: the ``j``-th (from 1) is needed from the first
        time at which the fewest free slots since ``after``, less ``left`` (slots of nodes
        left off), is less than ``slots x (count - j + 1)``. Those not needed are left out."""
        times, room = self._t, self._room
        out: list[float] = []
        least = math.inf
        for k in range(self._row(after), len(times)):
            free = room[k] - left
            if free < least:
                least = free
                while len(out) < count and least < slots * (count - len(out)):
                    out.append(max(times[k], after))
                if len(out) == count:
                    break
        return out

    def rolling_ends(self) -> list[float]:
        """The ends of the reservations whose end rolls on with the clock (nodes that are off,
        with no boot), sorted, each as many times as it holds VM slots."""
        reservations = self._reservations
        ends = [reservations[rid] for rid in self._rolling if rid in reservations]
        return sorted(res.end for res in ends for _ in range(self.vms(res)))

    def first_short(self, after: float, slots: int) -> float:
        """The first time from ``after`` on at which fewer than ``slots`` VM slots are free
        (inf: never)."""
        times, room = self._t, self._room
        for k in range(self._row(after), len(times)):
            if room[k] < slots:
                return max(times[k], after)
        return math.inf

    def fits_without(self, count: int, start: float, end: float,
                     freed: Sequence[float] | None = None) -> bool:
        """Do ``count`` VMs fit through ``[start, end)`` without the slots that free up at the
        times ``freed`` (sorted; None: :meth:`rolling_ends`, the nodes that are off with no
        boot, free from when a boot begun now could end)?"""
        if freed is None:
            freed = self.rolling_ends()
        times, room = self._t, self._room
        k0 = self._row(start)
        ke = len(times) if math.isinf(end) else bisect_left(times, end, k0 + 1)
        gone, n = bisect_right(freed, start), len(freed)   # freed[:gone]: free by then
        for k in range(k0, ke):
            t = times[k]
            while gone < n and freed[gone] <= t:
                gone += 1
            if room[k] - gone < count:
                return False
        return True

    def cap_vms(self, most: int) -> None:
        """Hold at most ``most`` VMs at any instant: a power cap that bounds the VMs running
        at once (:mod:`~lease_manager.energy.counted_cap`). Only on an empty table."""
        if self._reservations:
            raise ValueError("a counted table's VM bound is set before anything is placed")
        self.total = min(self.total, most)
        self._room = [self.total] * len(self._room)
        self._arrays = None
