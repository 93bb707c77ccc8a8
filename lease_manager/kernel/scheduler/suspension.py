"""Suspension, resumption and migration: how long they take, and the plan that resumes a
suspended lease on the nodes holding its memory images (or, with migration, elsewhere after
moving the images) for only its remaining work."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.malleable import progress
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler

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


def _can_suspend(self: LeaseScheduler, lease: Lease) -> bool:
    if self.settings.suspension == "none":
        return False
    return self.settings.suspension == "all" or lease.vms.count == 1


def _begin_suspension(self: LeaseScheduler, lease: Lease, now: float) -> None:
    lease.work_done += progress(lease, lease.reservations[0], now)
    lease.suspensions += 1
    if lease.suspended_at is None:
        lease.suspended_at = now
    self._move(lease, S.SUSPENDING, now)
    self._enactment.suspend(lease, now)


def _resumption_plan(self: LeaseScheduler, lease: Lease, now: float,
                     allow_future: bool) -> list[Reservation] | None:
    """Resume a suspended lease on the nodes holding its memory images, then run the rest
    of its work there (``[resume][vm]``); with migration, elsewhere after moving the images
    (``[migrate][resume][vm]``) if that starts earlier. Under a power cap, the earliest such
    plan the cap has room for."""
    after = now
    while True:
        plan = self._resumption_plan_after(lease, now, after, allow_future)
        if plan is None or self.power is None or self.power.admits(plan):
            return plan
        later = self.table.change_points(plan[0].start)
        if not allow_future or not later:
            return None
        after = later[0]


def _resumption_plan_after(self: LeaseScheduler, lease: Lease, now: float, after: float,
                           allow_future: bool) -> list[Reservation] | None:
    image = lease.allocations[-1]
    resume = self.settings.suspend_resume.resume_time(image)
    length = self.length(lease)
    not_after = None if allow_future else now
    start = self.table.earliest_fit_on(image.nodes, image.amounts, resume + length, after,
                                       not_after)
    best = None if start is None else (start, image.nodes, image.amounts, image.vm_nodes,
                                       image.vm_shape, 0.0)
    if self.settings.migration_bandwidth is not None:
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


def _migrated(self: LeaseScheduler, lease: Lease, image: Reservation, rest: float, now: float,
              before: float | None) -> tuple | None:
    """The earliest placement anywhere (before ``before``) after moving the memory images
    of the VMs that change node: ``(start, nodes, amounts, vm_nodes, vm_shape, transfer)``."""
    bandwidth = self.settings.migration_bandwidth
    assert bandwidth is not None, "only called with migration on"
    memory = self.settings.suspend_resume.memory_index
    per_vm = lease.vms.per_vm()
    total = sum(float(v[memory]) for v in per_vm) if memory is not None else 0.0
    transfer_all = total / bandwidth
    for start in self.table.iter_fit_starts(lease.vms, transfer_all + rest, now,
                                            not_after=before):
        if before is not None and start >= before:
            return None
        res = self._place_at(lease, start, transfer_all + rest)
        if res is None:
            continue
        moved = sum(float(v[memory]) for v, a, b in zip(per_vm, image.vm_nodes, res.vm_nodes)
                    if a != b) if memory is not None else 0.0
        if self.preparation is not None and self.preparation.manages(lease):
            # its disk images move with it (image_transfer.py)
            moved += float(lease.extra.get("disk-image-size", 0)) * sum(
                a != b for a, b in zip(image.vm_nodes, res.vm_nodes))
        if moved == 0:
            continue   # the same nodes: that is the plain resumption
        return (start, res.nodes, res.amounts, res.vm_nodes, res.vm_shape,
                moved / bandwidth)
    return None
