"""The allocation policy's decisions, carried out: a per-run plugin (``lease_manager.malleable``)
present when ``[malleable] policy-allocation`` names a policy.

An arriving lease asks the policy for its first allocation (the scheduler's ``malleability``
call, before pricing). At the start of every scheduling cycle in which a malleable lease
arrived or ended, an epoch began, or the policy's own next event came, the policy gives new
allocations for running leases; they are carried out before the queue is processed, the ones
that need fewer resources first so that the others find the room. A decision the slot table
cannot fit is refused and counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.malleable import Allocation, make_malleable
from lease_manager.observers.leases_csv import LeaseColumns, format_field

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.scheduler.seams import Resizing
    from lease_manager.policies import AllocationPolicy

#: the columns the run's ``leases.csv`` gets (:meth:`Reallocation.lease_columns`)
LEASE_COLUMNS = ("resizes", "allocations", "work_single_server")


class Reallocation:
    """Asks an allocation policy and resizes leases as it says (see the module docstring)."""

    def __init__(self, policy: AllocationPolicy, *, epoch: float, migration_time: float,
                 migration_energy: float, origin: float = 0.0) -> None:
        """Built before the scheduler it serves, which is given it (``allocator=``) and
        binds itself to it (:meth:`bind`)."""
        if migration_energy > 0 and migration_time <= 0:
            raise ValueError("a migration energy needs a migration time above 0 to be drawn "
                             "over")
        if not epoch > 0:
            raise ValueError("the epoch must be above 0 seconds")
        self._scheduler: Resizing | None = None
        self.policy = policy
        self.epoch = epoch
        self.migration_time = migration_time
        self.migration_energy = migration_energy
        self.origin = origin
        self.next_epoch = origin
        self.now = origin
        self._due: set[str] = set()
        self.malleable = 0
        self.resizes = 0
        self.refused = 0
        self.decisions = 0
        self.migration_joules = 0.0

    @property
    def scheduler(self) -> Resizing:
        """The scheduler served (once bound)."""
        assert self._scheduler is not None, "the scheduler binds its allocator when built"
        return self._scheduler

    def bind(self, scheduler: Resizing) -> None:
        """Serve ``scheduler``: its constructor calls this, once (the scheduler asks this
        plugin about arrivals; this plugin resizes leases through the scheduler)."""
        if self._scheduler is not None and self._scheduler is not scheduler:
            raise ValueError("a reallocation plugin serves one scheduler")
        self._scheduler = scheduler

    # ------------------------------------------------------------------------ arrivals
    def arrived(self, lease: Lease, now: float) -> str:
        """The scheduler's call for an arriving lease."""
        allocation = self.policy.initial(lease, now)
        if allocation is None:
            return ""
        if not isinstance(allocation, Allocation):
            raise TypeError(f"allocation policy {self.policy.name!r} returned "
                            f"{allocation!r}, not an Allocation")
        make_malleable(lease, allocation)
        reason = self.scheduler.oversize_reason(lease)
        if reason:
            return reason
        self.malleable += 1
        self._due.add("arrival")
        return ""

    @hookimpl
    def lease_started(self, ctx: RunContext, lease: Lease, now: float) -> None:
        m = lease.malleable
        if m is None:
            return
        res = lease.reservations[0]
        m.segments.setdefault(res.id, (m.rate, res.start))
        m.history.append((now, len(res.nodes), lease.vms.count, m.rate))

    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if lease.malleable is not None:
            self._due.add("end")

    # ------------------------------------------------------------------------ decisions
    @hookimpl
    def scheduling_cycle_start(self, ctx: RunContext, now: float) -> None:
        self.step(now)

    def step(self, now: float) -> None:
        """Ask the policy, if something calls for it, and carry its decisions out."""
        self.now = now
        reasons = self._due
        self._due = set()
        if now >= self.next_epoch:
            reasons.add("epoch")
            passed = math.floor((now - self.origin) / self.epoch) + 1
            self.next_epoch = self.origin + passed * self.epoch
        if self.policy.next_event(now) <= now:
            reasons.add("policy")
        if not reasons:
            return
        self.apply(self.policy.reallocate(now, frozenset(reasons)), now)

    def apply(self, decisions: Iterable[tuple[Lease, Allocation]], now: float) -> int:
        """Carry out ``decisions`` (those needing fewer resources first); return how many
        were refused."""
        todo: list[tuple[float, int, Lease, Allocation]] = []
        for lease, allocation in decisions:
            m = lease.malleable
            if m is None:
                raise ValueError(f"allocation policy {self.policy.name!r} resized lease "
                                 f"{lease.id}, which is not malleable")
            if (allocation.rate == m.rate and allocation.vms.count == lease.vms.count
                    and (allocation.vms.vectors == lease.vms.vectors).all()):
                continue
            grows = float((allocation.vms.total - lease.vms.total).sum())
            todo.append((grows, len(todo), lease, allocation))
        refused = 0
        for _, _, lease, allocation in sorted(todo, key=lambda d: d[:2]):
            self.decisions += 1
            before = lease.malleable.migration_joules if lease.malleable else 0.0
            reason = self.scheduler.resize(lease, now, allocation,
                                           migration_time=self.migration_time,
                                           migration_energy=self.migration_energy)
            if reason:
                refused += 1
            else:
                self.resizes += 1
                if lease.malleable is not None:
                    self.migration_joules += lease.malleable.migration_joules - before
        self.refused += refused
        return refused

    def next_wake(self) -> float:
        """The next epoch or policy event (the engine's soft wake: it counts only while
        something else is still to come)."""
        return min(max(self.next_epoch, self.now), self.policy.next_event(self.now))

    # -------------------------------------------------------------------------- outputs
    @staticmethod
    def lease_values(lease: Lease) -> tuple[Any, ...]:
        """The lease's ``leases.csv`` values for :data:`LEASE_COLUMNS`."""
        m = lease.malleable
        if m is None:
            return (0, "", "")
        history = ";".join(f"{format_field(t)}:{n}x{v}" for t, n, v, _ in m.history)
        return (m.resizes, history, format_field(m.single_server(lease.run_duration)))

    @hookimpl
    def lease_columns(self, ctx: RunContext) -> list[LeaseColumns]:
        """:data:`LEASE_COLUMNS`: after the core's (this plugin is registered after the
        run's others, so pluggy calls it first among them)."""
        return [LeaseColumns(LEASE_COLUMNS, self.lease_values)]

    @hookimpl
    def collect_summary(self, ctx: RunContext) -> dict[str, Any]:
        return {"malleable_leases": self.malleable, "resizes": self.resizes,
                "resizes_refused": self.refused, "migration_joules": self.migration_joules}
