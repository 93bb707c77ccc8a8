"""The wait queue and backfilling: at every scheduling cycle the queue is processed in order; a
lease starts now if it fits, or gets a reservation at the earliest time it fits while the
backfilling mode allows one more future reservation (``off``: none, and the head of the queue
blocks the rest; ``aggressive``: one; ``intermediate``: N; ``conservative``: all). A queued
lease may also run in front of an advance reservation and suspend before it."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.slot_rows import EPS
from lease_manager.kernel.slottable import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.queue_host import BackfillHost
    from lease_manager.kernel.table_protocol import CountProfile

S = members(LeaseState)
K = members(ReservationKind)
LT = members(LeaseType)
#: below this many queued leases, the fitting ones are found without arrays
SHORT_QUEUE = 64
#: up to this many leases leaving the queue in one cycle are deleted in place
FEW_DONE = 32
#: a lease planned to run now, on its nodes, alone, starts through _start_at_once (False:
#: through the general commit, for tests)
START_AT_ONCE = True


class Backfiller:
    """One scheduler's wait queue at work: the scheduling cycle, the held leases (its own),
    the queue (its :class:`~lease_manager.kernel.scheduler.wait_queue.WaitQueue`), and
    backfilling. The parts fixed at construction (the table, the settings, the plan book,
    the placer's methods) it keeps itself, read once: the per-lease path asks the scheduler
    only for what the energy parts change (nodes to boot, the power cap)."""

    __slots__ = ("held", "_sched", "_waiting", "_queue", "_table", "_counting", "_settings",
                 "_plans", "_most", "_transfers", "_haizea", "_length", "_place_at", "_find_slot",
                 "_refused_plan", "_commit", "_start_at_once")

    def __init__(self, sched: BackfillHost) -> None:
        self._sched = sched
        #: HELD leases (held back by the queue policy), by id
        self.held: dict[int, Lease] = {}
        self._waiting = sched.waiting
        self._queue = sched.waiting.leases
        self._table = sched.table
        #: the table as one that counts VMs (its profile of free VM slots), or None
        self._counting: CountProfile | None = sched.table.counting()
        self._settings = sched.settings
        self._plans = sched.plans
        #: how many queued leases may hold a future reservation
        self._most = sched.max_future
        #: planning with disk images sent first (None without), Haizea's planning
        self._transfers = sched.transfer_planner
        self._haizea = sched.haizea_planner
        self._length = sched.length
        placer = sched.placer
        self._place_at, self._find_slot = placer.place_at, placer.find_slot
        self._refused_plan, self._commit = placer.refused_plan, placer.commit
        self._start_at_once = placer.start_at_once

    def cycle(self, now: float) -> None:
        """One scheduling cycle at ``now`` (after the instant's ends, starts and arrivals)."""
        sched = self._sched
        muted = sched._muted
        if "scheduling_cycle_start" not in muted:
            sched._emit("scheduling_cycle_start", now=now)
        if self.held:
            self._release(sched.queue_policy.release(tuple(self.held.values()), now), now)
        if sched.reeval.pending:
            sched.reeval.at_cycle(now)
        if self._queue:
            self._process_queue(now)
        if "scheduling_cycle_end" not in muted:
            sched._emit("scheduling_cycle_end", now=now)

    def hold(self, lease: Lease, now: float) -> None:
        """The queue policy holds arriving ``lease`` back."""
        self._sched._move(lease, S.HELD, now)
        self.held[lease.id] = lease

    def release_all_held(self, now: float) -> int:
        """Queue every held lease (the core's guarantee that no held lease is left behind)."""
        count = len(self.held)
        self._release(list(self.held.values()), now)
        return count

    def _release(self, leases: Iterable[Lease], now: float) -> None:
        for lease in list(leases):
            if self.held.pop(lease.id, None) is None:
                raise RuntimeError(f"queue policy released lease {lease.id}, which is not held")
            self.enqueue(lease, now)

    def enqueue(self, lease: Lease, now: float) -> None:
        """``lease`` joins the queue (QUEUED)."""
        self._sched._move(lease, S.QUEUED, now)
        self.requeue(lease)

    def requeue(self, lease: Lease) -> None:
        """Put a QUEUED lease in the queue, where the queue policy orders it."""
        self._waiting.push(lease)
        lease.promised_start = None

    def withdraw(self, lease: Lease) -> None:
        """Take held or queued ``lease`` out (it was cancelled or failed)."""
        if self.held.pop(lease.id, None) is None:
            self._waiting.pop_at(next(i for i, l in enumerate(self._queue) if l is lease))

    def may_reserve(self) -> bool:
        """Whether one more queued lease may get a future reservation."""
        return len(self._plans.reserved) < self._most

    def _process_queue(self, now: float) -> None:
        """Schedule queued leases in order: while another future reservation is allowed, each
        lease in turn starts now or reserves; after that only leases that start now."""
        queue = self._queue
        most = self._most
        if not most and self._settings.backfilling == "off":
            self._start_from_head(now)
            return
        done: set[int] = set()
        n = len(queue)
        i = 0
        reserved = self._plans.reserved
        schedule = self.schedule
        while i < n and len(reserved) < most:   # (may_reserve)
            if schedule(queue[i], now, True):
                done.add(i)
            i += 1
        if self._settings.backfilling == "off":
            while i < n and schedule(queue[i], now, False):   # the head blocks the rest
                done.add(i)
                i += 1
        elif i < n:
            counted = None if self._sched.bootable else self._counting
            done.update(self._backfill_counted(counted, i, now) if counted is not None
                        else self._backfill_now(i, now))
        if done:
            self._waiting.pop_all(done, FEW_DONE)

    def _start_from_head(self, now: float) -> None:
        """:meth:`_process_queue` without backfilling (FCFS): leases start in queue order
        until one cannot, and those that started leave from the head of the queue."""
        queue, schedule = self._queue, self.schedule
        n = len(queue)
        i = 0
        while i < n and schedule(queue[i], now, False):   # the head blocks the rest
            i += 1
        if i:
            self._waiting.pop_head(i)

    def _backfill_now(self, first: int, now: float) -> list[int]:
        """Start what can start now among ``queue[first:]``, in queue order.

        While the table does not change, a lease of one VM shape cannot start now if it needs
        more VMs than the site can host now, or at least as many VMs for at least as long as
        one that just could not: such leases are passed over without asking the table.
        """
        sched, table, queue = self._sched, self._table, self._queue
        room: dict[bytes | None, float] = {}
        bootable = sched.bootable

        def room_for(lease: Lease) -> float:
            key = lease.vms.shape_key
            if key is None or lease.image_nodes or bootable:
                return math.inf   # (nodes that are off could host it once booted)
            r = room.get(key)
            if r is None:
                r = room[key] = table.room_at(lease.vms.vectors[0], now)
            return r

        # with nodes off, on a table that counts VMs: the most VMs that could start by the time
        # a boot begun now ends (a lease needing more neither starts now nor when booted)
        booted_room = -1.0   # (< 0: not known for the table as it is now)
        counts = (self._counting if bootable and self._transfers is None
                  and not self._settings.haizea_planning else None)
        if counts is not None:
            booted_room = _room_until(counts, now, sched.boots.boot_until)
            candidates: Iterable[int] = self._fitting_by_count(first, booted_room)
        elif bootable:
            candidates = range(first, len(queue))
        else:
            candidates = self._fitting_now(first, now, room)
        started: list[int] = []
        version = table.version
        failed: dict[bytes, _Failures] = {}
        for j in candidates:
            lease = queue[j]
            key = lease.vms.shape_key
            count, duration = lease.vms.count, self._length(lease)
            if table.version != version:   # something started: the room shrank
                version = table.version
                room.clear()
                failed.clear()
                booted_room = -1.0
                if count > room_for(lease):
                    continue
            if counts is not None and not lease.image_nodes:
                if booted_room < 0:
                    booted_room = _room_until(counts, now, sched.boots.boot_until)
                if count > booted_room:
                    continue   # (it would fail, and any lease it would cover skips here too)
            shape = None if lease.image_nodes else key   # answered from per-shape counts
            if shape is not None and shape in failed and failed[shape].covers(count, duration):
                continue
            if self.schedule(lease, now, False):
                started.append(j)
            elif shape is not None:
                failed.setdefault(shape, _Failures()).add(count, duration)
        return started

    def _backfill_counted(self, table: CountProfile, first: int,
                          now: float) -> list[int]:
        """:meth:`_backfill_now` on a table that counts VMs, where a lease fits now exactly when
        its VM count is at most the fewest free VM slots over its window: one array comparison
        over the rest of the queue finds the next lease that starts, until none is left."""
        room = table.room_at(table.vector, now)
        if room < 1:   # (a lease has a VM at least: none starts now)
            return []
        if len(self._queue) - first < SHORT_QUEUE:   # arrays cost more than they save
            return self._backfill_counted_short(table, first, now, room)
        # only leases with room now can start now: look at those alone (views of the arrays
        # beside the queue, gone before anything can change the queue)
        queued = np.frombuffer(self._waiting.counts, dtype=np.int64)[first:]
        candidates = np.flatnonzero(queued <= room)
        counts = queued[candidates]
        ends = np.frombuffer(self._waiting.lengths, dtype=np.float64)[first:][candidates] + now
        del queued
        started: list[int] = []
        p = 0   # candidates[p:] are left
        while p < len(counts):
            times, free = table.profile(now)
            least = np.minimum.accumulate(free)   # fewest free slots from now to each row's end
            fits = counts[p:] <= least[np.searchsorted(times, ends[p:]) - 1]
            hits = np.flatnonzero(fits)
            if not hits.size:
                break
            j = p + int(hits[0])
            at = first + int(candidates[j])
            if self.schedule(self._queue[at], now, False):
                started.append(at)
            p = j + 1
        return started

    def _backfill_counted_short(self, table: CountProfile, first: int,
                                now: float, room: float) -> list[int]:
        """:meth:`_backfill_counted` in plain Python, for a short queue: the same tests, one
        lease at a time, each asked of the table as it is then."""
        counts, lengths, queue = self._waiting.counts, self._waiting.lengths, self._queue
        next_fitting = table.next_fitting
        started: list[int] = []
        n = len(queue)
        k = next_fitting(counts, lengths, first, now, room)
        while k < n:
            if self.schedule(queue[k], now, False):
                started.append(k)
            k = next_fitting(counts, lengths, k + 1, now, room)
        return started

    def _fitting_by_count(self, first: int, room: float) -> list[int]:
        """Positions in ``queue[first:]`` of the leases of at most ``room`` VMs, and of those
        without a single shape or with a memory image (shape id -1)."""
        queued, shape_ids = self._waiting.counts, self._waiting.shapes
        if len(self._queue) - first < SHORT_QUEUE:   # arrays cost more than they save
            return [k for k in range(first, len(self._queue))
                    if queued[k] <= room or shape_ids[k] < 0]
        # views of the arrays beside the queue (see _fitting_now)
        counts = np.frombuffer(queued, dtype=np.int64)[first:]
        shapes = np.frombuffer(shape_ids, dtype=np.int64)[first:]
        return (np.flatnonzero((counts <= room) | (shapes < 0)) + first).tolist()

    def _fitting_now(self, first: int, now: float,
                     room: dict[bytes | None, float]) -> list[int]:
        """Positions in ``queue[first:]`` of the leases whose VM count the site has room for
        now (every lease without a single shape counts as fitting); fills ``room`` for the
        shapes it looked at. One array comparison instead of a call per queued lease."""
        waiting = self._waiting
        present = [shape_id for shape_id, n in waiting.census.items() if n and shape_id >= 0]
        if not present:
            return list(range(first, len(self._queue)))
        rooms = {}
        for shape_id in present:     # (of the whole queue: the tail may lack some)
            vector = waiting.shape_vectors[shape_id]
            rooms[shape_id] = room[vector.tobytes()] = self._table.room_at(vector, now)
        if len(self._queue) - first < SHORT_QUEUE:   # arrays cost more than they save
            tail, queued = waiting.shapes[first:], waiting.counts[first:]
            return [first + k for k, shape_id in enumerate(tail)
                    if shape_id < 0 or queued[k] <= rooms[shape_id]]
        by_id = np.full(len(waiting.shape_vectors) + 1, np.inf)   # the last entry: id -1
        for shape_id, r in rooms.items():
            by_id[shape_id] = r
        # views of the arrays beside the queue (no copy); gone when this returns, before the
        # queue changes (an array exporting its buffer cannot be resized)
        counts = np.frombuffer(waiting.counts, dtype=np.int64)[first:]
        shapes = np.frombuffer(waiting.shapes, dtype=np.int64)[first:]
        fits = counts <= by_id[shapes]
        return (np.flatnonzero(fits) + first).tolist()

    def schedule(self, lease: Lease, now: float, allow_future: bool) -> bool:
        """Plan a queued lease: now, or (if allowed) at the earliest time it fits."""
        sched = self._sched
        transfers = self._transfers
        if transfers is not None and not lease.image_nodes and \
                transfers.manages(lease):   # its disk image is sent first
            return transfers.schedule_queued(lease, now, allow_future)
        if self._settings.haizea_planning and not lease.image_nodes:   # Haizea's own planning
            return self._haizea.schedule_queued(lease, now, allow_future)
        booted = False
        if lease.image_nodes:
            plan = sched.suspender.resumption_plan(lease, now, allow_future)
        else:
            duration = self._length(lease)
            res = None
            plan = None
            if self._table.fits_at(lease.vms, duration, now):
                res = self._place_at(lease, now, duration)
            if res is None:
                plan = self.run_until_a_reservation(lease, now, duration)
            if plan is None and res is None and sched.bootable:
                res = self.start_when_booted(lease, duration, now)
                booted = res is not None
            if plan is None and res is None and allow_future:
                res = self._find_slot(lease, duration, now, None)
            if plan is None:
                plan = None if res is None else [res]
        if plan is None:
            return False
        if self._refused_plan(lease, plan, now):
            return True   # it leaves the queue, rejected or failed
        sched._move(lease, S.SCHEDULED, now)
        first = plan[0]
        if first.start > now and not booted:
            self._plans.reserve(lease.id)
        if START_AT_ONCE and len(plan) == 1 and first.start == now and first.kind == K.VM \
                and not first.pending and sched.power is None and not lease.image_nodes:
            self._start_at_once(lease, plan, now)
        else:
            self._commit(lease, plan, now)
        if plan[-1].end - plan[0].start < self._length(lease) - EPS * max(1.0, plan[-1].end) \
                and not lease.image_nodes:
            # it runs in front of an AR and yields to it: a preemption planned from the start
            # (not a span that rounds below the length: end - start loses the end's last bits)
            lease.preemptions += 1
            sched._emit("lease_preempted", lease=lease, now=now)
        return True

    def start_when_booted(self, lease: Lease, duration: float,
                           now: float) -> Reservation | None:
        """A slot that starts as soon as some nodes that are off could be booted (it counts as
        starting now, not as a future reservation: the lease waits only for the boot)."""
        sched = self._sched
        res = self._find_slot(lease, duration, now, sched.boots.boot_until)
        if res is None:
            return None
        if res.pending:   # counted VMs: it waits for a boot if the nodes that are on cannot host it
            counted = self._counting
            assert counted is not None   # (only a table that counts VMs holds pending ones)
            if counted.fits_without(res.pending, res.start, res.end):
                return None
            return res
        bootable = sched.bootable
        if not any(n in bootable for n in res.nodes.tolist()):
            return None
        return res

    def run_until_a_reservation(self, lease: Lease, now: float,
                                 length: float) -> list[Reservation] | None:
        """Use the slot in front of an advance reservation: run now and suspend so that the
        suspension ends when the reservation starts (Haizea's scheduling with suspension).

        Only if the lease may be suspended and the slot lasts at least (1 + F) x (suspend +
        resume time); the longest such slot ending at an AR's start is taken.
        """
        sched = self._sched
        if (not self._plans.ars or not sched.suspender.can_suspend(lease)
                or lease.type is not LT.BEST_EFFORT):
            return None
        table, settings = self._table, self._settings
        ar_starts = sorted({r.start for r in table.reservations_between(now, now + length)
                            if r.start > now and isinstance(r.lease, Lease)
                            and r.lease.type is LT.ADVANCE_RESERVATION})
        best = None
        for end in ar_starts:
            if not table.fits_at(lease.vms, end - now, now):
                break
            best = end
        if best is None:
            return None
        res = self._place_at(lease, now, best - now)
        if res is None:
            return None
        suspend = settings.suspend_resume.suspend_time(res)
        resume = settings.suspend_resume.resume_time(res)
        threshold = (settings.forced_threshold if settings.forced_threshold is not None
                     else (1 + settings.threshold_factor) * (suspend + resume))
        if best - now < threshold or best - suspend <= now:
            return None
        run = Reservation(lease, now, best - suspend, res.nodes, res.amounts, None, K.VM,
                          res.vm_nodes, res.vm_shape)
        if suspend == 0:
            return [run]
        return [run, Reservation(lease, best - suspend, best, res.nodes, res.amounts, None,
                                 K.SUSPEND, res.vm_nodes, res.vm_shape)]


def _room_until(table: CountProfile, now: float, until: float) -> float:
    """The most VM slots free at any start from ``now`` to ``until`` (the row holding now
    at least): a lease of more VMs fits at no start in between."""
    times, free = table.profile_lists(now)
    return float(max(free[:bisect_right(times, max(until, now))]))


class _Failures:
    """The (VM count, duration) pairs of one VM shape that could not start now, kept as
    their minimal elements: a lease needing at least as many VMs for at least as long as one
    of them cannot start either. Sorted by count up, duration strictly down, so that a query
    is a bisection."""

    __slots__ = ("counts", "durations")

    def __init__(self) -> None:
        self.counts: list[int] = []
        self.durations: list[float] = []

    def covers(self, count: int, duration: float) -> bool:
        """Is some failure at most ``count`` VMs and at most ``duration`` long?"""
        i = bisect_right(self.counts, count) - 1
        return i >= 0 and self.durations[i] <= duration   # the shortest with few enough VMs

    def add(self, count: int, duration: float) -> None:
        """Record a failure that :meth:`covers` did not cover."""
        at = bisect_left(self.counts, count)
        end = at
        while end < len(self.counts) and self.durations[end] >= duration:
            end += 1          # failures it covers (as many VMs or more, as long or longer)
        self.counts[at:end] = [count]
        self.durations[at:end] = [duration]
