"""Haizea's accounting probes by their Haizea names (``[accounting] probes``).

Each records Haizea's counters as time series (``series/NAME.csv``, one row per change, the
count so far), so that a Haizea configuration's probe list works unchanged:

- ``ar``: advance reservations accepted and rejected (``ar_accepted``, ``ar_rejected``);
- ``immediate``: immediate leases accepted and rejected (``im_accepted``, ``im_rejected``);
- ``best-effort``: best-effort leases completed (``besteffort_completed``) and the queue size
  (``queue_size``: queued and held leases at the end of every scheduling cycle);
- ``lease``: leases requested, completed and rejected (``leases_requested``,
  ``leases_completed``, ``leases_rejected``);
- ``deadline``: deadline leases that met and missed their deadline (``deadlines_met``,
  ``deadlines_missed``; a rejected deadline lease counts as missed);
- ``price``: revenue so far (``revenue``, the prices of the leases that completed);
- ``cpu-utilization``: the fraction of the site's CPU in use at the end of every cycle
  (``cpu_utilization``);
- ``lease-extras``: Haizea's per-lease attributes; ``leases.csv`` holds them for every run
  (state, VMs, requested and actual durations, start, end), so this probe records nothing more.

Per-lease waiting times and slowdowns (Haizea's ``best-effort`` lease statistics) are in
``leases.csv`` and ``summary.json`` for every run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import LeaseState, LeaseType
from lease_manager.policies import Policy

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease


class _Counters(Policy):
    """A probe keeping cumulative counters, each written as a series on every change."""

    kind = "probe"
    #: (series, unit, label) of each counter
    SERIES: tuple[tuple[str, str, str], ...] = ()

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.counts = {name: 0.0 for name, _, _ in self.SERIES}
        for name, unit, label in self.SERIES:
            ctx.metrics.describe(name, unit, label)

    def add(self, name: str, now: float, amount: float = 1.0) -> None:
        self.counts[name] += amount
        self.ctx.metrics.record(name, now, self.counts[name])


class ARProbe(_Counters):
    """Haizea's ``ar`` probe."""

    name = "ar"
    SERIES = (("ar_accepted", "leases", "ARs accepted"),
              ("ar_rejected", "leases", "ARs rejected"))

    @hookimpl
    def lease_state_changed(self, ctx: RunContext, lease: Lease, old: LeaseState,
                            now: float) -> None:
        if (lease.type is LeaseType.ADVANCE_RESERVATION and old is LeaseState.NEW
                and lease.state is LeaseState.SCHEDULED):
            self.add("ar_accepted", now)

    @hookimpl
    def lease_rejected(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if lease.type is LeaseType.ADVANCE_RESERVATION:
            self.add("ar_rejected", now)


class IMProbe(_Counters):
    """Haizea's ``immediate`` probe."""

    name = "immediate"
    SERIES = (("im_accepted", "leases", "immediate leases accepted"),
              ("im_rejected", "leases", "immediate leases rejected"))

    @hookimpl
    def lease_state_changed(self, ctx: RunContext, lease: Lease, old: LeaseState,
                            now: float) -> None:
        if (lease.type is LeaseType.IMMEDIATE and old is LeaseState.NEW
                and lease.state is LeaseState.SCHEDULED):
            self.add("im_accepted", now)

    @hookimpl
    def lease_rejected(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if lease.type is LeaseType.IMMEDIATE:
            self.add("im_rejected", now)


class BEProbe(_Counters):
    """Haizea's ``best-effort`` probe."""

    name = "best-effort"
    SERIES = (("besteffort_completed", "leases", "best-effort leases completed"),
              ("queue_size", "leases", "leases in the queue"))

    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if lease.type is LeaseType.BEST_EFFORT and lease.state is LeaseState.DONE:
            self.add("besteffort_completed", now)

    @hookimpl
    def scheduling_cycle_end(self, ctx: RunContext, now: float) -> None:
        ctx.metrics.record("queue_size", now, ctx.scheduler.n_waiting + ctx.scheduler.n_held)


class LeaseProbe(_Counters):
    """Haizea's ``lease`` probe."""

    name = "lease"
    SERIES = (("leases_requested", "leases", "leases requested"),
              ("leases_completed", "leases", "leases completed"),
              ("leases_rejected", "leases", "leases rejected"))

    @hookimpl
    def lease_submitted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.add("leases_requested", now)

    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if lease.state is LeaseState.DONE:
            self.add("leases_completed", now)

    @hookimpl
    def lease_rejected(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.add("leases_rejected", now)


class DeadlineProbe(_Counters):
    """Haizea 1.1's ``deadline`` probe."""

    name = "deadline"
    SERIES = (("deadlines_met", "leases", "deadlines met"),
              ("deadlines_missed", "leases", "deadlines missed"))

    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if lease.deadline is not None and lease.state is LeaseState.DONE:
            self.add("deadlines_met" if now <= lease.deadline + 1e-6 else "deadlines_missed",
                     now)

    @hookimpl
    def lease_rejected(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if lease.deadline is not None:
            self.add("deadlines_missed", now)


class PriceProbe(_Counters):
    """Haizea 1.1's ``price`` probe."""

    name = "price"
    SERIES = (("revenue", "", "revenue"),)

    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if lease.state is LeaseState.DONE and lease.price:
            self.add("revenue", now, float(lease.price))


class CPUUtilizationProbe(Policy):
    """Haizea's ``cpu-utilization`` probe."""

    kind = "probe"
    name = "cpu-utilization"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self._total = float(ctx.site.total[0]) or 1.0
        ctx.metrics.describe("cpu_utilization", "fraction", "CPU utilisation")

    @hookimpl
    def scheduling_cycle_end(self, ctx: RunContext, now: float) -> None:
        in_use = self._total - float(ctx.table.free_at(now)[:, 0].sum())
        ctx.metrics.record("cpu_utilization", now, in_use / self._total)


class LeaseExtrasProbe(Policy):
    """Haizea 1.1's ``lease-extras`` probe: ``leases.csv`` already has what it recorded."""

    kind = "probe"
    name = "lease-extras"


@hookimpl
def register_policies() -> list[Any]:
    return [ARProbe, IMProbe, BEProbe, LeaseProbe, DeadlineProbe, PriceProbe,
            CPUUtilizationProbe, LeaseExtrasProbe]
