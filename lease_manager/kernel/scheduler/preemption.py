"""Preemption: which leases to preempt so that an advance reservation fits (most preemptable
first, one more at a time, as Haizea's mapper does), and making a lease give up its resources:
a planned one is requeued, a running one suspended (its suspension ends exactly when the
preemptor starts) or, without suspension, cancelled and requeued, losing its work."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.scheduler import haizea_asap
from lease_manager.kernel.slottable import Reservation
from lease_manager.kernel.slottable import ReservationKind as K

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler

S = LeaseState


def _victims(self: LeaseScheduler, lease: Lease, start: float, duration: float,
             now: float) -> list[Lease] | None:
    """The leases to preempt so that ``lease`` fits at ``start`` (most preemptable first,
    one more at a time, as Haizea's mapper does), or None if no set of them suffices."""
    if self.preemption is None:
        return None
    scored: dict[int, tuple[float, Lease]] = {}
    for res in self.table.reservations_between(start, start + duration):
        other = res.lease
        if (not isinstance(other, Lease) or other.id in scored or other is lease
                or other.state not in (S.SCHEDULED, S.ACTIVE)):
            continue
        score = self.preemption.score(lease, other, now)
        if score is not None:
            scored[other.id] = (score, other)
    chosen: list[Lease] = []
    released: list[Reservation] = []
    haizea = self.preemption_order == "least-preemptable-first"   # Haizea's mapper's order
    for _, other in sorted(scored.values(), key=lambda item: (item[0] if haizea else -item[0],
                                                              item[1].id)):
        chosen.append(other)
        released.extend(other.reservations)
        if self.table.earliest_fit(lease.vms, duration, start, not_after=start,
                                   released=released) is not None:
            return chosen
    return None


def _preempt(self: LeaseScheduler, lease: Lease, by_start: float, now: float) -> None:
    """Make ``lease`` give up its resources from ``by_start`` on."""
    lease.preemptions += 1
    self._ars.discard(lease.id)   # a third-party policy may preempt an AR
    if lease.state is S.SCHEDULED:    # not started: give up the plan, back to the queue
        for res in lease.reservations:
            self.table.remove(res)
        lease.reservations = []
        self._drop_future(lease)
        self._move(lease, S.QUEUED, now)
        self._requeue(lease)
    else:                              # running
        res = lease.reservations[0]
        suspend = self.suspend_resume.suspend_time(res) if self._can_suspend(lease) else None
        if (suspend is not None and self.haizea_planning
                and by_start - res.start < haizea_asap.threshold(self, lease)):
            suspend = None   # Haizea's can_suspend_at: it has not run long enough

        if suspend is not None and by_start - suspend >= now:
            stop = by_start - suspend
            for later in lease.reservations[1:]:
                self.table.remove(later)
            if stop < res.end:
                self.table.truncate(res, stop)
            plan = [res]
            if suspend > 0:
                plan.append(Reservation(lease, stop, by_start, res.nodes, res.amounts, None,
                                        K.SUSPEND, res.vm_nodes, res.vm_shape))
                self.table.add(plan[-1])
            lease.reservations = plan
            if stop <= now:
                self._begin_suspension(lease, now)
            elif suspend > 0:
                self.timeline.push(stop, EventKind.START, plan[-1])
            if suspend > 0:
                self.timeline.push(by_start, EventKind.SEGMENT_END, plan[-1])
            else:   # nothing to write: suspended the moment it stops
                self.timeline.push(stop, EventKind.SEGMENT_END, res)
        else:                          # cancelled now and requeued, losing its work
            for later in lease.reservations[1:]:
                self.table.remove(later)
            self.table.truncate(res, now)
            lease.allocations.append(res)
            lease.reservations = []
            lease.work_done = 0.0
            del self.running[lease.id]
            self._enactment.stop(lease, now)
            self._move(lease, S.QUEUED, now)
            self._requeue(lease)
    self._emit("lease_preempted", lease=lease, now=now)
