"""lm-garg-figures: runs placed by their configuration, means over seeds, the bound line."""

from __future__ import annotations

import json

from lm_dvfs.figures import main

from lmd_helpers import ROOT


def fake_run(out, profile, seed, overrides, **summary):
    """A finished run folder as a sweep writes it (run.json and summary.json); profile fits
    unless ``overrides`` say otherwise (etc/garg.ini has one-slot)."""
    folder = out / profile / "week" / f"seed-{seed}"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "seed": seed, "base": str(ROOT / "etc" / "garg.ini"),
        "overrides": ["dvfs.slot-fit=profile", *overrides, f"simulation.seed={seed}"]}))
    (folder / "summary.json").write_text(json.dumps(summary))


def test_means_over_seeds_by_urgency_with_the_bound(tmp_path, capsys):
    """gmce / our-dvs at 0% and 100% high urgency, two seeds each (carbon 1 and 3 -> 2;
    5 and 7 -> 6); the bound's mean beside it; a run at another rate is left out."""
    for share, (a, b) in (("0", (1, 3)), ("1", (5, 7))):
        for seed, value in ((1, a), (2, b)):
            fake_run(tmp_path, f"gmce-hu{share}", seed, [f"dvfs.urgent-share={share}"],
                     garg_carbon_per_cpu_hour=value, garg_carbon_bound_per_cpu_hour=0.5)
    fake_run(tmp_path, "gmce-rate10", 1, ["dvfs.arrival-rate=10", "dvfs.urgent-share=0"],
             garg_carbon_per_cpu_hour=100.0)
    fake_run(tmp_path, "gmce-one-hu0", 1, ["dvfs.urgent-share=0", "dvfs.slot-fit=one-slot"],
             garg_carbon_per_cpu_hour=3.0)
    assert main([str(tmp_path), "--metric", "garg_carbon_per_cpu_hour"]) == 0
    out = capsys.readouterr().out
    assert out.split("\n")[1:6] == [
        "carbon (kg per CPU-hour), by share of high urgency (rate 100)",
        "urgent %  bound (4.3)  gmce / our-dvs  gmce / our-dvs / one-slot",
        "       0          0.5               2                          3",
        "     100          0.5               6                          -",
        ""]


def test_no_runs_is_one_line(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().startswith("lm-garg-figures: error: no finished")


def test_a_broken_run_folder_is_one_line(tmp_path, capsys):
    fake_run(tmp_path, "gmce-hu0", 1, ["dvfs.urgent-share=0"], garg_carbon_per_cpu_hour=1)
    (tmp_path / "gmce-hu0" / "week" / "seed-1" / "summary.json").write_text("{truncated")
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lm-garg-figures: error: ") and "seed-1: not a finished run" in err
    assert "\n" not in err


def test_each_sites_share_of_work_and_cost(tmp_path, capsys):
    """gmp / our-dvs at 0% and 100% high urgency. At 0%, seed 1: a 30 of 40 CPU-hours ($1 of
    $4), b 10 ($3) -> a 75% / 25%; seed 2: a 10 of 40 ($1 of $2) -> 25% / 50%: means a 50% /
    37.5%, b 50% / 62.5%. At 100%: a only. Both bounds beside the profit."""
    sites = {0: [({"a": (30, 1), "b": (10, 3)}), ({"a": (10, 1), "b": (30, 1)})],
             1: [({"a": (5, 2)}), ({"a": (7, 1)})]}
    for share, per_seed in sites.items():
        for seed, table in enumerate(per_seed, 1):
            fake_run(tmp_path, f"gmp-hu{share}", seed,
                     [f"dvfs.urgent-share={share}", "simulation.policy-site-selection=gmp"],
                     garg_profit_per_cpu_hour=0.3, garg_profit_bound_per_cpu_hour=0.4,
                     garg_profit_bound_arrivals_per_cpu_hour=0.35,
                     garg_sites={name: {"workload_cpu_hours": work, "energy_cost": cost}
                                 for name, (work, cost) in table.items()})
    assert main([str(tmp_path), "--metric", "garg_profit_per_cpu_hour", "--by", "share"]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[1:5] == [
        "profit ($ per CPU-hour), by share of high urgency (rate 100)",
        "urgent %  bound (4.3)  bound, arrivals  gmp / our-dvs",
        "       0          0.4             0.35            0.3",
        "     100          0.4             0.35            0.3"]
    assert out[6:10] == [
        "each site's share of the work executed / of the energy cost (%), by share of high "
        "urgency (rate 100)",
        "         line  urgent %              a            b",
        "gmp / our-dvs         0    50.0 / 37.5  50.0 / 62.5",
        "gmp / our-dvs       100  100.0 / 100.0            -"]


def test_the_carbon_bounds_site_mix_is_a_line_of_its_own(tmp_path, capsys):
    """gmce and gmp / our-dvs at 20% high urgency, seeds 1 and 2; the carbon bound maps
    seed 1's work as a 90, b 10 CPU-hours (90% / 10%) and seed 2's as a 60, b 40 (60% / 40%),
    the same in the gmce and the gmp run of a seed: the bound's line has the means over seeds,
    a 75%, b 25%, and no cost. The policies' own shares: a 50% of work and cost each."""
    bound = {1: {"a": 90, "b": 10}, 2: {"a": 60, "b": 40}}
    for policy in ("gmce", "gmp"):
        for seed in (1, 2):
            fake_run(tmp_path, f"{policy}-hu20", seed,
                     ["dvfs.urgent-share=0.2", f"simulation.policy-site-selection={policy}"],
                     garg_carbon_per_cpu_hour=0.1, garg_carbon_bound_site_cpu_hours=bound[seed],
                     garg_sites={"a": {"workload_cpu_hours": 5, "energy_cost": 1},
                                 "b": {"workload_cpu_hours": 5, "energy_cost": 1}})
    fake_run(tmp_path, "gmce-hu40", 1, ["dvfs.urgent-share=0.4"],
             garg_carbon_per_cpu_hour=0.1, garg_carbon_bound_site_cpu_hours={"a": 1, "b": 0},
             garg_sites={"a": {"workload_cpu_hours": 1, "energy_cost": 1}})
    assert main([str(tmp_path), "--metric", "garg_carbon_per_cpu_hour", "--by", "share"]) == 0
    out = capsys.readouterr().out.split("\n")
    start = out.index("each site's share of the work executed / of the energy cost (%), by "
                      "share of high urgency (rate 100)")
    assert out[start + 1:start + 7] == [
        "              line  urgent %              a            b",
        "carbon bound (4.3)        20       75.0 / -     25.0 / -",
        "carbon bound (4.3)        40      100.0 / -      0.0 / -",
        "    gmce / our-dvs        20    50.0 / 50.0  50.0 / 50.0",
        "    gmce / our-dvs        40  100.0 / 100.0            -",
        "     gmp / our-dvs        20    50.0 / 50.0  50.0 / 50.0"]


def test_an_axis_of_one_point_is_shown_when_named_and_said_when_not(tmp_path, capsys):
    """Fig. 8 at one spread only (sd 0.2): with ``--by carbon-sd`` its one point is printed;
    by default (share and rate: one point each here) nothing varies, and that is said in one
    line instead of printing nothing and exiting 0."""
    sites = ("new-york", "pennsylvania", "california", "ohio", "north-carolina", "texas",
             "france", "australia")
    fake_run(tmp_path, "gmp-sd0.2", 1,
             ["dvfs.urgent-share=0.4", "simulation.policy-site-selection=gmp",
              *(f"site:{s}.carbon-rate=normal:0.2:0.2" for s in sites)],
             garg_profit_per_cpu_hour=0.25)
    assert main([str(tmp_path), "--metric", "garg_profit_per_cpu_hour",
                 "--by", "carbon-sd"]) == 0
    out = capsys.readouterr().out
    assert "by spread of the carbon rates" in out
    assert out.split("\n")[2:4] == ["carbon sd  gmp / our-dvs", "      0.2           0.25"]
    assert main([str(tmp_path), "--metric", "garg_profit_per_cpu_hour"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lm-garg-figures: error: nothing to show in ") and "\n" not in err


def test_the_level_penalty_split_by_site_and_level(tmp_path, capsys):
    """gmce / prev-dvs at 100% high urgency, two seeds. Seed 1: 10 CPU-hours, 30 J, 20 J at
    the least-energy levels; site a 24 J (14 J least), 2 CPU-h at level 0 and 3 at level 1;
    site b 6 J (6 least), 5 CPU-h at level 1. Seed 2: 20 CPU-h, 40 J, 40 J least, all at a's
    level 1. Per CPU-hour: energy 3 and 2 (mean 2.5), least 2 and 2 (mean 2): penalty 1.25;
    a's part 100 x mean(10/10, 0) / 2 = 25 points, b's 0; level 0 holds 20% and 0% (mean 10%),
    level 1 80% and 100% (90%)."""
    per_seed = {1: (10, 30, 20, {"a": (24, 14, [2, 3]), "b": (6, 6, [0, 5])}),
                2: (20, 40, 40, {"a": (40, 40, [0, 20])})}
    for seed, (work, energy, least, sites) in per_seed.items():
        fake_run(tmp_path, "prev-hu1", seed,
                 ["dvfs.urgent-share=1", "power.policy-operating-point=prev-dvs"],
                 garg_workload_cpu_hours=work, garg_energy_joules=energy,
                 garg_energy_per_cpu_hour=energy / work, garg_energy_least_level_joules=least,
                 garg_sites={name: {"workload_cpu_hours": sum(levels), "energy_cost": 1,
                                    "energy_joules": e, "energy_least_level_joules": e_least,
                                    "level_cpu_hours": levels}
                             for name, (e, e_least, levels) in sites.items()})
    assert main([str(tmp_path), "--metric", "garg_energy_per_cpu_hour", "--by", "share"]) == 0
    out = capsys.readouterr().out.split("\n")
    start = out.index("each line's level penalty (its energy per CPU-hour over the same work's "
                      "at its least-energy levels) and its work at each level (%), by share of "
                      "high urgency (rate 100)")
    assert out[start + 1:start + 7] == [
        "           line  urgent %  J per CPU-h at least levels  penalty  L0 %  L1 %",
        "gmce / prev-dvs       100                            2   x1.250  10.0  90.0",
        "",
        "each site's energy above its least-energy levels (points of the penalty)",
        "           line  urgent %     a    b",
        "gmce / prev-dvs       100  25.0  0.0"]


def test_a_high_urgency_ratio_other_than_the_papers_is_a_line_of_its_own(tmp_path, capsys):
    """Every lease high urgency; deadline ratio mean 4 (the paper's), 6 and 8 (variance 2):
    three lines, the paper's unnamed."""
    for mean, energy in ((4, 1.0), (6, 2.0), (8, 3.0)):
        fake_run(tmp_path, f"our-hu100-mean{mean}", 1,
                 ["dvfs.urgent-share=1", f"dvfs.high-urgency={mean} 2"],
                 garg_energy_per_cpu_hour=energy)
    assert main([str(tmp_path), "--metric", "garg_energy_per_cpu_hour", "--by", "share"]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[2:4] == [
        "urgent %  gmce / our-dvs  gmce / our-dvs / high urgency 6 2  "
        "gmce / our-dvs / high urgency 8 2",
        "     100               1                                  2  "
        "                                3"]
