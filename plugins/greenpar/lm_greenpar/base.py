"""What every GreenPar policy shares: a job's shape, speed and SLA, and the site's green power.

A job (a lease annotated by ``greenpar-apps``) asks for N servers; it runs V VMs (2N or 4N,
chosen when it starts) on n servers, a power of 2 with V/4 <= n <= V, each server holding V/n
VMs: its VMs then hold the whole of its n servers (a server a job does not use sleeps). Its
speed is SP(n, V) single-server seconds per second; its run time in the trace is at (N, 2N),
the *reference*. The SLA (GreenPar's AvgSpeedup >= SP(N)/F) is kept in its cumulative form: at
every instant a job has done at least elapsed x SP(N, 2N) / F single-server seconds, so that
when it ends its run time is at most F times its reference run time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from lease_manager import (
    Allocation,
    AllocationPolicy,
    ConfigError,
    Lease,
    LeaseState,
    VMRequest,
    hookimpl,
)

from .speedups import SpeedupProfiles

#: VMs per requested server a job may run (GreenPar: 2N or 4N)
VM_FACTORS = (2, 4)


class GreenParPolicy(AllocationPolicy):
    """Base of GreenPar's allocation policies (see the module docstring)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        cfg = ctx.config
        power = ctx.power
        if power is None:
            raise ConfigError(f"allocation policy {self.name!r} needs a [power] model (the "
                              f"servers' watts and the green production)")
        self.slowdown: float = cfg.get("greenpar", "slowdown")
        self.profiles = SpeedupProfiles.read(cfg.get("greenpar", "speedups") or None)
        self.epoch: float = cfg.get("malleable", "epoch")
        self.migration_time: float = cfg.get("malleable", "migration-time")
        self.migration_energy: float = cfg.get("malleable", "migration-energy")
        self.node = np.asarray(ctx.site.capacity[0], dtype=float)
        self.servers = len(ctx.site.capacity)
        #: a busy server's watts, and an idle (sleeping) one's
        self.busy_watts = float(power.full[0, power.top_level])
        self.idle_watts = float(power.idle[0])
        self.power = power
        #: a running job's allocation changes at most once in this many seconds (0: no limit)
        self.resize_interval: float = cfg.get("greenpar", "resize-interval")
        #: changes made within the interval because the SLA needed them
        self.forced_resizes = 0
        #: decisions changed to make room for a job that must grow to keep its SLA
        self.sla_guard_changes = 0
        #: decisions made at an arrival for the running jobs, carried out at that instant
        self._stored: tuple[float, dict[int, tuple[int, int]]] | None = None

    # ------------------------------------------------------------------------- a job
    @staticmethod
    def is_job(lease: Lease) -> bool:
        return "servers" in lease.extra and "app" in lease.extra

    @staticmethod
    def requested(lease: Lease) -> int:
        return int(lease.extra["servers"])

    def sp(self, lease: Lease, n: int, v: int) -> float:
        return self.profiles.sp(str(lease.extra["app"]), n, v)

    def reference(self, lease: Lease) -> float:
        n = self.requested(lease)
        return self.sp(lease, n, 2 * n)

    def options(self, lease: Lease, v: int) -> list[tuple[int, float]]:
        """``(servers, speedup)`` for the server counts a job of ``v`` VMs may have, that fit
        the site."""
        return [(n, sp) for n, sp in self.profiles.options(str(lease.extra["app"]), v)
                if n <= self.servers]

    def shape(self, lease: Lease, n: int, v: int) -> Allocation:
        """``v`` VMs filling ``n`` servers, at SP(n, v)."""
        per_node = v // n
        vms = VMRequest.uniform(v, self.node / per_node)
        return Allocation(vms, self.sp(lease, n, v), self.reference(lease))

    def sla_rate(self, lease: Lease) -> float:
        """Single-server seconds per second the cumulative SLA needs."""
        return self.reference(lease) / self.slowdown

    def total_work(self, lease: Lease) -> float:
        return lease.run_duration * self.reference(lease)

    # --------------------------------------------------------------- a running job
    def running(self) -> list[Lease]:
        """Running malleable jobs, oldest first."""
        return sorted((l for l in self.ctx.scheduler.running()
                       if l.malleable is not None and l.state is LeaseState.ACTIVE
                       and l.reservations), key=lambda l: l.id)

    @staticmethod
    def nodes(lease: Lease) -> int:
        return len(lease.reservations[0].nodes)

    @staticmethod
    def done(lease: Lease, now: float) -> float:
        """Single-server seconds of work done by ``now``."""
        m = lease.malleable
        assert m is not None
        res = lease.reservations[0]
        rate, begin = m.rate_of(res)
        return (m.single_server(lease.work_done)
                + rate * max(0.0, now - max(res.start, begin)) / m.base_stretch)

    def elapsed(self, lease: Lease, now: float) -> float:
        return now - (lease.start if lease.start is not None else now)

    def sla_margin(self, lease: Lease, now: float, n: int, v: int, span: float,
                   rate: float | None = None) -> float:
        """Single-server seconds by which running on ``n`` servers (``v`` VMs) from ``now``
        for ``span`` seconds keeps the cumulative SLA (negative: it does not); with ``rate``,
        the same against that many single-server seconds per second instead of the SLA's.

        A change of allocation first pauses the job for the migration (one already under way
        goes on). If the job ends within the span, only its end counts: the work it has to do
        against the SLA's rate at that instant. Otherwise the lower of two: right after the
        pause (the job's lowest point if it then gains on the SLA; it could end right after,
        and beyond it the margin is linear), and at the span's end less the work of one
        migration pause, so that the next change can afford its pause. Without that reserve,
        a job shrunk to exactly its SLA at an epoch's end and grown then ends inside the dip
        its migration pause makes (Reactive, seed 17: 1.1001 times its run time)."""
        rate = self.sla_rate(lease) if rate is None else rate
        done = self.done(lease, now)
        elapsed = self.elapsed(lease, now)
        speed = self.sp(lease, n, v)
        if n != self.nodes(lease) or v != lease.vms.count:
            pause = self.migration_time
        else:
            pause = max(0.0, self.progress_begins(lease) - now)
        left = self.total_work(lease) - done
        finish = pause + max(left, 0.0) / speed
        end = max(span, pause)
        if finish <= end:
            return self.total_work(lease) - rate * (elapsed + finish)
        after_pause = done - rate * (elapsed + pause)
        at_end = (done + speed * (end - pause) - rate * (elapsed + end)
                  - rate * self.migration_time)
        return min(after_pause, at_end)

    def keeps_sla(self, lease: Lease, now: float, n: int, v: int, span: float) -> bool:
        """Does running on ``n`` servers for ``span`` seconds from ``now`` keep the cumulative
        SLA (:meth:`sla_margin`)?"""
        return self.sla_margin(lease, now, n, v, span) >= -1e-6

    def new_job_margin(self, lease: Lease, now: float, n: int, v: int) -> float:
        """:meth:`sla_margin` of a job starting now on ``n`` servers with ``v`` VMs (no work
        done, no migration)."""
        rate = self.sla_rate(lease)
        work = self.total_work(lease)
        speed = self.sp(lease, n, v)
        span = self.span(now)
        finish = work / speed
        if finish <= span:
            return work - rate * finish
        return min(0.0, (speed - rate) * span - rate * self.migration_time)

    def least_new_servers(self, lease: Lease, now: float, v: int) -> int:
        """The fewest servers a job starting now with ``v`` VMs keeps its SLA on (the most it
        may have if none)."""
        options = self.options(lease, v)
        for n, _ in options:
            if self.new_job_margin(lease, now, n, v) >= -1e-6:
                return n
        return options[-1][0]

    @staticmethod
    def progress_begins(lease: Lease) -> float:
        """When the job's current allocation starts to progress (after its migration)."""
        m = lease.malleable
        assert m is not None
        return m.rate_of(lease.reservations[0])[1]

    def span(self, now: float) -> float:
        """The seconds a decision at ``now`` must keep the SLA for: to the next epoch's start
        (at an epoch's start, the whole epoch), where every policy decides again; with a
        ``resize-interval``, to the first epoch's start at least that long after ``now``, when
        a job changed now may change again."""
        k = math.floor(now / self.epoch + 1e-9) + 1
        if self.resize_interval > 0:
            k = max(k, math.ceil((now + self.resize_interval) / self.epoch - 1e-9))
        return k * self.epoch - now

    def to_next_epoch(self, now: float) -> float:
        """Seconds from ``now`` to the next epoch's start (a whole epoch at one's start)."""
        return (math.floor(now / self.epoch + 1e-9) + 1) * self.epoch - now

    def must_change(self, lease: Lease, now: float) -> bool:
        """Would the running job break its SLA if it kept its allocation until the next
        epoch starts?"""
        return not self.keeps_sla(lease, now, self.nodes(lease), lease.vms.count,
                                  self.to_next_epoch(now))

    @staticmethod
    def last_resize(lease: Lease) -> float:
        """When the job's allocation last changed (its start is not a change)."""
        m = lease.malleable
        assert m is not None
        return m.history[-1][0] if len(m.history) > 1 else -math.inf

    def may_resize(self, lease: Lease, now: float) -> bool:
        """Has the running job's allocation held for ``[greenpar] resize-interval``?"""
        return (self.resize_interval <= 0
                or now - self.last_resize(lease) >= self.resize_interval - 1e-6)

    def least_servers(self, lease: Lease, now: float, span: float | None = None) -> int:
        """The fewest servers that keep the SLA until the next epoch starts (``span``), or,
        if none does, those that come closest."""
        v = lease.vms.count
        span = self.span(now) if span is None else span
        options = self.options(lease, v)
        margins = [(self.sla_margin(lease, now, n, v, span), n) for n, _ in options]
        for margin, n in margins:
            if margin >= -1e-6:
                return n
        return max(margins)[1]

    # ------------------------------------------------------------------ the site
    def free_servers(self, now: float) -> int:
        """Servers no reservation holds at ``now``."""
        free = self.ctx.table.free_at(now)
        return int((free >= self.ctx.site.capacity - 1e-9).all(axis=1).sum())

    def green(self, start: float, end: float, actual: bool = False) -> float:
        """Mean green watts over ``[start, end)``: forecast at ``start`` (or the actual)."""
        power = self.power
        series = power.green if actual or power.forecast is None else power.forecast.at(start)
        if series is None:
            return 0.0
        return mean_over(series, start, end)

    def servers_powered(self, watts: float) -> int:
        """How many busy servers ``watts`` of green power covers (GreenPar's G): the site's
        servers all draw their sleeping watts, and each busy one its busy watts above that."""
        spare = watts - self.idle_watts * self.servers
        return max(0, math.floor(spare / (self.busy_watts - self.idle_watts) + 1e-9))

    def next_event(self, now: float) -> float:
        forecast = self.power.forecast
        return forecast.next_issue(now) if forecast is not None else math.inf

    # ------------------------------------------------------------------ decisions
    def resize_summary(self) -> dict[str, int]:
        return {"greenpar_forced_resizes": self.forced_resizes}

    @hookimpl
    def collect_summary(self):
        return self.resize_summary()

    def decisions(self, wanted: dict[int, tuple[int, int]], leases: Iterable[Lease],
                  now: float, forced: frozenset[int] = frozenset()
                  ) -> list[tuple[Lease, Allocation]]:
        """Allocations for the jobs whose (servers, VMs) change. A job changed less than
        ``resize-interval`` ago keeps its allocation, unless it would then break its SLA or
        is in ``forced`` (counted in ``greenpar_forced_resizes``)."""
        out = []
        for lease in leases:
            if lease.id in wanted:
                n, v = wanted[lease.id]
                if n != self.nodes(lease) or v != lease.vms.count:
                    if not self.may_resize(lease, now):
                        if lease.id not in forced and not self.must_change(lease, now):
                            continue
                        self.forced_resizes += 1
                    out.append((lease, self.shape(lease, n, v)))
        return out

    def make_room(self, wanted: dict[int, tuple[int, int]], leases: list[Lease], now: float
                  ) -> frozenset[int]:
        """The SLA guard: if the jobs that must grow to keep their SLA (wanted above their
        servers, their current ones breaking it over :meth:`span`) need more servers than are
        free at ``now`` once ``wanted`` is carried out, the other jobs' grows wait and jobs
        with room to spare shrink to the fewest servers that keep their own SLA (the most
        servers freed first). ``wanted`` is changed in place, only if that frees enough (each
        change counted in ``sla_guard_changes``); returns the jobs shrunk, which change even
        within their ``resize-interval``. A plan (a solver's, cut short, or one that did not
        see the jobs the scheduler started meanwhile) may count on servers that others hold
        by then: without the guard the grow is refused and the SLA broken."""
        def must_grow(lease: Lease) -> bool:
            n = self.nodes(lease)
            return wanted[lease.id][0] > n and not self.keeps_sla(
                lease, now, n, lease.vms.count, self.span(now))

        needy = {l.id for l in leases if l.id in wanted and must_grow(l)}
        if not needy:
            return frozenset()
        change = {l.id: wanted[l.id][0] - self.nodes(l) for l in leases if l.id in wanted}
        short = sum(change.values()) - self.free_servers(now)
        if short <= 0:
            return frozenset()
        others = [l for l in leases if l.id in wanted and l.id not in needy]
        new: dict[int, tuple[int, int]] = {}
        for lease in others:   # the other grows wait
            if change[lease.id] > 0:
                short -= change[lease.id]
                new[lease.id] = (self.nodes(lease), lease.vms.count)
        donors = []
        for lease in others:
            planned = new.get(lease.id, wanted[lease.id])[0]
            n = min(self.least_servers(lease, now), planned)
            if n < planned:
                donors.append((n - planned, lease.id, lease, n))
        forced = set()
        for freed, _, lease, n in sorted(donors, key=lambda d: d[:2]):
            if short <= 0:
                break
            short += freed
            new[lease.id] = (n, lease.vms.count)
            forced.add(lease.id)
        if short > 0:
            return frozenset()   # not enough room: the plan stands (the grow may be refused)
        self.sla_guard_changes += len(new)
        wanted.update(new)
        return frozenset(forced)

    def store(self, now: float, wanted: dict[int, tuple[int, int]]) -> None:
        self._stored = (now, wanted)

    def stored(self, now: float) -> dict[int, tuple[int, int]] | None:
        if self._stored is not None and self._stored[0] == now:
            return self._stored[1]
        return None


def mean_over(series, start: float, end: float) -> float:
    """The mean of a step series over ``[start, end)``."""
    if end <= start:
        return float(series.at(start))
    cuts = np.concatenate([[start], series.breakpoints(start, end), [end]])
    values = series.at(cuts[:-1])
    return float(np.dot(values, np.diff(cuts)) / (end - start))


def beta_server_watts(ctx) -> float:
    """The watts of the server whose electricity cost is the unit of beta x AvgRuntime in
    GreenPar's objective (1): ``[greenpar] beta-server-watts``, or (0) a busy server of the
    site. GreenPar's beta = 8 is a ratio, $0.24 an hour of an EC2 instance over the
    electricity of a server like it for that hour (0.3 kWh x $0.1055); the brown cost it is
    added to counts the site's own servers, so a run-time hour costs beta times the
    electricity of one of them for an hour."""
    watts = float(ctx.config.get("greenpar", "beta-server-watts"))
    if watts > 0:
        return watts
    power = ctx.power
    return float(power.full[0, power.top_level]) if power is not None else 0.0

