"""``lm-thesis-ch7``: the thesis' chapter-7 experiment (Tables 7.2-7.5) in one command.

A thin wrapper over ``lease-manager sweep`` with ``etc/thesis-ch7-blue-sweep.ini`` (BLUE1 and
BLUE2) and ``etc/thesis-ch7-ds-sweep.ini`` (DS): AUTO / non-AUTO x GREEN1 (ea-consolidation) /
GREEN2 (ea-time-horizon) x two core counts per node; aggressive backfilling, cloud paradigm.
Run folders go to ``OUT/blue/`` and ``OUT/ds/`` (resumable); it then prints a table like
7.2-7.4 per trace and core count (completion time, resource contention, and beside them the
average wait and the leases held back) and the ratio table 7.5 (non-autonomic RC / autonomic
RC, with the wait-time cost of holding leases back), writes ``OUT/table.md``,
``OUT/table.csv`` and one RC-over-time plot per trace (``OUT/rc-TRACE.png``)::

    lm-thesis-ch7 --out results/thesis-ch7
    lm-thesis-ch7 --set tracefile.max-jobs=1000 --out /tmp/ch7-quick     # a reduced run
    lm-thesis-ch7 --only blue1

The sweep files are looked up in ``./etc``, else in the ``etc/`` of the lease_manager checkout
this package sits in (an editable install).
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

SWEEPS = {"blue": "thesis-ch7-blue-sweep.ini", "ds": "thesis-ch7-ds-sweep.ini"}
#: profile names of the sweeps: WINDOW-QUEUE-POLICY-CORES
_PROFILE = re.compile(r"(?P<trace>[a-z0-9]+)-(?P<auto>auto|nonauto)-"
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


def row(profile: str, summary: dict[str, Any], out: Path) -> dict[str, Any]:
    """One run's row of the tables, from its profile name and ``summary.json``."""
    m = _PROFILE.match(profile)
    if m is None:
        raise LeaseManagerError(f"profile {profile!r} is not WINDOW-QUEUE-POLICY-CORES")
    s = summary
    auto = m["auto"] == "auto"
    return {
        "name": profile, "out": str(out), "trace": m["trace"], "auto": auto,
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
        "7.2-7.5) through its sweep files, then print the tables and plot RC over time.")
    parser.add_argument("--out", default="results/thesis-ch7")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="run only profiles whose name contains TEXT (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                        help="override an option in every run (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (default: 2)")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNGs")
    args = parser.parse_args(argv)
    out = Path(args.out)
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for group, name in SWEEPS.items():
        try:
            runs = run_sweep_file(etc_file(name, __file__), out / group, only=args.only,
                                  overrides=["accounting.check-invariants=yes", *args.set],
                                  jobs=args.jobs, missing_ok=True,
                                  echo=lambda line: print(line, file=sys.stderr))
        except LeaseManagerError as exc:
            print(f"lm-thesis-ch7: error: {exc}", file=sys.stderr)
            return 1
        rows += [row(r.spec.profile, r.summary, r.dir) for r in runs]
    if not rows:
        print(f"lm-thesis-ch7: no profile name contains {' or '.join(args.only)}",
              file=sys.stderr)
        return 2
    table = format_tables(rows)
    print(table)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text("```\n" + table + "\n```\n")
    write_csv(rows, out / "table.csv")
    written = [out / "table.md", out / "table.csv"]
    if not args.no_plot:
        written += plot(rows, out)
    print(f"\n{len(rows)} runs in {time.perf_counter() - t0:.0f} s wall; wrote "
          f"{', '.join(str(p) for p in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
