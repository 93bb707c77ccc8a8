"""``lm-greenpar-figures``' arithmetic on hand-made runs: normalised to Offline, changes
against Baseline, means over seeds."""

from __future__ import annotations

import numpy as np
import pytest

from lease_manager.energy.series import StepSeries
from lm_greenpar.figures import energy_until, figure, mean_job_change, policy_label, table


def summary(brown, green, vms, runtime):
    return {"greenpar_window_brown_joules": brown, "greenpar_window_green_joules": green,
            "greenpar_vms": vms, "greenpar_window_hours": 30.0,
            "greenpar_avg_runtime": runtime, "greenpar_sla_violations": 0,
            "greenpar_resizes": 1, "greenpar_objective": 1.0}


def test_fig7_quantities():
    runs = [{"policy": "baseline", "summary": summary(100, 50, 10, 1000)},
            {"policy": "baseline", "summary": summary(120, 50, 10, 1200)},   # mean 110, 1100
            {"policy": "aggressive", "summary": summary(99, 80, 16, 880)},
            {"policy": "offline", "summary": summary(90, 60, 20, 800)}]
    data = figure(runs)
    assert list(data) == ["baseline", "aggressive", "offline"]
    assert data["aggressive"]["brown"] == pytest.approx(99 / 90)
    assert data["aggressive"]["green"] == pytest.approx(80 / 60)
    assert data["aggressive"]["vms"] == pytest.approx(16 / 20)
    assert data["aggressive"]["brown_vs_baseline_%"] == pytest.approx(-10)
    assert data["aggressive"]["runtime_vs_baseline_%"] == pytest.approx(-20)
    assert data["baseline"]["seeds"] == 2
    assert "aggressive" in table(data)


def test_energy_over_a_window_longer_than_the_run():
    """The run's power series to its end (20 s), then every server asleep (40 W) under the
    green production (20 W from 15 s) to the common window's end (30 s):

        time   0-10   10-20   20-30
        power  100    200     40 (asleep)
        green   50    300     20
        brown   50      0     20     -> 500 + 0 + 200 = 700 J
        green   50    200     20     -> 500 + 2,000 + 200 = 2,700 J
    """
    rows = np.array([[0, 100, 50], [10, 200, 300], [20, 200, 0]], dtype=float)
    green = StepSeries(np.array([0.0, 15.0]), np.array([0.0, 20.0]))
    assert energy_until(rows, 30, 40, green) == (pytest.approx(700), pytest.approx(2700))
    assert energy_until(rows, 20, 40, green) == (pytest.approx(500), pytest.approx(2500))


def test_run_time_change_two_ways():
    """Baseline runs job 1 for 1,000 s and job 2 for 100 s; a policy 1,100 and 50 s. The
    mean run time goes from 550 to 575 s (+4.5%); the jobs' own changes are +10% and -50%,
    a mean of -20%. A job that did not finish in both runs is left out."""
    base = {"1": 1000.0, "2": 100.0, "3": 10.0}
    policy = {"1": 1100.0, "2": 50.0}
    assert mean_job_change(policy, base) == pytest.approx(-20)
    assert mean_job_change({}, base) != mean_job_change({}, base)   # nan


def test_reactive_readings_label_their_runs():
    from lease_manager.config.schema import load_config
    from lease_manager.plugins import Plugins

    schema = Plugins().schema
    label = [policy_label(load_config(None, schema, ["simulation.resources=2 CPU:2",
                                                     "malleable.policy-allocation=reactive",
                                                     *extra]))
             for extra in ([], ["greenpar.reactive-slack=above-request"],
                           ["greenpar.reactive-slack=above-request",
                            "greenpar.reactive-growth=while-short"])]
    assert label == ["reactive", "reactive[above-request]", "reactive[above-request,while-short]"]


def test_every_policys_readings_label_its_runs():
    """Aggressive's and Offline's revert off (the default is at-arrival) or their MILP with
    the resize interval, and Nebulous' within-f, are policies of their own, so that two
    readings are never averaged as seeds."""
    from lease_manager.config.schema import load_config
    from lease_manager.plugins import Plugins

    schema = Plugins().schema
    cases = {("aggressive",): "aggressive",
             ("aggressive", "greenpar.optimizing-revert=off"): "aggressive[off]",
             ("offline", "greenpar.optimizing-revert=within-interval"): "offline[within-interval]",
             ("offline", "greenpar.plan-resize-interval=true"): "offline[plan-resize-interval]",
             ("aggressive", "greenpar.optimizing-revert=off",
              "greenpar.plan-resize-interval=true"): "aggressive[off,plan-resize-interval]",
             ("offline", "greenpar.plan-resize-interval=false"): "offline",
             ("nebulous",): "nebulous",
             ("nebulous", "greenpar.nebulous-slack=within-f"): "nebulous[within-f]",
             ("nebulous", "greenpar.optimizing-revert=off"): "nebulous",
             ("baseline", "greenpar.reactive-slack=above-request"): "baseline"}
    for (policy, *extra), expected in cases.items():
        config = load_config(None, schema, ["simulation.resources=2 CPU:2",
                                            f"malleable.policy-allocation={policy}", *extra])
        assert policy_label(config) == expected


def test_all_traces_keep_only_the_days_every_policy_has():
    """Baseline and Offline ran on days A, B and C, Aggressive only on A and C: the
    all-traces mean compares them on A and C, and names B as left out. Baseline's brown
    energy is 100 (A), 10 (B), 300 (C); over A and C its mean is 200, not 410/3."""
    from lm_greenpar.figures import common_days

    brown = {"A": 100, "B": 10, "C": 300}
    runs = [{"policy": p, "trace": day, "summary": summary(brown[day], 1, 1, 1)}
            for p in ("baseline", "offline") for day in "ABC"]
    runs += [{"policy": "aggressive", "trace": day, "summary": summary(brown[day], 1, 1, 1)}
             for day in "AC"]
    kept, note = common_days(runs)
    assert sorted({r["trace"] for r in kept}) == ["A", "C"]
    assert len(kept) == 6
    assert note == "left out: B (no run of aggressive)"
    assert figure(kept)["baseline"]["brown_kwh"] == pytest.approx(200 / 3.6e6)
    everything, none_left = common_days([r for r in runs if r["trace"] != "B"])
    assert len(everything) == 6 and none_left == ""
    nothing, line = common_days([runs[0], {**runs[-1], "trace": "C"},
                                 {"policy": "offline", "trace": "B", "summary": {}}])
    assert nothing == [] and line.startswith("no trace run by every policy")


def test_the_all_traces_block_names_the_days_left_out(tmp_path, capsys, monkeypatch):
    """lm-greenpar-figures prints the line under the all-traces block's title."""
    import lm_greenpar.figures as figures

    runs = [{"policy": p, "trace": day, "setting": "S", "seed": 1,
             "summary": summary(100, 1, 1, 1)}
            for p, days in (("baseline", "AB"), ("offline", "A")) for day in days]
    monkeypatch.setattr(figures, "read_runs", lambda directory: runs)
    assert figures.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "S, all 1 traces\nleft out: B (no run of offline)\n" in out


def write_leases(directory, jobs):
    directory.mkdir(parents=True)
    lines = ["lease_id,state,submit,start,end"]
    lines += [f"{k},{state},{submit},{start},{end}" for k, state, submit, start, end in jobs]
    (directory / "leases.csv").write_text("\n".join(lines) + "\n")
    return directory


def test_waits_and_turnaround_against_baseline(tmp_path):
    """Baseline starts every job on arrival; the policy shortens job 1 and makes job 2 wait
    900 s for servers:

        time        0    100  200         900  1000 1050
        baseline 1  |==============================|          run 1,000, turnaround 1,000
        baseline 2       |====|                               run   100, turnaround   100
        policy   1  |=========================|               run   900, turnaround   900
        policy   2       .......... wait ...........|==|      run    50, turnaround   950

    Run time: mean 550 -> 475 s (-13.6%); per job -10% and -50%, a mean of -30%.
    Waits: 1 job waited; 0 and 900 s, a mean of 450 s over the two jobs.
    Turnaround: mean 550 -> 925 s (+68.2%); per job -10% and +850%, a mean of +420%.
    """
    from lm_greenpar.figures import job_changes

    base_dir = write_leases(tmp_path / "b", [("1", "done", 0, 0, 1000),
                                             ("2", "done", 100, 100, 200)])
    policy_dir = write_leases(tmp_path / "p", [("1", "done", 0, 0, 900),
                                               ("2", "done", 100, 1000, 1050)])
    runs = [{"policy": "baseline", "setting": "S", "trace": "T", "seed": 1, "dir": base_dir,
             "summary": summary(1, 1, 1, 550)},
            {"policy": "aggressive", "setting": "S", "trace": "T", "seed": 1,
             "dir": policy_dir, "summary": summary(1, 1, 1, 475)}]
    job_changes(runs)
    base, policy = runs[0]["summary"], runs[1]["summary"]
    assert base["greenpar_jobs_waited"] == 0 and base["greenpar_mean_wait"] == 0
    assert base["greenpar_job_turnaround_change_%"] == pytest.approx(0)
    assert policy["greenpar_jobs_waited"] == 1
    assert policy["greenpar_mean_wait"] == pytest.approx(450)
    assert policy["greenpar_avg_turnaround"] == pytest.approx(925)
    assert policy["greenpar_job_runtime_change_%"] == pytest.approx(-30)
    assert policy["greenpar_job_turnaround_change_%"] == pytest.approx(420)
    assert base["greenpar_avg_turnaround"] == pytest.approx(550)
    data = figure(runs)
    assert data["aggressive"]["jobs_waited"] == 1
    assert data["aggressive"]["mean_wait_s"] == pytest.approx(450)
    assert data["aggressive"]["runtime_vs_baseline_%"] == pytest.approx(100 * (475 / 550 - 1))
    assert data["aggressive"]["turnaround_vs_baseline_%"] == pytest.approx(100 * (925 / 550 - 1))
    assert data["aggressive"]["job_turnaround_vs_baseline_%"] == pytest.approx(420)
    assert "per-job turnaround vs base %" in table(data)


def test_both_slas_are_counted_apart():
    """Nebulous' SLA is its average allocation (>= N/F), so its run time may exceed F x the
    run time at N: the table counts the two apart, so that a Nebulous run breaking no SLA of
    its own does not read as one that broke it (2 jobs over F, none under N/F)."""
    nebulous = dict(summary(100, 50, 10, 1000), greenpar_sla_violations=2,
                    greenpar_allocation_sla_violations=0)
    reactive = dict(summary(100, 50, 10, 1000), greenpar_sla_violations=0,
                    greenpar_allocation_sla_violations=1)
    data = figure([{"policy": "nebulous", "summary": nebulous},
                   {"policy": "reactive", "summary": reactive}])
    assert (data["nebulous"]["sla_violations"], data["nebulous"]["allocation_sla_violations"]
            ) == (2, 0)
    assert (data["reactive"]["sla_violations"], data["reactive"]["allocation_sla_violations"]
            ) == (0, 1)
    head = table(data).splitlines()[0]
    assert "runtime SLA viol." in head and "alloc. SLA viol." in head
