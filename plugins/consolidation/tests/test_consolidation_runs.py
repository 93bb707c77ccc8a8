"""Whole runs: the EA policies inside the core mapper on a real trace, reproducibility, the
installed entry point, the chapter-6 configurations and the one-command experiment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lease_manager import bin_means
from lease_manager.config.schema import load_config
from lm_consolidation import ch6

from lmc_helpers import ETC, TRACE, plugins, trace_run


@pytest.mark.parametrize("policy", ["ea-consolidation", "ea-time-horizon"])
def test_ea_policies_on_500_real_leases(policy):
    """First 500 leases of the 30-day trace on 18 nodes x 8 cores, conservative: the run ends
    with every lease done and the core's invariants hold (checked at the end of the run);
    contention is lower than greedy's on the same annotated workload."""
    run = trace_run(f"scheduling.policy-host-selection={policy}")
    summary = run.run()
    run.table.check()
    assert run.invariants is not None
    assert summary["leases_completed"] == summary["leases_total"] == 500
    greedy = trace_run("scheduling.policy-host-selection=greedy").run()
    assert summary["resource_contention_integral"] < greedy["resource_contention_integral"]


def test_same_seed_byte_identical_leases_csv_and_another_seed_differs(tmp_path):
    def leases_csv(seed: int, name: str) -> bytes:
        run = trace_run("scheduling.policy-host-selection=ea-time-horizon",
                        f"simulation.seed={seed}", max_jobs=300)
        run.run()
        run.write(tmp_path / name)
        return (tmp_path / name / "leases.csv").read_bytes()

    first = leases_csv(1, "a")
    assert leases_csv(1, "b") == first
    assert leases_csv(2, "c") != first
    series = (tmp_path / "a" / "series" / "resource_contention.csv").read_bytes()
    assert (tmp_path / "b" / "series" / "resource_contention.csv").read_bytes() == series


def test_the_installed_entry_point_provides_everything():
    """``pip install -e plugins/consolidation`` (the README's set-up) registers the plugin."""
    out = subprocess.run([sys.executable, "-m", "lease_manager.cli", "plugins"],
                         capture_output=True, text=True, check=True).stdout
    assert "consolidation  [lm-consolidation" in out, "install it: pip install -e " \
                                                      "plugins/consolidation"
    for policy in ("host-selection: ea-consolidation", "host-selection: ea-time-horizon",
                   "probe: resource-contention", "annotator: thesis-workload"):
        assert policy in out


SWEEP = ETC / "thesis-ch6-sweep.ini"


def test_twelve_chapter_6_profiles():
    """The sweep file crosses paradigm x policy x cores into Table 6.1's twelve
    configurations, each with the site, paradigm and policy its name says."""
    from lease_manager.experiments.sweep_file import load_sweep

    sweep = load_sweep(SWEEP, plugins())
    assert len(sweep.profiles) == 12 and sweep.seeds == (1, 2, 3, 4, 5)
    seen = set()
    schema = plugins().schema
    for spec in sweep.runs:
        m = ch6._PROFILE.match(spec.profile)
        cfg = load_config(spec.base, schema, list(spec.overrides))
        cores = int(m["cores"])
        policy = m["policy"]
        assert cfg.get("simulation", "resources") == \
            f"{144 // cores} CPU:{cores} Memory:{1024 * cores}"
        assert cfg.get("tracefile", "paradigm") == m["paradigm"]
        assert cfg.get("scheduling", "policy-host-selection") == policy
        assert cfg.get("scheduling", "backfilling") == "conservative"
        assert Path(cfg.get("tracefile", "tracefile")).resolve() == TRACE
        assert cfg.get("tracefile", "annotators") == ("thesis-workload",)
        assert "resource-contention" in cfg.get("accounting", "probes")
        assert cfg.get("tracefile", "vm-resources") == "CPU:1 Memory:1024"
        seen.add((m["paradigm"], policy, cores))
    assert len(seen) == 12


def test_one_command_runs_them_all_prints_the_table_and_plots(tmp_path, capsys):
    """The whole experiment (seed 0) on the first 150 leases of the trace, two runs in
    parallel, through the sweep file."""
    code = ch6.main(["--out", str(tmp_path), "--sweep", str(SWEEP), "--jobs", "2",
                     "--seeds", "0", "--set", "tracefile.max-jobs=150"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Table 6.1 (16 cores per node, 9 nodes" in out
    assert "Table 6.1 (8 cores per node, 18 nodes" in out
    for name in ("cloudgreedy", "hpcgreedy"):
        assert out.count(name) == 2
    for name in ("cloudeatimeconsolidation", "cloudeaconsolidation", "hpceatimeconsolidation",
                 "hpceaconsolidation"):
        assert out.count(name) == 4   # the two tables and the comparison with the thesis
    assert "ours (seed 0) and the thesis' Table 6.1" in out
    assert (tmp_path / "rc-over-time.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = (tmp_path / "table.csv").read_text().splitlines()
    assert len(rows) == 13 and rows[0].startswith("configuration,cores,seed,paradigm")
    for paradigm in ("cloud", "hpc"):
        for policy in ("greedy", "ea-consolidation", "ea-time-horizon"):
            for cores in (16, 8):
                run = tmp_path / f"{paradigm}-{policy}-{cores}" / "sdsc-blue-30days" / "seed-0"
                assert (run / "leases.csv").exists()
                assert (run / "series" / "resource_contention.csv").exists()
    assert len((tmp_path / "results.csv").read_text().splitlines()) == 13   # the sweep's own


def test_bin_means_of_a_piecewise_constant_series():
    import numpy as np

    t = np.array([0.0, 10.0, 30.0, 40.0])
    v = np.array([2.0, 4.0, 1.0, 0.0])
    mid, mean, cum = bin_means(t, v, 20.0)
    assert cum.tolist() == [0, 20, 100, 110]
    assert mid.tolist() == [10, 30]
    assert mean.tolist() == [(20 + 40) / 20, (40 + 10) / 20]


def test_seed_summary_compares_each_ea_configuration_with_greedy_seed_by_seed():
    def row(seed, policy, rc, time=100.0):
        return {"seed": seed, "cores": 8, "paradigm": "cloud", "policy": policy,
                "configuration": f"cloud{policy}", "rc_integral": rc, "completion_time": time}

    rows = [row(0, "greedy", 100), row(0, "eaconsolidation", 90, 101),
            row(1, "greedy", 200), row(1, "eaconsolidation", 210, 103)]
    text = ch6.format_seed_summary(rows)
    line = next(l for l in text.splitlines() if l.startswith("cloudeaconsolidation"))
    assert line.split() == ["cloudeaconsolidation", "8", "-10.0%", "+5.0%", "-2.5%", "1/2",
                            "+2.0%", "-8.9%", "+0.7%"]   # the last two: Table 6.1


def test_readings_sweep_profiles_and_table():
    """The readings sweep's 48 profiles parse (reading = queues, site variant); none is part of
    another's name (profiles are chosen by substring); the table compares with greedy within
    a reading."""
    from lease_manager.experiments.sweep_file import load_sweep

    sweep = load_sweep(ETC / ch6.READINGS_SWEEP, plugins())
    assert len(sweep.profiles) == 48
    for p in sweep.profiles:
        assert ch6._PROFILE.match(p), p
        assert not [q for q in sweep.profiles if q != p and p in q], p
    rows = []
    for reading in ("haizea", "all-machine"):
        for policy, rc in (("greedy", 100.0), ("ea-consolidation", 80.0)):
            queues, _, site = reading.partition("-")
            name = f"{queues}-cloud-{policy}-{site + '-' if site else ''}8"
            rows.append(ch6.row(name, 1, {
                "leases_total": 5, "makespan": 10.0, "resource_contention_integral": rc,
                "resource_contention_cycle_sum": rc / 2, "utilization": 0.5, "avg_wait": 1.0,
                "simulation": {"cpu_seconds": 1.0}}, Path("/nonexistent")))
    assert [r["reading"] for r in rows] == ["haizea", "haizea", "all+machine", "all+machine"]
    text = ch6.format_readings(rows)
    lines = [l.split() for l in text.splitlines() if l.startswith("cloudeaconsolidation")]
    assert lines == [["cloudeaconsolidation", "8", "-20.0%", "-20.0%", "1/1", "+0.0%", "-8.9%",
                      "+0.7%"]] * 4
    assert text.index("Reading all+machine") < text.index("Reading haizea")
