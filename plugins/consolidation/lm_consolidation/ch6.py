"""``lm-thesis-ch6``: the thesis' chapter-6 experiment (Table 6.1) in one command.

A thin wrapper over ``lease-manager sweep etc/thesis-ch6-sweep.ini``: it runs the sweep
(cloud and hpc paradigms x greedy, ea-consolidation and ea-time-horizon x 16 and 8 cores per
node, conservative backfilling, 30 days of SDSC Blue Horizon; resumable, run folders
``OUT/PROFILE/TRACE/seed-N/``), then prints a table like Table 6.1 with the utilisation and
average wait beside it and our changes against greedy beside the thesis' (also written as
``OUT/table.md`` and ``OUT/table.csv``) and plots resource contention over time
(``OUT/rc-over-time.png``)::

    lm-thesis-ch6 --out results/thesis-ch6                  # the sweep file's seeds (1-5)
    lm-thesis-ch6 --set tracefile.max-jobs=500 --seeds 0 --out /tmp/ch6-quick
    lm-thesis-ch6 --only hpc                                # profiles whose name has "hpc"

The sweep file is ``--sweep FILE``, else ``./etc/thesis-ch6-sweep.ini``, else the one in the
``etc/`` of the lease_manager checkout this package sits in (an editable install).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lease_manager import LeaseManagerError, bin_means, etc_file, read_series, run_sweep_file

SWEEP = "thesis-ch6-sweep.ini"
READINGS_SWEEP = "thesis-ch6-readings-sweep.ini"
#: profile names of the sweeps: [READING-]PARADIGM-POLICY-[SITE-]CORES (the readings sweep
#: prefixes the queues read and may name a site variant)
_PROFILE = re.compile(r"(?:(?P<reading>[a-z0-9]+)-)?(?P<paradigm>cloud|hpc)-"
                      r"(?P<policy>greedy|ea-consolidation|ea-time-horizon)-"
                      r"(?:(?P<site>[a-z]+)-)?(?P<cores>\d+)$")
#: the thesis' configuration names for the host selection policies
THESIS_NAME = {"greedy": "greedy", "ea-consolidation": "eaconsolidation",
               "ea-time-horizon": "eatimeconsolidation"}
#: the thesis' order of rows in Table 6.1
POLICY_ORDER = ("eatimeconsolidation", "eaconsolidation", "greedy")
PARADIGM_ORDER = ("cloud", "hpc")
COLUMNS = ("configuration", "cores", "seed", "paradigm", "policy", "host_selection", "leases",
           "completion_time", "rc_integral", "rc_mean", "rc_cycle_sum", "utilization",
           "avg_wait", "cpu_seconds", "reading")


def row(profile: str, seed: int, summary: dict[str, Any], out: Path) -> dict[str, Any]:
    """One run's row of the table, from its profile name and ``summary.json``."""
    m = _PROFILE.match(profile)
    if m is None:
        raise LeaseManagerError(f"profile {profile!r} is not "
                                f"[READING-]PARADIGM-POLICY-[SITE-]CORES")
    policy = THESIS_NAME[m["policy"]]
    reading = "+".join(x for x in (m["reading"], m["site"]) if x) or "default"
    return {
        "reading": reading,
        "configuration": f"{m['paradigm']}{policy}",
        "cores": int(m["cores"]),
        "seed": seed,
        "paradigm": m["paradigm"],
        "policy": policy,
        "host_selection": m["policy"],
        "leases": summary["leases_total"],
        "completion_time": summary["makespan"],
        "rc_integral": summary.get("resource_contention_integral", math.nan),
        "rc_mean": summary.get("resource_contention_mean", math.nan),
        "rc_cycle_sum": summary.get("resource_contention_cycle_sum", math.nan),
        "utilization": summary["utilization"],
        "avg_wait": summary["avg_wait"],
        "cpu_seconds": summary["simulation"]["cpu_seconds"],
        "name": profile,
        "out": str(out),
    }


def _sort_key(row: dict[str, Any]) -> tuple:
    def pos(seq, x):
        return seq.index(x) if x in seq else len(seq)
    return (row["seed"], -row["cores"], pos(PARADIGM_ORDER, row["paradigm"]),
            pos(POLICY_ORDER, row["policy"]), row["configuration"])


def _pct(value: float, base: float) -> str:
    if not base or math.isnan(value) or math.isnan(base):
        return "-"
    return f"{100 * (value / base - 1):+.1f}%"


#: the thesis' Table 6.1: (cores, configuration) -> (completion time s, resource contention)
THESIS_TABLE_6_1: dict[tuple[int, str], tuple[float, float]] = {
    (16, "cloudeatimeconsolidation"): (2689207, 365667584),
    (16, "cloudeaconsolidation"): (2694286, 372760333),
    (16, "cloudgreedy"): (2663556, 455026120),
    (16, "hpceatimeconsolidation"): (3058147, 201649827),
    (16, "hpceaconsolidation"): (3019506, 170207159),
    (16, "hpcgreedy"): (2681813, 441726388),
    (8, "cloudeatimeconsolidation"): (2681514, 128798324),
    (8, "cloudeaconsolidation"): (2682099, 114294790),
    (8, "cloudgreedy"): (2663556, 125467388),
    (8, "hpceatimeconsolidation"): (2833329, 54352992),
    (8, "hpceaconsolidation"): (2840499, 60079428),
    (8, "hpcgreedy"): (2672287, 129578192),
}


def _greedy(rows: Iterable[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    return {(r["seed"], r["cores"], r["paradigm"]): r for r in rows if r["policy"] == "greedy"}


def format_tables(rows: Iterable[dict[str, Any]]) -> str:
    """Table 6.1 for each seed and core count, with changes relative to greedy in the same
    paradigm."""
    rows = sorted(rows, key=_sort_key)
    greedy = _greedy(rows)
    out: list[str] = []
    head = (f"{'configuration':<26} {'time (s)':>11} {'vs greedy':>9} {'RC integral':>16} "
            f"{'vs greedy':>9} {'RC cycle sum':>14} {'util':>6} {'avg wait (s)':>12}")
    for seed, cores in sorted({(r["seed"], r["cores"]) for r in rows},
                              key=lambda sc: (sc[0], -sc[1])):
        group = [r for r in rows if r["cores"] == cores and r["seed"] == seed]
        nodes = 144 // cores if 144 % cores == 0 else "?"
        out.append(f"Table 6.1 ({cores} cores per node, {nodes} nodes; conservative "
                   f"backfilling; {group[0]['leases']:,} leases; seed {seed})")
        out.append(head)
        out.append("-" * len(head))
        for r in group:
            base = greedy.get((seed, cores, r["paradigm"]))
            out.append(
                f"{r['configuration']:<26} {r['completion_time']:>11,.0f} "
                f"{_pct(r['completion_time'], base['completion_time']) if base else '-':>9} "
                f"{r['rc_integral']:>16,.0f} "
                f"{_pct(r['rc_integral'], base['rc_integral']) if base else '-':>9} "
                f"{r['rc_cycle_sum']:>14,.0f} {r['utilization']:>6.1%} {r['avg_wait']:>12,.0f}")
        out.append("")
    out.append("time = completion time (makespan); RC integral = the time integral of RC(t) "
               "(eqs 5.1-5.4); RC cycle sum = RC summed over scheduling cycles (the form of the "
               "thesis' Table 6.1, we believe); vs greedy: same paradigm and cores.")
    return "\n".join(out)


def format_thesis_comparison(rows: Iterable[dict[str, Any]]) -> str:
    """Ours against the thesis' Table 6.1, both as changes against greedy (shapes, not
    digits: the thesis' synthetic draws cannot be repeated)."""
    rows = sorted(rows, key=_sort_key)
    seed = rows[0]["seed"]
    rows = [r for r in rows if r["seed"] == seed]
    greedy = _greedy(rows)
    head = (f"{'configuration':<26} {'cores':>5}  {'time':>7} {'thesis':>7}   "
            f"{'RC integral':>11} {'RC cycle sum':>12} {'thesis RC':>9}")
    out = [f"Against greedy (same paradigm and cores): ours (seed {seed}) and the thesis' "
           f"Table 6.1", head, "-" * len(head)]
    for r in rows:
        if r["policy"] == "greedy":
            continue
        base = greedy.get((seed, r["cores"], r["paradigm"]))
        if base is None:
            continue
        thesis = THESIS_TABLE_6_1.get((r["cores"], r["configuration"]))
        thesis_base = THESIS_TABLE_6_1.get((r["cores"], f"{r['paradigm']}greedy"))
        if thesis and thesis_base:
            t_time = _pct(thesis[0], thesis_base[0])
            t_rc = _pct(thesis[1], thesis_base[1])
        else:
            t_time = t_rc = "-"
        out.append(f"{r['configuration']:<26} {r['cores']:>5}  "
                   f"{_pct(r['completion_time'], base['completion_time']):>7} {t_time:>7}   "
                   f"{_pct(r['rc_integral'], base['rc_integral']):>11} "
                   f"{_pct(r['rc_cycle_sum'], base['rc_cycle_sum']):>12} {t_rc:>9}")
    return "\n".join(out)


def format_readings(rows: Iterable[dict[str, Any]]) -> str:
    """Per reading (queues, site): each EA configuration against greedy, seed by seed, by the
    RC cycle sum and by the integral."""
    rows = list(rows)
    out = []
    for reading in dict.fromkeys(r["reading"] for r in sorted(rows, key=lambda r: r["reading"])):
        group = [r for r in rows if r["reading"] == reading]
        out.append(f"Reading {reading} ({group[0]['leases']:,} leases)")
        out.append(format_seed_summary(group, "rc_cycle_sum", "RC cycle sum"))
        out.append(format_seed_summary(group))
        out.append("")
    return "\n".join(out)


def format_seed_summary(rows: Iterable[dict[str, Any]], metric: str = "rc_integral",
                        label: str = "RC integral") -> str:
    """With several seeds: each EA configuration's change of ``metric`` against greedy, seed
    by seed."""
    rows = sorted(rows, key=_sort_key)
    seeds = sorted({r["seed"] for r in rows})
    greedy = _greedy(rows)
    head = (f"{'configuration':<26} {'cores':>5}  "
            + " ".join(f"{'seed ' + str(s):>8}" for s in seeds) + f" {'mean':>8}  "
            f"{'lower':>5}  {'time (mean)':>11} {'thesis RC':>9} {'time':>7}")
    out = [f"{label} against greedy (same paradigm, cores and seed; thesis: Table 6.1)", head,
           "-" * len(head)]
    keys = sorted({(r["cores"], r["paradigm"], r["policy"], r["configuration"]) for r in rows
                   if r["policy"] != "greedy"},
                  key=lambda k: (-k[0], PARADIGM_ORDER.index(k[1]) if k[1] in PARADIGM_ORDER
                                 else 9, POLICY_ORDER.index(k[2]) if k[2] in POLICY_ORDER
                                 else 9))
    for cores, paradigm, policy, name in keys:
        changes, times = [], []
        for seed in seeds:
            r = next((r for r in rows if (r["seed"], r["cores"], r["paradigm"], r["policy"])
                      == (seed, cores, paradigm, policy)), None)
            base = greedy.get((seed, cores, paradigm))
            if r is None or base is None or not base[metric]:
                changes.append(math.nan)
                continue
            changes.append(r[metric] / base[metric] - 1)
            times.append(r["completion_time"] / base["completion_time"] - 1)
        valid = [c for c in changes if not math.isnan(c)]
        mean = sum(valid) / len(valid) if valid else math.nan
        tmean = sum(times) / len(times) if times else math.nan
        cells = " ".join(f"{100 * c:>+7.1f}%" if not math.isnan(c) else f"{'-':>8}"
                         for c in changes)
        thesis = THESIS_TABLE_6_1.get((cores, name))
        thesis_base = THESIS_TABLE_6_1.get((cores, f"{paradigm}greedy"))
        t_rc = t_time = "-"
        if thesis and thesis_base:
            t_rc, t_time = _pct(thesis[1], thesis_base[1]), _pct(thesis[0], thesis_base[0])
        out.append(f"{name:<26} {cores:>5}  {cells} {100 * mean:>+7.1f}%  "
                   f"{sum(c < 0 for c in valid):>2}/{len(valid):<2}  {100 * tmean:>+10.1f}% "
                   f"{t_rc:>9} {t_time:>7}")
    return "\n".join(out)


def write_csv(rows: Iterable[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="") as fh:
        out = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore",
                             lineterminator="\n")
        out.writeheader()
        for r in sorted(rows, key=_sort_key):
            out.writerow(r)


def plot(rows: Sequence[dict[str, Any]], path: Path, *, bin_width: float = 86400.0) -> Path:
    """RC over time (daily means) and its running integral, one column per core count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cores_list = sorted({r["cores"] for r in rows}, reverse=True)
    fig, axes = plt.subplots(2, len(cores_list), figsize=(7 * len(cores_list), 8),
                             squeeze=False, sharex=True)
    styles = {"greedy": "-", "eaconsolidation": "--", "eatimeconsolidation": ":"}
    colors = {"cloud": "tab:blue", "hpc": "tab:red"}
    for col, cores in enumerate(cores_list):
        top, bottom = axes[0][col], axes[1][col]
        for r in sorted((r for r in rows if r["cores"] == cores), key=_sort_key):
            series = Path(r["out"]) / "series" / "resource_contention.csv"
            if not series.exists():
                continue
            t, v = read_series(series)
            mid, mean, cum = bin_means(t, v, bin_width)
            kw = dict(linestyle=styles.get(r["policy"], "-"),
                      color=colors.get(r["paradigm"], None), label=r["configuration"])
            top.plot(mid / 86400, mean, **kw)
            bottom.plot(t / 86400, cum, **kw)
        top.set_title(f"{cores} cores per node")
        top.set_ylabel("RC(t), daily time-weighted mean")
        bottom.set_ylabel("cumulative RC integral")
        bottom.set_xlabel("time (days)")
        top.legend(fontsize=8)
        top.grid(alpha=0.3)
        bottom.grid(alpha=0.3)
    fig.suptitle("Resource contention over time (thesis Fig. 6.1): 30 days of SDSC Blue "
                 "Horizon, conservative backfilling")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def parse_seeds_option(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise LeaseManagerError(f"--seeds: {text!r} is not a comma-separated list of "
                                f"integers") from None


def add_arguments(parser: argparse.ArgumentParser, sweep: str) -> None:
    """The options both thesis runners take."""
    parser.add_argument("--sweep", type=Path, help=f"the sweep file (default: ./etc/{sweep}, "
                        "else the checkout's)")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="run only profiles whose name contains TEXT (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                        help="override an option in every run (repeatable)")
    parser.add_argument("--seeds", help="comma-separated seeds instead of the sweep file's")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (default: 2)")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-thesis-ch6", description="Run the thesis' chapter-6 experiment (Table 6.1) "
        "through its sweep file, then print the table and plot RC over time.")
    parser.add_argument("--out", default=None, help="output directory (default: "
                        "results/thesis-ch6, or results/thesis-ch6-readings)")
    parser.add_argument("--readings", action="store_true", help=f"run {READINGS_SWEEP} (the "
                        "readings of the setting) and compare each with greedy")
    add_arguments(parser, SWEEP)
    args = parser.parse_args(argv)
    out = Path(args.out or ("results/thesis-ch6-readings" if args.readings
                            else "results/thesis-ch6"))
    t0 = time.perf_counter()
    default_sweep = etc_file(READINGS_SWEEP if args.readings else SWEEP, __file__)
    try:
        runs = run_sweep_file(args.sweep or default_sweep, out, only=args.only,
                              overrides=args.set, seeds=parse_seeds_option(args.seeds),
                              jobs=args.jobs, echo=lambda line: print(line, file=sys.stderr))
    except LeaseManagerError as exc:
        print(f"lm-thesis-ch6: error: {exc}", file=sys.stderr)
        return 1
    rows = [row(r.spec.profile, r.spec.seed, r.summary, r.dir) for r in runs]
    if args.readings:
        table = format_readings(rows)
        print(table)
        (out / "table.md").write_text("```\n" + table + "\n```\n")
        write_csv(rows, out / "table.csv")
        print(f"\n{len(rows)} runs in {time.perf_counter() - t0:.0f} s wall; wrote "
              f"{out / 'table.md'}, {out / 'table.csv'}")
        return 0
    table = format_tables(rows) + "\n\n" + format_thesis_comparison(rows)
    if len({r["seed"] for r in rows}) > 1:
        table += "\n\n" + format_seed_summary(rows)
        table += "\n\n" + format_seed_summary(rows, "rc_cycle_sum", "RC cycle sum")
    print(table)
    (out / "table.md").write_text("```\n" + table + "\n```\n")
    write_csv(rows, out / "table.csv")
    written = [out / "table.md", out / "table.csv"]
    if not args.no_plot:
        first = min(r["seed"] for r in rows)
        written.append(plot([r for r in rows if r["seed"] == first], out / "rc-over-time.png"))
    print(f"\n{len(rows)} runs in {time.perf_counter() - t0:.0f} s wall; wrote "
          f"{', '.join(str(p) for p in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
