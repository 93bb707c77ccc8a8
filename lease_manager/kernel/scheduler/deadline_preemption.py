"""A deadline lease that finds no slot ending by its deadline may preempt the leases the
preemption policy allows (Haizea 1.1's ``deadline`` policy: best-effort leases, and deadline
leases with slack), planned around their suspensions: it starts at the earliest time in its
window where, with its victims gone, it fits, and no sooner than a running victim can finish
suspending.

Victims are scored at the lease's start with their suspend and resume estimates (Haizea's
DeadlinePolicy); every deadline victim is planned again inside its own window (a running one:
its resumption after its suspension), and a start where any cannot be is given up with nothing
changed (:meth:`~lease_manager.kernel.scheduler.preemption.Preemptor.preempt_for`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.preemption import Preemptor
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.scheduler.suspension import Suspender
    from lease_manager.kernel.slottable import Reservation, SlotTable

S = members(LeaseState)


class DeadlinePreemptor:
    """One scheduler's deadline leases preempting: where in its window a deadline lease
    that finds no free slot starts by preempting, with the scheduler's :class:`Preemptor`
    choosing and preempting the victims."""

    __slots__ = ("_preemptor", "_suspender", "_table", "_settings")

    def __init__(self, preemptor: Preemptor, suspender: Suspender, table: SlotTable,
                 settings: SchedulerSettings) -> None:
        self._preemptor, self._suspender = preemptor, suspender
        self._table, self._settings = table, settings

    def preempt_for(self, lease: Lease, duration: float, earliest: float, latest: float,
                    now: float) -> Reservation | None:
        """Preempt what the policy allows so that ``lease`` fits at the earliest start in
        ``[earliest, latest]``; its slot (to commit), or None (nothing changed)."""
        preemptor = self._preemptor
        if not preemptor.may_preempt:
            return None
        candidates = [earliest, *self._table.change_points(earliest, latest + 1e-9)]
        for start in candidates:
            if start > latest:
                break
            victims = preemptor.victims(lease, start, duration, now)
            if not victims:
                continue
            # a running victim suspends before the lease starts: plan around its suspension
            ready = max((now + self._settings.suspend_resume.suspend_time(v.reservations[0])
                         for v in victims if v.state is S.ACTIVE and v.reservations
                         and self._suspender.can_suspend(v)), default=now)
            if ready > start:
                if ready > latest:
                    continue
                start = ready
                victims = preemptor.victims(lease, start, duration, now)
                if not victims:
                    continue
            res = preemptor.preempt_for(lease, victims, start, duration, now)
            if res is not None:
                return res
        return None
