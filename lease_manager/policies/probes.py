"""Built-in probe ``usage``: queue length, running leases and utilisation over time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.hookspecs import hookimpl
from lease_manager.policies import Policy

if TYPE_CHECKING:
    from lease_manager.run import Run


class UsageProbe(Policy):
    """Record, at the end of every scheduling cycle, the leases waiting to start (held, queued
    or holding a future reservation) as ``queue_length``, the leases running and the fraction
    of the site's first resource (CPU) in use."""

    kind = "probe"
    name = "usage"

    def __init__(self, run: "Run") -> None:
        super().__init__(run)
        self._total = float(run.nodes.total[0]) or 1.0

    @hookimpl
    def scheduling_cycle_end(self, run: "Run", now: float) -> None:
        sched = run.scheduler
        metrics = run.metrics
        metrics.record("queue_length", now,
                       len(sched.queue) + len(sched.held) + len(sched.future))
        metrics.record("running_leases", now, len(sched.running))
        in_use = self._total - float(run.table.free_at(now)[:, 0].sum())
        metrics.record("utilization", now, in_use / self._total)


@hookimpl
def register_policies():
    return [UsageProbe]
