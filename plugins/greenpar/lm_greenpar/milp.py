"""GreenPar's optimisation (Fig. 3, Table 1) as a MILP, solved by HiGHS (``scipy.optimize.milp``).

Time is cut into epochs ``k = 0..K-1`` of ``epoch`` seconds from ``t0`` (epoch 0 may be shorter:
``first_length``). A job ``j`` chooses, in each epoch from its first, one allocation ``o``
(servers n, VMs v, speedup SP) or none (binaries ``x[j,k,o]``); running is ``r[j,k] =
sum_o x[j,k,o]``.

- no preemption: a job runs in its first epoch and, once stopped, stays stopped
  (``r[j,k+1] <= r[j,k]``);
- V fixed: a job not started yet picks one VM count (binaries ``y[j,v]``, ``x <= y``);
- completion: ``sum SP x len >= work`` (single-server seconds);
- SLA, cumulative (stronger than the paper's bound on the total run time, so that a plan
  followed until the work ends keeps it): at the end of every epoch in which the job runs,
  ``done + sum_{k'<=k} SP x len >= rate x (elapsed + sum_{k'<=k} len) x r[j,k] - slack_j``;
  ``slack_j >= 0`` costs a large penalty (it is positive only when the SLA cannot be met);
- capacity: ``sum_j n x <= C`` per epoch;
- a running job changed less than ``resize-interval`` ago keeps its servers for its first
  ``hold`` epochs;
- migrations: ``d[j,k] >= |S[j,k] - S[j,k-1]|`` while the job runs in both epochs
  (S = sum n x; the running jobs' allocation before epoch 0 is known), energy ME x d;
- with ``Problem.resize_interval`` (not in Fig. 3; ``[greenpar] plan-resize-interval``): a
  binary ``c[j,k] >= d[j,k] / M`` marks a change at epoch k's start, and the changes of a job
  whose starts lie less than the interval apart sum to 1 at most, so the plan changes a job
  no more often than the run may (its start is not a change, as in the run);
- brown energy (kWh): ``b[k] >= (base + P sum n x) len + ME sum d - GE len``, ``b >= 0``;
- objective (1): ``sum_k PB[k] b[k] + beta_cost x (1/|J|) sum r len / 3600`` (eq. 6: the
  average run time in hours, the jobs' earlier run time being a constant).

Pow(n) = P n (P = a busy server's watts minus a sleeping one's, ``base`` = all servers
sleeping) and ME(n) = ME n are linear, as the paper's.

Two limits stop a solve before HiGHS proves its plan within the gap. ``node_limit`` (HiGHS'
``mip_max_nodes``, branch-and-bound nodes) is deterministic: the same problem and options
give the same nodes, plan and status on any machine. ``time_limit`` (wall-clock seconds) is a
safety net only: where it stops a solve depends on the machine's speed and load. Either way
the solve returns the best plan found, if HiGHS has one (it may have none when a limit stops
it early: the solution is then empty, as for an infeasible problem).

A solve may start from every job's requested plan (``start_requested``, Offline's): HiGHS
(``highspy``, whose ``setSolution`` takes a starting point; scipy's ``milp`` takes none) then
has that plan as its first incumbent, so a solve stopped by a limit returns nothing worse.
Stopped at 1,000 nodes on day 0501 without it, HiGHS' plan paid 812 server-seconds of SLA
slack, $811,669 by this objective, where the requested plan, a point of the same MILP, costs
$0.733.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

JOULES_PER_KWH = 3.6e6
#: $ per single-server second of SLA slack: far above any energy or run-time saving
SLACK_PENALTY = 1e3


@attrs.frozen
class Job:
    """One job of the problem."""

    key: int
    #: allowed allocations: (servers, VMs, speedup)
    options: tuple[tuple[int, int, float], ...]
    work: float              #: single-server seconds still to do
    done: float = 0.0        #: single-server seconds done
    elapsed: float = 0.0     #: seconds it has run
    sla_rate: float = 0.0    #: single-server seconds per second the SLA needs
    first: int = 0           #: the epoch it starts (or goes on) in
    first_length: float | None = None   #: seconds of its first epoch (None: an epoch)
    current: int | None = None          #: servers it has now (None: not started)
    slowdown: float = 1.1    #: F (bounds how many epochs it may run)
    hold: int = 0            #: its first epochs in which it keeps ``current`` servers
    requested: int | None = None        #: N, the servers it asked for (None: not known)


@attrs.frozen
class Problem:
    epoch: float
    green: Sequence[float]          #: mean green watts of each epoch
    price: Sequence[float]          #: brown $/kWh of each epoch
    base_watts: float               #: every server asleep
    server_watts: float             #: a busy server's watts above a sleeping one's
    migration_joules: float         #: per server gained or lost
    capacity: int
    beta_cost: float                #: $ per hour of average run time
    first_length: float | None = None   #: seconds of epoch 0 (None: an epoch)
    #: a job's servers change at most once within this many seconds (0: no limit)
    resize_interval: float = 0.0


@attrs.frozen
class Solution:
    status: int                     #: scipy's: 0 optimal, 1 time limit, 2 infeasible...
    message: str
    time_limited: bool              #: the wall-clock limit stopped it (machine-dependent)
    seconds: float
    objective: float
    #: per job key: VMs chosen, and servers in each epoch (0: not running)
    vms: dict[int, int]
    servers: dict[int, list[int]]
    slack: dict[int, float]
    node_limited: bool = False      #: the node limit stopped it (deterministic)
    nodes: int | None = None        #: branch-and-bound nodes HiGHS solved
    #: the objective of the starting plan HiGHS was given (None: none, or not a point of
    #: the model)
    start_objective: float | None = None
    #: jobs of the starting plan not kept as requested (:func:`requested_start`)
    start_changed: int = 0
    #: HiGHS' dual bound: no point of the model has a lower objective (None: not finite)
    dual_bound: float | None = None

    @property
    def ok(self) -> bool:
        return bool(self.servers)


def epochs_needed(job: Job, epoch: float) -> int:
    """The most epochs the job may run: its SLA bounds its run time (with one to spare for a
    partial first epoch); without an SLA rate, until its work is done at its slowest."""
    total = job.done + job.work
    if job.sla_rate > 0:
        seconds = total / job.sla_rate - job.elapsed
    else:
        seconds = job.work / min(sp for _, _, sp in job.options)
    return max(1, math.ceil(seconds / epoch - 1e-9) + 1)


#: the variables of a job in one epoch: (index, servers, VMs, speedup) of each allocation
_Options = list[tuple[int, int, int, float]]


class _Model:
    """The MILP as it is built: its variables (cost, bounds, integrality) and rows, in the
    order they are added, and per epoch the terms of its capacity and brown-energy rows."""

    def __init__(self, horizon: int) -> None:
        self.horizon = horizon
        self.cols: list[float] = []            # objective coefficients
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[int] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []
        #: per epoch: the servers of each allocation, its server-seconds, and the joules of
        #: each migration variable
        self.servers: list[dict[int, float]] = [dict() for _ in range(horizon)]
        self.seconds: list[dict[int, float]] = [dict() for _ in range(horizon)]
        self.migrations: list[dict[int, float]] = [dict() for _ in range(horizon)]

    def var(self, cost: float, lo: float = 0.0, hi: float = 1.0, integral: bool = True) -> int:
        self.cols.append(cost)
        self.lower.append(lo)
        self.upper.append(hi)
        self.integer.append(1 if integral else 0)
        return len(self.cols) - 1

    def row(self, coefs: dict[int, float], lo: float, hi: float) -> None:
        self.rows.append((coefs, lo, hi))

    def solve(self, time_limit: float, gap: float, node_limit: int | None = None):
        """HiGHS's result on the model (``scipy.optimize.milp``'s ``OptimizeResult``: its
        status, message, ``x``, the values of the variables (None: no solution), ``fun``,
        the objective, and ``mip_node_count``)."""
        # scipy.optimize costs about 0.4 CPU-s to import: only runs that solve pay for it
        from scipy.optimize import Bounds, LinearConstraint, milp

        matrix, lo, hi = self.matrix()
        options = {"time_limit": max(time_limit, 0.1), "disp": False, "mip_rel_gap": gap}
        if node_limit is not None:
            options["node_limit"] = int(node_limit)
        from .solver_output import without_debug_line

        return without_debug_line(lambda: milp(
            np.array(self.cols), constraints=LinearConstraint(matrix, lo, hi),
            integrality=np.array(self.integer), bounds=Bounds(self.lower, self.upper),
            options=options))

    def matrix(self):
        """The rows as a sparse matrix (``scipy.sparse.csr_array``) and their lower and
        upper bounds."""
        from scipy import sparse

        data: list[float] = []
        ri: list[int] = []
        ci: list[int] = []
        lo: list[float] = []
        hi: list[float] = []
        for r, (coefs, a, upper_bound) in enumerate(self.rows):
            for c, value in coefs.items():
                ri.append(r)
                ci.append(c)
                data.append(value)
            lo.append(a)
            hi.append(upper_bound)
        matrix = sparse.csr_array((data, (ri, ci)), shape=(len(self.rows), len(self.cols)))
        return matrix, lo, hi


def stopped_by_node_limit(status: int, message: str, nodes: int | None,
                          node_limit: int | None) -> bool:
    """Whether HiGHS stopped at its node limit. scipy has no status of its own for it: HiGHS'
    "Solution limit reached" (its model status 16, which ``mip_max_nodes`` gives) comes back
    as scipy's status 4 ("not recognized") with HiGHS' words in the message."""
    if node_limit is None or status in (0, 1, 2, 3):
        return False
    return "solution limit" in message.lower() or (nodes is not None and nodes >= node_limit)


@attrs.frozen
class Built:
    """The MILP of a problem as built: the model, and per job its allocations' variables by
    epoch (index, servers, VMs, speedup) and its slack variable."""

    model: _Model
    xs: dict[int, dict[int, _Options]]
    slack: dict[int, int]
    #: per job with a choice of VMs: the binary of each VM count
    ys: dict[int, dict[int, int]]
    #: per job: the binary of a change at each epoch's start (``resize_interval`` only)
    changes: dict[int, dict[int, int]] = attrs.field(factory=dict)
    #: per job: its first epoch, and its servers before it (None: not started)
    before: dict[int, tuple[int, int | None]] = attrs.field(factory=dict)


def build(problem: Problem, jobs: Sequence[Job]) -> Built:
    """The MILP of the module docstring for ``problem`` and ``jobs``, not solved."""
    horizon = len(problem.green)
    lengths = np.full(horizon, problem.epoch)
    if problem.first_length is not None:
        lengths[0] = problem.first_length
    model = _Model(horizon)
    n_jobs = max(len(jobs), 1)
    xs: dict[int, dict[int, _Options]] = {}   # job -> k -> vars
    slack: dict[int, int] = {}
    ys: dict[int, dict[int, int]] = {}
    changes: dict[int, dict[int, int]] = {}
    for job in jobs:
        xs[job.key], slack[job.key], ys[job.key], moves = _add_job(model, problem, job,
                                                                   lengths, n_jobs)
        if problem.resize_interval > 0:
            changes[job.key] = _add_changes(model, problem, job, lengths, moves)
    _add_epochs(model, problem, lengths)
    before = {job.key: (job.first, job.current) for job in jobs}
    return Built(model, xs, slack, ys, changes, before)


def solve(problem: Problem, jobs: Sequence[Job], time_limit: float, gap: float = 1e-4,
          node_limit: int | None = None, start_requested: bool = False) -> Solution:
    """Solve the MILP (see the module docstring) within ``node_limit`` branch-and-bound nodes
    (None: no limit) and ``time_limit`` wall-clock seconds.

    With ``start_requested``, HiGHS (``highspy``) starts from every job's requested plan
    (:func:`requested_plan`) when that plan is a point of the model, so the plan it returns
    is never worse; without, ``scipy.optimize.milp`` solves it as it is."""
    t_start = time.process_time()
    built = build(problem, jobs)
    model, xs, slack, horizon = built.model, built.xs, built.slack, built.model.horizon
    start_objective = None
    start_changed = 0
    if start_requested:
        from .milp_start import requested_start, solve_from

        start = None
        point = requested_start(problem, jobs, built, gap, node_limit)
        if point is not None:
            start, start_objective, start_changed = point
        result: Any = solve_from(model, start, time_limit, gap, node_limit)
    else:
        result = model.solve(time_limit, gap, node_limit)
    status, message, x = int(result.status), str(result.message), result.x
    nodes = getattr(result, "mip_node_count", None)
    nodes = None if nodes is None else int(nodes)
    bound = getattr(result, "mip_dual_bound", None)
    bound = float(bound) if bound is not None and math.isfinite(bound) else None
    seconds = time.process_time() - t_start
    limited = status == 1
    by_nodes = stopped_by_node_limit(status, message, nodes, node_limit)
    if x is None:
        return Solution(status, message, limited, seconds, math.nan, {}, {}, {},
                        node_limited=by_nodes, nodes=nodes, start_objective=start_objective,
                        start_changed=start_changed, dual_bound=bound)
    vms: dict[int, int] = {}
    plans: dict[int, list[int]] = {}
    for job in jobs:
        plan = [0] * horizon
        for k, here in xs[job.key].items():
            for i, n, v, _ in here:
                if x[i] > 0.5:
                    plan[k] = n
                    vms.setdefault(job.key, v)
        plans[job.key] = plan
        vms.setdefault(job.key, job.options[0][1])
    return Solution(status, message, limited, seconds, float(result.fun), vms, plans,
                    {j: float(x[s]) for j, s in slack.items()}, node_limited=by_nodes,
                    nodes=nodes, start_objective=start_objective, start_changed=start_changed,
                    dual_bound=bound)


def _add_job(model: _Model, problem: Problem, job: Job, lengths: np.ndarray, n_jobs: int
             ) -> tuple[dict[int, _Options], int, dict[int, int], dict[int, int]]:
    """A job's variables and rows: its VM count, its allocations in each epoch it may run
    (one at most; it runs in its first; contiguous), its cumulative SLA, its migrations and
    its completion. Returns its allocations' variables by epoch, its slack variable, its
    VM counts' binaries (none if it has one VM count) and its migration variables by
    epoch."""
    last = min(model.horizon, job.first + epochs_needed(job, problem.epoch))
    vm_counts = sorted({v for _, v, _ in job.options})
    ys: dict[int, int] | None = None
    if len(vm_counts) > 1:
        ys = {v: model.var(0.0) for v in vm_counts}
        model.row({y: 1.0 for y in ys.values()}, 1.0, 1.0)
    slack = model.var(SLACK_PENALTY, 0.0, math.inf, integral=False)
    xs: dict[int, _Options] = {}
    progress: dict[int, float] = {}
    elapsed = job.elapsed
    prev_servers: dict[int, float] | None = None
    moves: dict[int, int] = {}
    for k in range(job.first, last):
        length = (job.first_length if k == job.first and job.first_length is not None
                  else lengths[k])
        here = _allocations(model, problem, job, k, length, ys, n_jobs)
        xs[k] = here
        running = {i: 1.0 for i, _, _, _ in here}
        model.row(running, 0.0 if k > job.first else 1.0, 1.0)       # one option; first: run
        if k > job.first:
            before = {i: -1.0 for i, _, _, _ in xs[k - 1]}
            model.row({**running, **before}, -math.inf, 0.0)         # contiguous
        for i, _, _, sp in here:
            progress[i] = sp * length
        elapsed += length
        # cumulative SLA at the end of epoch k, if the job runs in it
        sla = dict(progress)
        for i, _, _, _ in here:
            sla[i] = sla.get(i, 0.0) - job.sla_rate * elapsed
        sla[slack] = 1.0
        if job.sla_rate > 0:
            model.row(sla, -job.done, math.inf)
        servers = {i: float(n) for i, n, _, _ in here}
        if prev_servers is not None or job.current is not None:
            moves[k] = _add_migration(model, problem, job, k, servers, prev_servers)
        prev_servers = servers
    model.row(dict(progress), job.work, math.inf)                    # completion
    return xs, slack, ys or {}, moves


def _allocations(model: _Model, problem: Problem, job: Job, k: int, length: float,
                 ys: dict[int, int] | None, n_jobs: int) -> _Options:
    """The variables of the allocations a job may have in epoch ``k`` (each tied to its VM
    count's, when the job has several)."""
    hours = length / 3600.0
    here = []
    for n, v, sp in job.options:
        if k < job.first + job.hold and n != job.current:
            continue     # changed too recently to change again (resize-interval)
        i = model.var(problem.beta_cost * hours / n_jobs)
        here.append((i, n, v, sp))
        if ys is not None:
            model.row({i: 1.0, ys[v]: -1.0}, -math.inf, 0.0)
        model.servers[k][i] = float(n)
        model.seconds[k][i] = n * length
    return here


def _add_migration(model: _Model, problem: Problem, job: Job, k: int,
                   servers: dict[int, float], prev_servers: dict[int, float] | None) -> int:
    """The servers a job gains or loses from epoch ``k - 1`` (or its current allocation) to
    ``k`` while it runs in both: ``d >= |S[k] - S[k-1]|``, each a row relaxed by a big M when
    it does not run in epoch ``k``. Returns ``d``'s variable."""
    d = model.var(0.0, 0.0, math.inf, integral=False)
    model.migrations[k][d] = problem.migration_joules
    big = float(max(n for n, _, _ in job.options))
    for sign in (1.0, -1.0):
        coefs = {i: sign * s for i, s in servers.items()}
        const = 0.0
        if prev_servers is not None:
            for i, s in prev_servers.items():
                coefs[i] = coefs.get(i, 0.0) - sign * s
        else:
            const = sign * float(job.current or 0)
        for i in servers:
            coefs[i] = coefs.get(i, 0.0) + big
        coefs[d] = -1.0
        model.row(coefs, -math.inf, big + const)
    return d


def _add_changes(model: _Model, problem: Problem, job: Job, lengths: np.ndarray,
                 moves: dict[int, int]) -> dict[int, int]:
    """``resize_interval`` for one job: a binary ``c[k]`` per migration variable ``d[k]``
    (``d <= M c``: no servers move unless ``c`` is 1) and, from each ``k``, one change at most
    among the epochs that start less than the interval after ``k`` does. Epochs held by
    ``job.hold`` have no change to mark (the job keeps its servers there). Returns the
    binaries by epoch."""
    big = float(max(n for n, _, _ in job.options))
    starts = np.concatenate(([0.0], np.cumsum(lengths)))   # (a new job's start marks none)
    changes: dict[int, int] = {}
    for k, d in sorted(moves.items()):
        if k < job.first + job.hold:
            continue
        c = model.var(0.0)
        model.row({d: 1.0, c: -big}, -math.inf, 0.0)
        changes[k] = c
    for k, c in changes.items():
        window = {c: 1.0}
        window.update({c2: 1.0 for k2, c2 in changes.items()
                       if k2 > k and starts[k2] - starts[k] < problem.resize_interval - 1e-6})
        if len(window) > 1:
            model.row(window, -math.inf, 1.0)
    return changes


def _add_epochs(model: _Model, problem: Problem, lengths: np.ndarray) -> None:
    """Each epoch's capacity row and its brown-energy variable and row."""
    for k in range(model.horizon):
        if model.servers[k]:
            model.row(model.servers[k], -math.inf, problem.capacity)
        b = model.var(problem.price[k], 0.0, math.inf, integral=False)
        coefs = {i: problem.server_watts * s / JOULES_PER_KWH
                 for i, s in model.seconds[k].items()}
        for d, joules in model.migrations[k].items():
            coefs[d] = joules / JOULES_PER_KWH
        coefs[b] = -1.0
        model.row(coefs, -math.inf,
                  (problem.green[k] - problem.base_watts) * lengths[k] / JOULES_PER_KWH)


def enumerate_best(problem: Problem, jobs: Sequence[Job]) -> tuple[float, dict[int, list[int]]]:
    """The same problem by brute force over every plan (tests: tiny instances only)."""
    import itertools

    horizon = len(problem.green)
    lengths = np.full(horizon, problem.epoch)
    if problem.first_length is not None:
        lengths[0] = problem.first_length
    choices = []
    for job in jobs:
        plans = []
        for v in sorted({v for _, v, _ in job.options}):
            opts = [(n, sp) for n, vv, sp in job.options if vv == v]
            for stop in range(job.first + 1, horizon + 1):
                for combo in itertools.product(opts, repeat=stop - job.first):
                    plans.append((v, combo))
        choices.append(plans)
    best: tuple[float, dict[int, list[int]]] = (math.inf, {})
    for pick in itertools.product(*choices):
        servers = np.zeros(horizon)
        migr = np.zeros(horizon)
        runtime = 0.0
        ok = True
        plan_out = {}
        for job, (_, combo) in zip(jobs, pick):
            plan = [0] * horizon
            done, elapsed, prev = job.done, job.elapsed, job.current
            changed: list[float] = []
            for step, (n, sp) in enumerate(combo):
                k = job.first + step
                if step < job.hold and n != job.current:
                    ok = False
                if prev is not None and n != prev:
                    changed.append(float(np.sum(lengths[:k])))
                plan[k] = n
                servers[k] += n
                done += sp * lengths[k]
                elapsed += lengths[k]
                if done < job.sla_rate * elapsed - 1e-9:
                    ok = False
                if prev is not None:
                    migr[k] += abs(n - prev) * problem.migration_joules
                prev = n
                runtime += lengths[k] / 3600.0
            if done - job.done < job.work - 1e-9:
                ok = False
            if any(b - a < problem.resize_interval - 1e-6 for a, b in zip(changed, changed[1:])):
                ok = False
            plan_out[job.key] = plan
        if not ok or (servers > problem.capacity).any():
            continue
        energy = (problem.base_watts + problem.server_watts * servers) * lengths + migr
        brown = np.maximum(0.0, energy - np.asarray(problem.green) * lengths) / JOULES_PER_KWH
        cost = float(np.dot(problem.price, brown)) + problem.beta_cost * runtime / len(jobs)
        if cost < best[0] - 1e-12:
            best = (cost, plan_out)
    return best
