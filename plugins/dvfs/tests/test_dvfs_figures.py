"""lm-garg-figures: runs placed by their configuration, means over seeds, the bound line."""

from __future__ import annotations

import json

from lm_dvfs.figures import main

from lmd_helpers import ROOT


def fake_run(out, profile, seed, overrides, **summary):
    """A finished run folder as a sweep writes it (run.json and summary.json)."""
    folder = out / profile / "week" / f"seed-{seed}"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "seed": seed, "base": str(ROOT / "etc" / "garg.ini"),
        "overrides": [*overrides, f"simulation.seed={seed}"]}))
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
    assert main([str(tmp_path), "--metric", "garg_carbon_per_cpu_hour"]) == 0
    out = capsys.readouterr().out
    assert out.split("\n")[1:6] == [
        "carbon (kg per CPU-hour), by share of high urgency (rate 100)",
        "urgent %  bound (4.3)  gmce / our-dvs",
        "       0          0.5               2",
        "     100          0.5               6",
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
