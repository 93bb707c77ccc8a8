"""Haizea's suspension and resumption model (``[scheduling] suspendresume-model = haizea``).

Times (Haizea 1.0's ``VMScheduler.__compute_susprem_times``):

- each VM's memory is written or read in memory / rate seconds rounded up to a whole second
  (or the ``override-suspend-time`` / ``override-resume-time``);
- ``global`` exclusion: the VMs one after another, each followed by the enactment overhead;
- ``local`` exclusion: the VMs of each node one after another; the operations that would run
  at the same time on different nodes form a round, and each round also spends the enactment
  overhead once per VM in it; rounds do not overlap.

Resumption (Haizea 1.0's ``LeaseScheduler.__schedule_lease`` and ``__schedule_asap``): a
suspended lease is planned like a new one. With migration, it may start on any nodes (the greedy
order), but no earlier than now plus the time to move its memory images from the node holding
the most (the migration bandwidth, rounded up to a second), whether it moves or not; without,
only on the nodes holding its images, from now. It reserves its remaining work, Haizea's
estimate of the resumption (its VMs x (its whole memory / rate, rounded up, + the enactment
overhead), or the override) and its shutdown; the resumption really takes the time above and
the reservation ends after the remaining work and the shutdown.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import Lease
from lease_manager.kernel.scheduler.haizea_asap import HaizeaMapper
from lease_manager.kernel.scheduler.suspension import Suspender, SuspendResume
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.events import Timeline
    from lease_manager.kernel.lease import LeaseState
    from lease_manager.kernel.mapper import Placement
    from lease_manager.kernel.policy_protocols import HostSelectionProtocol
    from lease_manager.kernel.scheduler.image_transfer import ImageTransfers
    from lease_manager.kernel.scheduler.reevaluator import Reevaluator
    from lease_manager.kernel.scheduler.seams import Enactment, PowerGate
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.slottable import SlotTable
    from lease_manager.kernel.table_view import SlotTableView

K = members(ReservationKind)
EK = members(EventKind)

#: the values of ``[scheduling] suspendresume-model``
MODELS = ("lease-manager", "haizea")


def _whole_seconds(seconds: float) -> float:
    """Haizea's ``round_datetime_delta``: up to the next whole second."""
    return float(math.ceil(seconds - 1e-9))


class HaizeaSuspendResume(SuspendResume):
    """Suspension and resumption times as Haizea 1.0 computes them (module docstring)."""

    def _op(self, lease: Lease | None, vm: int, rate: float, override: float | None) -> float:
        if override is not None:
            return float(override)
        if self.memory_index is None or lease is None:
            return 0.0
        memory = float(lease.vms.per_vm()[vm][self.memory_index])
        return _whole_seconds(memory / rate)

    def _time(self, res: Reservation, rate: float, override: float | None = None) -> float:
        vm_nodes = res.vm_nodes or tuple(res.nodes.tolist())
        lease = res.lease
        if self.exclusion == "global":
            return sum(self._op(lease, i, rate, override) + self.overhead
                       for i in range(len(vm_nodes)))
        # local: the k-th VM of every node forms round k (with equal times; Haizea groups
        # equal (start, end) pairs, which for identical VMs are the k-th VMs of every node)
        by_node: dict[int, list[int]] = {}
        for i, node in enumerate(vm_nodes):
            by_node.setdefault(node, []).append(i)
        spans: dict[tuple[float, float], int] = {}
        for vms in by_node.values():
            t = 0.0
            for i in vms:
                op = self._op(lease, i, rate, override)
                spans[(t, t + op)] = spans.get((t, t + op), 0) + 1
                t += op
        end = 0.0
        for (start, stop), count in sorted(spans.items()):
            begin = max(start, end)
            end = begin + (stop - start) + count * self.overhead
        return end

    def estimate(self, lease: Lease, rate: float, override: float | None) -> float:
        """Haizea's estimate of a whole lease's suspension or resumption: its VMs x (its whole
        memory / rate, rounded up, + the overhead), or the override alone."""
        if override is not None:
            return float(override)
        memory = (float(lease.vms.total[self.memory_index])
                  if self.memory_index is not None else 0.0)
        return lease.vms.count * (_whole_seconds(memory / rate) + self.overhead)


class HaizeaSuspenderHost(Protocol):
    """What a :class:`HaizeaSuspender` asks of its scheduler (:class:`~lease_manager.kernel.
    scheduler.LeaseScheduler`): what any suspender asks (:class:`~lease_manager.kernel.
    scheduler.suspension.SuspensionHost`), the parts its mapper reads, whether a re-plan is
    taking a lease off its plan (the re-evaluator's), the timeline and the hooks."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def table_view(self) -> SlotTableView: ...
    @property
    def host_selection(self) -> HostSelectionProtocol: ...
    @property
    def settings(self) -> SchedulerSettings: ...
    @property
    def preparation(self) -> ImageTransfers | None: ...
    @property
    def timeline(self) -> Timeline: ...
    @property
    def reeval(self) -> Reevaluator: ...
    @property
    def power(self) -> PowerGate | None: ...
    @property
    def _enactment(self) -> Enactment: ...
    def length(self, lease: Lease) -> float: ...
    def _place_at(self, lease: Lease, start: float, duration: float) -> Reservation | None: ...
    def _move(self, lease: Lease, state: LeaseState, now: float) -> None: ...
    def _emit(self, hook: str, **kw: Any) -> None: ...


def suspender_for(sched: HaizeaSuspenderHost) -> Suspender:
    """The scheduler's suspensions and resumptions: Haizea's with its model or its planning,
    else ours."""
    settings = sched.settings
    if settings.haizea_planning or isinstance(settings.suspend_resume, HaizeaSuspendResume):
        return HaizeaSuspender(sched)
    return Suspender(sched, settings, sched.table, sched.preparation, sched._enactment)


class HaizeaSuspender(Suspender):
    """Suspensions and resumptions as Haizea plans them (the module docstring), where the
    scheduler has Haizea's model (its resumptions) or Haizea's planning (its scheduling
    threshold), with Haizea's mapper (:class:`~lease_manager.kernel.scheduler.haizea_asap.
    HaizeaMapper`, its own)."""

    __slots__ = ("_sched", "_mapper")

    def __init__(self, sched: HaizeaSuspenderHost) -> None:
        super().__init__(sched, sched.settings, sched.table, sched.preparation,
                         sched._enactment)
        self._sched = sched
        self._mapper = HaizeaMapper(sched.table, sched.table_view, sched.host_selection,
                                    sched.settings)

    def _too_early(self, lease: Lease, ran: float) -> bool:
        """Haizea's ``can_suspend_at``: with Haizea's planning, a lease that has run less than
        the scheduling threshold in its segment may not suspend."""
        return (self._settings.haizea_planning
                and ran < self._mapper.threshold(lease))

    def resumption_plan(self, lease: Lease, now: float,
                        allow_future: bool) -> list[Reservation] | None:
        """The plan resuming ``lease``: Haizea's with Haizea's model, else ours."""
        if not isinstance(self._settings.suspend_resume, HaizeaSuspendResume):
            return super().resumption_plan(lease, now, allow_future)
        return self._haizea_resumption(lease, now, allow_future)

    def _haizea_resumption(self, lease: Lease, now: float,
                           allow_future: bool) -> list[Reservation] | None:
        sched = self._sched
        settings = self._settings
        model = settings.suspend_resume
        assert isinstance(model, HaizeaSuspendResume)
        image = lease.allocations[-1]
        bandwidth = settings.migration_bandwidth
        earliest = now
        if bandwidth is not None and model.memory_index is not None:
            per_node: dict[int, float] = {}
            per_vm = lease.vms.per_vm()
            for i, node in enumerate(image.vm_nodes):
                per_node[node] = per_node.get(node, 0.0) + float(per_vm[i][model.memory_index])
            if not math.isinf(bandwidth):
                earliest = now + _whole_seconds(max(per_node.values()) / bandwidth)
                if self._preparation is not None:   # its disk images move too
                    earliest += self._preparation.migration_estimate(lease, image.vm_nodes,
                                                                     bandwidth)
        length = sched.length(lease)
        resume_estimate = model.estimate(lease, model.resume_rate, model.resume_override)
        duration = length + resume_estimate
        only = None if bandwidth is not None else set(image.nodes.tolist())
        strict = not self.can_suspend(lease)
        # Haizea's threshold for a suspended lease counts its resumption too, when the lease
        # is planned from the queue (not when a re-plan takes it off its plan)
        safe = model.estimate(lease, model.suspend_rate, model.suspend_override)
        if not sched.reeval.replanning_lease:
            safe += resume_estimate
        shortest = 0.0 if strict else (settings.forced_threshold
                                       if settings.forced_threshold is not None
                                       else safe + safe * settings.threshold_factor)
        mapper = self._mapper
        tries = [earliest] + (mapper.future_starts(earliest) if allow_future else [])
        for start in tries:
            found = mapper.haizea_map(lease, start, duration, only, strict)
            if found is None:
                continue
            placement, end = found
            if end < start + duration and end - start < shortest:
                continue
            segments = self._segments(lease, placement, start, end, duration, length)
            if segments is not None:
                return segments
        return None

    def _segments(self, lease: Lease, placement: Placement, start: float, end: float,
                  duration: float, length: float) -> list[Reservation] | None:
        """The resumption's reservations for ``placement`` from ``start`` until ``end`` (its
        whole rest, or until it suspends again), or None if it would not run at all."""
        model = self._settings.suspend_resume
        resume = model.resume_time(placement.reservation(lease, start, start))
        segments = []
        if resume > 0:
            segments.append(placement.reservation(lease, start, start + resume, kind=K.RESUME))
        if end >= start + duration:   # the whole rest (Haizea trims the estimate's excess)
            segments.append(placement.reservation(lease, start + resume,
                                                  start + resume + length))
            return segments
        vm = placement.reservation(lease, start + resume, end)   # then suspended again
        suspend = model.suspend_time(vm)
        if end - suspend <= start + resume:
            return None
        vm.end = end - suspend
        segments.append(vm)
        if suspend > 0:
            segments.append(placement.reservation(lease, end - suspend, end, kind=K.SUSPEND))
        self._tell_preemption_when_running(lease, vm, segments[-1])
        return segments

    def _tell_preemption_when_running(self, lease: Lease, vm: Reservation,
                                      last: Reservation) -> None:
        """A resumption planned to end in a suspension is a preemption planned from the
        start: told once its VMs run, if the plan was adopted and still holds."""
        sched = self._sched

        def preempted(at: float) -> None:
            if lease.holds(last) or last in lease.allocations:
                lease.preemptions += 1
                sched._emit("lease_preempted", lease=lease, now=at)

        sched.timeline.push(vm.start, EK.CALL, preempted)
