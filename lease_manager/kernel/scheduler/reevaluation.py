"""Re-evaluation after early ends: future reservations move earlier where a premature end (or
a cancellation) left room, never later than the start they were promised: pass after pass
until none moves (``move-earlier``), or in one pass in order of arrival (``compress``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.scheduler.transaction import PlanChange

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler
    from lease_manager.kernel.slottable import SlotTable

S = members(LeaseState)
LT = members(LeaseType)
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
        last_mover = _one_pass(self, list(self.future.values()), now, last_mover)
        first_pass = False


def compress(self: LeaseScheduler, now: float) -> None:
    """``reevaluation = compress``: conservative backfilling's compression of the schedule
    (Mu'alem and Feitelson, IEEE TPDS 12(6), 2001): each planned lease is considered once,
    in order of arrival (submit time, then id), and moves to its earliest start, with its
    own slot counted as free, if that is earlier. One pass: a lease that a later one's move
    would now let start earlier stays where it is until the next early end.

    It runs after each early end as it happens (replan.py's ``_premature_end``: leases ending
    early at one instant one by one), as pyss, the Hebrew University's simulator built on
    Mu'alem's design, compresses at each job termination; a cancellation compresses once."""
    leases = sorted(self.future.values(), key=_arrival)
    _one_pass(self, leases, now, None)


#: a lease's order of arrival: submit time, then id
_arrival = attrgetter("submit", "id")


def _one_pass(self: LeaseScheduler, leases: list[Lease], now: float,
              stop_at: Lease | None) -> Lease | None:
    """Try to move each of ``leases`` earlier, in that order, stopping at ``stop_at`` if no
    lease moved before it; the last lease that moved (or None)."""
    last_mover: Lease | None = None
    tests = _MoveTests(self.table, now) if len(leases) >= MANY_FUTURE else None
    freed = math.inf   # the earliest time moves gave slots back since the tests' rows
    boots = self.planned_boots
    for lease in leases:
        if lease is stop_at and last_mover is None:
            break
        if tests is not None and not tests.may_move(lease) and not (
                # the tests count its own planned boots as taken; _move_earlier does not
                boots is not None and boots.own_boots(lease.reservations[0], now)):
            # the tests look at the rows before the lease's start only: slots given
            # back there since they were read may let it start earlier
            if freed >= lease.reservations[0].start:
                continue
            tests.clear()
            freed = math.inf
            if not tests.may_move(lease):
                continue
        old = lease.reservations[0] if tests is not None else None
        if self._move_earlier(lease, now):
            last_mover = lease
            if old is not None:   # its old slot, less the new one, is free again
                freed = min(freed, max(old.start, lease.reservations[0].end))
    return last_mover


class _MoveTests:
    """Which planned leases might start earlier: the table's necessary test (one per VM
    shape, on the rows as they are when it is first asked for) on leases with one
    reservation of VMs of one shape; the others are always looked at."""

    def __init__(self, table: SlotTable, now: float) -> None:
        self._table = table
        self._now = now
        self._tests: dict[bytes, Callable[[int, float, float], bool]] = {}

    def clear(self) -> None:
        """Read the rows again at the next question (slots were given back)."""
        self._tests.clear()

    def may_move(self, lease: Lease) -> bool:
        plan = lease.reservations
        vms = lease.vms
        key = vms.shape_key
        if len(plan) != 1 or key is None or lease.image_nodes:
            return True
        test = self._tests.get(key)
        if test is None:
            test = self._tests[key] = self._table.move_test(vms.vectors[0], self._now)
        res = plan[0]
        return test(vms.count, res.start, res.end)


def _move_earlier(self: LeaseScheduler, lease: Lease, now: float) -> bool:
    if lease.image_nodes and lease.state is S.SCHEDULED:
        return self._move_resumption_earlier(lease, now)
    if lease.type not in (LT.BEST_EFFORT, LT.DEADLINE) or len(
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
    if res.start <= now:
        return False
    # its own planned boots (nodes off until its start) would sit inside any earlier slot of
    # a reservation longer than the gap to them: out of the table while it looks; the node
    # power states plan the boots its new slot needs after the step
    boots = self.planned_boots
    lifted = boots.lift(boots.own_boots(res, now), now) if boots is not None else []
    # with its own reservation counted as free, where could the lease start?
    start = table.earlier_start(lease.vms, duration, now, res)
    if start is None:
        if boots is not None and lifted:
            boots.put_back(lifted)
        return False
    placed = None
    if self.power is None and table.holds_counts_at(start):
        # a table that counts VMs places a plan that starts later as a count, without
        # looking at the table: the steps below, the table's two in one
        placed = self._place_at(lease, start, duration)
        if placed is not None and placed.pending:
            table.move(res, placed)
            self._adopt(lease, [placed], now)
            return True
    change = PlanChange(table)
    change.remove(res)
    new = ((placed if placed is not None else self._place_at(lease, start, duration))
           or self._find_slot(lease, duration, now, res.start, before=res.start))
    if new is None:
        change.rollback()   # its old slot is still free: nothing else moved into it
        if boots is not None and lifted:
            boots.put_back(lifted)
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
