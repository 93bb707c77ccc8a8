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

The table answers the queries the scheduler and host selection need (:class:`CountTable`'s
methods mirror :class:`~lease_manager.kernel.slottable.SlotTable`'s); per-node questions
about future instants have no answer here and raise :class:`NotImplementedError`.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.errors import OvercommitError
from lease_manager.kernel import profiles
from lease_manager.kernel.enum_members import members
from lease_manager.kernel.fitting import EPS
from lease_manager.kernel.lease import Lease, LeaseType
from lease_manager.kernel.reservation import Reservation, bad_interval
from lease_manager.kernel.slottable import ChangeWatch
from lease_manager.kernel.table_view import SlotTableView

if TYPE_CHECKING:
    from lease_manager.kernel.lease import VMRequest
    from lease_manager.kernel.mapper import Placement
    from lease_manager.kernel.resources import NodeSet

_NO_NODES = np.empty(0, dtype=np.intp)
LT = members(LeaseType)
#: queries over at most this many rows of the profile read them as lists (numpy's cost per
#: call is more than the comparisons then)
FEW_ROWS = 32
#: nodes taken out of the list of free nodes one by one (a bisection each), at most
FEW_NODES = 8


def slots_per_node(capacity: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """How many VMs of shape ``vector`` each node hosts when empty."""
    pos = vector > 0
    if not pos.any():
        raise ValueError("a VM must need some resource")
    return np.floor((capacity[:, pos] / vector[pos]).min(axis=1) + EPS).astype(np.int64)


def _take_nodes(free: list[int], nodes: list[int]) -> bool:
    """Take distinct ``nodes`` out of the sorted list ``free``; False, changing nothing, if
    some are not in it."""
    count = len(nodes)
    if free[:count] == nodes:   # the first free nodes: what host selection picks
        del free[:count]
        return True
    if count == 1:   # (a node switched off, or a one-VM lease)
        i = bisect_left(free, nodes[0])
        if i == len(free) or free[i] != nodes[0]:
            return False
        del free[i]
        return True
    if count <= FEW_NODES:
        at = [bisect_left(free, node) for node in nodes]
        if any(i == len(free) or free[i] != node for i, node in zip(at, nodes)) or \
                len(set(at)) < count:
            return False
        for i in sorted(at, reverse=True):
            del free[i]
        return True
    taken = set(nodes)
    kept = [node for node in free if node not in taken]
    if len(taken) < count or len(kept) != len(free) - count:
        return False
    free[:] = kept
    return True


class CountTable:
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

    def __init__(self, nodes: NodeSet, vector: np.ndarray, *, origin: float = 0.0) -> None:
        self.nodes = nodes
        self.capacity: np.ndarray = nodes.capacity
        self.vector = np.asarray(vector, dtype=float)
        self.shape_key = self.vector.tobytes()
        self.slots = slots_per_node(self.capacity, self.vector)
        self._first_resource = int(np.flatnonzero(self.vector > 0)[0])
        self.total = int(self.slots.sum())
        #: breakpoint times and the free VM slots from each on (lists: a profile has some
        #: tens of rows, where numpy's cost per call is more than the work)
        self._t: list[float] = [origin]
        self._room: list[int] = [self.total]
        #: the two as arrays (:meth:`_profile_arrays`), made when a query over many rows
        #: asks, until the profile changes (None)
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        #: how many reservation starts and ends sit on each breakpoint (merged at none)
        self._refs: dict[float, int] = {}
        #: the engine's clock
        self.now = origin
        #: with every node hosting one VM at most (a trace replay's usual site): the nodes
        #: whose slot is free now, in index order, from which what each node has free and
        #: holds follows (a node with a slot, not in it, holds one reservation). A lease then
        #: takes or gives back a few list items instead of indexing arrays over nodes.
        #: None: the two arrays below are kept instead (they are stale while it is a list)
        self._free_nodes: list[int] | None = None
        #: with the list: every node from this index on is free and not listed (it joins the
        #: list when first taken). When every node has its one slot, the list starts empty
        #: and this at 0: a million idle nodes were a list of a million numbers (40 MB)
        self._tail = len(self.slots)
        if self.slots.max(initial=0) <= 1:
            if self.slots.min(initial=1) == 1:
                self._free_nodes, self._tail = [], 0
            else:
                self._free_nodes = np.flatnonzero(self.slots).tolist()
        #: what each node has free now (in VMs) and how many reservations it holds
        self._slots_now = self.slots.copy()
        self._nres_now = np.zeros(len(self.slots), dtype=np.int32)
        #: pinned reservations still holding nodes, by end (lazily cleaned)
        self._holding: list[tuple[float, int]] = []
        self._held: dict[int, Reservation] = {}
        self._reservations: dict[int, Reservation] = {}
        self._ends: list[tuple[float, int]] = []
        self._version = 0
        self._watches: list[ChangeWatch] = []
        #: ids of node power states whose end rolls on with the clock: held until moved
        #: (:meth:`move_end`), whatever the end they had when added
        self._rolling: set[int] = set()
        #: the final end each such reservation was last given (its ends are in the heaps)
        self._final_end: dict[int, float] = {}

    # ----------------------------------------------------------------- rows and breakpoints
    @property
    def horizon(self) -> float:
        return self._t[0]

    @property
    def version(self) -> int:
        return self._version

    @property
    def breakpoints(self) -> int:
        return len(self._t)

    def _profile_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The breakpoint times and free VM slots as arrays (read, do not change or keep)."""
        arrays = self._arrays
        if arrays is None:
            arrays = self._arrays = (np.array(self._t, dtype=float),
                                     np.array(self._room, dtype=np.int64))
        return arrays

    def _row(self, t: float) -> int:
        if t < self._t[0]:
            raise ValueError(f"time {t} is before the slot table's horizon {self._t[0]}")
        return bisect_right(self._t, t) - 1

    def _split(self, t: float) -> int:
        """Make ``t`` a breakpoint (if it is not one) and return its row."""
        k = self._row(t)
        if self._t[k] == t:
            return k
        self._t.insert(k + 1, t)
        self._room.insert(k + 1, self._room[k])
        self._arrays = None
        return k + 1

    def _ref(self, t: float, grows: bool = False) -> None:
        self._refs[t] = self._refs.get(t, 0) + 1

    def _unref(self, t: float, grows: bool = False) -> None:
        count = self._refs.get(t)
        if count is None:
            return
        if count > 1:
            self._refs[t] = count - 1
            return
        del self._refs[t]
        k = bisect_left(self._t, t)
        if k == 0 or k >= len(self._t) or self._t[k] != t:
            return
        del self._t[k]
        del self._room[k]
        self._arrays = None

    def _span(self, start: float, end: float) -> tuple[int, int]:
        ks = 0 if start <= self._t[0] else self._row(start)
        if end <= max(start, self._t[0]):
            return ks, ks
        ke = len(self._t) if math.isinf(end) else bisect_left(self._t, end, ks)
        return ks, ke

    def _changed(self, lo: float, hi: float, freed: bool) -> None:
        self._version += 1
        for watch in self._watches:
            watch.record(lo, hi, freed)

    def watch(self) -> ChangeWatch:
        watch = ChangeWatch()
        self._watches.append(watch)
        return watch

    # ----------------------------------------------------------------------------- changes
    @staticmethod
    def vms(res: Reservation) -> int:
        """How many VMs ``res`` holds (pinned or not)."""
        return res.pending or len(res.vm_nodes)

    def _take(self, res: Reservation, ks: int, ke: int, sign: int) -> None:
        """Take (-1) or give back (+1) ``res``'s VMs in rows ``ks:ke`` of the profile."""
        if ke <= ks:
            return
        room = self._room
        change = sign * self.vms(res)
        if sign < 0 and min(room[ks:ke]) + change < 0:
            raise OvercommitError(f"{res!r} does not fit: the site has too few free VM slots")
        for k in range(ks, ke):
            room[k] += change
        self._arrays = None

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
            self._take(res, ks, ke, -1)
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

    def _per_node(self, res: Reservation) -> np.ndarray | int:
        """How many VMs ``res`` has on each of its nodes (1 when one on each)."""
        if len(res.nodes) == len(res.vm_nodes):
            return 1
        r = self._first_resource
        return np.rint(res.amounts[:, r] / self.vector[r]).astype(np.int64)

    def _hold(self, res: Reservation) -> None:
        """``res``'s nodes are taken from now until it ends (OvercommitError, changing
        nothing, if they have not that many VMs free)."""
        nodes = res.nodes
        free = self._free_nodes
        if free is not None and len(nodes) == len(res.vm_nodes):   # one VM on each node
            # (its VMs' nodes are then its nodes, in their order, as Python numbers)
            taken = list(res.vm_nodes)
            self._list_up_to(max(taken) + 1)
            if not _take_nodes(free, taken):
                raise OvercommitError(f"{res!r} does not fit: it would over-commit a node")
        else:
            if free is not None:
                self._keep_arrays()   # (a reservation of another kind: arrays from now on)
            per_node = self._per_node(res)
            slots = self._slots_now
            left = slots[nodes] - per_node
            if np.minimum.reduce(left) < 0:
                raise OvercommitError(f"{res!r} does not fit: it would over-commit a node")
            slots[nodes] = left
            self._nres_now[nodes] += 1
        self._held[res.id] = res
        if not math.isinf(res.end):
            heapq.heappush(self._holding, (res.end, res.id))

    def _release(self, res: Reservation) -> None:
        if self._held.pop(res.id, None) is None:
            return
        nodes = res.nodes
        free = self._free_nodes
        if free is not None:   # (with the list, every reservation holds one VM a node)
            if len(nodes) == 1:
                insort(free, int(nodes[0]))
            else:
                free.extend(res.vm_nodes)   # (one VM on each node: see _hold)
                free.sort()
            return
        self._slots_now[nodes] += self._per_node(res)
        self._nres_now[nodes] -= 1

    def _list_up_to(self, end: int) -> None:
        """List the free nodes below ``end`` that the tail held (they follow every listed
        one, so the list stays in order)."""
        free = self._free_nodes
        if free is not None and end > self._tail:
            free.extend(range(self._tail, end))
            self._tail = end

    def _keep_arrays(self) -> None:
        """Stop keeping the list of free nodes: the arrays hold what each node has."""
        self._slots_now = self._slots_free()
        self._nres_now = (self.slots - self._slots_now).astype(np.int32)
        self._free_nodes = None

    def _slots_free(self) -> np.ndarray:
        """What each node has free now, in VMs (a new array with the list, else the kept
        one: read, do not change)."""
        free = self._free_nodes
        if free is None:
            return self._slots_now
        slots = np.zeros(len(self.slots), dtype=np.int64)
        slots[free] = 1
        slots[self._tail:] = 1
        return slots

    @property
    def one_per_node(self) -> bool:
        """Whether the table keeps its free nodes in a list (every node hosts one VM at most):
        :meth:`first_free` answers then."""
        return self._free_nodes is not None

    def first_free(self, count: int) -> list[int] | None:
        """The ``count`` lowest-indexed nodes with their slot free now (None if fewer are
        free); only when :attr:`one_per_node`."""
        free = self._free_nodes
        if free is None:
            raise RuntimeError("the table keeps no list of free nodes")
        if count > len(free):
            self._list_up_to(min(len(self.slots), self._tail + count - len(free)))
        return free[:count] if count <= len(free) else None

    def free_nodes(self) -> list[int]:
        """Every node with its slot free now, in index order (the table's own list: read, do
        not change or keep); only when :attr:`one_per_node`. The nodes never taken, which the
        list otherwise leaves implied, are listed first."""
        free = self._free_nodes
        if free is None:
            raise RuntimeError("the table keeps no list of free nodes")
        self._list_up_to(len(self.slots))
        return free

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
            self._take(res, *self._span(start, res.end), +1)
        if not math.isinf(res.end):
            self._unref(res.end, True)
        self._unref(res.start, False)
        self._release(res)
        self._changed(start, res.end, True)

    def truncate(self, res: Reservation, new_end: float) -> None:
        """End ``res`` early at ``new_end``."""
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
        self._take(res, ks, ke, +1)
        old_end = res.end
        res.end = new_end
        if not math.isinf(old_end):
            self._unref(old_end, True)
        heapq.heappush(self._ends, (new_end, res.id))
        if res.id in self._held:
            if new_end <= self.now:
                self._release(res)
            else:
                heapq.heappush(self._holding, (new_end, res.id))
        self._changed(new_end, old_end, True)

    def move_pending(self, old: Reservation, new: Reservation) -> None:
        """Put ``new`` in the place of ``old``, both pending (a plan moved): the table ends as
        :meth:`remove` of ``old`` then :meth:`add` of ``new`` leave it (rows, breakpoints,
        ends and what watches record), and the rows both cover are left as they are.
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

    # ----------------------------------------------------- node power states (at-start)
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
        self._take(res, ks, ke, -1 if until > end else +1)
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

    def cap_vms(self, most: int) -> None:
        """Hold at most ``most`` VMs at any instant: a power cap that bounds the VMs running
        at once (:mod:`~lease_manager.energy.counted_cap`). Only on an empty table."""
        if self._reservations:
            raise ValueError("a counted table's VM bound is set before anything is placed")
        self.total = min(self.total, most)
        self._room = [self.total] * len(self._room)
        self._arrays = None

    def refuses(self, lease: Lease) -> str:
        """Why the table cannot take ``lease`` ('' if it can)."""
        if lease.vms.shape_key != self.shape_key:
            return ("its VMs are not of the site's one VM shape, which placement = at-start "
                    "needs")
        return ""

    # ----------------------------------------------------------------------------- queries
    def _count(self, demand: VMRequest) -> int:
        if demand.shape_key != self.shape_key:
            raise ValueError("a counted table holds VMs of one shape only")
        return demand.count

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

    def _own_rows(self, own: Reservation | None, after: float, k0: int,
                  k_end: int) -> tuple[int, int]:
        """Rows ``lo:hi`` (relative to ``k0``, within ``k0:k_end``) where ``own`` counts as
        free from ``after`` on (``lo >= hi``: none)."""
        if own is None or own.id not in self._reservations or not own.end > after:
            return 0, 0
        lo, hi = self._span(max(own.start, after), own.end)
        return max(lo, k0) - k0, min(hi, k_end) - k0

    def iter_fit_starts(self, demand: VMRequest, duration: float, after: float, *,
                        not_after: float | None = None,
                        site_demand: np.ndarray | None = None,
                        own: Reservation | None = None,
                        released: Sequence[Reservation] = ()) -> Iterator[float]:
        """Candidate starts ``s >= after`` (earliest first) at which ``demand`` fits all
        through ``[s, s + duration)`` (exact); ``own`` counts as free from ``after`` on.

        Candidates are ``after`` and the later breakpoints where free slots grow: a window
        that fits from a breakpoint where they do not grow fits from the one before too.
        The first is found by :meth:`earliest_fit`'s scan; the others, as the table is
        when they are asked for (a caller that takes the first asks for no more)."""
        if released or not duration > 0:
            yield from self._fit_starts(demand, duration, after, not_after=not_after, own=own,
                                        released=released)
            return
        first = self.earliest_fit(demand, duration, after, not_after=not_after, own=own)
        if first is None:
            return
        yield first
        for start in self._fit_starts(demand, duration, after, not_after=not_after, own=own):
            if start > first:
                yield start

    def _fit_starts(self, demand: VMRequest, duration: float, after: float, *,
                    not_after: float | None = None, own: Reservation | None = None,
                    released: Sequence[Reservation] = ()) -> Iterator[float]:
        """Every candidate of :meth:`iter_fit_starts`, from arrays or (over a few rows) in
        plain Python."""
        if released:
            raise NotImplementedError("preemption needs placement = when-planned")
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
                     own: Reservation | None = None,
                     released: Sequence[Reservation] = ()) -> float | None:
        """The first of :meth:`iter_fit_starts`' candidates, or ``None``: the start of the
        first run of rows with room that lasts ``duration`` (a window that fits from later
        in a run fits from its start too), found row by row, up to it only."""
        if released or not duration > 0:
            return next(self._fit_starts(demand, duration, after, not_after=not_after,
                                         own=own, released=released), None)
        if not_after is not None and not_after < after:
            return None
        count = self._count(demand)
        times, room = self._t, self._room
        k0 = self._row(after)
        k_end = (len(times) if not_after is None or math.isinf(duration)
                 else bisect_left(times, not_after + duration, k0 + 1))
        lo, hi = self._own_rows(own, after, k0, k_end)
        extra = self.vms(own) if hi > lo and own is not None else 0
        lo, hi = lo + k0, hi + k0
        begin = None   # the start of the run of rows with room being read (None: none)
        end = math.inf
        for k in range(k0, k_end):
            if begin is not None and times[k] >= end:
                return begin   # no row without room before the window's end
            if room[k] + (extra if lo <= k < hi else 0) >= count:
                if begin is None:
                    begin = float(after) if k == k0 else times[k]
                    if not_after is not None and begin > not_after:
                        return None
                    end = begin + duration
            else:
                begin = None
        return begin   # (a run up to the last row looked at fits)

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
        end = None   # where a window from the start of the run being read would end
        for k in range(k0, kb):
            if end is not None and end <= times[k]:
                return True
            if room[k] >= count:
                if end is None:
                    end = (after if k == k0 else times[k]) + duration
            else:
                end = None
        return False

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
        begin = None   # the start of the run of rows with room being read (None: none)
        end = math.inf
        for k in range(k0, kb):
            if begin is not None and times[k] >= end:
                return begin   # no row without room before the window's end
            if room[k] >= count:
                if begin is None:
                    begin = float(after) if k == k0 else times[k]
                    end = begin + duration
            else:
                begin = None
        if begin is None:
            return None
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

    # per-node answers: for now only (host selection and the mapper, when a lease starts)
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

    def change_points(self, after: float, until: float = math.inf,
                      node: int | None = None) -> list[float]:
        if node is not None:
            raise NotImplementedError("with placement = at-start, nodes have no future plan")
        lo = bisect_right(self._t, after)
        return self._t[lo:bisect_left(self._t, until, lo)]

    def next_start_on(self, node: int, after: float, skip: frozenset = frozenset()) -> float:
        raise NotImplementedError("with placement = at-start, nodes have no future plan")

    def site_free_at(self, t: float) -> np.ndarray:
        return np.zeros(0)   # no site-wide resources (no power cap)

    def site_capacity_at(self, t: float) -> np.ndarray:
        return np.zeros(0)

    def site_room(self, demands: Sequence[tuple[float, float, float]], resource: int = 0
                  ) -> float:
        raise NotImplementedError("placement = at-start takes no site-wide resources")

    def earliest_fit_on(self, nodes: np.ndarray, amounts: np.ndarray, duration: float,
                        after: float, not_after: float | None = None) -> float | None:
        raise NotImplementedError("with placement = at-start, nodes have no future plan")

    def view(self) -> SlotTableView:
        return SlotTableView(self)   # type: ignore[arg-type]

    def __contains__(self, res: object) -> bool:
        return isinstance(res, Reservation) and self._reservations.get(res.id) is res

    def __len__(self) -> int:
        return len(self._reservations)

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
