"""Re-evaluation after early ends: future reservations move earlier where a premature end (or
a cancellation) left room, never later than the start they were promised: pass after pass
until none moves (``move-earlier``), or in one pass in order of arrival (``compress``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Protocol

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.scheduler.transaction import PlanChange

if TYPE_CHECKING:
    from collections.abc import Mapping

    from lease_manager.kernel.scheduler.seams import PlannedBoots, PowerGate
    from lease_manager.kernel.scheduler.suspension import Suspender
    from lease_manager.kernel.slottable import Reservation, SlotTable

S = members(LeaseState)
LT = members(LeaseType)
#: from this many planned leases on, the table's cheap necessary test first tells which of
#: them might move (fewer are cheaper to look at one by one)
MANY_FUTURE = 8


#: a lease's order of arrival: submit time, then id
_arrival = attrgetter("submit", "id")


class MoveHost(Protocol):
    """What moving plans earlier asks of the scheduler (:class:`~lease_manager.kernel.
    scheduler.LeaseScheduler`). A back-reference: a move places, finds and adopts plans as
    every other planning path does."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def future(self) -> Mapping[int, Lease]: ...
    @property
    def planned_boots(self) -> PlannedBoots | None: ...
    @property
    def power(self) -> PowerGate | None: ...
    def length(self, lease: Lease) -> float: ...
    def _place_at(self, lease: Lease, start: float, duration: float) -> Reservation | None: ...
    def _find_slot(self, lease: Lease, duration: float, after: float,
                   not_after: float | None, before: float = ...) -> Reservation | None: ...
    def _adopt(self, lease: Lease, plan: list[Reservation], now: float, *,
               suspends: bool = False, start_now: bool = True) -> None: ...
    @property
    def suspender(self) -> Suspender: ...


class EarlierMoves:
    """One scheduler's ``move-earlier`` and ``compress`` re-evaluations (no state of its own
    between them)."""

    __slots__ = ("_sched",)

    def __init__(self, sched: MoveHost) -> None:
        self._sched = sched

    def reevaluate_future(self, now: float) -> None:
        """Move future reservations earlier where a premature end left room (never later).

        Best-effort and deadline leases are taken in scheduling order; a lease that moves can
        make room for one before it, so passes repeat until none moves (each pass only moves
        starts earlier, onto breakpoints, so this ends). A pass can stop at the last lease
        that moved in the pass before: the leases after it have seen every move since.
        """
        last_mover: Lease | None = None
        first_pass = True
        while first_pass or last_mover is not None:
            last_mover = self._one_pass(list(self._sched.future.values()), now, last_mover)
            first_pass = False

    def compress(self, now: float) -> None:
        """``reevaluation = compress``: conservative backfilling's compression of the schedule
        (Mu'alem and Feitelson, IEEE TPDS 12(6), 2001): each planned lease is considered once,
        in order of arrival (submit time, then id), and moves to its earliest start, with its
        own slot counted as free, if that is earlier. One pass: a lease that a later one's move
        would now let start earlier stays where it is until the next early end.

        It runs after each early end as it happens (the Reevaluator's ``premature_end``:
        leases ending early at one instant one by one), as pyss, the Hebrew University's
        simulator built on Mu'alem's design, compresses at each job termination; a
        cancellation compresses once."""
        leases = sorted(self._sched.future.values(), key=_arrival)
        self._one_pass(leases, now, None)

    def _one_pass(self, leases: list[Lease], now: float,
                  stop_at: Lease | None) -> Lease | None:
        """Try to move each of ``leases`` earlier, in that order, stopping at ``stop_at`` if no
        lease moved before it; the last lease that moved (or None)."""
        last_mover: Lease | None = None
        sched = self._sched
        tests = _MoveTests(sched.table, now) if len(leases) >= MANY_FUTURE else None
        freed = math.inf   # the earliest time moves gave slots back since the tests' rows
        boots = sched.planned_boots
        for lease in leases:
            if lease is stop_at and last_mover is None:
                break
            if tests is not None and not tests.may_move(lease) and not (
                    # the tests count its own planned boots as taken; move_earlier does not
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
            if self.move_earlier(lease, now):
                last_mover = lease
                if old is not None:   # its old slot, less the new one, is free again
                    freed = min(freed, max(old.start, lease.reservations[0].end))
        return last_mover

    def move_earlier(self, lease: Lease, now: float) -> bool:
        """Move ``lease``'s plan, which has not started, to an earlier start if it fits there
        (never later): whether it moved."""
        if lease.image_nodes and lease.state is S.SCHEDULED:
            return self.move_resumption_earlier(lease, now)
        if lease.type not in (LT.BEST_EFFORT, LT.DEADLINE) or len(
                lease.reservations) != 1:
            return False
        sched = self._sched
        table = sched.table
        res = lease.reservations[0]
        duration = res.end - res.start
        length = sched.length(lease)
        if abs(duration - length) <= 1e-9 * max(1.0, length):
            # a whole run: keep its length exactly (end - start of a reservation placed at a
            # fractional time can be an ulp short, and the work would then outlive the move)
            duration = length
        if res.start <= now:
            return False
        # its own planned boots (nodes off until its start) would sit inside any earlier slot
        # of a reservation longer than the gap to them: out of the table while it looks; the
        # node power states plan the boots its new slot needs after the step
        boots = sched.planned_boots
        lifted = boots.lift(boots.own_boots(res, now), now) if boots is not None else []
        # with its own reservation counted as free, where could the lease start?
        start = table.earlier_start(lease.vms, duration, now, res)
        if start is None:
            if boots is not None and lifted:
                boots.put_back(lifted)
            return False
        placed = None
        if sched.power is None and table.holds_counts_at(start):
            # a table that counts VMs places a plan that starts later as a count, without
            # looking at the table: the steps below, the table's two in one
            placed = sched._place_at(lease, start, duration)
            if placed is not None and placed.pending:
                table.move(res, placed)
                sched._adopt(lease, [placed], now)
                return True
        change = PlanChange(table)
        change.remove(res)
        new = ((placed if placed is not None else sched._place_at(lease, start, duration))
               or sched._find_slot(lease, duration, now, res.start, before=res.start))
        if new is None:
            change.rollback()   # its old slot is still free: nothing else moved into it
            if boots is not None and lifted:
                boots.put_back(lifted)
            return False
        change.add(new)
        sched._adopt(lease, [new], now)
        return True

    def move_resumption_earlier(self, lease: Lease, now: float) -> bool:
        """Plan a pending resumption again; its old plan stays free meanwhile, so the new one
        can only be earlier (or the same, and then the old one is kept)."""
        old = lease.reservations
        if not old or old[0].start <= now:
            return False
        change = PlanChange(self._sched.table)
        for res in old:
            change.remove(res)
        plan = self._sched.suspender.resumption_plan(lease, now, True)
        if plan is None or plan[0].start >= old[0].start:
            change.rollback()
            return False
        for res in plan:
            change.add(res)
        self._sched._adopt(lease, plan, now)
        return True


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
