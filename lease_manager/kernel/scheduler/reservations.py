"""Leases with a slot of their own: immediate leases (now or rejected), advance reservations
(their exact interval, preempting if the policy allows) and deadline leases (the earliest slot
that ends by the deadline, moving other deadline leases within their slack if needed)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseType
from lease_manager.kernel.scheduler.transaction import PlanChange
from lease_manager.kernel.slottable import Reservation

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.deadline_preemption import DeadlinePreemptor
    from lease_manager.kernel.scheduler.image_transfer import TransferPlanner
    from lease_manager.kernel.scheduler.plan_book import PlanBook
    from lease_manager.kernel.scheduler.preemption import Preemptor
    from lease_manager.kernel.slottable import SlotTable

LT = members(LeaseType)


class OwnSlotsHost(Protocol):
    """What planning leases with a slot of their own asks of the scheduler (:class:`~lease_
    manager.kernel.scheduler.LeaseScheduler`). A back-reference: such a lease is placed,
    preempted for, rejected and adopted as the scheduler's other parts do it."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def plans(self) -> PlanBook: ...
    @property
    def future(self) -> Mapping[int, Lease]: ...
    @property
    def preemptor(self) -> Preemptor: ...
    @property
    def deadline_preemptor(self) -> DeadlinePreemptor: ...
    @property
    def transfer_planner(self) -> TransferPlanner | None: ...
    def length(self, lease: Lease) -> float: ...
    def shutdown_of(self, lease: Lease) -> float: ...
    def reject(self, lease: Lease, now: float, reason: str) -> None: ...
    def _commit(self, lease: Lease, plan: list[Reservation], now: float) -> bool: ...
    def _adopt(self, lease: Lease, plan: list[Reservation], now: float, *,
               suspends: bool = False, start_now: bool = True) -> None: ...
    def _place_at(self, lease: Lease, start: float, duration: float) -> Reservation | None: ...
    def _find_slot(self, lease: Lease, duration: float, after: float,
                   not_after: float | None, before: float = ...) -> Reservation | None: ...


class OwnSlots:
    """One scheduler's planning of the leases that are never queued: each gets a slot of its
    own at once, or is rejected. It owns no state (the plans are the plan book's)."""

    __slots__ = ("_sched",)

    def __init__(self, sched: OwnSlotsHost) -> None:
        self._sched = sched

    def immediate(self, lease: Lease, now: float) -> None:
        """Start immediate ``lease`` now, or reject it."""
        sched = self._sched
        transfers = sched.transfer_planner
        if transfers is not None and transfers.manages(lease):
            found = transfers.plan_asap(lease, now, False)   # after its image
            if found is None:
                sched.reject(lease, now, "no room once its image is sent (an immediate lease "
                                         "is never queued)")
                return
            sched._commit(lease, found[0], now)
            return
        duration = sched.length(lease)
        res = None
        if sched.table.fits_at(lease.vms, duration, now):
            res = sched._place_at(lease, now, duration)
        if res is None:
            sched.reject(lease, now, "no room now (an immediate lease is never queued)")
            return
        sched._commit(lease, [res], now)

    def deadline(self, lease: Lease, now: float) -> None:
        """Plan deadline ``lease`` in the earliest slot that ends by its deadline (moving
        other deadline leases, or preempting, if it must), or reject it."""
        sched = self._sched
        duration = sched.length(lease)
        earliest = max(now, lease.start_request if lease.start_request is not None else now)
        deadline = lease.deadline
        assert deadline is not None, "a deadline lease has a deadline"
        latest = deadline - duration

        def slot() -> Reservation | None:
            if latest < earliest:
                return None
            return sched._find_slot(lease, duration, earliest, latest)

        res = slot() or self.make_room(lease, slot, earliest, deadline, now)
        if res is None and latest >= earliest:   # preempting what the policy allows
            res = sched.deadline_preemptor.preempt_for(lease, duration, earliest, latest, now)
        if res is None:
            sched.reject(lease, now, f"cannot finish by its deadline {deadline:g}")
            return
        sched._commit(lease, [res], now)

    def advance(self, lease: Lease, now: float) -> None:
        """Plan advance reservation ``lease`` in its exact interval (moving deadline leases,
        or preempting, if it must), or reject it."""
        sched = self._sched
        start, duration = lease.start_request, lease.requested_duration
        if start is None or start < now:
            sched.reject(lease, now, f"its start time {start} has already passed")
            return
        if duration <= sched.shutdown_of(lease):
            sched.reject(lease, now, "its interval is no longer than the shutdown time")
            return

        def slot() -> Reservation | None:
            if sched.table.fits_at(lease.vms, duration, start):
                return sched._place_at(lease, start, duration)
            return None

        res = slot() or self.make_room(lease, slot, start, start + duration, now)
        if res is None:
            victims = sched.preemptor.victims(lease, start, duration, now)
            if victims is None:
                sched.reject(lease, now, "the requested interval is not free and no lease "
                                         "there may be preempted")
                return
            res = sched.preemptor.preempt_for(lease, victims, start, duration, now)
            if res is None:   # several VM shapes, or a deadline victim with no slot left
                sched.reject(lease, now, "the requested interval could not be freed")
                return
        plan = [res]
        transfers = sched.transfer_planner
        if transfers is not None and transfers.manages(lease):
            prepared = transfers.prepare_exact(lease, res, now)   # its image by its start
            if isinstance(prepared, str):
                sched.reject(lease, now, prepared)
                return
            plan = prepared
        if sched._commit(lease, plan, now):
            sched.plans.add_ar(lease.id)

    def make_room(self, lease: Lease, slot: Callable[[], Reservation | None],
                  start: float, end: float, now: float) -> Reservation | None:
        """Find ``lease`` a slot (``slot()``) after moving planned deadline leases that overlap
        ``[start, end)`` and have slack elsewhere in their windows; never past a deadline. If
        any of them cannot be placed again, nothing changes and None is returned."""
        sched = self._sched
        movable = [o for o in sched.future.values()
                   if o.type is LT.DEADLINE and len(o.reservations) == 1
                   and o.reservations[0].start > now and o.reservations[0].start < end
                   and o.reservations[0].end > start]
        if not movable:
            return None
        change = PlanChange(sched.table)
        old = {o.id: o.reservations[0] for o in movable}
        for o in movable:
            change.remove(old[o.id])
        res = slot()
        placed: list[tuple[Lease, Reservation]] = []
        if res is not None:
            change.add(res)
            for o in sorted(movable, key=lambda o: (o.deadline, o.id)):
                duration = old[o.id].end - old[o.id].start
                earliest = max(now, o.start_request if o.start_request is not None else now)
                new = sched._find_slot(o, duration, earliest, (o.deadline or 0.0) - duration)
                if new is None:
                    break
                change.add(new)
                placed.append((o, new))
            change.remove(res)
        if res is None or len(placed) < len(movable):
            change.rollback()
            return None
        for o, new in placed:   # (their STARTs are events, even at ``now``, as always)
            sched._adopt(o, [new], now, start_now=False)
        return res
