"""A deadline lease that finds no slot ending by its deadline may preempt the leases the
preemption policy allows (Haizea 1.1's ``deadline`` policy: best-effort leases, and deadline
leases with slack), planned around their suspensions: it starts at the earliest time in its
window where, with its victims gone, it fits, and no sooner than a running victim can finish
suspending.

Victims are scored at the lease's start with their suspend and resume estimates (Haizea's
DeadlinePolicy); every deadline victim is planned again inside its own window (a running one:
its resumption after its suspension), and a start where any cannot be is given up with nothing
changed (:func:`preemption._preempt_for`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.scheduler import preemption
from lease_manager.kernel.slottable import Reservation

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler

S = members(LeaseState)


def preempt_for_deadline(self: LeaseScheduler, lease: Lease, duration: float,
                         earliest: float, latest: float, now: float) -> Reservation | None:
    """Preempt what the policy allows so that ``lease`` fits at the earliest start in
    ``[earliest, latest]``; its slot (to commit), or None (nothing changed)."""
    if self.preemption is None:
        return None
    candidates = [earliest, *self.table.change_points(earliest, latest + 1e-9)]
    for start in candidates:
        if start > latest:
            break
        victims = self._victims(lease, start, duration, now)
        if not victims:
            continue
        # a running victim suspends before the lease starts: plan around its suspension
        ready = max((now + self.settings.suspend_resume.suspend_time(v.reservations[0])
                     for v in victims if v.state is S.ACTIVE and v.reservations
                     and self._can_suspend(v)), default=now)
        if ready > start:
            if ready > latest:
                continue
            start = ready
            victims = self._victims(lease, start, duration, now)
            if not victims:
                continue
        res = preemption._preempt_for(self, lease, victims, start, duration, now)
        if res is not None:
            return res
    return None
