"""Built-in policies, and the protocol of each policy kind.

A policy is a class with ``kind`` and ``name`` class attributes, registered through the
``register_policies`` hook and instantiated per run as ``cls(ctx)``, with the run's
:class:`~lease_manager.context.RunContext`. The methods each kind must
have are those of the base classes below; subclassing them is optional.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.kernel.policy_protocols import (
    AdmissionProtocol,
    HostSelectionProtocol,
    PreemptionProtocol,
    PricingProtocol,
    QueueProtocol,
)

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.malleable import Allocation
    from lease_manager.kernel.table_view import SlotTableView
    from lease_manager.multisite import SiteView
    from lease_manager.planning.board import PlanTask, PowerBoard

#: The kinds of policy the core selects by name from the ini file.
POLICY_KINDS = ("admission", "pricing", "queue", "host-selection", "preemption", "probe",
                "annotator", "enactment", "node-power", "operating-point", "site-selection",
                "allocation", "planner")


class Policy:
    """Base of the built-in policies: keeps the run it serves."""

    kind: str = ""
    name: str = ""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx


class AdmissionPolicy(Policy, AdmissionProtocol):
    """Decides whether a lease is accepted (kind ``admission``)."""

    kind = "admission"

    def admit(self, lease: Lease, now: float) -> str | None:
        """Return None to accept ``lease``, or the reason for rejecting it."""
        raise NotImplementedError


class PricingPolicy(Policy, PricingProtocol):
    """Prices a lease when it is admitted (kind ``pricing``)."""

    kind = "pricing"

    def price(self, lease: Lease, now: float) -> float:
        """The price of ``lease`` (in the run's currency)."""
        raise NotImplementedError

    def surcharge(self, lease: Lease, seconds_suspended: float) -> float:
        """Added to the price when the lease ends, for the time it spent suspending, suspended
        and resuming (none by default)."""
        return 0.0


class QueuePolicy(Policy, QueueProtocol):
    """The queue mechanism (kind ``queue``): orders the wait queue and may hold leases back.

    A held lease is kept by the core (state HELD) until :meth:`release` returns it; the core
    releases every held lease itself if the run would otherwise end with leases held, so a
    policy cannot lose a lease.
    """

    kind = "queue"

    def hold(self, lease: Lease, now: float) -> bool:
        """True to hold ``lease`` back instead of putting it in the wait queue."""
        return False

    def release(self, held: Sequence[Lease], now: float) -> Iterable[Lease]:
        """Called at the start of every scheduling cycle: the held leases to queue now."""
        return ()

    def sort_key(self, lease: Lease) -> Any:
        """Position in the wait queue (smaller first); ties keep arrival order."""
        return (lease.submit, lease.id)


class Annotator(Policy):
    """Adds attributes to every lease read from the workload, before it is submitted (kind
    ``annotator``): synthetic workload characteristics, for instance. Random draws must come
    from ``self.ctx.rng(name)`` so that a run is reproducible from its seed."""

    kind = "annotator"
    #: True for an annotator that leaves every lease's type and VMs as they are (it adds
    #: attributes only): ``placement = auto`` may then count the run (``at-start``). One that
    #: may make deadline leases or change VM shapes keeps it ``when-planned``
    supports_placement_at_start = False

    def annotate(self, lease: Lease) -> None:
        """Set attributes of ``lease`` (usually in ``lease.extra``)."""
        raise NotImplementedError


class PreemptionPolicy(Policy, PreemptionProtocol):
    """Which leases a lease may preempt, most preemptable first (kind ``preemption``)."""

    kind = "preemption"
    #: True for a policy that never lets a lease be preempted: advance reservations can then
    #: be counted (``placement = at-start``, with ``suspension = none``)
    preempts_nothing = False
    #: True: the scheduler scores with :meth:`score_at` (at the preemption's time, with what
    #: preempting costs the preemptee) instead of :meth:`score`
    scores_at_preemption = False

    def score(self, preemptor: Lease, preemptee: Lease, now: float) -> float | None:
        """None if ``preemptee`` may not be preempted by ``preemptor``; otherwise a score,
        higher meaning preempted sooner."""
        raise NotImplementedError

    def score_at(self, preemptor: Lease, preemptee: Lease, at: float,
                 estimates: tuple[float, float, float]) -> float | None:
        """:meth:`score` for a preemption at ``at`` that would cost ``preemptee`` the
        ``estimates`` (its remaining requested time at ``at``, its suspend time, its resume
        time); asked only of policies that set :attr:`scores_at_preemption`."""
        raise NotImplementedError


class HostSelectionPolicy(Policy, HostSelectionProtocol):
    """Orders the physical hosts the mapper visits (kind ``host-selection``)."""

    kind = "host-selection"
    #: True for a policy whose order always holds every node: the core may then answer
    #: "where would this lease fit" from the slot table alone, without ordering hosts
    orders_every_node = False
    #: True for a policy that asks the table about the start instant only (what each node
    #: has free and holds then): it works with ``[scheduling] placement = at-start``, where
    #: nodes have no future plan
    supports_placement_at_start = False
    #: True for a policy whose order, on a table that counts VMs (``placement = at-start``)
    #: where every node hosts one VM at most, holds the nodes with a free slot first, in
    #: index order: the core then takes the first free nodes without asking it. A subclass
    #: that defines its own ``order_hosts`` is False unless it says otherwise
    free_nodes_first = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "order_hosts" in vars(cls) and "free_nodes_first" not in vars(cls):
            cls.free_nodes_first = False

    def order_hosts(self, lease: Lease, start: float, end: float,
                    table: SlotTableView) -> Sequence[int] | np.ndarray:
        """Node indices, best first, for placing ``lease`` over ``[start, end)``.

        Nodes left out are not used. Read the schedule through ``table``'s public queries.
        """
        raise NotImplementedError


class NodePowerPolicy(Policy):
    """When nodes are switched off (kind ``node-power``, with a ``[power]`` model).

    The core boots a node that is off in time for any lease planned on it, whatever the
    policy; the policy only picks idle nodes to switch off. The core then switches off only
    those with no lease planned on them before they could shut down and boot again.
    """

    kind = "node-power"
    #: False for a policy that never switches a node off (the core then skips idle tracking)
    switches_off = True

    def switch_off(self, idle: np.ndarray, idle_since: np.ndarray, now: float) -> Iterable[int]:
        """Of the ``idle`` nodes (on, holding nothing; idle since ``idle_since``), those to
        switch off now."""
        return ()

    def next_check(self, idle_since: float) -> float | None:
        """When to look again at a node idle since ``idle_since`` (None: no need to)."""
        return None

    def stays_on(self, now: float, next_start: float, off_seconds: float,
                 on_seconds: float) -> bool:
        """Whether an idle node the policy picked stays on all the same, the next lease planned
        on it starting at ``next_start`` (inf: none): by default when it could not shut down
        (``off_seconds``) and boot (``on_seconds``) again in time."""
        return next_start < now + off_seconds + on_seconds


class OperatingPointPolicy(Policy):
    """Chooses the DVFS level a lease runs at, when it arrives and before any reservation is
    made (kind ``operating-point``, with a ``[power]`` model). The core stretches the lease's
    reservations and run time by Garg et al.'s T(f) = T(fmax) x (gamma x (fmax/f - 1) + 1)."""

    kind = "operating-point"

    def level(self, lease: Lease, now: float) -> int:
        """The level's index, 0 being the lowest frequency (``self.ctx.power`` has them)."""
        raise NotImplementedError


class SiteSelectionPolicy(Policy):
    """Picks the site a lease goes to, when it arrives, in a run with several sites (kind
    ``site-selection``). ``sites`` are :class:`~lease_manager.multisite.SiteView` objects: a
    site's ``name``, ``table`` (queries only), ``power`` model (or None), ``config``, and its
    leases waiting (``n_waiting``, queued or held) and planned (``n_planned``)."""

    kind = "site-selection"

    def select(self, lease: Lease, sites: Sequence[SiteView], length: float,
               now: float) -> int | str:
        """The index in ``sites`` of the lease's site, or why no site may have it (the lease
        is rejected with that reason). ``length`` is how long the lease's reservation would
        last (its stretch at its DVFS level included)."""
        raise NotImplementedError

    def select_batch(self, leases: Sequence[Lease], sites: Sequence[SiteView], now: float,
                     send: Callable[[Lease, int | str], None]) -> None:
        """Decide the leases that arrived in one cycle (``[simulation]
        site-selection-cycle``), in arrival order: ``send(lease, i)`` submits a lease to site
        ``i`` at once (a deadline, immediate or advance-reservation lease's plan is then in
        the site's table for the next what-if query; a best-effort lease is in its queue,
        ``n_waiting``), and ``send(lease, reason)`` rejects it. Every lease must be sent
        once. By default each lease in turn goes where :meth:`select` says."""
        for lease in leases:
            send(lease, self.select(lease, sites, sites[0].length(lease), now))


class AllocationPolicy(Policy):
    """Decides the allocations of malleable leases (kind ``allocation``, ``[malleable]
    policy-allocation``): which arriving leases are malleable and with what VMs they start,
    and, at arrivals, ends, every epoch and the times the policy asks for, the allocation of
    every running malleable lease from now on (see :mod:`lease_manager.kernel.malleable`).
    The core carries the decisions out (shrinks first), and says how many it could not
    (``resizes_refused`` in ``summary.json``)."""

    kind = "allocation"

    def initial(self, lease: Lease, now: float) -> Allocation | None:
        """``lease`` arrives: its VMs and rate, with the ``reference_rate`` of the allocation
        its durations describe, or None to leave it rigid."""
        return None

    def reallocate(self, now: float, reasons: frozenset[str]
                   ) -> Iterable[tuple[Lease, Allocation]]:
        """New allocations from ``now`` on for running malleable leases (those left out keep
        theirs). ``reasons``: some of ``arrival``, ``end``, ``epoch`` and ``policy`` (a time
        :meth:`next_event` asked for)."""
        return ()

    def next_event(self, now: float) -> float:
        """The next time after ``now`` the policy wants to decide again for a reason of its
        own, such as a revised forecast (inf: none)."""
        return float("inf")


class Planner(Policy):
    """Plans a batch of known leases offline (kind ``planner``, ``[planning]
    policy-planner``): a set of tasks in, a plan out.

    The core gives every lease of the workload as a
    :class:`~lease_manager.planning.board.PlanTask` (length in intervals, cores, watts), in
    the workload's order, and an empty :class:`~lease_manager.planning.board.PowerBoard`: the
    platform's machines and power states on the grid, the envelope, and ``place_earliest``
    (Kassab et al.'s PlaceTask), ``candidates``, ``fits`` and ``place``. The planner returns
    the board holding its plan (this one or another, e.g. the best of several tries); a task it
    did not place is rejected. Random draws must come from ``self.ctx.rng(name)``."""

    kind = "planner"

    def plan(self, tasks: Sequence[PlanTask], board: PowerBoard) -> PowerBoard:
        raise NotImplementedError
