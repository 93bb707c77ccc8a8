"""Invariants every schedule must keep, checked independently of the slot table.

The checker sweeps what leases really held (their final allocations) through time, node by
node: no node may ever hold more than its capacity. A lease's allocations are final when it
ends; every instant before the first start of the leases still running is then final too, so
the sweep moves on as leases end and keeps only what it has not passed yet (its memory does
not grow with the trace). It also checks that no lease
starts twice without being preempted in between, that a best-effort lease that was never
preempted starts no later than the start it was first promised, that no lease starts before
the earliest start it requested, that no deadline lease completes after its deadline, and that
no lease is left
running when a run ends because nothing more was to happen (:func:`stranded`), and that a
malleable lease's allocations, at their rates, did its work exactly once.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import LeaseState, LeaseType
from lease_manager.kernel.malleable import work_of

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease

TOLERANCE = 1e-6


#: the states of a lease that holds resources and waits for an event to leave them
RUNNING_STATES = frozenset({LeaseState.ACTIVE, LeaseState.SUSPENDING, LeaseState.RESUMING,
                            LeaseState.MIGRATING})


def stranded(leases: Iterable[Lease]) -> list[str]:
    """The leases of a run that ended because no event was left to happen which are still
    running: nothing would ever have ended them (a lost event, a bug)."""
    return [f"lease {lease.id} is {lease.state.value} at the end of the run with nothing "
            f"planned to end it" for lease in leases if lease.state in RUNNING_STATES]


class InvariantViolation(AssertionError):
    """The run broke an invariant: a bug in lease_manager or in a plugin."""


class InvariantChecker:
    """A per-run plugin (``lease_manager.invariants``) watching lease hooks; :meth:`verify` at
    the end of the run."""

    def __init__(self, capacity: np.ndarray, *, only: str | None = None) -> None:
        self.capacity = capacity
        #: check only the leases of this site (a run with several), or all
        self.only = only
        self._running: set[int] = set()
        self.violations: list[str] = []
        #: what every node holds at the sweep's time, and the allocations' starts and ends
        #: not swept yet: (time, 0 end / 1 start, sequence, nodes, amounts)
        self._usage = np.zeros_like(capacity, dtype=float)
        self._limit = capacity + TOLERANCE * np.maximum(capacity, 1)
        #: every node has the same capacity (one row to compare with)
        self._uniform = bool(len(capacity)) and bool((capacity == capacity[0]).all())
        self._events: list[tuple[float, int, int, np.ndarray, np.ndarray]] = []
        self._seq = itertools.count()
        #: first start of every lease started and not ended (a heap; ended ones lazily)
        self._first_starts: list[tuple[float, int]] = []
        self._started: dict[int, float] = {}
        self._over: list[str] = []

    @hookimpl(tryfirst=True)
    def lease_started(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if self.only is not None and lease.site != self.only:
            return
        if lease.id in self._running:
            self.violations.append(f"lease {lease.id} started twice (at {now})")
        self._running.add(lease.id)
        if lease.id not in self._started:
            self._started[lease.id] = now
            heapq.heappush(self._first_starts, (now, lease.id))
        if lease.start_request is not None and now < lease.start_request - TOLERANCE:
            self.violations.append(f"lease {lease.id} started at {now}, before the earliest "
                                   f"start {lease.start_request} it requested")
        if (lease.type is LeaseType.BEST_EFFORT and lease.preemptions == 0
                and lease.promised_start is not None and now > lease.promised_start + TOLERANCE):
            self.violations.append(f"lease {lease.id} started at {now}, later than the "
                                   f"{lease.promised_start} it was promised")

    @hookimpl(tryfirst=True)
    def lease_preempted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self._running.discard(lease.id)

    @hookimpl(tryfirst=True)
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self._running.discard(lease.id)
        if self.only is not None and lease.site != self.only:
            return
        self._started.pop(lease.id, None)
        if (lease.type is LeaseType.DEADLINE and lease.state is LeaseState.DONE
                and lease.deadline is not None and lease.end is not None
                and lease.end > lease.deadline + TOLERANCE):
            self.violations.append(f"deadline lease {lease.id} ended at {lease.end}, after its "
                                   f"deadline {lease.deadline}")
        m = lease.malleable
        if m is not None and lease.state is LeaseState.DONE:
            # every single-server second of its work done once, at the rates of its
            # allocations as they really ran
            done = work_of(lease, ctx.config.get("scheduling", "shutdown-time"))
            work = m.single_server(lease.run_duration)
            if abs(done - work) > TOLERANCE * max(work, 1.0):
                self.violations.append(f"malleable lease {lease.id} did {done!r} single-server "
                                       f"seconds of work in its allocations, not {work!r}")
        for res in lease.allocations:
            if res.end < res.start:
                self.violations.append(f"an allocation of lease {lease.id} ends before it "
                                       f"starts")
                continue
            heapq.heappush(self._events, (res.start, 1, next(self._seq), res.nodes,
                                          res.amounts))
            heapq.heappush(self._events, (res.end, 0, next(self._seq), res.nodes, res.amounts))
        # every allocation not known yet starts no earlier than the first start of a lease
        # still running: the sweep may pass every instant before it
        heads = self._first_starts
        while heads and self._started.get(heads[0][1]) != heads[0][0]:
            heapq.heappop(heads)
        self._sweep(heads[0][0] if heads else math.inf)

    def _sweep(self, until: float) -> None:
        """Apply the starts and ends before ``until`` in time order (ends first at an
        instant), recording every node a start takes above its capacity."""
        events, usage = self._events, self._usage
        limit = self._limit[0] if self._uniform else None
        while events and events[0][0] < until:
            t, is_start, _, nodes, amounts = heapq.heappop(events)
            if not is_start:
                usage[nodes] -= amounts
                continue
            held = usage[nodes]
            held += amounts
            usage[nodes] = held
            over = (held > (self._limit[nodes] if limit is None else limit)).any(axis=1)
            if over.any() and len(self._over) < 10:
                for i in np.flatnonzero(over)[:10 - len(self._over)].tolist():
                    node = int(nodes[i])
                    self._over.append(f"node {node} holds {usage[node].tolist()} at time "
                                      f"{t:g}, above its capacity {self.capacity[node].tolist()}")

    def over_commitments(self) -> list[str]:
        """Sweep what is left; describe the instants a node was over-committed (at most
        ten)."""
        self._sweep(math.inf)
        return list(self._over)

    def verify(self) -> None:
        """Raise :class:`InvariantViolation` listing what went wrong, if anything did."""
        problems = self.violations + self.over_commitments()
        if problems:
            more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
            raise InvariantViolation("; ".join(problems[:10]) + more)
