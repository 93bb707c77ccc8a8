"""``lm-greenpar-figures DIR``: GreenPar's Fig. 7 and its sensitivities from a sweep's runs
(``etc/greenpar-*-sweep.ini``).

Every finished run under DIR (``PROFILE/TRACE/seed-N`` with ``run.json`` and
``summary.json``) is placed by its configuration: its policy (``[malleable]
policy-allocation``) and its setting (slowdown F, solar scale, solar day, beta). For each
setting the tool prints, per policy, the means over seeds of

- brown energy, green energy used and VMs, normalised to ``offline`` when the setting has
  offline runs (Fig. 7's left axis), else to ``baseline``; the energy of every run is counted
  over one window, from 0 to the latest end among the policies of its setting, trace and
  seed (after its own end, every server asleep under the green production), so that a policy
  whose jobs end sooner is not spared the hours the others still run;
- brown energy and average run time against ``baseline`` (% change: negative is a saving;
  Fig. 7's right axis is the run-time reduction, i.e. minus this), the run time two ways:
  the change of the mean run time, and the mean of each job's own change against its run
  under Baseline (the paper's "percentage reduction of jobs" reads either way). Run time
  is end - start, so it leaves out the waits the GreenPar policies cause (a job that could
  not start on arrival; Baseline never makes one wait): beside it are the jobs that waited,
  the mean wait over all jobs, and the turnaround (wait + run time, end - submit) the same
  two ways;
- GreenPar's objective (1) as the MILP prices it (brown cost + beta x the kWh of one server
  in an hour x the brown price x the average run time in hours), SLA violations and
  resizes. SLA violations are counted both ways: run time above F x the run time at N (the
  SLA of Reactive, Aggressive and Offline) and average allocation below N/F (Nebulous'
  SLA, which lets its run time exceed F).

A run with a non-default reading of its policy is its own policy, e.g.
``reactive[above-request]``, ``nebulous[within-f]`` or ``offline[off]`` (``[greenpar]
reactive-slack``, ``reactive-growth``, ``reactive-resize-scope``; ``nebulous-hint``,
``nebulous-slack``; ``optimizing-revert`` for Aggressive and Offline).

Each setting is printed per trace, then (with several) over the traces every policy of the
setting has (a line names the traces left out, so that no policy is averaged over days the
others lack). With ``--plots`` it
draws ``DIR/plots/greenpar-fig7-K.png`` (bars as Fig. 7), one per table.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lease_manager import (
    LeaseManagerError,
    Plugins,
    StepSeries,
    load_config,
    power_model_from_config,
    read_step_series,
    site_nodes,
)

POLICIES = ("baseline", "reactive", "nebulous", "aggressive", "offline")
#: each policy's reading options and their defaults (a run with others is labelled by them;
#: a switch that is on, by its name)
_OPTIMIZING = (("optimizing-revert", "at-arrival"), ("plan-resize-interval", False))
READINGS = {"reactive": (("reactive-slack", "sla"), ("reactive-growth", "fit"),
                         ("reactive-resize-scope", "job")),
            "nebulous": (("nebulous-hint", "servers"), ("nebulous-slack", "allocation")),
            "aggressive": _OPTIMIZING, "offline": _OPTIMIZING}
DAYS = {"high": "High", "medium": "Medium", "low": "Low"}


def read_runs(directory: Path) -> list[dict[str, Any]]:
    """Every finished run: its policy, setting, seed and summary."""
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
        green = Path(config.get("power", "green-production")).name
        day = next((label for key, label in DAYS.items() if f"-{key}-" in green), green)
        setting = (f"{day} day, F={config.get('greenpar', 'slowdown'):g}, "
                   f"solar x{config.get('power', 'green-scale'):g}, "
                   f"beta={config.get('greenpar', 'beta'):g}")
        runs.append({"policy": policy_label(config),
                     "setting": setting, "seed": meta.get("seed"), "summary": summary,
                     "trace": meta_path.parent.parent.name, "dir": meta_path.parent,
                     "config": config})
    common_window(runs)
    job_changes(runs)
    return runs


def policy_label(config) -> str:
    """The run's allocation policy, with its non-default readings in brackets."""
    policy = config.get("malleable", "policy-allocation")
    readings = [option if value is True else str(value)
                for option, default in READINGS.get(policy, ())
                if (value := config.get("greenpar", option)) != default]
    return f"{policy}[{','.join(readings)}]" if readings else policy


def job_times(run_dir: Path) -> dict[str, tuple[float, float, float]]:
    """Each finished job's (submit, start, end) by lease id, from ``leases.csv``."""
    path = run_dir / "leases.csv"
    try:
        with open(path, newline="") as fh:
            return {r["lease_id"]: (float(r["submit"]), float(r["start"]), float(r["end"]))
                    for r in csv.DictReader(fh) if r["state"] == "done"}
    except (OSError, KeyError, ValueError) as exc:
        raise LeaseManagerError(f"{path}: cannot read the leases' times "
                                f"({type(exc).__name__}: {exc})") from None


def durations(times: dict[str, tuple[float, float, float]]
              ) -> tuple[dict[str, float], dict[str, float]]:
    """Each job's run time (end - start) and turnaround (end - submit), from
    :func:`job_times`."""
    return ({k: end - start for k, (_, start, end) in times.items()},
            {k: end - submit for k, (submit, _, end) in times.items()})


def wait_figures(times: dict[str, tuple[float, float, float]]) -> dict[str, float]:
    """From each job's (submit, start, end): the jobs that waited (started after their
    submission), the mean wait over all jobs and the mean turnaround (end - submit), in s
    (nan without a job)."""
    waits = [start - submit for submit, start, _ in times.values()]
    return {"greenpar_jobs_waited": float(sum(w > 1e-6 for w in waits)),
            "greenpar_mean_wait": statistics.fmean(waits) if waits else math.nan,
            "greenpar_avg_turnaround": (statistics.fmean(end - submit for submit, _, end
                                                         in times.values())
                                        if times else math.nan)}


def mean_job_change(times: dict[str, float], base: dict[str, float]) -> float:
    """The mean over the jobs finished in both runs of each job's run-time change against
    ``base``, in % (nan without a common job)."""
    common = [k for k in times if k in base and base[k] > 0]
    if not common:
        return math.nan
    return 100 * statistics.fmean(times[k] / base[k] - 1 for k in common)


def job_changes(runs: Sequence[dict[str, Any]]) -> None:
    """Set each run's :func:`wait_figures` and its ``greenpar_job_runtime_change_%`` and
    ``greenpar_job_turnaround_change_%``: :func:`mean_job_change` of the run times and of
    the turnarounds against the Baseline run of its setting, trace and seed (nan without
    one)."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        groups[run["setting"], run["trace"], run["seed"]].append(run)
    for group in groups.values():
        base = next((r for r in group if r["policy"] == "baseline"), None)
        base_times = job_times(base["dir"]) if base is not None else {}
        base_run, base_turn = durations(base_times)
        for run in group:
            times = job_times(run["dir"])
            summary = run["summary"]
            summary.update(wait_figures(times))
            run_of, turn_of = durations(times)
            summary["greenpar_job_runtime_change_%"] = (
                mean_job_change(run_of, base_run) if base_times else math.nan)
            summary["greenpar_job_turnaround_change_%"] = (
                mean_job_change(turn_of, base_turn) if base_times else math.nan)


def power_rows(run_dir: Path) -> np.ndarray:
    """``series/power.csv`` as rows of (time, total watts, green watts), one site."""
    path = run_dir / "series" / "power.csv"
    try:
        with open(path, newline="") as fh:
            rows = [(float(r["time"]), float(r["total_watts"]), float(r["green_watts"] or 0))
                    for r in csv.DictReader(fh)]
    except (OSError, KeyError, ValueError) as exc:
        raise LeaseManagerError(f"{path}: cannot read the power series "
                                f"({type(exc).__name__}: {exc})") from None
    return np.array(rows, dtype=float).reshape(-1, 3)


def energy_until(rows: np.ndarray, until: float, sleep_watts: float,
                 green: StepSeries | None) -> tuple[float, float]:
    """Brown and green joules used from 0 to ``until``: the run's own power series to its
    end, then every server asleep (``sleep_watts``) under the green production."""
    t, total, produced = rows[:, 0], rows[:, 1], rows[:, 2]
    dt = np.diff(t)
    used = np.minimum(total[:-1], produced[:-1])
    brown = float(np.dot(total[:-1] - used, dt))
    green_used = float(np.dot(used, dt))
    end = float(t[-1]) if len(t) else 0.0
    if until > end:
        cuts = np.array([end, until])
        if green is not None:
            cuts = np.union1d(cuts, green.breakpoints(end, until))
        cuts = cuts[(cuts >= end) & (cuts <= until)]
        g = green.at(cuts[:-1]) if green is not None else np.zeros(len(cuts) - 1)
        after = np.minimum(sleep_watts, g)
        brown += float(np.dot(sleep_watts - after, np.diff(cuts)))
        green_used += float(np.dot(after, np.diff(cuts)))
    return brown, green_used


def common_window(runs: Sequence[dict[str, Any]]) -> None:
    """Count every run's energy over one window: from 0 to the latest end among the runs of
    its setting, trace and seed (every policy of a comparison), as
    ``greenpar_window_{brown,green}_joules``, ``greenpar_window_cost`` and
    ``greenpar_window_hours``."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        run["rows"] = power_rows(run["dir"])
        groups[run["setting"], run["trace"], run["seed"]].append(run)
    for group in groups.values():
        until = max(float(r["rows"][-1, 0]) if len(r["rows"]) else 0.0 for r in group)
        for run in group:
            summary, config = run["summary"], run["config"]
            path = config.get("power", "green-production")
            green = read_step_series(path, "watts") if path else None
            scale = config.get("power", "green-scale")
            if green is not None and scale != 1.0:
                green = StepSeries(green.times, green.values * scale)
            model = power_model_from_config(config, site_nodes(config))
            sleep = float(model.idle.sum()) if model is not None else 0.0
            brown, used = energy_until(run["rows"], until, sleep, green)
            price = config.get("power", "electricity-price")
            if not isinstance(price, (int, float)):
                kwh = float(summary.get("brown_joules", 0.0)) / 3.6e6
                price = float(summary.get("energy_cost", 0.0)) / kwh if kwh else 0.0
            summary["greenpar_window_brown_joules"] = brown
            summary["greenpar_window_green_joules"] = used
            summary["greenpar_window_cost"] = brown / 3.6e6 * float(price)
            summary["greenpar_window_hours"] = until / 3600
            runtime_h = float(summary.get("greenpar_avg_runtime", math.nan)) / 3600
            watts = config.get("greenpar", "beta-server-watts")
            if not watts and model is not None:
                watts = float(model.full[0, model.top_level])
            kw = float(watts) / 1000
            summary["greenpar_objective"] = (summary["greenpar_window_cost"]
                                             + config.get("greenpar", "beta") * kw
                                             * float(price) * runtime_h)


def mean(runs: Sequence[dict[str, Any]], field: str) -> float:
    values = [float(r["summary"][field]) for r in runs
              if isinstance(r["summary"].get(field), (int, float))]
    return statistics.fmean(values) if values else math.nan


def figure(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per policy of one setting: the Fig. 7 quantities (see the module docstring)."""
    by_policy: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        by_policy[run["policy"]].append(run)
    reference = "offline" if "offline" in by_policy else "baseline"
    ref = by_policy.get(reference, [])
    base = by_policy.get("baseline", [])
    out: dict[str, dict[str, float]] = {}
    def order(label: str) -> tuple[int, str]:
        name = label.split("[")[0]
        return (POLICIES.index(name) if name in POLICIES else len(POLICIES), label)

    for policy in sorted(by_policy, key=order):
        group = by_policy[policy]
        row = {}
        for field, name in (("greenpar_window_brown_joules", "brown"),
                            ("greenpar_window_green_joules", "green"), ("greenpar_vms", "vms")):
            row[name] = mean(group, field) / mean(ref, field) if ref else math.nan
        row["brown_vs_baseline_%"] = 100 * (mean(group, "greenpar_window_brown_joules")
                                            / mean(base, "greenpar_window_brown_joules") - 1
                                            ) if base else math.nan
        row["runtime_vs_baseline_%"] = 100 * (mean(group, "greenpar_avg_runtime")
                                              / mean(base, "greenpar_avg_runtime") - 1
                                              ) if base else math.nan
        row["job_runtime_vs_baseline_%"] = mean(group, "greenpar_job_runtime_change_%")
        row["jobs_waited"] = mean(group, "greenpar_jobs_waited")
        row["mean_wait_s"] = mean(group, "greenpar_mean_wait")
        row["turnaround_vs_baseline_%"] = 100 * (mean(group, "greenpar_avg_turnaround")
                                                 / mean(base, "greenpar_avg_turnaround") - 1
                                                 ) if base else math.nan
        row["job_turnaround_vs_baseline_%"] = mean(group, "greenpar_job_turnaround_change_%")
        row["brown_kwh"] = mean(group, "greenpar_window_brown_joules") / 3.6e6
        row["green_kwh"] = mean(group, "greenpar_window_green_joules") / 3.6e6
        row["window_h"] = mean(group, "greenpar_window_hours")
        row["avg_runtime_h"] = mean(group, "greenpar_avg_runtime") / 3600
        row["objective"] = mean(group, "greenpar_objective")
        row["sla_violations"] = mean(group, "greenpar_sla_violations")
        row["allocation_sla_violations"] = mean(group, "greenpar_allocation_sla_violations")
        row["resizes"] = mean(group, "greenpar_resizes")
        row["seeds"] = len(group)
        out[policy] = row
    return out


def common_days(runs: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The runs on the traces (days) that every policy among ``runs`` has, so that an
    all-traces mean compares the policies over the same days, and a line naming the days
    left out and the policies without them ("" if none is left out)."""
    days: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        days[run["policy"]].add(run["trace"])
    every = set.intersection(*days.values()) if days else set()
    left = sorted({r["trace"] for r in runs} - every)
    kept = [r for r in runs if r["trace"] in every]
    if not left:
        return kept, ""
    line = "left out: " + "; ".join(
        f"{day} (no run of {', '.join(sorted(p for p, have in days.items() if day not in have))})"
        for day in left)
    if not kept:
        return kept, f"no trace run by every policy; {line}"
    return kept, line


COLUMNS = (("brown", "brown/ref"), ("green", "green/ref"), ("vms", "VMs/ref"),
           ("brown_vs_baseline_%", "brown vs base %"),
           ("runtime_vs_baseline_%", "runtime vs base %"),
           ("job_runtime_vs_baseline_%", "per-job runtime vs base %"),
           ("jobs_waited", "jobs waited"), ("mean_wait_s", "mean wait s"),
           ("turnaround_vs_baseline_%", "turnaround vs base %"),
           ("job_turnaround_vs_baseline_%", "per-job turnaround vs base %"),
           ("brown_kwh", "brown kWh"),
           ("green_kwh", "green kWh"), ("avg_runtime_h", "runtime h"),
           ("window_h", "window h"), ("objective", "objective $"),
           ("sla_violations", "runtime SLA viol."),
           ("allocation_sla_violations", "alloc. SLA viol."), ("resizes", "resizes"),
           ("seeds", "seeds"))


def table(data: dict[str, dict[str, float]]) -> str:
    head = ["policy"] + [label for _, label in COLUMNS]
    rows = [[policy] + [f"{values[key]:.3g}" if key != "seeds" else f"{values[key]:g}"
                        for key, _ in COLUMNS] for policy, values in data.items()]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [head, *rows])


def plot(data: dict[str, dict[str, float]], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    policies = list(data)
    x = np.arange(len(policies))
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (key, label) in enumerate((("brown", "brown energy"), ("green", "green energy"),
                                      ("vms", "VMs"))):
        ax.bar(x + (i - 1) * 0.22, [data[p][key] for p in policies], 0.22, label=label)
    ax.set_xticks(x, policies)
    reference = "offline" if "offline" in data else "baseline"
    ax.set_ylabel(f"normalised to {reference}")
    right = ax.twinx()
    right.plot(x, [-data[p]["runtime_vs_baseline_%"] for p in policies], "ko-",
               label="run-time reduction")
    right.set_ylabel("run-time reduction against baseline (%)")
    ax.legend(loc="upper left", fontsize=7)
    right.legend(loc="upper right", fontsize=7)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lm-greenpar-figures",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="a sweep's output directory")
    parser.add_argument("--plots", action="store_true", help="draw DIR/plots/greenpar-*.png")
    args = parser.parse_args(argv)
    directory = Path(args.dir)
    try:
        runs = read_runs(directory)
    except LeaseManagerError as exc:
        print(f"lm-greenpar-figures: error: {exc}", file=sys.stderr)
        return 2
    if not runs:
        print(f"lm-greenpar-figures: error: no finished runs in {directory}", file=sys.stderr)
        return 2
    settings: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        settings[run["setting"]].append(run)
    k = 0
    for setting, group in sorted(settings.items()):
        traces = sorted({r["trace"] for r in group})
        parts = [(f"{setting}, {t}", [r for r in group if r["trace"] == t]) for t in traces]
        notes = {}
        if len(traces) > 1:
            kept, note = common_days(group)
            if kept:
                title = f"{setting}, all {len({r['trace'] for r in kept})} traces"
                parts.append((title, kept))
                notes[title] = note
            else:
                print(f"\n{setting}, all traces: {note}")
        for title, runs_of in parts:
            data = figure(runs_of)
            print(f"\n{title}")
            if notes.get(title):
                print(notes[title])
            print(table(data))
            if args.plots:
                k += 1
                plot(data, title, directory / "plots" / f"greenpar-fig7-{k}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
