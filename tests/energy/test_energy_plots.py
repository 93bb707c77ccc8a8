"""Plots of a run with a power model: ``report RUN-DIR --plots`` on one ``simulate`` folder
draws its Gantt chart, its site power and its node states; a sweep's report draws the power
of every profile."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from lease_manager import cli

from support import ROOT

mpl = pytest.importorskip("matplotlib")

from lease_manager.experiments import plots  # noqa: E402

SAMPLE = ROOT / "etc" / "sample.ini"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("energy-plots") / "run"
    assert cli.main(["simulate", str(SAMPLE), "--out", str(out), "-q",
                     "--set", "tracefile.max-jobs=200",
                     "--set", "power.pstates=2.4:100:200", "--set", "power.switch-on=60:150",
                     "--set", "power.policy-node-power=switch-off-idle",
                     "--set", "power.idle-timeout=600"]) == 0
    return out


def test_report_on_one_run_draws_its_power_and_node_states(run_dir, capsys):
    assert cli.main(["report", str(run_dir), "--plots"]) == 0
    out = capsys.readouterr().out
    assert "energy_it_joules" in out
    assert sorted(p.name for p in (run_dir / "plots").glob("*.png")) == [
        "gantt.png", "node-states.png", "power.png", "slowdowns.png", "usage.png", "waits.png"]


def test_power_and_node_state_figures_carry_the_data(run_dir):
    data = plots.read_power(run_dir)
    fig = plots.power({"run": run_dir})
    line = fig.axes[0].lines[0]
    assert list(line.get_xdata()) == list(data["time"] / 3600)
    assert list(line.get_ydata()) == list(data["total_watts"] / 1000)
    assert fig.axes[0].get_ylabel() == "power (kW)"
    fig = plots.node_states(run_dir)
    labels = sorted(t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert labels == ["off", "on", "switching-on"]
    bars = sum(len(c.get_paths()) for c in fig.axes[0].collections)
    rows = (run_dir / "node_states.csv").read_text().splitlines()
    assert bars == len(rows) - 1          # one bar per state interval


def test_runs_without_power_have_no_power_figures(tmp_path):
    assert plots.power({"run": tmp_path}) is None
    assert plots.node_states(tmp_path) is None


def test_daily_means_and_ranges_by_hand():
    """Power 10 kW from 0 to 12 h, 20 kW to 100,000 s, then 5 kW to the end at 48 h::

        day 0: 10 for 43,200 s, 20 for 43,200 s      mean 15, lowest 10, highest 20
        day 1: 20 for 13,600 s, 5 for 72,800 s       mean (272,000 + 364,000) / 86,400
                                                          = 7.3611, lowest 5, highest 20
    """
    days, means, lows, highs = plots.daily(np.array([0, 43200, 100000, 172800.0]),
                                           np.array([10, 20, 5, 5.0]))
    assert days.tolist() == [0, 1]
    assert means.tolist() == pytest.approx([15, 636000 / 86400])
    assert lows.tolist() == [10, 5] and highs.tolist() == [20, 20]
    # a run starting mid-day and ending mid-day: each day over the part it covers
    days, means, lows, highs = plots.daily(np.array([43200, 86400, 129600.0]),
                                           np.array([4, 8, 8.0]))
    assert days.tolist() == [0, 1] and means.tolist() == [4, 8]
    assert plots.time_mean(np.array([0, 43200, 100000, 172800.0]),
                           np.array([10, 20, 5, 5.0])) == pytest.approx(
        (10 * 43200 + 20 * 56800 + 5 * 72800) / 172800)


def test_most_switch_ons_picks_the_run_that_switches_most():
    rows = [{"run_id": "always-on/t/seed-1", "seed": 1, "node_switch_ons": 0},
            {"run_id": "idle-5min/t/seed-1", "seed": 1, "node_switch_ons": 15731},
            {"run_id": "idle-1min/t/seed-1", "seed": 1, "node_switch_ons": 19453},
            {"run_id": "idle-1min/t/seed-2", "seed": 2, "node_switch_ons": 20000},
            {"run_id": "idle-30min/t/seed-1", "seed": 1, "node_switch_ons": 9189}]
    assert plots.most_switch_ons(rows)["run_id"] == "idle-1min/t/seed-2"
    assert plots._states_run(rows, None, 1) == (
        "idle-1min/t/seed-1", "19,453 switch-ons, the most of the 4 runs")
    assert plots._states_run(rows, "always-on/t/seed-1", None) == ("always-on/t/seed-1",
                                                                  "chosen")
    assert plots.most_switch_ons([{"run_id": "x", "avg_wait": 1.0}]) is None
    assert plots._states_run([{"run_id": "x", "seed": 1}], None, None) == ("x", "the first run")


def test_node_states_in_a_window_are_clipped_to_it(run_dir):
    rows = list(csv.DictReader((run_dir / "node_states.csv").open()))
    inside = [r for r in rows if float(r["end"]) > 3600 and float(r["start"]) < 7200]
    fig = plots.node_states(run_dir, window=(1.0, 2.0))
    ax = fig.axes[0]
    assert ax.get_xlim() == (1.0, 2.0)
    spans = [tuple(p.vertices[:, 0].round(9)) for c in ax.collections for p in c.get_paths()]
    assert len(spans) == len(inside)
    assert all(1.0 <= x <= 2.0 for span in spans for x in span)
    assert plots.node_states(run_dir, window=(1e6, 1e6 + 1)).axes[0].texts[0].get_text() == \
        "no state in this window"


ENERGY_SWEEP = """
[sweep]
profiles = always-on, idle-1min, idle-30min
traces = {trace}
seeds = 1

[common:simulation]
resources = 144 CPU:1 Memory:1024

[common:tracefile]
vm-resources = CPU:1 Memory:1024
paradigm = hpc
max-jobs = 150

[common:power]
pstates = 2.4:100:200
switch-on = 120:150

[always-on:power]
policy-node-power = always-on

[idle-1min:power]
policy-node-power = switch-off-idle
idle-timeout = 60

[idle-30min:power]
policy-node-power = switch-off-idle
idle-timeout = 1800
"""


@pytest.fixture(scope="module")
def energy_sweep(tmp_path_factory):
    from lease_manager.experiments.sweep import load_sweep, run_sweep

    d = tmp_path_factory.mktemp("energy-sweep")
    (d / "sweep.ini").write_text(ENERGY_SWEEP.format(
        trace=ROOT / "traces" / "sdsc-blue-30days.swf"))
    outcome = run_sweep(load_sweep(d / "sweep.ini"), d / "out", jobs=1)
    assert outcome.done == 3 and not outcome.failed
    return d / "out"


def test_sweep_power_panels_or_daily_and_node_states_of_the_most_switching_run(
        energy_sweep, capsys):
    ons = {p: json.loads((energy_sweep / p / "sdsc-blue-30days" / "seed-1" /
                          "summary.json").read_text())["node_switch_ons"]
           for p in ("always-on", "idle-1min", "idle-30min")}
    assert ons["always-on"] == 0 and ons["idle-1min"] > ons["idle-30min"] > 0
    assert cli.main(["report", str(energy_sweep), "--plots"]) == 0
    out = capsys.readouterr().out
    plots_dir = energy_sweep / "plots"
    names = sorted(p.name for p in plots_dir.glob("*.png"))
    assert "node-states-idle-1min_sdsc-blue-30days_seed-1.png" in names
    assert "power-sdsc-blue-30days-seed-1.png" in names
    assert "usage-sdsc-blue-30days-seed-1.png" in names     # no probe: from leases.csv
    assert f"plots: {len(names)} PNG files in {plots_dir}/\n" in out

    runs = {p: energy_sweep / p / "sdsc-blue-30days" / "seed-1" for p in ons}
    panels = plots.power(runs)
    assert len(panels.axes) == 3                       # one panel per profile
    for ax, (profile, run) in zip(panels.axes, runs.items()):
        data = plots.read_power(run)
        assert ax.get_title(loc="left").startswith(f"{profile}: mean ")
        assert list(ax.lines[0].get_ydata()) == list(data["total_watts"] / 1000)
    assert panels.axes[0].get_ylim() == panels.axes[2].get_ylim()   # shared axes
    ax = plots.power(runs, mode="daily").axes[0]
    means = [line for line in ax.lines if line.get_label().startswith("idle-1min: mean")]
    data = plots.read_power(runs["idle-1min"])
    assert list(means[0].get_ydata()) == list(plots.daily(data["time"],
                                                          data["total_watts"] / 1000)[1])

    # again, daily and another node-states run: the old node-states figure goes
    assert cli.main(["report", str(energy_sweep), "--plots", "--time-plot", "daily",
                     "--states-run", "idle-30min/sdsc-blue-30days/seed-1",
                     "--states-hours", "0:6"]) == 0
    line = capsys.readouterr().out.splitlines()[-2]
    assert line == (f"plots: {len(names)} PNG files in {plots_dir}/, replacing the "
                    f"{len(names)} the previous report wrote (1 no longer drawn: removed)")
    assert "node-states-idle-30min_sdsc-blue-30days_seed-1.png" in \
        [p.name for p in plots_dir.glob("*.png")]
    assert not (plots_dir / "node-states-idle-1min_sdsc-blue-30days_seed-1.png").exists()
    with pytest.raises(SystemExit) as stop:
        cli.main(["report", str(energy_sweep), "--plots", "--states-hours", "6:1"])
    assert stop.value.code == 2
    assert "expected FROM:TO in hours with FROM before TO" in capsys.readouterr().err
