"""Garg et al.'s meta-schedulers on a real trace: ``etc/garg.ini`` (the eight sites of
Table 3 from ``etc/garg-table3.csv``, COPs drawn from the seed) on the first 400 jobs of the
week of LLNL Thunder."""

from __future__ import annotations

import pytest

from lease_manager import load_run

from lmd_helpers import ROOT, plugins


@pytest.mark.parametrize("policy, fit", [("gmce", "one-slot"), ("mce-mce", "one-slot"),
                                         ("mp-mp", "one-slot"), ("edf-est", "one-slot"),
                                         ("gmp", "profile")])
def test_table_3_sites_on_the_thunder_week(policy, fit):
    """Every lease runs or is refused by every site for its deadline; the invariants hold;
    the paper's energy (eqs 3-4, per lease) equals the core's integral of power (idle CPUs
    draw nothing), per site and in total; each site's COP is in [0.6, 3.5]; its work by
    level adds up to its work, and no energy is below the same leases' at their least-energy
    levels. Under both slot
    fits (one-slot is etc/garg.ini's)."""
    run = load_run(ROOT / "etc" / "garg.ini",
                   ["tracefile.max-jobs=400", f"simulation.policy-site-selection={policy}",
                    f"dvfs.slot-fit={fit}"],
                   plugins=plugins())
    s = run.run()
    assert s["leases_total"] == 400
    assert s["leases_completed"] + s["leases_rejected"] == 400
    assert set(s["rejected_by_reason"]) <= {"no site can finish it by its deadline"}
    assert s["garg_leases"] == s["leases_completed"] > 200
    assert s["garg_energy_joules"] == pytest.approx(s["energy_joules"], rel=1e-9)
    assert len(s["garg_sites"]) == 8
    # no lease takes less energy than at its least-energy level (the level penalty's base)
    assert s["garg_energy_least_level_joules"] <= s["garg_energy_joules"] * (1 + 1e-12)
    for name, fields in s["garg_sites"].items():
        assert fields["energy_joules"] == pytest.approx(s["sites"][name]["energy_joules"],
                                                        rel=1e-9, abs=1e-6)
        assert 0.6 <= fields["cop"] <= 3.5
        assert sum(fields["level_cpu_hours"]) == pytest.approx(fields["workload_cpu_hours"])
        assert fields["energy_least_level_joules"] <= fields["energy_joules"] * (1 + 1e-12)
