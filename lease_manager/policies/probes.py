"""Built-in probe ``usage``: queue length, running leases and utilisation over time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.hookspecs import hookimpl
from lease_manager.policies import Policy

if TYPE_CHECKING:
    from lease_manager.context import RunContext


class UsageProbe(Policy):
    """Record, at the end of every scheduling cycle, the leases waiting to start (held, queued
    or holding a future reservation) as ``queue_length``, the leases running and the fraction
    of the site's first resource (CPU) in use."""

    kind = "probe"
    name = "usage"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self._total = float(ctx.site.total[0]) or 1.0
        ctx.metrics.describe("queue_length", "leases", "leases waiting")
        ctx.metrics.describe("running_leases", "leases", "leases running")
        ctx.metrics.describe("utilization", "fraction", "utilisation (CPU in use)")

    @hookimpl
    def scheduling_cycle_end(self, ctx: RunContext, now: float) -> None:
        sched = ctx.scheduler
        metrics = ctx.metrics
        metrics.record("queue_length", now,
                       sched.n_waiting + sched.n_held + sched.n_planned)
        metrics.record("running_leases", now, sched.n_running)
        in_use = self._total - float(ctx.table.free_at(now)[:, 0].sum())
        metrics.record("utilization", now, in_use / self._total)


@hookimpl
def register_policies():
    return [UsageProbe]
