"""The plan book: which leases hold a plan that has not started, which of those plans count
against the backfilling mode's limit, and which advance reservations hold a plan. Its one
owner of that state: the scheduler's parts change it only through these methods, and read
it through :attr:`PlanBook.future` (the scheduler's ``future``, a read-only view)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease


class PlanBook:
    """The planned leases of one scheduler (the reservations themselves are in the slot
    table, and each lease's plan in its ``reservations``)."""

    __slots__ = ("future", "reserved", "ars")

    def __init__(self) -> None:
        #: leases whose plan has not started yet, by id, in scheduling order
        self.future: dict[int, Lease] = {}
        #: ids of the leases in ``future`` that got their reservation from the queue (these
        #: count against the backfilling mode's limit)
        self.reserved: set[int] = set()
        #: ids of the advance reservations holding a plan (queued leases may run in front)
        self.ars: set[int] = set()

    def planned(self, lease: Lease) -> None:
        """``lease`` holds a plan (new or moved) that has not started."""
        self.future[lease.id] = lease

    def reserve(self, lease_id: int) -> None:
        """The lease's plan came from the queue and starts later: it counts against the
        backfilling limit until its VMs start (or it is dropped)."""
        self.reserved.add(lease_id)

    def may_reserve(self, most: float) -> bool:
        """Whether one more queued lease may get a future reservation, ``most`` allowed."""
        return len(self.reserved) < most

    def drop(self, lease_id: int) -> None:
        """The lease no longer holds a plan that has not started (it started, was
        re-planned, preempted, cancelled, or refused)."""
        self.future.pop(lease_id, None)
        self.reserved.discard(lease_id)

    def leave(self, lease_id: int) -> None:
        """The lease's plan began (a migration or resumption), but its reservation keeps
        counting against the backfilling limit until its VMs start (Haizea's future leases)."""
        self.future.pop(lease_id, None)

    def vms_started(self, lease_id: int) -> None:
        """The lease's VMs started: its reservation no longer counts against the limit."""
        self.reserved.discard(lease_id)

    def reserved_leases(self) -> list[Lease]:
        """The planned leases whose reservation came from the queue, in scheduling order."""
        reserved = self.reserved
        return [lease for lease in self.future.values() if lease.id in reserved]

    def add_ar(self, lease_id: int) -> None:
        """Advance reservation ``lease_id`` holds a plan."""
        self.ars.add(lease_id)

    def drop_ar(self, lease_id: int) -> None:
        """``lease_id`` (if an advance reservation) holds no plan any more."""
        self.ars.discard(lease_id)
