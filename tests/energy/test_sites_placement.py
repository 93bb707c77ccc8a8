"""Several sites with either placement: each site counts on its own table (``at-start``), and
``auto`` counts a run of several sites unless one of them has a feature that needs nodes
chosen ahead."""

from __future__ import annotations

import csv

import pytest

from lease_manager.config.schema import load_config
from lease_manager.plugins import Plugins
from lease_manager.run import Run, load_run

from support import ROOT, be, times

SITES = ("site:a.resources=2 CPU:1 Memory:1024", "site:b.resources=2 CPU:1 Memory:1024",
         "scheduling.backfilling=aggressive", "tracefile.vm-resources=CPU:1 Memory:0")


@pytest.mark.parametrize("placement", ["at-start", "when-planned"])
def test_two_sites_give_the_same_schedule_in_both_placements(placement):
    """Two sites of 2 nodes (one VM each), EASY at each, arrivals sent where they can start
    first (ties: the first listed):

    a n0 [1: 0-100 ][3: 100-150]
    a n1 [1: 0-100 ][3: 100-150]
    b n0   [2: 10-110  ][4: 110-----------310]
    b n1   [2: 10-110  ][5: 110-140]

    3 (2 VMs, 50 s, at 20) could start at 100 on a, 110 on b: a, where it holds EASY's
    reservation. 4 (1 VM, 200 s, at 30): 150 on a (3 holds both nodes), 110 on b: b. 5
    (1 VM, 30 s, at 40): 150 on a, 110 on b beside 4: b.
    """
    given = [be(1, 2, 100, 0), be(2, 2, 100, 10), be(3, 2, 50, 20), be(4, 1, 200, 30),
             be(5, 1, 30, 40)]
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [*SITES, f"scheduling.placement={placement}"])
    run = Run(config, plugins, leases=given)
    summary = run.run()
    assert summary["placement"] == placement
    assert all(site.table.counted == (placement == "at-start") for site in run.sites)
    assert times(run, given) == {1: (0, 100), 2: (10, 110), 3: (100, 150), 4: (110, 310),
                                 5: (110, 140)}
    assert [lease.site for lease in given] == ["a", "b", "a", "b", "b"]


def test_auto_counts_two_sites_of_the_blue_trace_with_fcfs_as_when_planned(tmp_path):
    """The 30-day Blue trace's first 1,000 jobs on two sites of 72 nodes, no backfilling:
    auto counts (each site its own table), and every lease starts and ends on the site and
    at the times it does when planned (the run's invariant checks on)."""
    def replay(name, *settings):
        run = load_run(ROOT / "etc" / "sample.ini", [
            "tracefile.max-jobs=1000", "scheduling.backfilling=off",
            "site:a.resources=72 CPU:1 Memory:1024", "site:b.resources=72 CPU:1 Memory:1024",
            *settings])
        summary = run.run()
        run.write(tmp_path / name)
        with (tmp_path / name / "leases.csv").open() as fh:
            rows = [(r["lease_id"], r["start"], r["end"], r["site"]) for r in csv.DictReader(fh)]
        return summary["placement"], rows

    auto, counted = replay("auto")
    planned, pinned = replay("planned", "scheduling.placement=when-planned")
    assert auto == "at-start (auto)" and planned == "when-planned"
    assert counted == pinned and len(counted) == 1000
    assert {site for *_, site in counted} == {"a", "b"}


def test_a_site_whose_nodes_switch_off_is_counted_under_auto():
    plugins = Plugins(entry_points=False)
    config = load_config(ROOT / "etc" / "sample.ini", plugins.schema, [
        "tracefile.max-jobs=10", "site:a.resources=72 CPU:1 Memory:1024",
        "site:b.resources=72 CPU:1 Memory:1024", "power.pstates=1.0:100:200",
        "site:b.policy-node-power=switch-off-idle", "power.switch-on=20:150"])
    with Run(config, plugins) as run:
        assert run.placement.label() == "at-start (auto)"
        summary = run.run()
    assert summary["leases_completed"] == 10
