"""Re-evaluation after early ends: future reservations move earlier where a premature end (or
a cancellation) left room, never later than the start they were promised."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.scheduler.transaction import PlanChange

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler

S = LeaseState
#: from this many planned leases on, the table's cheap necessary test first tells which of
#: them might move (fewer are cheaper to look at one by one)
MANY_FUTURE = 8


def _reevaluate_future(self: LeaseScheduler, now: float) -> None:
    """Move future reservations earlier where a premature end left room (never later).

    Best-effort and deadline leases are taken in scheduling order; a lease that moves can
    make room for one before it, so passes repeat until none moves (each pass only moves
    starts earlier, onto breakpoints, so this ends). A pass can stop at the last lease that
    moved in the pass before: the leases after it have seen every move since.
    """
    last_mover: Lease | None = None
    first_pass = True
    while first_pass or last_mover is not None:
        stop_at, last_mover = last_mover, None
        leases = list(self.future.values())
        movable = _movable(self, leases, now) if len(leases) >= MANY_FUTURE else None
        freed = math.inf   # the earliest time moves gave slots back since ``movable``
        for i, lease in enumerate(leases):
            if lease is stop_at and last_mover is None:
                break
            if movable is not None and not movable[i]:
                # the test looks at the rows before the lease's start only: slots given
                # back there since it was made may let it start earlier
                if freed >= lease.reservations[0].start:
                    continue
                movable[i:] = _movable(self, leases[i:], now)
                freed = math.inf
                if not movable[i]:
                    continue
            old = lease.reservations[0] if movable is not None else None
            if self._move_earlier(lease, now):
                last_mover = lease
                if old is not None:   # its old slot, less the new one, is free again
                    freed = min(freed, max(old.start, lease.reservations[0].end))
        first_pass = False


def _movable(self: LeaseScheduler, leases: list[Lease], now: float) -> list[bool]:
    """Which of ``leases`` might start earlier: the table's necessary test (one per VM
    shape) on leases with one reservation of VMs of one shape; the others are always
    looked at."""
    maybe = [True] * len(leases)
    table = self.table
    tests: dict[bytes, Callable[[int, float, float], bool]] = {}
    for i, lease in enumerate(leases):
        plan = lease.reservations
        vms = lease.vms
        key = vms.shape_key
        if len(plan) == 1 and key is not None and not lease.image_nodes:
            test = tests.get(key)
            if test is None:
                test = tests[key] = table.move_test(vms.vectors[0], now)
            res = plan[0]
            maybe[i] = test(vms.count, res.start, res.end)
    return maybe


def _move_earlier(self: LeaseScheduler, lease: Lease, now: float) -> bool:
    if lease.image_nodes and lease.state is S.SCHEDULED:
        return self._move_resumption_earlier(lease, now)
    if lease.type not in (LeaseType.BEST_EFFORT, LeaseType.DEADLINE) or len(
            lease.reservations) != 1:
        return False
    table = self.table
    res = lease.reservations[0]
    duration = res.end - res.start
    length = self.length(lease)
    if abs(duration - length) <= 1e-9 * max(1.0, length):
        # a whole run: keep its length exactly (end - start of a reservation placed at a
        # fractional time can be an ulp short, and the work would then outlive the move)
        duration = length
    if res.start <= now or not table.may_fit_before(lease.vms, duration, now, res.start):
        return False
    # with its own reservation counted as free, where could the lease start?
    start = table.earliest_fit(lease.vms, duration, now, not_after=res.start, own=res)
    if start is None or start >= res.start:
        return False
    change = PlanChange(table)
    change.remove(res)
    new = (self._place_at(lease, start, duration)
           or self._find_slot(lease, duration, now, res.start, before=res.start))
    if new is None:
        change.rollback()   # its old slot is still free: nothing else moved into it
        return False
    change.add(new)
    self._adopt(lease, [new], now)
    return True


def _move_resumption_earlier(self: LeaseScheduler, lease: Lease, now: float) -> bool:
    """Plan a pending resumption again; its old plan stays free meanwhile, so the new one
    can only be earlier (or the same, and then the old one is kept)."""
    old = lease.reservations
    if not old or old[0].start <= now:
        return False
    change = PlanChange(self.table)
    for res in old:
        change.remove(res)
    plan = self._resumption_plan(lease, now, True)
    if plan is None or plan[0].start >= old[0].start:
        change.rollback()
        return False
    for res in plan:
        change.add(res)
    self._adopt(lease, plan, now)
    return True
