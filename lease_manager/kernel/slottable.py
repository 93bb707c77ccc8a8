"""The slot table: what every node (and the site) has free, over time.

The table is an *availability profile*: sorted breakpoints ``t[0] < t[1] < ...`` and, for the
row ``k`` that spans ``[t[k], t[k+1])`` (the last row runs to infinity), the free capacity of
every node (``free[k, node, resource]``), the number of reservations on every node and the free
amount of every site-wide resource (power, for instance). Reservations are half-open intervals
``[start, end)`` on specific nodes.

The rows and their bookkeeping are :mod:`~lease_manager.kernel.slot_rows` (a pool of slots,
and per-VM-shape totals); where VMs fit is :mod:`~lease_manager.kernel.fitting`; this module
changes the rows (reservations and site capacities) and answers the per-node queries. A
breakpoint exists only while a reservation starts or ends there or a site capacity changes
there, and :meth:`SlotTable.advance` forgets the past, so the table's size follows the number
of current and future reservations, not the length of the trace.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.errors import OvercommitError
from lease_manager.kernel.fitting import SlotFitting
from lease_manager.kernel.reservation import Reservation, ReservationKind, bad_interval
from lease_manager.kernel.slot_rows import EPS, MAX_SHAPES, NodeSink
from lease_manager.kernel.table_rows import ChangeWatch
from lease_manager.kernel.table_view import SlotTableView

if TYPE_CHECKING:
    from lease_manager.kernel.lease import VMRequest
    from lease_manager.kernel.table_protocol import CountingTable, FreeNodes

__all__ = ["EPS", "MAX_SHAPES", "ChangeWatch", "NodeSink", "Reservation", "ReservationKind",
           "SlotTable", "SlotTableView"]


class SlotTable(SlotFitting):
    """Reservations of one site over time, with the queries schedulers and policies need.

    It satisfies :class:`~lease_manager.kernel.table_protocol.PlannedTable`: the queries of
    every table (:class:`~lease_manager.kernel.table_protocol.TableQueries`, what policies
    and plugins see through :meth:`view`), a node's future plan (:meth:`next_start_on`,
    :meth:`change_points` on a node, :meth:`earliest_fit_on`, :meth:`site_room`), and the
    changes :meth:`add`, :meth:`remove`, :meth:`truncate`, :meth:`move`, :meth:`extend`,
    :meth:`extend_all`, :meth:`add_site_resource`, :meth:`set_site_capacity`,
    :meth:`advance`. Where VMs fit is :class:`~lease_manager.kernel.fitting.SlotFitting`.
    """

    #: the scheduler maps reservations to nodes when it plans them (a
    #: :class:`~lease_manager.kernel.count_table.CountTable` counts them instead)
    counted = False

    # ----------------------------------------------------------------------------- changes
    def _change_rows(self, ks: int, ke: int) -> tuple[int | np.ndarray, int | np.ndarray]:
        """The slots of rows ``ks:ke``, and their index against nodes: one slot for one row
        (about 40% of changes), not a grid of row and node indices."""
        if ke - ks == 1:
            slot = self._slot[ks]
            return slot, slot
        slots = self._slots(ks, ke)
        return slots, slots[:, None]

    def _apply(self, res: Reservation, ks: int, ke: int, sign: int) -> None:
        """Take (``sign=-1``) or give back (``+1``) ``res``'s resources in rows ``ks:ke``."""
        if sign < 0 and self._width < self._n_nodes:
            top = int(np.maximum.reduce(res.nodes, initial=-1)) + 1
            if top > self._width:
                self._widen(top)
        rows, by_row = self._change_rows(ks, ke)
        cells = (by_row, res.nodes)
        before = self._free[cells]
        after = before + sign * res.amounts
        # (the least of them and 0, NaNs left out: the same test, with one call)
        if sign < 0 and np.fmin.reduce(after, axis=None, initial=0.0) < -EPS:
            raise OvercommitError(f"{res!r} does not fit: it would over-commit a node")
        site = None
        if res.site_amount is not None and len(self.site_resources):
            site = self._site[rows] + sign * res.site_amount
            if sign < 0 and (site < -EPS).any():
                raise OvercommitError(f"{res!r} does not fit: it would over-commit the site")
        self._free[cells] = after
        self._nres[cells] -= sign
        if site is not None:
            self._site[rows] = site
        for key, shape in self._shapes.items():
            if key == res.vm_shape:   # c more VMs of a shape free up exactly c places for it
                shape.totals[rows] += sign * len(res.vm_nodes)
            else:
                shape.totals[rows] += (shape.fits(after) - shape.fits(before)).sum(axis=-1)
        self._version += 1
        if self._watches:
            hi = self._t[ke] if ke < len(self._t) else math.inf
            for watch in self._watches:
                watch.record(self._t[ks], hi, sign > 0)

    def _all_changed(self) -> None:
        for watch in self._watches:
            watch.record(-math.inf, math.inf, True)

    def add(self, res: Reservation) -> Reservation:
        """Hold ``res``'s resources; raise :class:`OvercommitError` if they are not free."""
        if not res.end > res.start or res.start < self._t[0]:
            raise ValueError(bad_interval(res, self._t[0]))
        if res.site_amount is None and self.site_draw is not None:
            res.site_amount = self.site_draw(res)
        finite = not math.isinf(res.end)
        ks = self._split(res.start)
        self._ref(res.start, False)
        if finite:
            ke = self._split(res.end)
            self._ref(res.end, True)
        else:
            ke = len(self._t)
        try:
            self._apply(res, ks, ke, -1)
        except OvercommitError:
            self._unref(res.start, False)
            if finite:
                self._unref(res.end, True)
            raise
        self._reservations[res.id] = res
        for node in res.nodes.tolist():
            self._by_node.setdefault(node, {})[res.id] = res
        if self.touched is not None:
            self.touched.update(res.nodes.tolist())
        if finite:
            heapq.heappush(self._ends, (res.end, res.id))
        return res

    def remove(self, res: Reservation) -> None:
        """Cancel ``res`` entirely (use :meth:`truncate` for one that has started)."""
        if self._reservations.pop(res.id, None) is None:
            raise KeyError(f"{res!r} is not in the slot table")
        ks, ke = self._span(res.start, res.end)
        self._apply(res, ks, ke, +1)
        for node in res.nodes.tolist():
            self._unlist(node, res.id)
        if not math.isinf(res.end):
            self._unref(res.end, True)
        self._unref(res.start, False)
        if self.touched is not None:
            self.touched.update(res.nodes.tolist())

    def _truncated(self, res: Reservation, old_end: float) -> None:
        if self.touched is not None:
            self.touched.update(res.nodes.tolist())

    def extend(self, res: Reservation, new_end: float) -> None:
        """Make ``res`` (finite, held) last until ``new_end`` instead; raise
        :class:`OvercommitError`, changing nothing, if the extra time is not free."""
        self.extend_all([res], new_end)

    def extend_all(self, group: Sequence[Reservation], new_end: float) -> None:
        """:meth:`extend` reservations on distinct nodes that all end at one time, at the cost
        of one (node power states extend many reservations at every step)."""
        if not group:
            return
        old_end = group[0].end
        if new_end <= old_end:
            return
        for res in group:
            if res.id not in self._reservations:
                raise KeyError(f"{res!r} is not in the slot table")
            if res.end != old_end:
                raise ValueError("extend_all: the reservations must end together")
        if math.isinf(old_end):
            raise ValueError(f"{group[0]!r} never ends: it cannot be extended")
        nodes = np.concatenate([r.nodes for r in group])
        if len(np.unique(nodes)) != len(nodes):
            raise ValueError("extend_all: the reservations must be on distinct nodes")
        site = [r.site_amount for r in group if r.site_amount is not None]
        together = res if len(group) == 1 else Reservation(
            None, old_end, new_end, nodes, np.concatenate([r.amounts for r in group]),
            np.sum(site, axis=0) if site else None, id=0)
        finite = not math.isinf(new_end)
        ks = self._split(old_end)
        ke = self._split(new_end) if finite else len(self._t)
        if finite:
            self._ref(new_end, True, len(group))
        try:
            self._apply(together, ks, ke, -1)
        except OvercommitError:
            if finite:
                self._unref(new_end, True, len(group))
            raise
        for res in group:
            res.end = new_end
            if finite:
                heapq.heappush(self._ends, (new_end, res.id))
        self._unref(old_end, True, len(group))
        if self.touched is not None:
            self.touched.update(nodes.tolist())

    def add_site_resource(self, name: str, capacity: float) -> int:
        """A new site-wide resource ``name`` (power, for instance) of constant ``capacity``
        (see :meth:`set_site_capacity`); only before any reservation draws from the site.
        Returns its index in :attr:`site_resources`."""
        if name in self.site_resources:
            raise ValueError(f"the site already has a resource {name!r}")
        if any(r.site_amount is not None for r in self._reservations.values()):
            raise ValueError("site-wide resources must be added before reservations draw any")
        self.site_resources += (name,)
        column = np.full((self._site.shape[0], 1), float(capacity))
        self._site = np.concatenate([self._site, column], axis=1)
        self._site_cap = np.concatenate([self._site_cap, column.copy()], axis=1)
        self._version += 1
        self._all_changed()
        return len(self.site_resources) - 1

    def set_site_capacity(self, name: str, steps: Sequence[tuple[float, float]]) -> None:
        """Make site-wide resource ``name`` vary: ``steps`` are ``(from_time, capacity)`` pairs.

        Each capacity holds from its time until the next step's time (the last one for ever).
        Raises :class:`OvercommitError`, changing nothing, if reservations already hold more
        than a new capacity.
        """
        i = self.site_resources.index(name)
        steps = sorted(steps)
        bounds = [t for t, _ in steps[1:]] + [math.inf]
        spans = []
        for (t, value), until in zip(steps, bounds):
            t = max(t, self._t[0])
            if t >= until:
                continue
            ks, ke = self._span(t, until)
            slots = self._slots(ks, ke)
            used = self._site_cap[slots, i] - self._site[slots, i]
            if (value - used < -EPS).any():
                raise OvercommitError(f"site resource {name!r}: capacity {value} from {t} is below "
                                      f"what reservations already hold ({used.max()})")
            spans.append((t, until, value))
        for t, until, value in spans:
            k = self._split(t)
            self._ref(t, True)
            if math.isinf(until):
                ke = len(self._t)
            else:
                ke = self._split(until)
                self._ref(until, True)
            slots = self._slots(k, ke)
            used = self._site_cap[slots, i] - self._site[slots, i]
            self._site[slots, i] = value - used
            self._site_cap[slots, i] = value
            self._version += 1
        self._all_changed()

    def advance(self, now: float) -> list[Reservation]:
        """Forget what lies before ``now``; return the reservations that ended by then."""
        ended: list[Reservation] = []
        while self._ends and self._ends[0][0] <= now:
            end, rid = heapq.heappop(self._ends)
            res = self._reservations.get(rid)
            if res is None or res.end != end:
                continue
            del self._reservations[rid]
            for node in res.nodes.tolist():
                self._unlist(node, rid)
            ended.append(res)
        k = self._row(now)
        if k > 0:
            for t in self._t[1:k + 1]:
                self._refs.pop(t, None)
                if self._grow_refs.pop(t, None) is not None:
                    self._grow_times.remove(t)
                if self._start_refs.pop(t, None) is not None:
                    self._start_times.remove(t)
            self._spare.extend(self._slot[:k])
            del self._t[:k]
            del self._slot[:k]
            self._version += 1
        return ended

    # ----------------------------------------------------------------------------- queries
    def site_free_at(self, t: float) -> np.ndarray:
        """Free amount of every site-wide resource at ``t``."""
        return self._site[self._slot[self._row(t)]].copy()

    def site_capacity_at(self, t: float) -> np.ndarray:
        """Capacity of every site-wide resource at ``t``."""
        return self._site_cap[self._slot[self._row(t)]].copy()

    def site_room(self, demands: Sequence[tuple[float, float, float]], resource: int = 0
                  ) -> float:
        """The least that site-wide resource ``resource`` would have free if ``demands``
        (``(start, end, amount)`` intervals; negative amounts give back) were also drawn:
        below 0 when they do not fit. Only times at or after the horizon count."""
        if not demands:
            return math.inf
        a, b, x = (np.array(column, dtype=float) for column in zip(*demands))
        a = np.maximum(a, self._t[0])
        keep = b > a
        if not keep.any():
            return math.inf
        a, b, x = a[keep], b[keep], x[keep]
        lo, hi = float(a.min()), float(b.max())
        ks, ke = self._span(lo, hi)
        starts = np.array(self._t[ks:ke])
        free = self._site[self._slots(ks, ke), resource]
        # the least is at a row's start or where some demand starts (the first row may
        # start before lo: its start counts as lo)
        times = np.concatenate([np.maximum(starts, lo), a])
        rows = np.searchsorted(starts, times, side="right") - 1
        edges = np.concatenate([a, b])
        order = np.argsort(edges, kind="stable")
        level = np.cumsum(np.concatenate([x, -x])[order])
        at = np.searchsorted(edges[order], times, side="right") - 1
        demand = np.where(at >= 0, level[np.maximum(at, 0)], 0.0)
        return float((free[rows] - demand).min())

    def lease_counts_at(self, t: float) -> np.ndarray:
        """Number of reservations on every node at ``t``."""
        row = self._nres[self._slot[self._row(t)]]
        if self._width == self._n_nodes:
            return row.copy()
        return self._every_node(row, 0)

    def capacity_lasts_until(self, t: float, until: float = math.inf) -> np.ndarray:
        """For every node, the first time in ``(t, until)`` at which some resource's free
        amount falls below what is free at ``t`` (inf if it does not)."""
        k = self._row(t)
        ke = len(self._t) if math.isinf(until) else bisect_left(self._t, until, k + 1)
        out = np.full(self.capacity.shape[0], math.inf)
        if k + 1 >= ke or not self.starts_within(t, until):
            return out
        now = self._free[self._slot[k]]
        drops = (self._free[self._slots(k + 1, ke)] < now - EPS).any(axis=2)
        dropped = drops.any(axis=0)
        if dropped.any():   # (the nodes past the rows' width are free all the time)
            first = drops.argmax(axis=0)
            times = np.asarray(self._t[k + 1:ke])
            out[:self._width][dropped] = times[first[dropped]]
        return out

    def reservations_at(self, node: int, t: float) -> list[Reservation]:
        """Reservations on ``node`` that hold resources at instant ``t``."""
        return [r for r in self._by_node.get(node, {}).values() if r.start <= t < r.end]

    def reservations_between(self, start: float, end: float,
                             node: int | None = None) -> list[Reservation]:
        """Reservations that overlap ``[start, end)`` (on ``node``, or anywhere)."""
        pool = (self._reservations.values() if node is None
                else self._by_node.get(node, {}).values())
        return sorted((r for r in pool if r.start < end and r.end > start),
                      key=lambda r: (r.start, r.id))

    def next_start_on(self, node: int, after: float,
                      skip: frozenset[ReservationKind] = frozenset()) -> float:
        """The earliest start at or after ``after`` of a reservation on ``node`` whose kind
        is not in ``skip`` (inf if there is none)."""
        return min((r.start for r in self._by_node.get(node, {}).values()
                    if r.start >= after and r.kind not in skip), default=math.inf)

    def change_points(self, after: float, until: float = math.inf,
                      node: int | None = None) -> list[float]:
        """Times in ``(after, until)`` at which availability changes (on ``node``, or anywhere)."""
        if node is None:
            lo = bisect_right(self._t, after)
            hi = bisect_left(self._t, until, lo)
            return self._t[lo:hi]
        points = set()
        for r in self._by_node.get(node, {}).values():
            if after < r.start < until:
                points.add(r.start)
            if after < r.end < until:
                points.add(r.end)
        return sorted(points)

    # ------------------------------------------------------------ the Table protocol's rest
    def move(self, old: Reservation, new: Reservation) -> None:
        """Put ``new`` in the place of ``old`` (:meth:`remove`, then :meth:`add`); raise
        :class:`OvercommitError` or ``ValueError``, with ``old`` put back, if ``new`` does
        not fit."""
        self.remove(old)
        try:
            self.add(new)
        except (OvercommitError, ValueError):
            self.add(old)
            raise

    def holds_counts_at(self, start: float) -> bool:
        """Whether a reservation starting at ``start`` holds a count of VMs and no nodes
        (never here: every reservation is on nodes)."""
        return False

    def counting(self) -> CountingTable | None:
        """The table as one that counts VMs of one shape (:class:`CountingTable`): not (it
        plans on nodes)."""
        return None

    def free_node_list(self, demand: VMRequest) -> FreeNodes | None:
        """The table's list of nodes with a slot free now for ``demand`` (none here)."""
        return None

    def planned(self) -> SlotTable:
        """The table's per-node plan queries (:class:`PlannedQueries`): its own."""
        return self

    def view(self) -> SlotTableView:
        """The table's queries without its changes: what policies and plugins get."""
        return SlotTableView(self)

    # ------------------------------------------------------------------------- checking
    def check(self) -> None:
        """Recompute the profile from the reservations and compare (tests and debugging)."""
        n = len(self._t)
        if any(a >= b for a, b in zip(self._t, self._t[1:])):
            raise AssertionError("slot table breakpoints are not increasing")
        if len(set(self._slot)) != n or set(self._slot) & set(self._spare):
            raise AssertionError("slot table rows share slots")
        slots = self._slots(0, n)
        width = self._width
        if any(len(r.nodes) and int(r.nodes.max()) >= width
               for r in self._reservations.values()):
            raise AssertionError("slot table holds a reservation past its rows' width")
        free = np.broadcast_to(self.capacity[:width], (n, width) + self.capacity.shape[1:]).copy()
        nres = np.zeros((n, width), dtype=np.int32)
        for res in self._reservations.values():
            ks, ke = self._span(max(res.start, self._t[0]), res.end)
            free[ks:ke, res.nodes] -= res.amounts
            nres[ks:ke, res.nodes] += 1
        if not np.allclose(free, self._free[slots]):
            raise AssertionError("slot table profile differs from its reservations")
        if (free < -EPS).any():
            raise AssertionError("slot table is over-committed")
        if not (nres == self._nres[slots]).all():
            raise AssertionError("slot table reservation counts differ from its reservations")
        for shape in self._shapes.values():
            tail = shape.fits(self.capacity[width:]).sum()
            if shape.tail_total != tail:
                raise AssertionError("slot table VM totals past its width differ from its nodes")
            if not np.allclose(shape.totals[slots], shape.fits(free).sum(axis=1) + tail):
                raise AssertionError("slot table VM totals differ from its profile")
        horizon = self._t[0]
        starts: dict[float, int] = {}
        for res in self._reservations.values():
            if res.start > horizon:
                starts[res.start] = starts.get(res.start, 0) + 1
        if ({t: c for t, c in self._start_refs.items() if t > horizon} != starts
                or list(self._start_times) != sorted(self._start_refs)):
            raise AssertionError("slot table's index of reservation starts is wrong")
        # (iter_fit_starts relies on it; a grow time at the horizon's first row may outlive it)
        if not set(self._grow_times.irange(horizon, inclusive=(False, False))) <= set(self._t):
            raise AssertionError("slot table has a grow time that is not a breakpoint")
        if self.site_resources:
            site = self._site_cap[slots].copy()
            for res in self._reservations.values():
                if res.site_amount is not None:
                    ks, ke = self._span(max(res.start, self._t[0]), res.end)
                    site[ks:ke] -= res.site_amount
            if not np.allclose(site, self._site[slots]):
                raise AssertionError("slot table site-wide amounts differ from its reservations")
            if (site < -EPS).any():
                raise AssertionError("slot table over-commits a site-wide resource")
