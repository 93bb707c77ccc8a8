"""The mapper: places a lease's VMs on physical nodes for a whole interval.

Hosts are visited in the order a host-selection policy returns; each host takes as many of the
lease's VMs as fit on its free capacity all through the interval (Haizea's greedy mapper).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np

from lease_manager.kernel.slottable import EPS, Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease, VMRequest
    from lease_manager.kernel.table_protocol import TableQueries


@attrs.frozen(eq=False)
class Placement:
    """Where a lease's VMs go: ``vm_nodes[i]`` is the node of VM ``i`` (groups in order)."""

    vm_nodes: tuple[int, ...]
    nodes: np.ndarray      # distinct nodes used, in the order they were filled
    amounts: np.ndarray    # what the lease holds on each of ``nodes``

    #: the VMs' shape (``vector.tobytes()``) when they all have one
    vm_shape: bytes | None = None

    @classmethod
    def on_nodes(cls, vm_nodes: Sequence[int], demand: VMRequest) -> Placement:
        """The placement of ``demand``'s VMs on the given nodes (one per VM, groups in order)."""
        per_vm = demand.per_vm()
        if len(vm_nodes) != len(per_vm):
            raise ValueError(f"{len(vm_nodes)} nodes given for {len(per_vm)} VMs")
        nodes: list[int] = []
        sums: dict[int, np.ndarray] = {}
        for node, vector in zip(vm_nodes, per_vm):
            if node not in sums:
                nodes.append(int(node))
                sums[node] = np.zeros_like(vector)
            sums[node] = sums[node] + vector
        return cls(tuple(int(n) for n in vm_nodes), np.asarray(nodes, dtype=np.intp),
                   np.array([sums[n] for n in nodes]), demand.shape_key)

    @classmethod
    def one_per_node(cls, vm_nodes: tuple[int, ...], nodes: np.ndarray,
                     vector: np.ndarray) -> Placement:
        """One VM of shape ``vector`` on each of ``nodes`` (``vm_nodes``: the same nodes)."""
        shape = vector.tobytes()
        return cls(vm_nodes, nodes, _rows_of(shape, vector.dtype.str, len(vm_nodes)), shape)

    def reservation(self, lease: Lease | None, start: float, end: float,
                    site_amount: np.ndarray | None = None,
                    kind: ReservationKind = ReservationKind.VM) -> Reservation:
        return Reservation(lease, start, end, self.nodes, self.amounts, site_amount, kind,
                           self.vm_nodes, self.vm_shape)


def reservation_one_per_node(lease: Lease, start: float, end: float,
                             nodes: list[int]) -> Reservation:
    """``lease``'s VM reservation over ``[start, end)`` with one VM of its one shape on each of
    ``nodes`` (distinct, in increasing order: the counting table's free nodes):
    ``Placement.one_per_node(tuple(nodes), np.array(nodes), vector)``'s reservation, made
    without the placement (a replay makes one per lease that starts)."""
    demand = lease.vms
    shape = demand.shape_key
    vector = demand.vectors[0]
    dtype = _FLOAT_CODE if vector.dtype is _FLOAT else vector.dtype.str
    count = len(nodes)
    first = nodes[0]   # (a reservation has a VM at least)
    # increasing nodes that span as many indices as they are make a range: the same array,
    # made without reading the list (most leases of a replay start on consecutive nodes)
    array = (np.arange(first, first + count, dtype=np.intp) if nodes[-1] - first == count - 1
             else np.array(nodes, dtype=np.intp))
    return Reservation(lease, start, end, array, _rows_of(shape, dtype, count), None,
                       ReservationKind.VM, tuple(nodes), shape)


_FLOAT = np.dtype(float)
_FLOAT_CODE = _FLOAT.str


@functools.lru_cache(maxsize=4096)
def _rows_of(shape: bytes, dtype: str, count: int) -> np.ndarray:
    """``count`` rows of the VM shape ``shape`` (a vector's bytes), read-only: reservations of
    as many VMs, one a node, share them (a replay makes one per lease)."""
    rows = np.empty((count, len(shape) // np.dtype(dtype).itemsize), dtype=dtype)
    rows[:] = np.frombuffer(shape, dtype=dtype)
    rows.flags.writeable = False
    return rows


def place(table: TableQueries, demand: VMRequest, start: float, end: float,
          order: Sequence[int] | np.ndarray) -> Placement | None:
    """Map ``demand`` onto the nodes in ``order`` over ``[start, end)``; ``None`` if it fails."""
    if len(demand.counts) == 1:
        fits = table.vm_fits(demand.vectors[0], start, end)
        return _place_counts(fits, demand.counts[0], demand.vectors[0],
                             np.asarray(order, dtype=np.intp))
    return _place_mixed(table.min_free(start, end), demand, np.asarray(order, dtype=np.intp))


def place_on(free: np.ndarray, demand: VMRequest,
             order: Sequence[int] | np.ndarray) -> Placement | None:
    """Map ``demand`` onto nodes with free capacity ``free`` (nodes x types), visiting ``order``."""
    order = np.asarray(order, dtype=np.intp)
    if len(demand.counts) == 1:
        return _place_uniform(free, demand.counts[0], demand.vectors[0], order)
    return _place_mixed(free, demand, order)


def _place_uniform(free: np.ndarray, count: int, vector: np.ndarray,
                   order: np.ndarray) -> Placement | None:
    pos = vector > 0
    if pos.any():
        fits = np.floor((free[:, pos] / vector[pos]).min(axis=1) + EPS)
    else:
        fits = np.full(len(free), float(count))
    return _place_counts(fits, count, vector, order)


def _place_counts(fits: np.ndarray, count: int, vector: np.ndarray,
                  order: np.ndarray) -> Placement | None:
    """Fill hosts in ``order``, each with as many VMs as it can host (``fits[node]``)."""
    fits = fits[order]
    # (the ufunc itself: ``fits.max()`` adds a Python wrapper per lease)
    if count == 1 or np.maximum.reduce(fits, initial=0) <= 1:
        # one VM per host: the first hosts that can. A copy: a slice would keep the whole
        # filtered array (every fitting node) alive as long as the reservation, 8 bytes per
        # node of the site per lease
        nodes = order[fits > 0][:count].copy()
        if len(nodes) < count:
            return None
        return Placement.one_per_node(tuple(nodes.tolist()), nodes, vector)
    cum = np.cumsum(fits)
    last = int(np.searchsorted(cum, count - 0.5))   # first host where the running total >= count
    if last >= len(order):
        return None
    take = fits[: last + 1].astype(np.intp)
    take[last] = count - (int(cum[last - 1]) if last > 0 else 0)
    used = take > 0
    nodes = order[: last + 1][used]
    per_node = take[used]
    vm_nodes = tuple(np.repeat(nodes, per_node).tolist())
    amounts = per_node[:, None] * vector[None, :]
    return Placement(vm_nodes, nodes, amounts, vector.tobytes())


def _place_mixed(free: np.ndarray, demand: VMRequest, order: np.ndarray) -> Placement | None:
    """First fit of every VM, largest first, over the hosts in order."""
    free = free.copy()
    per_vm = demand.per_vm()
    scale = np.where(free.max(axis=0) > 0, free.max(axis=0), 1.0)
    vm_order = sorted(range(len(per_vm)), key=lambda i: (-float((per_vm[i] / scale).sum()), i))
    vm_nodes = [0] * len(per_vm)
    for i in vm_order:
        need = per_vm[i]
        for node in order.tolist():
            if (free[node] - need >= -EPS).all():
                free[node] -= need
                vm_nodes[i] = node
                break
        else:
            return None
    nodes: list[int] = []
    for node in vm_nodes:
        if node not in nodes:
            nodes.append(node)
    index = {node: k for k, node in enumerate(nodes)}
    amounts = np.zeros((len(nodes), per_vm.shape[1]))
    for i, node in enumerate(vm_nodes):
        amounts[index[node]] += per_vm[i]
    return Placement(tuple(vm_nodes), np.asarray(nodes, dtype=np.intp), amounts)
