"""A slot table that counts VMs: future reservations hold a number of VMs, not nodes.

With ``[scheduling] placement = at-start`` every lease of a site has one VM shape, and a
reservation gets its nodes only when it starts (Slurm's and Batsim's way, where Haizea maps a
reservation to nodes when it plans it). Then the site is a pool of VM slots (a node hosts
``floor(capacity / shape)`` of them): running leases hold slots on their nodes until they end,
and future reservations hold a count of slots over their interval. That count is exact: if at
every instant the slots the reservations need are free in number, each one finds free nodes
when it starts, since nodes are only ever released before then (a running lease only ends,
and a reservation starting earlier took its nodes first). So "when does it fit" is answered
from one integer profile (free slots over time) and "where" only at the start, from what each
node has free now: no array over nodes is kept for the future.

The table answers the queries the scheduler and host selection need: those of
:class:`~lease_manager.kernel.table_protocol.Table`, which the slot table answers too; per-node
questions about a later instant are asked of a planned table only
(:class:`~lease_manager.kernel.table_protocol.PlannedTable`). Its rows and nodes are
:mod:`~lease_manager.kernel.count_rows`, its fit queries :mod:`~lease_manager.kernel.count_fitting`
and the node power states' part :mod:`~lease_manager.kernel.count_power`.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.errors import OvercommitError
from lease_manager.kernel.count_fitting import FEW_ROWS, CountFitting
from lease_manager.kernel.count_power import CountPowerStates
from lease_manager.kernel.count_rows import FEW_NODES, _take_nodes, slots_per_node
from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseType
from lease_manager.kernel.reservation import Reservation, bad_interval
from lease_manager.kernel.table_view import SlotTableView

if TYPE_CHECKING:
    from lease_manager.kernel.lease import VMRequest
    from lease_manager.kernel.mapper import Placement
    from lease_manager.kernel.table_protocol import NodePlan

__all__ = ["FEW_NODES", "FEW_ROWS", "CountTable", "_take_nodes", "slots_per_node"]

_NO_NODES = np.empty(0, dtype=np.intp)
LT = members(LeaseType)


class CountTable(CountFitting, CountPowerStates):
    """Reservations of one site over time, counted in VMs of the site's one shape.

    ``now`` is the engine's clock (:meth:`set_now` at the start of every step): what each node
    has free is kept for that instant only. Reservations that start later are *pending*
    (``res.pending`` VMs, no nodes) until :meth:`pin` gives them nodes when they start.
    """

    #: the scheduler places future reservations as counts on this table
    counted = True
    site_resources: tuple[str, ...] = ()
    touched = None
    site_draw = None

    def add(self, res: Reservation) -> Reservation:
        """Hold ``res``'s VMs; a reservation with nodes must start now (it runs)."""
        if not res.end > res.start or res.start < self._t[0]:
            raise ValueError(bad_interval(res, self._t[0]))
        if res.vm_shape != self.shape_key:
            raise ValueError(f"{res!r}: a counted table holds VMs of one shape only")
        pinned = not res.pending
        if pinned and res.start > self.now:
            raise ValueError(f"{res!r}: a counted table pins nodes only when a lease starts")
        if pinned:
            self._hold(res)   # first: it raises, changing nothing, if the nodes are full
        start, end = res.start, res.end
        finite = not math.isinf(end)
        refs = self._refs   # (_ref written out, for the start and the end)
        ks = self._split(start)
        refs[start] = refs.get(start, 0) + 1
        if finite:
            ke = self._split(end)
            refs[end] = refs.get(end, 0) + 1
        else:
            ke = len(self._t)
        try:
            self._apply(res, ks, ke, -1)
        except OvercommitError:
            if finite:
                self._unref(res.end, True)
            self._unref(res.start, False)
            if pinned:
                self._release(res)
            raise
        self._reservations[res.id] = res
        if finite:
            heapq.heappush(self._ends, (res.end, res.id))
        self._changed(res.start, res.end, False)
        return res

    def pin(self, res: Reservation, placement: Placement) -> None:
        """A pending reservation starts now: it takes the nodes of ``placement``."""
        if res.id not in self._reservations or not res.pending:
            raise KeyError(f"{res!r} is not a pending reservation of the table")
        if len(placement.vm_nodes) != res.pending:
            raise ValueError(f"{res!r}: a placement of {len(placement.vm_nodes)} VMs for "
                             f"{res.pending}")
        res.nodes, res.amounts, res.vm_nodes = (placement.nodes, placement.amounts,
                                                placement.vm_nodes)
        pending, res.pending = res.pending, 0
        try:
            self._hold(res)
        except OvercommitError:
            res.nodes, res.amounts, res.vm_nodes, res.pending = (_NO_NODES, res.amounts[:0],
                                                                 (), pending)
            raise

    def remove(self, res: Reservation) -> None:
        if self._reservations.pop(res.id, None) is None:
            raise KeyError(f"{res!r} is not in the slot table")
        start = max(res.start, self._t[0])
        if res.end > start:
            self._apply(res, *self._span(start, res.end), +1)
        if not math.isinf(res.end):
            self._unref(res.end, True)
        self._unref(res.start, False)
        self._release(res)
        self._changed(start, res.end, True)

    def _truncated(self, res: Reservation, old_end: float) -> None:
        new_end = res.end
        if res.id in self._held:
            if new_end <= self.now:
                self._release(res)
            else:
                heapq.heappush(self._holding, (new_end, res.id))
        self._changed(new_end, old_end, True)

    def move(self, old: Reservation, new: Reservation) -> None:
        """Put ``new`` in the place of ``old`` (a plan moved): the table ends as :meth:`remove`
        of ``old`` then :meth:`add` of ``new`` leave it (rows, breakpoints, ends and what
        watches record); when both are pending, the rows both cover are left as they are.
        OvercommitError, changing nothing, if ``new`` does not fit."""
        count = old.pending
        t0 = self._t[0]
        if (self._reservations.get(old.id) is not old or not count or new.pending != count
                or new.vm_shape != self.shape_key or not new.end > new.start
                or min(old.start, new.start) < t0 or math.isinf(old.end)
                or math.isinf(new.end)):
            self.remove(old)   # (another case: the two steps)
            try:
                self.add(new)
            except (OvercommitError, ValueError):
                self.add(old)
                raise
            return
        ks = self._split(new.start)
        self._ref(new.start, False)
        ke = self._split(new.end)
        self._ref(new.end, True)
        times, room = self._t, self._room
        old_ks = bisect_left(times, old.start)   # (old's times are breakpoints)
        old_ke = bisect_left(times, old.end, old_ks)
        lo, hi = max(ks, old_ks), min(ke, old_ke)   # the rows both cover (none: lo >= hi)
        takes: tuple[tuple[int, int], ...]
        gives: tuple[tuple[int, int], ...]
        if lo >= hi:
            takes, gives = ((ks, ke),), ((old_ks, old_ke),)
        else:
            takes, gives = ((ks, lo), (hi, ke)), ((old_ks, lo), (hi, old_ke))
        if any(b > a and min(room[a:b]) < count for a, b in takes):
            self._unref(new.end, True)
            self._unref(new.start, False)
            raise OvercommitError(f"{new!r} does not fit: the site has too few free VM slots")
        for a, b in takes:
            for k in range(a, b):
                room[k] -= count
        for a, b in gives:
            for k in range(a, b):
                room[k] += count
        self._arrays = None
        del self._reservations[old.id]
        self._unref(old.end, True)
        self._unref(old.start, False)
        self._release(old)
        self._changed(old.start, old.end, True)
        self._reservations[new.id] = new
        heapq.heappush(self._ends, (new.end, new.id))
        self._changed(new.start, new.end, False)

    def set_now(self, now: float) -> None:
        """The engine's clock moved to ``now``: nodes of reservations ended by then are free."""
        self.now = now
        holding = self._holding
        while holding and holding[0][0] <= now:
            end, rid = heapq.heappop(holding)
            res = self._held.get(rid)
            if res is not None and res.end == end and rid not in self._rolling:
                self._release(res)

    def advance(self, now: float) -> list[Reservation]:
        """Forget what lies before ``now``; return the reservations that ended by then."""
        clock = now if now > self.now else self.now   # (max(now, self.now))
        holding = self._holding
        if holding and holding[0][0] <= clock:
            self.set_now(clock)
        else:
            self.now = clock   # (set_now, with nothing to give back)
        ended: list[Reservation] = []
        ends = self._ends
        if ends and ends[0][0] <= now:
            reservations, rolling = self._reservations, self._rolling
            while ends and ends[0][0] <= now:
                end, rid = heapq.heappop(ends)
                res = reservations.get(rid)
                if res is None or res.end != end or rid in rolling:
                    continue
                del reservations[rid]
                self._final_end.pop(rid, None)
                ended.append(res)
        times = self._t
        if now < times[0]:
            self._row(now)   # (raises: before the horizon)
        k = bisect_right(times, now) - 1
        if k > 0:
            refs = self._refs
            for t in times[1:k + 1]:
                refs.pop(t, None)
            del times[:k]
            del self._room[:k]
            self._arrays = None
            self._version += 1
        return ended

    def refuses(self, lease: Lease) -> str:
        """Why the table cannot take ``lease`` ('' if it can)."""
        if lease.vms.shape_key != self.shape_key:
            return ("its VMs are not of the site's one VM shape, which placement = at-start "
                    "needs")
        return ""

    def _now_only(self, t: float) -> None:
        if t > self.now:
            raise NotImplementedError("with placement = at-start, what each node has free is "
                                      "known for now only")

    def vm_fits(self, vector: np.ndarray, start: float, end: float) -> np.ndarray:
        if start > self.now:
            self._now_only(start)
        if vector.tobytes() != self.shape_key:
            raise ValueError("a counted table holds VMs of one shape only")
        return self._slots_free().astype(float)

    def free_at(self, t: float) -> np.ndarray:
        self._now_only(t)
        return self.capacity - (self.slots - self._slots_free())[:, None] * self.vector

    def min_free(self, start: float, end: float) -> np.ndarray:
        return self.free_at(start)

    def lease_counts_at(self, t: float) -> np.ndarray:
        if t > self.now:
            self._now_only(t)
        if self._free_nodes is None:
            return self._nres_now.copy()
        return (self.slots - self._slots_free()).astype(np.int32)

    def capacity_lasts_until(self, t: float, until: float = math.inf) -> np.ndarray:
        """What a node has free now it keeps: nothing later is placed on nodes until then."""
        self._now_only(t)
        return np.full(len(self.slots), math.inf)

    def reservations_at(self, node: int, t: float) -> list[Reservation]:
        return [r for r in self._held.values()
                if r.start <= t < r.end and node in r.nodes.tolist()]

    def reservations_between(self, start: float, end: float,
                             node: int | None = None) -> list[Reservation]:
        pool = self._reservations.values()
        return sorted((r for r in pool if r.start < end and r.end > start
                       and (node is None or node in r.nodes.tolist())),
                      key=lambda r: (r.start, r.id))

    def change_points(self, after: float, until: float = math.inf) -> list[float]:
        """Times in ``(after, until)`` at which the free VM slots change."""
        lo = bisect_right(self._t, after)
        return self._t[lo:bisect_left(self._t, until, lo)]

    def site_free_at(self, t: float) -> np.ndarray:
        return np.zeros(0)   # no site-wide resources (no power cap)

    def site_capacity_at(self, t: float) -> np.ndarray:
        return np.zeros(0)

    def holds_counts_at(self, start: float) -> bool:
        """Whether a reservation starting at ``start`` holds a count of VMs and no nodes
        (:meth:`pin` gives it nodes when it starts): if it starts after now."""
        return start > self.now

    def counting(self) -> CountTable:
        """The table as one that counts VMs (:class:`CountingTable`: its profile of free VM
        slots, its free nodes, pinning, node power states): itself."""
        return self

    def free_node_list(self, demand: VMRequest) -> CountTable | None:
        """The table's list of nodes with their one slot free now (:class:`FreeNodes`), if
        it keeps one (every node hosts one VM at most) and ``demand`` is of its shape."""
        if self._free_nodes is None or demand.shape_key != self.shape_key:
            return None
        return self

    def planned(self) -> NodePlan | None:
        """The table's per-node plan queries: none (nodes have no future plan here)."""
        return None

    def view(self) -> SlotTableView:
        """The table's queries without its changes: what policies and plugins get."""
        return SlotTableView(self)

    def check(self) -> None:
        """Recompute the profile and the nodes' use from the reservations (tests)."""
        n = len(self._t)
        if any(a >= b for a, b in zip(self._t, self._t[1:])):
            raise AssertionError("count table breakpoints are not increasing")
        free = np.full(n, self.total, dtype=np.int64)
        for res in self._reservations.values():
            ks, ke = self._span(max(res.start, self._t[0]), res.end)
            free[ks:ke] -= self.vms(res)
        if len(self._room) != n or free.tolist() != self._room:
            raise AssertionError("count table profile differs from its reservations")
        if self._arrays is not None and (self._arrays[0].tolist() != self._t
                                         or self._arrays[1].tolist() != self._room):
            raise AssertionError("count table's profile arrays differ from its lists")
        if (free < 0).any():
            raise AssertionError("count table is over-committed")
        used = np.zeros(len(self.slots), dtype=np.int64)
        for res in self._held.values():
            np.add.at(used, np.asarray(res.vm_nodes, dtype=np.intp), 1)
        if not (self.slots - used == self._slots_free()).all():
            raise AssertionError("count table's nodes differ from the reservations holding them")
        listed = self._free_nodes
        if listed is not None and (any(a >= b for a, b in zip(listed, listed[1:]))
                                   or (used > 1).any() or listed[-1:] >= [self._tail]):
            raise AssertionError("count table's free nodes are not a list of distinct nodes "
                                 "in order, or a node holds more than one VM")
