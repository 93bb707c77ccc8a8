"""The chapter-7 configurations and the runner's tables (no trace needed)."""

from __future__ import annotations

import math

from lease_manager.config.schema import load_config
from lm_autonomic import ch7

from lma_helpers import ETC, plugins


def test_sweeps_are_valid_and_complete():
    """The two chapter-7 sweep files cross into the 24 configurations of Tables 7.2-7.5."""
    from lease_manager.experiments.sweep_file import load_sweep

    schema = plugins().schema
    profiles = []
    for name in ch7.SWEEPS.values():
        sweep = load_sweep(ETC / name, plugins())
        for spec in sweep.runs:
            cfg = load_config(spec.base, schema, list(spec.overrides))
            m = ch7._PROFILE.match(spec.profile)
            nodes, rest = cfg.get("simulation", "resources").split(" ", 1)
            assert int(nodes) * int(m["cores"]) == (208 if m["trace"] == "ds" else 144)
            assert cfg.get("scheduling", "backfilling") == "aggressive"
            assert cfg.get("tracefile", "paradigm") == "cloud"
            assert cfg.get("scheduling", "policy-queue") == (
                "autonomic" if m["auto"] == "auto" else "fcfs")
            assert cfg.get("scheduling", "policy-host-selection") == (
                "ea-consolidation" if m["policy"] == "green1" else "ea-time-horizon")
            profiles.append(spec.profile)
    assert len(set(profiles)) == 24


def test_ratio_table():
    rows = []
    for auto, rc, wait in ((False, 500.0, 100.0), (True, 100.0, 160.0)):
        rows.append(dict(name="x", out="/nonexistent", trace="blue1", auto=auto,
                         policy="green1", cores=16, configuration="C", leases=10,
                         completion_time=1.0, rc_cycle_sum=rc, rc_integral=2 * rc,
                         rc_mean=math.nan, avg_wait=wait, prepending=3 if auto else 0,
                         prepending_time_mean=20.0))
    text = ch7.format_tables(rows)
    line = next(l for l in text.splitlines() if l.startswith("BLUE1-GREEN1-CPN16"))
    assert line.split()[1:4] == ["5.00", "5.00", "4.58"]
    assert line.split()[-1] == "+60"
