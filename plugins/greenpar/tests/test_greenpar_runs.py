"""Every GreenPar policy on the shipped setup (``etc/greenpar.ini``) with the first 7 jobs of
``traces/greenpar-blue-24h.swf`` (the shipped days start with a 12-hour job, 0501, or with
short jobs before sunrise: too slow or too dark for a quick check), so that the suite stays
fast; the run's invariants (no over-commitment, every malleable lease's
work done once, energy the integral of power, green used never above production) are checked
by the run itself."""

from __future__ import annotations

import pytest

import lm_greenpar.optimizing as optimizing
from lease_manager.config.schema import load_config
from lease_manager.run import Run
from lm_greenpar import OFFLINE_NODE_LIMIT, SOLVE_NODE_LIMIT

from lmg_helpers import PLUGINS, ROOT


def run(policy: str, *settings: str) -> Run:
    config = load_config(ROOT / "etc" / "greenpar.ini", PLUGINS.schema,
                         [f"malleable.policy-allocation={policy}", "tracefile.max-jobs=7",
                          f"tracefile.tracefile={ROOT / 'traces' / 'greenpar-blue-24h.swf'}",
                          *settings])
    r = Run(config, PLUGINS)
    r.run()
    r.table.check()
    return r


@pytest.fixture(scope="module")
def summaries():
    return {policy: run(policy).summary
            for policy in ("baseline", "reactive", "nebulous", "aggressive", "offline")}


def test_every_policy_runs_every_job_within_its_sla(summaries):
    for policy, s in summaries.items():
        assert s["leases_completed"] == s["greenpar_jobs"] == 7, policy
        if policy == "nebulous":    # it keeps an allocation SLA instead: at least N/F servers
            assert s["greenpar_allocation_sla_violations"] == 0
        else:
            assert s["greenpar_sla_violations"] == 0, policy
        assert s["green_used_joules"] <= s["energy_it_joules"] + 1e-6


def test_only_baseline_never_resizes(summaries):
    assert summaries["baseline"]["resizes"] == 0
    assert all(summaries[p]["resizes"] > 0 for p in ("reactive", "aggressive", "offline"))


def test_green_aware_policies_use_more_green_than_baseline(summaries):
    base = summaries["baseline"]["green_used_joules"]
    for policy in ("reactive", "nebulous", "aggressive", "offline"):
        assert summaries[policy]["green_used_joules"] > base, policy


def test_the_optimising_policies_report_their_solves(summaries):
    assert summaries["aggressive"]["greenpar_solves"] >= 7
    assert summaries["offline"]["greenpar_solves"] == 1
    for policy in ("aggressive", "offline"):
        assert summaries[policy]["greenpar_solves_failed"] == 0


def test_offline_reports_its_plan_against_the_requested_plan(summaries):
    """Offline's solve starts from Baseline's plan: the summary gives both MILP objectives,
    the plan's never above the start's, and HiGHS' dual bound, never above the plan's;
    Aggressive has no such fields."""
    s = summaries["offline"]
    assert s["greenpar_start_objective"] > 0
    assert s["greenpar_plan_objective"] <= s["greenpar_start_objective"] * (1 + 1e-9)
    assert s["greenpar_start_kept"] in (0, 1)
    assert s["greenpar_plan_dual_bound"] <= s["greenpar_plan_objective"] * (1 + 1e-9)
    assert "greenpar_start_objective" not in summaries["aggressive"]


def test_a_time_limited_solve_is_counted_and_the_run_says_it_depends_on_the_machine(capsys):
    s = run("offline", "greenpar.offline-time-limit=0.001", "greenpar.mip-gap=0").summary
    assert s["greenpar_solves_time_limited"] == 1
    assert s["greenpar_depends_on_machine"] is True
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["lm-greenpar: warning: 1 of 1 MILP solves hit the wall-clock limit "
                     "([greenpar] offline-time-limit = 0.001 s): this run's results depend on "
                     "the machine's speed and load (greenpar_depends_on_machine)"]


def test_a_node_limited_solve_is_counted_and_the_run_does_not_depend_on_the_machine(capsys):
    """Offline's one solve of the 7 jobs needs more than one node to prove its plan optimal
    (gap 0): stopped at 1 node, it is counted, and the run stays reproducible."""
    s = run("offline", "greenpar.offline-node-limit=1", "greenpar.mip-gap=0").summary
    assert s["greenpar_solves_node_limited"] == 1 and s["greenpar_solves_failed"] == 0
    assert s["greenpar_solves_time_limited"] == 0
    assert s["greenpar_depends_on_machine"] is False
    assert s["leases_completed"] == 7 and s["greenpar_sla_violations"] == 0
    assert capsys.readouterr().err == ""


def test_each_policy_passes_its_own_limits_to_the_solver(monkeypatch):
    """Offline's solve gets `offline-node-limit` and `offline-time-limit`, Aggressive's
    solves `solve-node-limit` and `solve-time-limit` (not the other policy's): the defaults
    (Offline 1,000 nodes and 1,800 s, Aggressive 5,000 and 600 s), values set, and a node
    limit of 0 (none, passed as None). Only Offline's solve starts from the requested plan:
    Aggressive's solves are those of scipy's HiGHS, as before."""
    seen: list[tuple[float, int | None, bool]] = []
    solve = optimizing.solve

    def spy(problem, jobs, limit, gap, node_limit=None, start_requested=False):
        seen.append((limit, node_limit, start_requested))
        return solve(problem, jobs, limit, gap, node_limit, start_requested)

    monkeypatch.setattr(optimizing, "solve", spy)
    cases = (("offline", (), (1800.0, OFFLINE_NODE_LIMIT, True)),
             ("offline", ("greenpar.offline-node-limit=0",), (1800.0, None, True)),
             ("offline", ("greenpar.offline-node-limit=7", "greenpar.solve-node-limit=9",
                          "greenpar.offline-time-limit=50"), (50.0, 7, True)),
             ("aggressive", (), (600.0, SOLVE_NODE_LIMIT, False)),
             ("aggressive", ("greenpar.solve-node-limit=9", "greenpar.offline-node-limit=7",
                             "greenpar.solve-time-limit=40"), (40.0, 9, False)))
    for policy, settings, expected in cases:
        seen.clear()
        run(policy, *settings)
        assert seen and all(call == expected for call in seen), (policy, settings, seen)
