"""The decision log (``[accounting] decision-log``, ``simulate --log-level debug``) and
``lease-manager explain``, on a hand-computed case::

    node 0  |#1 0------------100|#2 100---------200|
    node 1  |   |#3 20--70|      |#2 100---------200|
            0   10 20       70  100               200

#1 (1 VM, 100 s) starts at once; #2 (2 VMs, 100 s) arrives at 10 and must wait for #1: it is
reserved 100-200 on both nodes; #3 (1 VM, 50 s) arrives at 20 and backfills on node 1, ahead
of #2, ending before #2's reservation (EASY)."""

from __future__ import annotations

import json

import pytest

from lease_manager import cli
from lease_manager.experiments.explain import explain
from lease_manager.run import load_run
from lease_manager.run_outputs import log_node_switches

from support import TRACES, be, simulate


@pytest.fixture
def run_dir(tmp_path):
    leases = [be(1, 1, 100, 0), be(2, 2, 100, 10), be(3, 1, 50, 20)]
    run = simulate(leases, "scheduling.backfilling=aggressive", "accounting.decision-log=yes",
                   resources="2 CPU:1 Memory:1024")
    run.write(tmp_path)
    return tmp_path


def test_the_log_holds_each_decision(run_dir):
    records = [json.loads(line) for line in (run_dir / "decisions.jsonl").read_text().splitlines()]
    of = {i: [(r["t"], r["decision"]) for r in records if r["lease"] == i] for i in (1, 2, 3)}
    assert of[2] == [(10, "submitted"), (10, "queued"), (10, "reserved"), (100, "started"),
                     (200, "ended")]
    reserved = next(r for r in records if r["lease"] == 2 and r["decision"] == "reserved")
    assert (reserved["start"], reserved["end"], reserved["nodes"]) == (100, 200, [0, 1])
    started = next(r for r in records if r["lease"] == 3 and r["decision"] == "started")
    assert started["t"] == 20 and started["nodes"] == [1] and started["backfilled-past"] == [2]
    assert of[1][-1] == (100, "ended") and of[3][-1] == (70, "ended")


def test_explain_tells_why_it_waited(run_dir):
    story = explain(run_dir, 2)
    assert story.splitlines()[0] == "lease 2 (best-effort, 2 VMs, requested 100 s; trace id " \
                                    "-): done"
    assert "reserved node-1, node-2 from 100 s to 200 s" in story
    assert "It waited 90 s, from 10 s to 100 s." in story
    assert story.endswith("Meanwhile, on the nodes it started on:\n"
                          "  lease 1 held 1 of them until 100 s\n"
                          "  lease 3 held 1 of them until 70 s\n")
    assert "backfilled ahead of lease(s) 2 submitted before it" in explain(run_dir, 3)


def test_explain_on_the_command_line_and_without_a_log(run_dir, tmp_path, capsys):
    assert cli.main(["explain", str(run_dir), "3"]) == 0
    assert capsys.readouterr().out.startswith("lease 3 (best-effort, 1 VMs")
    (run_dir / "decisions.jsonl").unlink()
    assert "(no decisions.jsonl: run it with `simulate --log-level debug`" in explain(run_dir, 3)
    assert cli.main(["explain", str(run_dir), "9"]) == 2
    assert "no lease 9 in leases.csv (ids 1 to 3)" in capsys.readouterr().err


def test_off_by_default(tmp_path):
    run = load_run(None, ["simulation.resources=2 CPU:1 Memory:1024",
                          f"tracefile.tracefile={TRACES / 'sdsc-blue-600requests.swf'}"])
    assert run.decisions is None
    assert not (run.write(tmp_path) / "decisions.jsonl").exists()


@pytest.mark.parametrize("placement", ["at-start", "when-planned"])
def test_node_switches_and_operating_points_are_decisions(placement):
    """The hand-computed case of ``test_placement_energy`` (4 nodes, idle nodes off after
    10 s): n2 and n3 shut down at 10 (until 15), n2 boots at 15 (until 35) for B; every
    ``started`` line holds the lease's DVFS level (the one level, 0). The same lines in both
    placements: they are read from the node states that ran."""
    leases = [be(1, 2, 10, 0), be(2, 3, 10, 12), be(3, 1, 5, 40)]
    run = simulate(leases, "power.pstates=1.0:100:200", "power.switch-off=5:50",
                   "power.switch-on=20:150", "power.off-watts=5",
                   "power.policy-node-power=switch-off-idle", "power.idle-timeout=10",
                   "scheduling.backfilling=aggressive", "tracefile.vm-resources=CPU:1 Memory:0",
                   "accounting.decision-log=yes", f"scheduling.placement={placement}",
                   resources="4 CPU:1 Memory:1024")
    log_node_switches(run, run.decisions)
    records = [json.loads(line) for line in run.decisions.lines]
    switches = [(r["t"], r["decision"], r["node"], r["until"]) for r in records
                if r["lease"] is None]
    assert switches == [(10, "switch-off", 2, 15), (10, "switch-off", 3, 15),
                        (15, "boot", 2, 35)]
    assert [(r["t"], r["lease"], r["level"]) for r in records if r["decision"] == "started"] \
        == [(0, 1, 0), (35, 2, 0), (45, 3, 0)]
    times = [r["t"] for r in records]
    assert times == sorted(times)
