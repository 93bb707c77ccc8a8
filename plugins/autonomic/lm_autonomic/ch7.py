"""``lm-thesis-ch7``: the thesis' chapter-7 experiment (Tables 7.2-7.5) in one command.

Runs every ``etc/thesis-ch7-*.ini`` (BLUE1, BLUE2, DS x AUTO / non-AUTO x GREEN1
(ea-consolidation) / GREEN2 (ea-time-horizon) x two core counts per node; aggressive
backfilling, cloud paradigm), writes each run's outputs under ``OUT/NAME/``, prints a table like
7.2-7.4 per trace and core count (completion time, resource contention, and beside them the
average wait and the leases held back) and the ratio table 7.5 (non-autonomic RC / autonomic
RC, with the wait-time cost of holding leases back), writes ``OUT/table.md``,
``OUT/results.csv`` and one RC-over-time plot per trace (``OUT/rc-TRACE.png``)::

    lm-thesis-ch7 --out results/thesis-ch7
    lm-thesis-ch7 --set tracefile.max-jobs=1000 --out /tmp/ch7-quick     # a reduced run
    python -m lm_autonomic.ch7 --only blue1

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

from lm_consolidation import experiments

PATTERN = "thesis-ch7-*.ini"
_NAME = re.compile(r"thesis-ch7-(?P<trace>[a-z0-9]+)-(?P<auto>auto|nonauto)-"
                   r"(?P<policy>green[12])-(?P<cores>\d+)cores$")
TRACE_ORDER = ("blue1", "blue2", "ds")
#: Table 7.5 of the thesis (non-autonomic / autonomic resource contention)
THESIS_RATIO = {
    ("blue1", "green1", 16): 4.58, ("blue1", "green2", 16): 4.84,
    ("blue1", "green1", 8): 4.41, ("blue1", "green2", 8): 4.53,
    ("blue2", "green1", 16): 4.78, ("blue2", "green2", 16): 5.10,
    ("blue2", "green1", 8): 4.70, ("blue2", "green2", 8): 5.29,
    ("ds", "green1", 4): 1.59, ("ds", "green2", 4): 1.58,
    ("ds", "green1", 2): 1.58, ("ds", "green2", 2): 1.64,
}
COLUMNS = ("name", "trace", "auto", "policy", "cores", "configuration", "leases",
           "completion_time", "rc_cycle_sum", "rc_integral", "rc_mean", "avg_wait", "max_wait",
           "utilization", "prepending", "prepending_time_mean", "prepending_time_max",
           "released_idle", "force_released", "cpu_seconds")


def default_configs_dir() -> Path:
    return experiments.default_configs_dir(PATTERN, __file__)


def find_configs(directory: Path, only: Sequence[str] = ()) -> list[Path]:
    return experiments.find_configs(directory, PATTERN, _NAME, only)


def _plugins():
    import lm_consolidation
    import lm_autonomic

    return experiments.plugins_with(lm_consolidation, lm_autonomic)


def run_one(path: str, out: str, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Run one configuration (invariants checked), write its outputs, return its row."""
    from lease_manager.run import load_run

    run = load_run(path, ["accounting.check-invariants=yes", *overrides], plugins=_plugins())
    s = run.run()
    run.write(out)
    m = _NAME.match(Path(path).stem)
    assert m is not None
    auto = m["auto"] == "auto"
    return {
        "name": Path(path).stem, "out": out, "trace": m["trace"], "auto": auto,
        "policy": m["policy"], "cores": int(m["cores"]),
        "configuration": f"{'AUTO-' if auto else ''}{m['policy'].upper()}-CPN{m['cores']}",
        "leases": s["leases_total"], "completion_time": s["makespan"],
        "rc_cycle_sum": s.get("resource_contention_cycle_sum", math.nan),
        "rc_integral": s.get("resource_contention_integral", math.nan),
        "rc_mean": s.get("resource_contention_mean", math.nan),
        "avg_wait": s["avg_wait"], "max_wait": s["max_wait"], "utilization": s["utilization"],
        "prepending": s.get("autonomic_prepending", 0),
        "prepending_time_mean": s.get("autonomic_prepending_time_mean", 0.0),
        "prepending_time_max": s.get("autonomic_prepending_time_max", 0.0),
        "released_idle": s.get("autonomic_released_idle_site", 0),
        "force_released": s.get("held_leases_force_released", 0),
        "cpu_seconds": s["simulation"]["cpu_seconds"],
    }


def _pos(seq: Sequence, x: Any) -> int:
    return seq.index(x) if x in seq else len(seq)


def _sort_key(r: dict[str, Any]) -> tuple:
    return (_pos(TRACE_ORDER, r["trace"]), -r["cores"], r["policy"], r["auto"])


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def format_tables(rows: Iterable[dict[str, Any]]) -> str:
    rows = sorted(rows, key=_sort_key)
    out: list[str] = []
    head = (f"{'configuration':<20} {'time (s)':>11} {'RC (cycle sum)':>16} "
            f"{'RC integral':>17} {'avg wait (s)':>12} {'held':>6} {'mean held (s)':>13}")
    for trace in sorted({r["trace"] for r in rows}, key=lambda t: _pos(TRACE_ORDER, t)):
        for cores in sorted({r["cores"] for r in rows if r["trace"] == trace}, reverse=True):
            group = [r for r in rows if r["trace"] == trace and r["cores"] == cores]
            out.append(f"{trace.upper()}: completion time and resource contention, {cores} "
                       f"cores per node ({group[0]['leases']:,} leases)")
            out.append(head)
            out.append("-" * len(head))
            for r in group:
                out.append(f"{r['configuration']:<20} {r['completion_time']:>11,.0f} "
                           f"{r['rc_cycle_sum']:>16,.0f} {r['rc_integral']:>17,.0f} "
                           f"{r['avg_wait']:>12,.0f} {r['prepending']:>6,} "
                           f"{r['prepending_time_mean']:>13,.0f}")
            out.append("")
    by = {(r["trace"], r["policy"], r["cores"], r["auto"]): r for r in rows}
    head = (f"{'Trace-Policy-Site':<22} {'RC ratio (cycle sum)':>20} {'RC ratio (integral)':>19}"
            f" {'thesis':>7} {'wait AUTO (s)':>13} {'wait non-AUTO':>13} {'wait cost':>10}")
    out.append("Table 7.5: autonomic vs non-autonomic (non-AUTO RC / AUTO RC), with the "
               "wait-time cost of holding leases back")
    out.append(head)
    out.append("-" * len(head))
    for (trace, policy, cores, auto), r in sorted(by.items(), key=lambda kv: _sort_key(kv[1])):
        if not auto or (trace, policy, cores, False) not in by:
            continue
        n = by[(trace, policy, cores, False)]
        thesis = THESIS_RATIO.get((trace, policy, cores))
        out.append(
            f"{trace.upper()}-{policy.upper()}-CPN{cores:<6} "
            f"{_ratio(n['rc_cycle_sum'], r['rc_cycle_sum']):>20.2f} "
            f"{_ratio(n['rc_integral'], r['rc_integral']):>19.2f} "
            f"{thesis if thesis is not None else float('nan'):>7.2f} {r['avg_wait']:>13,.0f} "
            f"{n['avg_wait']:>13,.0f} {r['avg_wait'] - n['avg_wait']:>+10,.0f}")
    out.append("")
    out.append("time = completion time (makespan); RC cycle sum = RC(t) (eqs 5.1-5.4) summed "
               "over scheduling cycles; RC integral = its time integral; held = leases held "
               "back (Prepending); wait cost = average wait AUTO - non-AUTO (held time counts "
               "as wait).")
    return "\n".join(out)


def write_csv(rows: Iterable[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in sorted(rows, key=_sort_key):
            w.writerow(r)


def plot(rows: Sequence[dict[str, Any]], out: Path, *, bin_width: float = 86400.0
         ) -> list[Path]:
    """One PNG per trace: RC(t) daily means, one panel per core count (Figures 7.1-7.3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lm_consolidation.ch6 import bin_means, read_series

    written = []
    for trace in sorted({r["trace"] for r in rows}, key=lambda t: _pos(TRACE_ORDER, t)):
        cores_list = sorted({r["cores"] for r in rows if r["trace"] == trace}, reverse=True)
        fig, axes = plt.subplots(1, len(cores_list), figsize=(7 * len(cores_list), 4.5),
                                 squeeze=False)
        for col, cores in enumerate(cores_list):
            ax = axes[0][col]
            for r in sorted((r for r in rows if r["trace"] == trace and r["cores"] == cores),
                            key=_sort_key):
                series = Path(r["out"]) / "series" / "resource_contention.csv"
                if not series.exists():
                    continue
                t, v = read_series(series)
                mid, mean, _ = bin_means(t, v, bin_width)
                ax.plot(mid / 86400, mean, linestyle="-" if r["auto"] else "--",
                        color="tab:green" if r["policy"] == "green1" else "tab:blue",
                        label=r["configuration"])
            ax.set_title(f"{trace.upper()}: {cores} cores per node")
            ax.set_xlabel("time (days)")
            ax.set_ylabel("RC(t), daily time-weighted mean")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / f"rc-{trace}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-thesis-ch7", description="Run the thesis' chapter-7 experiment (Tables "
        "7.2-7.5): every etc/thesis-ch7-*.ini, then print the tables and plot RC over time.")
    parser.add_argument("--out", default="results/thesis-ch7")
    parser.add_argument("--configs", type=Path)
    experiments.add_run_arguments(parser)
    args = parser.parse_args(argv)

    directory = args.configs or default_configs_dir()
    configs = find_configs(directory, args.only)
    out = experiments.start("lm-thesis-ch7", PATTERN, directory, configs, args.out, args.set)
    if out is None:
        return 2
    jobs = [(str(p), str(out / p.stem), tuple(args.set)) for p in configs]
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    try:
        if args.jobs > 1 and len(jobs) > 1:
            with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                for future in [pool.submit(run_one, *job) for job in jobs]:
                    rows.append(future.result())
                    print(f"  {rows[-1]['name']}: {rows[-1]['cpu_seconds']:.1f} CPU-s",
                          flush=True)
        else:
            for job in jobs:
                rows.append(run_one(*job))
                print(f"  {rows[-1]['name']}: {rows[-1]['cpu_seconds']:.1f} CPU-s", flush=True)
    except Exception as exc:
        print(f"lm-thesis-ch7: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    table = format_tables(rows)
    print()
    print(table)
    (out / "table.md").write_text("```\n" + table + "\n```\n")
    write_csv(rows, out / "results.csv")
    written = [out / "table.md", out / "results.csv"]
    if not args.no_plot:
        written += plot(rows, out)
    print(f"\n{len(rows)} runs in {time.perf_counter() - t0:.0f} s wall; wrote "
          f"{', '.join(str(p) for p in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
