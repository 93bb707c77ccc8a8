"""Projected utilisation of a lease's interval, shared by admission and pricing policies.

The projection reads the schedule only through the slot table's public queries
(``reservations_between``, ``capacity``): the CPU reserved over the interval (every
reservation, whatever its kind) plus the lease's own demand, over the site's CPU capacity
times the interval's length, integrated exactly over the interval.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.reservation import Reservation
    from lease_manager.kernel.resources import ResourceTypes
    from lease_manager.kernel.slottable import SlotTable, SlotTableView


def cpu_index(types: ResourceTypes) -> int:
    """The index of the ``CPU`` resource type (the first type if the site has no ``CPU``)."""
    return types.names.index("CPU") if "CPU" in types.names else 0


def lease_interval(lease: Lease, now: float) -> tuple[float, float]:
    """The interval a lease would occupy, as admission sees it: from its requested start
    (advance reservations; the earliest start of deadline leases), never before ``now``, or
    from ``now`` (best-effort and immediate leases), for its requested duration."""
    start = now if lease.start_request is None else max(now, lease.start_request)
    return start, start + lease.requested_duration


class Projection(NamedTuple):
    """Utilisation of ``[start, end)`` if the lease were added (a fraction of capacity)."""

    utilization: float
    start: float
    end: float
    #: CPU-seconds reserved over the interval before the lease (for an unlimited interval:
    #: the CPU reserved for ever)
    reserved: float
    #: the lease's CPU (total over its VMs)
    demand: float
    #: the site's CPU
    capacity: float


def _held(res: Reservation, resource: int) -> float:
    """How much of ``resource`` ``res`` holds over the site: on its nodes, or (a reservation
    of a table that counts VMs, with no nodes until it starts) its VMs' total."""
    if res.pending:
        assert res.lease is not None
        return float(res.pending * res.lease.vms.vectors[0][resource])
    return float(res.amounts[:, resource].sum())


def projected_utilization(table: SlotTable | SlotTableView, lease: Lease, now: float,
                          resource: int = 0) -> Projection:
    """The utilisation of resource ``resource`` over the lease's interval
    (:func:`lease_interval`) if the lease were added:

        (integral over [start, end) of the reserved amount + demand x (end - start))
        / (capacity x (end - start))

    For an unlimited lease it is the limit as the end goes to infinity: (what reservations hold
    for ever + demand) / capacity.
    """
    start, end = lease_interval(lease, now)
    capacity = float(table.capacity[:, resource].sum())
    demand = float(lease.vms.total[resource])
    reservations = table.reservations_between(start, end)
    if math.isinf(end):
        reserved = sum(_held(r, resource) for r in reservations if math.isinf(r.end))
        used, span = reserved + demand, 1.0
    else:
        reserved = sum(_held(r, resource) * (min(r.end, end) - max(r.start, start))
                       for r in reservations)
        span = end - start
        used = reserved + demand * span
    if capacity <= 0:
        return Projection(math.inf if used > 0 else 0.0, start, end, reserved, demand, capacity)
    return Projection(used / (capacity * span), start, end, reserved, demand, capacity)
