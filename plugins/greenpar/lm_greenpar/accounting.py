"""The probe ``greenpar-accounting``: GreenPar's metrics besides the core's energy fields.

With ``[power]`` (green production, brown price) the core's summary already has
``brown_joules``, ``green_used_joules`` and ``energy_cost`` (the brown cost). This probe adds,
over the jobs (leases annotated by ``greenpar-apps``) that finished:

- ``greenpar_jobs``, ``greenpar_avg_runtime`` (seconds from start to end);
- ``greenpar_vms`` (the VMs of every job, added up: GreenPar's "total number of VMs");
- ``greenpar_resizes`` (reconfigurations) and ``greenpar_avg_servers`` (time-weighted);
- ``greenpar_sla_violations``: jobs whose run time exceeds F times their run time at the
  requested allocation, and ``greenpar_allocation_sla_violations``: jobs whose average
  allocation fell below N/F (Nebulous' SLA);
- ``greenpar_beta_server_watts``: the server whose electricity prices a run-time hour in
  the objective (``[greenpar] beta-server-watts``), and ``greenpar_sleep_watts``, the site
  with every server asleep (what ``lm-greenpar-figures`` counts after a run's end).
"""

from __future__ import annotations

from lease_manager import Lease, LeaseState, Policy, hookimpl

from .base import beta_server_watts

#: seconds of slack on the SLA check (rounding of event times)
TOLERANCE = 1e-6


class GreenParAccounting(Policy):
    """GreenPar's run times, SLA violations, VMs and reconfigurations (see the module)."""

    kind = "probe"
    name = "greenpar-accounting"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.slowdown: float = ctx.config.get("greenpar", "slowdown")
        self.jobs = 0
        self.runtime = 0.0
        self.vms = 0
        self.resizes = 0
        self.server_seconds = 0.0
        self.violations = 0
        self.allocation_violations = 0

    @hookimpl
    def lease_ended(self, lease: Lease, now: float) -> None:
        if lease.state is not LeaseState.DONE or "servers" not in lease.extra:
            return
        assert lease.start is not None and lease.end is not None
        runtime = lease.end - lease.start
        self.jobs += 1
        self.runtime += runtime
        self.vms += lease.vms.count
        n = int(lease.extra["servers"])
        m = lease.malleable
        history = m.history if m is not None else [(lease.start, n, lease.vms.count, 1.0)]
        times = [t for t, _, _, _ in history] + [lease.end]
        seconds = sum(k * (b - a) for (a, k, _, _), b in zip(history, times[1:]))
        self.server_seconds += seconds
        if m is not None:
            self.resizes += m.resizes
        if runtime > self.slowdown * lease.run_duration * (1 + 1e-9) + TOLERANCE:
            self.violations += 1
        if runtime > 0 and seconds / runtime < n / self.slowdown * (1 - 1e-9):
            self.allocation_violations += 1

    @hookimpl
    def collect_summary(self):
        jobs = max(self.jobs, 1)
        return {"greenpar_jobs": self.jobs, "greenpar_avg_runtime": self.runtime / jobs,
                "greenpar_vms": self.vms, "greenpar_resizes": self.resizes,
                "greenpar_avg_servers": self.server_seconds / max(self.runtime, 1e-9),
                "greenpar_sla_violations": self.violations,
                "greenpar_allocation_sla_violations": self.allocation_violations,
                # the power model is the run's once it has started (not yet when probes are made)
                "greenpar_beta_server_watts": beta_server_watts(self.ctx),
                "greenpar_sleep_watts": (float(self.ctx.power.idle.sum())
                                         if self.ctx.power is not None else 0.0)}
