"""The monitoring structures of the thesis' section 7.2, kept as sections 7.3.1-7.3.4 say.

``MonitoringData`` (MD)
    Per stress-on resource type, the requirements of every job in the system whatever its
    state (Prepending, Pending, scheduled, running), less the parts on full hosts (7.3.2).
``ScheduledMonitoringData`` (SMD)
    The same without the Prepending jobs.
``MonitoredJobs``
    Per job: its requirement of each resource it stresses (``JobResReqs``, 7.3.1 step 3) and,
    once it is mapped (7.3.3), one entry per host it is mapped on with a ``contributing`` flag
    (whether that host's part counts in MD and SMD) and the part of each stressed requirement
    that host satisfies.

All amounts are in :data:`lease_manager.characteristics.RESOURCES` order (CPU, Memory, IO, Net-in,
Net-out); a resource a job does not stress counts 0 for it. A job's requirement of a resource
is over all its VMs: its explicit per-VM amount (``req-IO`` ...) times its VMs, or, for a
resource type of the site (CPU, Memory), what its VMs need of it. Its part on a host is
counted the same way over the VMs it has there, so the parts add up to the requirement.

The class :class:`Monitor` holds the three structures and makes every update of the thesis
as one method; it knows nothing of leases or the slot table (see :mod:`.policy`), so the
tests can drive it by hand too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from lease_manager.characteristics import RESOURCES

#: resource name -> position in every vector here
INDEX = {r: k for k, r in enumerate(RESOURCES)}
#: amounts smaller than this (relative to 1 unit) are rounding noise
EPS = 1e-9

PREPENDING = "prepending"
PENDING = "pending"
#: what Util[r] of inequality 7.1 measures: the stress-on consumption of the running jobs
#: (``running``), what all running jobs hold of r (``site``), or MonitoringData (``monitoring``)
UTIL_READINGS = ("running", "site", "monitoring")


def vector(amounts: Mapping[str, float] | np.ndarray | None = None) -> np.ndarray:
    """A resource vector from ``{"CPU": 2, ...}`` (or a copy of a vector)."""
    out = np.zeros(len(RESOURCES))
    if amounts is None:
        return out
    if isinstance(amounts, np.ndarray):
        out[:] = amounts
        return out
    for name, value in amounts.items():
        out[INDEX[name]] = float(value)
    return out


class ResourceData:
    """A dictionary-like total per resource type (MonitoringData, ScheduledMonitoringData)."""

    def __init__(self) -> None:
        self.values = np.zeros(len(RESOURCES))

    def __getitem__(self, name: str) -> float:
        return float(self.values[INDEX[name]])

    def add(self, amounts: np.ndarray) -> None:
        self.values += amounts

    def sub(self, amounts: np.ndarray) -> None:
        self.values -= amounts
        # sums of the same floats in another order can leave -1e-13: that is 0
        self.values[np.abs(self.values) < EPS * np.maximum(1.0, np.abs(amounts))] = 0.0

    def as_dict(self) -> dict[str, float]:
        return {r: float(v) for r, v in zip(RESOURCES, self.values)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.as_dict()})"


class MonitoringData(ResourceData):
    """Stress-on consumption of every job in the system (Prepending ones included)."""


class ScheduledMonitoringData(ResourceData):
    """Stress-on consumption of every job in the system but the Prepending ones."""


class HostShare:
    """MonitoredJobs[job][host]: the part of the job a host satisfies, and its flag."""

    __slots__ = ("contributing", "amounts")

    def __init__(self, amounts: np.ndarray, contributing: bool = True) -> None:
        self.contributing = contributing
        self.amounts = amounts

    def as_dict(self, mask: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"contributing": self.contributing}
        out.update({r: float(self.amounts[k]) for k, r in enumerate(RESOURCES) if mask[k]})
        return out


class JobRecord:
    """MonitoredJobs[job]: a job's stress-on requirements, state and host shares."""

    __slots__ = ("job_id", "requirements", "mask", "state", "hosts", "running", "since",
                 "usage", "counts_unmapped")

    def __init__(self, job_id: int, requirements: np.ndarray, mask: np.ndarray,
                 since: float = 0.0, *, usage: np.ndarray | None = None,
                 counts_unmapped: bool = True) -> None:
        self.job_id = job_id
        #: JobResReqs, 0 for the resources the job does not stress
        self.requirements = requirements * mask
        #: True for the resources the job stresses
        self.mask = mask.astype(bool)
        #: what the job holds of every resource while it runs, stressed or not (the
        #: ``site`` reading of Util in 7.1); its requirements when not given
        self.usage = self.requirements if usage is None else np.asarray(usage, dtype=float)
        #: whether the job counts in MD/SMD before it is mapped (waiting, Prepending): the
        #: thesis' steps 2 and 5 (``[autonomic] unmapped-demand = full``); else it counts
        #: only from its mapping on (``none``)
        self.counts_unmapped = counts_unmapped
        self.state = PREPENDING      # decided right after arrival
        self.hosts: dict[int, HostShare] = {}
        self.running = False
        #: when the job entered its current state
        self.since = since

    @property
    def contribution(self) -> np.ndarray:
        """What the job adds to MD (and to SMD when Pending): its requirements less its
        parts on hosts that do not contribute (nothing while unmapped, if it does not count
        before its mapping)."""
        if not self.hosts and not self.counts_unmapped:
            return np.zeros_like(self.requirements)
        out = self.requirements.copy()
        for share in self.hosts.values():
            if not share.contributing:
                out -= share.amounts
        return out

    def as_dict(self) -> dict[Any, Any]:
        """The thesis' nested form: ``{resource: JobResReqs, host: {"contributing": flag,
        resource: part}}`` (stressed resources only)."""
        out: dict[Any, Any] = {r: float(self.requirements[k])
                               for k, r in enumerate(RESOURCES) if self.mask[k]}
        for node, share in self.hosts.items():
            out[node] = share.as_dict(self.mask)
        return out


class MonitoredJobs(dict):
    """job id -> :class:`JobRecord`."""

    def as_dict(self) -> dict[int, dict[Any, Any]]:
        return {job: rec.as_dict() for job, rec in self.items()}


class Monitor:
    """The three structures, the inequalities 7.1-7.3 and the updates of 7.3.1-7.3.4.

    ``total`` is ``Total[resType]``: the site's capacity of each resource (``inf`` for a
    resource type the site does not have: the inequalities then always hold for it).
    """

    def __init__(self, total: np.ndarray, *, util: str = "running",
                 counts_unmapped: bool = True) -> None:
        if util not in UTIL_READINGS:
            raise ValueError(f"unknown Util reading {util!r} (known: {', '.join(UTIL_READINGS)})")
        self.total = np.asarray(total, dtype=float)
        #: what Util[r] of inequality 7.1 measures (see :data:`UTIL_READINGS`)
        self.util = util
        #: whether jobs count in MD/SMD before they are mapped (steps 2 and 5 as written)
        self.counts_unmapped = counts_unmapped
        self.monitoring_data = MonitoringData()
        self.scheduled_monitoring_data = ScheduledMonitoringData()
        self.monitored_jobs = MonitoredJobs()
        #: stress-on consumption of the running jobs (Util's numerator, reading ``running``)
        self.running = np.zeros(len(RESOURCES))
        #: what the running jobs hold of every resource, stressed or not (reading ``site``)
        self.running_all = np.zeros(len(RESOURCES))
        #: host -> ids of the jobs mapped there whose share contributes / does not
        self._on: dict[int, set[int]] = {}
        self._off: dict[int, set[int]] = {}
        #: hosts found full at the last end of a cycle
        self.full: set[int] = set()

    # ------------------------------------------------------------------- inequalities
    def _tol(self, amounts: np.ndarray) -> np.ndarray:
        return EPS * np.maximum(1.0, np.where(np.isinf(amounts), 1.0, np.abs(amounts)))

    @property
    def utilization(self) -> np.ndarray:
        """Util[resType] of inequality 7.1, as :attr:`util` reads it: the running jobs'
        stress-on consumption (``running``), what all running jobs hold (``site``), or
        MonitoringData (``monitoring``), over Total."""
        used = {"running": self.running, "site": self.running_all,
                "monitoring": self.monitoring_data.values}[self.util]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(np.isinf(self.total) | (self.total <= 0), 0.0,
                            used / np.where(self.total > 0, self.total, 1.0))

    def inequality_7_1(self, rec: JobRecord) -> bool:
        """Util[r] + JobResReqs[r] / Total[r] <= 1 for every stressed r."""
        m = rec.mask
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(np.isinf(self.total), 0.0, rec.requirements / self.total)
        return bool(np.all((self.utilization + share)[m] <= 1.0 + EPS))

    def inequality_7_2(self, rec: JobRecord, *, exclude_self: bool = False) -> bool:
        """MonitoringData[r] + JobResReqs[r] <= Total[r] for every stressed r. MD already holds
        the job (step 2 comes before step 6); ``exclude_self`` takes it out first."""
        md = self.monitoring_data.values
        if exclude_self:
            md = md - rec.contribution
        lhs = md + rec.requirements
        m = rec.mask
        return bool(np.all(lhs[m] <= self.total[m] + self._tol(self.total[m])))

    def inequality_7_3(self, rec: JobRecord) -> bool:
        """ScheduledMonitoringData[r] + JobResReqs[r] <= Total[r] for every stressed r."""
        lhs = self.scheduled_monitoring_data.values + rec.requirements
        m = rec.mask
        return bool(np.all(lhs[m] <= self.total[m] + self._tol(self.total[m])))

    # --------------------------------------------------------- 7.3.1 queue mechanism
    def arrive(self, job_id: int, requirements: np.ndarray, mask: np.ndarray,
               now: float = 0.0, usage: np.ndarray | None = None) -> JobRecord:
        """Steps 1-3: JobResReqs; MD += them; a MonitoredJobs entry. The job is Prepending
        until :meth:`set_pending` (steps 5-6 decide). ``usage``: what the job holds of every
        resource while it runs (the ``site`` reading of Util)."""
        if job_id in self.monitored_jobs:
            raise ValueError(f"job {job_id} is already monitored")
        rec = JobRecord(job_id, np.asarray(requirements, dtype=float),
                        np.asarray(mask, dtype=bool), now, usage=usage,
                        counts_unmapped=self.counts_unmapped)
        self.monitoring_data.add(rec.contribution)
        self.monitored_jobs[job_id] = rec
        return rec

    def set_pending(self, rec: JobRecord, now: float = 0.0) -> None:
        """The job goes to the wait queue: SMD += its contribution."""
        if rec.state == PENDING:
            return
        rec.state = PENDING
        rec.since = now
        self.scheduled_monitoring_data.add(rec.contribution)

    # ---------------------------------------------------------- 7.3.3 job scheduling
    def map(self, rec: JobRecord, shares: Mapping[int, np.ndarray]) -> None:
        """The job's schedule is decided: one host entry per host, contributing (its parts
        are already in MD and SMD, unless it did not count while unmapped). A previous
        mapping is dropped first (a new plan)."""
        if rec.state != PENDING:
            raise ValueError(f"job {rec.job_id} is mapped while {rec.state}")
        self.unmap(rec)
        before = rec.contribution
        for node, amounts in shares.items():
            rec.hosts[node] = HostShare(np.asarray(amounts, dtype=float) * rec.mask, True)
            self._on.setdefault(node, set()).add(rec.job_id)
        self._recount(rec, before)

    def unmap(self, rec: JobRecord) -> None:
        """Forget the job's hosts; parts that did not contribute count again (or, if it does
        not count while unmapped, its parts leave MD and SMD)."""
        if not rec.hosts:
            return
        before = rec.contribution
        for node, share in rec.hosts.items():
            (self._on if share.contributing else self._off)[node].discard(rec.job_id)
        rec.hosts.clear()
        self._recount(rec, before)

    def _recount(self, rec: JobRecord, before: np.ndarray) -> None:
        """MD (and SMD when the job is Pending) take the change of the job's contribution."""
        change = rec.contribution - before
        if not change.any():
            return
        self.monitoring_data.add(change)
        if rec.state == PENDING:
            self.scheduled_monitoring_data.add(change)

    # ----------------------------------------------------- 7.3.2 end of the cycle
    def host_full(self, node: int) -> list[int]:
        """Host ``node`` has no free CPU or Memory: the parts of the jobs mapped there stop
        contributing to MD, SMD. Returns the jobs whose flag changed."""
        self.full.add(node)
        return self._flip(node, contributing=False)

    def host_not_full(self, node: int) -> list[int]:
        """Host ``node`` has free capacity: the parts of the jobs mapped there contribute
        again. Returns the jobs whose flag changed."""
        self.full.discard(node)
        return self._flip(node, contributing=True)

    def _flip(self, node: int, contributing: bool) -> list[int]:
        """Move the jobs on ``node`` between contributing and not, adjusting MD and SMD."""
        source, target = (self._off, self._on) if contributing else (self._on, self._off)
        jobs = source.get(node)
        if not jobs:
            return []
        flipped = sorted(jobs)
        dest = target.setdefault(node, set())
        for job in flipped:
            share = self.monitored_jobs[job].hosts[node]
            share.contributing = contributing
            change = self.monitoring_data.add if contributing else self.monitoring_data.sub
            change(share.amounts)
            change = (self.scheduled_monitoring_data.add if contributing
                      else self.scheduled_monitoring_data.sub)
            change(share.amounts)
            dest.add(job)
        jobs.clear()
        return flipped

    def end_of_cycle(self, full: Iterable[bool]) -> None:
        """Examine every host: ``full[n]`` says whether host ``n`` is full now."""
        for node, is_full in enumerate(full):
            if is_full:
                if self._on.get(node):
                    self.host_full(node)
                else:
                    self.full.add(node)
            elif self._off.get(node):
                self.host_not_full(node)
            else:
                self.full.discard(node)

    # -------------------------------------------------------- running (Util of 7.1)
    def started(self, rec: JobRecord) -> None:
        if not rec.running:
            rec.running = True
            self.running += rec.requirements
            self.running_all += rec.usage

    def stopped(self, rec: JobRecord) -> None:
        if rec.running:
            rec.running = False
            self.running -= rec.requirements
            self.running_all -= rec.usage
            self.running[np.abs(self.running) < EPS] = 0.0
            self.running_all[np.abs(self.running_all) < EPS] = 0.0

    # ---------------------------------------------------------------- 7.3.4 job ends
    def end(self, rec: JobRecord) -> None:
        """The job finished or was cancelled: its last contribution leaves MD (and SMD if it
        was Pending) and its MonitoredJobs keys go."""
        self.stopped(rec)
        contribution = rec.contribution
        for node, share in rec.hosts.items():
            (self._on if share.contributing else self._off)[node].discard(rec.job_id)
        rec.hosts.clear()
        self.monitoring_data.sub(contribution)
        if rec.state == PENDING:
            self.scheduled_monitoring_data.sub(contribution)
        del self.monitored_jobs[rec.job_id]
        if not self.monitored_jobs:   # nothing in the system: exactly zero, no drift
            self.monitoring_data.values[:] = 0.0
            self.scheduled_monitoring_data.values[:] = 0.0
            self.running[:] = 0.0
            self.running_all[:] = 0.0

    # --------------------------------------------------------------------- checks
    def check(self) -> None:
        """Recompute MD and SMD from MonitoredJobs; AssertionError if they disagree."""
        md = np.zeros(len(RESOURCES))
        smd = np.zeros(len(RESOURCES))
        for rec in self.monitored_jobs.values():
            c = rec.contribution
            md += c
            if rec.state == PENDING:
                smd += c
        tol = 1e-6 * np.maximum(1.0, np.abs(md))
        assert np.all(np.abs(md - self.monitoring_data.values) <= tol), (
            md, self.monitoring_data.values)
        assert np.all(np.abs(smd - self.scheduled_monitoring_data.values) <= tol), (
            smd, self.scheduled_monitoring_data.values)
