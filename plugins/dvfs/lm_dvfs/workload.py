"""Annotator ``garg-workload``: trace jobs become Garg et al.'s deadline leases (section 5).

For every lease read from the trace, from the run's seed (stream ``garg-workload``):

- its submit time is divided by ``[dvfs] arrival-rate`` (the paper's 10, 100, 1000, 10000);
- it is high urgency with probability ``[dvfs] urgent-share`` (else low urgency), and its
  deadline is submit + ratio x run time, the ratio drawn from a Normal distribution of the
  class's mean and variance (``high-urgency``, ``low-urgency``: the paper's means 4 and 12;
  it gives the variance 2 for high urgency only, and 2 is used for both by default), cut at 1
  (no deadline shorter than the run time);
- it becomes a deadline lease whose requested time is its run time (e_ij is known to the
  scheduler in the paper);
- with ``[dvfs] data-tb`` above 0, it gets ``data-gb`` drawn uniformly in [0, data-tb] TB.

The class is recorded as the lease's ``urgency`` attribute (``high`` or ``low``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from lease_manager import Annotator, LeaseType

if TYPE_CHECKING:
    from lease_manager import Lease, RunContext


class GargWorkload(Annotator):
    """Deadlines, urgency classes and arrival rate of Garg et al. (see the module docstring)."""

    name = "garg-workload"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        config = ctx.config
        self.rate = config.get("dvfs", "arrival-rate")
        self.share = config.get("dvfs", "urgent-share")
        self.high = config.get("dvfs", "high-urgency")
        self.low = config.get("dvfs", "low-urgency")
        self.data_tb = config.get("dvfs", "data-tb")
        self.rng = ctx.rng("garg-workload")

    def annotate(self, lease: Lease) -> None:
        rng = self.rng
        urgent = bool(rng.random() < self.share)
        mean, variance = self.high if urgent else self.low
        ratio = max(1.0, float(rng.normal(mean, math.sqrt(variance))))
        data = float(rng.uniform(0.0, self.data_tb)) * 1000.0 if self.data_tb > 0 else None
        work = lease.run_duration
        lease.submit = lease.submit / self.rate
        lease.type = LeaseType.DEADLINE
        lease.requested_duration = work
        lease.actual_duration = work
        lease.deadline = lease.submit + ratio * work
        lease.extra["urgency"] = "high" if urgent else "low"
        if data is not None:
            lease.extra["data-gb"] = data
