"""The policies the scheduler asks, as it sees them: one protocol per kind it calls.

The scheduler is built with an admission, a pricing, a queue, a host-selection and
(optionally) a preemption policy, and types them with these protocols, so that the kernel
depends on nothing above it. The base classes a policy may subclass, with their defaults and
the run they serve (``self.ctx``), are in :mod:`lease_manager.policies`; each subclasses its
kind's protocol here, so mypy checks that the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.table_view import SlotTableView


class AdmissionProtocol(Protocol):
    """Decides whether a lease is accepted."""

    def admit(self, lease: Lease, now: float) -> str | None:
        """None to accept ``lease``, or the reason for rejecting it."""
        ...


class PricingProtocol(Protocol):
    """Prices a lease when it is admitted, and for the time it spent suspended."""

    def price(self, lease: Lease, now: float) -> float:
        """The price of ``lease``."""
        ...

    def surcharge(self, lease: Lease, seconds_suspended: float) -> float:
        """Added to the price when the lease ends, for its time suspending, suspended and
        resuming."""
        ...


class QueueProtocol(Protocol):
    """Orders the wait queue and may hold leases back."""

    def hold(self, lease: Lease, now: float) -> bool:
        """True to hold ``lease`` back instead of queueing it."""
        ...

    def release(self, held: Sequence[Lease], now: float) -> Iterable[Lease]:
        """The held leases to queue now (asked at the start of every scheduling cycle)."""
        ...

    def sort_key(self, lease: Lease) -> Any:
        """Position in the wait queue (smaller first); ties keep arrival order."""
        ...


class HostSelectionProtocol(Protocol):
    """Orders the nodes the mapper visits. The scheduler also reads two optional flags,
    ``orders_every_node`` and ``free_nodes_first`` (False when absent), described in
    :class:`~lease_manager.policies.HostSelectionPolicy`."""

    def order_hosts(self, lease: Lease, start: float, end: float,
                    table: SlotTableView) -> Sequence[int] | np.ndarray:
        """Node indices, best first, for placing ``lease`` over ``[start, end)``."""
        ...


class PreemptionProtocol(Protocol):
    """Which leases a lease may preempt, most preemptable first."""

    #: True for a policy that never lets a lease be preempted
    preempts_nothing: bool
    #: True: the scheduler scores with :meth:`score_at` instead of :meth:`score`
    scores_at_preemption: bool

    def score(self, preemptor: Lease, preemptee: Lease, now: float) -> float | None:
        """None if ``preemptee`` may not be preempted by ``preemptor``; otherwise a score,
        higher meaning preempted sooner."""
        ...

    def score_at(self, preemptor: Lease, preemptee: Lease, at: float,
                 estimates: tuple[float, float, float]) -> float | None:
        """:meth:`score` for a preemption at ``at`` costing ``preemptee`` the
        ``estimates`` (remaining requested time, suspend time, resume time)."""
        ...
