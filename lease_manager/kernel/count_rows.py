"""The count table's rows and nodes: free VM slots over time, and what each node has now.

:class:`CountRows` is the state of a :class:`~lease_manager.kernel.count_table.CountTable`
(see that module for the model): the profile of free VM slots (a list beside the breakpoints),
and what each node has free at the engine's clock, as a sorted list of the nodes with their
slot free when every node hosts one VM at most, else as arrays over nodes. Its changes take and
give back rows (:meth:`CountRows._apply`) and nodes (:meth:`CountRows._hold`,
:meth:`CountRows._release`); :mod:`~lease_manager.kernel.count_fitting` reads the rows.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.errors import OvercommitError
from lease_manager.kernel.reservation import Reservation
from lease_manager.kernel.slot_rows import EPS
from lease_manager.kernel.table_rows import TableRows

if TYPE_CHECKING:
    from lease_manager.kernel.lease import VMRequest
    from lease_manager.kernel.resources import NodeSet

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


class CountRows(TableRows):
    """Free VM slots of one site over time, and what each node has free now (the state of a
    count table, and its bookkeeping)."""

    def __init__(self, nodes: NodeSet, vector: np.ndarray, *, origin: float = 0.0) -> None:
        super().__init__(origin)
        self.nodes = nodes
        self.capacity: np.ndarray = nodes.capacity
        self.vector = np.asarray(vector, dtype=float)
        self.shape_key = self.vector.tobytes()
        self.slots = slots_per_node(self.capacity, self.vector)
        self._first_resource = int(np.flatnonzero(self.vector > 0)[0])
        self.total = int(self.slots.sum())
        #: the free VM slots from each breakpoint on (lists: a profile has some tens of rows,
        #: where numpy's cost per call is more than the work)
        self._room: list[int] = [self.total]
        #: the two as arrays (:meth:`_profile_arrays`), made when a query over many rows
        #: asks, until the profile changes (None)
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
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
        #: ids of node power states whose end rolls on with the clock: held until moved
        #: (:meth:`move_end`), whatever the end they had when added
        self._rolling: set[int] = set()
        #: the final end each such reservation was last given (its ends are in the heaps)
        self._final_end: dict[int, float] = {}

    def _profile_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The breakpoint times and free VM slots as arrays (read, do not change or keep)."""
        arrays = self._arrays
        if arrays is None:
            arrays = self._arrays = (np.array(self._t, dtype=float),
                                     np.array(self._room, dtype=np.int64))
        return arrays

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

    def _changed(self, lo: float, hi: float, freed: bool) -> None:
        self._version += 1
        for watch in self._watches:
            watch.record(lo, hi, freed)

    @staticmethod
    def vms(res: Reservation) -> int:
        """How many VMs ``res`` holds (pinned or not)."""
        return res.pending or len(res.vm_nodes)

    def _apply(self, res: Reservation, ks: int, ke: int, sign: int) -> None:
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

    def _count(self, demand: VMRequest) -> int:
        if demand.shape_key != self.shape_key:
            raise ValueError("a counted table holds VMs of one shape only")
        return demand.count

    def _own_rows(self, own: Reservation | None, after: float, k0: int,
                  k_end: int) -> tuple[int, int]:
        """Rows ``lo:hi`` (relative to ``k0``, within ``k0:k_end``) where ``own`` counts as
        free from ``after`` on (``lo >= hi``: none)."""
        if own is None or own.id not in self._reservations or not own.end > after:
            return 0, 0
        lo, hi = self._span(max(own.start, after), own.end)
        return max(lo, k0) - k0, min(hi, k_end) - k0

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
