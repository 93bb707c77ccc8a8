"""Offline's start: every job's requested plan (GreenPar's Baseline) as a point of the MILP
of :mod:`.milp`, and HiGHS (``highspy``) solving from it, so that a solve stopped by its limits
never returns a plan the MILP prices above that start (issue 39)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

if TYPE_CHECKING:
    from .milp import Built, Job, Problem, _Model


@attrs.frozen
class _Result:
    """A solve's outcome in ``scipy.optimize.milp``'s terms."""

    status: int
    message: str
    x: np.ndarray | None
    fun: float
    mip_node_count: int
    mip_dual_bound: float


#: HiGHS' model statuses as scipy's ``milp`` reports them (others: 4, with HiGHS' words)
_STATUS = {"kOptimal": 0, "kTimeLimit": 1, "kInfeasible": 2, "kUnbounded": 3,
           "kUnboundedOrInfeasible": 3}


def new_highs():
    """A ``highspy.Highs``. HiGHS writes its banner to the process's standard output when
    the first one is made, before any option can silence it: that once, the output is
    discarded, so that a quiet run stays quiet."""
    import highspy

    from .solver_output import filtered_stdout

    global _BANNER_SHOWN
    if _BANNER_SHOWN:
        return highspy.Highs()
    h = filtered_stdout(highspy.Highs, lambda line: False)
    _BANNER_SHOWN = True
    return h


_BANNER_SHOWN = False


def solve_from(model: _Model, start: np.ndarray | None, time_limit: float, gap: float,
               node_limit: int | None = None) -> _Result:
    """HiGHS (``highspy``) on the model, given ``start`` (a point of the model, or None)
    as its first incumbent: the plan it returns is then never worse than ``start``."""
    import highspy

    matrix, lo, hi = model.matrix()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(model.cols), len(model.rows)
    lp.col_cost_ = np.array(model.cols, dtype=float)
    lp.col_lower_ = np.array(model.lower, dtype=float)
    lp.col_upper_ = np.array(model.upper, dtype=float)
    lp.row_lower_ = np.array(lo, dtype=float)
    lp.row_upper_ = np.array(hi, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = lp.num_col_, lp.num_row_
    lp.a_matrix_.start_ = matrix.indptr
    lp.a_matrix_.index_ = matrix.indices
    lp.a_matrix_.value_ = matrix.data
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else
                       highspy.HighsVarType.kContinuous for i in model.integer]
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    h.setOptionValue("time_limit", max(time_limit, 0.1))
    h.setOptionValue("mip_rel_gap", gap)
    if node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(node_limit))
    if start is not None:
        given = highspy.HighsSolution()
        given.col_value = [float(v) for v in start]
        given.value_valid = True
        h.setSolution(given)
    h.run()
    info = h.getInfo()
    model_status = h.getModelStatus()
    status = _STATUS.get(model_status.name, 4)
    x = (np.array(h.getSolution().col_value)
         if info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
         else None)
    return _Result(status, f"HiGHS: {h.modelStatusToString(model_status)}", x,
                   float(info.objective_function_value), int(info.mip_node_count),
                   float(info.mip_dual_bound))


def plan_values(built: Built, plans: Mapping[int, Sequence[int]], vms: Mapping[int, int]
                ) -> dict[int, float] | None:
    """The integer variables' values of a plan: per job its VM count and its servers in each
    epoch (0: not running). None if the plan gives a job an allocation the model does not
    have (another VM count, a server count it may not have then, or an epoch outside its
    own)."""
    values: dict[int, float] = {}
    for key, by_epoch in built.xs.items():
        plan, v = plans[key], vms[key]
        if any(n and k not in by_epoch for k, n in enumerate(plan)):
            return None
        for k, here in by_epoch.items():
            n = plan[k] if k < len(plan) else 0
            for i, n_i, v_i, _ in here:
                values[i] = 1.0 if n and (n_i, v_i) == (n, v) else 0.0
            if n and not any(n_i == n and v_i == v for _, n_i, v_i, _ in here):
                return None
        for v_y, y in built.ys.get(key, {}).items():
            values[y] = 1.0 if v_y == v else 0.0
        first, current = built.before[key]
        for k, c in built.changes.get(key, {}).items():
            before = current if k == first else plan[k - 1]
            values[c] = 1.0 if plan[k] and before and plan[k] != before else 0.0
    return values


def complete(built: Built, values: Mapping[int, float], gap: float = 0.0,
             node_limit: int | None = None) -> tuple[np.ndarray, float] | None:
    """The cheapest point of the model whose variables listed in ``values`` have those
    values, and its objective; None if none is found. With every integer variable listed,
    the rest (slack, migrations, brown energy) are at their least (an LP); with some left
    free, HiGHS chooses them (a MILP, within ``gap`` and ``node_limit``)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    model = built.model
    lower = np.array(model.lower, dtype=float)
    upper = np.array(model.upper, dtype=float)
    for i, value in values.items():
        lower[i] = upper[i] = value
    matrix, lo, hi = model.matrix()
    constraints = LinearConstraint(matrix, lo, hi)
    if all(i in values for i, integral in enumerate(model.integer) if integral):
        result = milp(np.array(model.cols), constraints=constraints,
                      bounds=Bounds(lower, upper), options={"disp": False})
        return (np.asarray(result.x), float(result.fun)) if result.status == 0 else None
    options: dict[str, Any] = {"disp": False, "mip_rel_gap": gap}
    if node_limit is not None:
        options["node_limit"] = int(node_limit)
    result = milp(np.array(model.cols), constraints=constraints,
                  integrality=np.array(model.integer), bounds=Bounds(lower, upper),
                  options=options)
    if result.x is None:
        return None
    return np.asarray(result.x), float(result.fun)


def requested_start(problem: Problem, jobs: Sequence[Job], built: Built, gap: float,
                    node_limit: int | None) -> tuple[np.ndarray, float, int] | None:
    """A point of the model from every job's requested plan (:func:`requested_plan`), its
    objective, and how many jobs it could not keep as requested; None if none is found.

    The model counts a job running in an epoch for the whole epoch, so requested plans
    that follow one another inside an epoch can add up to more than the site there (0524:
    56 servers in an epoch where Baseline's jobs hold at most 48 at once). The jobs
    running in such an epoch are then left to HiGHS (within ``gap`` and ``node_limit``),
    the others kept as requested."""
    horizon = built.model.horizon
    picks = {job.key: requested_plan(problem, job, horizon) for job in jobs}
    plans = {k: p for k, (p, _) in picks.items()}
    values = plan_values(built, plans, {k: v for k, (_, v) in picks.items()})
    if values is None:
        return None
    if not plans:
        return None
    counted = np.sum([p for p in plans.values()], axis=0)
    over = [k for k in range(horizon) if counted[k] > problem.capacity]
    free = {key for key, plan in plans.items() if any(plan[k] for k in over)}
    for key in free:
        for here in built.xs[key].values():
            for i, *_ in here:
                del values[i]
        for y in built.ys.get(key, {}).values():
            del values[y]
        for c in built.changes.get(key, {}).values():
            del values[c]
    point = complete(built, values, gap, node_limit)
    return None if point is None else (*point, len(free))


def requested_plan(problem: Problem, job: Job, horizon: int) -> tuple[list[int], int]:
    """A job's servers in each epoch and its VMs when it runs as it asked (GreenPar's
    Baseline): N servers with 2N VMs from its first epoch until its work is done."""
    n = job.requested
    if n is None:
        raise ValueError(f"job {job.key}: its requested servers are not known")
    speed = {(m, v): sp for m, v, sp in job.options}[(n, 2 * n)]
    plan = [0] * horizon
    done, k = 0.0, job.first
    while done < job.work - 1e-9 and k < horizon:
        length = (job.first_length if k == job.first and job.first_length is not None
                  else problem.epoch)
        plan[k] = n
        done += speed * length
        k += 1
    return plan, 2 * n
