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
import itertools
import math
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import enum

import attrs
import numpy as np
from sortedcontainers import SortedList

from lease_manager.errors import OvercommitError
from lease_manager.kernel.resources import NodeSet

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease, VMRequest

#: Tolerance for floating point capacities (fractions of a CPU, watts).
EPS = 1e-9
#: How many VM shapes keep incrementally maintained totals.
MAX_SHAPES = 8

_ids = itertools.count(1)


class ReservationKind(enum.StrEnum):
    """What a reservation holds resources for. Values are the strings written to outputs, and
    compare equal to them (``res.kind == "vm"``)."""

    VM = "vm"                #: the lease's VMs run
    SUSPEND = "suspend"      #: the VMs' memory is written out
    RESUME = "resume"        #: the VMs' memory is read back
    MIGRATE = "migrate"      #: memory images move to other nodes before a resumption
    IMAGE = "image"          #: memory images of a suspended lease (a record, not in the table)


@attrs.define(eq=False, repr=False, slots=True)
class Reservation:
    """Resources held on some nodes over ``[start, end)``.

    ``nodes`` are distinct node indices and ``amounts[i]`` is what the reservation holds on
    ``nodes[i]`` (all of a lease's VMs on that node together). ``site_amount`` is what it draws
    from the site-wide resources, if the site has any. ``kind`` tells what the resources are held
    for (:class:`ReservationKind`).
    """

    lease: "Lease | None"
    start: float
    end: float
    nodes: np.ndarray
    amounts: np.ndarray
    site_amount: np.ndarray | None = None
    kind: ReservationKind = ReservationKind.VM
    #: which node each of the lease's VMs is on, when the reservation holds VMs
    vm_nodes: tuple[int, ...] = ()
    #: ``vector.tobytes()`` when every VM of the reservation has that one shape
    vm_shape: bytes | None = None
    id: int = attrs.field(factory=lambda: next(_ids))

    def amount_on(self, node: int) -> np.ndarray:
        """What the reservation holds on ``node`` (zeros if it is not there)."""
        hit = np.flatnonzero(self.nodes == node)
        if hit.size == 0:
            return np.zeros(self.amounts.shape[1])
        return self.amounts[hit[0]]

    @property
    def duration(self) -> float:
        return self.end - self.start

    def __repr__(self) -> str:
        lease = getattr(self.lease, "id", None)
        return (f"<Reservation {self.id} {self.kind} lease={lease} [{self.start}, {self.end}) "
                f"nodes={self.nodes.tolist()}>")


class _Shape:
    """A VM shape the table keeps totals for: ``totals[slot]`` = VMs the site hosts there."""

    __slots__ = ("vector", "resources", "scale", "totals", "row_totals", "row_totals_version")

    def __init__(self, vector: np.ndarray, capacity_slots: int) -> None:
        self.vector = vector
        self.resources = np.flatnonzero(vector > 0)
        self.scale = 1.0 / vector[self.resources]
        self.totals = np.zeros(capacity_slots)
        self.row_totals = self.totals[:0]
        self.row_totals_version = -1

    def fits(self, free: np.ndarray) -> np.ndarray:
        """How many VMs fit in each cell of ``free`` (``(..., resources)`` -> ``(...)``)."""
        if self.resources.size == 0:
            return np.full(free.shape[:-1], float(1 << 30))
        out = None
        for r, scale in zip(self.resources.tolist(), self.scale.tolist()):
            f = free[..., r] * scale
            out = f if out is None else np.minimum(out, f, out=out)
        out += EPS
        np.floor(out, out=out)
        return np.maximum(out, 0, out=out)


class SlotTable:
    """Reservations of one site over time, with the queries schedulers and policies need.

    Public read API (for policies and plugins): :attr:`nodes`, :attr:`capacity`,
    :attr:`site_resources`, :meth:`free_at`, :meth:`site_free_at`, :meth:`site_capacity_at`,
    :meth:`min_free`, :meth:`vm_fits`, :meth:`lease_counts_at`, :meth:`capacity_lasts_until`,
    :meth:`reservations_at`, :meth:`reservations_between`, :meth:`change_points`,
    :meth:`earliest_fit`, :meth:`iter_fit_starts`, :meth:`may_fit_before`.
    Changes: :meth:`add`, :meth:`remove`, :meth:`truncate`, :meth:`set_site_capacity`,
    :meth:`advance`.
    """

    def __init__(self, nodes: NodeSet, *, site_resources: Mapping[str, float] | None = None,
                 origin: float = 0.0) -> None:
        self.nodes = nodes
        self.capacity: np.ndarray = nodes.capacity
        n_nodes, n_types = self.capacity.shape
        self.site_resources: tuple[str, ...] = tuple(site_resources or ())
        site_cap = np.array([float(v) for v in (site_resources or {}).values()])
        slots = 64
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
        self._by_node: list[dict[int, Reservation]] = [{} for _ in range(n_nodes)]
        self._reservations: dict[int, Reservation] = {}
        self._ends: list[tuple[float, int]] = []  # heap of (end, reservation id), lazily cleaned
        self._shapes: dict[bytes, _Shape] = {}
        self._version = 0
        self._window_cache: dict[bytes, tuple[int, int, int, np.ndarray]] = {}
        self._cum_cache: dict[tuple[bytes, int], tuple[int, list[float]]] = {}

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

    def _ref(self, t: float, grows: bool) -> None:
        self._refs[t] = self._refs.get(t, 0) + 1
        if grows:
            count = self._grow_refs.get(t, 0)
            if count == 0:
                self._grow_times.add(t)
            self._grow_refs[t] = count + 1

    def _unref(self, t: float, grows: bool) -> None:
        """Drop one reference to breakpoint ``t``; merge its row away when none is left."""
        if grows:
            count = self._grow_refs.get(t)
            if count is not None:
                if count > 1:
                    self._grow_refs[t] = count - 1
                else:
                    del self._grow_refs[t]
                    self._grow_times.remove(t)
        count = self._refs.get(t)
        if count is None:   # a breakpoint already forgotten by advance()
            return
        if count > 1:
            self._refs[t] = count - 1
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
    def _apply(self, res: Reservation, ks: int, ke: int, sign: int) -> None:
        """Take (``sign=-1``) or give back (``+1``) ``res``'s resources in rows ``ks:ke``."""
        slots = self._slots(ks, ke)
        cells = (slots[:, None], res.nodes[None, :])
        before = self._free[cells]
        after = before + sign * res.amounts
        if sign < 0 and (after < -EPS).any():
            raise OvercommitError(f"{res!r} does not fit: it would over-commit a node")
        site = None
        if res.site_amount is not None and len(self.site_resources):
            site = self._site[slots] + sign * res.site_amount
            if sign < 0 and (site < -EPS).any():
                raise OvercommitError(f"{res!r} does not fit: it would over-commit the site")
        self._free[cells] = after
        self._nres[cells] -= sign
        if site is not None:
            self._site[slots] = site
        for key, shape in self._shapes.items():
            if key == res.vm_shape:   # c more VMs of a shape free up exactly c places for it
                shape.totals[slots] += sign * len(res.vm_nodes)
            else:
                shape.totals[slots] += (shape.fits(after) - shape.fits(before)).sum(axis=1)
        self._version += 1

    def add(self, res: Reservation) -> Reservation:
        """Hold ``res``'s resources; raise :class:`OvercommitError` if they are not free."""
        if not res.end > res.start:
            raise ValueError(f"empty or reversed interval [{res.start}, {res.end})")
        if res.start < self._t[0]:
            raise ValueError(f"reservation starts at {res.start}, before the horizon {self._t[0]}")
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
            self._by_node[node][res.id] = res
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
            del self._by_node[node][res.id]
        if not math.isinf(res.end):
            self._unref(res.end, True)
        self._unref(res.start, False)

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
                del self._by_node[node][rid]
            ended.append(res)
        k = self._row(now)
        if k > 0:
            for t in self._t[1:k + 1]:
                self._refs.pop(t, None)
                if self._grow_refs.pop(t, None) is not None:
                    self._grow_times.remove(t)
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

    def capacity_lasts_until(self, t: float, until: float = math.inf) -> np.ndarray:
        """For every node, the first time in ``(t, until)`` at which some resource's free
        amount falls below what is free at ``t`` (inf if it does not)."""
        k = self._row(t)
        ke = len(self._t) if math.isinf(until) else bisect_left(self._t, until, k + 1)
        out = np.full(self.capacity.shape[0], math.inf)
        if k + 1 >= ke:
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
        return [r for r in self._by_node[node].values() if r.start <= t < r.end]

    def reservations_between(self, start: float, end: float,
                             node: int | None = None) -> list[Reservation]:
        """Reservations that overlap ``[start, end)`` (on ``node``, or anywhere)."""
        pool = self._reservations.values() if node is None else self._by_node[node].values()
        return sorted((r for r in pool if r.start < end and r.end > start),
                      key=lambda r: (r.start, r.id))

    def change_points(self, after: float, until: float = math.inf,
                      node: int | None = None) -> list[float]:
        """Times in ``(after, until)`` at which availability changes (on ``node``, or anywhere)."""
        if node is None:
            lo = bisect_right(self._t, after)
            hi = bisect_left(self._t, until, lo)
            return self._t[lo:hi]
        points = set()
        for r in self._by_node[node].values():
            if after < r.start < until:
                points.add(r.start)
            if after < r.end < until:
                points.add(r.end)
        return sorted(points)

    def view(self) -> "SlotTableView":
        """The table's queries without its changes: what policies and plugins get."""
        return SlotTableView(self)

    def __len__(self) -> int:
        """Number of reservations the table holds (current and future)."""
        return len(self._reservations)

    # ------------------------------------------------------------------------ fitting VMs
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
        return self._window_fits(self._shape(vector), ks, ke).min(axis=0)

    def iter_fit_starts(self, demand: "VMRequest", duration: float, after: float, *,
                        not_after: float | None = None,
                        site_demand: np.ndarray | None = None,
                        own: Reservation | None = None,
                        released: Sequence[Reservation] = ()) -> Iterator[float]:
        """Candidate start times ``s >= after`` (earliest first) at which ``demand`` fits.

        At each candidate, every group of identical VMs fits on the nodes' free capacity all
        through ``[s, s + duration)`` and the site-wide resources cover ``site_demand``. For a
        lease of identical VMs the test is exact (the mapper will succeed); with several groups
        it is necessary but not sufficient, and the caller tries the mapper at each candidate.
        Candidates are ``after`` and the later breakpoints where some capacity may grow.
        ``own`` (the lease's current reservation) and ``released`` (reservations that would be
        given up, e.g. by preempted leases) count as free from ``after`` on.
        """
        if not_after is not None and not_after < after:
            return
        times = self._t
        n = len(times)
        k0 = self._row(after)
        infinite = math.isinf(duration)
        if not_after is None or infinite:
            k_end = n
        else:   # rows beyond the last window are never looked at
            k_end = bisect_left(times, not_after + duration, k0 + 1)
        k_rows = k_end - k0
        slots = self._slots(k0, k_end)
        groups = [(self._shape(v), c) for c, v in zip(demand.counts, demand.vectors)]
        # reservations counted as free: (reservation, first row, end row) relative to k0
        freed = []
        for res in ([own] if own is not None else []) + list(released):
            if res.id in self._reservations and res.end > after:
                lo, hi = self._span(max(res.start, after), res.end)
                lo, hi = max(lo, k0) - k0, min(hi, k_end) - k0
                if hi > lo:
                    freed.append((res, lo, hi))
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
        use_site = site_demand is not None and len(self.site_resources) > 0
        if use_site:
            site = self._site[slots]
            for res, lo, hi in freed:
                if res.site_amount is not None:
                    site[lo:hi] += res.site_amount
            blocked |= (site < site_demand - EPS).any(axis=1)
        # prev_blocked[i]: the last blocked row at or before row i (-1: none)
        prev_blocked = np.maximum.accumulate(
            np.where(blocked, np.arange(k_rows), -1)).tolist()
        single = len(groups) == 1
        per_row: list[np.ndarray] = []   # per group: VMs per node and row, rows k0:k_end

        def window_fits(i: int, j: int) -> bool:
            if prev_blocked[j - 1] >= i:
                return False
            if j - i == 1 and single:
                return True   # one row: the totals test is already exact
            if not per_row:
                per_row.extend(self._freed_window_fits(shape, k0, k_end, slots, freed,
                                                       bool(released))
                               for shape, _ in groups)
            return all(np.add.reduce(np.minimum.reduce(fits[i:j])) >= count
                       for fits, (_, count) in zip(per_row, groups))

        j = k_rows if infinite else bisect_left(times, after + duration, k0 + 1, k_end) - k0
        if window_fits(0, j):
            yield after
        if not_after is not None and not_after <= after:
            return
        hi = times[k_end - 1] if not_after is None else min(not_after, times[k_end - 1])
        for s in self._grow_times.irange(after, hi, inclusive=(False, True)):
            i = bisect_left(times, s, k0) - k0
            if blocked[i]:
                continue
            j = k_rows if infinite else bisect_left(times, s + duration, k0 + i + 1, k_end) - k0
            if window_fits(i, j):
                yield s

    def fits_at(self, demand: "VMRequest", duration: float, t: float) -> bool:
        """Does ``demand`` fit all through ``[t, t + duration)``? (Exact for identical VMs;
        necessary only for several groups, like :meth:`iter_fit_starts`.)

        Answered in O(1) from the totals when the site is too full at ``t``, and otherwise from
        per-shape cumulative minima shared by every question about the same instant.
        """
        k0 = self._row(t)
        slot = self._slot[k0]
        times = self._t
        j = len(times) if math.isinf(duration) else bisect_left(times, t + duration, k0 + 1)
        for count, vector in zip(demand.counts, demand.vectors):
            shape = self._shape(vector)
            if shape.totals[slot] < count:
                return False
            key = (vector.tobytes(), k0)
            hit = self._cum_cache.get(key)
            if hit is None or hit[0] != self._version:
                fits = self._window_fits(shape, k0, len(times))
                cum = np.minimum.accumulate(fits, axis=0).sum(axis=1).tolist()
                if len(self._cum_cache) > MAX_SHAPES:
                    self._cum_cache.clear()
                self._cum_cache[key] = hit = (self._version, cum)
            if hit[1][j - k0 - 1] < count:
                return False
        return True

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
        return shape.fits(free).sum(axis=1)

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

    def may_fit_before(self, demand: "VMRequest", duration: float, after: float,
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
        blocked = None
        for count, vector in zip(demand.counts, demand.vectors):
            b = self._row_totals(self._shape(vector))[k0:kb] < count
            blocked = b if blocked is None else blocked | b
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

    def earliest_fit(self, demand: "VMRequest", duration: float, after: float, *,
                     not_after: float | None = None, site_demand: np.ndarray | None = None,
                     own: Reservation | None = None,
                     released: Sequence[Reservation] = ()) -> float | None:
        """The first candidate of :meth:`iter_fit_starts`, or ``None`` if there is none."""
        return next(self.iter_fit_starts(demand, duration, after, not_after=not_after,
                                         site_demand=site_demand, own=own,
                                         released=released), None)

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


class SlotTableView:
    """The slot table's queries, without its changes (``add``, ``remove``, ``truncate``...).

    Each query is the table's own bound method, so a view costs nothing per call.
    """

    QUERIES = ("free_at", "site_free_at", "site_capacity_at", "min_free", "vm_fits",
               "lease_counts_at", "capacity_lasts_until", "reservations_at",
               "reservations_between", "change_points", "earliest_fit", "earliest_fit_on",
               "iter_fit_starts", "may_fit_before", "fits_at", "room_at")

    def __init__(self, table: SlotTable) -> None:
        self._table = table
        self.nodes = table.nodes
        self.capacity = table.capacity
        self.site_resources = table.site_resources
        for name in self.QUERIES:
            setattr(self, name, getattr(table, name))

    @property
    def version(self) -> int:
        """Changes whenever the table changes (a cheap test that nothing moved)."""
        return self._table.version

    @property
    def horizon(self) -> float:
        return self._table.horizon

    def __getattr__(self, name: str) -> Any:   # only reached for names not set above
        raise AttributeError(f"the slot table seen by plugins has no {name!r} "
                             f"(it can be read, not changed)")
