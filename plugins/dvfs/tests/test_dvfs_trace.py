"""Garg et al.'s meta-schedulers on a real trace: the first 400 jobs of the week of LLNL Thunder
on the eight sites of Table 3 (COPs fixed here; the paper draws them)."""

from __future__ import annotations

import pytest

from lease_manager import load_run

from lmd_helpers import ROOT, plugins

# name, r (kg/kWh), p^e ($/kWh), beta, alpha, f_max, CPUs (Table 3); a COP in [0.6, 3.5]
TABLE_3 = [("new-york", 0.389, 0.15, 65, 7.5, 1.8, 2050, 1.2),
           ("pennsylvania", 0.574, 0.09, 75, 5, 1.8, 2600, 2.9),
           ("california", 0.275, 0.13, 60, 60, 2.4, 650, 0.8),
           ("ohio", 0.817, 0.09, 75, 5.2, 2.4, 540, 3.3),
           ("north-carolina", 0.563, 0.07, 90, 4.5, 3.0, 600, 1.9),
           ("texas", 0.664, 0.10, 105, 6.5, 3.0, 350, 2.2),
           ("france", 0.083, 0.17, 90, 4.0, 3.2, 200, 1.5),
           ("australia", 0.924, 0.11, 105, 4.4, 3.2, 250, 0.7)]


def settings(policy: str) -> list[str]:
    out = [f"simulation.policy-site-selection={policy}", "simulation.site-selection-cycle=50",
           f"tracefile.tracefile={ROOT / 'traces' / 'llnl-thunder-week1.swf'}",
           "tracefile.max-jobs=400", "tracefile.paradigm=hpc",
           "tracefile.vm-resources=CPU:1 Memory:1024", "tracefile.annotators=garg-workload",
           "power.cubic-idle=not-counted", "power.policy-operating-point=our-dvs",
           "accounting.probes=garg-accounting", "dvfs.arrival-rate=100"]
    for name, r, price, beta, alpha, fmax, cpus, cop in TABLE_3:
        out += [f"site:{name}.resources={cpus} CPU:1 Memory:1024",
                f"site:{name}.cubic-law={beta}:{alpha}:{0.375 * fmax:g}:{fmax}:5",
                f"site:{name}.carbon-rate={r}", f"site:{name}.electricity-price={price}",
                f"site:{name}.cop={cop}", f"site:{name}.backfilling=conservative"]
    return out


@pytest.mark.parametrize("policy", ["gmce", "mce-mce", "mp-mp", "edf-est"])
def test_table_3_sites_on_the_thunder_week(policy, tmp_path):
    """Every lease runs or is refused by every site for its deadline; the invariants hold;
    the paper's energy (eqs 3-4, per lease) equals the core's integral of power (idle CPUs
    draw nothing), per site and in total."""
    ini = tmp_path / "garg.ini"
    ini.write_text("[simulation]\nresources = 1 CPU:1 Memory:1024\n")
    run = load_run(ini, settings(policy), plugins=plugins())
    s = run.run()
    assert s["leases_total"] == 400
    assert s["leases_completed"] + s["leases_rejected"] == 400
    assert set(s["rejected_by_reason"]) <= {"no site can finish it by its deadline"}
    assert s["garg_leases"] == s["leases_completed"] > 200
    assert s["garg_energy_joules"] == pytest.approx(s["energy_joules"], rel=1e-9)
    for name, fields in s["garg_sites"].items():
        assert fields["energy_joules"] == pytest.approx(s["sites"][name]["energy_joules"],
                                                        rel=1e-9, abs=1e-6)
