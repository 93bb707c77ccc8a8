"""Re-evaluation after early ends: future reservations move earlier where a premature end (or
a cancellation) left room, never later than the start they were promised: pass after pass
until none moves (``move-earlier``), or in one pass in order of arrival (``compress``)."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable
from itertools import accumulate, islice
from operator import attrgetter
from typing import TYPE_CHECKING, cast

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.scheduler.transaction import PlanChange
from lease_manager.kernel.slottable import ChangeWatch

if TYPE_CHECKING:
    from lease_manager.kernel.count_table import CountTable
    from lease_manager.kernel.reservation import Reservation
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
    lease moved before it; the last lease that moved (or None). Leases known not to be able
    to move (:class:`BlockedLeases`) are passed over without a look at the table."""
    last_mover: Lease | None = None
    tests = _MoveTests(self.table, now) if len(leases) >= MANY_FUTURE else None
    freed = math.inf   # the earliest time moves gave slots back since the tests' rows
    boots = self.planned_boots
    known = _blocked(self, now)
    for lease in leases:
        if lease is stop_at and last_mover is None:
            break
        if known is not None and known.still(lease):
            continue
        if tests is not None and not tests.may_move(lease) and not (
                # the tests count its own planned boots as taken; _move_earlier does not
                boots is not None and boots.own_boots(lease.reservations[0], now)):
            # the tests look at the rows before the lease's start only: slots given
            # back there since they were read may let it start earlier
            if freed >= lease.reservations[0].start:
                if known is not None:
                    known.prove(lease)
                continue
            tests.clear()
            freed = math.inf
            if not tests.may_move(lease):
                if known is not None:
                    known.prove(lease)
                continue
        old = lease.reservations[0] if tests is not None else None
        outcome = _attempt(self, lease, now)
        if outcome > 0:
            last_mover = lease
            if old is not None:   # its old slot, less the new one, is free again
                freed = min(freed, max(old.start, lease.reservations[0].end))
        if known is not None and (outcome == _BLOCKED or outcome == _MOVED_EARLIEST):
            known.prove(lease)
    return last_mover


#: what :func:`_attempt` came to: the lease moved to the earliest start the table allows
#: (with nothing set aside), moved (otherwise), did not move (for a reason other than the
#: table), or has no earlier start in the table (with nothing set aside)
_MOVED_EARLIEST, _MOVED, _STAYED, _BLOCKED = 2, 1, 0, -1


def _blocked(self: LeaseScheduler, now: float) -> BlockedLeases | None:
    """The scheduler's record of leases known not to be able to move, ready for a pass (on a
    table that counts VMs; None on others)."""
    table = self.table
    if not table.counted:
        return None
    known = self.known_blocked
    if known is None or known.table is not table:
        known = self.known_blocked = BlockedLeases(cast("CountTable", table))
    known.begin_pass(now, self.planned_boots is not None, self.future)
    return known


class _FreeLog(ChangeWatch):
    """The changes of a table that gave capacity back, in order: where each freed interval
    starts and ends (``los``, ``his``); ``base`` is the number of the first one kept."""

    def __init__(self) -> None:
        super().__init__()
        self.los: list[float] = []
        self.his: list[float] = []
        self.base = 0

    def record(self, lo: float, hi: float, freed: bool) -> None:
        if freed:
            self.los.append(lo)
            self.his.append(hi)

    @property
    def count(self) -> int:
        """How many frees there have been."""
        return self.base + len(self.his)

    def forget_before(self, number: int) -> None:
        """Keep the frees from number ``number`` on only."""
        drop = number - self.base
        if drop > 0:
            del self.los[:drop]
            del self.his[:drop]
            self.base = number


class BlockedLeases:
    """Planned leases known not to be able to start earlier, on a table that counts VMs.

    A lease is *proven* blocked when a pass finds that no earlier start fits it (the table's
    test or its earliest start), or moves it to the earliest start that fits: then no window
    of its length from ``now`` that starts before its reservation has room for it all
    through, its own reservation counted as free. Taking slots keeps that true, and so does
    the clock moving on (fewer windows). Only capacity given back can change it, and only
    for a window that overlaps an interval freed since: such a window starts before that
    interval ends, and in a row with room for the lease. So a lease stays blocked while the
    most room of any row from now up to its start, or up to the latest end of the intervals
    freed since its proof if that is earlier, is less than its VM count: it is then passed
    over, with nothing asked of the table, and its proof renewed. The frees come from the
    table (:class:`_FreeLog`), and a proof holds for the reservation it was made on.

    With node power states, a lease's own planned boots may be set aside when it tries to
    move, which the table's rows do not show: a lease with such boots is never passed over
    (on this table, which gives nodes only when a lease starts, it has none)."""

    def __init__(self, table: CountTable) -> None:
        self.table = table
        self.log = _FreeLog()
        table.watch(self.log)
        #: lease id -> (the reservation proven blocked, the number of frees before the proof)
        self._proofs: dict[int, tuple[Reservation, int]] = {}
        self._pass_start = 0   # the number of frees when the pass before this one began
        self._now = 0.0
        self._boots = False
        self._rows: _RoomBefore | None = None
        self._suffix: list[float] = []   # latest end of the frees from each kept one on
        self._read = 0   # frees of the log read since the pass began (index in the log)
        self._latest = -math.inf   # the latest end of those
        self._earliest = math.inf   # the earliest start of the frees since the rows

    def begin_pass(self, now: float, boots: bool, future: dict[int, Lease]) -> None:
        """A pass begins at ``now`` over leases of ``future`` (``boots``: with planned boots
        that a move sets aside, no lease is passed over)."""
        log = self.log
        log.forget_before(self._pass_start)   # proofs older than the pass before: unused
        self._pass_start = log.count
        his = log.his
        suffix = list(accumulate(reversed(his), max))
        suffix.reverse()
        suffix.append(-math.inf)
        self._suffix = suffix
        self._read = len(his)
        self._latest = -math.inf
        self._now = now
        self._boots = boots
        self._rows = None
        proofs = self._proofs
        if len(proofs) > 2 * len(future) + 64:   # forget leases no longer planned
            self._proofs = {i: proofs[i] for i in future if i in proofs}

    def still(self, lease: Lease) -> bool:
        """Whether ``lease`` is known not to be able to move now (its proof is renewed)."""
        proof = self._proofs.get(lease.id)
        if proof is None:
            return False
        res, number = proof
        plan = lease.reservations
        if len(plan) != 1 or plan[0] is not res or self._boots:
            return False
        log = self.log
        i = number - log.base
        if i < 0:
            return False
        his = log.his
        if len(his) > self._read:   # frees during this pass
            self._catch_up()
        latest = self._suffix[i] if i < len(self._suffix) else -math.inf
        if self._latest > latest:
            latest = self._latest
        until = res.start if res.start < latest else latest
        if until > self._now and self._most_before(until) >= lease.vms.count:
            return False
        self._proofs[lease.id] = (res, log.count)
        return True

    def prove(self, lease: Lease) -> None:
        """``lease``'s reservation has no earlier start that fits, as the table is now."""
        if not self._boots:
            self._proofs[lease.id] = (lease.reservations[0], self.log.count)

    def _catch_up(self) -> None:
        log = self.log
        new = slice(self._read, len(log.his))
        self._latest = max(self._latest, *log.his[new])
        self._earliest = min(self._earliest, *log.los[new])
        self._read = len(log.his)

    def _most_before(self, until: float) -> int:
        """The most room of any row from now up to ``until`` (not included), read from rows
        kept since the pass began or since capacity was last given back before ``until``
        (rows kept that long have at least the room they have now, before then)."""
        rows = self._rows
        if rows is None or self._earliest < until:
            rows = self._rows = _RoomBefore(self.table, self._now)
            self._earliest = math.inf
        return rows.most_before(until)


class _RoomBefore:
    """The most free VM slots of any row from ``now`` up to a time, on a count table's rows
    as they are when made (computed as far as asked)."""

    __slots__ = ("_times", "_most", "_running")

    def __init__(self, table: CountTable, now: float) -> None:
        times, free = table.profile_lists(now)
        self._times = times
        self._most: list[int] = []
        self._running = accumulate(free, max)

    def most_before(self, until: float) -> int:
        k = bisect_left(self._times, until)   # rows 0..k-1 hold times before ``until``
        most = self._most
        if k > len(most):
            most.extend(islice(self._running, k - len(most)))
        return most[k - 1]


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
    """Move ``lease``'s plan to its earliest start, if that is earlier; whether it moved."""
    return _attempt(self, lease, now) > 0


def _attempt(self: LeaseScheduler, lease: Lease, now: float) -> int:
    """:func:`_move_earlier`, saying why it moved or not (``_MOVED_EARLIEST``, ...)."""
    if lease.image_nodes and lease.state is S.SCHEDULED:
        return _MOVED if self._move_resumption_earlier(lease, now) else _STAYED
    if lease.type not in (LT.BEST_EFFORT, LT.DEADLINE) or len(
            lease.reservations) != 1:
        return _STAYED
    table = self.table
    res = lease.reservations[0]
    duration = res.end - res.start
    length = self.length(lease)
    if abs(duration - length) <= 1e-9 * max(1.0, length):
        # a whole run: keep its length exactly (end - start of a reservation placed at a
        # fractional time can be an ulp short, and the work would then outlive the move)
        duration = length
    if res.start <= now:
        return _STAYED
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
            return _STAYED
        return _BLOCKED
    if table.counted and self.power is None and start > cast("CountTable", table).now:
        # a table that counts VMs places a plan that starts later as a count: nothing can
        # keep it from moving (the same steps as below, the table's two in one)
        moved = self._place_at(lease, start, duration)
        assert moved is not None and moved.pending
        cast("CountTable", table).move_pending(res, moved)
        self._adopt(lease, [moved], now)
        return _MOVED if lifted else _MOVED_EARLIEST
    change = PlanChange(table)
    change.remove(res)
    new = self._place_at(lease, start, duration)
    earliest = new is not None and not lifted
    if new is None:
        new = self._find_slot(lease, duration, now, res.start, before=res.start)
    if new is None:
        change.rollback()   # its old slot is still free: nothing else moved into it
        if boots is not None and lifted:
            boots.put_back(lifted)
        return _STAYED
    change.add(new)
    self._adopt(lease, [new], now)
    return _MOVED_EARLIEST if earliest else _MOVED


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
