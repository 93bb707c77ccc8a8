"""GreenPar's heuristic policies: ``baseline``, ``reactive`` (Fig. 2) and ``nebulous``.

All of them fall back to the requested allocation (2N VMs on N servers) when the job could not
start at once otherwise.
"""

from __future__ import annotations

import math
from collections import defaultdict

from lease_manager import Allocation, Lease, hookimpl

from .base import GreenParPolicy

HINTS = ("excellent", "good", "fair", "poor")


class Baseline(GreenParPolicy):
    """GreenPar's baseline: every job runs 2N VMs on its N servers, never resized."""

    name = "baseline"

    def initial(self, lease: Lease, now: float) -> Allocation | None:
        if not self.is_job(lease):
            return None
        n = self.requested(lease)
        return self.shape(lease, n, 2 * n)


class RevertingPolicy(GreenParPolicy):
    """A heuristic policy that keeps section 3.1's rule: GreenPar "reverts back to the
    user-requested resource allocations when utilization becomes so high that jobs cannot be
    started immediately upon arrival". It tracks the jobs that arrived at the current
    instant (``_arrived``: their servers) and those of them that could not start at once
    (``_waiting``); :meth:`jobs_waiting` says whether a job waits."""

    def __init__(self, ctx):
        super().__init__(ctx)
        #: servers given to the jobs that arrived at ``_arrived_at`` (not running yet)
        self._arrived: dict[int, int] = {}
        self._arrived_at = -math.inf
        #: jobs that arrived at ``_arrived_at`` and could not start at once
        self._waiting: set[int] = set()

    def arrival_instant(self, now: float) -> None:
        """Start a new arrival instant at ``now`` (jobs that arrived earlier at this instant
        keep theirs)."""
        if now != self._arrived_at:
            self._arrived, self._arrived_at, self._waiting = {}, now, set()

    def jobs_waiting(self, now: float) -> bool:
        """Does a job wait: reserved to start later, queued since an earlier instant, or
        arrived now and unable to start at once?"""
        scheduler = self.ctx.scheduler
        if any(self.is_job(l) for l in scheduler.planned()):
            return True
        arrived_now = self._arrived if now == self._arrived_at else {}
        waiting_now = self._waiting if now == self._arrived_at else set()
        return any(self.is_job(l) and (l.id not in arrived_now or l.id in waiting_now)
                   for l in scheduler.waiting())


class Reactive(RevertingPolicy):
    """GreenPar's Reactive (Fig. 2): every job at the fewest servers that keep its SLA over
    the next epoch, then, while the green power predicted for the next epoch powers more
    servers, the job with the best marginal speedup per added server doubles its servers.
    2N VMs always. While a job waits (it could not start on arrival), every running job is
    back at its requested servers at least and none grows (section 3.1), so that a shrunk
    job's servers are its own again before a waiting job is promised them.

    Two readings of the text are options. ``[greenpar] reactive-slack``: ``sla`` (the
    fewest servers keeping the SLA, so a job spends the slack F gives it), or
    ``above-request`` (below its requested servers only on work it did above its requested
    pace: section 3.1's slack "via larger resource allocations than requested").
    ``[greenpar] reactive-growth``: ``fit`` (a doubling only if the total stays within G),
    or ``while-short`` (Fig. 2, lines 7-12 as printed: while C < G the best job doubles,
    even past G). ``[greenpar] reactive-resize-scope``: ``job`` (each job changes at most
    once per ``resize-interval``) or ``site`` (the site changes allocations in at most one
    round per interval: section 5 "constrained the system to not migrate VMs more often
    than once" an hour)."""

    name = "reactive"

    def __init__(self, ctx):
        super().__init__(ctx)
        #: which slack a job may be shrunk into: "sla" or "above-request"
        self.slack_reading: str = ctx.config.get("greenpar", "reactive-slack")
        #: "fit": a doubling must keep the total within G; "while-short": any while C < G
        self.growth_reading: str = ctx.config.get("greenpar", "reactive-growth")
        #: "job": resize-interval per job; "site": one round of changes per interval
        self.resize_scope: str = ctx.config.get("greenpar", "reactive-resize-scope")
        #: when the site last changed a running job's allocation (scope "site")
        self._round = -math.inf

    def initial(self, lease: Lease, now: float) -> Allocation | None:
        if not self.is_job(lease):
            return None
        n_req = self.requested(lease)
        self.arrival_instant(now)
        running = self.running()
        plan = self.plan(now, running, [lease], self._arrived)
        n = plan[lease.id][0]
        needed = sum(plan[l.id][0] for l in running) + sum(self._arrived.values()) + n
        if needed > self.free_servers(now) + sum(self.nodes(l) for l in running):
            n = n_req   # cannot start at once: as asked
            self._waiting.add(lease.id)
        else:
            self.store(now, plan)
        self._arrived[lease.id] = n
        return self.shape(lease, n, 2 * n_req)

    def reallocate(self, now, reasons):
        running = self.running()
        plan = self.stored(now) or self.plan(now, running, [])
        reverted = (frozenset(l.id for l in running if plan[l.id][0] > self.nodes(l))
                    if self.jobs_waiting(now) else frozenset())
        out = self.decisions(plan, running, now, forced=reverted)
        if out:
            self._round = now
        return out

    def may_resize(self, lease: Lease, now: float) -> bool:
        """The job's own interval has passed and, with ``reactive-resize-scope = site``, so
        has the site's since its last round of changes."""
        if not super().may_resize(lease, now):
            return False
        return (self.resize_scope == "job" or self.resize_interval <= 0
                or now - self._round >= self.resize_interval - 1e-6)

    def minimum(self, lease: Lease, now: float, new: bool) -> int:
        """Fig. 2, lines 14-20: the fewest servers keeping the average speedup at SP(N)/F
        until the next epoch starts, with a migration's worth to spare (see
        :meth:`~.base.GreenParPolicy.sla_margin`; a new job starts with no work done). With
        ``reactive-slack = above-request``, no fewer than :meth:`banked_floor`."""
        if new:
            n = self.least_new_servers(lease, now, 2 * self.requested(lease))
            # a new job has banked nothing
            return max(n, self.requested(lease)) if self.slack_reading == "above-request" else n
        n = self.least_servers(lease, now)
        if self.slack_reading == "above-request":
            n = max(n, self.banked_floor(lease, now))
        return n

    def banked_floor(self, lease: Lease, now: float) -> int:
        """The fewest servers a running job may have when it spends only the work it did
        above its requested pace: below its N servers only if it stays at or above SP(N)
        single-server seconds per second until it may be decided on again (the same margin
        as the SLA's, :meth:`~.base.GreenParPolicy.sla_margin`, at F = 1)."""
        n_req, v, span = self.requested(lease), lease.vms.count, self.span(now)
        pace = self.reference(lease)
        options = [k for k, _ in self.options(lease, v)]
        for k in options:
            if k >= n_req or self.sla_margin(lease, now, k, v, span, rate=pace) >= -1e-6:
                return k
        return options[-1]

    def plan(self, now: float, running: list[Lease], new: list[Lease],
             fixed: dict[int, int] | None = None) -> dict[int, tuple[int, int]]:
        """Servers and VMs for every running and new job (``fixed``: servers of jobs that
        are neither, already decided)."""
        jobs = [(l, False) for l in running] + [(l, True) for l in new]
        n = {l.id: self.minimum(l, now, fresh) for l, fresh in jobs}
        # a running job changed less than resize-interval ago keeps its servers (unless its
        # SLA needs more) and does not grow
        held = {l.id for l, fresh in jobs if not fresh and not self.may_resize(l, now)}
        for lease, _ in jobs:
            if lease.id in held and not self.must_change(lease, now):
                n[lease.id] = self.nodes(lease)
        waiting = self.jobs_waiting(now)
        if waiting:
            # GreenPar (3.1) reverts to the requested allocations when jobs cannot start on
            # arrival: a shrunk job takes its servers back before a waiting job is promised
            # them (it could not grow back over a reservation later), and none grows
            for lease, fresh in jobs:
                if not fresh:
                    n[lease.id] = max(n[lease.id], self.requested(lease))
        vms = {l.id: (l.vms.count if not fresh else 2 * self.requested(l)) for l, fresh in jobs}
        used = sum(n.values()) + sum((fixed or {}).values())
        green_servers = self.servers_powered(self.green(now, now + self.epoch))
        goal = used if waiting else min(green_servers, self.servers)
        # fit: a doubling keeps the total within G; while-short: within the site
        limit = goal if self.growth_reading == "fit" or waiting else self.servers
        span = self.span(now)
        while used < goal:
            best = None
            for lease, fresh in jobs:
                options = dict(self.options(lease, vms[lease.id]))
                now_n = n[lease.id]
                bigger = 2 * now_n
                if bigger not in options or used + now_n > limit or lease.id in held:
                    continue
                # growing a running job pauses it: it must not end in that dip below its SLA
                if not fresh and not self.keeps_sla(lease, now, bigger, vms[lease.id], span):
                    continue
                gain = (options[bigger] - options[now_n]) / now_n
                if gain > 0 and (best is None or gain > best[0]):
                    best = (gain, lease.id, now_n)
            if best is None:
                break
            n[best[1]] += best[2]
            used += best[2]
        return {i: (n[i], vms[i]) for i in n}


class Nebulous(RevertingPolicy):
    """GreenPar's Nebulous: only a speedup hint (excellent, good, fair, poor) and a run-time
    estimate (the mean run time of the application's earlier jobs; none for its first). A
    job starts with 4N VMs on 2N servers if the predicted green power covers 2N more servers
    for its estimated run time, else 2N VMs on N. Each epoch, green power above what the
    jobs draw goes one step (a doubling) at a time to the jobs with the best hint and the
    lowest average allocation against N; a deficit takes servers back in the reverse order;
    a job's average allocation never falls below N/F. While a job waits (it could not
    start on arrival), every running job is back at N servers at least, grown ones at N
    when they may change, and none grows (section 3.1, as Reactive)."""

    name = "nebulous"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.history: dict[str, list[float]] = defaultdict(list)
        #: what the hint measures: "servers" (of 2N VMs) or "resources" (servers and VMs)
        self.hint_reading: str = ctx.config.get("greenpar", "nebulous-hint")
        #: "allocation": every server-second counts to the floor; "within-f": at most N
        self.slack_reading: str = ctx.config.get("greenpar", "nebulous-slack")

    def hint(self, lease: Lease) -> int:
        """0 (excellent) to 3 (poor): what doubling its servers at the reference gives (with
        ``nebulous-hint = resources``, doubling its servers and VMs, if it may run 4N)."""
        n = self.requested(lease)
        options = dict(self.options(lease, 2 * n))
        gain = options.get(2 * n, options[n]) / options[n]
        if self.hint_reading == "resources":
            bigger = dict(self.options(lease, 4 * n))
            if 2 * n in bigger:
                gain = bigger[2 * n] / options[n]
        return 0 if gain >= 1.7 else 1 if gain >= 1.4 else 2 if gain >= 1.15 else 3

    def estimate(self, lease: Lease) -> float | None:
        import statistics  # (loaded only by the runs that estimate: a few ms of start-up)

        runs = self.history.get(str(lease.extra["app"]))
        return statistics.fmean(runs) if runs else None

    @hookimpl
    def lease_ended(self, lease: Lease, now: float) -> None:
        if lease.malleable is not None and self.is_job(lease) and lease.state.value == "done":
            self.history[str(lease.extra["app"])].append(lease.run_duration)

    def initial(self, lease: Lease, now: float) -> Allocation | None:
        if not self.is_job(lease):
            return None
        n = self.requested(lease)
        self.arrival_instant(now)
        free = self.free_servers(now) - sum(self._arrived.values())
        if free < n:    # cannot start at once on the servers now free: running jobs revert
            self._waiting.add(lease.id)
        estimate = self.estimate(lease)
        k, v = n, 2 * n
        if estimate is not None and free >= 2 * n and 4 * n in dict(
                self.profiles.options(str(lease.extra["app"]), 4 * n)):
            busy = sum(self.nodes(l) for l in self.running()) + sum(self._arrived.values())
            powered = self.servers_powered(self.green_min(now, now + estimate))
            if powered - busy >= 2 * n and 2 * n <= self.servers:
                k, v = 2 * n, 4 * n
        self._arrived[lease.id] = k
        return self.shape(lease, k, v)

    def green_min(self, start: float, end: float) -> float:
        """The least hourly mean green power predicted over ``[start, end)``."""
        t, least = start, math.inf
        while t < end:
            least = min(least, _mean_forecast(self, start, t, min(t + 3600.0, end)))
            t += 3600.0
        return 0.0 if math.isinf(least) else least

    def allocation_so_far(self, lease: Lease, now: float, cap: float = math.inf) -> float:
        """Server-seconds the job has had (counting at most ``cap`` servers at a time)."""
        m = lease.malleable
        assert m is not None
        times = [t for t, _, _, _ in m.history] + [now]
        return sum(min(n, cap) * (b - a) for (a, n, _, _), b in zip(m.history, times[1:]))

    def floor(self, lease: Lease, now: float, span: float | None = None) -> int:
        """The fewest servers keeping the average allocation at N/F for another ``span``
        seconds (default: one epoch). The average only falls while the job is below N/F, so
        it holds throughout if it holds at the span's end."""
        span = self.epoch if span is None else span
        v = lease.vms.count
        cap = self.requested(lease) if self.slack_reading == "within-f" else math.inf
        have = self.allocation_so_far(lease, now, cap)
        need = self.requested(lease) / self.slowdown * (self.elapsed(lease, now) + span)
        for n, _ in self.options(lease, v):
            if have + min(n, cap) * span >= need - 1e-9:
                return n
        return self.options(lease, v)[-1][0]

    def must_change(self, lease: Lease, now: float) -> bool:
        """Nebulous' SLA is its allocation floor: would the job fall below it before the
        next epoch?"""
        return self.floor(lease, now) > self.nodes(lease)

    def reallocate(self, now, reasons):
        running = self.running()
        if not running:
            return []
        # a decision keeps the floor until the job may be decided on again (with
        # resize-interval, an hour: else a shrink is undone, forced, an epoch later); a job
        # changed less than resize-interval ago is held unless its floor needs more now
        span = self.span(now)
        fl = {l.id: self.floor(l, now, span if self.may_resize(l, now) else None)
              for l in running}
        n = {l.id: max(self.nodes(l), fl[l.id]) for l in running}
        if self.jobs_waiting(now):
            return self.revert(now, running, fl)
        # jobs changed less than resize-interval ago keep their servers (above their floor)
        allowed = {l.id: ([k for k, _ in self.options(l, l.vms.count)]
                          if self.may_resize(l, now) else [n[l.id]]) for l in running}

        def slack(l: Lease) -> float:
            elapsed = max(self.elapsed(l, now), 1.0)
            return self.allocation_so_far(l, now) / elapsed / self.requested(l)

        green_servers = self.servers_powered(self.green(now, now + self.epoch))
        used = sum(n.values())
        if used < green_servers:
            order = sorted(running, key=lambda l: (self.hint(l), slack(l), l.id))
            grew = True
            while grew:
                grew = False
                for l in order:
                    step = n[l.id]
                    if (2 * n[l.id] in allowed[l.id] and used + step <= min(green_servers,
                                                                            self.servers)):
                        n[l.id] *= 2
                        used += step
                        grew = True
        elif used > green_servers:
            order = sorted(running, key=lambda l: (-self.hint(l), -slack(l), l.id))
            shrank = True
            while shrank and used > green_servers:
                shrank = False
                for l in order:
                    half = n[l.id] // 2
                    if half in allowed[l.id] and half >= fl[l.id] and used > green_servers:
                        n[l.id] = half
                        used -= half
                        shrank = True
        return self.decisions({i: (k, l.vms.count) for l in running
                               for i, k in [(l.id, n[l.id])]}, running, now)

    def revert(self, now: float, running: list[Lease], fl: dict[int, int]
               ) -> list[tuple[Lease, Allocation]]:
        """Section 3.1: while a job waits, every running job at its requested N servers (or
        its floor ``fl``, if more): a job below N goes back at once, within its
        ``resize-interval`` if need be (counted as forced), so that a waiting job is not
        promised its servers; a grown one gives its extra servers back when it may change;
        none grows."""
        wanted = {}
        for l in running:
            keep = not self.may_resize(l, now)
            n = max(self.requested(l), fl[l.id], self.nodes(l) if keep else 0)
            wanted[l.id] = (n, l.vms.count)
        back = frozenset(l.id for l in running if wanted[l.id][0] > self.nodes(l))
        return self.decisions(wanted, running, now, forced=back)


def _mean_forecast(policy: GreenParPolicy, issued: float, start: float, end: float) -> float:
    """The mean green power over ``[start, end)`` of the forecast in force at ``issued``."""
    from .base import mean_over

    power = policy.power
    series = power.forecast.at(issued) if power.forecast is not None else power.green
    return 0.0 if series is None else mean_over(series, start, end)
