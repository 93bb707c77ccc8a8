"""Haizea's planning of best-effort leases (with ``suspendresume-model = haizea``), as Haizea
1.0's ``VMScheduler.__schedule_asap`` does it.

The lease is tried at each of its earliest starts (now, or, with image transfers, when its image
reaches the nodes: each distinct time with the nodes ready by then), then, if the backfilling
mode allows a future reservation, at the ends of the VM reservations after them. At each start
Haizea's greedy mapper visits the hosts in the host-selection order and puts as many VMs as fit
on each. When the lease may be suspended, a host that can hold one more VM for only part of the
lease's time shortens the interval to what it can hold instead of being passed over: the lease
then runs until that time and suspends (its suspension, planned to end then, is part of the
plan), if it runs at least Haizea's scheduling threshold (its suspension estimate x (1 +
``scheduling-threshold-factor``), or ``force-scheduling-threshold``). So a best-effort lease
may run in front of any reservation, not only an advance reservation's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.mapper import Placement
from lease_manager.kernel.slottable import EPS, Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.events import Timeline
    from lease_manager.kernel.policy_protocols import HostSelectionProtocol
    from lease_manager.kernel.scheduler.haizea_resumption import HaizeaSuspendResume
    from lease_manager.kernel.scheduler.plan_book import PlanBook
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.scheduler.suspension import Suspender
    from lease_manager.kernel.slottable import SlotTable
    from lease_manager.kernel.table_view import SlotTableView

S = members(LeaseState)
K = members(ReservationKind)
EK = members(EventKind)


class HaizeaMapper:
    """Haizea's greedy mapper and what it is tried at: the scheduling threshold, the mapping
    at one start, the future candidate starts. It reads the slot table and asks the host
    selection; it owns no state (its parts are fixed when the scheduler is made)."""

    __slots__ = ("_table", "_table_view", "_host_selection", "_settings")

    def __init__(self, table: SlotTable, table_view: SlotTableView,
                 host_selection: HostSelectionProtocol, settings: SchedulerSettings) -> None:
        self._table, self._table_view = table, table_view
        self._host_selection, self._settings = host_selection, settings

    def threshold(self, lease: Lease) -> float:
        """Haizea's scheduling threshold: the shortest time a lease that will be suspended
        must run (``__compute_scheduling_threshold``)."""
        settings = self._settings
        if settings.forced_threshold is not None:
            return settings.forced_threshold
        model: HaizeaSuspendResume = settings.suspend_resume   # type: ignore[assignment]
        safe = model.estimate(lease, model.suspend_rate, model.suspend_override)
        return safe + safe * settings.threshold_factor

    def _latest_fit(self, node: int, need: np.ndarray, start: float,
                    free_now: np.ndarray) -> float | None:
        """When ``node`` stops having ``need`` free after ``start`` (None: it has not at
        ``start``, where it has ``free_now``)."""
        table = self._table
        if ((free_now[node] - need) < -EPS).any():
            return None
        for t in table.change_points(start, math.inf, node=node):
            if ((table.free_at(t)[node] - need) < -EPS).any():
                return t
        return None

    def haizea_map(self, lease: Lease, start: float, duration: float,
                   allowed: set[int] | None, strict: bool) -> tuple[Placement, float] | None:
        """Haizea's greedy mapper at ``start``: the placement and the end it holds until
        (``start + duration``, or earlier when not ``strict``); None if the VMs do not fit."""
        table = self._table
        order = np.asarray(self._host_selection.order_hosts(
            lease, start, start + duration, self._table_view)).tolist()
        per_vm = lease.vms.per_vm()
        free_now = table.free_at(start)
        smallest = per_vm.min(axis=0)
        # hosts that cannot hold a VM at the start take none (Haizea visits them in vain)
        order = [node for node in order if (allowed is None or node in allowed)
                 and (free_now[node] - smallest >= -EPS).all()]
        if len(lease.vms.counts) == 1:
            vms: list[int] = list(range(len(per_vm)))   # identical VMs: in order
        else:   # the largest first (normalised by the largest of each resource), stable
            scale = np.where(per_vm.max(axis=0) > 0, per_vm.max(axis=0), 1.0)
            vms = sorted(range(len(per_vm)), key=lambda i: -float((per_vm[i] / scale).sum()))
        end = start + duration
        free = table.min_free(start, end)   # (again whenever the end moves earlier)
        vm_nodes = [0] * len(per_vm)
        k = 0
        for node in order:
            need = np.zeros(per_vm.shape[1])
            while k < len(vms):
                more = need + per_vm[vms[k]]
                if (free[node] - more >= -EPS).all():
                    need = more
                    vm_nodes[vms[k]] = node
                    k += 1
                    continue
                latest = None if strict else self._latest_fit(node, more, start, free_now)
                if latest is None or latest <= start:
                    break
                end = latest
                free = table.min_free(start, end)
            if k == len(vms):
                return Placement.on_nodes(vm_nodes, lease.vms), end
        return None

    def future_starts(self, after: float) -> list[float]:
        """Haizea's future candidates: the final ends of VM reservations after ``after`` (a VM
        reservation followed by its suspension ends when the suspension does)."""
        ends = set()
        for r in self._table.reservations_between(after, math.inf):
            if r.end <= after or r.kind not in (K.VM, K.SUSPEND):
                continue
            if r.kind == K.VM and r.lease is not None and any(
                    later.kind == K.SUSPEND and later.start == r.end
                    for later in r.lease.reservations):
                continue   # its suspension's end counts instead
            ends.add(r.end)
        return sorted(ends)


class HaizeaHost(Protocol):
    """What Haizea's planning asks of the scheduler (:class:`~lease_manager.kernel.scheduler.
    LeaseScheduler`). A back-reference: a plan it makes is checked, adopted and announced as
    every other planning path's is."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def timeline(self) -> Timeline: ...
    @property
    def settings(self) -> SchedulerSettings: ...
    @property
    def plans(self) -> PlanBook: ...
    @property
    def suspender(self) -> Suspender: ...
    def length(self, lease: Lease) -> float: ...
    def _move(self, lease: Lease, state: LeaseState, now: float) -> None: ...
    def _emit(self, hook: str, **kw: Any) -> None: ...
    def _refused_plan(self, lease: Lease, plan: list[Reservation], now: float) -> bool: ...
    def _commit(self, lease: Lease, plan: list[Reservation], now: float) -> bool: ...


class HaizeaPlanner:
    """One scheduler's planning of best-effort leases Haizea's way (the module docstring),
    with its :class:`HaizeaMapper`. It owns no state."""

    __slots__ = ("_sched", "mapper")

    def __init__(self, sched: HaizeaHost, mapper: HaizeaMapper) -> None:
        self._sched = sched
        #: Haizea's mapper (shared with Haizea's resumptions)
        self.mapper = mapper

    def plan(self, lease: Lease, now: float, allow_future: bool,
             times: dict[int, float] | None = None) -> tuple[list[Reservation], bool] | None:
        """Haizea's plan for ``lease`` (the module docstring): ``times`` are the earliest start
        on each node (default: now everywhere). Returns the plan and whether it was made in
        the future (a backfilling reservation)."""
        sched, mapper = self._sched, self.mapper
        n = len(sched.table.capacity)
        times = times if times is not None else dict.fromkeys(range(n), now)
        duration = sched.length(lease)
        strict = not sched.suspender.can_suspend(lease)
        shortest = 0.0 if strict else mapper.threshold(lease)
        points = sorted(set(times.values()))
        tries: list[tuple[float, set[int] | None, bool]] = [
            (t, {node for node, e in times.items() if e <= t}, False) for t in points]
        if allow_future:
            tries += [(t, None, True) for t in mapper.future_starts(points[-1])]
        for t, allowed, in_future in tries:
            found = mapper.haizea_map(lease, t, duration, allowed, strict)
            if found is None:
                continue
            placement, end = found
            if end < t + duration:
                if end - t < shortest:
                    continue
                vm = placement.reservation(lease, t, end)
                suspend = sched.settings.suspend_resume.suspend_time(vm)
                if suspend > 0:
                    vm.end = end - suspend
                    return [vm, placement.reservation(lease, end - suspend, end,
                                                      kind=K.SUSPEND)], in_future
                return [vm], in_future
            return [placement.reservation(lease, t, t + duration)], in_future
        return None

    def tell_planned_preemption(self, lease: Lease, steps: list[Reservation],
                                now: float) -> None:
        """A plan that runs in front of a reservation and suspends before it is a preemption
        planned from the start: told once the lease has started (at once if it starts
        now)."""
        sched = self._sched
        segments = [res for res in steps if res.kind != K.TRANSFER]
        if segments[-1].end - segments[0].start >= sched.length(lease):
            return
        last = segments[-1]

        def preempted(at: float) -> None:
            if lease.holds(last) or last in lease.allocations:
                lease.preemptions += 1
                sched._emit("lease_preempted", lease=lease, now=at)

        if segments[0].start <= now:
            preempted(now)
        else:
            sched.timeline.push(segments[0].start, EK.CALL, preempted)

    def schedule_queued(self, lease: Lease, now: float, allow_future: bool) -> bool:
        """Plan a queued lease Haizea's way (the queue's ``Backfiller.schedule``)."""
        found = self.plan(lease, now, allow_future)
        if found is None:
            return False
        self.adopt_queued(lease, *found, now)
        return True

    def adopt_queued(self, lease: Lease, steps: list[Reservation], in_future: bool,
                     now: float) -> None:
        """Adopt ``steps``, the plan of queued ``lease`` (or refuse it: it leaves the queue,
        rejected or failed); ``in_future``: a backfilling reservation."""
        sched = self._sched
        if sched._refused_plan(lease, steps, now):
            return
        sched._move(lease, S.SCHEDULED, now)
        if in_future:
            sched.plans.reserve(lease.id)
        sched._commit(lease, steps, now)
        self.tell_planned_preemption(lease, steps, now)
