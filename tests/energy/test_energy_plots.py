"""Plots of a run with a power model: ``report RUN-DIR --plots`` on one ``simulate`` folder
draws its Gantt chart, its site power and its node states; a sweep's report draws the power
of every profile."""

from __future__ import annotations

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
