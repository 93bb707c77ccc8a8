"""The slot table's rows: free capacity per node over time, in a pool of slots.

Layout, for speed: rows live in a pool of slots and the time order is a list of slot indices,
so making a breakpoint copies one row instead of shifting the profile. For every VM shape the
scheduler asks about, the rows keep how many such VMs each could host on the whole site (its
*totals*, :class:`_Shape`), updated as reservations come and go. :class:`SlotRows` is that
state and its bookkeeping; :class:`~lease_manager.kernel.fitting.SlotFitting` asks it where
VMs fit and :class:`~lease_manager.kernel.slottable.SlotTable` changes it.

On a large site the rows are only as wide as the nodes reservations have used: they keep
columns for nodes ``[0, width)``, ``width`` past the highest node any reservation has held in
the table (it grows by doubling, and never shrinks; a site of a few thousand nodes has rows of
every node from the start, :data:`DENSE_ROW_BYTES`). Every node from ``width`` on is at its
full capacity in every row, so what the rows say of it is :attr:`SlotRows.capacity`, kept once:
a million idle nodes cost no row. Per-node answers (:meth:`SlotRows.free_at`,
:meth:`SlotRows.min_free`) are given for every node; the fit queries count those nodes with a
shape's ``tail_total``. (VM counts are whole numbers in floating point, so adding them in parts
gives the same sums.)
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

import numpy as np
from sortedcontainers import SortedList

from lease_manager.kernel.reservation import Reservation
from lease_manager.kernel.resources import NodeSet
from lease_manager.kernel.table_rows import TableRows

#: Tolerance for floating point capacities (fractions of a CPU, watts).
EPS = 1e-9
#: How many VM shapes keep incrementally maintained totals.
MAX_SHAPES = 8


class NodeSink(Protocol):
    """Where the table records the nodes it changes (a ``set`` will do)."""

    def update(self, nodes: Iterable[int], /) -> None: ...



class _Shape:
    """A VM shape the table keeps totals for: ``totals[slot]`` = VMs the site hosts there."""

    __slots__ = ("vector", "resources", "scale", "totals", "row_totals", "row_totals_version",
                 "tail_total", "_pairs")

    def __init__(self, vector: np.ndarray, capacity_slots: int) -> None:
        self.vector = vector
        self.resources = np.flatnonzero(vector > 0)
        self.scale = 1.0 / vector[self.resources]
        #: (resource, 1 / size) for the resources a VM needs, as Python numbers
        self._pairs = list(zip(self.resources.tolist(), self.scale.tolist()))
        self.totals = np.zeros(capacity_slots)
        self.row_totals = self.totals[:0]
        self.row_totals_version = -1
        #: VMs the nodes past the rows' width host (all free, always): set by the rows
        self.tail_total = 0.0

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
#: the rows' first width in nodes on a site whose rows of every node would cost more than
#: :data:`DENSE_ROW_BYTES` each
FIRST_WIDTH = 64
#: a site whose row of every node costs at most this many bytes (3,276 nodes of two resource
#: types) has rows of every node from the start: no answer is padded and nothing widens
DENSE_ROW_BYTES = 64 << 10


def _pool_size(n_nodes: int, n_types: int) -> int:
    """How many rows the first pool holds: 64, or fewer on rows so wide (``n_nodes``) that 64
    of them would reserve more than :data:`POOL_BYTES` (64 rows of a million nodes were 1.3 GB
    of address space: under a 1.5 GB ``ulimit -v`` a one-lease run failed)."""
    row = n_nodes * (8 * n_types + 4)
    return max(4, min(64, POOL_BYTES // max(row, 1)))


class SlotRows(TableRows):
    """The rows of a slot table and their bookkeeping (see the module's docstring)."""

    #: the rows' first width in nodes, and the most bytes a row of every node may cost to be
    #: kept from the start (tests change them to make rows narrow or of every node)
    first_width = FIRST_WIDTH
    dense_row_bytes = DENSE_ROW_BYTES

    def __init__(self, nodes: NodeSet, *, site_resources: Mapping[str, float] | None = None,
                 origin: float = 0.0) -> None:
        super().__init__(origin)
        self.nodes = nodes
        self.capacity: np.ndarray = nodes.capacity
        n_nodes, n_types = self.capacity.shape
        self.site_resources: tuple[str, ...] = tuple(site_resources or ())
        site_cap = np.array([float(v) for v in (site_resources or {}).values()])
        self._n_nodes = n_nodes
        #: the nodes the rows keep columns for: ``[0, _width)`` (see the module's docstring)
        self._width = (n_nodes if n_nodes * (8 * n_types + 4) <= self.dense_row_bytes
                       else min(n_nodes, self.first_width))
        slots = _pool_size(self._width, n_types)
        self._free = np.empty((slots, self._width, n_types))
        self._nres = np.zeros((slots, self._width), dtype=np.int32)
        self._site = np.empty((slots, len(self.site_resources)))
        self._site_cap = np.empty((slots, len(self.site_resources)))
        self._spare: list[int] = list(range(slots - 1, 0, -1))
        self._free[0] = self.capacity[:self._width]
        self._nres[0] = 0
        self._site[0] = site_cap
        self._site_cap[0] = site_cap
        #: for each breakpoint (``_t``), the slot holding its row
        self._slot: list[int] = [0]
        #: breakpoints at which some capacity may grow (reservation ends, capacity steps)
        self._grow_refs: dict[float, int] = {}
        self._grow_times = SortedList()
        #: breakpoints where some reservation starts: the only ones where a node's free
        #: capacity can fall (between two of them it only grows), with how many start there
        self._start_refs: dict[float, int] = {}
        self._start_times = SortedList()
        #: the reservations on each node that has some (an idle node costs nothing)
        self._by_node: dict[int, dict[int, Reservation]] = {}
        self._shapes: dict[bytes, _Shape] = {}
        self._window_cache: dict[bytes, tuple[int, int, int, np.ndarray]] = {}
        self._cum_cache: dict[tuple[bytes, int], tuple[int, list[float]]] = {}
        #: when a set: every node a reservation is added to, removed from or changed on is
        #: put in it (whoever set it empties it)
        self.touched: NodeSink | None = None
        #: when set: what a reservation added without a ``site_amount`` draws from the
        #: site-wide resources (a power cap sets it: leases draw their dynamic power)
        self.site_draw: Callable[[Reservation], np.ndarray | None] | None = None

    def room_at(self, vector: np.ndarray, t: float) -> float:
        """How many VMs of shape ``vector`` the whole site could host at instant ``t``."""
        return float(self._shape(vector).totals[self._slot[self._row(t)]])


    def _unlist(self, node: int, rid: int) -> None:
        held = self._by_node[node]
        del held[rid]
        if not held:
            del self._by_node[node]

    @property
    def width(self) -> int:
        """How many nodes (the first ones) the rows keep columns for; every later node is
        free all the time."""
        return self._width

    def _widen(self, top: int) -> None:
        """Make the rows keep columns for nodes ``[0, top)`` at least: twice as many as now,
        or ``top``, at most every node. The live rows move to a new pool (spare slots are
        not copied), in time order."""
        n_nodes, n_types = self.capacity.shape
        width = min(n_nodes, max(top, 2 * self._width))
        old = self._width
        live = self._slots(0, len(self._t))
        n = len(live)
        slots = max(n + 1, _pool_size(width, n_types))
        free = np.empty((slots, width, n_types))
        free[:n, :old] = self._free[live]
        free[:n, old:] = self.capacity[old:width]
        nres = np.zeros((slots, width), dtype=np.int32)
        nres[:n, :old] = self._nres[live]
        self._free, self._nres = free, nres
        for name in ("_site", "_site_cap"):
            a = getattr(self, name)
            moved = np.empty((slots,) + a.shape[1:], dtype=a.dtype)
            moved[:n] = a[live]
            setattr(self, name, moved)
        self._width = width
        tail = self.capacity[width:]
        for shape in self._shapes.values():
            totals = np.zeros(slots)
            totals[:n] = shape.totals[live]
            shape.totals = totals
            shape.tail_total = float(shape.fits(tail).sum())
        self._slot = list(range(n))
        self._spare = list(range(slots - 1, n - 1, -1))
        self._window_cache.clear()
        self._cum_cache.clear()
        self._version += 1

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
            shape.tail_total = float(shape.fits(self.capacity[self._width:]).sum())
            shape.totals[live] = shape.fits(self._free[live]).sum(axis=1) + shape.tail_total
            self._shapes[key] = shape
        return shape

    def _every_node(self, narrow: np.ndarray, past: np.ndarray | float) -> np.ndarray:
        """``narrow`` (an answer for the rows' nodes, along the first axis) for every node,
        the later ones' answer being ``past``; ``narrow`` itself (not a copy) when the rows
        hold every node."""
        if self._width == self._n_nodes:
            return narrow
        out = np.empty((self._n_nodes,) + narrow.shape[1:], dtype=narrow.dtype)
        out[:self._width] = narrow
        out[self._width:] = past
        return out

    def free_at(self, t: float) -> np.ndarray:
        """Free capacity of every node at ``t``: shape (nodes, resource types)."""
        row = self._free[self._slot[self._row(t)]]
        if self._width == self._n_nodes:
            return row.copy()
        return self._every_node(row, self.capacity[self._width:])

    def min_free(self, start: float, end: float) -> np.ndarray:
        """Free capacity of every node all through ``[start, end)``: shape (nodes, types)."""
        if not end > start:
            return self.free_at(start)
        self._check_known(start)
        ks, ke = self._span(start, end)
        return self._every_node(self._free[self._slots(ks, ke)].min(axis=0),
                                self.capacity[self._width:])


    def starts_within(self, after: float, before: float) -> bool:
        """Does some reservation start in ``(after, before)``? If not, every node's free
        capacity only grows over that interval (what fits at ``after`` fits all through)."""
        starts = self._start_times
        i = starts.bisect_right(after)
        return i < len(starts) and starts[i] < before
