"""GreenPar's optimising policies, ``aggressive`` and ``offline``: the MILP of Fig. 3
(:mod:`.milp`) over epochs aligned with the run's (``[malleable] epoch``).

- ``aggressive`` knows the jobs that have arrived, their run times and speedup profiles, and
  the green *forecast*. It solves at every arrival (choosing the new job's VMs and every job's
  servers), every end and every new forecast, and in between follows its last plan at each
  epoch.
- ``offline`` knows every job of the workload in advance (read ahead from the trace) and the
  *actual* green production; it solves once, at the first arrival, with its own limits, and
  follows that plan.

Each solve stops at a node limit (deterministic) or, as a safety net, a wall-clock limit. A
solve the wall-clock limit stopped makes the run's result depend on the machine's speed and
load: the summary says so (``greenpar_depends_on_machine``) and the run ends with a warning
on standard error.

Both keep each job's cumulative SLA at every epoch (a plan cut short by migration pauses is
topped up by the fewest servers that keep it), keep a job whose plan has ended at its last
allocation until it finishes, and fall back to the requested allocation when the problem has
no solution (a job that could not start at once).

With ``[greenpar] optimizing-revert`` both keep section 3.1's rule, GreenPar "reverts back to
the user-requested resource allocations when utilization becomes so high that jobs cannot be
started immediately upon arrival": while a job waits, every running job goes back to its
requested servers (:meth:`Optimizing.revert`), the plan is not followed and new jobs start as
they asked, without a solve; once no job waits, Aggressive solves again and Offline follows
its plan again.
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

from lease_manager import Allocation, Lease, hookimpl

from .base import beta_server_watts, mean_over
from .heuristics import RevertingPolicy

if TYPE_CHECKING:   # (the MILP module, with its attrs classes, loads when a policy solves)
    from .milp import Job, Problem, Solution


def solve(problem: Problem, jobs: list[Job], limit: float, gap: float,
          node_limit: int | None = None, start_requested: bool = False) -> Solution:
    """:func:`.milp.solve` (its module loads with the first solve: start-up)."""
    from .milp import solve as milp_solve

    return milp_solve(problem, jobs, limit, gap, node_limit, start_requested=start_requested)


class Optimizing(RevertingPolicy):
    """What ``aggressive`` and ``offline`` share: problems, plans, statistics, and section
    3.1's revert (``[greenpar] optimizing-revert``)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.beta: float = ctx.config.get("greenpar", "beta")
        self.gap: float = ctx.config.get("greenpar", "mip-gap")
        #: watts of the server whose electricity prices a run-time hour (beta's unit)
        self.runtime_watts = beta_server_watts(ctx)
        self.plan_t0 = 0.0
        self.plan: dict[int, list[int]] = {}
        self.plan_vms: dict[int, int] = {}
        #: this policy's limits (set by each policy: its own options)
        self.time_limit = math.inf
        self.node_limit: int | None = None
        self.solves = 0
        self.limited = 0
        self.node_limited = 0
        self.failed = 0
        self.solver_seconds = 0.0
        self.slack = 0.0
        #: jobs whose planned first allocation would have broken their SLA
        self.unsafe_starts = 0
        #: give HiGHS every job's requested plan as its starting solution (Offline)
        self.start_requested = False
        #: section 3.1's revert ([greenpar] optimizing-revert): "off", "at-arrival" or
        #: "within-interval"
        self.revert_mode: str = ctx.config.get("greenpar", "optimizing-revert")
        self.revert_on = self.revert_mode != "off"
        #: the last decisions were a revert (a job waited)
        self._reverting = False
        #: jobs that could not start on arrival by the plan, and revert decisions made
        self.revert_waits = 0
        self.revert_changes = 0
        #: the MILP keeps resize-interval too ([greenpar] plan-resize-interval)
        self.plan_interval: float = (self.resize_interval if
                                     ctx.config.get("greenpar", "plan-resize-interval")
                                     else 0.0)

    # --------------------------------------------------------------------- problems
    def grid(self, now: float) -> float:
        """The start of the epoch holding ``now`` (epochs count from the run's start)."""
        return math.floor(now / self.epoch + 1e-9) * self.epoch

    def problem(self, t0: float, first_length: float, epochs: int, issued: float | None
                ) -> Problem:
        """Epochs from ``t0``: green from the forecast issued at ``issued`` (None: the
        actual production), brown prices, the site's watts."""
        from .milp import Problem

        green, price = [], []
        for k in range(epochs):
            a = t0 if k == 0 else t0 + first_length + (k - 1) * self.epoch
            b = t0 + first_length + k * self.epoch
            if issued is None:
                green.append(self.green(a, b, actual=True))
            else:
                series = (self.power.forecast.at(issued) if self.power.forecast is not None
                          else self.power.green)
                green.append(0.0 if series is None else mean_over(series, a, b))
            price.append(mean_over(self.power.price, a, b))
        mean_price = sum(price) / len(price) if price else 0.0
        return Problem(epoch=self.epoch, green=green, price=price,
                       base_watts=self.idle_watts * self.servers,
                       server_watts=self.busy_watts - self.idle_watts,
                       migration_joules=self.migration_energy, capacity=self.servers,
                       beta_cost=self.beta * self.runtime_watts / 1000 * mean_price,
                       first_length=first_length, resize_interval=self.plan_interval)

    def job_running(self, lease: Lease, now: float) -> Job:
        from .milp import Job

        v = lease.vms.count
        done = self.done(lease, now)
        return Job(lease.id, tuple((n, v, sp) for n, sp in self.options(lease, v)),
                   work=max(self.total_work(lease) - done, 1e-6), done=done,
                   elapsed=self.elapsed(lease, now), sla_rate=self.sla_rate(lease),
                   current=self.nodes(lease), slowdown=self.slowdown,
                   hold=self.hold(lease, now))

    def hold(self, lease: Lease, now: float) -> int:
        """The epochs of a problem solved at ``now`` (the first from ``now`` to the next
        epoch's start) that start before the running job may change again."""
        if self.may_resize(lease, now):
            return 0
        free_at = self.last_resize(lease) + self.resize_interval
        second = self.grid(now) + self.epoch
        return 1 + max(0, math.ceil((free_at - second) / self.epoch - 1e-9))

    def job_new(self, lease: Lease, first: int = 0, first_length: float | None = None,
                vms: int | None = None) -> Job:
        """A job not started yet: it chooses 2N or 4N VMs (or has ``vms``)."""
        from .milp import Job

        n = self.requested(lease)
        options = tuple((k, v, sp) for v in ((2 * n, 4 * n) if vms is None else (vms,))
                        for k, sp in self.options(lease, v))
        return Job(lease.id, options, work=self.total_work(lease),
                   sla_rate=self.sla_rate(lease), first=first, first_length=first_length,
                   slowdown=self.slowdown, requested=n)

    def run_solver(self, problem: Problem, jobs: list[Job]) -> Solution:
        solution = (solve(problem, jobs, self.time_limit, self.gap, self.node_limit,
                          start_requested=True) if self.start_requested
                    else solve(problem, jobs, self.time_limit, self.gap, self.node_limit))
        self.solves += 1
        self.solver_seconds += solution.seconds
        if solution.time_limited:
            self.limited += 1
            self.ctx.metrics.record("greenpar_time_limited_solve", self.ctx.now,
                                    solution.seconds)
        if solution.node_limited:
            self.node_limited += 1
        if not solution.ok:
            self.failed += 1
        else:
            self.slack += sum(solution.slack.values())
        return solution

    def adopt(self, t0: float, solution: Solution) -> None:
        self.plan_t0 = t0
        self.plan = dict(solution.servers)
        self.plan_vms = dict(solution.vms)

    # ----------------------------------------------------------------- following
    def planned(self, lease: Lease, now: float) -> int:
        """Servers the plan gives ``lease`` from ``now`` (its current ones past the plan),
        topped up to keep its SLA over the next epoch."""
        current = self.nodes(lease)
        plan = self.plan.get(lease.id)
        k = math.floor((now - self.plan_t0) / self.epoch + 1e-9)
        n = current
        allowed = {m for m, _ in self.options(lease, lease.vms.count)}
        if plan is not None and 0 <= k < len(plan) and plan[k] in allowed:
            n = plan[k]
        if not self.may_resize(lease, now) and not self.must_change(lease, now):
            return current
        if not self.keeps_sla(lease, now, n, lease.vms.count, self.span(now)):
            n = self.least_servers(lease, now)
        return n

    def start_shape(self, lease: Lease, now: float, n: int, v: int) -> Allocation:
        """The planned first allocation, or, if it would break the job's SLA (a plan cut
        short by the solver's time limit can: it pays the SLA's slack), the fewest servers
        with those VMs that keep it."""
        if self.new_job_margin(lease, now, n, v) < -1e-6:
            self.unsafe_starts += 1
            n = self.least_new_servers(lease, now, v)
        return self.shape(lease, n, v)

    def follow(self, now: float) -> list[tuple[Lease, Allocation]]:
        running = self.running()
        wanted = {l.id: (self.planned(l, now), l.vms.count) for l in running}
        forced = self.make_room(wanted, running, now)
        return self.decisions(wanted, running, now, forced)

    # ---------------------------------------------------------- section 3.1's revert
    def start_servers(self, lease: Lease, now: float, n: int, v: int) -> int:
        """The servers :meth:`start_shape` gives a job planned to start on ``n``."""
        if self.new_job_margin(lease, now, n, v) < -1e-6:
            return self.least_new_servers(lease, now, v)
        return n

    def fits_now(self, n: int, now: float) -> bool:
        """Would a new job on ``n`` servers start at ``now``, with the running jobs on the
        servers the plan gives them now and the jobs that arrived at this instant on
        theirs?"""
        running = self.running()
        needed = (sum(self.planned(l, now) for l in running) + sum(self._arrived.values())
                  + n)
        return needed <= self.free_servers(now) + sum(self.nodes(l) for l in running)

    def unplanned(self, lease: Lease, now: float) -> Allocation:
        """A new job without a plan to start now (a failed solve, or no servers for it now):
        as asked. With the revert on, it waits, and the running jobs revert, only if it does
        not fit as asked beside the running jobs on their planned servers."""
        n = self.requested(lease)
        if not self.revert_on:
            return self.shape(lease, n, 2 * n)
        return self.as_asked(lease, waits=not self.fits_now(n, now))

    def as_asked(self, lease: Lease, waits: bool) -> Allocation:
        """A new job's requested shape (N servers, 2N VMs); ``waits``: it could not start on
        arrival by the plan."""
        n = self.requested(lease)
        self._arrived[lease.id] = n
        if waits:
            self._waiting.add(lease.id)
            self.revert_waits += 1
        return self.shape(lease, n, 2 * n)

    def start_while_waiting(self, lease: Lease, now: float) -> Allocation | None:
        """With the revert on and a job waiting: a new job as asked, without a plan (None:
        the policy plans it)."""
        if not self.revert_on:
            return None
        self.arrival_instant(now)
        return self.as_asked(lease, waits=False) if self.jobs_waiting(now) else None

    def start_if_fits(self, lease: Lease, now: float, planned: int,
                      vms: int) -> Allocation | None:
        """A new job on its plan's start; with the revert on, None if that does not fit now
        (the caller starts it as asked, waiting)."""
        if self.revert_on:
            start = self.start_servers(lease, now, planned, vms)
            if not self.fits_now(start, now):
                return None
            self._arrived[lease.id] = start
        return self.start_shape(lease, now, planned, vms)

    def revert_wanted(self, now: float) -> dict[int, tuple[int, int]]:
        """Every running job on its requested servers (with its VMs), or on the fewest that
        keep its SLA if those do not."""
        wanted = {}
        span = self.span(now)
        for lease in self.running():
            v = lease.vms.count
            allowed = [m for m, _ in self.options(lease, v)]
            n_req = self.requested(lease)
            n = min((m for m in allowed if m >= n_req), default=allowed[-1])
            if not self.keeps_sla(lease, now, n, v, span):
                n = max(n, self.least_servers(lease, now))
            wanted[lease.id] = (n, v)
        return wanted

    def revert(self, now: float) -> list[tuple[Lease, Allocation]]:
        """Section 3.1's revert, while a job waits: the running jobs back on their requested
        servers. With ``at-arrival``, at the arrival of a job that cannot start they revert
        at once; otherwise a job changed within ``resize-interval`` reverts once it may
        change (the hourly migration limit), unless its SLA needs it. The SLA guard
        (:meth:`~.base.GreenParPolicy.make_room`) acts as when following a plan."""
        running = self.running()
        wanted = self.revert_wanted(now)
        forced = self.make_room(wanted, running, now)
        if (self.revert_mode == "at-arrival" and now == self._arrived_at
                and self._waiting):
            forced = frozenset(l.id for l in running)
        out = self.decisions(wanted, running, now, forced)
        self.revert_changes += len(out)
        return out

    def reverts_now(self, now: float) -> bool:
        """Does a job wait, with the revert on (the decisions at ``now`` are a revert)?
        Records it: Aggressive solves again once the waits end."""
        if not self.revert_on:
            return False
        waiting = self.jobs_waiting(now)
        self._reverting = waiting
        return waiting

    def time_limit_option(self) -> str:
        return "solve-time-limit"

    @hookimpl
    def run_finished(self):
        if self.limited:
            print(f"lm-greenpar: warning: {self.limited} of {self.solves} MILP solves hit the "
                  f"wall-clock limit ([greenpar] {self.time_limit_option()} = "
                  f"{self.time_limit:g} s): this run's results depend on the machine's speed "
                  f"and load (greenpar_depends_on_machine)", file=sys.stderr)

    @hookimpl
    def collect_summary(self):
        revert = ({"greenpar_revert_waits": self.revert_waits,
                   "greenpar_revert_changes": self.revert_changes} if self.revert_on else {})
        return {**self.resize_summary(), **revert, "greenpar_solves": self.solves,
                "greenpar_solves_time_limited": self.limited,
                "greenpar_solves_node_limited": self.node_limited,
                "greenpar_depends_on_machine": self.limited > 0,
                "greenpar_solves_failed": self.failed,
                "greenpar_solver_cpu_seconds": round(self.solver_seconds, 3),
                "greenpar_sla_slack": self.slack,
                "greenpar_unsafe_starts": self.unsafe_starts,
                "greenpar_sla_guard_changes": self.sla_guard_changes}


class Aggressive(Optimizing):
    """GreenPar's Aggressive: the MILP over the jobs that have arrived, with the green
    forecast, solved at arrivals, ends and new forecasts (``[greenpar] solve-time-limit``)."""

    name = "aggressive"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.time_limit = ctx.config.get("greenpar", "solve-time-limit")
        self.node_limit = ctx.config.get("greenpar", "solve-node-limit") or None
        self._new: list[Lease] = []
        self._new_at = -math.inf

    def solve_now(self, now: float, new: list[Lease]) -> Solution | None:
        from .milp import epochs_needed

        running = self.running()
        jobs = [self.job_running(l, now) for l in running] + [
            self.job_new(l, vms=None if l is new[-1] else l.vms.count) for l in new]
        if not jobs:
            return None
        t0 = self.grid(now)
        first = t0 + self.epoch - now
        epochs = max(epochs_needed(j, self.epoch) for j in jobs)
        solution = self.run_solver(self.problem(t0, first, epochs, now), jobs)
        if solution.ok:
            # plan epoch k covers [t0 + k epoch, ...): the run's grid from t0
            self.adopt(t0, solution)
        return solution

    def initial(self, lease: Lease, now: float) -> Allocation | None:
        if not self.is_job(lease):
            return None
        if now != self._new_at:
            self._new, self._new_at = [], now
        reverted = self.start_while_waiting(lease, now)
        if reverted is not None:
            return reverted   # no solve
        self._new.append(lease)
        solution = self.solve_now(now, self._new)
        if solution is None or not solution.ok or solution.servers[lease.id][0] == 0:
            self._new.remove(lease)
            return self.unplanned(lease, now)
        self.store(now, {})
        started = self.start_if_fits(lease, now, solution.servers[lease.id][0],
                                     solution.vms[lease.id])
        if started is None:
            self._new.remove(lease)
            return self.as_asked(lease, waits=True)
        return started

    def reallocate(self, now, reasons):
        resuming = self._reverting
        if self.reverts_now(now):
            return self.revert(now)
        if self.stored(now) is None and (resuming or {"end", "policy"} & reasons):
            self.solve_now(now, [])   # (after a revert: the plan saw none of it)
        return self.follow(now)


class Offline(Optimizing):
    """GreenPar's Offline: the MILP over every job of the workload, known in advance, with
    the actual green production, solved once (``[greenpar] offline-time-limit``).

    HiGHS starts from Baseline's plan (every job at its requested servers from its arrival,
    when the site holds them all), so that a solve stopped by its limits never returns a
    plan worse than Baseline's by the MILP's objective: without it, on day 0501 HiGHS
    stopped at 1,000 nodes with a plan paying 812 server-seconds of SLA slack ($811,669)
    while Baseline's plan, a point of the same MILP, costs $0.733. The summary gives both
    objectives (``greenpar_start_objective``, None when Baseline's plan is not a point of the
    MILP, and ``greenpar_plan_objective``), HiGHS' dual bound (``greenpar_plan_dual_bound``:
    no plan of the MILP costs less) and whether HiGHS found nothing better than the
    start (``greenpar_start_kept``). Where Baseline's plans add up to more than the site in
    an epoch (the MILP counts a job for the whole of every epoch it runs in), the jobs
    running in it are left to HiGHS and the rest kept (``greenpar_start_changed_jobs``;
    0524: 14 jobs)."""

    name = "offline"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.time_limit = ctx.config.get("greenpar", "offline-time-limit")
        self.node_limit = ctx.config.get("greenpar", "offline-node-limit") or None
        self.solved = False
        self.start_requested = True
        self.start_objective: float | None = None
        self.start_changed = 0
        self.plan_objective: float | None = None
        self.plan_dual_bound: float | None = None

    def time_limit_option(self) -> str:
        return "offline-time-limit"

    def solve_all(self, first: Lease, now: float) -> None:
        from .milp import epochs_needed

        self.solved = True
        leases = [first] + [l for l in self.ctx.peek_arrivals() if self.is_job(l)]
        jobs = []
        for lease in leases:
            k = math.floor(lease.submit / self.epoch + 1e-9)
            jobs.append(self.job_new(lease, k, (k + 1) * self.epoch - lease.submit))
        epochs = max(j.first + epochs_needed(j, self.epoch) for j in jobs)
        solution = self.run_solver(self.problem(0.0, self.epoch, epochs, None), jobs)
        self.start_objective = solution.start_objective
        self.start_changed = solution.start_changed
        self.plan_dual_bound = solution.dual_bound
        if solution.ok:
            self.plan_objective = solution.objective
            self.adopt(0.0, solution)

    def initial(self, lease: Lease, now: float) -> Allocation | None:
        if not self.is_job(lease):
            return None
        if not self.solved:
            self.solve_all(lease, now)
        plan = self.plan.get(lease.id)
        k = math.floor(now / self.epoch + 1e-9)
        reverted = self.start_while_waiting(lease, now)
        if reverted is not None:
            return reverted
        if plan is None or not (0 <= k < len(plan)) or plan[k] == 0:
            return self.unplanned(lease, now)
        started = self.start_if_fits(lease, now, plan[k], self.plan_vms[lease.id])
        return started if started is not None else self.as_asked(lease, waits=True)

    def reallocate(self, now, reasons):
        if self.reverts_now(now):
            return self.revert(now)
        return self.follow(now)   # (after a revert: the plan again)

    def next_event(self, now: float) -> float:
        return math.inf   # it knows the actual production: forecasts do not concern it

    @hookimpl
    def collect_summary(self):
        kept = (self.start_objective is not None and self.plan_objective is not None
                and self.plan_objective >= self.start_objective * (1 - 1e-9))
        return {**super().collect_summary(),
                "greenpar_start_objective": self.start_objective,
                "greenpar_start_changed_jobs": self.start_changed,
                "greenpar_plan_objective": self.plan_objective,
                "greenpar_plan_dual_bound": self.plan_dual_bound,
                "greenpar_start_kept": int(kept)}
