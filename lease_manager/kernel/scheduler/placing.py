"""Placing a plan: host selection and the mapper at a start, the earliest slot, and adopting a
plan once it is in the slot table (the commit every re-planning path shares)."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from lease_manager.errors import OvercommitError
from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.mapper import Placement, place, reservation_one_per_node
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.events import Timeline
    from lease_manager.kernel.policy_protocols import HostSelectionProtocol
    from lease_manager.kernel.scheduler.plan_book import PlanBook
    from lease_manager.kernel.scheduler.seams import Enactment, PowerGate
    from lease_manager.kernel.slottable import SlotTable
    from lease_manager.kernel.table_view import SlotTableView

S = members(LeaseState)
K = members(ReservationKind)
EK = members(EventKind)
NO_NODES = np.empty(0, dtype=np.intp)
NO_AMOUNTS = np.empty((0, 0))


def plan_fault(lease: Lease, plan: list[Reservation], now: float) -> str | None:
    """Why ``plan`` must not reach the slot table, or None if it may: a reservation that
    starts before ``now`` (nothing is planned in the past: a table's horizon is never later
    than now) or before the lease arrived, that is empty or reversed, that starts at no
    finite time, or that never ends for a lease of finite length. Two comparisons per
    reservation when the plan is sound."""
    earliest = now if now > lease.submit else lease.submit
    for res in plan:
        start, end = res.start, res.end
        if earliest <= start < end and (end < math.inf or lease.requested_duration == math.inf):
            continue
        what = f"its {res.kind} reservation"
        if not math.isfinite(start):
            return f"{what} starts at {start}, not a time"
        if not end > start:
            return f"{what} is an empty or reversed interval [{start:g}, {end:g})"
        if start < now:
            return f"{what} would start at {start:g} s, before now ({now:g} s)"
        if start < lease.submit:
            return (f"{what} would start at {start:g} s, before the lease arrived "
                    f"({lease.submit:g} s)")
        return f"{what} never ends, for a lease of {lease.requested_duration:g} s"
    return None


class PlacingHost(Protocol):
    """What placing and adopting plans asks of the scheduler (:class:`~lease_manager.kernel.
    scheduler.LeaseScheduler`). A back-reference: adopting a plan moves the lease through the
    state machine and the hooks, and may start it, which the scheduler's other parts own.
    The parts fixed at construction (the table, host selection, the plan book, the timeline,
    the running leases, the enactment) the placer keeps itself, read once."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def table_view(self) -> SlotTableView: ...
    @property
    def host_selection(self) -> HostSelectionProtocol: ...
    @property
    def plans(self) -> PlanBook: ...
    @property
    def timeline(self) -> Timeline: ...
    @property
    def running(self) -> dict[int, Lease]: ...
    @property
    def power(self) -> PowerGate | None: ...
    @property
    def _muted(self) -> Collection[str]: ...
    @property
    def _enactment(self) -> Enactment: ...
    def _emit(self, hook: str, **kw: Any) -> None: ...
    def _emit_lease(self, hook: str, lease: Lease, now: float) -> None: ...
    def _move(self, lease: Lease, state: LeaseState, now: float) -> None: ...
    def reject(self, lease: Lease, now: float, reason: str) -> None: ...
    def work_end(self, lease: Lease, start: float) -> float: ...
    def segment_started(self, res: Reservation, now: float) -> None: ...
    def _finish(self, lease: Lease, state: LeaseState, now: float) -> None: ...


class Placer:
    """One scheduler's placing of plans (host selection and the mapper at a start, the
    earliest slot) and adopting them once they are in the slot table (the commit every
    re-planning path shares). It owns no state of its own."""

    __slots__ = ("_sched", "_table", "_counting", "_view", "_hosts", "_free_first", "_plans",
                 "_timeline", "_running")

    def __init__(self, sched: PlacingHost) -> None:
        self._sched = sched
        self._table = table = sched.table
        #: the table as one that counts VMs, or None (it plans on nodes: no reservation holds
        #: a count, and it keeps no list of free nodes)
        self._counting = table.counting()
        self._view = sched.table_view
        self._hosts = sched.host_selection
        #: the first free nodes may be taken from the table's list of them: it counts VMs,
        #: and host selection puts the nodes with a free slot first, by index
        self._free_first = (self._counting is not None
                            and bool(getattr(sched.host_selection, "free_nodes_first", False)))
        self._plans = sched.plans
        self._timeline = sched.timeline
        self._running = sched.running

    def place_at(self, lease: Lease, start: float, duration: float) -> Reservation | None:
        """Ask host selection for an order and the mapper for a placement at ``start`` (a
        table that counts VMs places a reservation that starts later when it starts)."""
        end = start + duration
        counting = self._counting
        res: Reservation | None
        if counting is not None and counting.holds_counts_at(start):
            return Reservation(lease, start, end, NO_NODES, NO_AMOUNTS, None, K.VM, (),
                               lease.vms.shape_key, lease.vms.count)
        free = (counting.free_node_list(lease.vms) if self._free_first and counting is not None
                else None)
        if free is not None:
            # _placement's, without making a Placement (one per lease that starts)
            nodes = free.first_free(lease.vms.count)
            res = None if nodes is None else reservation_one_per_node(lease, start, end, nodes)
        else:
            placement = self._placement(lease, start, end)
            res = None if placement is None else placement.reservation(lease, start, end)
        power = self._sched.power
        if res is not None and power is not None and not power.admits([res]):
            return None   # the power cap has no room for it (or for booting its nodes)
        return res

    def _placement(self, lease: Lease, start: float, end: float) -> Placement | None:
        """Host selection's order and the mapper's placement of ``lease``'s VMs over ``[start,
        end)``. On a table that counts VMs, one per node, under a policy that orders the nodes
        with a free slot first by index, that placement is the first free nodes: taken from
        the table's list of them (:meth:`Table.free_node_list
        <lease_manager.kernel.table_protocol.Table.free_node_list>`), without ordering every
        node."""
        demand = lease.vms
        counting = self._counting
        free = (counting.free_node_list(demand) if self._free_first and counting is not None
                and not counting.holds_counts_at(start) else None)
        if free is not None:
            nodes = free.first_free(demand.count)
            if nodes is None:
                return None
            return Placement.one_per_node(tuple(nodes), np.array(nodes, dtype=np.intp),
                                          demand.vectors[0])
        order = self._hosts.order_hosts(lease, start, end, self._view)
        return place(self._table, demand, start, end, order)

    def pin(self, res: Reservation, now: float) -> None:
        """A reservation of a table that counts VMs starts: host selection and the mapper give
        its VMs nodes now (there are always enough: see
        :mod:`~lease_manager.kernel.count_table`)."""
        lease = res.lease
        assert lease is not None
        placement = self._placement(lease, now, res.end)
        if placement is None:
            raise OvercommitError(f"{res!r} finds no nodes when it starts")
        counting = self._counting
        assert counting is not None   # (only a table that counts VMs holds pending ones)
        counting.pin(res, placement)

    def find_slot(self, lease: Lease, duration: float, after: float,
                  not_after: float | None, before: float = math.inf) -> Reservation | None:
        """A reservation at the earliest start in ``[after, not_after]`` (and before
        ``before``) where the mapper places ``lease``.

        Under a power cap, a start the cap refuses is also tried again a boot's time later:
        the room may be there only for a boot that starts when the power frees up."""
        power = self._sched.power
        site_demand = None if power is None else power.least_draw(lease)
        retry = math.inf   # a start the cap refused, plus a boot's time
        place_at = self.place_at

        def try_retry() -> Reservation | None:
            if retry < before and (not_after is None or retry <= not_after):
                return place_at(lease, retry, duration)   # the mapper checks the fit
            return None

        for start in self._table.iter_fit_starts(lease.vms, duration, after,
                                                 not_after=not_after,
                                                 site_demand=site_demand):
            if retry < start:
                res = try_retry()
                if res is not None:
                    return res
                retry = math.inf
            if start >= before:
                return None
            res = place_at(lease, start, duration)
            if res is not None:
                return res
            if power is not None and math.isinf(retry):
                retry = start + power.boot_seconds
        return try_retry() if not math.isinf(retry) else None

    def refused_plan(self, lease: Lease, plan: list[Reservation], now: float) -> bool:
        """If planning gave ``lease`` a plan that must not reach the slot table
        (:func:`plan_fault`), turn it away instead of raising, and say so: a lease that never
        ran is rejected with the reason (a new or queued one), any other fails with it.
        ``lease`` holds nothing in the table when its plan is committed (every caller plans
        it afresh)."""
        fault = plan_fault(lease, plan, now)
        if fault is None:
            return False
        reason = f"planning gave it an impossible plan: {fault}"
        lease.reservations = []
        self._plans.drop(lease.id)
        if lease.start is None and lease.state in (S.NEW, S.QUEUED):
            self._sched.reject(lease, now, reason)
        else:
            lease.reason = reason
            self._sched._finish(lease, S.FAILED, now)
        return True

    def commit(self, lease: Lease, plan: list[Reservation], now: float) -> bool:
        """Put a new ``plan`` for ``lease`` in the slot table and adopt it; False if the plan
        could not be kept and the lease was turned away instead (:meth:`refused_plan`)."""
        if self.refused_plan(lease, plan, now):
            return False
        if lease.state is S.NEW:
            self._sched._move(lease, S.SCHEDULED, now)
        for res in plan:
            self._table.add(res)
        last = plan[-1]
        # a plan cut short of the lease's work ends in a suspension (planned from the start)
        suspends = last.kind == K.SUSPEND or (last.kind == K.VM and
                                              last.end - last.start
                                              < lease.remaining_requested * lease.stretch)
        self.adopt(lease, plan, now, suspends=suspends)
        return True

    def start_at_once(self, lease: Lease, plan: list[Reservation], now: float) -> None:
        """:meth:`commit` of a SCHEDULED lease's ``plan``, one VM reservation on its nodes
        from ``now`` (no power cap, no memory image): the steps :meth:`adopt` and
        :meth:`Lifecycle.segment_started
        <lease_manager.kernel.scheduler.lifecycle.Lifecycle.segment_started>` take for it, in
        their order, with the same hooks; what they test is known here. (The lease never
        enters ``future``: it would leave it before any hook or event could see it there.)"""
        sched = self._sched
        res = plan[0]
        self._table.add(res)
        # (Lease.remaining_requested written out)
        suspends = (res.end - res.start
                    < (lease.requested_duration - lease.work_done) * lease.stretch)
        lease.reservations = plan
        if lease.promised_start is None:
            lease.promised_start = now
        if "lease_scheduled" not in sched._muted:
            sched._emit("lease_scheduled", lease=lease, now=now)
        if suspends:
            self._timeline.push(res.end, EK.SEGMENT_END, res)
        lease_id = lease.id
        self._plans.drop(lease_id)
        if lease.start is None:
            lease.start = now
        if lease.suspended_at is not None:
            lease.time_suspended += now - lease.suspended_at
            lease.suspended_at = None
        sched._move(lease, S.ACTIVE, now)
        self._running[lease_id] = lease
        sched._emit_lease("lease_started", lease, now)
        sched._enactment.start(lease, res, sched.work_end(lease, now))

    def adopt(self, lease: Lease, plan: list[Reservation], now: float, *,
              suspends: bool = False, start_now: bool = True) -> None:
        """Make ``plan`` (already in the slot table) ``lease``'s plan: announce it, put its
        starts on the timeline (and, if it ``suspends``, its last segment's end), and start
        what starts now (with ``start_now``; otherwise a START event at ``now`` does, at the
        next step). Every re-planning path ends here once its :class:`PlanChange` succeeded.

        A move keeps the shape of the plan it replaces, so only a new plan (:meth:`commit`)
        decides whether it ends in a suspension: re-deciding from moved floating point
        interval lengths could see a suspension that was never planned.
        """
        sched = self._sched
        lease.reservations = plan
        if sched.power is not None:
            sched.power.sync(now)   # boot its nodes and hold their power before the next plan
        if lease.promised_start is None:   # (when its VMs start: an image transfer comes first)
            lease.promised_start = next((r.start for r in plan if r.kind != K.TRANSFER),
                                        plan[0].start)
        if "lease_scheduled" not in sched._muted:
            sched._emit("lease_scheduled", lease=lease, now=now)
        self._plans.planned(lease)
        timeline = self._timeline
        for res in plan:
            if res.start > now or (not start_now and res is plan[0]):
                timeline.push(res.start, EK.START, res)
        if suspends:
            timeline.push(plan[-1].end, EK.SEGMENT_END, plan[-1])
        if start_now and plan[0].start <= now:
            sched.segment_started(plan[0], now)
