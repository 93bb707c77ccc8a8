"""Leases with a slot of their own: immediate leases (now or rejected), advance reservations
(their exact interval, preempting if the policy allows) and deadline leases (the earliest slot
that ends by the deadline, moving other deadline leases within their slack if needed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseType
from lease_manager.kernel.scheduler import deadline_preemption, image_transfer, preemption
from lease_manager.kernel.scheduler.transaction import PlanChange
from lease_manager.kernel.slottable import Reservation

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler

LT = members(LeaseType)


def _schedule_immediate(self: LeaseScheduler, lease: Lease, now: float) -> None:
    if self.preparation is not None and self.preparation.manages(lease):
        found = image_transfer.plan_asap(self, lease, now, False)   # after its image
        if found is None:
            self.reject(lease, now, "no room once its image is sent (an immediate lease is "
                                    "never queued)")
            return
        self._commit(lease, found[0], now)
        return
    duration = self.length(lease)
    res = None
    if self.table.fits_at(lease.vms, duration, now):
        res = self._place_at(lease, now, duration)
    if res is None:
        self.reject(lease, now, "no room now (an immediate lease is never queued)")
        return
    self._commit(lease, [res], now)


def _schedule_deadline(self: LeaseScheduler, lease: Lease, now: float) -> None:
    duration = self.length(lease)
    earliest = max(now, lease.start_request if lease.start_request is not None else now)
    deadline = lease.deadline
    assert deadline is not None, "a deadline lease has a deadline"
    latest = deadline - duration

    def slot() -> Reservation | None:
        if latest < earliest:
            return None
        return self._find_slot(lease, duration, earliest, latest)

    res = slot() or self._make_room(lease, slot, earliest, deadline, now)
    if res is None and latest >= earliest:   # preempting what the policy allows
        res = deadline_preemption.preempt_for_deadline(self, lease, duration, earliest,
                                                       latest, now)
    if res is None:
        self.reject(lease, now, f"cannot finish by its deadline {deadline:g}")
        return
    self._commit(lease, [res], now)


def _schedule_ar(self: LeaseScheduler, lease: Lease, now: float) -> None:
    start, duration = lease.start_request, lease.requested_duration
    if start is None or start < now:
        self.reject(lease, now, f"its start time {start} has already passed")
        return
    if duration <= self.shutdown_of(lease):
        self.reject(lease, now, "its interval is no longer than the shutdown time")
        return

    def slot() -> Reservation | None:
        if self.table.fits_at(lease.vms, duration, start):
            return self._place_at(lease, start, duration)
        return None

    res = slot() or self._make_room(lease, slot, start, start + duration, now)
    if res is None:
        victims = self._victims(lease, start, duration, now)
        if victims is None:
            self.reject(lease, now, "the requested interval is not free and no lease "
                                    "there may be preempted")
            return
        res = preemption._preempt_for(self, lease, victims, start, duration, now)
        if res is None:   # several VM shapes, or a deadline victim with no slot left
            self.reject(lease, now, "the requested interval could not be freed")
            return
    plan = [res]
    if self.preparation is not None and self.preparation.manages(lease):
        prepared = image_transfer.prepare_exact(self, lease, res, now)   # its image by its start
        if isinstance(prepared, str):
            self.reject(lease, now, prepared)
            return
        plan = prepared
    if self._commit(lease, plan, now):
        self.plans.add_ar(lease.id)


def _make_room(self: LeaseScheduler, lease: Lease, slot: Callable[[], Reservation | None],
               start: float, end: float, now: float) -> Reservation | None:
    """Find ``lease`` a slot (``slot()``) after moving planned deadline leases that overlap
    ``[start, end)`` and have slack elsewhere in their windows; never past a deadline. If
    any of them cannot be placed again, nothing changes and None is returned."""
    movable = [o for o in self.future.values()
               if o.type is LT.DEADLINE and len(o.reservations) == 1
               and o.reservations[0].start > now and o.reservations[0].start < end
               and o.reservations[0].end > start]
    if not movable:
        return None
    change = PlanChange(self.table)
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
            new = self._find_slot(o, duration, earliest, (o.deadline or 0.0) - duration)
            if new is None:
                break
            change.add(new)
            placed.append((o, new))
        change.remove(res)
    if res is None or len(placed) < len(movable):
        change.rollback()
        return None
    for o, new in placed:   # (their STARTs are events, even at ``now``, as always)
        self._adopt(o, [new], now, start_now=False)
    return res
