"""Asking a site where a lease would be planned, changing nothing (a meta-scheduler's and an
operating-point policy's question)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseType

if TYPE_CHECKING:
    from lease_manager.kernel.policy_protocols import HostSelectionProtocol
    from lease_manager.kernel.scheduler.seams import LevelSetter, PowerGate
    from lease_manager.kernel.slottable import Reservation, SlotTable

LT = members(LeaseType)
#: where a lease would be planned: its DVFS level, and its first reservation's start and end
Answer = tuple[int | None, float, float]


class WhatIfHost(Protocol):
    """What the question asks of the scheduler (:class:`~lease_manager.kernel.scheduler.
    LeaseScheduler`). A back-reference: the answer is the scheduler's own placing, with the
    energy parts it has when asked."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def host_selection(self) -> HostSelectionProtocol: ...
    @property
    def operating_point(self) -> LevelSetter | None: ...
    @property
    def power(self) -> PowerGate | None: ...
    def oversize_reason(self, lease: Lease) -> str: ...
    def length(self, lease: Lease) -> float: ...
    def _find_slot(self, lease: Lease, duration: float, after: float,
                   not_after: float | None, before: float = ...) -> Reservation | None: ...


class WhatIf:
    """One scheduler's answer to "where would this lease go"; it owns the last answer (asked
    again at once, as an operating point's try does, it is not computed twice)."""

    __slots__ = ("_sched", "_memo")

    def __init__(self, sched: WhatIfHost) -> None:
        self._sched = sched
        self._memo: tuple[tuple, Answer | None] | None = None

    def __call__(self, lease: Lease, now: float, level: int | None = None
                 ) -> Answer | None:
        """Where ``lease`` would be planned if it arrived now, changing nothing: its DVFS
        level and its first reservation's start and end, at ``level`` if given, else at the
        level the site's operating-point policy picks. None if the site cannot take it: too
        large, or no slot that ends by its deadline (an immediate lease: no slot now; an
        advance reservation: its interval is not free). Preemption and moving other leases
        are not tried."""
        sched = self._sched
        if sched.oversize_reason(lease):
            return None
        saved = lease.level, lease.stretch
        try:
            if sched.operating_point is not None:
                reason = (sched.operating_point(lease, now) if level is None
                          else sched.operating_point.set_level(lease, level))
                if reason:
                    return None
            length = sched.length(lease)
            after = now if lease.start_request is None else max(now, lease.start_request)
            key = (lease.id, lease.type, lease.level, length, after, lease.deadline,
                   sched.table.version)
            if self._memo is not None and self._memo[0] == key:
                return self._memo[1]   # asked again at once (an operating point's try)
            not_after: float | None = None
            if lease.type is LT.IMMEDIATE or lease.type is LT.ADVANCE_RESERVATION:
                not_after = after
            if lease.deadline is not None:
                latest = lease.deadline - length
                not_after = latest if not_after is None else min(not_after, latest)
                if latest < after:
                    return None
            answer: Answer | None
            if (sched.power is None and len(lease.vms.counts) == 1
                    and getattr(sched.host_selection, "orders_every_node", False)):
                # identical VMs on any nodes: the table's fit is exact, no mapper needed
                start = sched.table.earliest_fit(lease.vms, length, after, not_after=not_after)
                answer = None if start is None else (lease.level, start, start + length)
            else:
                res = sched._find_slot(lease, length, after, not_after)
                answer = None if res is None else (lease.level, res.start, res.end)
            self._memo = (key, answer)
            return answer
        finally:
            lease.level, lease.stretch = saved
