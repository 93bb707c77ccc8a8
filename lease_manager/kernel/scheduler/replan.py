"""Haizea's re-evaluation (``[scheduling] reevaluation = replan``): when a lease ends before
its reservation does, every lease holding a future reservation from the queue gives it up and
is planned again from scratch, with a fresh host ordering, as Haizea 1.0's
``LeaseScheduler.reevaluate_schedule`` does.

Haizea re-plans at each premature end as it happens (before the instant's planned starts), so
when several leases end early at one instant, each re-plan sees the leases not yet ended still
holding their nodes. Haizea takes those ends in the order of their reservations' scheduled ends
(ties: the order the reservations were made); a replay does the same here. Leases re-planned
are Haizea's "future leases": those whose reservation came from the queue and started later
than the cycle that made it (backfilling reservations), in scheduling order. Advance
reservations, immediate and deadline leases keep their plans.

Unlike ``move-earlier``, a re-planned lease is not held to the start it was promised: with
several future reservations (``conservative``), re-planning one can push another later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from collections.abc import Mapping

    from lease_manager.kernel.scheduler.haizea_asap import HaizeaPlanner
    from lease_manager.kernel.scheduler.image_transfer import TransferPlanner
    from lease_manager.kernel.scheduler.plan_book import PlanBook
    from lease_manager.kernel.scheduler.queue import Backfiller
    from lease_manager.kernel.scheduler.reevaluator import Reevaluator
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.scheduler.suspension import Suspender
    from lease_manager.kernel.slottable import SlotTable

S = members(LeaseState)
K = members(ReservationKind)
#: the values of ``[scheduling] reevaluation``
REEVALUATIONS = ("auto", "move-earlier", "compress", "replan")
#: the re-evaluations that run at each premature end as it happens (``move-earlier`` runs once
#: per instant, after the instant's ends)
AT_EACH_END = ("compress", "replan")
#: what ``auto`` means, by backfilling mode and whether the table counts VMs (``placement =
#: at-start``); chosen on bench/reevaluation.py's table (README "Re-evaluation after early
#: ends"): conservative backfilling's own compression where it is closer to an independent
#: simulator's schedules and faster (counted nodes); ``move-earlier`` everywhere else
AUTO = {("conservative", True): "compress"}


def by_mode(reevaluation: str, backfilling: str, counted: bool) -> str:
    """The re-evaluation that runs: ``reevaluation``, or if ``auto`` the one chosen for the
    backfilling mode and placement (``counted``: nodes counted, chosen when leases start)."""
    if reevaluation != "auto":
        return reevaluation
    return AUTO.get((backfilling, counted), "move-earlier")


class ReplanHost(Protocol):
    """What Haizea's re-plan asks of the scheduler (:class:`~lease_manager.kernel.scheduler.
    LeaseScheduler`). A back-reference: a re-planned lease is planned as the queue plans it
    (the backfiller's, the suspender's, image transfers' and Haizea's planning) and adopted
    as every plan is."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def settings(self) -> SchedulerSettings: ...
    @property
    def plans(self) -> PlanBook: ...
    @property
    def backfiller(self) -> Backfiller: ...
    @property
    def reeval(self) -> Reevaluator: ...
    @property
    def suspender(self) -> Suspender: ...
    @property
    def transfer_planner(self) -> TransferPlanner | None: ...
    @property
    def haizea_planner(self) -> HaizeaPlanner: ...
    @property
    def bootable(self) -> Mapping[int, float]: ...
    def length(self, lease: Lease) -> float: ...
    def _move(self, lease: Lease, state: LeaseState, now: float) -> None: ...
    def _commit(self, lease: Lease, plan: list[Reservation], now: float) -> bool: ...
    def _place_at(self, lease: Lease, start: float, duration: float) -> Reservation | None: ...
    def _find_slot(self, lease: Lease, duration: float, after: float,
                   not_after: float | None, before: float = ...) -> Reservation | None: ...


class Replanner:
    """One scheduler's ``replan`` re-evaluation (no state of its own: whether a suspended
    lease is being planned again is the :class:`~lease_manager.kernel.scheduler.reevaluator.
    Reevaluator`'s)."""

    __slots__ = ("_sched",)

    def __init__(self, sched: ReplanHost) -> None:
        self._sched = sched

    def replan_future(self, now: float) -> None:
        """Give up every backfilling reservation that has not started and plan each lease
        again, in scheduling order (Haizea's ``reevaluate_schedule``)."""
        plans = self._sched.plans
        for lease in plans.reserved_leases():
            if lease.id in plans.reserved and lease.state is S.SCHEDULED:
                self.replan(lease, now)

    def replan(self, lease: Lease, now: float) -> None:
        """Plan ``lease`` again from scratch at ``now``: now if it fits, else (as the
        backfilling mode allows) at the earliest time it fits. Its old slot is free meanwhile,
        so a plan is always found while it may reserve; if it may not (a third-party path),
        it is requeued."""
        sched = self._sched
        for old in lease.reservations:
            sched.table.remove(old)
        lease.reservations = []
        sched.plans.drop(lease.id)
        lease.promised_start = None
        allow_future = sched.backfiller.may_reserve()
        booted = False
        in_future: bool | None = None   # (known here only for a lease planned with its image)
        plan: list[Reservation] | None
        if lease.image_nodes:
            sched.reeval.replanning_lease = True   # (Haizea's threshold omits the resumption)
            try:
                plan = sched.suspender.resumption_plan(lease, now, allow_future)
            finally:
                sched.reeval.replanning_lease = False
        elif sched.transfer_planner is not None and sched.transfer_planner.manages(lease):
            found = sched.transfer_planner.plan_asap(lease, now, allow_future)
            plan, in_future = (None, False) if found is None else found
        elif sched.settings.haizea_planning:
            found = sched.haizea_planner.plan(lease, now, allow_future)
            plan, in_future = (None, False) if found is None else found
        else:
            plan, booted = self._plan_new(lease, now, allow_future)
        if plan is None:
            sched._move(lease, S.QUEUED, now)
            sched.backfiller.requeue(lease)
            return
        reserved = in_future if in_future is not None else (plan[0].start > now and not booted)
        if reserved:
            sched.plans.reserve(lease.id)
        sched._commit(lease, plan, now)

    def _plan_new(self, lease: Lease, now: float,
                  allow_future: bool) -> tuple[list[Reservation] | None, bool]:
        """A plan as the queue makes one (now, in front of an advance reservation, once
        nodes are booted, or later if ``allow_future``), and whether it waits for a boot."""
        sched = self._sched
        duration = sched.length(lease)
        res: Reservation | None = None
        plan = None
        booted = False
        if sched.table.fits_at(lease.vms, duration, now):
            res = sched._place_at(lease, now, duration)
        if res is None:
            plan = sched.backfiller.run_until_a_reservation(lease, now, duration)
        if plan is None and res is None and sched.bootable:
            res = sched.backfiller.start_when_booted(lease, duration, now)
            booted = res is not None
        if plan is None and res is None and allow_future:
            res = sched._find_slot(lease, duration, now, None)
        if plan is None and res is not None:
            plan = [res]
        return plan, booted
