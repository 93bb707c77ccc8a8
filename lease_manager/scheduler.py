"""The lease scheduler: admission, the wait queue, backfilling and the plan of every lease.

Best-effort leases wait in a queue ordered by the queue policy. At every scheduling cycle the
queue is processed in order; a lease starts now if it fits, or gets a reservation at the
earliest time it fits if the backfilling mode allows one more future reservation
(``off``: none, and the head of the queue blocks the rest; ``aggressive``: one; ``intermediate``:
N; ``conservative``: all). When a lease ends before its reservation does, every future
reservation is re-evaluated in scheduling order and moved earlier if it can be; it is never
moved later than the start it was promised.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .events import EventKind, Timeline
from .lease import Lease, LeaseState, LeaseType
from .mapper import place, place_on

if TYPE_CHECKING:
    from .policies import AdmissionPolicy, HostSelectionPolicy, PricingPolicy, QueuePolicy
    from .slottable import Reservation, SlotTable

FUTURE_RESERVATIONS = {"off": 0, "aggressive": 1, "conservative": math.inf}


def max_future_reservations(backfilling: str, reservations: int = 1) -> float:
    """How many queued leases may hold a future reservation under a backfilling mode."""
    if backfilling == "intermediate":
        return reservations
    return FUTURE_RESERVATIONS[backfilling]


class LeaseScheduler:
    """Decides, for one site, when and where every lease runs.

    Collaborators are passed in: the slot table, the policies, the timeline to put future
    starts on, ``start_work`` (the enactment: called when a lease starts) and ``hook`` (the run's
    pluggy hook relay, called with ``run=...`` by :meth:`_emit`).
    """

    def __init__(self, table: "SlotTable", timeline: Timeline, *,
                 admission: "AdmissionPolicy", pricing: "PricingPolicy", queue: "QueuePolicy",
                 host_selection: "HostSelectionPolicy", backfilling: str = "aggressive",
                 backfilling_reservations: int = 1,
                 start_work: Callable[[Lease, float], None] | None = None,
                 emit: Callable[..., None] | None = None) -> None:
        self.table = table
        self.timeline = timeline
        self.admission = admission
        self.pricing = pricing
        self.queue_policy = queue
        self.host_selection = host_selection
        self.backfilling = backfilling
        self.max_future = max_future_reservations(backfilling, backfilling_reservations)
        self._start_work = start_work or (lambda lease, now: None)
        self._emit = emit or (lambda hook, **kw: None)
        #: QUEUED leases, in queue order
        self.queue: list[Lease] = []
        self._queue_keys: list[Any] = []
        #: HELD leases (held back by the queue policy), by id
        self.held: dict[int, Lease] = {}
        #: SCHEDULED leases whose reservation starts in the future, in scheduling order
        self.future: dict[int, Lease] = {}
        #: ACTIVE leases, by id
        self.running: dict[int, Lease] = {}
        self._reevaluate = False
        self._site_max: dict[Any, int] = {}

    # ---------------------------------------------------------------------------- queries
    def active_leases(self) -> list[Lease]:
        """Every lease that is not finished: held, queued, scheduled or running."""
        return [*self.held.values(), *self.queue, *self.future.values(), *self.running.values()]

    @property
    def idle(self) -> bool:
        return not (self.held or self.queue or self.future or self.running)

    # ------------------------------------------------------------------------- submission
    def submit(self, lease: Lease, now: float) -> None:
        """A lease arrives: admission, pricing, then the queue (or held back)."""
        self._emit("lease_submitted", lease=lease, now=now)
        if lease.type is not LeaseType.BEST_EFFORT:
            self.reject(lease, now, f"{lease.type.value} leases are not supported by this "
                                    f"scheduler yet")
            return
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
        if self.queue_policy.hold(lease, now):
            lease.transition(LeaseState.HELD)
            self.held[lease.id] = lease
        else:
            self._enqueue(lease)

    def oversize_reason(self, lease: Lease) -> str:
        """Why the empty site could not host ``lease`` (empty if it could)."""
        demand = lease.vms
        if demand.vectors.shape[1] != self.table.capacity.shape[1]:
            raise ValueError(f"lease {lease.id} gives {demand.vectors.shape[1]} resource amounts "
                             f"per VM; the site has {self.table.capacity.shape[1]} resource types")
        if len(demand.counts) == 1:
            key = demand.vectors[0].tobytes()
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
        lease.reason = reason
        lease.transition(LeaseState.REJECTED)
        self._emit("lease_rejected", lease=lease, now=now)

    def _enqueue(self, lease: Lease) -> None:
        key = self.queue_policy.sort_key(lease)
        at = bisect_right(self._queue_keys, key)
        self._queue_keys.insert(at, key)
        self.queue.insert(at, lease)
        lease.transition(LeaseState.QUEUED)

    # ------------------------------------------------------------------- scheduling cycle
    def cycle(self, now: float) -> None:
        """One scheduling cycle at ``now`` (after the instant's ends, starts and arrivals)."""
        self._emit("scheduling_cycle_start", now=now)
        if self.held:
            self._release(self.queue_policy.release(tuple(self.held.values()), now))
        if self._reevaluate:
            self._reevaluate = False
            self._reevaluate_future(now)
        if self.queue:
            self._process_queue(now)
        self._emit("scheduling_cycle_end", now=now)

    def release_all_held(self) -> int:
        """Queue every held lease (the core's guarantee that no held lease is left behind)."""
        count = len(self.held)
        self._release(list(self.held.values()))
        return count

    def _release(self, leases) -> None:
        for lease in list(leases):
            if self.held.pop(lease.id, None) is None:
                raise RuntimeError(f"queue policy released lease {lease.id}, which is not held")
            self._enqueue(lease)

    def _process_queue(self, now: float) -> None:
        """Schedule queued leases in order: while another future reservation is allowed, each
        lease in turn starts now or reserves; after that only leases that start now."""
        queue = self.queue
        done: set[int] = set()
        n = len(queue)
        i = 0
        while i < n and len(self.future) < self.max_future:
            if self._schedule(queue[i], now, True):
                done.add(i)
            i += 1
        if self.backfilling == "off":
            if i < n and self._schedule(queue[i], now, False):   # the head blocks the rest
                done.add(i)
                i += 1
                while i < n and self._schedule(queue[i], now, False):
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
            if key is None:
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
            count, duration = lease.vms.count, lease.requested_duration
            if table.version != version:   # something started: the room shrank
                version = table.version
                room.clear()
                failed.clear()
                if count > room_for(lease):
                    continue
            if key is not None and any(c <= count and d <= duration
                                       for c, d in failed.get(key, ())):
                continue
            if self._schedule(lease, now, False):
                started.append(j)
            elif key is not None:
                failed.setdefault(key, []).append((count, duration))
        return started

    def _place_at(self, lease: Lease, start: float, duration: float) -> "Reservation | None":
        """Ask host selection for an order and the mapper for a placement at ``start``."""
        end = start + duration
        order = self.host_selection.order_hosts(lease, start, end, self.table)
        placement = place(self.table, lease.vms, start, end, order)
        return None if placement is None else placement.reservation(lease, start, end)

    def _find_slot(self, lease: Lease, duration: float, after: float, not_after: float | None,
                   before: float = math.inf) -> "Reservation | None":
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
        duration = lease.requested_duration
        res = None
        if self.table.fits_at(lease.vms, duration, now):
            res = self._place_at(lease, now, duration)
        if res is None:
            if not allow_future:
                return False
            res = self._find_slot(lease, duration, now, None)
            if res is None:
                return False
        self.table.add(res)
        lease.reservations = [res]
        lease.transition(LeaseState.SCHEDULED)
        if lease.promised_start is None:
            lease.promised_start = res.start
        self._emit("lease_scheduled", lease=lease, now=now)
        if res.start <= now:
            self._start(lease, now)
        else:
            self.future[lease.id] = lease
            self.timeline.push(res.start, EventKind.START, lease)
        return True

    def _reevaluate_future(self, now: float) -> None:
        """Move future reservations earlier where a premature end left room (never later).

        Leases are taken in scheduling order; a lease that moves can make room for one before
        it, so passes repeat until none moves (each pass only moves starts earlier, onto
        breakpoints, so this ends). A pass can stop at the last lease that moved in the pass
        before: the leases after it have seen every move since.
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
            del self.future[lease.id]
            self._start(lease, now)
        else:
            self.timeline.push(new.start, EventKind.START, lease)
        return True

    # ------------------------------------------------------------------ starting, ending
    def start_due(self, lease: Lease, now: float) -> None:
        """A START event: begin ``lease`` if its plan still says so (stale events are ignored)."""
        if lease.state is not LeaseState.SCHEDULED or lease.id not in self.future:
            return
        if lease.reservations[0].start != now:
            return
        del self.future[lease.id]
        self._start(lease, now)

    def _start(self, lease: Lease, now: float) -> None:
        lease.transition(LeaseState.ACTIVE)
        if lease.start is None:
            lease.start = now
        self.running[lease.id] = lease
        self._emit("lease_started", lease=lease, now=now)
        self._start_work(lease, now)

    def end(self, lease: Lease, now: float) -> None:
        """``lease``'s work finished at ``now`` (at or before its reservation's end)."""
        if lease.state is not LeaseState.ACTIVE:
            return
        res = lease.reservations[-1]
        if now < res.end:
            self.table.truncate(res, now)
            self._reevaluate = True
        lease.allocations.append(res)
        lease.reservations = []
        lease.end = now
        lease.transition(LeaseState.DONE)
        del self.running[lease.id]
        self._emit("lease_ended", lease=lease, now=now)
