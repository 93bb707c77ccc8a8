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

The scheduler composes collaborators, each owning its own state: the wait queue
(``WaitQueue``) and the cycle over it with backfilling (``Backfiller``, queue.py, which owns the
held leases), the plan book (``PlanBook``), placing and adopting plans (``Placer``,
placing.py), leases with a slot of their own (``OwnSlots``, reservations.py), re-evaluation
(``Reevaluator``, with ``EarlierMoves`` and ``Replanner``), the leases' events (``Lifecycle``,
which owns the ended leases) and restoring after a daemon restart (``Restorer``). Suspension
and resumption (``Suspender``, suspension.py; Haizea's model in haizea_resumption.py),
preemption (``Preemptor``), deadline leases preempting (``DeadlinePreemptor``) and resizing
(``Resizer``) are made together by ``interruptions.compose``. Image transfers
(``ImageTransfers``, planned by ``TransferPlanner``) and Haizea's planning (``HaizeaPlanner``
with its ``HaizeaMapper``, haizea_asap.py) are collaborators too, made in ``_compose``.
"""


from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import Timeline
from lease_manager.kernel.extra_attributes import USER_RATE
from lease_manager.kernel.lease import TRANSITIONS, Lease, LeaseState, LeaseType
from lease_manager.kernel.scheduler import replan
from lease_manager.kernel.scheduler.haizea_asap import HaizeaMapper, HaizeaPlanner
from lease_manager.kernel.scheduler.image_transfer import ImageTransfers, TransferPlanner
from lease_manager.kernel.scheduler.interruptions import compose as compose_interruptions
from lease_manager.kernel.scheduler.lifecycle import Lifecycle
from lease_manager.kernel.scheduler.placing import Placer
from lease_manager.kernel.scheduler.plan_book import PlanBook
from lease_manager.kernel.scheduler.queue import Backfiller
from lease_manager.kernel.scheduler.reevaluator import Reevaluator
from lease_manager.kernel.scheduler.reservations import OwnSlots
from lease_manager.kernel.scheduler.restore import Restorer
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
from lease_manager.kernel.scheduler.site_size import SiteSize
from lease_manager.kernel.scheduler.wait_queue import WaitQueue
from lease_manager.kernel.scheduler.what_if import WhatIf

if TYPE_CHECKING:
    from lease_manager.kernel.malleable import Allocation
    from lease_manager.kernel.policy_protocols import (
        AdmissionProtocol,
        HostSelectionProtocol,
        PreemptionProtocol,
        PricingProtocol,
        QueueProtocol,
    )
    from lease_manager.kernel.slottable import Reservation, SlotTable

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
        #: the plans that have not started, those counting against backfilling, and the
        #: advance reservations' (their one owner)
        self.plans = PlanBook()
        # collaborators: preemption, suspension, resize
        self.suspender, self.preemptor, self.deadline_preemptor, self.resizer = \
            compose_interruptions(self)
        #: leases whose plan has not started yet, by id, in scheduling order (a view)
        self.future: Mapping[int, Lease] = self.plans.future
        #: leases running, suspending or resuming, by id
        self.running: dict[int, Lease] = {}
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
        self._compose()   # the scheduler's parts (collaborators), each with its own state
        if allocator is not None:
            allocator.bind(self)   # (it resizes leases through this scheduler, once built)

    def _compose(self) -> None:
        """Make the scheduler's parts. The engine's calls, and the calls the parts make of
        one another on the per-lease path, are the parts' bound methods set here once (no
        extra attribute hop per lease)."""
        #: its leases' events: segments start and end, work finishes, leases are cancelled
        #: or fail; it owns the leases that ended (the engine's calls go straight to it)
        self.lifecycle = life = Lifecycle(self)
        self.segment_started, self.segment_ended = life.segment_started, life.segment_ended
        self.work_finished, self.untie_ended = life.work_finished, life.untie_ended
        self._finish = life.finish   # (the name the other parts call it by, in one hop)
        #: places plans and adopts them; the other parts call its methods by the names
        #: below, set once here (no extra attribute hop on the per-lease path)
        self.placer: Placer = Placer(self)
        placer = self.placer
        self._place_at, self._find_slot = placer.place_at, placer.find_slot
        self._commit, self._adopt = placer.commit, placer.adopt
        self._refused_plan, self._start_at_once = placer.refused_plan, placer.start_at_once
        self._pin = placer.pin
        #: Haizea's planning of best-effort leases (haizea_asap.py), and planning with disk
        #: images sent first (image_transfer.py; None without image transfers)
        self.haizea_planner: HaizeaPlanner = HaizeaPlanner(self, HaizeaMapper(
            self.table, self.table_view, self.host_selection, self.settings))
        self.transfer_planner: TransferPlanner | None = None
        if self.preparation is not None:
            self.transfer_planner = TransferPlanner(self, self.preparation,
                                                    self.haizea_planner, self.settings)
        #: the cycle, the held and queued leases, backfilling (the engine's calls go straight
        #: to it; ``_requeue`` is preemption's)
        self.backfiller: Backfiller = Backfiller(self)
        backfiller = self.backfiller
        #: HELD leases (held back by the queue policy), by id (a view of the backfiller's)
        self.held: Mapping[int, Lease] = backfiller.held
        self.cycle, self.release_all_held = backfiller.cycle, backfiller.release_all_held
        self._requeue = backfiller.requeue   # (the name preemption calls it by, in one hop)
        #: immediate, advance-reservation and deadline leases: a slot of their own at once
        self.own_slots = OwnSlots(self)
        #: restoring leases after a daemon restart (restore.py)
        self.restorer = Restorer(self)
        #: whether a lease could ever fit the empty site (asked as each one arrives)
        self.site_size = SiteSize(self.table)
        self.oversize_reason = self.site_size.oversize_reason
        #: where a lease would be planned, changing nothing (:meth:`WhatIf.__call__
        #: <lease_manager.kernel.scheduler.what_if.WhatIf.__call__>`)
        self.what_if = WhatIf(self)

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
        counted = self.table.counting()
        too_big = self.oversize_reason(lease) or (
            "" if counted is None else counted.refuses(lease) or self._uncounted_ar(lease))
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
                self.backfiller.hold(lease, now)
            else:
                self.backfiller.enqueue(lease, now)
        elif kind is LT.IMMEDIATE:
            self.own_slots.immediate(lease, now)
        elif kind is LT.ADVANCE_RESERVATION:
            self.own_slots.advance(lease, now)
        else:
            self.own_slots.deadline(lease, now)

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

    def refuse(self, lease: Lease, now: float, reason: str) -> None:
        """A lease arrives and is refused before any admission (a meta-scheduler found no
        site for it): the hooks see it submitted, then rejected with ``reason``."""
        self._emit_lease("lease_submitted", lease, now)
        self.reject(lease, now, reason)

    def reject(self, lease: Lease, now: float, reason: str) -> None:
        if self.restorer.restoring:   # accepted before the restart: it fails, with the reason
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

    # The engine's, the daemon's and plugins' calls that the scheduler's parts answer
    # (preemption, suspension and resizing are made in interruptions.py; the rest in
    # _compose).

    def cancel(self, lease: Lease, now: float, reason: str = "cancelled") -> None:
        """Cancel ``lease`` in whatever state it is (:meth:`Lifecycle.cancel
        <lease_manager.kernel.scheduler.lifecycle.Lifecycle.cancel>`)."""
        self.lifecycle.cancel(lease, now, reason)

    def fail(self, lease: Lease, now: float, reason: str) -> None:
        """``lease`` failed at ``now`` (:meth:`Lifecycle.fail
        <lease_manager.kernel.scheduler.lifecycle.Lifecycle.fail>`)."""
        self.lifecycle.fail(lease, now, reason)

    # resizing a running malleable lease (resize.py)
    def resize(self, lease: Lease, now: float, allocation: Allocation, *,
               migration_time: float = 0.0, migration_energy: float = 0.0) -> str:
        """Give running malleable ``lease`` ``allocation`` from ``now`` on; return why not
        (empty if done). See :meth:`~lease_manager.kernel.scheduler.resize.Resizer.resize`."""
        return self.resizer.resize(lease, now, allocation, migration_time=migration_time,
                                   migration_energy=migration_energy)

    # restore after a daemon restart (restore.py's Restorer)
    def restore_running(self, lease: Lease, vm_nodes: tuple[int, ...],
                        now: float) -> Reservation:
        """:meth:`Restorer.running <lease_manager.kernel.scheduler.restore.Restorer.running>`:
        take back a lease found running after a restart."""
        return self.restorer.running(lease, vm_nodes, now)

    def restore_planned(self, lease: Lease, now: float) -> None:
        """:meth:`Restorer.planned`: plan again a lease accepted before a restart."""
        self.restorer.planned(lease, now)

    def restore_queued(self, lease: Lease, image_nodes: tuple[int, ...] = ()) -> None:
        """:meth:`Restorer.queued`: queue a lease queued (or held) before a restart."""
        self.restorer.queued(lease, image_nodes)
