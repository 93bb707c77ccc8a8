"""``lm-kassab-figures DIR``: Kassab et al.'s figures and tables from a sweep's runs
(``etc/kassab-fig*-sweep.ini``).

Every finished run under DIR is placed by its sweep settings: its planner (``[planning]
policy-planner``), its envelope's scale (``[power] power-cap-scale``), its tasks' lengths
(``[greenpower] lengths``, ``max-length``) and maximum power (``max-watts``). NM compares the
runs of one instance (trace, seed and settings but the planner, as ``lease-manager report``
does); only the instances every planner ran count. The tool prints, for each kind of task and
envelope scale:

- when only phi_max varies (Figs 2 and 3): the mean NM of every planner by phi_max, its mean
  CPU time (Tables 1 and 2), its mean number of switch-ons by phi_max (Table 3) and the mean
  number of leases no planner could place; beside each planner's mean NM, the part of it that
  comes from tasks the planner left unplaced (they count whole when another planner of the
  instance placed them) rather than from work after the best makespan;
- when p_max and phi_max vary (Figs 4 and 5): the planner of least mean NM at each point, the
  genetic algorithm left out as in the paper, and each planner's mean NM over the grid; the
  same map against C* x 0.95 (``MAP_FACTOR``), the C* a better planner would give, or against
  C* x each ``--map-factor F``; under each map, how many points each order wins (its list,
  binary search and stripe planners together) in the paper's two areas, phi_max <= 75 W and
  above (section 5.3.2).

Each also gets a sensitivity table: every planner's mean NM and NM whole against C* times
1, 0.95, 0.9, 0.8 and 0.7, as a better planner (the paper's GA) would lower it.

With ``--versus A,B`` (repeatable), each group ends with the paired comparison of planners A
and B (:mod:`.paired`): on how many instances each has the lower NM (and NM whole), the ties,
the exact two-sided sign test's p, the same counts and test over the seeds' means, and the
mean of A's NM minus B's over the instances; ``--phi-min W`` keeps only the instances at
phi_max >= W for it.

Both readings of NM are printed (``lease_manager.experiments.relative``): NM, the part of each
task's energy after the best makespan C*, and NM whole, the whole energy of each task that
ends after C* (the paper's sentence, read literally).

With ``--plots``, it draws them into ``DIR/plots/``: ``kassab-nm-SCALE.png`` (NM against
phi_max, one line per planner, coloured by order as in the paper) and ``kassab-best-SCALE.png``
(the best planner as a coloured grid).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lease_manager import LeaseManagerError, instance_key, read_tasks, results_with_nm

from .paired import parse_pair, versus_text
from .plots import plot_grid, plot_nm
from .tables import fmt, mean_by, number, ordered_planners, table


def read_runs(directory: Path, factors: Sequence[float] = ()) -> list[dict[str, Any]]:
    """Every finished run with its planner, scale, lengths, p_max, phi_max and metrics (NM
    against C* times each factor of ``LOWERED`` and of ``factors`` too)."""
    results = results_with_nm(directory)
    unplaced = unplaced_nm(results, directory)
    lowered = lowered_nm(results, directory, factors)
    runs = []
    for row in results.done():
        planner = row.get("planning.policy-planner") or row.get("summary.planner") \
            or row.get("planner")
        if not planner:
            continue
        runs.append({
            "planner": str(planner),
            "scale": number(row.get("power.power-cap-scale")) or 1.0,
            "lengths": str(row.get("greenpower.lengths") or "trace"),
            "pmax": number(row.get("greenpower.max-length")),
            "phimax": number(row.get("greenpower.max-watts")),
            "seed": row["seed"],
            "nm": number(row.get("nm")),
            "nm_whole": number(row.get("nm_whole")),
            "nm_unplaced": unplaced.get(str(row["run_id"])),
            "lowered": lowered.get(str(row["run_id"]), {}),
            "cpu": number(row.get("planner_cpu_seconds")),
            "switches": number(row.get("node_switch_ons")),
            "rejected": number(row.get("leases_rejected")),
            "makespan": number(row.get("makespan")),
        })
    return runs


def _tasks_by_instance(results: Any, directory: Path
                       ) -> tuple[dict[str, Any], dict[tuple, list[str]]]:
    """Each done run's tasks (by run id), and the run ids of each instance (trace and seed)."""
    tasks: dict[str, Any] = {}
    groups: dict[tuple, list[str]] = defaultdict(list)
    for row in results.done():
        got = read_tasks(directory / str(row["run_id"]))
        if got is not None:
            tasks[str(row["run_id"])] = got
            groups[instance_key(row, results.setting_columns)].append(str(row["run_id"]))
    return tasks, groups


def unplaced_nm(results: Any, directory: Path) -> dict[str, float]:
    """The part of each run's NM (by run id) that comes from the tasks it left unplaced: their
    energy over the energy of every task some run of the instance placed (NM's reading of
    ``lease_manager.experiments.relative``)."""
    tasks, groups = _tasks_by_instance(results, directory)
    out: dict[str, float] = {}
    for run_ids in groups.values():
        counted = frozenset().union(*(tasks[r].ran_ids for r in run_ids))
        for r in run_ids:
            t = tasks[r]
            total = lost = 0.0
            for lease, rate, length, ran in zip(t.ids, t.rates, t.lengths, t.ran):
                if lease in counted:
                    total += rate * length
                    if not ran:
                        lost += rate * length
            out[r] = lost / total if total > 0 else 0.0
    return out


#: the factors C* is multiplied by in the sensitivity table
LOWERED = (1.0, 0.95, 0.9, 0.8, 0.7)


def lowered_nm(results: Any, directory: Path, factors: Sequence[float] = ()
               ) -> dict[str, dict[float, tuple[float, float]]]:
    """Each run's NM and NM whole (by run id) against its instance's C* times each factor of
    ``LOWERED`` and of ``factors``: how a planner's NM grows as a better planner lowers C*
    (section 5.2's C* is the best of all, the GA's in the paper)."""
    every = sorted({*LOWERED, *factors}, reverse=True)
    tasks, groups = _tasks_by_instance(results, directory)
    out: dict[str, dict[float, tuple[float, float]]] = {}
    for run_ids in groups.values():
        counted = frozenset().union(*(tasks[r].ran_ids for r in run_ids))
        best = min((-len(tasks[r].ran_ids), tasks[r].last_end) for r in run_ids)[1]
        for r in run_ids:
            out[r] = {f: (tasks[r].nm(best * f, counted), tasks[r].nm(best * f, counted, True))
                      for f in every}
    return out


#: the factor of C* the second map of Figs 4-5 is drawn against (a C* 5% below every
#: heuristic's, which the paper's Fig. 5 means need)
MAP_FACTOR = 0.95


def at_factor(runs: Sequence[dict[str, Any]], factor: float, whole: bool = False
              ) -> list[dict[str, Any]]:
    """The runs with ``nm`` replaced by their NM (``whole``: NM whole) against C* x
    ``factor`` (a factor of ``LOWERED`` or of :func:`read_runs`' ``factors``); runs without
    per-task data are left out."""
    return [{**r, "nm": r["lowered"][factor][1 if whole else 0]}
            for r in runs if factor in r["lowered"]]


def lowered_text(runs: Sequence[dict[str, Any]]) -> str:
    """Each planner's mean NM / NM whole against C* times each factor (the GA left out),
    ranked by NM at C*."""
    kept = [r for r in runs if r["planner"] != "ga" and r["lowered"]]
    planners = sorted({r["planner"] for r in kept})
    cells: dict[str, list[str]] = {}
    rank: dict[str, float] = {}
    for pl in planners:
        mine = [r["lowered"] for r in kept if r["planner"] == pl]
        row = []
        for f in LOWERED:
            part = statistics.fmean(v[f][0] for v in mine)
            whole = statistics.fmean(v[f][1] for v in mine)
            row.append(f"{fmt(part)} / {fmt(whole)}")
            if f == 1.0:
                rank[pl] = part
        cells[pl] = row
    order = sorted(planners, key=lambda pl: (rank[pl], pl))
    return ("mean NM / NM whole against C* x factor (a better planner, such as the GA, lowers "
            "C*), GA left out\n"
            + table(["planner", *(f"x{f:g}" for f in LOWERED)],
                    [[pl, *cells[pl]] for pl in order]))


def complete(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs of the instances every planner of their kind of task and scale ran (a folder
    holding extra seeds for some planners only would bias their means)."""
    planners: dict[tuple, set[str]] = defaultdict(set)
    ran: dict[tuple, set[str]] = defaultdict(set)
    for run in runs:
        kind = (run["lengths"], run["scale"])
        planners[kind].add(run["planner"])
        ran[(*kind, run["pmax"], run["phimax"], run["seed"])].add(run["planner"])
    return [r for r in runs
            if ran[(r["lengths"], r["scale"], r["pmax"], r["phimax"], r["seed"])]
            == planners[(r["lengths"], r["scale"])]]


def phi_sweep(runs: Sequence[dict[str, Any]]) -> str:
    """Figs 2-3 and Tables 1-3 for runs of one kind of task and scale."""
    planners = ordered_planners(sorted({r["planner"] for r in runs}))
    phis = sorted({r["phimax"] for r in runs if r["phimax"] is not None})
    nm = mean_by(runs, ("planner", "phimax"), "nm")
    switches = mean_by(runs, ("planner", "phimax"), "switches")
    cpu = mean_by(runs, ("planner",), "cpu")
    rejected = mean_by(runs, ("planner",), "rejected")
    seeds = len({r["seed"] for r in runs})
    out = [f"mean NM by phi_max ({seeds} instances a point)",
           table(["phi_max", *planners],
                 [[f"{p:g}", *(fmt(nm.get((pl, p))) for pl in planners)] for p in phis])]
    lost = mean_by(runs, ("planner", "phimax"), "nm_unplaced")
    means = {pl: statistics.fmean([nm[(pl, p)] for p in phis if (pl, p) in nm])
             for pl in planners if any((pl, p) in nm for p in phis)}
    lost_means = {pl: statistics.fmean([lost[(pl, p)] for p in phis if (pl, p) in lost])
                  for pl in planners if any((pl, p) in lost for p in phis)}
    whole = mean_by(runs, ("planner", "phimax"), "nm_whole")
    whole_means = {pl: statistics.fmean([whole[(pl, p)] for p in phis if (pl, p) in whole])
                   for pl in planners if any((pl, p) in whole for p in phis)}

    def share(pl: str) -> str:
        if pl not in lost_means or means[pl] <= 0:
            return "-"
        return f"{100 * lost_means[pl] / means[pl]:.0f}%"

    out += ["", "mean NM over every phi_max, best first; the part of it from tasks the "
                "planner left unplaced, and that part's share; NM whole (each task that ends "
                "after C* counted whole)",
            table(["planner", "NM", "unplaced", "share", "NM whole"],
                  [[pl, fmt(v), fmt(lost_means.get(pl)), share(pl), fmt(whole_means.get(pl))]
                   for pl, v in sorted(means.items(), key=lambda kv: kv[1])])]
    nm_all = sum(means.values())
    if nm_all > 0 and lost_means:
        out.append(f"share of NM from unplaced tasks, all planners: "
                   f"{100 * sum(lost_means.values()) / nm_all:.0f}%")
    out += ["", "mean planner CPU time per instance (s) (Tables 1-2) and leases no room was "
                "found for",
            table(["planner", "CPU s", "rejected"],
                  [[pl, fmt(cpu.get((pl,)), 4), fmt(rejected.get((pl,)), 2)]
                   for pl in planners])]
    out += ["", "mean switch-ons by phi_max (Table 3)",
            table(["phi_max", *planners],
                  [[f"{p:g}", *(fmt(switches.get((pl, p)), 2) for pl in planners)]
                   for p in phis])]
    return "\n".join(out)


def best_grid(runs: Sequence[dict[str, Any]], metric: str = "nm"
              ) -> tuple[list[float], list[float], dict[tuple[float, float], str]]:
    """The planner of least mean NM (``metric``: ``nm`` or ``nm_whole``) at each (p_max,
    phi_max), the GA left out."""
    nm = mean_by([r for r in runs if r["planner"] != "ga"], ("pmax", "phimax", "planner"),
                 metric)
    pmaxes = sorted({k[0] for k in nm})
    phis = sorted({k[1] for k in nm})
    best: dict[tuple[float, float], str] = {}
    for pm in pmaxes:
        for ph in phis:
            here = {k[2]: v for k, v in nm.items() if k[0] == pm and k[1] == ph}
            if here:
                low = min(here.values())
                best[(pm, ph)] = "/".join(ordered_planners(
                    [p for p, v in here.items() if v <= low + 1e-12]))
    return pmaxes, phis, best


def grid_means(runs: Sequence[dict[str, Any]]) -> str:
    """Each planner's mean NM and NM whole over the grid's points (each point's mean over its
    instances), best first by NM, the GA left out."""
    kept = [r for r in runs if r["planner"] != "ga"]
    means = {}
    for metric in ("nm", "nm_whole"):
        points: dict[str, list[float]] = defaultdict(list)
        for (pl, _, _), v in mean_by(kept, ("planner", "pmax", "phimax"), metric).items():
            points[pl].append(v)
        means[metric] = {pl: statistics.fmean(v) for pl, v in points.items()}
    n = len({(r["pmax"], r["phimax"]) for r in kept})
    rows = [[pl, fmt(v), fmt(means["nm_whole"].get(pl))]
            for pl, v in sorted(means["nm"].items(), key=lambda kv: (kv[1], kv[0]))]
    return (f"mean NM over the grid's {n} points, best first (GA left out)\n"
            + table(["planner", "NM", "NM whole"], rows))


#: the paper's two areas of Fig. 4 (section 5.3.2): phi_max <= 75 W, and above
AREA_SPLIT = 75.0


def order_of(planner: str) -> str:
    """The order a planner sorts by (``bs-lpn`` and ``stripe-lpn``: ``lpn``)."""
    return planner.removeprefix("bs-").removeprefix("stripe-")


def order_wins(phis: Sequence[float], best: dict[tuple[float, float], str]) -> str:
    """How many points of each area (phi_max <= ``AREA_SPLIT`` and above) each order wins; a
    point tied between orders counts for each."""
    out = []
    for label, inside in ((f"phi_max <= {AREA_SPLIT:g}", lambda ph: ph <= AREA_SPLIT),
                          (f"phi_max > {AREA_SPLIT:g}", lambda ph: ph > AREA_SPLIT)):
        points = [names for (_, ph), names in best.items() if inside(ph)]
        if not points:
            continue
        wins: dict[str, int] = defaultdict(int)
        for names in points:
            for order in {order_of(n) for n in names.split("/")}:
                wins[order] += 1
        tally = ", ".join(f"{o} {n}" for o, n in sorted(wins.items(), key=lambda kv: (-kv[1],
                                                                                      kv[0])))
        out.append(f"orders best, {label} ({len(points)} points): {tally}")
    return "\n".join(out)


def grid_text(pmaxes: Sequence[float], phis: Sequence[float],
              best: dict[tuple[float, float], str], label: str = "NM") -> str:
    rows = [[f"{ph:g}", *(best.get((pm, ph), "-") for pm in pmaxes)]
            for ph in reversed(phis)]
    return (f"planner of least mean {label} (GA left out), phi_max down, p_max across\n"
            + table(["phi\\p", *(f"{pm:g}" for pm in pmaxes)], rows))


def print_groups(runs: list[dict[str, Any]], directory: Path, map_factors: list[float],
                 plots: bool, pairs: Sequence[tuple[str, str]] = (),
                 phi_min: float | None = None) -> None:
    """Print (and with ``plots`` draw) each group of runs of one task set and envelope scale:
    the Figs 4-5 maps over a grid of p_max, else the phi sweep of Figs 2-3; then the sign
    tests of ``pairs`` (at phi_max >= ``phi_min``)."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = defaultdict(list)
    for run in complete(runs):
        groups[(run["lengths"], run["scale"])].append(run)
    for (lengths, scale), group in sorted(groups.items()):
        print(f"\n== {lengths} tasks, envelope x{scale:g} ==")
        tag = f"{lengths}-x{scale:g}"
        if len({r["pmax"] for r in group}) > 1:
            pmaxes, phis, best = best_grid(group)
            print(grid_text(pmaxes, phis, best))
            print(order_wins(phis, best))
            print()
            whole_grid = best_grid(group, "nm_whole")
            print(grid_text(*whole_grid, label="NM whole"))
            print(order_wins(whole_grid[1], whole_grid[2]))
            print()
            print(grid_means(group))
            for factor in map_factors:
                for whole, name in ((False, "NM"), (True, "NM whole")):
                    print()
                    lowered = best_grid(at_factor(group, factor, whole))
                    print(grid_text(*lowered, label=f"{name} against C* x {factor:g}"))
                    print(order_wins(lowered[1], lowered[2]))
            print()
            print(lowered_text(group))
            if plots:
                plot_grid(pmaxes, phis, best, directory / "plots" / f"kassab-best-{tag}.png",
                          f"best average NM, {lengths} tasks, envelope x{scale:g}")
        else:
            print(phi_sweep(group))
            print()
            print(lowered_text(group))
            if plots:
                plot_nm(group, directory / "plots" / f"kassab-nm-{tag}.png",
                        f"average NM, {lengths} tasks, envelope x{scale:g}")
        if pairs:
            print()
            print(versus_text(group, pairs, phi_min))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lm-kassab-figures",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="a sweep's output directory")
    parser.add_argument("--plots", action="store_true", help="draw DIR/plots/kassab-*.png")
    parser.add_argument("--map-factor", type=float, action="append", metavar="F",
                        help=f"draw the Figs 4-5 maps against C* x F, 0 < F <= 1 (repeatable; "
                             f"default {MAP_FACTOR:g})")
    parser.add_argument("--versus", action="append", metavar="A,B", default=[],
                        help="compare planners A and B instance by instance: wins, losses, "
                             "ties, the exact two-sided sign test (over the instances and "
                             "the seeds' means) and the mean NM difference (repeatable)")
    parser.add_argument("--phi-min", type=float, metavar="W",
                        help="the sign tests count only the instances at phi_max >= W")
    args = parser.parse_args(argv)
    directory = Path(args.dir)
    map_factors = args.map_factor or [MAP_FACTOR]
    bad = [f for f in map_factors if not 0 < f <= 1]
    if bad:
        print(f"lm-kassab-figures: error: --map-factor {bad[0]:g}: give a factor in (0, 1]",
              file=sys.stderr)
        return 2
    if not directory.is_dir():
        print(f"lm-kassab-figures: error: {directory}: no such directory", file=sys.stderr)
        return 2
    try:
        runs = read_runs(directory, map_factors)
    except LeaseManagerError as exc:
        print(f"lm-kassab-figures: error: {exc}", file=sys.stderr)
        return 2
    runs = [r for r in runs if r["nm"] is not None]
    if not runs:
        print(f"lm-kassab-figures: error: no finished planning runs with NM in {directory}",
              file=sys.stderr)
        return 2
    try:
        pairs = [parse_pair(v, sorted({r["planner"] for r in runs})) for v in args.versus]
    except ValueError as exc:
        print(f"lm-kassab-figures: error: {exc}", file=sys.stderr)
        return 2
    print_groups(runs, directory, map_factors, args.plots, pairs, args.phi_min)
    if args.plots:
        print(f"\nplots in {directory / 'plots'}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
