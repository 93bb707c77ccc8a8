"""The queue policy ``autonomic``: the thesis' chapter-7 algorithm on the core's hooks.

=====================================  =================================================
thesis                                  here
=====================================  =================================================
7.3.1 queue mechanism (arrival)         :meth:`AutonomicQueue.hold` (after admission;
                                        best-effort leases)
Prepending                              the core's HELD state (``hold`` returns True)
7.3.2 start of the cycle (7.3)          :meth:`AutonomicQueue.release` (the core calls it
                                        at the start of every cycle)
7.3.2 end of the cycle (full hosts)     ``scheduling_cycle_end``
7.3.3 job scheduling                    ``lease_scheduled`` (again whenever the plan changes)
7.3.4 job ends / is cancelled           ``lease_ended``
=====================================  =================================================

Readings of the thesis (see the package README for the reasons):

- ``JobResReqs[r]`` is a lease's requirement of a resource it stresses over all its VMs;
  ``Total[r]`` the site's capacity of ``r`` (unbounded for a type the site does not have).
- ``Util[r]`` (7.1) is the stress-on consumption of the *running* leases over ``Total[r]``.
- 7.2 is evaluated after step 2, so MonitoringData already holds the arriving lease
  (``[autonomic] inequality-7-2 = as-written``); ``exclude-arrival`` takes it out.
- A host is full when its free amount of some type in ``[autonomic] full-resources`` (CPU and
  Memory) is 0 at the end of the cycle; every lease with a part on it then stops contributing
  that part, and contributes it again once the host is not full.
- Leases that never pass through the queue mechanism (advance reservations, immediate and
  deadline leases) enter the monitoring as Pending when they are scheduled.
- A preempted lease loses its host entries (its parts count again) and stays Pending.

The guarantee that no held lease is lost: a Prepending lease is queued at the first cycle at
which 7.3 holds for it, or at which no other lease is queued, planned or running (then the
longest-held lease is queued even if 7.3 does not hold for it, and the others are checked
against 7.3 after it). Every queued lease eventually runs and ends, so the site becomes idle
after the last arrival, and every held lease is queued by this policy before the run ends.
The core's own backstop (it queues every held lease when the run would otherwise end with
leases held, ``held_leases_force_released``) is noticed too (``autonomic_released_by_core``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager import AdmissionPolicy, LeaseType, QueuePolicy, hookimpl
from lease_manager.characteristics import (
    RESOURCES,
    Contributions,
    explicit_requirements,
    node_amounts,
)

from .monitoring import EPS, PREPENDING, JobRecord, Monitor

if TYPE_CHECKING:
    from lease_manager import Lease, RunContext

SERIES_HELD = "autonomic_prepending"
SERIES_FULL = "autonomic_full_hosts"


def site_totals(ctx: RunContext) -> np.ndarray:
    """Total[r] for every resource of the contention model (inf if the site lacks it)."""
    names = list(ctx.site.types.names)
    total = np.asarray(ctx.site.total, dtype=float)
    return np.array([float(total[names.index(r)]) if r in names else math.inf
                     for r in RESOURCES])


class NeverSatisfiable(AdmissionPolicy):
    """Rejects a best-effort lease for which inequalities 7.1-7.3 can never hold: its
    requirement of a resource it stresses exceeds the site's total (the thesis' algorithm
    would keep it Prepending for ever; lm-autonomic's queue policy runs it once the site is
    idle). Select with ``[scheduling] policy-admission = autonomic-unsatisfiable``."""

    name = "autonomic-unsatisfiable"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.contributions = Contributions.for_run(ctx)
        self.per_vm = ctx.config.get("autonomic", "requirements") == "vm"
        self.total = site_totals(ctx)
        self.rejected = 0

    def admit(self, lease: Lease, now: float) -> str | None:
        if lease.type is not LeaseType.BEST_EFFORT:
            return None
        req, mask = lease_requirements(self.contributions, lease, self.per_vm)
        over = np.flatnonzero(mask & (req > self.total * (1 + EPS)))
        if not over.size:
            return None
        self.rejected += 1
        k = int(over[0])
        return (f"inequalities 7.1-7.3 can never hold: its {RESOURCES[k]} requirement "
                f"{req[k]:g} exceeds the site's total {self.total[k]:g}")

    @hookimpl
    def collect_summary(self, ctx: RunContext) -> dict[str, Any]:
        return {"autonomic_rejected_unsatisfiable": self.rejected}


def lease_usage(contributions: Contributions, lease: Lease) -> np.ndarray:
    """What a lease holds of every resource over all its VMs, stressed or not: its explicit
    amounts per VM (``req-IO``...) x its VMs, else, for the site's resource types, what its
    VMs hold."""
    contributions.profile(lease)   # checks the attributes (errors name the lease)
    out = np.zeros(len(RESOURCES))
    explicit = explicit_requirements(lease.extra)
    names = contributions.site_types
    total = lease.vms.total
    for k, r in enumerate(RESOURCES):
        if r in explicit:
            out[k] = explicit[r] * lease.vms.count
        elif r in names:
            out[k] = float(total[names.index(r)])
    return out


def lease_requirements(contributions: Contributions, lease: Lease,
                       per_vm: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(JobResReqs, stress mask)`` of a lease: over all its VMs, or one VM's worth."""
    req = lease_usage(contributions, lease)
    if per_vm:
        req /= lease.vms.count
    mask = contributions.profile(lease).mask > 0
    return req * mask, mask


class AutonomicQueue(QueuePolicy):
    """Autonomic queue mechanism (thesis ch. 7): holds a lease back (Prepending) unless
    inequality 7.1 or 7.2 holds for its stress-on resources; releases it when 7.3 does."""

    name = "autonomic"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        ctx.metrics.describe(SERIES_HELD, "leases", "leases held (Prepending)")
        ctx.metrics.describe(SERIES_FULL, "nodes", "full nodes")
        cfg = ctx.config
        self.exclude_arrival = cfg.get("autonomic", "inequality-7-2") == "exclude-arrival"
        self.per_vm = cfg.get("autonomic", "requirements") == "vm"
        names = list(ctx.site.types.names)
        self.full_index = ([names.index(r) for r in cfg.get("autonomic", "full-resources")
                            if r in names]
                           if cfg.get("autonomic", "full-host-discount") else [])
        self.contributions = Contributions.for_run(ctx)
        self.monitor = Monitor(site_totals(ctx), util=cfg.get("autonomic", "util"),
                               counts_unmapped=cfg.get("autonomic", "unmapped-demand") == "full")
        #: ids of the Prepending leases -> their records
        self.prepending: dict[int, JobRecord] = {}
        # statistics for summary.json
        self.decided = {"7.1": 0, "7.2": 0, "prepending": 0}
        self.released = {"7.3": 0, "idle": 0, "core": 0}
        self.held_times: list[float] = []
        self._held_count = -1
        self._full_count = -1

    # ------------------------------------------------------------------ requirements
    def requirements(self, lease: Lease) -> tuple[np.ndarray, np.ndarray]:
        """``(JobResReqs, stress mask)`` of a lease: over all its VMs, or one VM's worth with
        ``[autonomic] requirements = vm``."""
        return lease_requirements(self.contributions, lease, self.per_vm)

    def usage(self, lease: Lease) -> np.ndarray:
        """What a lease holds of every resource over all its VMs (Util's ``site`` reading)."""
        return lease_usage(self.contributions, lease)

    def shares(self, lease: Lease) -> dict[int, np.ndarray]:
        """Host -> the part of the lease's requirements that host satisfies (its VMs there;
        divided by its VMs with ``[autonomic] requirements = vm``)."""
        prof = self.contributions.profile(lease)
        scale = 1.0 / lease.vms.count if self.per_vm else 1.0
        out: dict[int, np.ndarray] = {}
        for res in lease.reservations:
            if res.kind != "vm":
                continue
            amounts = node_amounts(res, prof) * scale
            for i, node in enumerate(res.nodes.tolist()):
                if node in out:
                    out[node] = out[node] + amounts[i]
                else:
                    out[node] = np.array(amounts[i], dtype=float)
        return out

    # --------------------------------------------------------- 7.3.1 queue mechanism
    def hold(self, lease: Lease, now: float) -> bool:
        req, mask = self.requirements(lease)                            # step 1
        rec = self.monitor.arrive(lease.id, req, mask, now, self.usage(lease))   # steps 2-3
        mon = self.monitor
        if mon.inequality_7_1(rec):                                     # steps 4-5
            self.decided["7.1"] += 1
        elif mon.inequality_7_2(rec, exclude_self=self.exclude_arrival):   # step 6
            self.decided["7.2"] += 1
        else:
            self.decided["prepending"] += 1
            self.prepending[lease.id] = rec
            return True
        mon.set_pending(rec, now)
        return False

    # ------------------------------------------------------- 7.3.2 start of the cycle
    def release(self, held: Sequence[Lease], now: float) -> Iterable[Lease]:
        self._reconcile(now)
        mon = self.monitor
        order = sorted(held, key=lambda l: (l.submit, l.id))
        out: list[Lease] = []
        sched = self.ctx.scheduler
        if (order and not (sched.n_waiting or sched.n_planned or sched.n_running)
                and not mon.inequality_7_3(self.prepending[order[0].id])):
            first = order.pop(0)   # the guarantee: an idle site takes the oldest held lease
            self._to_pending(first, now, "idle")
            out.append(first)
        if order:
            # SMD only grows while leases are released, so one vectorised test finds every
            # lease that may pass; those are then tested one by one, in order
            reqs = np.array([self.prepending[l.id].requirements for l in order])
            masks = np.array([self.prepending[l.id].mask for l in order])
            total = mon.total
            ok = ((mon.scheduled_monitoring_data.values + reqs
                   <= total + EPS * np.maximum(1.0, np.where(np.isinf(total), 1.0, total)))
                  | ~masks).all(axis=1)
            for j in np.flatnonzero(ok):
                lease = order[j]
                if mon.inequality_7_3(self.prepending[lease.id]):
                    self._to_pending(lease, now, "7.3")
                    out.append(lease)
        return out

    def _to_pending(self, lease: Lease, now: float, why: str) -> None:
        rec = self.prepending.pop(lease.id)
        self.held_times.append(now - rec.since)
        self.released[why] += 1
        self.monitor.set_pending(rec, now)

    def _reconcile(self, now: float) -> None:
        """Leases the core released itself (its end-of-run backstop) are Pending now."""
        if not self.prepending:
            return
        is_held = self.ctx.scheduler.is_held
        for job_id in [j for j in self.prepending if not is_held(j)]:
            rec = self.prepending[job_id]
            self.held_times.append(now - rec.since)
            self.released["core"] += 1
            del self.prepending[job_id]
            self.monitor.set_pending(rec, now)

    @hookimpl
    def scheduling_cycle_start(self, ctx: RunContext, now: float) -> None:
        self._reconcile(now)

    # --------------------------------------------------------- 7.3.2 end of the cycle
    @hookimpl
    def scheduling_cycle_end(self, ctx: RunContext, now: float) -> None:
        if self.full_index:
            free = ctx.table.free_at(now)[:, self.full_index]
            full = np.asarray((free <= EPS).any(axis=1), dtype=bool)
            self.monitor.end_of_cycle(full.tolist())
            n_full = int(full.sum())
        else:
            n_full = 0
        if len(self.prepending) != self._held_count:
            self._held_count = len(self.prepending)
            ctx.metrics.record(SERIES_HELD, now, self._held_count)
        if n_full != self._full_count:
            self._full_count = n_full
            ctx.metrics.record(SERIES_FULL, now, n_full)

    # ---------------------------------------------------------- 7.3.3 job scheduling
    def _record(self, lease: Lease, now: float) -> JobRecord:
        rec = self.monitor.monitored_jobs.get(lease.id)
        if rec is None:   # a lease that did not pass through hold (AR, immediate, deadline)
            req, mask = self.requirements(lease)
            rec = self.monitor.arrive(lease.id, req, mask, now, self.usage(lease))
            self.monitor.set_pending(rec, now)
        elif rec.state == PREPENDING:
            self._reconcile(now)
        return rec

    @hookimpl
    def lease_scheduled(self, ctx: RunContext, lease: Lease, now: float) -> None:
        rec = self._record(lease, now)
        self.monitor.map(rec, self.shares(lease))

    @hookimpl
    def lease_started(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.monitor.started(self._record(lease, now))

    @hookimpl
    def lease_preempted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        rec = self.monitor.monitored_jobs.get(lease.id)
        if rec is not None:
            self.monitor.stopped(rec)
            self.monitor.unmap(rec)

    # -------------------------------------------------------------- 7.3.4 job ends
    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        rec = self.monitor.monitored_jobs.get(lease.id)
        if rec is None:
            return
        if self.prepending.pop(lease.id, None) is not None:   # cancelled while Prepending
            self.held_times.append(now - rec.since)
        self.monitor.end(rec)

    # --------------------------------------------------------------------- summary
    @hookimpl
    def collect_summary(self, ctx: RunContext) -> dict[str, Any]:
        times = np.asarray(self.held_times, dtype=float)
        return {
            "autonomic_pending_by_7_1": self.decided["7.1"],
            "autonomic_pending_by_7_2": self.decided["7.2"],
            "autonomic_prepending": self.decided["prepending"],
            "autonomic_released_by_7_3": self.released["7.3"],
            "autonomic_released_idle_site": self.released["idle"],
            "autonomic_released_by_core": self.released["core"],
            "autonomic_still_prepending": len(self.prepending),
            "autonomic_prepending_time_total": float(times.sum()),
            "autonomic_prepending_time_mean": float(times.mean()) if times.size else 0.0,
            "autonomic_prepending_time_max": float(times.max()) if times.size else 0.0,
            "autonomic_monitored_jobs_left": len(self.monitor.monitored_jobs),
        }
