"""The slot table: what every node (and the site) has free, over time.

The table is an *availability profile*: sorted breakpoints ``t[0] < t[1] < ...`` and, for the
row ``k`` that spans ``[t[k], t[k+1])`` (the last row runs to infinity), the free capacity of
every node (``free[k, node, resource]``), the number of reservations on every node and the free
amount of every site-wide resource (power, for instance). Reservations are half-open intervals
``[start, end)`` on specific nodes.

Layout, for speed: rows live in a pool of slots and the time order is a list of slot indices,
so making a breakpoint copies one row instead of shifting the profile. For every VM shape the
scheduler asks about, the table keeps how many such VMs each row could host on the whole site
(its *totals*), updated as reservations come and go; most "does it fit" questions are answered
from those totals, and only windows that pass are checked node by node. A breakpoint exists
only while a reservation starts or ends there or a site capacity changes there, and
:meth:`SlotTable.advance` forgets the past, so the table's size follows the number of current
and future reservations, not the length of the trace.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np
from sortedcontainers import SortedList

from lease_manager.errors import OvercommitError
from lease_manager.kernel import fitting
from lease_manager.kernel.fitting import EPS, MAX_SHAPES
from lease_manager.kernel.reservation import Reservation, ReservationKind, bad_interval
from lease_manager.kernel.resources import NodeSet
from lease_manager.kernel.table_view import SlotTableView

__all__ = ["EPS", "MAX_SHAPES", "Reservation", "ReservationKind", "SlotTable", "SlotTableView"]



class NodeSink(Protocol):
    """Where the table records the nodes it changes (a ``set`` will do)."""

    def update(self, nodes: Iterable[int], /) -> None: ...


class ChangeWatch:
    """What changed in a slot table since :meth:`reset` (from :meth:`SlotTable.watch`): the
    span of times its changes cover, and whether any of them gave capacity back."""

    def __init__(self) -> None:
        self.lo, self.hi, self.freed = math.inf, -math.inf, False

    def reset(self) -> None:
        self.lo, self.hi, self.freed = math.inf, -math.inf, False

    def record(self, lo: float, hi: float, freed: bool) -> None:
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        self.freed = self.freed or freed

    def untouched(self, start: float, end: float) -> bool:
        """Is every answer about ``[start, end)`` still true? Yes if nothing changed, or if
        the changes only took capacity, none of it during ``[start, end)``: what fitted
        there still fits, and what did not fit anywhere still does not."""
        return self.lo > self.hi or (not self.freed and (self.hi <= start or self.lo >= end))


class _Shape:
    """A VM shape the table keeps totals for: ``totals[slot]`` = VMs the site hosts there."""

    __slots__ = ("vector", "resources", "scale", "totals", "row_totals", "row_totals_version",
                 "_pairs")

    def __init__(self, vector: np.ndarray, capacity_slots: int) -> None:
        self.vector = vector
        self.resources = np.flatnonzero(vector > 0)
        self.scale = 1.0 / vector[self.resources]
        #: (resource, 1 / size) for the resources a VM needs, as Python numbers
        self._pairs = list(zip(self.resources.tolist(), self.scale.tolist()))
        self.totals = np.zeros(capacity_slots)
        self.row_totals = self.totals[:0]
        self.row_totals_version = -1

    def fits(self, free: np.ndarray) -> np.ndarray:
        """How many VMs fit in each cell of ``free`` (``(..., resources)`` -> ``(...)``)."""
        if not self._pairs:
            return np.full(free.shape[:-1], float(1 << 30))
        r, scale = self._pairs[0]
        out = free[..., r] * scale
        for r, scale in self._pairs[1:]:
            np.minimum(out, free[..., r] * scale, out=out)
        out += EPS
        np.floor(out, out=out)
        return np.maximum(out, 0, out=out)


#: the most bytes the slot table's first pool of rows may reserve (it doubles when full)
POOL_BYTES = 64 << 20


def _pool_size(n_nodes: int, n_types: int) -> int:
    """How many rows the first pool holds: 64, or fewer on a site so large that 64 rows would
    reserve more than :data:`POOL_BYTES` (64 rows of a million nodes were 1.3 GB of address
    space before the first lease: under a 1.5 GB ``ulimit -v`` a one-lease run failed)."""
    row = n_nodes * (8 * n_types + 4)
    return max(4, min(64, POOL_BYTES // max(row, 1)))


class SlotTable:
    """Reservations of one site over time, with the queries schedulers and policies need.

    Public read API (for policies and plugins): :attr:`nodes`, :attr:`capacity`,
    :attr:`site_resources`, :meth:`free_at`, :meth:`site_free_at`, :meth:`site_capacity_at`,
    :meth:`min_free`, :meth:`vm_fits`, :meth:`lease_counts_at`, :meth:`capacity_lasts_until`,
    :meth:`reservations_at`, :meth:`reservations_between`, :meth:`next_start_on`,
    :meth:`change_points`, :meth:`site_room`,
    :meth:`earliest_fit`, :meth:`earlier_start`, :meth:`iter_fit_starts`,
    :meth:`may_fit_before`.
    Changes: :meth:`add`, :meth:`remove`, :meth:`truncate`, :meth:`extend`,
    :meth:`extend_all`, :meth:`add_site_resource`, :meth:`set_site_capacity`,
    :meth:`advance`.
    """

    #: the scheduler maps reservations to nodes when it plans them (a
    #: :class:`~lease_manager.kernel.count_table.CountTable` counts them instead)
    counted = False

    def __init__(self, nodes: NodeSet, *, site_resources: Mapping[str, float] | None = None,
                 origin: float = 0.0) -> None:
        self.nodes = nodes
        self.capacity: np.ndarray = nodes.capacity
        n_nodes, n_types = self.capacity.shape
        self.site_resources: tuple[str, ...] = tuple(site_resources or ())
        site_cap = np.array([float(v) for v in (site_resources or {}).values()])
        slots = _pool_size(n_nodes, n_types)
        self._free = np.empty((slots, n_nodes, n_types))
        self._nres = np.zeros((slots, n_nodes), dtype=np.int32)
        self._site = np.empty((slots, len(self.site_resources)))
        self._site_cap = np.empty((slots, len(self.site_resources)))
        self._spare: list[int] = list(range(slots - 1, 0, -1))
        self._free[0] = self.capacity
        self._nres[0] = 0
        self._site[0] = site_cap
        self._site_cap[0] = site_cap
        #: breakpoint times and, for each, the slot holding its row
        self._t: list[float] = [origin]
        self._slot: list[int] = [0]
        #: how many reservation ends and capacity steps sit on each breakpoint
        self._refs: dict[float, int] = {}
        #: breakpoints at which some capacity may grow (reservation ends, capacity steps)
        self._grow_refs: dict[float, int] = {}
        self._grow_times = SortedList()
        #: breakpoints where some reservation starts: the only ones where a node's free
        #: capacity can fall (between two of them it only grows), with how many start there
        self._start_refs: dict[float, int] = {}
        self._start_times = SortedList()
        #: the reservations on each node that has some (an idle node costs nothing)
        self._by_node: dict[int, dict[int, Reservation]] = {}
        self._reservations: dict[int, Reservation] = {}
        self._ends: list[tuple[float, int]] = []  # heap of (end, reservation id), lazily cleaned
        self._shapes: dict[bytes, _Shape] = {}
        self._version = 0
        self._window_cache: dict[bytes, tuple[int, int, int, np.ndarray]] = {}
        self._cum_cache: dict[tuple[bytes, int], tuple[int, list[float]]] = {}
        #: when a set: every node a reservation is added to, removed from or changed on is
        #: put in it (whoever set it empties it)
        self.touched: NodeSink | None = None
        #: when set: what a reservation added without a ``site_amount`` draws from the
        #: site-wide resources (a power cap sets it: leases draw their dynamic power)
        self.site_draw: Callable[[Reservation], np.ndarray | None] | None = None
        self._watches: list[ChangeWatch] = []

    # ----------------------------------------------------------------- rows and breakpoints
    @property
    def horizon(self) -> float:
        """The earliest time the table still knows about (everything before is forgotten)."""
        return self._t[0]

    @property
    def version(self) -> int:
        """A number that changes whenever the table changes (for caching answers)."""
        return self._version

    def room_at(self, vector: np.ndarray, t: float) -> float:
        """How many VMs of shape ``vector`` the whole site could host at instant ``t``."""
        return float(self._shape(vector).totals[self._slot[self._row(t)]])

    @property
    def breakpoints(self) -> int:
        """Number of rows in the profile."""
        return len(self._t)

    def _row(self, t: float) -> int:
        if t < self._t[0]:
            raise ValueError(f"time {t} is before the slot table's horizon {self._t[0]}")
        return bisect_right(self._t, t) - 1

    def _unlist(self, node: int, rid: int) -> None:
        held = self._by_node[node]
        del held[rid]
        if not held:
            del self._by_node[node]

    def _new_slot(self) -> int:
        if not self._spare:
            old = self._free.shape[0]
            for name in ("_free", "_nres", "_site", "_site_cap"):
                a = getattr(self, name)
                grown = np.empty((2 * old,) + a.shape[1:], dtype=a.dtype)
                grown[:old] = a
                setattr(self, name, grown)
            for shape in self._shapes.values():
                shape.totals = np.concatenate([shape.totals, np.zeros(old)])
            self._spare = list(range(2 * old - 1, old - 1, -1))
        return self._spare.pop()

    def _split(self, t: float) -> int:
        """Make ``t`` a breakpoint (if it is not one) and return its row."""
        k = self._row(t)
        if self._t[k] == t:
            return k
        src = self._slot[k]
        dst = self._new_slot()
        self._free[dst] = self._free[src]
        self._nres[dst] = self._nres[src]
        self._site[dst] = self._site[src]
        self._site_cap[dst] = self._site_cap[src]
        for shape in self._shapes.values():
            shape.totals[dst] = shape.totals[src]
        self._t.insert(k + 1, t)
        self._slot.insert(k + 1, dst)
        self._version += 1
        return k + 1

    def _ref(self, t: float, grows: bool, n: int = 1) -> None:
        """Reference breakpoint ``t``: a reservation's end or a capacity step (``grows``),
        or a reservation's start."""
        self._refs[t] = self._refs.get(t, 0) + n
        refs, times = ((self._grow_refs, self._grow_times) if grows
                       else (self._start_refs, self._start_times))
        count = refs.get(t, 0)
        if count == 0:
            times.add(t)
        refs[t] = count + n

    def _unref(self, t: float, grows: bool, n: int = 1) -> None:
        """Drop ``n`` references to breakpoint ``t``; merge its row away when none is left."""
        refs, times = ((self._grow_refs, self._grow_times) if grows
                       else (self._start_refs, self._start_times))
        count = refs.get(t)
        if count is not None:
            if count > n:
                refs[t] = count - n
            else:
                del refs[t]
                times.remove(t)
        count = self._refs.get(t)
        if count is None:   # a breakpoint already forgotten by advance()
            return
        if count > n:
            self._refs[t] = count - n
            return
        del self._refs[t]
        k = bisect_left(self._t, t)
        if k == 0 or k >= len(self._t) or self._t[k] != t:
            return
        self._spare.append(self._slot[k])
        del self._t[k]
        del self._slot[k]
        self._version += 1

    def _slots(self, ks: int, ke: int) -> np.ndarray:
        return np.array(self._slot[ks:ke], dtype=np.intp)

    def _span(self, start: float, end: float) -> tuple[int, int]:
        """Rows ``ks:ke`` covering ``[start, end)``, start clipped to the horizon (``ks == ke``
        when nothing of the interval is left)."""
        ks = 0 if start <= self._t[0] else self._row(start)
        if end <= max(start, self._t[0]):
            return ks, ks
        ke = len(self._t) if math.isinf(end) else bisect_left(self._t, end, ks)
        return ks, ke

    def _check_known(self, t: float) -> None:
        if t < self._t[0]:
            raise ValueError(f"time {t} is before the slot table's horizon {self._t[0]}")

    def _row_totals(self, shape: _Shape) -> np.ndarray:
        """``shape``'s totals for every row, in time order (cached per table version)."""
        if shape.row_totals_version != self._version:
            shape.row_totals = shape.totals[self._slots(0, len(self._t))]
            shape.row_totals_version = self._version
        return shape.row_totals

    def _shape(self, vector: np.ndarray) -> _Shape:
        """The totals of VM shape ``vector`` (computed when first asked for, then maintained)."""
        key = vector.tobytes()
        shape = self._shapes.get(key)
        if shape is None:
            if len(self._shapes) >= MAX_SHAPES:
                self._shapes.pop(next(iter(self._shapes)))
            shape = _Shape(vector.copy(), self._free.shape[0])
            live = self._slots(0, len(self._t))
            shape.totals[live] = shape.fits(self._free[live]).sum(axis=1)
            self._shapes[key] = shape
        return shape

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

    def watch(self) -> ChangeWatch:
        """A :class:`ChangeWatch` that records every later change of the table (a policy
        keeps one and resets it; it lives as long as the table)."""
        watch = ChangeWatch()
        self._watches.append(watch)
        return watch

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

    def truncate(self, res: Reservation, new_end: float) -> None:
        """End ``res`` early at ``new_end`` (a premature end, a preemption, a shrink)."""
        if res.id not in self._reservations:
            raise KeyError(f"{res!r} is not in the slot table")
        if new_end >= res.end:
            return
        if new_end <= res.start:
            self.remove(res)
            res.end = new_end
            return
        ks = self._split(new_end)
        self._ref(new_end, True)
        ke = len(self._t) if math.isinf(res.end) else bisect_left(self._t, res.end, ks + 1)
        self._apply(res, ks, ke, +1)
        old_end = res.end
        res.end = new_end
        if not math.isinf(old_end):
            self._unref(old_end, True)
        heapq.heappush(self._ends, (new_end, res.id))
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
    def free_at(self, t: float) -> np.ndarray:
        """Free capacity of every node at ``t``: shape (nodes, resource types)."""
        return self._free[self._slot[self._row(t)]].copy()

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

    def min_free(self, start: float, end: float) -> np.ndarray:
        """Free capacity of every node all through ``[start, end)``: shape (nodes, types)."""
        if not end > start:
            return self.free_at(start)
        self._check_known(start)
        ks, ke = self._span(start, end)
        return self._free[self._slots(ks, ke)].min(axis=0)

    def lease_counts_at(self, t: float) -> np.ndarray:
        """Number of reservations on every node at ``t``."""
        return self._nres[self._slot[self._row(t)]].copy()

    def starts_within(self, after: float, before: float) -> bool:
        """Does some reservation start in ``(after, before)``? If not, every node's free
        capacity only grows over that interval (what fits at ``after`` fits all through)."""
        starts = self._start_times
        i = starts.bisect_right(after)
        return i < len(starts) and starts[i] < before

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
        if dropped.any():
            first = drops.argmax(axis=0)
            times = np.asarray(self._t[k + 1:ke])
            out[dropped] = times[first[dropped]]
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

    def view(self) -> SlotTableView:
        """The table's queries without its changes: what policies and plugins get."""
        return SlotTableView(self)

    def __contains__(self, res: object) -> bool:
        """Does the table hold reservation ``res``?"""
        return isinstance(res, Reservation) and self._reservations.get(res.id) is res

    def __len__(self) -> int:
        """Number of reservations the table holds (current and future)."""
        return len(self._reservations)

    # ------------------------------------------------------------------------ fitting VMs

    # fit queries (kernel/fitting.py): this class's methods
    _window_fits = fitting._window_fits
    vm_fits = fitting.vm_fits
    iter_fit_starts = fitting.iter_fit_starts
    fits_at = fitting.fits_at
    _cum_fits = fitting._cum_fits
    _least_fits = fitting._least_fits
    _freed_window_fits = fitting._freed_window_fits
    _freed_totals = fitting._freed_totals
    earliest_fit_on = fitting.earliest_fit_on
    may_fit_before = fitting.may_fit_before
    _blocked_rows = fitting._blocked_rows
    move_test = fitting.move_test
    earliest_fit = fitting.earliest_fit
    earlier_start = fitting.earlier_start


    # ------------------------------------------------------------------------- checking
    def check(self) -> None:
        """Recompute the profile from the reservations and compare (tests and debugging)."""
        n = len(self._t)
        if any(a >= b for a, b in zip(self._t, self._t[1:])):
            raise AssertionError("slot table breakpoints are not increasing")
        if len(set(self._slot)) != n or set(self._slot) & set(self._spare):
            raise AssertionError("slot table rows share slots")
        slots = self._slots(0, n)
        free = np.broadcast_to(self.capacity, (n,) + self.capacity.shape).copy()
        nres = np.zeros((n, self.capacity.shape[0]), dtype=np.int32)
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
            if not np.allclose(shape.totals[slots], shape.fits(free).sum(axis=1)):
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
