"""The lease scheduler: admission, the wait queue, backfilling, preemption and every plan.

Best-effort leases wait in a queue ordered by the queue policy. At every scheduling cycle the
queue is processed in order; a lease starts now if it fits, or gets a reservation at the
earliest time it fits if the backfilling mode allows one more future reservation
(``off``: none, and the head of the queue blocks the rest; ``aggressive``: one; ``intermediate``:
N; ``conservative``: all). When a lease ends before its reservation does, every future
reservation is re-evaluated and moved earlier if it can be; it is never moved later than the
start it was promised (``reevaluation = replan``: Haizea's re-plan instead, replan.py).

Advance reservations get their exact interval or are rejected; if the interval is not free,
leases the preemption policy allows are preempted, most preemptable first, until it is. A
preempted lease that has not started is requeued; a running one is suspended (the suspension
ends exactly when the preemptor starts) or, without suspension, cancelled and requeued,
losing its work; a deadline lease is instead planned again inside its window at once (its
resumption, if running), and the preemption is refused if it cannot be. A suspended lease goes
back to the queue and resumes on the nodes holding its
memory images, with only its remaining work. Immediate leases start now or are rejected;
deadline leases get the earliest slot that ends by their deadline or are rejected.

A lease's plan is a list of reservations in time order, each of a
:class:`~lease_manager.kernel.slottable.ReservationKind`: ``migrate``, ``resume``, ``vm`` (the VMs
run), ``suspend``. Every re-planning path changes the slot table through one
:class:`~lease_manager.kernel.scheduler.transaction.PlanChange` (rolled back if the new plan
fails) and adopts a new plan through one method (``_adopt``: announce, timeline, start now).

The scheduler is one class assembled from one mixin per concern: ``queue`` (the cycle, the queue
and backfilling), ``reservations`` (immediate, advance-reservation and deadline leases),
``preemption``, ``suspension`` (suspend, resume, migrate), ``reevaluation`` (moving plans earlier
after early ends; ``replan``: Haizea's), ``lifecycle`` (segment and work events, cancellation,
failure), ``restore`` (after a daemon restart) and ``placing`` (placing a plan and adopting
it); Haizea's suspension model (``haizea_resumption``), image transfers (``image_transfer``)
and deadline leases preempting (``deadline_preemption``) are modules of their own.
"""


from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import Timeline
from lease_manager.kernel.extra_attributes import USER_RATE
from lease_manager.kernel.lease import TRANSITIONS, Lease, LeaseState, LeaseType
from lease_manager.kernel.mapper import place_on
from lease_manager.kernel.scheduler import (
    haizea_resumption,
    lifecycle,
    placing,
    preemption,
    queue,
    replan,
    reservations,
    resize,
    restore,
    suspension,
)
from lease_manager.kernel.scheduler import reevaluation as moving
from lease_manager.kernel.scheduler.image_transfer import ImageTransfers
from lease_manager.kernel.scheduler.plan_book import PlanBook
from lease_manager.kernel.scheduler.reevaluator import Reevaluator
from lease_manager.kernel.scheduler.seams import (
    AllNodesOn,
    ArrivalAllocator,
    BootableNodes,
    Enactment,
    LevelSetter,
    PlannedBoots,
    PowerGate,
)
from lease_manager.kernel.scheduler.settings import SchedulerSettings
from lease_manager.kernel.scheduler.wait_queue import WaitQueue

if TYPE_CHECKING:
    from lease_manager.kernel.policy_protocols import (
        AdmissionProtocol,
        HostSelectionProtocol,
        PreemptionProtocol,
        PricingProtocol,
        QueueProtocol,
    )
    from lease_manager.kernel.slottable import SlotTable

S = members(LeaseState)
LT = members(LeaseType)
FUTURE_RESERVATIONS = {"off": 0, "aggressive": 1, "conservative": math.inf}


#: the settings of a scheduler made without any
DEFAULT_SETTINGS = SchedulerSettings()


def max_future_reservations(backfilling: str, reservations: int = 1) -> float:
    """How many queued leases may hold a future reservation under a backfilling mode."""
    if backfilling == "intermediate":
        return reservations
    return FUTURE_RESERVATIONS[backfilling]


def hook_emitters(emit: Callable[..., None] | None) -> tuple[
        Callable[..., None], Callable[[str, Lease, float], None], Collection[str]]:
    """From the run's hook relay (None: nobody listens): ``emit(hook, **kw)``; ``emit(hook,
    lease=lease, now=now)`` for the hooks about one lease, called positionally where the
    relay can (a :class:`~lease_manager.plugins.HookRelay`'s ``lease_hook``); and the hooks the
    relay knows nobody implements (its ``muted``, kept up to date: the hottest emits are
    skipped for these)."""
    def silent(hook: str, **kw: Any) -> None:
        return None

    relay = emit or silent

    def lease_hook(hook: str, lease: Lease, now: float) -> None:
        relay(hook, lease=lease, now=now)

    return (relay, getattr(emit, "lease_hook", None) or lease_hook,
            getattr(emit, "muted", frozenset()))


class LeaseScheduler:
    """Decides, for one site, when and where every lease runs.

    Collaborators are passed in: the slot table, the policies, the timeline to put planned
    events on, the ``enactment`` (told when a lease's VMs start, suspend and stop; see
    :class:`Enactment`) and ``emit`` (the run's hook relay).
    """

    def __init__(self, table: SlotTable, timeline: Timeline, *,
                 admission: AdmissionProtocol, pricing: PricingProtocol, queue: QueueProtocol,
                 host_selection: HostSelectionProtocol,
                 preemption: PreemptionProtocol | None = None,
                 settings: SchedulerSettings = DEFAULT_SETTINGS,
                 preparation: ImageTransfers | None = None,
                 enactment: Enactment | None = None,
                 emit: Callable[..., None] | None = None, boots: BootableNodes | None = None,
                 power: PowerGate | None = None, planned_boots: PlannedBoots | None = None,
                 operating_point: LevelSetter | None = None,
                 allocator: ArrivalAllocator | None = None) -> None:
        self.table, self.timeline = table, timeline
        #: what policies are shown of the table (its queries)
        self.table_view = table.view()
        self.admission, self.pricing, self.queue_policy = admission, pricing, queue
        self.host_selection, self.preemption = host_selection, preemption
        #: how it plans (one frozen value, never changed)
        self.settings = settings
        self.max_future = max_future_reservations(settings.backfilling,
                                                  settings.backfilling_reservations)
        #: disk-image transfers before leases start (image_transfer.py; None: unmanaged)
        self.preparation = preparation
        #: re-evaluation after early ends, in its mode (``auto`` resolved for the
        #: backfilling mode and placement)
        self.reeval = Reevaluator(self, replan.by_mode(settings.reevaluation,
                                                       settings.backfilling, table.counted))
        self._enactment = enactment or Enactment()
        self._emit, self._emit_lease, self._muted = hook_emitters(emit)
        #: the wait queue (its one owner)
        self.waiting = WaitQueue(queue.sort_key, self.length)
        #: QUEUED leases, in queue order (a view of the wait queue's)
        self.queue: Sequence[Lease] = self.waiting.leases
        #: HELD leases (held back by the queue policy), by id
        self.held: dict[int, Lease] = {}
        #: the plans that have not started, those counting against backfilling, and the
        #: advance reservations' (their one owner)
        self.plans = PlanBook()
        #: leases whose plan has not started yet, by id, in scheduling order (a view)
        self.future: Mapping[int, Lease] = self.plans.future
        #: leases running, suspending or resuming, by id
        self.running: dict[int, Lease] = {}
        #: leases that ended since :meth:`untie_ended` was last called
        self._ended: list[Lease] = []
        #: the nodes that are off and could be booted (the node power states'; none without)
        self.boots: BootableNodes = boots if boots is not None else AllNodesOn()
        #: those nodes, and the earliest start on each (the states' dict, kept up to date)
        self.bootable: Mapping[int, float] = self.boots.bootable
        #: sets a lease's DVFS level and stretch when it arrives (with a power model)
        self.operating_point = operating_point
        #: the site's power cap, if it has one: plans are placed only where it has room
        self.power = power
        #: boots planned ahead on off nodes (when-planned, no cap): lifted to move a plan
        self.planned_boots = planned_boots
        #: gives arriving leases their first allocation (with an allocation policy)
        self.malleability = allocator
        if allocator is not None:
            allocator.bind(self)   # (it resizes leases through this scheduler)
        self._what_if_memo: tuple[tuple, tuple[int | None, float, float] | None] | None = None
        self._site_max: dict[Any, int] = {}
        self._restoring = False

    @property
    def boot_until(self) -> float:   # (transitional: read ``self.boots.boot_until``)
        return self.boots.boot_until

    @property
    def backfilling(self) -> str:
        """The backfilling mode (of :attr:`settings`)."""
        return self.settings.backfilling

    @property
    def reevaluation(self) -> str:
        """The re-evaluation mode that runs (``auto`` resolved)."""
        return self.reeval.mode

    def active_leases(self) -> list[Lease]:
        """Every lease that is not finished: held, queued, planned or running."""
        return [*self.held.values(), *self.queue, *self.future.values(), *self.running.values()]

    @property
    def idle(self) -> bool:
        return not (self.held or self.queue or self.future or self.running)

    def submit(self, lease: Lease, now: float) -> None:
        """A lease arrives: admission, pricing, then the queue or its own slot."""
        self._emit_lease("lease_submitted", lease, now)
        table = self.table
        too_big = self.oversize_reason(lease) or (
            table.counted and (table.refuses(lease)   # type: ignore[attr-defined]
                               or self._uncounted_ar(lease)))
        if too_big:
            self.reject(lease, now, too_big)
            return
        reason = self.admission.admit(lease, now)
        if reason:
            self.reject(lease, now, reason)
            return
        if self.operating_point is not None:
            reason = self.operating_point(lease, now)
            if reason:
                self.reject(lease, now, reason)
                return
        if self.malleability is not None:
            reason = self.malleability.arrived(lease, now)
            if reason:
                self.reject(lease, now, reason)
                return
        if self.power is not None:
            reason = self.power.refuses(lease)
            if reason:
                self.reject(lease, now, reason)
                return
        lease.price = self.pricing.price(lease, now)
        most = lease.max_price
        if USER_RATE in lease.extra and hasattr(self.pricing, "users_maximum"):
            most = self.pricing.users_maximum(lease)     # Haizea 1.1's, at the user's rate
        if most is not None and lease.price > most:
            self.reject(lease, now, f"rejected by the user: price {lease.price:g} is above "
                                    f"the maximum {most:g}")
            return
        kind = lease.type
        if kind is LT.BEST_EFFORT:
            if self.queue_policy.hold(lease, now):
                self._move(lease, S.HELD, now)
                self.held[lease.id] = lease
            else:
                self._enqueue(lease, now)
        elif kind is LT.IMMEDIATE:
            self._schedule_immediate(lease, now)
        elif kind is LT.ADVANCE_RESERVATION:
            self._schedule_ar(lease, now)
        else:
            self._schedule_deadline(lease, now)

    def _uncounted_ar(self, lease: Lease) -> str:
        """Why a table that counts VMs cannot take advance reservation ``lease`` ('' if it
        can): one that may preempt, or let a lease run in front of it and suspend, moves
        memory images of particular nodes."""
        if lease.type is not LT.ADVANCE_RESERVATION or (
                self.settings.suspension == "none"
                and (self.preemption is None or self.preemption.preempts_nothing)):
            return ""
        return ("an advance reservation that may preempt or suspend leases needs placement "
                "= when-planned (or policy-preemption = no-preemption and suspension = none)")

    def what_if(self, lease: Lease, now: float, level: int | None = None
                ) -> tuple[int | None, float, float] | None:
        """Where ``lease`` would be planned if it arrived now, changing nothing: its DVFS
        level and its first reservation's start and end, at ``level`` if given, else at the
        level the site's operating-point policy picks. None if the site cannot take it: too
        large, or no slot that ends by its deadline (an immediate lease: no slot now; an
        advance reservation: its interval is not free). Preemption and moving other leases
        are not tried."""
        if self.oversize_reason(lease):
            return None
        saved = lease.level, lease.stretch
        try:
            if self.operating_point is not None:
                reason = (self.operating_point(lease, now) if level is None
                          else self.operating_point.set_level(lease, level))
                if reason:
                    return None
            length = self.length(lease)
            after = now if lease.start_request is None else max(now, lease.start_request)
            key = (lease.id, lease.type, lease.level, length, after, lease.deadline,
                   self.table.version)
            if self._what_if_memo is not None and self._what_if_memo[0] == key:
                return self._what_if_memo[1]   # asked again at once (an operating point's try)
            not_after: float | None = None
            if lease.type is LT.IMMEDIATE or lease.type is LT.ADVANCE_RESERVATION:
                not_after = after
            if lease.deadline is not None:
                latest = lease.deadline - length
                not_after = latest if not_after is None else min(not_after, latest)
                if latest < after:
                    return None
            answer: tuple[int | None, float, float] | None
            if (self.power is None and len(lease.vms.counts) == 1
                    and getattr(self.host_selection, "orders_every_node", False)):
                # identical VMs on any nodes: the table's fit is exact, no mapper needed
                start = self.table.earliest_fit(lease.vms, length, after, not_after=not_after)
                answer = None if start is None else (lease.level, start, start + length)
            else:
                res = self._find_slot(lease, length, after, not_after)
                answer = None if res is None else (lease.level, res.start, res.end)
            self._what_if_memo = (key, answer)
            return answer
        finally:
            lease.level, lease.stretch = saved

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
                most = self._site_max[key] = self._fits_per_node(demand.vectors[0]).sum()
            if demand.count <= most:
                return ""
            return (f"larger than the site: {demand.count} VMs requested, the site can host "
                    f"at most {most:g} of this size")
        # Fail fast before placing VM by VM (50 sets of 1,000,000 VMs took 98 CPU-s and 7.7 GB
        # in the mapper): no node holds more VMs than fit of its smallest shape, and each set
        # alone must fit the site.
        per_shape = np.array([self._fits_per_node(v) for v in demand.vectors])
        for count, fits in zip(demand.counts, per_shape):
            if count > fits.sum():
                return (f"larger than the site: {count} VMs of one node set requested, the "
                        f"site can host at most {fits.sum():g} of that size")
        slots = per_shape.max(axis=0).sum()
        if demand.count > slots:
            return (f"larger than the site: {demand.count} VMs requested, the site can host "
                    f"at most {slots:g} of its smallest size")
        if place_on(self.table.capacity, demand, np.arange(len(self.table.capacity))) is None:
            return "larger than the site: its VMs cannot all be placed even on empty nodes"
        return ""

    def _fits_per_node(self, vector: np.ndarray) -> np.ndarray:
        """How many VMs of ``vector`` each empty node holds (inf for a VM needing nothing)."""
        cap = self.table.capacity
        pos = vector > 0
        if not pos.any():
            return np.full(len(cap), math.inf)
        return np.floor((cap[:, pos] / vector[pos]).min(axis=1) + 1e-9)

    def refuse(self, lease: Lease, now: float, reason: str) -> None:
        """A lease arrives and is refused before any admission (a meta-scheduler found no
        site for it): the hooks see it submitted, then rejected with ``reason``."""
        self._emit_lease("lease_submitted", lease, now)
        self.reject(lease, now, reason)

    def reject(self, lease: Lease, now: float, reason: str) -> None:
        if self._restoring:   # it was accepted before the restart: it fails, with the reason
            lease.reason = f"could not be planned again after a restart: {reason}"
            lease.end = now
            self._move(lease, S.FAILED, now)
            self._emit_lease("lease_ended", lease, now)
            return
        lease.reason = reason
        self._move(lease, S.REJECTED, now)
        self._emit_lease("lease_rejected", lease, now)

    def _move(self, lease: Lease, state: LeaseState, now: float) -> None:
        """Change ``lease``'s state (the state machine checks the move) and tell the hooks."""
        old = lease.state
        if state in TRANSITIONS[old]:   # (Lease.transition's test, without the call)
            lease.state = state
        else:
            lease.transition(state)   # raises IllegalTransition
        if "lease_state_changed" not in self._muted:
            self._emit("lease_state_changed", lease=lease, old=old, now=now)

    def length(self, lease: Lease) -> float:
        """How long a reservation for the rest of ``lease`` lasts (its remaining work, stretched
        by its DVFS level, plus the shutdown; an advance reservation's interval is what it asked
        for)."""
        if lease.type is LT.ADVANCE_RESERVATION:
            return lease.requested_duration
        # (remaining_requested and shutdown_of written out: a few calls per lease and cycle)
        remaining = lease.requested_duration - lease.work_done
        settings = self.settings
        if settings.shutdown_per_vm:
            return remaining * lease.stretch + (settings.shutdown
                                                + settings.shutdown_per_vm * lease.vms.count)
        return remaining * lease.stretch + settings.shutdown

    def shutdown_of(self, lease: Lease) -> float:
        """How long shutting ``lease``'s VMs down takes."""
        settings = self.settings
        if settings.shutdown_per_vm:
            return settings.shutdown + settings.shutdown_per_vm * lease.vms.count
        return settings.shutdown

    def work_end(self, lease: Lease, start: float) -> float:
        """When the lease, running from ``start``, really ends (work, then shutdown)."""
        # (Lease.remaining_actual and remaining_requested written out: once per start)
        requested, actual = lease.requested_duration, lease.actual_duration
        remaining = (requested if actual is None or requested < actual
                     else actual) - lease.work_done   # (min(actual, requested), as Lease's)
        work = remaining * lease.stretch
        shutdown = self.shutdown_of(lease)
        if not self.settings.shutdown_after_early_end and remaining < requested - lease.work_done:
            shutdown = 0.0   # Haizea: a lease whose VMs end early ends then
        if (lease.type is LT.ADVANCE_RESERVATION
                and work + shutdown >= lease.requested_duration):
            return start + lease.requested_duration   # its interval's end, exactly
        # summed as length() is: a run of the whole request ends exactly with its reservation
        return start + (work + shutdown)

    # The scheduler's concerns, one module each; their functions are this class's methods.

    # the scheduling cycle, the queue and backfilling (queue.py)
    cycle = queue.cycle
    release_all_held = queue.release_all_held
    _release = queue._release
    _enqueue = queue._enqueue
    _requeue = queue._requeue
    _dequeue = queue._dequeue
    _backfill_counted = queue._backfill_counted
    _may_reserve = queue._may_reserve
    _process_queue = queue._process_queue
    _backfill_now = queue._backfill_now
    _schedule = queue._schedule
    _run_until_a_reservation = queue._run_until_a_reservation
    _start_when_booted = queue._start_when_booted

    # leases with a slot of their own (reservations.py)
    _schedule_immediate = reservations._schedule_immediate
    _schedule_deadline = reservations._schedule_deadline
    _schedule_ar = reservations._schedule_ar
    _make_room = reservations._make_room

    # preemption (preemption.py)
    _victims = preemption._victims
    _preempt = preemption._preempt

    # suspension, resumption, migration (suspension.py)
    _can_suspend = suspension._can_suspend
    _begin_suspension = suspension._begin_suspension
    _resumption_plan = haizea_resumption.resumption_plan   # (ours unless Haizea's model)
    _resumption_plan_after = suspension._resumption_plan_after
    _migrated = suspension._migrated

    # re-evaluation after early ends (reevaluation.py; Haizea's re-plan in replan.py)
    _replan_future = replan._replan_future
    _replan = replan._replan
    _move_earlier = moving._move_earlier
    _move_resumption_earlier = moving._move_resumption_earlier

    # events of planned and running leases, cancellation, failure (lifecycle.py)
    segment_started = lifecycle.segment_started
    segment_ended = lifecycle.segment_ended
    work_finished = lifecycle.work_finished
    _finish = lifecycle._finish
    untie_ended = lifecycle.untie_ended
    cancel = lifecycle.cancel
    fail = lifecycle.fail
    _end_early = lifecycle._end_early

    # resizing a running malleable lease (resize.py)
    resize = resize.resize

    # restore after a daemon restart (restore.py)
    restore_running = restore.restore_running
    restore_planned = restore.restore_planned
    restore_queued = restore.restore_queued

    # placing plans and adopting them (placing.py)
    _place_at = placing._place_at
    _pin = placing._pin
    _find_slot = placing._find_slot
    _commit = placing._commit
    _refused_plan = placing._refused_plan
    _start_at_once = placing._start_at_once
    _adopt = placing._adopt
