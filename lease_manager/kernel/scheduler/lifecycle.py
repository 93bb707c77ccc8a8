"""Events of planned and running leases: a segment starts or ends, work finishes, a lease is
cancelled or fails. Timeline events of plans that have changed since are stale and ignored."""

from __future__ import annotations

from sys import getrefcount
from typing import TYPE_CHECKING

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler

S = members(LeaseState)
K = members(ReservationKind)
EK = members(EventKind)


def segment_started(self: LeaseScheduler, res: Reservation, now: float) -> None:
    """A planned segment begins (stale events, of plans that changed, are ignored)."""
    lease = res.lease
    if lease is None or res.start != now or not lease.holds(res):
        return
    kind = res.kind
    if kind == K.VM:
        if lease.state is S.MIGRATING:   # moved, with nothing to read back: resumed at once
            self._move(lease, S.RESUMING, now)
        if lease.state not in (S.SCHEDULED, S.RESUMING):
            return
        if res.pending:
            self._pin(res, now)
        while lease.reservations[0] is not res:   # a resumption that is over
            lease.allocations.append(lease.reservations.pop(0))
        if lease.state is S.SCHEDULED:
            self.plans.drop(lease.id)
            if lease.start is None:
                lease.start = now
        self.plans.vms_started(lease.id)   # (Haizea's: held until the VMs start)
        if lease.suspended_at is not None:   # a resumption (taking time or not) is over
            lease.time_suspended += now - lease.suspended_at
            lease.suspended_at = None
        self._move(lease, S.ACTIVE, now)
        self.running[lease.id] = lease
        self._emit_lease("lease_started", lease, now)
        self._enactment.start(lease, res, self.work_end(lease, now))
    elif kind == K.MIGRATE and lease.state is S.SCHEDULED:
        _leave_future(self, lease)
        self._move(lease, S.MIGRATING, now)
        self.running[lease.id] = lease
    elif kind == K.RESUME and lease.state in (S.SCHEDULED, S.MIGRATING):
        _leave_future(self, lease)
        self._move(lease, S.RESUMING, now)
        self.running[lease.id] = lease
    elif kind == K.SUSPEND and lease.state is S.ACTIVE:
        self._begin_suspension(lease, now)


def _leave_future(self: LeaseScheduler, lease: Lease) -> None:
    """A planned resumption begins: the lease is no longer planned. With Haizea's model its
    backfilling reservation counts until its VMs start, as Haizea's future leases do."""
    if self.settings.haizea_planning:
        self.plans.leave(lease.id)
    else:
        self.plans.drop(lease.id)


def segment_ended(self: LeaseScheduler, res: Reservation, now: float) -> None:
    """A planned segment ends: a suspension completes and the lease goes back to the queue."""
    lease = res.lease
    if lease is None or not lease.holds(res):
        return
    if res.kind == K.VM and lease.state is S.ACTIVE:   # a suspension taking no time
        self._begin_suspension(lease, now)
    if lease.state is not S.SUSPENDING:
        return
    done = lease.reservations.index(res) + 1
    resumption = lease.reservations[done:]
    lease.allocations.extend(lease.reservations[:done])
    lease.reservations = []
    lease.image_nodes = res.vm_nodes
    del self.running[lease.id]
    self._move(lease, S.SUSPENDED, now)
    self._move(lease, S.QUEUED, now)
    if resumption:   # a deadline lease preempted with its resumption planned (preemption.py)
        self._move(lease, S.SCHEDULED, now)
        self._adopt(lease, resumption, now)
        for later in resumption:   # a further suspension it plans (preempted again)
            if later.kind == K.SUSPEND:
                self.timeline.push(later.end, EK.SEGMENT_END, later)
        return
    self._requeue(lease)


def work_finished(self: LeaseScheduler, res: Reservation, now: float) -> None:
    """The lease's work finished at ``now`` (END event of its running reservation)."""
    lease = res.lease
    if (lease is None or lease.state is not S.ACTIVE or not lease.reservations
            or lease.reservations[0] is not res or now > res.end):
        return
    if now < res.end and self.reeval.at_each_end and not self.reeval.replanning:
        self.reeval.premature_end(res, now)   # re-plan or compress at once
        return
    if now < res.end:
        self.table.truncate(res, now)
        self.reeval.request()
    for later in lease.reservations[1:]:   # a planned suspension it no longer needs
        self.table.remove(later)
    lease.allocations.append(res)
    lease.reservations = []
    # (Lease.run_duration written out: min(actual, requested))
    requested, actual = lease.requested_duration, lease.actual_duration
    lease.work_done = requested if actual is None or requested < actual else actual
    lease.image_nodes = ()
    self._finish(lease, S.DONE, now)


def _finish(self: LeaseScheduler, lease: Lease, state: LeaseState, now: float) -> None:
    lease.end = now
    self.plans.drop_ar(lease.id)
    self.running.pop(lease.id, None)
    if lease.time_suspended > 0:
        lease.price = (lease.price or 0.0) + self.pricing.surcharge(lease,
                                                                    lease.time_suspended)
    self._move(lease, state, now)
    self._enactment.stop(lease, now)
    self._emit_lease("lease_ended", lease, now)
    self._ended.append(lease)
    if len(self._ended) > MAX_ENDED:   # (a driver that never calls untie_ended: no growth)
        self.untie_ended()


#: ended leases waiting for :func:`untie_ended`, at most
MAX_ENDED = 4096


def untie_ended(self: LeaseScheduler) -> None:
    """Let the leases that ended since the last call go, if nothing refers to them any more.

    A lease and its reservations refer to each other (``res.lease``), so an ended lease that
    nobody keeps is freed only by the garbage collector's passes, which a replay of a long
    trace then spends a few percent of its time in. Called when a step is over (the table
    has forgotten the reservations that ended), this sets ``res.lease`` to None where the
    lease, its list of allocations and each of them are referred to by one another alone:
    nothing else can reach them, so nothing can see the change, and they are freed at once.
    A lease kept anywhere else (by a plugin, a list of leases, a stale event) is left as it is.
    """
    ended = self._ended
    while ended:
        lease = ended.pop()
        allocations = lease.allocations
        # references: `lease` here and getrefcount's own (and one from each reservation);
        # `allocations` here, the lease's and getrefcount's; `res` here, the list's and
        # getrefcount's
        if len(allocations) == 1:   # (most leases: the same test, written out)
            res = allocations[0]
            if getrefcount(res) == 3 and getrefcount(lease) == 3 and \
                    getrefcount(allocations) == 3 and res.lease is lease:
                res.lease = None
            continue
        if getrefcount(allocations) != 3 or getrefcount(lease) != 2 + len(allocations):
            continue
        if all(res.lease is lease and getrefcount(res) == 3 for res in allocations):
            for res in allocations:
                res.lease = None


def cancel(self: LeaseScheduler, lease: Lease, now: float, reason: str = "cancelled") -> None:
    """Cancel ``lease`` in whatever state it is: its reservations from ``now`` on are
    given back and the schedule is re-evaluated."""
    self._end_early(lease, now, reason, S.CANCELLED)


def fail(self: LeaseScheduler, lease: Lease, now: float, reason: str) -> None:
    """``lease`` failed at ``now`` (its work vanished, exited with an error, or could not
    be started or restored): like a cancellation, but it ends FAILED. A lease that is new
    or held has nothing that could fail; it is cancelled with ``reason``."""
    final = S.CANCELLED if lease.state in (S.NEW, S.HELD) else S.FAILED
    self._end_early(lease, now, reason, final)


def _end_early(self: LeaseScheduler, lease: Lease, now: float, reason: str,
               final: LeaseState) -> None:
    state = lease.state
    if state.terminal:
        return
    lease.reason = reason
    if state is S.HELD:
        del self.held[lease.id]
    elif state is S.QUEUED:
        self._dequeue(next(i for i, l in enumerate(self.queue) if l is lease))
    for res in lease.reservations:
        if res.start >= now:
            self.table.remove(res)
        else:
            if res.end > now:
                self.table.truncate(res, now)
            lease.allocations.append(res)
    if lease.reservations:
        self.reeval.request()
    lease.reservations = []
    self.plans.drop(lease.id)
    if state is S.NEW:
        self._move(lease, S.CANCELLED, now)
        lease.end = now
        self._emit_lease("lease_ended", lease, now)
        return
    self._finish(lease, final, now)
