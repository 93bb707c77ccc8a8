"""Energy with either placement: a ``[power]`` model whose nodes stay on is counted
(``placement = at-start``) under ``auto``, and gives the schedule and energy of the pinned
placement where the two schedules agree; energy = integral of power and no lease runs on a
node that is not on in both (the run's checks, on every run)."""

from __future__ import annotations

import csv

import pytest

from lease_manager.config.schema import load_config
from lease_manager.plugins import Plugins
from lease_manager.run import Run

from support import ROOT, be, simulate, times

#: 100 W idle, 200 W with the node's one core busy; booting and shutting down are priced but
#: never happen (always-on)
POWER = ("power.pstates=1.0:100:200", "power.switch-off=5:50", "power.switch-on=20:150",
         "power.off-watts=5", "power.policy-node-power=always-on",
         "scheduling.backfilling=aggressive", "tracefile.vm-resources=CPU:1 Memory:0")


def leases():
    return [be(1, 2, 10, 0), be(2, 4, 10, 1), be(3, 2, 5, 2), be(4, 1, 20, 3)]


@pytest.mark.parametrize("placement", ["at-start", "when-planned"])
def test_both_placements_give_the_same_schedule_and_energy(placement):
    """4 nodes of 1 core, one VM each, EASY:

    n0 [A 0-10 ][B 10-20][D 20------40]
    n1 [A 0-10 ][B 10-20]
    n2   [C 2-7]   [B 10-20]
    n3   [C 2-7]   [B 10-20]

    B (4 VMs, at 1) waits for A and holds the one reservation, at 10; C (2 VMs, 5 s, at 2)
    backfills on the two free nodes and ends before 10; D (1 VM, 20 s, at 3) would run into
    B's reservation, waits, and starts at 20 on the first free node.

    power: 4 x 100 W idle + 100 W per busy node:
      [0, 2) 600 W, [2, 7) 800 W, [7, 10) 600 W, [10, 20) 800 W, [20, 40) 500 W
    energy: 1,200 + 4,000 + 1,800 + 8,000 + 10,000 = 25,000 J, in both placements.
    """
    given = leases()
    run = simulate(given, *POWER, f"scheduling.placement={placement}",
                   resources="4 CPU:1 Memory:1024")
    assert times(run, given) == {1: (0, 10), 2: (10, 20), 3: (2, 7), 4: (20, 40)}
    assert run.summary["placement"] == placement
    assert run.summary["energy_it_joules"] == pytest.approx(25_000)
    p = run.energy.profile
    assert list(zip(p.times.tolist(), p.watts.tolist()))[:5] == [
        (0, 600), (2, 800), (7, 600), (10, 800), (20, 500)]
    assert run.energy.violations() == []
    assert run.table.counted == (placement == "at-start")


def test_a_power_model_whose_nodes_stay_on_changes_neither_placement_nor_schedule(tmp_path):
    """The 30-day Blue trace's first 300 jobs, EASY, under auto, without and with a power
    model (always-on): both counted, the same starts, ends and nodes lease by lease (adding
    [power] to a replay no longer changes its placement). The run's own checks hold with
    power: energy = integral of power, no lease on a node that is not on."""
    def replay(name, *settings):
        plugins = Plugins()
        config = load_config(ROOT / "etc" / "sample.ini", plugins.schema,
                             ["tracefile.max-jobs=300", *settings])
        run = Run(config, plugins)
        summary = run.run()
        run.write(tmp_path / name)
        with (tmp_path / name / "leases.csv").open() as fh:
            rows = [(r["lease_id"], r["start"], r["end"], r["nodes"])
                    for r in csv.DictReader(fh)]
        return summary, rows

    bare, bare_rows = replay("bare")
    power, power_rows = replay("power", "power.pstates=1.0:100:200")
    assert bare["placement"] == power["placement"] == "at-start (auto)"
    assert power_rows == bare_rows and len(bare_rows) == 300
    assert power["energy_it_joules"] > 0


@pytest.mark.parametrize("settings, reason", [
    (("power.policy-node-power=switch-off-idle",), "switching nodes"),
    (("power.initial-state=off",), "switching nodes"),
    (("power.power-cap=100000",), "power cap"),
])
def test_auto_keeps_when_planned_for_nodes_that_switch_or_a_cap(settings, reason):
    plugins = Plugins(entry_points=False)
    config = load_config(ROOT / "etc" / "sample.ini", plugins.schema,
                         ["tracefile.max-jobs=50", "power.pstates=1.0:100:200",
                          "power.switch-on=20:150", *settings])
    with Run(config, plugins) as run:
        assert run.placement.label() == f"when-planned (auto: {reason})"
