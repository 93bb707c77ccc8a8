"""Suspension, resumption and migration: how long they take (:class:`SuspendResume`), and the
scheduler's collaborator (:class:`Suspender`) that says which leases may suspend, begins a
suspension and plans the resumption of a suspended lease on the nodes holding its memory
images (or, with migration, elsewhere after moving the images) for only its remaining work.
Haizea's model plans resumptions its own way (:mod:`.haizea_resumption`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.malleable import progress
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.image_transfer import ImageTransfers
    from lease_manager.kernel.scheduler.seams import Enactment, PowerGate
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.slottable import SlotTable

S = members(LeaseState)
K = members(ReservationKind)


class SuspendResume:
    """How long suspending and resuming a lease's VMs takes.

    Each VM writes (reads) its memory at ``suspend_rate`` (``resume_rate``) MB/s, plus an
    enactment overhead; VMs are handled one after another on each node (``local``) or across
    the whole site (``global``).
    """

    def __init__(self, memory_index: int | None, suspend_rate: float, resume_rate: float,
                 exclusion: str = "local", overhead: float = 0.0, *,
                 suspend_override: float | None = None,
                 resume_override: float | None = None) -> None:
        self.memory_index = memory_index
        self.suspend_rate = suspend_rate
        self.resume_rate = resume_rate
        self.exclusion = exclusion
        self.overhead = overhead
        #: a fixed time per VM instead of memory / rate (Haizea's override-suspend-time)
        self.suspend_override = suspend_override
        self.resume_override = resume_override

    def _time(self, res: Reservation, rate: float, override: float | None = None) -> float:
        vm_nodes = res.vm_nodes or tuple(res.nodes.tolist())
        lease = res.lease
        per_vm = lease.vms.per_vm() if lease is not None else None
        times: dict[int, float] = {}
        for i, node in enumerate(vm_nodes):
            memory = 0.0
            if self.memory_index is not None and per_vm is not None and i < len(per_vm):
                memory = float(per_vm[i][self.memory_index])
            one = memory / rate if override is None else override
            times[node] = times.get(node, 0.0) + one + self.overhead
        if not times:
            return 0.0
        return sum(times.values()) if self.exclusion == "global" else max(times.values())

    def suspend_time(self, res: Reservation) -> float:
        return self._time(res, self.suspend_rate, self.suspend_override)

    def resume_time(self, res: Reservation) -> float:
        return self._time(res, self.resume_rate, self.resume_override)


class SuspensionHost(Protocol):
    """What a :class:`Suspender` asks of its scheduler: the power cap (attached after the
    scheduler is made), reservation lengths, placing a lease at a time (a migration's
    target) and moving a lease's state (telling the hooks)."""

    @property
    def power(self) -> PowerGate | None: ...

    def length(self, lease: Lease) -> float: ...

    def _place_at(self, lease: Lease, start: float, duration: float) -> Reservation | None: ...

    def _move(self, lease: Lease, state: LeaseState, now: float) -> None: ...


class Suspender:
    """One scheduler's suspensions and resumptions (our model; Haizea's is the subclass
    :class:`~lease_manager.kernel.scheduler.haizea_resumption.HaizeaSuspender`)."""

    __slots__ = ("_host", "_settings", "_table", "_preparation", "_enactment",
                 "_suspension")

    def __init__(self, host: SuspensionHost, settings: SchedulerSettings, table: SlotTable,
                 preparation: ImageTransfers | None, enactment: Enactment) -> None:
        self._host = host
        self._settings, self._table = settings, table
        self._preparation, self._enactment = preparation, enactment
        #: ``[scheduling] suspension``: none, all, or only single-VM leases
        self._suspension = settings.suspension

    def can_suspend(self, lease: Lease) -> bool:
        """Whether ``lease``'s VMs may be suspended (the suspension setting)."""
        if self._suspension == "none":
            return False
        return self._suspension == "all" or lease.vms.count == 1

    def suspension_for(self, lease: Lease, by_start: float, now: float,
                       res: Reservation | None = None) -> float | None:
        """How long running ``lease`` takes to suspend its VM segment ``res`` (its running one
        unless given) if preempted for ``by_start``; None if it cannot suspend in time (it
        would be cancelled and requeued, losing its work)."""
        res = res if res is not None else lease.reservations[0]
        suspend = (self._settings.suspend_resume.suspend_time(res)
                   if self.can_suspend(lease) else None)
        if suspend is not None and self._too_early(lease, by_start - res.start):
            return None   # Haizea's can_suspend_at: it has not run long enough
        if suspend is None or by_start - suspend < max(now, res.start):
            return None
        return suspend

    def _too_early(self, lease: Lease, ran: float) -> bool:
        """Whether a lease that has run ``ran`` seconds in its segment is too young to suspend
        (never in our model; Haizea's scheduling threshold with Haizea's planning)."""
        return False

    def begin(self, lease: Lease, now: float) -> None:
        """``lease``'s VMs begin to suspend at ``now`` (its work up to now is kept)."""
        lease.work_done += progress(lease, lease.reservations[0], now)
        lease.suspensions += 1
        if lease.suspended_at is None:
            lease.suspended_at = now
        self._host._move(lease, S.SUSPENDING, now)
        self._enactment.suspend(lease, now)

    def resumption_plan(self, lease: Lease, now: float,
                        allow_future: bool) -> list[Reservation] | None:
        """Resume a suspended lease on the nodes holding its memory images, then run the rest
        of its work there (``[resume][vm]``); with migration, elsewhere after moving the
        images (``[migrate][resume][vm]``) if that starts earlier. Under a power cap, the
        earliest such plan the cap has room for."""
        after = now
        power = self._host.power
        while True:
            plan = self.resumption_plan_after(lease, now, after, allow_future)
            if plan is None or power is None or power.admits(plan):
                return plan
            later = self._table.change_points(plan[0].start)
            if not allow_future or not later:
                return None
            after = later[0]

    def resumption_plan_after(self, lease: Lease, now: float, after: float,
                              allow_future: bool) -> list[Reservation] | None:
        """The earliest resumption of ``lease`` from ``after`` (from ``now`` only, unless
        ``allow_future``), without the power cap's say."""
        image = lease.allocations[-1]
        settings = self._settings
        resume = settings.suspend_resume.resume_time(image)
        length = self._host.length(lease)
        not_after = None if allow_future else now
        start = self._table.earliest_fit_on(image.nodes, image.amounts, resume + length, after,
                                            not_after)
        best = None if start is None else (start, image.nodes, image.amounts, image.vm_nodes,
                                           image.vm_shape, 0.0)
        if settings.migration_bandwidth is not None:
            moved = self._migrated(lease, image, resume + length, after,
                                   start if start is not None else not_after)
            if moved is not None and (best is None or moved[0] < best[0]):
                best = moved
        if best is None:
            return None
        start, nodes, amounts, vm_nodes, vm_shape, transfer = best

        def segment(kind: ReservationKind, a: float, b: float) -> Reservation:
            return Reservation(lease, a, b, nodes, amounts, None, kind, vm_nodes, vm_shape)

        t = start
        plan = []
        for kind, span in ((K.MIGRATE, transfer), (K.RESUME, resume)):
            if span > 0:
                plan.append(segment(kind, t, t + span))
                t += span
        plan.append(segment(K.VM, t, t + length))
        return plan

    def _migrated(self, lease: Lease, image: Reservation, rest: float, now: float,
                  before: float | None) -> tuple | None:
        """The earliest placement anywhere (before ``before``) after moving the memory images
        of the VMs that change node: ``(start, nodes, amounts, vm_nodes, vm_shape,
        transfer)``."""
        bandwidth = self._settings.migration_bandwidth
        assert bandwidth is not None, "only called with migration on"
        memory = self._settings.suspend_resume.memory_index
        per_vm = lease.vms.per_vm()
        total = sum(float(v[memory]) for v in per_vm) if memory is not None else 0.0
        transfer_all = total / bandwidth
        preparation = self._preparation
        for start in self._table.iter_fit_starts(lease.vms, transfer_all + rest, now,
                                                 not_after=before):
            if before is not None and start >= before:
                return None
            res = self._host._place_at(lease, start, transfer_all + rest)
            if res is None:
                continue
            moved = sum(float(v[memory]) for v, a, b in zip(per_vm, image.vm_nodes,
                                                            res.vm_nodes)
                        if a != b) if memory is not None else 0.0
            if preparation is not None and preparation.manages(lease):
                # its disk images move with it (image_transfer.py)
                moved += float(lease.extra.get("disk-image-size", 0)) * sum(
                    a != b for a, b in zip(image.vm_nodes, res.vm_nodes))
            if moved == 0:
                continue   # the same nodes: that is the plain resumption
            return (start, res.nodes, res.amounts, res.vm_nodes, res.vm_shape,
                    moved / bandwidth)
        return None
