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
        # --only util-site- selects util-site's AUTO runs, and the default reading's non-AUTO
        # runs they are compared with come along (without them the table had no rows)
        run = ch7._profiles_to_run(path, plugins(), ["util-site-"])
        auto = [p for p in run if p.startswith("util-site-auto-")]
        assert auto and len(run) == 2 * len(auto)
        assert sorted(p for p in run if p not in auto) == sorted(
            p.replace("util-site-auto-", "default-nonauto-") for p in auto)
        # a reading whose non-AUTO runs are its own (the queue filter changes them) brings its
        # own, not the default's
        run = ch7._profiles_to_run(path, plugins(), ["queues-batch-auto-green1-"])
        assert run and sorted(run) == sorted(
            [p for p in names if p.startswith("queues-batch-auto-green1-")]
            + [p for p in names if p.startswith("queues-batch-nonauto-green1-")])


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


def test_a_reading_without_contention_has_no_ratio_to_judge():
    """RC 0 in both runs of every pair (a short pilot) gives no ratio: the verdict says so
    instead of comparing nan with 2."""
    rows = []
    for trace in ("blue1", "blue2", "ds"):
        rows.append(_row(False, 0.0, 10.0, reading="calm", trace=trace))
        rows.append(_row(True, 0.0, 10.0, reading="calm", trace=trace))
    summary = ch7.reading_summary(rows)
    assert ch7.shape_verdict(summary, "calm") == "no: no contention on a Blue window, so no ratio"


def test_auto_runs_of_a_reading_pair_with_the_default_non_auto_runs():
    rows = [_row(False, 200.0, 10.0), _row(True, 100.0, 20.0, reading="util-site")]
    (n, a), = ch7.pairs(rows)
    assert n["reading"] == "default" and a["reading"] == "util-site"


def _table_lines(text: str, start: str, stop: str = "") -> list[str]:
    """The data lines of the table headed by the line starting with ``start``."""
    lines = text.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(start))
    out = []
    for line in lines[i + 3:]:
        if not line.strip() or (stop and line.startswith(stop)):
            break
        out.append(line)
    return out


def test_one_command_runs_the_chapter_and_prints_the_tables(tmp_path, capsys):
    """``lm-thesis-ch7`` itself on the first 50 leases of each window, seed 1: the 24 runs of
    Tables 7.2-7.4 and a ratio line per window, policy and core count (Table 7.5)."""
    code = ch7.main(["--seeds", "1", "--set", "tracefile.max-jobs=50", "--jobs", "1",
                     "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "24 runs in" in out
    ratios = _table_lines(out, "Table 7.5")
    assert sorted(line.split()[0] for line in ratios) == sorted(
        f"{t.upper()}-{p.upper()}-CPN{c}" for (t, p, c) in ch7.THESIS_RATIO)
    rows = (tmp_path / "table.csv").read_text().splitlines()
    assert len(rows) == 25 and rows[0].startswith("reading,site,trace,auto")
    for window in ("blue1", "blue2", "ds"):
        assert (tmp_path / f"rc-{window}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_one_reading_runs_with_the_non_auto_runs_it_is_compared_with(tmp_path, capsys):
    """``lm-thesis-ch7 --readings --only READING-...`` (the README's command for one reading)
    runs that reading's AUTO profiles and the default reading's non-AUTO ones, and prints a
    line per window: without them the readings table had no rows."""
    code = ch7.main(["--readings", "--only", "util-site-auto-green1-8cores", "--only",
                     "util-site-auto-green1-2cores", "--seeds", "1", "--set",
                     "tracefile.max-jobs=50", "--jobs", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "6 runs in" in out
    lines = _table_lines(out, "Readings:")
    assert [line.split()[:3] for line in lines] == [
        ["util-site", "blue1", "1"], ["util-site", "blue2", "1"], ["util-site", "ds", "1"]]
    assert "Table 7.5" not in out      # the default reading's non-AUTO runs alone: no table
    rows = (tmp_path / "table.csv").read_text().splitlines()[1:]
    assert sorted((r.split(",")[0], r.split(",")[3]) for r in rows) == (
        [("default", "False")] * 3 + [("util-site", "True")] * 3)
