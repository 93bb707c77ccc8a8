"""Events of planned and running leases: a segment starts or ends, work finishes, a lease is
cancelled or fails. Timeline events of plans that have changed since are stale and ignored."""

from __future__ import annotations

from sys import getrefcount
from typing import TYPE_CHECKING, Protocol

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.events import Timeline
    from lease_manager.kernel.policy_protocols import PricingProtocol
    from lease_manager.kernel.scheduler.plan_book import PlanBook
    from lease_manager.kernel.scheduler.queue import Backfiller
    from lease_manager.kernel.scheduler.reevaluator import Reevaluator
    from lease_manager.kernel.scheduler.seams import Enactment
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.scheduler.suspension import Suspender
    from lease_manager.kernel.slottable import SlotTable

S = members(LeaseState)
K = members(ReservationKind)
EK = members(EventKind)
#: ended leases waiting for :meth:`Lifecycle.untie_ended`, at most
MAX_ENDED = 4096


class LifecycleHost(Protocol):
    """What a lease's events ask of the scheduler (:class:`~lease_manager.kernel.scheduler.
    LeaseScheduler`). A back-reference: an event moves a lease between the scheduler's
    collections (held, queued, planned, running), which other parts of it own."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def timeline(self) -> Timeline: ...
    @property
    def settings(self) -> SchedulerSettings: ...
    @property
    def pricing(self) -> PricingProtocol: ...
    @property
    def plans(self) -> PlanBook: ...
    @property
    def suspender(self) -> Suspender: ...
    @property
    def reeval(self) -> Reevaluator: ...
    @property
    def backfiller(self) -> Backfiller: ...
    @property
    def running(self) -> dict[int, Lease]: ...
    @property
    def _enactment(self) -> Enactment: ...
    def work_end(self, lease: Lease, start: float) -> float: ...
    def _move(self, lease: Lease, state: LeaseState, now: float) -> None: ...
    def _emit_lease(self, hook: str, lease: Lease, now: float) -> None: ...
    def _pin(self, res: Reservation, now: float) -> None: ...
    def _adopt(self, lease: Lease, plan: list[Reservation], now: float, *,
               suspends: bool = False, start_now: bool = True) -> None: ...


class Lifecycle:
    """One scheduler's handling of its leases' events; it owns the leases that ended and
    wait to be let go (:meth:`untie_ended`)."""

    __slots__ = ("ended", "_sched")

    def __init__(self, sched: LifecycleHost) -> None:
        self._sched = sched
        #: leases that ended since :meth:`untie_ended` was last called
        self.ended: list[Lease] = []

    def segment_started(self, res: Reservation, now: float) -> None:
        """A planned segment begins (stale events, of plans that changed, are ignored)."""
        lease = res.lease
        if lease is None or res.start != now or not lease.holds(res):
            return
        sched = self._sched
        kind = res.kind
        if kind == K.VM:
            if lease.state is S.MIGRATING:   # moved, with nothing to read back: resumed at once
                sched._move(lease, S.RESUMING, now)
            if lease.state not in (S.SCHEDULED, S.RESUMING):
                return
            if res.pending:
                sched._pin(res, now)
            while lease.reservations[0] is not res:   # a resumption that is over
                lease.allocations.append(lease.reservations.pop(0))
            if lease.state is S.SCHEDULED:
                sched.plans.drop(lease.id)
                if lease.start is None:
                    lease.start = now
            sched.plans.vms_started(lease.id)   # (Haizea's: held until the VMs start)
            if lease.suspended_at is not None:   # a resumption (taking time or not) is over
                lease.time_suspended += now - lease.suspended_at
                lease.suspended_at = None
            sched._move(lease, S.ACTIVE, now)
            sched.running[lease.id] = lease
            sched._emit_lease("lease_started", lease, now)
            sched._enactment.start(lease, res, sched.work_end(lease, now))
        elif kind == K.MIGRATE and lease.state is S.SCHEDULED:
            self._leave_future(lease)
            sched._move(lease, S.MIGRATING, now)
            sched.running[lease.id] = lease
        elif kind == K.RESUME and lease.state in (S.SCHEDULED, S.MIGRATING):
            self._leave_future(lease)
            sched._move(lease, S.RESUMING, now)
            sched.running[lease.id] = lease
        elif kind == K.SUSPEND and lease.state is S.ACTIVE:
            sched.suspender.begin(lease, now)

    def _leave_future(self, lease: Lease) -> None:
        """A planned resumption begins: the lease is no longer planned. With Haizea's model
        its backfilling reservation counts until its VMs start, as Haizea's future leases do."""
        sched = self._sched
        if sched.settings.haizea_planning:
            sched.plans.leave(lease.id)
        else:
            sched.plans.drop(lease.id)

    def segment_ended(self, res: Reservation, now: float) -> None:
        """A planned segment ends: a suspension completes and the lease goes back to the
        queue."""
        lease = res.lease
        if lease is None or not lease.holds(res):
            return
        sched = self._sched
        if res.kind == K.VM and lease.state is S.ACTIVE:   # a suspension taking no time
            sched.suspender.begin(lease, now)
        if lease.state is not S.SUSPENDING:
            return
        done = lease.reservations.index(res) + 1
        resumption = lease.reservations[done:]
        lease.allocations.extend(lease.reservations[:done])
        lease.reservations = []
        lease.image_nodes = res.vm_nodes
        del sched.running[lease.id]
        sched._move(lease, S.SUSPENDED, now)
        sched._move(lease, S.QUEUED, now)
        if resumption:   # a deadline lease preempted with its resumption planned (preemption.py)
            sched._move(lease, S.SCHEDULED, now)
            sched._adopt(lease, resumption, now)
            for later in resumption:   # a further suspension it plans (preempted again)
                if later.kind == K.SUSPEND:
                    sched.timeline.push(later.end, EK.SEGMENT_END, later)
            return
        sched.backfiller.requeue(lease)

    def work_finished(self, res: Reservation, now: float) -> None:
        """The lease's work finished at ``now`` (END event of its running reservation)."""
        lease = res.lease
        if (lease is None or lease.state is not S.ACTIVE or not lease.reservations
                or lease.reservations[0] is not res or now > res.end):
            return
        sched = self._sched
        if now < res.end:
            reeval = sched.reeval
            if reeval.at_each_end and not reeval.replanning:
                reeval.premature_end(res, now)   # re-plan or compress at once
                return
            sched.table.truncate(res, now)
            reeval.request()
        for later in lease.reservations[1:]:   # a planned suspension it no longer needs
            sched.table.remove(later)
        lease.allocations.append(res)
        lease.reservations = []
        # (Lease.run_duration written out: min(actual, requested))
        requested, actual = lease.requested_duration, lease.actual_duration
        lease.work_done = requested if actual is None or requested < actual else actual
        lease.image_nodes = ()
        self.finish(lease, S.DONE, now)

    def finish(self, lease: Lease, state: LeaseState, now: float) -> None:
        """``lease`` ends in ``state`` at ``now``: priced for its suspension, stopped, told."""
        sched = self._sched
        lease.end = now
        sched.plans.drop_ar(lease.id)
        sched.running.pop(lease.id, None)
        if lease.time_suspended > 0:
            lease.price = (lease.price or 0.0) + sched.pricing.surcharge(lease,
                                                                         lease.time_suspended)
        sched._move(lease, state, now)
        sched._enactment.stop(lease, now)
        sched._emit_lease("lease_ended", lease, now)
        self.ended.append(lease)
        if len(self.ended) > MAX_ENDED:   # (a driver that never calls untie_ended: no growth)
            self.untie_ended()

    def untie_ended(self) -> None:
        """Let the leases that ended since the last call go, if nothing refers to them any
        more.

        A lease and its reservations refer to each other (``res.lease``), so an ended lease
        that nobody keeps is freed only by the garbage collector's passes, which a replay of a
        long trace then spends a few percent of its time in. Called when a step is over (the
        table has forgotten the reservations that ended), this sets ``res.lease`` to None
        where the lease, its list of allocations and each of them are referred to by one
        another alone: nothing else can reach them, so nothing can see the change, and they
        are freed at once. A lease kept anywhere else (by a plugin, a list of leases, a stale
        event) is left as it is.
        """
        ended = self.ended
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

    def cancel(self, lease: Lease, now: float, reason: str = "cancelled") -> None:
        """Cancel ``lease`` in whatever state it is: its reservations from ``now`` on are
        given back and the schedule is re-evaluated."""
        self.end_early(lease, now, reason, S.CANCELLED)

    def fail(self, lease: Lease, now: float, reason: str) -> None:
        """``lease`` failed at ``now`` (its work vanished, exited with an error, or could not
        be started or restored): like a cancellation, but it ends FAILED. A lease that is new
        or held has nothing that could fail; it is cancelled with ``reason``."""
        final = S.CANCELLED if lease.state in (S.NEW, S.HELD) else S.FAILED
        self.end_early(lease, now, reason, final)

    def end_early(self, lease: Lease, now: float, reason: str, final: LeaseState) -> None:
        """``lease`` ends before its work did, in ``final`` (cancelled or failed)."""
        state = lease.state
        if state.terminal:
            return
        sched = self._sched
        lease.reason = reason
        if state is S.HELD or state is S.QUEUED:
            sched.backfiller.withdraw(lease)
        for res in lease.reservations:
            if res.start >= now:
                sched.table.remove(res)
            else:
                if res.end > now:
                    sched.table.truncate(res, now)
                lease.allocations.append(res)
        if lease.reservations:
            sched.reeval.request()
        lease.reservations = []
        sched.plans.drop(lease.id)
        if state is S.NEW:
            sched._move(lease, S.CANCELLED, now)
            lease.end = now
            sched._emit_lease("lease_ended", lease, now)
            return
        self.finish(lease, final, now)
