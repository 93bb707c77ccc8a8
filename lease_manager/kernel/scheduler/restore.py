"""Taking leases back after a daemon restarts: running work on its nodes, accepted leases
planned again without admission, queued (and suspended) leases in their places."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.mapper import Placement
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.plan_book import PlanBook
    from lease_manager.kernel.scheduler.queue import Backfiller
    from lease_manager.kernel.scheduler.reservations import OwnSlots
    from lease_manager.kernel.scheduler.seams import Enactment
    from lease_manager.kernel.slottable import SlotTable

S = members(LeaseState)
K = members(ReservationKind)
LT = members(LeaseType)


class RestoreHost(Protocol):
    """What restoring asks of the scheduler (:class:`~lease_manager.kernel.scheduler.
    LeaseScheduler`). A back-reference: a restored lease goes through the scheduler's own
    paths (the queue, the slots of its own, the state machine), only without admission."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def plans(self) -> PlanBook: ...
    @property
    def running(self) -> dict[int, Lease]: ...
    @property
    def _enactment(self) -> Enactment: ...
    @property
    def own_slots(self) -> OwnSlots: ...
    def length(self, lease: Lease) -> float: ...
    def work_end(self, lease: Lease, start: float) -> float: ...
    def _move(self, lease: Lease, state: LeaseState, now: float) -> None: ...
    @property
    def backfiller(self) -> Backfiller: ...


class Restorer:
    """One scheduler's restore after a daemon restart; it owns whether a restore is under
    way (a lease that cannot be planned again then fails instead of being rejected)."""

    __slots__ = ("restoring", "_sched")

    def __init__(self, sched: RestoreHost) -> None:
        self._sched = sched
        #: a lease accepted before the restart is being planned again
        self.restoring = False

    def running(self, lease: Lease, vm_nodes: tuple[int, ...], now: float) -> Reservation:
        """Take back a NEW lease object found running after a restart: its VMs hold
        ``vm_nodes`` from ``now`` for the rest of its work (an advance reservation: to the end
        of its interval); ``lease.work_done`` is the work done before ``now``. Raises
        :class:`~lease_manager.errors.OvercommitError` if the nodes are taken.

        Restore running leases first, then planned ones (:meth:`planned`), then queued ones
        (:meth:`queued`), so that every lease finds the room it had."""
        sched = self._sched
        if lease.type is LT.ADVANCE_RESERVATION:
            assert lease.start_request is not None, "an advance reservation has a start"
            end = lease.start_request + lease.requested_duration
            sched.plans.add_ar(lease.id)
        else:
            end = now + sched.length(lease)
        res = Placement.on_nodes(vm_nodes, lease.vms).reservation(lease, now, end)
        sched.table.add(res)
        lease.reservations = [res]
        sched.running[lease.id] = lease
        sched._move(lease, S.SCHEDULED, now)
        sched._move(lease, S.ACTIVE, now)
        sched._enactment.start(lease, res, min(end, sched.work_end(lease, now)))
        return res

    def planned(self, lease: Lease, now: float) -> None:
        """Plan a NEW lease object that had been accepted before a restart, without admission
        or pricing: an advance reservation keeps what is left of its interval, an immediate
        or deadline lease is planned again (it fails, with the reason, if it cannot be), a
        best-effort lease is queued in its place."""
        sched = self._sched
        self.restoring = True
        try:
            if lease.type is LT.BEST_EFFORT:
                sched.backfiller.enqueue(lease, now)
            elif lease.type is LT.ADVANCE_RESERVATION:
                sched.own_slots.advance(lease, now)
            elif lease.type is LT.IMMEDIATE:
                sched.own_slots.immediate(lease, now)
            else:
                sched.own_slots.deadline(lease, now)
        finally:
            self.restoring = False

    def queued(self, lease: Lease, image_nodes: tuple[int, ...] = ()) -> None:
        """Queue a NEW lease object that was queued (or held) before a restart; with
        ``image_nodes``, it is a suspended lease whose memory images are on those nodes."""
        if image_nodes:
            lease.image_nodes = tuple(image_nodes)
            image = Placement.on_nodes(image_nodes, lease.vms).reservation(
                lease, lease.suspended_at or 0.0, lease.suspended_at or 0.0, kind=K.IMAGE)
            lease.allocations.append(image)
        self._sched.backfiller.enqueue(lease, lease.suspended_at or lease.submit)
