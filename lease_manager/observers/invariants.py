"""Invariants every schedule must keep, checked independently of the slot table.

The checker records what each lease really held (its final allocations) and at the end sweeps
them node by node: no node may ever hold more than its capacity. It also checks that no lease
starts twice without being preempted in between, that a best-effort lease that was never
preempted starts no later than the start it was first promised, and that a malleable lease's
allocations, at their rates, did its work exactly once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import LeaseState, LeaseType
from lease_manager.kernel.malleable import work_of

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease

TOLERANCE = 1e-6


class InvariantViolation(AssertionError):
    """The run broke an invariant: a bug in lease_manager or in a plugin."""


class InvariantChecker:
    """A per-run plugin (``lease_manager.invariants``) watching lease hooks; :meth:`verify` at
    the end of the run."""

    def __init__(self, capacity: np.ndarray, *, only: str | None = None) -> None:
        self.capacity = capacity
        #: check only the leases of this site (a run with several), or all
        self.only = only
        self._nodes: list[np.ndarray] = []
        self._starts: list[np.ndarray] = []
        self._ends: list[np.ndarray] = []
        self._amounts: list[np.ndarray] = []
        self._running: set[int] = set()
        self.violations: list[str] = []

    @hookimpl(tryfirst=True)
    def lease_started(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if self.only is not None and lease.site != self.only:
            return
        if lease.id in self._running:
            self.violations.append(f"lease {lease.id} started twice (at {now})")
        self._running.add(lease.id)
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
            k = len(res.nodes)
            self._nodes.append(res.nodes)
            self._starts.append(np.full(k, res.start))
            self._ends.append(np.full(k, res.end))
            self._amounts.append(res.amounts)

    def over_commitments(self) -> list[str]:
        """Sweep all allocations per node; describe every instant a node was over-committed."""
        if not self._nodes:
            return []
        nodes = np.concatenate(self._nodes)
        starts = np.concatenate(self._starts)
        ends = np.concatenate(self._ends)
        amounts = np.concatenate(self._amounts)
        if (ends < starts).any():
            return ["an allocation ends before it starts"]
        times = np.concatenate([starts, ends])
        where = np.concatenate([nodes, nodes])
        deltas = np.concatenate([amounts, -amounts])
        is_start = np.concatenate([np.ones(len(nodes)), np.zeros(len(nodes))])
        order = np.lexsort((is_start, times, where))   # per node, by time, ends first
        usage = np.cumsum(deltas[order], axis=0)
        cap = self.capacity[where[order]]
        over = (usage > cap + TOLERANCE * np.maximum(cap, 1)).any(axis=1)
        out = []
        for i in np.flatnonzero(over)[:10].tolist():
            j = order[i]
            out.append(f"node {int(where[j])} holds {usage[i].tolist()} at time "
                       f"{times[j]:g}, above its capacity {cap[i].tolist()}")
        return out

    def verify(self) -> None:
        """Raise :class:`InvariantViolation` listing what went wrong, if anything did."""
        problems = self.violations + self.over_commitments()
        if problems:
            more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
            raise InvariantViolation("; ".join(problems[:10]) + more)
