"""Taking leases back after a daemon restarts: running work on its nodes, accepted leases
planned again without admission, queued (and suspended) leases in their places."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.mapper import Placement
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler

S = members(LeaseState)
K = members(ReservationKind)
LT = members(LeaseType)


def restore_running(self: LeaseScheduler, lease: Lease, vm_nodes: tuple[int, ...],
                    now: float) -> Reservation:
    """Take back a NEW lease object found running after a restart: its VMs hold
    ``vm_nodes`` from ``now`` for the rest of its work (an advance reservation: to the end
    of its interval); ``lease.work_done`` is the work done before ``now``. Raises
    :class:`~lease_manager.errors.OvercommitError` if the nodes are taken.

    Restore running leases first, then planned ones (:meth:`restore_planned`), then
    queued ones (:meth:`restore_queued`), so that every lease finds the room it had."""
    if lease.type is LT.ADVANCE_RESERVATION:
        assert lease.start_request is not None, "an advance reservation has a start"
        end = lease.start_request + lease.requested_duration
        self.plans.add_ar(lease.id)
    else:
        end = now + self.length(lease)
    res = Placement.on_nodes(vm_nodes, lease.vms).reservation(lease, now, end)
    self.table.add(res)
    lease.reservations = [res]
    self.running[lease.id] = lease
    self._move(lease, S.SCHEDULED, now)
    self._move(lease, S.ACTIVE, now)
    self._enactment.start(lease, res, min(end, self.work_end(lease, now)))
    return res


def restore_planned(self: LeaseScheduler, lease: Lease, now: float) -> None:
    """Plan a NEW lease object that had been accepted before a restart, without admission
    or pricing: an advance reservation keeps what is left of its interval, an immediate
    or deadline lease is planned again (it fails, with the reason, if it cannot be), a
    best-effort lease is queued in its place."""
    self._restoring = True
    try:
        if lease.type is LT.BEST_EFFORT:
            self._enqueue(lease, now)
        elif lease.type is LT.ADVANCE_RESERVATION:
            self._schedule_ar(lease, now)
        elif lease.type is LT.IMMEDIATE:
            self._schedule_immediate(lease, now)
        else:
            self._schedule_deadline(lease, now)
    finally:
        self._restoring = False


def restore_queued(self: LeaseScheduler, lease: Lease, image_nodes: tuple[int, ...] = ()) -> None:
    """Queue a NEW lease object that was queued (or held) before a restart; with
    ``image_nodes``, it is a suspended lease whose memory images are on those nodes."""
    if image_nodes:
        lease.image_nodes = tuple(image_nodes)
        image = Placement.on_nodes(image_nodes, lease.vms).reservation(
            lease, lease.suspended_at or 0.0, lease.suspended_at or 0.0, kind=K.IMAGE)
        lease.allocations.append(image)
    self._enqueue(lease, lease.suspended_at or lease.submit)
