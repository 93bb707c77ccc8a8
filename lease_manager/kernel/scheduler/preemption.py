"""Preemption: which leases to preempt so that an advance reservation fits (most preemptable
first, one more at a time, as Haizea's mapper does), and making a lease give up its resources:
a planned one is requeued, a running one suspended (its suspension ends exactly when the
preemptor starts) or, without suspension, cancelled and requeued, losing its work.

A planned deadline lease is never requeued (the queue knows nothing of its start window or its
deadline): it is planned again inside its window, and if any such victim cannot be, the
preemption is refused and nothing changes (:meth:`Preemptor.preempt_for`, Haizea 1.1's
DeadlineMapper trying each victim's re-plan before it commits). A running deadline victim
suspends, and its resumption is planned at once, on its nodes, to end by its deadline, and
adopted when its suspension ends (it never waits in the queue); one that cannot suspend is
cancelled and planned again whole inside its window."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.scheduler.transaction import PlanChange
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.events import Timeline
    from lease_manager.kernel.policy_protocols import PreemptionProtocol
    from lease_manager.kernel.scheduler.plan_book import PlanBook
    from lease_manager.kernel.scheduler.seams import Enactment
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.scheduler.suspension import Suspender
    from lease_manager.kernel.slottable import SlotTable

S = members(LeaseState)
K = members(ReservationKind)
LT = members(LeaseType)
EK = members(EventKind)


def _stopping_segment(lease: Lease, start: float) -> Reservation | None | Literal[False]:
    """The VM segment of running ``lease``'s plan that must suspend for a preemption at
    ``start`` (None: none runs across ``start``; False: a resumption or suspension does, and
    it cannot be preempted there)."""
    for r in lease.reservations:
        if r.start < start < r.end:
            return r if r.kind == K.VM else False
    return None


#: :meth:`Preemptor._stop_at`'s answer for a running lease that cannot suspend: it is cancelled now
#: and runs again whole, as Haizea's DeadlineMapper does
CANCEL = -math.inf


class PreemptionHost(Protocol):
    """What a :class:`Preemptor` asks of its scheduler: the leases running, reservation
    lengths, placing and adopting plans (a victim's new plan inside its window), moving a
    lease's state and putting it back in the queue."""

    running: dict[int, Lease]

    def length(self, lease: Lease) -> float: ...

    def shutdown_of(self, lease: Lease) -> float: ...

    def _place_at(self, lease: Lease, start: float, duration: float) -> Reservation | None: ...

    def _find_slot(self, lease: Lease, duration: float, after: float,
                   not_after: float | None, before: float = math.inf) -> Reservation | None: ...

    def _adopt(self, lease: Lease, plan: list[Reservation], now: float, *,
               suspends: bool = False, start_now: bool = True) -> None: ...

    def _move(self, lease: Lease, state: LeaseState, now: float) -> None: ...

    def _requeue(self, lease: Lease) -> None: ...


class Preemptor:
    """One scheduler's preemptions: which leases to preempt (:meth:`victims`), and making
    them give up their resources (:meth:`preempt`, :meth:`preempt_for`)."""

    __slots__ = ("_host", "_suspender", "_policy", "_table", "_timeline", "_settings",
                 "_plans", "_enactment", "_emit")

    def __init__(self, host: PreemptionHost, suspender: Suspender, *,
                 policy: PreemptionProtocol | None, table: SlotTable, timeline: Timeline,
                 settings: SchedulerSettings, plans: PlanBook, enactment: Enactment,
                 emit: Callable[..., None]) -> None:
        self._host, self._suspender, self._policy = host, suspender, policy
        self._table, self._timeline, self._settings = table, timeline, settings
        self._plans, self._enactment, self._emit = plans, enactment, emit

    @property
    def may_preempt(self) -> bool:
        """Whether the scheduler has a preemption policy (without one, nothing is preempted)."""
        return self._policy is not None

    def victims(self, lease: Lease, start: float, duration: float,
                 now: float) -> list[Lease] | None:
        """The leases to preempt so that ``lease`` fits at ``start`` (most preemptable first,
        one more at a time, as Haizea's mapper does), or None if no set of them suffices."""
        if self._policy is None:
            return None
        scored: dict[int, tuple[float, Lease]] = {}
        for res in self._table.reservations_between(start, start + duration):
            other = res.lease
            if (not isinstance(other, Lease) or other.id in scored or other is lease
                    or other.state not in (S.SCHEDULED, S.ACTIVE)
                    or (other.type is LT.DEADLINE and other.state is not S.SCHEDULED
                        and not self._may_suspend(other, start, now))):
                continue
            if self._policy.scores_at_preemption:   # Haizea's DeadlinePolicy
                score = self._policy.score_at(lease, other, start, self._estimates(other, start))
            else:
                score = self._policy.score(lease, other, now)
            if score is not None:
                scored[other.id] = (score, other)
        chosen: list[Lease] = []
        released: list[Reservation] = []
        # Haizea's mapper's order
        haizea = self._settings.preemption_order == "least-preemptable-first"
        for _, other in sorted(scored.values(), key=lambda item: (item[0] if haizea else -item[0],
                                                                  item[1].id)):
            chosen.append(other)
            released.extend(other.reservations)
            if self._table.earliest_fit(lease.vms, duration, start, not_after=start,
                                       released=released) is not None:
                return chosen
        return None

    def _may_suspend(self, lease: Lease, start: float, now: float) -> bool:
        """Whether running deadline ``lease`` may be preempted at ``start``: what of its plan runs
        across ``start`` is a VM segment that can suspend by then (or nothing does)."""
        return self._stop_at(lease, start, now) is not None

    def _estimates(self, victim: Lease, at: float) -> tuple[float, float, float]:
        """What preempting ``victim`` at ``at`` costs it, as Haizea estimates it: its remaining
        requested time at ``at``, its suspend time and its resume time (without suspension: its
        whole request and no suspension)."""
        if not self._suspender.can_suspend(victim) or not victim.reservations:
            return victim.requested_duration, 0.0, 0.0
        res = victim.reservations[0]
        remaining = victim.remaining_requested
        if victim.state is S.ACTIVE and res.kind == K.VM:
            remaining -= max(0.0, min(at, res.end) - res.start)
        return (remaining, self._settings.suspend_resume.suspend_time(res),
                self._settings.suspend_resume.resume_time(res))

    def preempt_for(self, lease: Lease, victims: list[Lease], start: float,
                     duration: float, now: float) -> Reservation | None:
        """Preempt ``victims`` so that ``lease`` fits at ``start``: its slot (to commit), or None
        with nothing changed.

        Deadline victims are planned again inside their windows (earliest deadline first): a
        planned one anywhere, a running one resumed on its nodes after it suspends. This is tried
        first under a :class:`PlanChange` that is rolled back; if the lease or any deadline victim
        finds no slot, the preemption is refused. A running deadline victim that cannot suspend
        is cancelled and planned again whole."""
        movable = sorted((v for v in victims if v.type is LT.DEADLINE),
                         key=lambda v: (v.deadline, v.id))
        if not movable:   # as always: preempt, then place
            for victim in victims:
                self.preempt(victim, start, now)
            return self._host._place_at(lease, start, duration)
        # when each running deadline victim stops working (before the trial truncates its plan)
        stops = {v.id: self._stop_at(v, start, now) for v in movable if v.state is not S.SCHEDULED}
        trial = PlanChange(self._table)
        for victim in victims:
            for r in list(victim.reservations):
                if victim.state is S.SCHEDULED or r.start >= start:
                    trial.remove(r)
                elif r.end > start:   # a running victim holds its nodes until ``start``
                    trial.truncate(r, start)
        res = self._host._place_at(lease, start, duration)
        plans: list[tuple[Lease, list[Reservation]]] = []
        if res is not None:
            trial.add(res)
            for victim in movable:
                plan = self._deadline_replan(victim, start, now, stops.get(victim.id))
                if plan is None:
                    break
                for r in plan:
                    trial.add(r)
                plans.append((victim, plan))
        trial.rollback()
        if res is None or len(plans) < len(movable):
            return None
        for victim in victims:
            if victim.type is not LT.DEADLINE:
                self.preempt(victim, start, now)
        self._move_deadline_victims(plans, stops, start, now)
        return res

    def _move_deadline_victims(self, plans: list[tuple[Lease, list[Reservation]]],
                               stops: dict[int, float | None], start: float, now: float) -> None:
        """Give each deadline victim its new ``plan`` (found by :meth:`preempt_for`): a planned
        one anywhere, a running one after it stops working at ``stops[id]`` by ``start``."""
        for victim, plan in plans:
            if victim.state is S.SCHEDULED:
                self._replan_deadline_victim(victim, plan, now)
                continue
            segment = _stopping_segment(victim, start)
            if stops[victim.id] == CANCEL:
                self._cancel_running(victim, now)
                self._host._move(victim, S.SCHEDULED, now)
                self._replan_deadline_victim(victim, plan, now)
                continue
            if segment is victim.reservations[0]:
                self.preempt(victim, start, now)   # suspends it by ``start``
            else:   # it suspends in a resumption planned already, or has stopped before
                self._stop_planned_resumption(victim, segment or None, start, now)
            # its resumption follows its suspension (lifecycle.segment_ended adopts it)
            for r in plan:
                self._table.add(r)
            victim.reservations.extend(plan)

    def _stop_planned_resumption(self, lease: Lease, segment: Reservation | None,
                                 start: float, now: float) -> None:
        """Running ``lease`` gives up its planned resumption from ``start`` on: ``segment`` (the
        resumed VM segment across ``start``, if any) suspends by ``start``."""
        for r in lease.reservations[1:]:
            if r.start >= start:
                self._table.remove(r)
        lease.reservations = [r for r in lease.reservations if r.start < start]
        if segment is None:
            lease.preemptions += 1
            self._emit("lease_preempted", lease=lease, now=now)
            return
        suspend = self._suspender.suspension_for(lease, start, now, segment)
        assert suspend, "checked by _victims"
        self._table.truncate(segment, start - suspend)
        last = Reservation(lease, start - suspend, start, segment.nodes, segment.amounts, None,
                           K.SUSPEND, segment.vm_nodes, segment.vm_shape)
        lease.reservations.append(last)
        self._table.add(last)

        def preempted(at: float) -> None:   # told once that segment runs, if the plan holds
            if lease.holds(last) or last in lease.allocations:
                lease.preemptions += 1
                self._emit("lease_preempted", lease=lease, now=at)

        self._timeline.push(segment.start, EK.CALL, preempted)

    def _stop_at(self, lease: Lease, start: float, now: float) -> float | None:
        """When running ``lease`` stops working if preempted at ``start`` (it then suspends until
        ``start``), :data:`CANCEL` if it cannot suspend in its running segment; None if it
        cannot be preempted there (a planned resumption runs across ``start``)."""
        segment = _stopping_segment(lease, start)
        if segment is False:
            return None
        if segment is None:
            return start
        suspend = self._suspender.suspension_for(lease, start, now, segment)
        if suspend is None:
            return CANCEL if segment is lease.reservations[0] else None
        return start - suspend

    def _deadline_replan(self, victim: Lease, start: float, now: float,
                         stop: float | None) -> list[Reservation] | None:
        """A deadline ``victim``'s new plan inside its window, if preempted at ``start`` (the
        table as it would be then): a planned one anywhere from its earliest start (a suspended
        one resumed as the queue would), a running one (stopping its work at ``stop``) resumed on
        its nodes after ``start``; None if it could no longer meet its deadline."""
        deadline = victim.deadline or 0.0
        if victim.state is S.SCHEDULED:
            earliest = max(now, victim.start_request if victim.start_request is not None
                           else now)
            if victim.image_nodes:   # suspended, its resumption planned
                plan = self._suspender.resumption_plan_after(victim, now, earliest, True)
                return plan if plan is not None and plan[-1].end <= deadline + 1e-9 else None
            length = self._host.length(victim)
            new = self._host._find_slot(victim, length, earliest, deadline - length)
            return None if new is None else [new]
        if stop is None:
            return None
        if stop == CANCEL:   # cancelled now: runs again whole, anywhere in its window
            length = (victim.requested_duration * victim.stretch
                      + self._host.shutdown_of(victim))
            new = self._host._find_slot(victim, length,
                                        max(now, start if victim.start_request is None
                                            else victim.start_request),
                                        deadline - length)
            return None if new is None else [new]
        # the work left once it stops at ``stop`` (its length, as length() will give it then)
        worked = sum(min(r.end, stop) - r.start for r in victim.reservations
                     if r.kind == K.VM and r.start < stop)
        length = self._host.length(victim) - worked
        image = victim.reservations[0]
        resume = self._settings.suspend_resume.resume_time(image)
        at = self._table.earliest_fit_on(image.nodes, image.amounts, resume + length, start,
                                        deadline - resume - length)
        if at is None:
            return None

        def part(kind: ReservationKind, a: float, b: float) -> Reservation:
            return Reservation(victim, a, b, image.nodes, image.amounts, None, kind,
                               image.vm_nodes, image.vm_shape)

        plan = [part(K.RESUME, at, at + resume)] if resume > 0 else []
        plan.append(part(K.VM, at + resume, at + resume + length))
        return plan

    def _replan_deadline_victim(self, lease: Lease, plan: list[Reservation],
                                now: float) -> None:
        """A planned deadline lease (or a running one just cancelled) gives up its plan for
        ``plan`` (inside its window)."""
        lease.preemptions += 1
        for res in lease.reservations:
            self._table.remove(res)
        lease.reservations = []
        self._plans.drop(lease.id)
        self._emit("lease_preempted", lease=lease, now=now)
        for res in plan:
            self._table.add(res)
        self._host._adopt(lease, plan, now, start_now=False)   # (its STARTs are events, as always)

    def preempt(self, lease: Lease, by_start: float, now: float) -> None:
        """Make ``lease`` give up its resources from ``by_start`` on."""
        lease.preemptions += 1
        self._plans.drop_ar(lease.id)   # a third-party policy may preempt an AR
        if lease.state is S.SCHEDULED:    # not started: give up the plan, back to the queue
            for res in lease.reservations:
                self._table.remove(res)
            lease.reservations = []
            self._plans.drop(lease.id)
            self._host._move(lease, S.QUEUED, now)
            self._host._requeue(lease)
        else:                              # running
            res = lease.reservations[0]
            suspend = self._suspender.suspension_for(lease, by_start, now)
            if suspend is not None:
                stop = by_start - suspend
                for later in lease.reservations[1:]:
                    self._table.remove(later)
                if stop < res.end:
                    self._table.truncate(res, stop)
                plan = [res]
                if suspend > 0:
                    plan.append(Reservation(lease, stop, by_start, res.nodes, res.amounts, None,
                                            K.SUSPEND, res.vm_nodes, res.vm_shape))
                    self._table.add(plan[-1])
                lease.reservations = plan
                if stop <= now:
                    self._suspender.begin(lease, now)
                elif suspend > 0:
                    self._timeline.push(stop, EK.START, plan[-1])
                if suspend > 0:
                    self._timeline.push(by_start, EK.SEGMENT_END, plan[-1])
                else:   # nothing to write: suspended the moment it stops
                    self._timeline.push(stop, EK.SEGMENT_END, res)
            else:                          # cancelled now and requeued, losing its work
                self._cancel_running(lease, now)
                self._host._requeue(lease)
        self._emit("lease_preempted", lease=lease, now=now)

    def _cancel_running(self, lease: Lease, now: float) -> None:
        """Running ``lease`` stops now, losing its work, and is QUEUED (not yet in the queue)."""
        res = lease.reservations[0]
        for later in lease.reservations[1:]:
            self._table.remove(later)
        self._table.truncate(res, now)
        lease.allocations.append(res)
        lease.reservations = []
        lease.work_done = 0.0
        del self._host.running[lease.id]
        # recorded before the work stops, as an end is: a daemon killed in between finds a queued
        # lease whose work is left over (stopped on restore), not running work that vanished
        self._host._move(lease, S.QUEUED, now)
        self._enactment.stop(lease, now)
