"""The chapter-7 configurations, the readings sweeps and the runner's tables (no run needed)."""

from __future__ import annotations

import math

from lease_manager.config.schema import load_config
from lease_manager.experiments.sweep_file import load_sweep
from lm_autonomic import ch7

from lma_helpers import ETC, ROOT, plugins


def test_sweeps_are_valid_and_complete():
    """The two chapter-7 sweep files cross into the 24 configurations of Tables 7.2-7.5, on
    the three windows shipped in traces/."""
    schema = plugins().schema
    configurations = set()
    for name in ch7.SWEEPS.values():
        sweep = load_sweep(ETC / name, plugins())
        for spec in sweep.runs:
            assert (ROOT / "traces" / f"{spec.trace}.swf").is_file()
            cfg = load_config(spec.base, schema, list(spec.overrides))
            m = ch7._PROFILE.match(spec.profile)
            window = ch7.window_name(spec.trace)
            nodes, rest = cfg.get("simulation", "resources").split(" ", 1)
            assert int(nodes) * int(m["cores"]) == (208 if window == "ds" else 144)
            assert cfg.get("tracefile", "procs-per-vm") == 8
            assert cfg.get("scheduling", "backfilling") == "aggressive"
            assert cfg.get("tracefile", "paradigm") == "cloud"
            assert cfg.get("scheduling", "policy-queue") == (
                "autonomic" if m["auto"] == "auto" else "fcfs")
            assert cfg.get("scheduling", "policy-host-selection") == (
                "ea-consolidation" if m["policy"] == "green1" else "ea-time-horizon")
            configurations.add((window, spec.profile))
        assert sweep.seeds == (1, 2, 3, 4, 5)
    assert len(configurations) == 24
    assert {w for w, _ in configurations} == {"blue1", "blue2", "ds"}


def test_readings_sweeps_parse_and_share_the_non_auto_runs():
    """Every profile of the readings sweeps parses; no profile name is part of another (the
    runner selects profiles by substring); the non-AUTO runs of readings that only set
    [autonomic] options are left to the default reading's."""
    for name in ch7.READING_SWEEPS.values():
        path = ETC / name
        sweep = load_sweep(path, plugins())
        names = sweep.profiles
        for p in names:
            assert ch7._PROFILE.match(p), p
            assert not [q for q in names if q != p and p in q], p
        shared = ch7._shared_nonauto(path, plugins())
        readings = {ch7._PROFILE.match(p)["reading"] for p in shared}
        assert readings == {"util-site", "util-monitoring", "req-per-vm", "unmapped-none",
                            "no-discount", "exclude-arrival"}
        assert not any(ch7._PROFILE.match(p)["auto"] == "auto" for p in shared)
        run = ch7._profiles_to_run(path, plugins(), ["util-site-"])
        assert run and all(p.startswith("util-site-auto-") for p in run)


def _row(auto, rc, wait, seed=1, reading="default", trace="blue1", time=1000.0, held=0):
    return dict(name="x", out="/nonexistent", reading=reading, site="", trace=trace,
                auto=auto, policy="green1", cores=16, seed=seed,
                configuration="AUTO-GREEN1-CPN16" if auto else "GREEN1-CPN16", leases=10,
                rejected=0, completion_time=time, rc_cycle_sum=rc, rc_integral=2 * rc,
                rc_mean=math.nan, avg_wait=wait, prepending=held, prepending_time_mean=20.0)


def test_ratio_table_is_the_mean_of_per_seed_ratios():
    rows = [_row(False, 500.0, 100.0, 1), _row(True, 100.0, 160.0, 1, held=3),
            _row(False, 300.0, 100.0, 2), _row(True, 100.0, 140.0, 2, held=1)]
    text = ch7.format_tables(rows)
    line = next(l for l in text.splitlines() if l.startswith("BLUE1-GREEN1-CPN16"))
    cells = line.split()
    assert cells[1:4] == ["4.00", "+-", "1.41"]           # (5 + 3) / 2, sd of 5 and 3
    assert cells[7] == "4.58" and cells[-1] == "+50"      # thesis; wait 150 - 100
    mean_auto = next(l for l in text.splitlines() if l.startswith("AUTO-GREEN1-CPN16"))
    assert mean_auto.split()[-1] == "20.0"                 # held: (30 % + 10 %) / 2


def test_reading_verdicts():
    """A reading reproduces the shape when both Blue windows give a ratio of at least 2, DS a
    smaller one, and completion times move by at most 3 %."""
    rows = []
    for reading, blue, ds, slower in (("good", 4.0, 1.5, 1.01), ("weak", 1.1, 1.0, 1.0),
                                      ("slow", 4.0, 1.5, 1.2)):
        for trace, ratio in (("blue1", blue), ("blue2", blue), ("ds", ds)):
            rows.append(_row(False, 100.0 * ratio, 10.0, reading=reading, trace=trace))
            rows.append(_row(True, 100.0, 30.0, reading=reading, trace=trace, time=1000 * slower))
    summary = ch7.reading_summary(rows)
    assert ch7.shape_verdict(summary, "good") == "yes"
    assert ch7.shape_verdict(summary, "weak").startswith("no: Blue ratio 1.10 < 2")
    assert ch7.shape_verdict(summary, "slow") == "no: completion moves up to 20%"
    text = ch7.format_readings(rows)
    assert "good                           yes" in text


def test_auto_runs_of_a_reading_pair_with_the_default_non_auto_runs():
    rows = [_row(False, 200.0, 10.0), _row(True, 100.0, 20.0, reading="util-site")]
    (n, a), = ch7.pairs(rows)
    assert n["reading"] == "default" and a["reading"] == "util-site"
