"""Lease preparation with disk-image transfers (``[preparation] lease-preparation =
imagetransfer``), as Haizea 1.0's ``ImageTransferPreparationScheduler`` does it.

A lease with a disk image (LWF ``<disk-image>``, ``lease.extra["disk-image"]`` and
``["disk-image-size"]`` in MB) needs its image on every node its VMs run on before it starts.
Images come from one image repository whose outbound link carries one transfer at a time at
``imagetransfer-bandwidth`` Mb/s (a 1,024 MB image at 100 Mb/s: 81.92 s, rounded up to 82 s, as
Haizea rounds):

- best-effort and immediate leases get the repository's next free slot from now that is long
  enough ("FIFO"); their VMs may start on a node when its transfer ends;
- advance reservations get the last free slot that ends by their start ("EDF");
- ``multicast`` sends one copy to all the lease's nodes at once; ``unicast`` one per node, one
  after another (the transfer lasts that many times longer);
- ``avoid-redundant-transfers``: a lease whose image is already being sent (multicast) may
  start when that transfer ends, on any node, without a transfer of its own;
- ``image-caches``: a node keeps the images it received, up to ``diskimage-cache-size`` MB (the
  oldest go first), and a lease whose image a node holds may start there at once.

A transfer is a reservation of its own kind (``transfer``) on the nodes it feeds: it holds no
CPU or memory (only the repository's and the nodes' network, which this model does not
share with VMs), so it shows in the lease's plan and in the nodes' reservation counts (Haizea's
greedy host selection counts it too). A suspended lease that migrates moves its disk images
too: Haizea's estimate of that (image size x VMs on the busiest node / migration bandwidth) is
added to the time before it may resume elsewhere.
"""

from __future__ import annotations

import collections
import math
from bisect import insort
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import attrs
import numpy as np

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import Lease
from lease_manager.kernel.mapper import place
from lease_manager.kernel.scheduler.haizea_resumption import HaizeaSuspendResume
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.events import Timeline
    from lease_manager.kernel.policy_protocols import HostSelectionProtocol
    from lease_manager.kernel.scheduler.haizea_asap import HaizeaPlanner
    from lease_manager.kernel.scheduler.queue import Backfiller
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.slottable import SlotTable
    from lease_manager.kernel.table_view import SlotTableView

K = members(ReservationKind)
EK = members(EventKind)


def transfer_seconds(megabytes: float, megabits_per_second: float) -> float:
    """Haizea's ``estimate_transfer_time``: MB at Mb/s, rounded up to a whole second."""
    return float(math.ceil(megabytes / (megabits_per_second / 8.0) - 1e-9))


@attrs.define(eq=False, order=False)
class Transfer:
    """One transfer from the image repository: ``image`` to ``nodes`` over ``[start, end)``
    (``res`` its reservation in the slot table)."""

    start: float
    end: float
    image: str
    res: Reservation

    def __lt__(self, other: Transfer) -> bool:
        return (self.start, self.end) < (other.start, other.end)


class ImageTransfers:
    """The image repository's schedule and the nodes' image caches (module docstring)."""

    def __init__(self, n_nodes: int, *, bandwidth: float, mechanism: str = "multicast",
                 avoid_redundant: bool = True, reuse: str = "none", cache_size: float = 0.0,
                 force_time: float | None = None) -> None:
        self.bandwidth = bandwidth
        self.mechanism = mechanism
        self.avoid_redundant = avoid_redundant
        self.reuse = reuse
        self.cache_size = cache_size
        self.force_time = force_time
        #: scheduled transfers that have not ended, by start
        self.transfers: list[Transfer] = []
        #: each node's image cache: image -> size, oldest first
        self.caches: list[collections.OrderedDict[str, float]] = [
            collections.OrderedDict() for _ in range(n_nodes)]
        self.completed = 0

    @staticmethod
    def manages(lease: Lease) -> bool:
        """Does ``lease`` need an image transferred (it names a disk image)?"""
        return "disk-image" in lease.extra

    def transfer_time(self, lease: Lease) -> float:
        if self.force_time is not None:
            return self.force_time
        return transfer_seconds(float(lease.extra.get("disk-image-size", 0)), self.bandwidth)

    def _live(self, table) -> list[Transfer]:
        """The transfers still planned (a cancelled or re-planned lease's left the table)."""
        self.transfers = [t for t in self.transfers if t.res in table]
        return self.transfers

    def next_slot(self, table, now: float, duration: float) -> float:
        """The repository's first free slot of ``duration`` from ``now`` (Haizea's FIFO)."""
        transfers = [t for t in self._live(table) if t.end > now]
        if not transfers or now + duration <= transfers[0].start:
            return now
        for a, b in zip(transfers, transfers[1:]):
            if a.end != b.start and b.start - max(a.end, now) >= duration:
                return max(a.end, now)
        return max(transfers[-1].end, now)

    def last_slot(self, table, deadline: float, duration: float) -> float:
        """The repository's last free slot of ``duration`` ending by ``deadline`` (EDF)."""
        transfers = self._live(table)
        if not transfers or transfers[-1].end + duration <= deadline:
            return deadline - duration
        for a, b in zip(reversed(transfers[:-1]), reversed(transfers[1:])):
            if b.start != a.end and b.start - a.end >= duration and b.start <= deadline:
                return min(b.start, deadline) - duration
        return min(transfers[0].start, deadline) - duration

    def cached(self, node: int, image: str) -> bool:
        return self.reuse == "image-caches" and image in self.caches[node]

    def earliest(self, table, lease: Lease, now: float
                 ) -> tuple[dict[int, float], dict[int, str], float, float]:
        """Per node, the earliest start of ``lease`` and why (``transfer``, ``reuse``,
        ``piggyback``); and the slot and length of a transfer of its own."""
        image = lease.extra["disk-image"]
        duration = self.transfer_time(lease)
        if self.mechanism == "unicast":
            duration *= lease.vms.count
        slot = self.next_slot(table, now, duration)
        n = len(self.caches)
        times = {node: slot + duration for node in range(n)}
        how = dict.fromkeys(range(n), "transfer")
        for node in range(n):
            if self.cached(node, image):
                times[node], how[node] = now, "reuse"
        if self.avoid_redundant and self.mechanism == "multicast":
            for t in self._live(table):
                if t.image == image and t.end > now:
                    for node in range(n):
                        if t.end < times[node]:
                            times[node], how[node] = t.end, "piggyback"
        return times, how, slot, duration

    def transfer(self, table: SlotTable, timeline: Timeline, lease: Lease,
                 nodes: Sequence[int], start: float, duration: float) -> Reservation:
        """A transfer of ``lease``'s image to ``nodes`` over ``[start, start + duration)`` in
        ``table``; its end is put on ``timeline``."""
        nodes_array = np.array(sorted(set(nodes)), dtype=np.intp)
        amounts = np.zeros((len(nodes_array), table.capacity.shape[1]))
        res = Reservation(lease, start, start + duration, nodes_array, amounts, None, K.TRANSFER)
        insort(self.transfers, Transfer(start, start + duration, lease.extra["disk-image"], res))
        timeline.push(start + duration, EK.CALL,
                      lambda now, res=res: self._arrived(table, res, now))
        return res

    def _arrived(self, table: SlotTable, res: Reservation, now: float) -> None:
        """A transfer ended: with image caches, its nodes keep the image."""
        lease = res.lease
        if lease is None or res not in table or res.end != now:
            return   # cancelled or re-planned meanwhile
        self.completed += 1
        if lease.reservations and lease.reservations[0] is res:   # it is over: a record now
            lease.allocations.append(lease.reservations.pop(0))
        if self.reuse != "image-caches":
            return
        image, size = lease.extra["disk-image"], float(lease.extra.get("disk-image-size", 0))
        for node in res.nodes.tolist():
            cache = self.caches[node]
            if image in cache:
                cache.move_to_end(image)
                continue
            while cache and sum(cache.values()) + size > self.cache_size:
                cache.popitem(last=False)   # the oldest image makes room
            if size <= self.cache_size:
                cache[image] = size

    def migration_estimate(self, lease: Lease, image_nodes: Sequence[int],
                           bandwidth_mb_s: float) -> float:
        """Haizea's estimate of moving ``lease``'s disk images: the busiest node's images at
        the migration bandwidth (MB/s), rounded up."""
        if not self.manages(lease) or math.isinf(bandwidth_mb_s):
            return 0.0
        per_node = collections.Counter(image_nodes)
        size = float(lease.extra.get("disk-image-size", 0))
        return transfer_seconds(size * max(per_node.values()), bandwidth_mb_s * 8.0)


# --------------------------------------------------------------------- scheduling with it
class TransferHost(Protocol):
    """What planning with image transfers asks of the scheduler (:class:`~lease_manager.
    kernel.scheduler.LeaseScheduler`). A back-reference: a plan it makes may run in front of
    an advance reservation as the queue's plans do (the backfiller's)."""

    @property
    def table(self) -> SlotTable: ...
    @property
    def table_view(self) -> SlotTableView: ...
    @property
    def timeline(self) -> Timeline: ...
    @property
    def host_selection(self) -> HostSelectionProtocol: ...
    @property
    def backfiller(self) -> Backfiller: ...
    def length(self, lease: Lease) -> float: ...


class TransferPlanner:
    """One scheduler's planning of leases whose disk image is sent first (the module
    docstring), over its :class:`ImageTransfers` (which own the repository's schedule and
    the caches); with Haizea's planning, Haizea's ``planner`` places the VMs."""

    __slots__ = ("_sched", "_prep", "_haizea", "_haizea_plans")

    def __init__(self, sched: TransferHost, preparation: ImageTransfers,
                 haizea: HaizeaPlanner, settings: SchedulerSettings) -> None:
        self._sched = sched
        self._prep = preparation
        self._haizea = haizea
        #: Haizea's planning places the VMs (with Haizea's suspension model)
        self._haizea_plans = isinstance(settings.suspend_resume, HaizeaSuspendResume)

    #: does a lease need an image transferred (it names a disk image)?
    manages = staticmethod(ImageTransfers.manages)

    def _place_on(self, lease: Lease, start: float, duration: float,
                  allowed: set[int] | None) -> Reservation | None:
        sched = self._sched
        order = sched.host_selection.order_hosts(lease, start, start + duration,
                                                 sched.table_view)
        if allowed is not None:
            order = [node for node in np.asarray(order).tolist() if node in allowed]
        placement = place(sched.table, lease.vms, start, start + duration, order)
        return None if placement is None else placement.reservation(lease, start,
                                                                    start + duration)

    def _with_transfer(self, lease: Lease, plan: list[Reservation], vm_nodes: list[int],
                       how: dict[int, str], slot: float) -> list[Reservation]:
        """``plan`` with its transfer first, to the nodes of ``vm_nodes`` that need one (at
        ``slot``); the nodes that reuse a cached image use it now (the newest in cache)."""
        prep = self._prep
        must = [node for node in vm_nodes if how[node] == "transfer"]
        seconds = prep.transfer_time(lease) * (len(must) if prep.mechanism == "unicast" else 1)
        if must and seconds > 0:
            sched = self._sched
            plan.insert(0, prep.transfer(sched.table, sched.timeline, lease, must, slot,
                                         seconds))
        for node in vm_nodes:
            if how[node] == "reuse":
                prep.caches[node].move_to_end(lease.extra["disk-image"])
        return plan

    def plan_asap(self, lease: Lease, now: float, allow_future: bool
                  ) -> tuple[list[Reservation], bool] | None:
        """Haizea's best-effort and immediate planning with image transfers: try each distinct
        earliest start with the nodes ready by then, then (if allowed) later starts on any
        node; returns the plan (its transfer first, if it needs one) and whether it was made
        in the future (a backfilling reservation)."""
        sched = self._sched
        times, how, slot, _ = self._prep.earliest(sched.table, lease, now)
        if self._haizea_plans:   # Haizea's own planning
            found = self._haizea.plan(lease, now, allow_future, times)
            if found is None:
                return None
            steps, in_future = found
            return self._with_transfer(lease, steps, steps[0].nodes.tolist(), how,
                                       slot), in_future
        duration = sched.length(lease)
        points = sorted(set(times.values()))
        vm = None
        in_future = False
        plan: list[Reservation] | None = None
        for t in points:
            allowed = {node for node, e in times.items() if e <= t}
            if sched.table.fits_at(lease.vms, duration, t):
                vm = self._place_on(lease, t, duration, allowed)
            if vm is None and len(allowed) == len(times):   # in front of an AR, then suspended
                plan = sched.backfiller.run_until_a_reservation(lease, t, duration)
                vm = None if plan is None else plan[0]
            if vm is not None:
                break
        if vm is None and allow_future:
            for t in sched.table.iter_fit_starts(lease.vms, duration, points[-1]):
                if t > points[-1]:
                    vm = self._place_on(lease, t, duration, None)
                    if vm is not None:
                        in_future = True
                        break
        if vm is None:
            return None
        return self._with_transfer(lease, plan or [vm], vm.nodes.tolist(), how,
                                   slot), in_future

    def prepare_exact(self, lease: Lease, vm: Reservation,
                      now: float) -> list[Reservation] | str:
        """An advance reservation's plan: its image sent in the last free slot that ends when
        it starts (Haizea's EDF), to the nodes that do not hold it; or, when that slot would
        begin before ``now``, why the lease must be rejected (as Haizea 1.1 does: it once
        planned the transfer in the past, or stopped the run with "reservation starts at
        -74.0, before the horizon")."""
        prep, sched = self._prep, self._sched
        image = lease.extra["disk-image"]
        must = [node for node in vm.nodes.tolist() if not prep.cached(node, image)]
        seconds = prep.transfer_time(lease) * (len(must) if prep.mechanism == "unicast" else 1)
        if not must or seconds <= 0:
            return [vm]
        start = prep.last_slot(sched.table, vm.start, seconds)
        if not start >= now:
            return (f"its image cannot reach its nodes by its start: the transfer takes "
                    f"{seconds:g} s, and the last free slot of the image repository before "
                    f"{vm.start:g} s would begin at {start:g} s, before now ({now:g} s)")
        return [prep.transfer(sched.table, sched.timeline, lease, must, start, seconds), vm]

    def schedule_queued(self, lease: Lease, now: float, allow_future: bool) -> bool:
        """Plan a queued lease with its image transfer (the queue's ``Backfiller.schedule``)."""
        found = self.plan_asap(lease, now, allow_future)
        if found is None:
            return False
        self._haizea.adopt_queued(lease, *found, now)   # (and told if it will suspend)
        return True
