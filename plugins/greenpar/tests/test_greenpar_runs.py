"""Every GreenPar policy on the shipped setup (``etc/greenpar.ini``) with the first 7 jobs of
``traces/greenpar-blue-24h.swf`` (the shipped days start with a 12-hour job, 0501, or with
short jobs before sunrise: too slow or too dark for a quick check), so that the suite stays
fast; the run's invariants (no over-commitment, every malleable lease's
work done once, energy the integral of power, green used never above production) are checked
by the run itself."""

from __future__ import annotations

import pytest

from lease_manager.config.schema import load_config
from lease_manager.run import Run

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


def test_a_time_limited_solve_is_counted():
    s = run("offline", "greenpar.offline-time-limit=0.001", "greenpar.mip-gap=0").summary
    assert s["greenpar_solves_time_limited"] == 1
