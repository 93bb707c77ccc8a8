"""``lm-garg-figures DIR``: Garg et al.'s figures from a sweep's runs (``etc/garg-fig*-sweep.ini``).

Every finished run under DIR (``PROFILE/TRACE/seed-N`` with ``run.json`` and ``summary.json``)
is placed by its configuration: its line is (site selection, operating point, and the slot fit,
the high-urgency deadline ratio and the promise horizon when they are not the defaults) and its
point the share of high-urgency leases (runs at arrival rate 100), the arrival rate (runs with
40% high urgency) or, with ``--by carbon-sd``, the spread of the sites' drawn carbon rates, as
in the paper's figures. For each metric the tool prints the mean over seeds at every point, one
column per line (and the section 4.3 bound, for the carbon and profit per CPU-hour: the bound as
printed, every lease in one cycle, and the reading that honours arrival times), and with
``--plots`` draws them into ``DIR/plots/garg-METRIC-by-X.png`` (METRIC without its ``garg_``
prefix). Then, at every point, each site's share of the work executed and of the energy cost (%,
means over seeds), which decide most of the averages: a site's DVS saving counts in proportion
to its share of the cost; and the share of the work the carbon bound (as printed) maps to each
site, beside which a carbon policy's distance to the bound is read. Last, at every point, each
line's level penalty: its energy per CPU-hour over the same leases' at their least-energy levels
(means over seeds), the share of its work at each level, and each site's part of the penalty. A
line's energy is its least-level energy times its penalty, so the change between two lines
splits exactly into where and what they ran (the least-level energies) and the levels they ran
it at (the penalties).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lease_manager import LeaseManagerError, Plugins, load_config

METRICS = ("garg_cost_per_cpu_hour", "garg_carbon_per_cpu_hour", "garg_workload_cpu_hours",
           "garg_profit_per_cpu_hour", "garg_energy_per_cpu_hour")
BOUNDS = {"garg_carbon_per_cpu_hour": (("bound (4.3)", "garg_carbon_bound_per_cpu_hour"),
                                        ("bound, arrivals",
                                         "garg_carbon_bound_arrivals_per_cpu_hour")),
          "garg_profit_per_cpu_hour": (("bound (4.3)", "garg_profit_bound_per_cpu_hour"),
                                        ("bound, arrivals",
                                         "garg_profit_bound_arrivals_per_cpu_hour"))}
LABELS = {"garg_cost_per_cpu_hour": "energy cost ($ per CPU-hour)",
          "garg_carbon_per_cpu_hour": "carbon (kg per CPU-hour)",
          "garg_workload_cpu_hours": "workload executed (CPU-hours)",
          "garg_profit_per_cpu_hour": "profit ($ per CPU-hour)",
          "garg_energy_per_cpu_hour": "energy (J per CPU-hour)"}
MEDIUM_RATE, DEFAULT_SHARE = 100.0, 0.4
#: the paper's high-urgency deadline ratio (mean, variance); another is named in the line
PAPER_HIGH_URGENCY = (4.0, 2.0)


def read_runs(directory: Path) -> list[dict[str, Any]]:
    """Every finished run: its line, urgency share, arrival rate, seed and summary."""
    plugins = Plugins()
    runs = []
    for meta_path in sorted(directory.glob("*/*/seed-*/run.json")):
        summary_path = meta_path.with_name("summary.json")
        if not summary_path.is_file():
            continue
        try:
            meta = json.loads(meta_path.read_text())
            summary = json.loads(summary_path.read_text())
            config = load_config(meta["base"], plugins.schema, meta["overrides"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LeaseManagerError(f"{meta_path.parent}: not a finished run of a sweep "
                                    f"({type(exc).__name__}: {exc})") from None
        sd = math.nan   # the spread of the sites' carbon rates, when they are drawn
        redrawn = False
        if config.sites:
            rate = config.for_site(config.sites[0]).get("power", "carbon-rate")
            if isinstance(rate, tuple) and rate[0] in ("normal", "redrawn-normal"):
                sd = float(rate[2])
                redrawn = rate[0] == "redrawn-normal"
        line = (f"{config.get('simulation', 'policy-site-selection')} / "
                f"{config.get('power', 'policy-operating-point')}")
        if redrawn:
            line += " / redrawn"
        if config.get("dvfs", "slot-fit") != "profile":
            line += f" / {config.get('dvfs', 'slot-fit')}"
        mean, variance = config.get("dvfs", "high-urgency")
        if (mean, variance) != PAPER_HIGH_URGENCY:
            line += f" / high urgency {mean:g} {variance:g}"
        horizon = config.get("dvfs", "promise-horizon")
        if math.isfinite(horizon):
            line += f" / horizon {horizon:g} s"
        runs.append({
            "line": line,
            "share": float(config.get("dvfs", "urgent-share")),
            "rate": float(config.get("dvfs", "arrival-rate")),
            "carbon-sd": sd,
            "seed": meta.get("seed"),
            "summary": summary,
        })
    return runs


def on_axis(run: dict[str, Any], x: str) -> bool:
    """Is ``run`` a point of the ``x`` axis ("share", "rate" or "carbon-sd"), the other two
    held at the paper's defaults (rate 100, 40% high urgency, carbon rates as configured)?"""
    return not ((x != "rate" and not math.isclose(run["rate"], MEDIUM_RATE))
                or (x != "share" and not math.isclose(run["share"], DEFAULT_SHARE))
                or (x == "carbon-sd") == math.isnan(run["carbon-sd"]))


def series(runs: Sequence[dict[str, Any]], metric: str, x: str
           ) -> dict[str, dict[float, float]]:
    """Mean over seeds of ``metric`` by line and point of the ``x`` axis (:func:`on_axis`)."""
    values: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        if not on_axis(run, x):
            continue
        value = run["summary"].get(metric)
        if isinstance(value, (int, float)) and math.isfinite(value):
            values[run["line"]][run[x]].append(float(value))
        for label, bound in BOUNDS.get(metric, ()):
            if isinstance(run["summary"].get(bound), (int, float)):
                values[label][run[x]].append(float(run["summary"][bound]))
    return {line: {p: statistics.fmean(v) for p, v in sorted(points.items())}
            for line, points in sorted(values.items())}


SHARED = {"work": "workload_cpu_hours", "cost": "energy_cost"}


def site_shares(runs: Sequence[dict[str, Any]], x: str
                ) -> dict[tuple[str, float], dict[str, dict[str, float]]]:
    """Each site's share (%) of the work executed and of the energy cost, means over seeds, by
    (line, point) of the ``x`` axis: ``{(line, point): {site: {"work": %, "cost": %}}}``
    (runs without per-site fields are left out; a run with no work or cost counts as 0%).
    The section 4.3 carbon bound (as printed) is a line of its own, ``BOUND_SHARES``, with the
    share of the work it maps to each site (no cost): every run of a point and seed has the
    same bound, whatever its policy."""
    values: dict[tuple[str, float], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    bounds: dict[tuple[float, int], dict[str, float]] = {}
    for run in runs:
        sites = run["summary"].get("garg_sites")
        if not on_axis(run, x) or not isinstance(sites, dict) or not sites:
            continue
        for kind, field in SHARED.items():
            amounts = {name: float(fields.get(field) or 0.0) for name, fields in sites.items()}
            total = sum(amounts.values())
            for name, amount in amounts.items():
                values[run["line"], run[x]][name][kind].append(
                    100.0 * amount / total if total > 0 else 0.0)
        bound = run["summary"].get("garg_carbon_bound_site_cpu_hours")
        if isinstance(bound, dict) and bound:
            bounds[run[x], run["seed"]] = {name: float(h) for name, h in bound.items()}
    for (point, _), amounts in sorted(bounds.items()):
        total = sum(amounts.values())
        for name, amount in amounts.items():
            values[BOUND_SHARES, point][name]["work"].append(
                100.0 * amount / total if total > 0 else 0.0)
    return {key: {name: {kind: statistics.fmean(v) for kind, v in kinds.items()}
                  for name, kinds in sites.items()}
            for key, sites in sorted(values.items())}


def aligned(head: list[str], rows: list[list[str]]) -> str:
    """``head`` and ``rows`` as right-aligned columns, two spaces apart."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [head, *rows])


def shares_table(data: dict[tuple[str, float], dict[str, dict[str, float]]], x: str) -> str:
    """One row per (line, point), one column per site: "work% / cost%"."""
    names = list(dict.fromkeys(name for sites in data.values() for name in sites))
    head = ["line", HEADS[x]] + names
    rows = [[line, f"{p * 100:g}" if x == "share" else f"{p:g}"]
            + [(f"{sites[n]['work']:.1f} / "
                + (f"{sites[n]['cost']:.1f}" if "cost" in sites[n] else "-")) if n in sites
               else "-" for n in names]
            for (line, p), sites in data.items()]
    return aligned(head, rows)


def level_penalties(runs: Sequence[dict[str, Any]], x: str
                    ) -> dict[tuple[str, float], dict[str, Any]]:
    """By (line, point) of the ``x`` axis, means over seeds: ``least``, the energy per
    CPU-hour at the leases' least-energy levels; ``penalty``, the energy per CPU-hour over
    ``least`` (ratio of the means); ``levels``, the share of the work (%) at each level (lowest
    first; sites with fewer levels count in the lower ones); ``sites``, each site's energy above
    its least-energy levels in points of the penalty (they sum to 100 x (penalty - 1)). Runs
    without the fields (``garg_energy_least_level_joules``, ``garg_sites.*.level_cpu_hours``)
    or without work are left out."""
    sums: dict[tuple[str, float], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for run in runs:
        summary = run["summary"]
        sites = summary.get("garg_sites")
        work = summary.get("garg_workload_cpu_hours")
        least = summary.get("garg_energy_least_level_joules")
        if (not on_axis(run, x) or not isinstance(sites, dict) or not sites
                or not isinstance(work, (int, float)) or not work > 0
                or not isinstance(least, (int, float))
                or not all(isinstance(f.get("level_cpu_hours"), list) for f in sites.values())):
            continue
        point = sums[run["line"], run[x]]   # a site or level missing from a run counts 0
        point["runs"] += 1
        point["energy"] += float(summary["garg_energy_joules"]) / work
        point["least"] += float(least) / work
        for name, fields in sites.items():
            for k, hours in enumerate(fields["level_cpu_hours"]):
                point[f"level:{k}"] += 100.0 * float(hours) / work
            point[f"site:{name}"] += (float(fields.get("energy_joules") or 0.0)
                                      - float(fields.get("energy_least_level_joules") or 0.0)
                                      ) / work
    out: dict[tuple[str, float], dict[str, Any]] = {}
    for key, point in sorted(sums.items()):
        means = {name: v / point["runs"] for name, v in point.items()}
        mean_least = means["least"]
        out[key] = {
            "least": mean_least,
            "penalty": means["energy"] / mean_least if mean_least > 0 else math.nan,
            "levels": [means[n] for n in sorted((n for n in means if n.startswith("level:")),
                                                key=lambda n: int(n[6:]))],
            "sites": {n[5:]: 100.0 * v / mean_least if mean_least > 0 else math.nan
                      for n, v in means.items() if n.startswith("site:")}}
    return out


def penalty_tables(data: dict[tuple[str, float], dict[str, Any]], x: str) -> str:
    """Two tables: per (line, point), the least-level energy, the penalty and the work's share
    at each level; then each site's points of the penalty."""
    point = (lambda p: f"{p * 100:g}") if x == "share" else (lambda p: f"{p:g}")
    width = max(len(d["levels"]) for d in data.values())
    head = ["line", HEADS[x], "J per CPU-h at least levels", "penalty"] + [
        f"L{k} %" for k in range(width)]
    rows = [[line, point(p), f"{d['least']:.5g}", f"x{d['penalty']:.3f}"]
            + [f"{v:.1f}" for v in d["levels"]] + ["-"] * (width - len(d["levels"]))
            for (line, p), d in data.items()]
    names = list(dict.fromkeys(n for d in data.values() for n in d["sites"]))
    head2 = ["line", HEADS[x]] + names
    rows2 = [[line, point(p)] + [f"{d['sites'][n]:.1f}" if n in d["sites"] else "-"
                                 for n in names]
             for (line, p), d in data.items()]
    return (aligned(head, rows) + "\n\neach site's energy above its least-energy levels "
            "(points of the penalty)\n" + aligned(head2, rows2))


#: the line of :func:`site_shares` that holds the carbon bound's site mix
BOUND_SHARES = "carbon bound (4.3)"
HEADS = {"share": "urgent %", "rate": "rate", "carbon-sd": "carbon sd"}
TITLES = {"share": "share of high urgency (rate 100)",
          "rate": "arrival rate (40% high urgency)",
          "carbon-sd": "spread of the carbon rates (kg/kWh, mean 0.2)"}
AXES = {"share": "high-urgency leases (%)", "rate": "arrival-rate factor",
        "carbon-sd": "standard deviation of the sites' carbon rates (kg/kWh)"}


def table(data: dict[str, dict[float, float]], x: str) -> str:
    lines = list(data)
    points = sorted({p for line in data.values() for p in line})
    head = [HEADS[x]] + lines
    rows = [[f"{p * 100:g}" if x == "share" else f"{p:g}"]
            + [f"{data[line][p]:.5g}" if p in data[line] else "-" for line in lines]
            for p in points]
    return aligned(head, rows)


def plot(data: dict[str, dict[float, float]], metric: str, x: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for line, points in data.items():
        xs = [p * 100 if x == "share" else p for p in points]
        style = "--" if line.startswith("bound") else "-o"
        ax.plot(xs, list(points.values()), style, label=line, markersize=4)
    if x == "rate":
        ax.set_xscale("log")
    ax.set_xlabel(AXES[x])
    ax.set_ylabel(LABELS.get(metric, metric))
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def print_if_varied(rows: dict[tuple[str, float], Any], named: bool,
                    render: Callable[[Any, str], str], x: str, title: str) -> bool:
    """Print ``render(rows, x)`` under ``title`` if its lines have two points along ``x``
    (one, if the axis was named); True if printed."""
    if len({point for _, point in rows}) <= (0 if named else 1):
        return False
    print(f"\n{title}")
    print(render(rows, x))
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lm-garg-figures", description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="a sweep's output directory")
    parser.add_argument("--metric", action="append", help=f"default: {', '.join(METRICS)}")
    parser.add_argument("--plots", action="store_true", help="draw DIR/plots/garg-*.png")
    parser.add_argument("--by", action="append", choices=list(HEADS),
                        help="the x axis (default: share and rate)")
    args = parser.parse_args(argv)
    directory = Path(args.dir)
    try:
        runs = read_runs(directory)
    except LeaseManagerError as exc:
        print(f"lm-garg-figures: error: {exc}", file=sys.stderr)
        return 2
    if not runs:
        print(f"lm-garg-figures: error: no finished runs in {directory}", file=sys.stderr)
        return 2
    printed = False
    for metric in args.metric or METRICS:
        for x in args.by or ("share", "rate"):
            data = series(runs, metric, x)
            # a default axis along which nothing varies is left out; a named one is printed
            if not data or (not args.by and not any(len(p) > 1 for p in data.values())):
                continue
            printed = True
            print(f"\n{LABELS.get(metric, metric)}, by {TITLES[x]}")
            print(table(data, x))
            if args.plots:
                plot(data, metric, x,
                     directory / "plots" / f"garg-{metric.removeprefix('garg_')}-by-{x}.png")
    for x in args.by or ("share", "rate"):
        printed |= print_if_varied(
            site_shares(runs, x), bool(args.by), shares_table, x,
            f"each site's share of the work executed / of the energy cost (%), by {TITLES[x]}")
        printed |= print_if_varied(
            level_penalties(runs, x), bool(args.by), penalty_tables, x,
            f"each line's level penalty (its energy per CPU-hour over the same work's at its "
            f"least-energy levels) and its work at each level (%), by {TITLES[x]}")
    if not printed:
        axes = ", ".join(args.by or ("share", "rate"))
        print(f"lm-garg-figures: error: nothing to show in {directory}: no metric asked for "
              f"has two points along {axes} (--by AXIS shows an axis of one point too)",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
