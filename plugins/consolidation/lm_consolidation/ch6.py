"""``lm-thesis-ch6``: the thesis' chapter-6 experiment (Table 6.1) in one command.

Runs every ``etc/thesis-ch6-*.ini`` (cloud and hpc paradigms x greedy, ea-consolidation and
ea-time-horizon x 16 and 8 cores per node, conservative backfilling, 30 days of SDSC Blue
Horizon), writes each run's outputs under ``OUT/NAME/``, prints a table like Table 6.1 with the
utilisation and average wait beside it and our changes against greedy beside the thesis' (also
written as ``OUT/table.md`` and ``OUT/results.csv``) and plots resource contention over time
(``OUT/rc-over-time.png``)::

    lm-thesis-ch6 --out results/thesis-ch6
    lm-thesis-ch6 --set tracefile.max-jobs=500 --out /tmp/ch6-quick     # a quick look
    lm-thesis-ch6 --seeds 0,1,2          # 36 runs; the EA policies against greedy per seed
    python -m lm_consolidation.ch6 --set simulation.seed=3

The configurations are looked up in ``--configs DIR``, else in ``./etc``, else in the ``etc/``
of the lease_manager checkout this package sits in (an editable install).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from . import experiments

PATTERN = "thesis-ch6-*.ini"
_NAME = re.compile(r"thesis-ch6-(?P<paradigm>[a-z]+)-(?P<policy>[a-z]+)-(?P<cores>\d+)cores$")
#: the thesis' order of rows in Table 6.1
POLICY_ORDER = ("eatimeconsolidation", "eaconsolidation", "greedy")
PARADIGM_ORDER = ("cloud", "hpc")
COLUMNS = ("configuration", "cores", "seed", "paradigm", "policy", "host_selection", "leases",
           "completion_time", "rc_integral", "rc_mean", "rc_cycle_sum", "utilization",
           "avg_wait", "cpu_seconds")


def default_configs_dir() -> Path:
    return experiments.default_configs_dir(PATTERN, __file__)


def find_configs(directory: Path, only: Sequence[str] = ()) -> list[Path]:
    return experiments.find_configs(directory, PATTERN, _NAME, only)


def _plugins():
    import lm_consolidation

    return experiments.plugins_with(lm_consolidation)


def run_one(path: str, out: str, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Run one configuration, write its outputs to ``out`` and return its row of the table."""
    from lease_manager.run import load_run

    run = load_run(path, list(overrides), plugins=_plugins())
    summary = run.run()
    run.write(out)
    m = _NAME.match(Path(path).stem)
    assert m is not None
    return {
        "configuration": f"{m['paradigm']}{m['policy']}",
        "cores": int(m["cores"]),
        "seed": run.config.get("simulation", "seed"),
        "paradigm": run.config.get("tracefile", "paradigm"),
        "policy": m["policy"],
        "host_selection": run.config.get("scheduling", "policy-host-selection"),
        "leases": summary["leases_total"],
        "completion_time": summary["makespan"],
        "rc_integral": summary.get("resource_contention_integral", math.nan),
        "rc_mean": summary.get("resource_contention_mean", math.nan),
        "rc_cycle_sum": summary.get("resource_contention_cycle_sum", math.nan),
        "utilization": summary["utilization"],
        "avg_wait": summary["avg_wait"],
        "cpu_seconds": summary["simulation"]["cpu_seconds"],
        "name": Path(path).stem,
        "out": out,
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


def format_seed_summary(rows: Iterable[dict[str, Any]], metric: str = "rc_integral",
                        label: str = "RC integral") -> str:
    """With several seeds: each EA configuration's change of ``metric`` against greedy, seed
    by seed."""
    rows = sorted(rows, key=_sort_key)
    seeds = sorted({r["seed"] for r in rows})
    greedy = _greedy(rows)
    head = (f"{'configuration':<26} {'cores':>5}  "
            + " ".join(f"{'seed ' + str(s):>8}" for s in seeds) + f" {'mean':>8}  "
            f"{'lower':>5}  {'time (mean)':>11}")
    out = [f"{label} against greedy (same paradigm, cores and seed)", head, "-" * len(head)]
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
        out.append(f"{name:<26} {cores:>5}  {cells} {100 * mean:>+7.1f}%  "
                   f"{sum(c < 0 for c in valid):>2}/{len(valid):<2}  {100 * tmean:>+10.1f}%")
    return "\n".join(out)


def write_csv(rows: Iterable[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="") as fh:
        out = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore",
                             lineterminator="\n")
        out.writeheader()
        for r in sorted(rows, key=_sort_key):
            out.writerow(r)


def read_series(path: Path) -> tuple[np.ndarray, np.ndarray]:
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if data.size == 0:
        return np.zeros(0), np.zeros(0)
    return data[:, 0], data[:, 1]


def bin_means(times: np.ndarray, values: np.ndarray, width: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time-weighted means of a piecewise-constant series (each value holds until the next
    time) over bins of ``width``; also the cumulative integral at every point."""
    if len(times) < 2:
        return np.zeros(0), np.zeros(0), np.zeros(len(times))
    cum = np.concatenate([[0.0], np.cumsum(values[:-1] * np.diff(times))])
    edges = np.arange(times[0], times[-1] + width, width)
    at = np.interp(edges, times, cum)
    return edges[:-1] + width / 2, np.diff(at) / width, cum


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-thesis-ch6", description="Run the thesis' chapter-6 experiment (Table 6.1): "
        "every etc/thesis-ch6-*.ini, then print the table and plot RC over time.")
    parser.add_argument("--out", default="results/thesis-ch6", help="output directory "
                        "(default: results/thesis-ch6)")
    parser.add_argument("--configs", type=Path, help="directory of the thesis-ch6-*.ini files "
                        "(default: ./etc, else the checkout's etc/)")
    experiments.add_run_arguments(parser)
    parser.add_argument("--seeds", help="comma-separated seeds: run every configuration with "
                        "each (default: the configurations' own seed) and summarise the EA "
                        "policies against greedy over the seeds")
    args = parser.parse_args(argv)

    directory = args.configs or default_configs_dir()
    configs = find_configs(directory, args.only)
    out = experiments.start("lm-thesis-ch6", PATTERN, directory, configs, args.out, args.set)
    if out is None:
        return 2
    if args.seeds:
        try:
            seeds = [int(x) for x in args.seeds.replace(" ", "").split(",") if x]
        except ValueError:
            parser.error(f"--seeds: {args.seeds!r} is not a comma-separated list of integers")
        jobs = [(str(p), str(out / f"seed-{seed}" / p.stem),
                 (*args.set, f"simulation.seed={seed}")) for seed in seeds for p in configs]
    else:
        jobs = [(str(p), str(out / p.stem), tuple(args.set)) for p in configs]
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    try:
        if args.jobs > 1 and len(jobs) > 1:
            with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                futures = [pool.submit(run_one, *job) for job in jobs]
                for future in futures:
                    rows.append(future.result())
                    r = rows[-1]
                    print(f"  {r['name']} (seed {r['seed']}): {r['cpu_seconds']:.1f} CPU-s",
                          flush=True)
        else:
            for job in jobs:
                rows.append(run_one(*job))
                r = rows[-1]
                print(f"  {r['name']} (seed {r['seed']}): {r['cpu_seconds']:.1f} CPU-s",
                      flush=True)
    except Exception as exc:   # a run's error: say which, briefly
        print(f"lm-thesis-ch6: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    table = format_tables(rows) + "\n\n" + format_thesis_comparison(rows)
    if len({r["seed"] for r in rows}) > 1:
        table += "\n\n" + format_seed_summary(rows)
        table += "\n\n" + format_seed_summary(rows, "rc_cycle_sum", "RC cycle sum")
    print()
    print(table)
    (out / "table.md").write_text("```\n" + table + "\n```\n")
    write_csv(rows, out / "results.csv")
    written = [out / "table.md", out / "results.csv"]
    if not args.no_plot:
        first = min(r["seed"] for r in rows)
        written.append(plot([r for r in rows if r["seed"] == first], out / "rc-over-time.png"))
    print(f"\n{len(rows)} runs in {time.perf_counter() - t0:.0f} s wall; wrote "
          f"{', '.join(str(p) for p in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
