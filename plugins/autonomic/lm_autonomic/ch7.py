"""``lm-thesis-ch7``: the thesis' chapter-7 experiment (Tables 7.2-7.5) in one command.

A thin wrapper over ``lease-manager sweep`` with ``etc/thesis-ch7-blue-sweep.ini`` (BLUE1 and
BLUE2) and ``etc/thesis-ch7-ds-sweep.ini`` (DS): AUTO / non-AUTO x GREEN1 (ea-consolidation) /
GREEN2 (ea-time-horizon) x two core counts per node; aggressive backfilling, cloud paradigm;
seeds 1-5. Run folders go to ``OUT/blue/`` and ``OUT/ds/`` (resumable); it then prints a table
like 7.2-7.4 per window and core count (means over the seeds: completion time, resource
contention, the average wait and the leases held back, beside the thesis' figures) and the
ratio table 7.5 (non-AUTO RC / AUTO RC of the same seed, mean and spread, with the change of
completion time and the wait-time price of holding leases back), writes ``OUT/table.md``,
``OUT/table.csv`` and one RC-over-time plot per window (``OUT/rc-WINDOW.png``)::

    lm-thesis-ch7 --out results/thesis-ch7
    lm-thesis-ch7 --seeds 1 --only green1 --out /tmp/ch7-quick       # a reduced run
    lm-thesis-ch7 --readings --out results/thesis-ch7-readings         # every reading

``--readings`` runs ``etc/thesis-ch7-readings-{blue,ds}-sweep.ini`` instead: the same
configurations under each reading of the text (profiles ``READING-QUEUE-POLICY-CORES``) and
prints, per reading and window, the ratio, the completion-time change and the wait price
(:func:`format_readings`). A reading whose options only the queue policy ``autonomic`` reads
leaves the non-AUTO runs as they are: those are run once (reading ``default``) and shared.
``--only`` selects profiles by substring; each selected AUTO profile brings the non-AUTO
profile it is compared with, so ``--readings --only util-site-`` runs util-site's AUTO
profiles and the default reading's non-AUTO ones.

The sweep files are looked up in ``./etc``, else in the ``etc/`` of the lease_manager checkout
this package sits in (an editable install).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lease_manager import (
    LeaseManagerError,
    bin_means,
    etc_file,
    read_series,
    run_sweep_file,
)

SWEEPS = {"blue": "thesis-ch7-blue-sweep.ini", "ds": "thesis-ch7-ds-sweep.ini"}
READING_SWEEPS = {"blue": "thesis-ch7-readings-blue-sweep.ini",
                  "ds": "thesis-ch7-readings-ds-sweep.ini"}
#: profile names of the sweeps: [READING-]QUEUE-POLICY-[SITE-]CORES (SITE: a site variant of
#: the readings sweeps, such as ``io100``)
_PROFILE = re.compile(r"(?:(?P<reading>[A-Za-z0-9_.+-]+)-)?(?P<auto>auto|nonauto)-"
                      r"(?P<policy>green[12])-(?:(?P<site>[a-z0-9]+)-)?(?P<cores>\d+)cores$")
DEFAULT_READING = "default"
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
#: Tables 7.2-7.4 of the thesis: (window, policy, cores, AUTO) -> (completion time s, RC)
THESIS_TABLES = {
    ("blue1", "green1", 16, False): (1989662, 22621229),
    ("blue1", "green1", 16, True): (2006323, 4936193),
    ("blue1", "green2", 16, False): (1986607, 24279215),
    ("blue1", "green2", 16, True): (2004631, 5014698),
    ("blue1", "green1", 8, False): (1999069, 22479516),
    ("blue1", "green1", 8, True): (1996545, 5088787),
    ("blue1", "green2", 8, False): (1997208, 25174542),
    ("blue1", "green2", 8, True): (1982155, 5546509),
    ("blue2", "green1", 16, False): (2717401, 32340632),
    ("blue2", "green1", 16, True): (2753694, 6754939),
    ("blue2", "green2", 16, False): (2716090, 32761916),
    ("blue2", "green2", 16, True): (2753580, 6415201),
    ("blue2", "green1", 8, False): (2717341, 35513508),
    ("blue2", "green1", 8, True): (2759943, 7546243),
    ("blue2", "green2", 8, False): (2717214, 39774280),
    ("blue2", "green2", 8, True): (2687203, 7506258),
    ("ds", "green1", 4, False): (2654637, 49242540),
    ("ds", "green1", 4, True): (2654637, 30790189),
    ("ds", "green2", 4, False): (2654637, 49608955),
    ("ds", "green2", 4, True): (2654637, 31266887),
    ("ds", "green1", 2, False): (2654637, 43624020),
    ("ds", "green1", 2, True): (2654637, 27445141),
    ("ds", "green2", 2, False): (2654637, 44863890),
    ("ds", "green2", 2, True): (2654637, 27342088),
}
#: the thesis' shape (section 7.4.4 and Table 7.5): what a reading must give to reproduce it
SHAPE_BLUE_RATIO = 2.0
SHAPE_COMPLETION = 0.03
COLUMNS = ("reading", "site", "trace", "auto", "policy", "cores", "seed", "configuration", "leases",
           "rejected", "completion_time", "rc_cycle_sum", "rc_integral", "rc_mean", "avg_wait",
           "max_wait", "utilization", "prepending", "prepending_time_mean",
           "prepending_time_max", "released_idle", "force_released", "cpu_seconds", "name")


def window_name(trace: str) -> str:
    """The thesis' window of a trace name: ``thesis-blue1`` -> ``blue1``."""
    return trace[len("thesis-"):] if trace.startswith("thesis-") else trace


def row(profile: str, trace: str, seed: int, summary: dict[str, Any],
        out: Path) -> dict[str, Any]:
    """One run's row of the tables, from its profile and trace names and ``summary.json``."""
    m = _PROFILE.match(profile)
    if m is None:
        raise LeaseManagerError(f"profile {profile!r} is not "
                                f"[READING-]QUEUE-POLICY-[SITE-]CORES")
    s = summary
    auto = m["auto"] == "auto"
    return {
        "name": profile, "out": str(out), "reading": m["reading"] or DEFAULT_READING,
        "site": m["site"] or "", "trace": window_name(trace), "auto": auto,
        "policy": m["policy"], "cores": int(m["cores"]), "seed": seed,
        "configuration": f"{'AUTO-' if auto else ''}{m['policy'].upper()}-CPN{m['cores']}",
        "leases": s["leases_total"], "rejected": s.get("leases_rejected", 0),
        "completion_time": s["makespan"],
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
    return (_pos(TRACE_ORDER, r["trace"]), -r["cores"], r["policy"], r["auto"], r["seed"])


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def _mean(values: Iterable[float]) -> float:
    v = [x for x in values if not math.isnan(x)]
    return statistics.fmean(v) if v else math.nan


def _sd(values: Iterable[float]) -> float:
    v = [x for x in values if not math.isnan(x)]
    return statistics.stdev(v) if len(v) > 1 else 0.0


def label(r: dict[str, Any]) -> str:
    """A run's reading with its site variant: ``util-site+io100``."""
    return r["reading"] + (f"+{r['site']}" if r.get("site") else "")


def pairs(rows: Iterable[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(non-AUTO, AUTO) runs of the same reading, site, window, policy, cores and seed. A
    reading without non-AUTO runs of its own is paired with the default reading's on the same
    site."""
    rows = list(rows)
    nonauto = {(r["reading"], r.get("site", ""), r["trace"], r["policy"], r["cores"],
                r["seed"]): r for r in rows if not r["auto"]}
    out = []
    for r in sorted((r for r in rows if r["auto"]), key=_sort_key):
        key = (r.get("site", ""), r["trace"], r["policy"], r["cores"], r["seed"])
        n = nonauto.get((r["reading"], *key)) or nonauto.get((DEFAULT_READING, *key))
        if n is not None:
            out.append((n, r))
    return out


def format_tables(rows: Iterable[dict[str, Any]]) -> str:
    """Tables 7.2-7.4 (means over seeds, beside the thesis') and Table 7.5 (ratios)."""
    rows = sorted(rows, key=_sort_key)
    out: list[str] = []
    seeds = sorted({r["seed"] for r in rows})
    head = (f"{'configuration':<20} {'time (s)':>11} {'thesis':>10} {'RC cycle sum':>14} "
            f"{'RC integral':>16} {'thesis RC':>11} {'avg wait (s)':>12} {'held %':>7}")
    for trace in sorted({r["trace"] for r in rows}, key=lambda t: _pos(TRACE_ORDER, t)):
        for cores in sorted({r["cores"] for r in rows if r["trace"] == trace}, reverse=True):
            group = [r for r in rows if r["trace"] == trace and r["cores"] == cores]
            out.append(f"{trace.upper()}: completion time and resource contention, {cores} "
                       f"cores per node ({group[0]['leases']:,} leases; mean of "
                       f"{len(seeds)} seed{'s' if len(seeds) > 1 else ''})")
            out += [head, "-" * len(head)]
            for policy in sorted({r["policy"] for r in group}):
                for auto in (False, True):
                    runs = [r for r in group if r["policy"] == policy and r["auto"] == auto]
                    if not runs:
                        continue
                    thesis = THESIS_TABLES.get((trace, policy, cores, auto), (math.nan,) * 2)
                    held = _mean(100 * r["prepending"] / r["leases"] for r in runs)
                    out.append(
                        f"{runs[0]['configuration']:<20} "
                        f"{_mean(r['completion_time'] for r in runs):>11,.0f} "
                        f"{thesis[0]:>10,.0f} {_mean(r['rc_cycle_sum'] for r in runs):>14,.0f} "
                        f"{_mean(r['rc_integral'] for r in runs):>16,.0f} {thesis[1]:>11,.0f} "
                        f"{_mean(r['avg_wait'] for r in runs):>12,.0f} {held:>7.1f}")
            out.append("")
    head = (f"{'Trace-Policy-Site':<22} {'RC ratio (cycle sum)':>20} {'RC ratio (integral)':>19}"
            f" {'thesis':>7} {'time change':>11} {'wait AUTO (s)':>13} {'wait non-AUTO':>13}"
            f" {'wait price':>10}")
    out.append("Table 7.5: autonomic vs non-autonomic (non-AUTO RC / AUTO RC of the same seed: "
               "mean +- sd over seeds), with the change of completion time and the wait-time "
               "price of holding leases back")
    out += [head, "-" * len(head)]
    groups: dict[tuple, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for n, a in pairs(rows):
        groups.setdefault((a["trace"], a["policy"], a["cores"]), []).append((n, a))
    for (trace, policy, cores), paired in sorted(
            groups.items(), key=lambda kv: (_pos(TRACE_ORDER, kv[0][0]), -kv[0][2], kv[0][1])):
        cyc = [_ratio(n["rc_cycle_sum"], a["rc_cycle_sum"]) for n, a in paired]
        integ = [_ratio(n["rc_integral"], a["rc_integral"]) for n, a in paired]
        change = [_ratio(a["completion_time"], n["completion_time"]) - 1 for n, a in paired]
        wait_a = _mean(a["avg_wait"] for _, a in paired)
        wait_n = _mean(n["avg_wait"] for n, _ in paired)
        thesis_ratio = THESIS_RATIO.get((trace, policy, cores), math.nan)
        name = f"{trace.upper()}-{policy.upper()}-CPN{cores}"
        out.append(
            f"{name:<22} "
            f"{_mean(cyc):>12.2f} +- {_sd(cyc):<4.2f} {_mean(integ):>11.2f} +- {_sd(integ):<4.2f}"
            f" {thesis_ratio:>7.2f} {100 * _mean(change):>+10.1f}% {wait_a:>13,.0f}"
            f" {wait_n:>13,.0f} {wait_a - wait_n:>+10,.0f}")
    out.append("")
    out.append("time = completion time (makespan); RC cycle sum = RC(t) (eqs 5.1-5.4) summed "
               "over scheduling cycles; RC integral = its time integral; held % = leases held "
               "back (Prepending); time change = AUTO / non-AUTO completion time - 1; wait price "
               "= average wait AUTO - non-AUTO (held time counts as wait).")
    return "\n".join(out)


def _median(values: Iterable[float]) -> float:
    v = [x for x in values if not math.isnan(x)]
    return statistics.median(v) if v else math.nan


def reading_summary(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per reading and window: the ratio non-AUTO / AUTO (cycle sum and integral: the median
    over every policy, core count and seed, a ratio of two runs being skewed by the few whose
    AUTO contention is near 0), the mean change of completion time, the mean wait price and
    share of leases held."""
    groups: dict[tuple[str, str], list] = {}
    for n, a in pairs(rows):
        groups.setdefault((label(a), a["trace"]), []).append((n, a))
    out = []
    for (reading, trace), group in groups.items():
        cyc = [_ratio(n["rc_cycle_sum"], a["rc_cycle_sum"]) for n, a in group]
        integ = [_ratio(n["rc_integral"], a["rc_integral"]) for n, a in group]
        change = [_ratio(a["completion_time"], n["completion_time"]) - 1 for n, a in group]
        valid = [c for c in cyc if not math.isnan(c)]   # RC 0 in both runs: no ratio
        out.append({
            "reading": reading, "trace": trace, "runs": len(group),
            "ratio_cycle_sum": _median(cyc), "ratio_cycle_sum_min": min(valid, default=math.nan),
            "ratio_cycle_sum_max": max(valid, default=math.nan), "ratio_integral": _median(integ),
            "completion_change": _mean(change),
            "completion_change_max": max(abs(c) for c in change),
            "wait_price": _mean(a["avg_wait"] - n["avg_wait"] for n, a in group),
            "held_pct": _mean(100 * a["prepending"] / a["leases"] for _, a in group),
            "rejected": _mean(a["rejected"] for _, a in group),
        })
    return out


def shape_verdict(summary: list[dict[str, Any]], reading: str) -> str:
    """Whether a reading gives the thesis' shape: a ratio (cycle sum) of at least 2 on both
    Blue windows, a smaller one on DataStar, and completion times within 3 %."""
    by = {s["trace"]: s for s in summary if s["reading"] == reading}
    if not {"blue1", "blue2", "ds"} <= set(by):
        return "incomplete"
    blue = min(by["blue1"]["ratio_cycle_sum"], by["blue2"]["ratio_cycle_sum"])
    misses = []
    if math.isnan(blue):   # RC 0 on both sides of every pair: there is no ratio to judge
        misses.append("no contention on a Blue window, so no ratio")
    elif not blue >= SHAPE_BLUE_RATIO:
        misses.append(f"Blue ratio {blue:.2f} < {SHAPE_BLUE_RATIO:g}")
    if not math.isnan(blue) and not by["ds"]["ratio_cycle_sum"] < blue:
        misses.append("DS ratio not below Blue's")
    worst = max(s["completion_change_max"] for s in by.values())
    if worst > SHAPE_COMPLETION:
        misses.append(f"completion moves up to {100 * worst:.0f}%")
    return "yes" if not misses else "no: " + "; ".join(misses)


def format_readings(rows: Iterable[dict[str, Any]]) -> str:
    """One line per reading and window, then the verdict per reading."""
    summary = reading_summary(rows)
    readings = list(dict.fromkeys(s["reading"] for s in summary))
    head = (f"{'reading':<30} {'window':<6} {'runs':>4} {'ratio (cycle sum)':>22} "
            f"{'ratio (int.)':>12} {'time change':>11} {'max':>5} {'wait price (s)':>14} "
            f"{'held %':>6} {'rejected':>8}")
    out = ["Readings: non-AUTO RC / AUTO RC of the same seed, policy and cores (median "
           "[min-max] over them), AUTO's completion-time change (mean, largest) and wait-time "
           "price (mean)", head, "-" * len(head)]
    for reading in readings:
        for s in sorted((s for s in summary if s["reading"] == reading),
                        key=lambda s: _pos(TRACE_ORDER, s["trace"])):
            spread = f"[{s['ratio_cycle_sum_min']:.2f}-{s['ratio_cycle_sum_max']:.2f}]"
            out.append(
                f"{reading:<30} {s['trace']:<6} {s['runs']:>4} {s['ratio_cycle_sum']:>8.2f} "
                f"{spread:>13} {s['ratio_integral']:>12.2f} "
                f"{100 * s['completion_change']:>+10.1f}% {100 * s['completion_change_max']:>4.0f}%"
                f" {s['wait_price']:>+14,.0f} {s['held_pct']:>6.1f} {s['rejected']:>8.0f}")
    out += ["", f"The thesis' shape (ratio >= {SHAPE_BLUE_RATIO:g} on both Blue windows, "
                f"smaller on DS, completion within {100 * SHAPE_COMPLETION:g} %):"]
    for reading in readings:
        out.append(f"  {reading:<30} {shape_verdict(summary, reading)}")
    return "\n".join(out)


def write_csv(rows: Iterable[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in sorted(rows, key=lambda r: (label(r), *_sort_key(r))):
            w.writerow(r)


def plot(rows: Sequence[dict[str, Any]], out: Path, *, bin_width: float = 86400.0
         ) -> list[Path]:
    """One PNG per window: RC(t) daily means of the smallest seed, one panel per core count
    (Figures 7.1-7.3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    seed = min(r["seed"] for r in rows)
    rows = [r for r in rows if r["seed"] == seed]
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
            ax.set_title(f"{trace.upper()}: {cores} cores per node (seed {seed})")
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


def _shared_nonauto(sweep_path: Path, plugins: Any) -> set[str]:
    """The non-AUTO profiles of a readings sweep that differ from the default reading's only
    in ``[autonomic]`` options, which fcfs runs never read: they are not run again."""
    from lease_manager import load_sweep

    def key(settings: Iterable[tuple[str, str]]) -> frozenset:
        return frozenset((k, v) for k, v in settings if not k.startswith("autonomic."))

    specs = {spec.profile: spec for spec in load_sweep(sweep_path, plugins).runs}
    default = {}
    for profile, spec in specs.items():
        m = _PROFILE.match(profile)
        if m and m["reading"] == DEFAULT_READING:
            default[(m["auto"], m["policy"], m["cores"], m["site"])] = key(spec.settings)
    shared = set()
    for profile, spec in specs.items():
        m = _PROFILE.match(profile)
        if (m and m["auto"] == "nonauto" and m["reading"] not in (None, DEFAULT_READING)
                and default.get((m["auto"], m["policy"], m["cores"], m["site"]))
                == key(spec.settings)):
            shared.add(profile)
    return shared


def _nonauto_partner(profile: str, shared: set[str]) -> str | None:
    """The non-AUTO profile an AUTO profile is compared with: the reading's own, or the
    default reading's where the reading's own is shared with it (:func:`pairs`)."""
    m = _PROFILE.match(profile)
    if m is None or m["auto"] != "auto":
        return None
    rest = f"nonauto-{m['policy']}-{m['site'] + '-' if m['site'] else ''}{m['cores']}cores"
    own = f"{m['reading']}-{rest}" if m["reading"] else rest
    return f"{DEFAULT_READING}-{rest}" if own in shared else own


def _profiles_to_run(sweep_path: Path, plugins: Any, only: Sequence[str]) -> list[str]:
    """The profiles of a readings sweep that ``--only`` selects (all without it), without the
    shared non-AUTO ones, plus the non-AUTO profile each selected AUTO profile is compared
    with: ``--only util-site-`` runs util-site's AUTO profiles and the default reading's
    non-AUTO ones on the same sites."""
    from lease_manager import load_sweep

    shared = _shared_nonauto(sweep_path, plugins)
    profiles = load_sweep(sweep_path, plugins).profiles
    chosen = {p for p in profiles
              if p not in shared and (not only or any(o in p for o in only))}
    chosen |= {q for p in chosen if (q := _nonauto_partner(p, shared)) is not None}
    return [p for p in profiles if p in chosen]


def _seeds(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise LeaseManagerError(f"--seeds: {text!r} is not a comma-separated list of "
                                f"integers") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lm-thesis-ch7", description="Run the thesis' chapter-7 experiment (Tables "
        "7.2-7.5) through its sweep files, then print the tables and plot RC over time; with "
        "--readings, every reading of the text.")
    parser.add_argument("--out", default=None, help="output directory (default: "
                        "results/thesis-ch7, or results/thesis-ch7-readings)")
    parser.add_argument("--readings", action="store_true",
                        help="run the readings sweeps and compare the readings")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="run only profiles whose name contains TEXT (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                        help="override an option in every run (repeatable)")
    parser.add_argument("--seeds", help="comma-separated seeds instead of the sweep files' "
                        "(1-5)")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (default: 2)")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNGs")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from lease_manager import Plugins

    out = Path(args.out or ("results/thesis-ch7-readings" if args.readings
                            else "results/thesis-ch7"))
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    plugins = Plugins()
    try:
        seeds = _seeds(args.seeds)
        for group, name in (READING_SWEEPS if args.readings else SWEEPS).items():
            path = etc_file(name, __file__)
            only = list(args.only)
            if args.readings and path.is_file():
                only = _profiles_to_run(path, plugins, args.only)
                if not only:
                    continue
            runs = run_sweep_file(path, out / group, only=only, seeds=seeds,
                                  overrides=["accounting.check-invariants=yes", *args.set],
                                  jobs=args.jobs, plugins=plugins, missing_ok=True,
                                  echo=lambda line: print(line, file=sys.stderr))
            rows += [row(r.spec.profile, r.spec.trace, r.spec.seed, r.summary, r.dir)
                     for r in runs]
    except LeaseManagerError as exc:
        print(f"lm-thesis-ch7: error: {exc}", file=sys.stderr)
        return 1
    if not rows:
        print(f"lm-thesis-ch7: no profile name contains {' or '.join(args.only)}",
              file=sys.stderr)
        return 2
    if args.readings:
        table = format_readings(rows)
        default = [r for r in rows if r["reading"] == DEFAULT_READING]
        if any(r["auto"] for r in default):   # not only the non-AUTO runs other readings use
            table = format_tables(default) + "\n\n" + table
    else:
        table = format_tables(rows)
    print(table)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text("```\n" + table + "\n```\n")
    write_csv(rows, out / "table.csv")
    written = [out / "table.md", out / "table.csv"]
    if not args.no_plot and not args.readings:
        written += plot(rows, out)
    print(f"\n{len(rows)} runs in {time.perf_counter() - t0:.0f} s wall; wrote "
          f"{', '.join(str(p) for p in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
