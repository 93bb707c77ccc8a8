"""beta's scale in the MILP's objective (1): a run-time hour costs beta times one of the
site's servers' brown energy for an hour, and what that does to Aggressive's brown energy
against Baseline over the paper's range of beta (0.8 to 80)."""

from __future__ import annotations

import numpy as np
import pytest

import lm_greenpar.optimizing as optimizing
from lease_manager.energy.series import StepSeries
from lm_greenpar.figures import energy_until

from lmg_helpers import green, job, simulate, speedups

#: limited gains beyond the servers asked for (Fig. 13: "limited speedup")
TABLE = {"P": {4: {1: 0.9, 2: 2.0, 4: 2.3}, 8: {2: 1.9, 4: 2.3, 8: 2.5}}}
#: a short sunny day: no green until 1:00, 450 W until 6:00, none after
SUN = [(0, 0), (3600, 450), (6 * 3600, 0)]


def test_a_run_time_hour_costs_beta_server_hours(tmp_path, monkeypatch):
    """16 servers of 30 W busy (3 W asleep), brown at $0.1/kWh: with beta = 8 an hour of
    average run time costs 8 x 0.030 kWh x $0.1 = $0.024 (GreenPar's beta is the ratio of an
    EC2 hour's price to the electricity of the server that runs it); `beta-server-watts =
    300` gives the reading of beta's derivation taken literally, ten times that."""
    seen: list[float] = []
    solve = optimizing.solve

    def spy(problem, jobs, limit, gap, node_limit=None):
        seen.append(problem.beta_cost)
        return solve(problem, jobs, limit, gap, node_limit)

    monkeypatch.setattr(optimizing, "solve", spy)
    table = speedups(tmp_path / "sp.csv", TABLE)
    for watts, cost in ((0, 0.024), (300, 0.24)):
        seen.clear()
        simulate([job(1, "P", 2, 3600)], "aggressive", f"greenpar.speedups={table}",
                 "greenpar.beta=8", f"greenpar.beta-server-watts={watts}", servers=16,
                 watts="3:30")
        assert seen and all(c == pytest.approx(cost) for c in seen)


def brown_changes(tmp_path, server_watts: float, profiles=TABLE,
                  betas=(0.8, 8, 80)) -> dict[float, float]:
    """Aggressive's brown energy against Baseline's (%), per beta, both counted to the later
    end of the two (then every server asleep)."""
    table = speedups(tmp_path / "sp.csv", profiles)
    solar = green(tmp_path / "g", SUN)
    sun = StepSeries(np.array([t for t, _ in SUN], float), np.array([w for _, w in SUN], float))

    def jobs():
        return [job(i + 1, "P", 2, 6 * 3600, submit=3600 * i) for i in range(3)]

    def rows(run):
        e = run.energy
        return np.column_stack([e._rows_t, e._rows_it, e._rows_green])

    runs = {0.0: simulate(jobs(), "baseline", f"greenpar.speedups={table}", servers=16,
                          watts="3:30", solar=solar)}
    for beta in betas:
        runs[beta] = simulate(jobs(), "aggressive", f"greenpar.speedups={table}",
                              f"greenpar.beta={beta}",
                              f"greenpar.beta-server-watts={server_watts}", servers=16,
                              watts="3:30", solar=solar)
    until = max(r.energy.window[1] for r in runs.values())
    brown = {beta: energy_until(rows(r), until, 16 * 3.0, sun)[0] for beta, r in runs.items()}
    for r in runs.values():
        assert r.summary["greenpar_sla_violations"] == 0
    return {beta: 100 * (b / brown[0.0] - 1) for beta, b in brown.items() if beta}


def test_aggressive_saves_brown_energy_at_the_papers_beta_and_below(tmp_path):
    """Three jobs of P (N = 2: 2 servers, 4 VMs; 6 h at N) arriving at 0:00, 1:00 and 2:00 on
    16 servers, a short sunny day (450 W from 1:00 to 6:00). Baseline runs them on 2 servers
    each through the evening. With a run-time hour priced at one 30 W server's brown energy,
    Aggressive uses less brown energy than Baseline at beta = 0.8 and at the paper's 8 (about
    -11% and -19%: it runs faster on green and slower, within F, at night), as the paper
    reports over its range. At beta = 80 it does not: a run-time hour of ~3 active jobs is
    worth 80 x 30 / 3 = 800 Wh, more than the brown energy of running them faster through
    the night (about +29%); the paper says its observations hold up to 80, which our model
    does not reproduce on this instance. With the old scale (a 300 W server, ten times the
    run-time term), the paper's own beta = 8 already gives +29%: the sign flips inside the
    paper's range."""
    fixed = brown_changes(tmp_path, 0)
    assert fixed[0.8] < 0 and fixed[8] < 0
    assert fixed[80] > 0
    old = brown_changes(tmp_path, 300)
    assert old[0.8] < 0 and old[8] > 0


#: P with the shipped model's LU rows (lm_greenpar/data/speedups.csv): close to linear from 2 to
#: 4 servers (1.94 -> 3.57 with 8 VMs), where TABLE gains little (2.0 -> 2.3)
LU_LIKE = {"P": {4: {1: 0.9091, 2: 1.935, 4: 2.204}, 8: {2: 1.7506, 4: 3.567, 8: 4.026}}}


def test_better_speedups_make_aggressive_save_more_brown_energy(tmp_path):
    """The instance above at the paper's beta = 8, with P's profile limited (TABLE) or close to
    linear (LU_LIKE). GreenPar's section 5: a day of EP jobs (close to linear) makes Aggressive
    save more brown energy (-15%, against -10% with the NPB mix). On this instance, whose jobs
    run mostly in the sun, ours does too: the jobs grow on the green and end sooner, so less of
    them runs at night (about -19% limited, -24% LU-like). On the real day 0524 it does not
    (plugins/greenpar/README.md, cause 3): there, better speedups make the run-time term pay
    for growth at night."""
    limited = brown_changes(tmp_path, 0, TABLE, (8,))[8]
    near_linear = brown_changes(tmp_path, 0, LU_LIKE, (8,))[8]
    assert near_linear < limited < 0
