"""Leases: what a user asks for (type, virtual machines, times) and the state it is in.

The state machine is explicit: :data:`TRANSITIONS` lists every legal move and
:meth:`Lease.transition` raises :class:`IllegalTransition` on any other.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lease_manager.errors import IllegalTransition

if TYPE_CHECKING:
    from lease_manager.kernel.malleable import Malleability
    from lease_manager.kernel.slottable import Reservation


class LeaseType(enum.Enum):
    """The four kinds of lease Haizea knows."""

    BEST_EFFORT = "best-effort"          # queued, started as soon as resources allow
    ADVANCE_RESERVATION = "advance-reservation"  # exact start time, or rejected
    IMMEDIATE = "immediate"              # now, or rejected; never queued
    DEADLINE = "deadline"                # must finish by a deadline, start is flexible

    __hash__ = object.__hash__   # (as LeaseState's)


class LeaseState(enum.Enum):
    # members are singletons compared by identity: hash them as objects, in C (Enum's own
    # __hash__ is Python code, and states are hashed at every transition)
    __hash__ = object.__hash__

    NEW = "new"                  # submitted, not yet through admission
    HELD = "held"                # accepted, held back by the queue mechanism (thesis: Prepending)
    QUEUED = "queued"            # in the wait queue (thesis: Pending)
    SCHEDULED = "scheduled"      # holds a reservation that starts in the future
    ACTIVE = "active"            # running
    SUSPENDING = "suspending"
    SUSPENDED = "suspended"      # suspended, waiting to be resumed
    RESUMING = "resuming"
    MIGRATING = "migrating"      # a suspended lease's memory image moving to other nodes
    DONE = "done"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES


S = LeaseState
TERMINAL_STATES = frozenset({S.DONE, S.REJECTED, S.CANCELLED, S.FAILED})

#: Every legal state change. Any state that is not terminal may also go to CANCELLED.
TRANSITIONS: dict[LeaseState, frozenset[LeaseState]] = {
    # NEW -> FAILED: an accepted lease that a restarted daemon could not plan again.
    S.NEW: frozenset({S.REJECTED, S.HELD, S.QUEUED, S.SCHEDULED, S.FAILED}),
    S.HELD: frozenset({S.QUEUED}),
    # QUEUED -> FAILED: a suspended lease waiting to resume lost its memory image.
    S.QUEUED: frozenset({S.SCHEDULED, S.REJECTED, S.FAILED}),
    # SCHEDULED -> QUEUED: the reservation was given up before it started (requeued).
    # SCHEDULED -> RESUMING / MIGRATING: a suspended lease's planned resumption begins.
    S.SCHEDULED: frozenset({S.ACTIVE, S.QUEUED, S.RESUMING, S.MIGRATING, S.FAILED}),
    # ACTIVE -> QUEUED: preempted without suspension, requeued and losing its work.
    # ACTIVE -> SCHEDULED: preempted in the plan before it started its next segment.
    S.ACTIVE: frozenset({S.DONE, S.SUSPENDING, S.QUEUED, S.FAILED}),
    S.SUSPENDING: frozenset({S.SUSPENDED, S.FAILED}),
    S.SUSPENDED: frozenset({S.RESUMING, S.MIGRATING, S.QUEUED, S.FAILED}),
    S.MIGRATING: frozenset({S.SUSPENDED, S.RESUMING, S.FAILED}),
    S.RESUMING: frozenset({S.ACTIVE, S.FAILED}),
}
TRANSITIONS = {
    state: targets | ({S.CANCELLED} if not state.terminal else frozenset())
    for state, targets in TRANSITIONS.items()
}
for _state in TERMINAL_STATES:
    TRANSITIONS[_state] = frozenset()


@attrs.frozen(eq=False)
class VMRequest:
    """The virtual machines a lease asks for: groups of identical VMs.

    ``counts[g]`` VMs each need ``vectors[g]`` (one entry per resource type). SWF leases have one
    group; Haizea's LWF ``<node-set>`` elements each give one.
    """

    #: how many VMs each group has
    counts: tuple[int, ...]
    #: each group's VM: its amount of every resource type (shape: groups x resource types)
    vectors: np.ndarray

    @classmethod
    def uniform(cls, count: int, vector: Sequence[float] | np.ndarray) -> VMRequest:
        v = np.asarray(vector, dtype=float).reshape(1, -1)
        v.flags.writeable = False
        return cls((int(count),), v)

    #: ``vectors[0].tobytes()`` when all VMs have one shape, else None (for caches)
    shape_key: bytes | None = attrs.field(init=False, default=None)
    #: total number of VMs
    count: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        if len(self.counts) != self.vectors.shape[0]:
            raise ValueError("one count per VM group is needed")
        if any(c <= 0 for c in self.counts):
            raise ValueError("a lease needs at least one VM in each group")
        if len(self.counts) == 1:
            object.__setattr__(self, "shape_key", self.vectors[0].tobytes())
        object.__setattr__(self, "count", sum(self.counts))

    @property
    def total(self) -> np.ndarray:
        """Total capacity over all VMs."""
        return (np.asarray(self.counts, dtype=float)[:, None] * self.vectors).sum(axis=0)

    def per_vm(self) -> np.ndarray:
        """One row per VM, groups in order."""
        return np.repeat(self.vectors, self.counts, axis=0)


@attrs.define(eq=False, repr=False, slots=True)
class Lease:
    """A request for resources over time, and what became of it.

    Times are seconds on the run's clock (a simulation starts at 0 = the trace start).
    ``requested_duration`` is what the scheduler reserves; ``actual_duration`` is how long the
    work really runs when known (a simulation knows it; the hpc paradigm reserves the request and
    ends the lease at the actual).
    """

    #: the lease's number, unique in its run
    id: int
    #: best-effort, advance reservation, immediate or deadline
    type: LeaseType
    #: when the lease was asked for
    submit: float
    #: the VMs it asks for (groups of identical VMs)
    vms: VMRequest
    #: how long its reservation lasts (seconds of work at the highest DVFS level; inf: until
    #: cancelled)
    requested_duration: float
    #: how long the work really runs, when known (None: the request)
    actual_duration: float | None = None
    #: exact start for advance reservations, ``None`` otherwise
    start_request: float | None = None
    #: the time a deadline lease must end by (None: no deadline)
    deadline: float | None = None
    #: the id the lease had in its source (SWF job number, LWF lease id)
    source_id: str | None = None
    #: free-form attributes (LWF ``<extra>``, annotations such as stress-on sets)
    extra: dict[str, Any] = attrs.field(factory=dict)
    #: a user's maximum price, if any (see pricing)
    max_price: float | None = None
    #: where the request came from, for messages (``trace.swf:123``)
    origin: str | None = None

    #: where the lease is in its life (see ``TRANSITIONS``)
    state: LeaseState = LeaseState.NEW
    #: reservations currently planned or running, in time order
    reservations: list[Reservation] = attrs.field(factory=list)
    #: every reservation the lease actually used, as it ended (for accounting and invariants)
    allocations: list[Reservation] = attrs.field(factory=list)
    #: seconds of work done so far, at the highest DVFS level (a suspended lease resumes with
    #: the rest)
    work_done: float = 0.0
    #: the DVFS level the lease runs at (index into the power model's levels, lowest first;
    #: None: the highest), chosen by the operating-point policy
    level: int | None = None
    #: seconds the lease takes per second of work at the highest level (Garg et al.'s
    #: T(f) / T(fmax) = gamma x (fmax / f - 1) + 1; 1 at the highest level)
    stretch: float = 1.0
    #: the site the lease was sent to, in a run with several (None: the run has one)
    site: str | None = None
    #: the node of each VM while the lease is suspended (where its memory images are)
    image_nodes: tuple[int, ...] = ()
    #: how many times the lease lost its resources to another lease
    preemptions: int = 0
    #: how many of those preemptions suspended it (the others requeued it)
    suspensions: int = 0
    #: seconds spent suspending, suspended and resuming
    time_suspended: float = 0.0
    #: when the current suspension began (None when the lease is not suspended)
    suspended_at: float | None = None
    #: first start promised to the lease since it last entered the queue
    promised_start: float | None = None
    #: when it really started (first)
    start: float | None = None
    #: when it ended
    end: float | None = None
    #: what the pricing policy charged (with any surcharge once the lease ended)
    price: float | None = None
    #: why the lease was rejected, cancelled or failed ('' otherwise)
    reason: str = ""
    #: how a malleable lease's allocation and speed changed (None: the lease is rigid; see
    #: :mod:`lease_manager.kernel.malleable`)
    malleable: Malleability | None = None

    def holds(self, res: Reservation) -> bool:
        """Whether ``res`` is part of the lease's current plan: the test that tells a live
        timeline event from a stale one (of a plan that has since changed)."""
        return res in self.reservations   # reservations compare by identity

    def transition(self, new: LeaseState) -> None:
        """Move to ``new``; raise :class:`IllegalTransition` if the state machine forbids it."""
        if new not in TRANSITIONS[self.state]:
            raise IllegalTransition(
                f"lease {self.id}: illegal transition {self.state.value} -> {new.value}")
        self.state = new

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.submit

    @property
    def run_duration(self) -> float:
        """How long the lease's work runs once started (never more than requested)."""
        actual = self.actual_duration
        if actual is None:
            return self.requested_duration
        return min(actual, self.requested_duration)

    @property
    def remaining_requested(self) -> float:
        """Work still to reserve for (the request minus the work done)."""
        return self.requested_duration - self.work_done

    @property
    def remaining_actual(self) -> float:
        """Work still to do before the lease really ends."""
        return self.run_duration - self.work_done

    @property
    def unlimited(self) -> bool:
        return math.isinf(self.requested_duration)

    def __repr__(self) -> str:
        return (f"<Lease {self.id} {self.type.value} {self.state.value} vms={self.vms.count} "
                f"submit={self.submit} req={self.requested_duration}>")
