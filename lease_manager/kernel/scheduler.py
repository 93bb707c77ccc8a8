"""The lease scheduler: admission, the wait queue, backfilling, preemption and every plan.

Best-effort leases wait in a queue ordered by the queue policy. At every scheduling cycle the
queue is processed in order; a lease starts now if it fits, or gets a reservation at the
earliest time it fits if the backfilling mode allows one more future reservation
(``off``: none, and the head of the queue blocks the rest; ``aggressive``: one; ``intermediate``:
N; ``conservative``: all). When a lease ends before its reservation does, every future
reservation is re-evaluated and moved earlier if it can be; it is never moved later than the
start it was promised.

Advance reservations get their exact interval or are rejected; if the interval is not free,
leases the preemption policy allows are preempted, most preemptable first, until it is. A
preempted lease that has not started is requeued; a running one is suspended (the suspension
ends exactly when the preemptor starts) or, without suspension, cancelled and requeued,
losing its work. A suspended lease goes back to the queue and resumes on the nodes holding its
memory images, with only its remaining work. Immediate leases start now or are rejected;
deadline leases get the earliest slot that ends by their deadline or are rejected.

A lease's plan is a list of reservations in time order, each of a ``kind``: ``resume``, ``vm``
(the VMs run), ``suspend``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from lease_manager.kernel.events import EventKind, Timeline
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.mapper import Placement, place, place_on
from lease_manager.kernel.slottable import Reservation

if TYPE_CHECKING:
    from lease_manager.policies import (AdmissionPolicy, HostSelectionPolicy, PreemptionPolicy,
                           PricingPolicy, QueuePolicy)
    from lease_manager.kernel.slottable import SlotTable

S = LeaseState
FUTURE_RESERVATIONS = {"off": 0, "aggressive": 1, "conservative": math.inf}


def max_future_reservations(backfilling: str, reservations: int = 1) -> float:
    """How many queued leases may hold a future reservation under a backfilling mode."""
    if backfilling == "intermediate":
        return reservations
    return FUTURE_RESERVATIONS[backfilling]


class SuspendResume:
    """How long suspending and resuming a lease's VMs takes.

    Each VM writes (reads) its memory at ``suspend_rate`` (``resume_rate``) MB/s, plus an
    enactment overhead; VMs are handled one after another on each node (``local``) or across
    the whole site (``global``).
    """

    def __init__(self, memory_index: int | None, suspend_rate: float, resume_rate: float,
                 exclusion: str = "local", overhead: float = 0.0) -> None:
        self.memory_index = memory_index
        self.suspend_rate = suspend_rate
        self.resume_rate = resume_rate
        self.exclusion = exclusion
        self.overhead = overhead

    def _time(self, res: Reservation, rate: float) -> float:
        vm_nodes = res.vm_nodes or tuple(res.nodes.tolist())
        lease = res.lease
        per_vm = lease.vms.per_vm() if lease is not None else None
        times: dict[int, float] = {}
        for i, node in enumerate(vm_nodes):
            memory = 0.0
            if self.memory_index is not None and per_vm is not None and i < len(per_vm):
                memory = float(per_vm[i][self.memory_index])
            times[node] = times.get(node, 0.0) + memory / rate + self.overhead
        if not times:
            return 0.0
        return sum(times.values()) if self.exclusion == "global" else max(times.values())

    def suspend_time(self, res: Reservation) -> float:
        return self._time(res, self.suspend_rate)

    def resume_time(self, res: Reservation) -> float:
        return self._time(res, self.resume_rate)


class Enactment:
    """What the scheduler tells whoever carries leases out (a simulation, or a daemon's
    backend). ``start`` is called when a lease's VMs start running in reservation ``res`` (first
    start or after a resumption) with the time its work will end at the latest; ``suspend``
    when a suspension begins; ``stop`` when the lease's work must end for good (it finished,
    was cancelled or failed) or is thrown away (preempted without suspension)."""

    def start(self, lease: Lease, res: Reservation, end: float) -> None:
        """``lease``'s VMs run in ``res`` from now; its work ends at ``end`` at the latest."""

    def suspend(self, lease: Lease, now: float) -> None:
        """``lease``'s running work is suspended from ``now``."""

    def stop(self, lease: Lease, now: float) -> None:
        """``lease``'s work ends at ``now`` (any state it has is discarded)."""


class LeaseScheduler:
    """Decides, for one site, when and where every lease runs.

    Collaborators are passed in: the slot table, the policies, the timeline to put planned
    events on, the ``enactment`` (told when a lease's VMs start, suspend and stop; see
    :class:`Enactment`) and ``emit`` (the run's hook relay).
    """

    def __init__(self, table: "SlotTable", timeline: Timeline, *,
                 admission: "AdmissionPolicy", pricing: "PricingPolicy", queue: "QueuePolicy",
                 host_selection: "HostSelectionPolicy",
                 preemption: "PreemptionPolicy | None" = None,
                 backfilling: str = "aggressive", backfilling_reservations: int = 1,
                 suspension: str = "all", suspend_resume: SuspendResume | None = None,
                 shutdown: float = 0.0, migration_bandwidth: float | None = None,
                 threshold_factor: float = 1.0,
                 enactment: "Enactment | None" = None,
                 emit: Callable[..., None] | None = None) -> None:
        self.table = table
        self.timeline = timeline
        self.admission = admission
        self.pricing = pricing
        self.queue_policy = queue
        self.host_selection = host_selection
        self.preemption = preemption
        self.backfilling = backfilling
        self.max_future = max_future_reservations(backfilling, backfilling_reservations)
        self.suspension = suspension
        self.suspend_resume = suspend_resume or SuspendResume(None, 1.0, 1.0)
        #: seconds to shut VMs down (added to non-AR reservations, carved out of ARs)
        self.shutdown = shutdown
        #: MB/s for moving memory images (None: suspended leases resume where they were)
        self.migration_bandwidth = migration_bandwidth
        #: a slot ending in a suspension must last (1 + factor) x (suspend + resume time)
        self.threshold_factor = threshold_factor
        self._enactment = enactment or Enactment()
        self._emit = emit or (lambda hook, **kw: None)
        #: QUEUED leases, in queue order
        self.queue: list[Lease] = []
        self._queue_keys: list[Any] = []
        #: HELD leases (held back by the queue policy), by id
        self.held: dict[int, Lease] = {}
        #: leases whose plan has not started yet, in scheduling order
        self.future: dict[int, Lease] = {}
        #: ids of the leases in ``future`` that got their reservation from the queue (these
        #: count against the backfilling mode's limit)
        self._backfill_reserved: set[int] = set()
        #: leases running, suspending or resuming, by id
        self.running: dict[int, Lease] = {}
        #: ids of the advance reservations holding a plan (queued leases may run in front)
        self._ars: set[int] = set()
        self._reevaluate = False
        self._site_max: dict[Any, int] = {}
        self._restoring = False

    # ---------------------------------------------------------------------------- queries
    def active_leases(self) -> list[Lease]:
        """Every lease that is not finished: held, queued, planned or running."""
        return [*self.held.values(), *self.queue, *self.future.values(), *self.running.values()]

    @property
    def idle(self) -> bool:
        return not (self.held or self.queue or self.future or self.running)

    # ------------------------------------------------------------------------- submission
    def submit(self, lease: Lease, now: float) -> None:
        """A lease arrives: admission, pricing, then the queue or its own slot."""
        self._emit("lease_submitted", lease=lease, now=now)
        too_big = self.oversize_reason(lease)
        if too_big:
            self.reject(lease, now, too_big)
            return
        reason = self.admission.admit(lease, now)
        if reason:
            self.reject(lease, now, reason)
            return
        lease.price = self.pricing.price(lease, now)
        if lease.max_price is not None and lease.price > lease.max_price:
            self.reject(lease, now, f"rejected by the user: price {lease.price:g} is above "
                                    f"the maximum {lease.max_price:g}")
            return
        kind = lease.type
        if kind is LeaseType.BEST_EFFORT:
            if self.queue_policy.hold(lease, now):
                self._move(lease, S.HELD, now)
                self.held[lease.id] = lease
            else:
                self._enqueue(lease, now)
        elif kind is LeaseType.IMMEDIATE:
            self._schedule_immediate(lease, now)
        elif kind is LeaseType.ADVANCE_RESERVATION:
            self._schedule_ar(lease, now)
        else:
            self._schedule_deadline(lease, now)

    def oversize_reason(self, lease: Lease) -> str:
        """Why the empty site could not host ``lease`` (empty if it could)."""
        demand = lease.vms
        if demand.vectors.shape[1] != self.table.capacity.shape[1]:
            raise ValueError(f"lease {lease.id} gives {demand.vectors.shape[1]} resource amounts "
                             f"per VM; the site has {self.table.capacity.shape[1]} resource types")
        if len(demand.counts) == 1:
            key = demand.shape_key
            most = self._site_max.get(key)
            if most is None:
                vector = demand.vectors[0]
                pos = vector > 0
                cap = self.table.capacity
                per_node = (np.floor((cap[:, pos] / vector[pos]).min(axis=1) + 1e-9)
                            if pos.any() else np.full(len(cap), math.inf))
                most = self._site_max[key] = per_node.sum()
            if demand.count <= most:
                return ""
            return (f"larger than the site: {demand.count} VMs requested, the site can host "
                    f"at most {most:g} of this size")
        if place_on(self.table.capacity, demand, np.arange(len(self.table.capacity))) is None:
            return "larger than the site: its VMs cannot all be placed even on empty nodes"
        return ""

    def reject(self, lease: Lease, now: float, reason: str) -> None:
        if self._restoring:   # it was accepted before the restart: it fails, with the reason
            lease.reason = f"could not be planned again after a restart: {reason}"
            lease.end = now
            self._move(lease, S.FAILED, now)
            self._emit("lease_ended", lease=lease, now=now)
            return
        lease.reason = reason
        self._move(lease, S.REJECTED, now)
        self._emit("lease_rejected", lease=lease, now=now)

    # ---------------------------------------------------------------------------- restore
    def restore_running(self, lease: Lease, vm_nodes: tuple[int, ...],
                        now: float) -> Reservation:
        """Take back a NEW lease object found running after a restart: its VMs hold
        ``vm_nodes`` from ``now`` for the rest of its work (an advance reservation: to the end
        of its interval); ``lease.work_done`` is the work done before ``now``. Raises
        :class:`~lease_manager.errors.OvercommitError` if the nodes are taken.

        Restore running leases first, then planned ones (:meth:`restore_planned`), then
        queued ones (:meth:`restore_queued`), so that every lease finds the room it had."""
        if lease.type is LeaseType.ADVANCE_RESERVATION:
            end = lease.start_request + lease.requested_duration
            self._ars.add(lease.id)
        else:
            end = now + self.length(lease)
        res = Placement.on_nodes(vm_nodes, lease.vms).reservation(lease, now, end)
        self.table.add(res)
        lease.reservations = [res]
        self.running[lease.id] = lease
        self._move(lease, S.SCHEDULED, now)
        self._move(lease, S.ACTIVE, now)
        self._enactment.start(lease, res, min(end, self.work_end(lease, now)))
        return res

    def restore_planned(self, lease: Lease, now: float) -> None:
        """Plan a NEW lease object that had been accepted before a restart, without admission
        or pricing: an advance reservation keeps what is left of its interval, an immediate
        or deadline lease is planned again (it fails, with the reason, if it cannot be), a
        best-effort lease is queued in its place."""
        self._restoring = True
        try:
            if lease.type is LeaseType.BEST_EFFORT:
                self._enqueue(lease, now)
            elif lease.type is LeaseType.ADVANCE_RESERVATION:
                self._schedule_ar(lease, now)
            elif lease.type is LeaseType.IMMEDIATE:
                self._schedule_immediate(lease, now)
            else:
                self._schedule_deadline(lease, now)
        finally:
            self._restoring = False

    def restore_queued(self, lease: Lease, image_nodes: tuple[int, ...] = ()) -> None:
        """Queue a NEW lease object that was queued (or held) before a restart; with
        ``image_nodes``, it is a suspended lease whose memory images are on those nodes."""
        if image_nodes:
            lease.image_nodes = tuple(image_nodes)
            image = Placement.on_nodes(image_nodes, lease.vms).reservation(
                lease, lease.suspended_at or 0.0, lease.suspended_at or 0.0, kind="image")
            lease.allocations.append(image)
        self._enqueue(lease, lease.suspended_at or lease.submit)

    def _move(self, lease: Lease, state: LeaseState, now: float) -> None:
        """Change ``lease``'s state (the state machine checks the move) and tell the hooks."""
        old = lease.state
        lease.transition(state)
        self._emit("lease_state_changed", lease=lease, old=old, now=now)

    def _enqueue(self, lease: Lease, now: float) -> None:
        self._move(lease, S.QUEUED, now)
        self._requeue(lease)

    def length(self, lease: Lease) -> float:
        """How long a reservation for the rest of ``lease`` lasts (its remaining work plus the
        shutdown; an advance reservation's interval is what it asked for)."""
        if lease.type is LeaseType.ADVANCE_RESERVATION:
            return lease.requested_duration
        return lease.remaining_requested + self.shutdown

    def work_end(self, lease: Lease, start: float) -> float:
        """When the lease, running from ``start``, really ends (work, then shutdown)."""
        work = lease.remaining_actual
        if lease.type is LeaseType.ADVANCE_RESERVATION:
            work = min(work, lease.requested_duration - self.shutdown)
        return start + work + self.shutdown

    # ------------------------------------------------------------ leases with their own slot
    def _schedule_immediate(self, lease: Lease, now: float) -> None:
        duration = self.length(lease)
        res = None
        if self.table.fits_at(lease.vms, duration, now):
            res = self._place_at(lease, now, duration)
        if res is None:
            self.reject(lease, now, "no room now (an immediate lease is never queued)")
            return
        self._commit(lease, [res], now)

    def _schedule_deadline(self, lease: Lease, now: float) -> None:
        duration = self.length(lease)
        earliest = max(now, lease.start_request if lease.start_request is not None else now)
        latest = lease.deadline - duration

        def slot() -> Reservation | None:
            if latest < earliest:
                return None
            return self._find_slot(lease, duration, earliest, latest)

        res = slot() or self._make_room(lease, slot, earliest, lease.deadline, now)
        if res is None:
            self.reject(lease, now, f"cannot finish by its deadline {lease.deadline:g}")
            return
        self._commit(lease, [res], now)

    def _schedule_ar(self, lease: Lease, now: float) -> None:
        start, duration = lease.start_request, lease.requested_duration
        if start is None or start < now:
            self.reject(lease, now, f"its start time {start} has already passed")
            return
        if duration <= self.shutdown:
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
            for victim in victims:
                self._preempt(victim, start, now)
            res = self._place_at(lease, start, duration)
            if res is None:   # only possible for leases of several VM shapes
                self.reject(lease, now, "the requested interval could not be freed")
                return
        self._commit(lease, [res], now)
        self._ars.add(lease.id)

    def _make_room(self, lease: Lease, slot: Callable[[], Reservation | None], start: float,
                   end: float, now: float) -> Reservation | None:
        """Find ``lease`` a slot (``slot()``) after moving planned deadline leases that overlap
        ``[start, end)`` and have slack elsewhere in their windows; never past a deadline. If
        any of them cannot be placed again, nothing changes and None is returned."""
        movable = [o for o in self.future.values()
                   if o.type is LeaseType.DEADLINE and len(o.reservations) == 1
                   and o.reservations[0].start > now and o.reservations[0].start < end
                   and o.reservations[0].end > start]
        if not movable:
            return None
        table = self.table
        old = {o.id: o.reservations[0] for o in movable}
        for o in movable:
            table.remove(old[o.id])
        res = slot()
        placed: list[tuple[Lease, Reservation]] = []
        if res is not None:
            table.add(res)
            for o in sorted(movable, key=lambda o: (o.deadline, o.id)):
                duration = old[o.id].end - old[o.id].start
                earliest = max(now, o.start_request if o.start_request is not None else now)
                new = self._find_slot(o, duration, earliest, o.deadline - duration)
                if new is None:
                    break
                table.add(new)
                placed.append((o, new))
            table.remove(res)
        if res is None or len(placed) < len(movable):
            for _, new in placed:
                table.remove(new)
            for o in movable:
                table.add(old[o.id])
            return None
        for o, new in placed:
            o.reservations = [new]
            self._emit("lease_scheduled", lease=o, now=now)
            self.timeline.push(new.start, EventKind.START, new)
        return res

    def _victims(self, lease: Lease, start: float, duration: float,
                 now: float) -> list[Lease] | None:
        """The leases to preempt so that ``lease`` fits at ``start`` (most preemptable first,
        one more at a time, as Haizea's mapper does), or None if no set of them suffices."""
        if self.preemption is None:
            return None
        scored: dict[int, tuple[float, Lease]] = {}
        for res in self.table.reservations_between(start, start + duration):
            other = res.lease
            if (not isinstance(other, Lease) or other.id in scored or other is lease
                    or other.state not in (S.SCHEDULED, S.ACTIVE)):
                continue
            score = self.preemption.score(lease, other, now)
            if score is not None:
                scored[other.id] = (score, other)
        chosen: list[Lease] = []
        released: list[Reservation] = []
        for _, other in sorted(scored.values(), key=lambda item: (-item[0], item[1].id)):
            chosen.append(other)
            released.extend(other.reservations)
            if self.table.earliest_fit(lease.vms, duration, start, not_after=start,
                                       released=released) is not None:
                return chosen
        return None

    # ------------------------------------------------------------------- scheduling cycle
    def cycle(self, now: float) -> None:
        """One scheduling cycle at ``now`` (after the instant's ends, starts and arrivals)."""
        self._emit("scheduling_cycle_start", now=now)
        if self.held:
            self._release(self.queue_policy.release(tuple(self.held.values()), now), now)
        if self._reevaluate:
            self._reevaluate = False
            self._reevaluate_future(now)
        if self.queue:
            self._process_queue(now)
        self._emit("scheduling_cycle_end", now=now)

    def release_all_held(self, now: float) -> int:
        """Queue every held lease (the core's guarantee that no held lease is left behind)."""
        count = len(self.held)
        self._release(list(self.held.values()), now)
        return count

    def _release(self, leases: Iterable[Lease], now: float) -> None:
        for lease in list(leases):
            if self.held.pop(lease.id, None) is None:
                raise RuntimeError(f"queue policy released lease {lease.id}, which is not held")
            self._enqueue(lease, now)

    def _may_reserve(self) -> bool:
        return len(self._backfill_reserved) < self.max_future

    def _process_queue(self, now: float) -> None:
        """Schedule queued leases in order: while another future reservation is allowed, each
        lease in turn starts now or reserves; after that only leases that start now."""
        queue = self.queue
        done: set[int] = set()
        n = len(queue)
        i = 0
        while i < n and self._may_reserve():
            if self._schedule(queue[i], now, True):
                done.add(i)
            i += 1
        if self.backfilling == "off":
            while i < n and self._schedule(queue[i], now, False):   # the head blocks the rest
                done.add(i)
                i += 1
        elif i < n:
            done.update(self._backfill_now(i, now))
        if done:
            keys = self._queue_keys
            self.queue = [l for j, l in enumerate(queue) if j not in done]
            self._queue_keys = [k for j, k in enumerate(keys) if j not in done]

    def _backfill_now(self, first: int, now: float) -> list[int]:
        """Start what can start now among ``queue[first:]``, in queue order.

        While the table does not change, a lease of one VM shape cannot start now if it needs
        more VMs than the site can host now, or at least as many VMs for at least as long as
        one that just could not: such leases are passed over without asking the table.
        """
        table = self.table
        queue = self.queue
        room: dict[bytes | None, float] = {}

        def room_for(lease: Lease) -> float:
            key = lease.vms.shape_key
            if key is None or lease.image_nodes:
                return math.inf
            r = room.get(key)
            if r is None:
                r = room[key] = table.room_at(lease.vms.vectors[0], now)
            return r

        candidates = [j for j in range(first, len(queue))
                      if queue[j].vms.count <= room_for(queue[j])]
        started: list[int] = []
        version = table.version
        failed: dict[bytes, list[tuple[int, float]]] = {}
        for j in candidates:
            lease = queue[j]
            key = lease.vms.shape_key
            count, duration = lease.vms.count, self.length(lease)
            if table.version != version:   # something started: the room shrank
                version = table.version
                room.clear()
                failed.clear()
                if count > room_for(lease):
                    continue
            plain = key is not None and not lease.image_nodes
            if plain and any(c <= count and d <= duration for c, d in failed.get(key, ())):
                continue
            if self._schedule(lease, now, False):
                started.append(j)
            elif plain:
                failed.setdefault(key, []).append((count, duration))
        return started

    def _place_at(self, lease: Lease, start: float, duration: float) -> Reservation | None:
        """Ask host selection for an order and the mapper for a placement at ``start``."""
        end = start + duration
        order = self.host_selection.order_hosts(lease, start, end, self.table)
        placement = place(self.table, lease.vms, start, end, order)
        return None if placement is None else placement.reservation(lease, start, end)

    def _find_slot(self, lease: Lease, duration: float, after: float, not_after: float | None,
                   before: float = math.inf) -> Reservation | None:
        """A reservation at the earliest start in ``[after, not_after]`` (and before
        ``before``) where the mapper places ``lease``."""
        for start in self.table.iter_fit_starts(lease.vms, duration, after,
                                                not_after=not_after):
            if start >= before:
                return None
            res = self._place_at(lease, start, duration)
            if res is not None:
                return res
        return None

    def _schedule(self, lease: Lease, now: float, allow_future: bool) -> bool:
        """Plan a queued lease: now, or (if allowed) at the earliest time it fits."""
        if lease.image_nodes:
            plan = self._resumption_plan(lease, now, allow_future)
        else:
            duration = self.length(lease)
            res = None
            plan = None
            if self.table.fits_at(lease.vms, duration, now):
                res = self._place_at(lease, now, duration)
            if res is None:
                plan = self._run_until_a_reservation(lease, now, duration)
            if plan is None and res is None and allow_future:
                res = self._find_slot(lease, duration, now, None)
            if plan is None:
                plan = None if res is None else [res]
        if plan is None:
            return False
        self._move(lease, S.SCHEDULED, now)
        if plan[0].start > now:
            self._backfill_reserved.add(lease.id)
        self._commit(lease, plan, now)
        if plan[-1].end - plan[0].start < self.length(lease) and not lease.image_nodes:
            # it runs in front of an AR and yields to it: a preemption planned from the start
            lease.preemptions += 1
            self._emit("lease_preempted", lease=lease, now=now)
        return True

    def _run_until_a_reservation(self, lease: Lease, now: float,
                                 length: float) -> list[Reservation] | None:
        """Use the slot in front of an advance reservation: run now and suspend so that the
        suspension ends when the reservation starts (Haizea's scheduling with suspension).

        Only if the lease may be suspended and the slot lasts at least (1 + F) x (suspend +
        resume time); the longest such slot ending at an AR's start is taken.
        """
        if (not self._ars or not self._can_suspend(lease)
                or lease.type is not LeaseType.BEST_EFFORT):
            return None
        ar_starts = sorted({r.start for r in self.table.reservations_between(now, now + length)
                            if r.start > now and isinstance(r.lease, Lease)
                            and r.lease.type is LeaseType.ADVANCE_RESERVATION})
        best = None
        for end in ar_starts:
            if not self.table.fits_at(lease.vms, end - now, now):
                break
            best = end
        if best is None:
            return None
        res = self._place_at(lease, now, best - now)
        if res is None:
            return None
        suspend = self.suspend_resume.suspend_time(res)
        resume = self.suspend_resume.resume_time(res)
        if best - now < (1 + self.threshold_factor) * (suspend + resume) or best - suspend <= now:
            return None
        run = Reservation(lease, now, best - suspend, res.nodes, res.amounts, None, "vm",
                          res.vm_nodes, res.vm_shape)
        if suspend == 0:
            return [run]
        return [run, Reservation(lease, best - suspend, best, res.nodes, res.amounts, None,
                                 "suspend", res.vm_nodes, res.vm_shape)]

    def _resumption_plan(self, lease: Lease, now: float,
                         allow_future: bool) -> list[Reservation] | None:
        """Resume a suspended lease on the nodes holding its memory images, then run the rest
        of its work there (``[resume][vm]``); with migration, elsewhere after moving the images
        (``[migrate][resume][vm]``) if that starts earlier."""
        image = lease.allocations[-1]
        resume = self.suspend_resume.resume_time(image)
        length = self.length(lease)
        not_after = None if allow_future else now
        start = self.table.earliest_fit_on(image.nodes, image.amounts, resume + length, now,
                                           not_after)
        best = None if start is None else (start, image.nodes, image.amounts, image.vm_nodes,
                                           image.vm_shape, 0.0)
        if self.migration_bandwidth is not None:
            moved = self._migrated(lease, image, resume + length, now,
                                   start if start is not None else not_after)
            if moved is not None and (best is None or moved[0] < best[0]):
                best = moved
        if best is None:
            return None
        start, nodes, amounts, vm_nodes, vm_shape, transfer = best

        def segment(kind: str, a: float, b: float) -> Reservation:
            return Reservation(lease, a, b, nodes, amounts, None, kind, vm_nodes, vm_shape)

        t = start
        plan = []
        for kind, span in (("migrate", transfer), ("resume", resume)):
            if span > 0:
                plan.append(segment(kind, t, t + span))
                t += span
        plan.append(segment("vm", t, t + length))
        return plan

    def _migrated(self, lease: Lease, image: Reservation, rest: float, now: float,
                  before: float | None) -> tuple | None:
        """The earliest placement anywhere (before ``before``) after moving the memory images
        of the VMs that change node: ``(start, nodes, amounts, vm_nodes, vm_shape, transfer)``."""
        memory = self.suspend_resume.memory_index
        per_vm = lease.vms.per_vm()
        total = sum(float(v[memory]) for v in per_vm) if memory is not None else 0.0
        transfer_all = total / self.migration_bandwidth
        for start in self.table.iter_fit_starts(lease.vms, transfer_all + rest, now,
                                                not_after=before):
            if before is not None and start >= before:
                return None
            res = self._place_at(lease, start, transfer_all + rest)
            if res is None:
                continue
            moved = sum(float(v[memory]) for v, a, b in zip(per_vm, image.vm_nodes, res.vm_nodes)
                        if a != b) if memory is not None else 0.0
            if moved == 0:
                continue   # the same nodes: that is the plain resumption
            return (start, res.nodes, res.amounts, res.vm_nodes, res.vm_shape,
                    moved / self.migration_bandwidth)
        return None

    def _commit(self, lease: Lease, plan: list[Reservation], now: float) -> None:
        """Put ``plan`` in the slot table and on the timeline; start what starts now."""
        if lease.state is S.NEW:
            self._move(lease, S.SCHEDULED, now)
        for res in plan:
            self.table.add(res)
        lease.reservations = plan
        if lease.promised_start is None:
            lease.promised_start = plan[0].start
        self._emit("lease_scheduled", lease=lease, now=now)
        self.future[lease.id] = lease
        for res in plan:
            if res.start > now:
                self.timeline.push(res.start, EventKind.START, res)
        last = plan[-1]
        if last.kind == "suspend" or (last.kind == "vm" and
                                      last.end - last.start < lease.remaining_requested):
            self.timeline.push(last.end, EventKind.SEGMENT_END, last)   # a planned suspension
        if plan[0].start <= now:
            self.segment_started(plan[0], now)

    # --------------------------------------------------------------------- re-evaluation
    def _reevaluate_future(self, now: float) -> None:
        """Move future reservations earlier where a premature end left room (never later).

        Best-effort and deadline leases are taken in scheduling order; a lease that moves can
        make room for one before it, so passes repeat until none moves (each pass only moves
        starts earlier, onto breakpoints, so this ends). A pass can stop at the last lease that
        moved in the pass before: the leases after it have seen every move since.
        """
        last_mover: Lease | None = None
        first_pass = True
        while first_pass or last_mover is not None:
            stop_at, last_mover = last_mover, None
            for lease in list(self.future.values()):
                if lease is stop_at and last_mover is None:
                    break
                if self._move_earlier(lease, now):
                    last_mover = lease
            first_pass = False

    def _move_earlier(self, lease: Lease, now: float) -> bool:
        if lease.image_nodes and lease.state is S.SCHEDULED:
            return self._move_resumption_earlier(lease, now)
        if lease.type not in (LeaseType.BEST_EFFORT, LeaseType.DEADLINE) or len(
                lease.reservations) != 1:
            return False
        table = self.table
        res = lease.reservations[0]
        duration = res.end - res.start
        if res.start <= now or not table.may_fit_before(lease.vms, duration, now, res.start):
            return False
        # with its own reservation counted as free, where could the lease start?
        start = table.earliest_fit(lease.vms, duration, now, not_after=res.start, own=res)
        if start is None or start >= res.start:
            return False
        table.remove(res)
        new = (self._place_at(lease, start, duration)
               or self._find_slot(lease, duration, now, res.start, before=res.start))
        if new is None:
            table.add(res)   # its old slot is still free: nothing else moved into it
            return False
        table.add(new)
        lease.reservations = [new]
        self._emit("lease_scheduled", lease=lease, now=now)
        if new.start <= now:
            self.segment_started(new, now)
        else:
            self.timeline.push(new.start, EventKind.START, new)
        return True

    def _move_resumption_earlier(self, lease: Lease, now: float) -> bool:
        """Plan a pending resumption again; its old plan stays free meanwhile, so the new one
        can only be earlier (or the same, and then the old one is kept)."""
        old = lease.reservations
        if not old or old[0].start <= now:
            return False
        for res in old:
            self.table.remove(res)
        plan = self._resumption_plan(lease, now, True)
        if plan is None or plan[0].start >= old[0].start:
            for res in old:
                self.table.add(res)
            return False
        for res in plan:
            self.table.add(res)
        lease.reservations = plan
        self._emit("lease_scheduled", lease=lease, now=now)
        for res in plan:
            if res.start > now:
                self.timeline.push(res.start, EventKind.START, res)
        if plan[0].start <= now:
            self.segment_started(plan[0], now)
        return True

    # ------------------------------------------------------------------------ preemption
    def _can_suspend(self, lease: Lease) -> bool:
        if self.suspension == "none":
            return False
        return self.suspension == "all" or lease.vms.count == 1

    def _preempt(self, lease: Lease, by_start: float, now: float) -> None:
        """Make ``lease`` give up its resources from ``by_start`` on."""
        lease.preemptions += 1
        self._ars.discard(lease.id)   # a third-party policy may preempt an AR
        if lease.state is S.SCHEDULED:    # not started: give up the plan, back to the queue
            for res in lease.reservations:
                self.table.remove(res)
            lease.reservations = []
            self._drop_future(lease)
            self._move(lease, S.QUEUED, now)
            self._requeue(lease)
        else:                              # running
            res = lease.reservations[0]
            suspend = self.suspend_resume.suspend_time(res) if self._can_suspend(lease) else None
            if suspend is not None and by_start - suspend >= now:
                stop = by_start - suspend
                for later in lease.reservations[1:]:
                    self.table.remove(later)
                if stop < res.end:
                    self.table.truncate(res, stop)
                plan = [res]
                if suspend > 0:
                    plan.append(Reservation(lease, stop, by_start, res.nodes, res.amounts, None,
                                            "suspend", res.vm_nodes, res.vm_shape))
                    self.table.add(plan[-1])
                lease.reservations = plan
                if stop <= now:
                    self._begin_suspension(lease, now)
                elif suspend > 0:
                    self.timeline.push(stop, EventKind.START, plan[-1])
                if suspend > 0:
                    self.timeline.push(by_start, EventKind.SEGMENT_END, plan[-1])
                else:   # nothing to write: suspended the moment it stops
                    self.timeline.push(stop, EventKind.SEGMENT_END, res)
            else:                          # cancelled now and requeued, losing its work
                for later in lease.reservations[1:]:
                    self.table.remove(later)
                self.table.truncate(res, now)
                lease.allocations.append(res)
                lease.reservations = []
                lease.work_done = 0.0
                del self.running[lease.id]
                self._enactment.stop(lease, now)
                self._move(lease, S.QUEUED, now)
                self._requeue(lease)
        self._emit("lease_preempted", lease=lease, now=now)

    def _requeue(self, lease: Lease) -> None:
        """Put a QUEUED lease in the queue, where the queue policy orders it."""
        key = self.queue_policy.sort_key(lease)
        at = bisect_right(self._queue_keys, key)
        self._queue_keys.insert(at, key)
        self.queue.insert(at, lease)
        lease.promised_start = None

    def _drop_future(self, lease: Lease) -> None:
        self.future.pop(lease.id, None)
        self._backfill_reserved.discard(lease.id)

    def _begin_suspension(self, lease: Lease, now: float) -> None:
        lease.work_done += now - lease.reservations[0].start
        lease.suspensions += 1
        if lease.suspended_at is None:
            lease.suspended_at = now
        self._move(lease, S.SUSPENDING, now)
        self._enactment.suspend(lease, now)

    # ------------------------------------------------------------ events of running leases
    def segment_started(self, res: Reservation, now: float) -> None:
        """A planned segment begins (stale events, of plans that changed, are ignored)."""
        lease = res.lease
        if res.start != now or not any(r is res for r in lease.reservations):
            return
        kind = res.kind
        if kind == "vm":
            if lease.state not in (S.SCHEDULED, S.RESUMING):
                return
            while lease.reservations[0] is not res:   # a resumption that is over
                lease.allocations.append(lease.reservations.pop(0))
            if lease.state is S.SCHEDULED:
                self._drop_future(lease)
                if lease.start is None:
                    lease.start = now
            if lease.suspended_at is not None:   # a resumption (taking time or not) is over
                lease.time_suspended += now - lease.suspended_at
                lease.suspended_at = None
            self._move(lease, S.ACTIVE, now)
            self.running[lease.id] = lease
            self._emit("lease_started", lease=lease, now=now)
            self._enactment.start(lease, res, self.work_end(lease, now))
        elif kind == "migrate" and lease.state is S.SCHEDULED:
            self._drop_future(lease)
            self._move(lease, S.MIGRATING, now)
            self.running[lease.id] = lease
        elif kind == "resume" and lease.state in (S.SCHEDULED, S.MIGRATING):
            self._drop_future(lease)
            self._move(lease, S.RESUMING, now)
            self.running[lease.id] = lease
        elif kind == "suspend" and lease.state is S.ACTIVE:
            self._begin_suspension(lease, now)

    def segment_ended(self, res: Reservation, now: float) -> None:
        """A planned segment ends: a suspension completes and the lease goes back to the queue."""
        lease = res.lease
        if not any(r is res for r in lease.reservations):
            return
        if res.kind == "vm" and lease.state is S.ACTIVE:   # a suspension taking no time
            self._begin_suspension(lease, now)
        if lease.state is not S.SUSPENDING:
            return
        lease.allocations.extend(lease.reservations)
        lease.reservations = []
        lease.image_nodes = res.vm_nodes
        del self.running[lease.id]
        self._move(lease, S.SUSPENDED, now)
        self._move(lease, S.QUEUED, now)
        self._requeue(lease)

    def work_finished(self, res: Reservation, now: float) -> None:
        """The lease's work finished at ``now`` (END event of its running reservation)."""
        lease = res.lease
        if (lease.state is not S.ACTIVE or not lease.reservations
                or lease.reservations[0] is not res or now > res.end):
            return
        if now < res.end:
            self.table.truncate(res, now)
            self._reevaluate = True
        for later in lease.reservations[1:]:   # a planned suspension it no longer needs
            self.table.remove(later)
        lease.allocations.append(res)
        lease.reservations = []
        lease.work_done = lease.run_duration
        lease.image_nodes = ()
        self._finish(lease, S.DONE, now)

    def _finish(self, lease: Lease, state: LeaseState, now: float) -> None:
        lease.end = now
        self._ars.discard(lease.id)
        self.running.pop(lease.id, None)
        if lease.time_suspended > 0:
            lease.price = (lease.price or 0.0) + self.pricing.surcharge(lease,
                                                                        lease.time_suspended)
        self._move(lease, state, now)
        self._enactment.stop(lease, now)
        self._emit("lease_ended", lease=lease, now=now)

    # ------------------------------------------------------------------------ cancellation
    def cancel(self, lease: Lease, now: float, reason: str = "cancelled") -> None:
        """Cancel ``lease`` in whatever state it is: its reservations from ``now`` on are
        given back and the schedule is re-evaluated."""
        self._end_early(lease, now, reason, S.CANCELLED)

    def fail(self, lease: Lease, now: float, reason: str) -> None:
        """``lease`` failed at ``now`` (its work vanished, exited with an error, or could not
        be started or restored): like a cancellation, but it ends FAILED. A lease that is new
        or held has nothing that could fail; it is cancelled with ``reason``."""
        final = S.CANCELLED if lease.state in (S.NEW, S.HELD) else S.FAILED
        self._end_early(lease, now, reason, final)

    def _end_early(self, lease: Lease, now: float, reason: str, final: LeaseState) -> None:
        state = lease.state
        if state.terminal:
            return
        lease.reason = reason
        if state is S.HELD:
            del self.held[lease.id]
        elif state is S.QUEUED:
            i = next(i for i, l in enumerate(self.queue) if l is lease)
            del self.queue[i]
            del self._queue_keys[i]
        for res in lease.reservations:
            if res.start >= now:
                self.table.remove(res)
            else:
                if res.end > now:
                    self.table.truncate(res, now)
                lease.allocations.append(res)
        if lease.reservations:
            self._reevaluate = True
        lease.reservations = []
        self._drop_future(lease)
        if state is S.NEW:
            self._move(lease, S.CANCELLED, now)
            lease.end = now
            self._emit("lease_ended", lease=lease, now=now)
            return
        self._finish(lease, final, now)
