"""``lm-greenpar-figures DIR``: GreenPar's Fig. 7 and its sensitivities from a sweep's runs
(``etc/greenpar-*-sweep.ini``).

Every finished run under DIR (``PROFILE/TRACE/seed-N`` with ``run.json`` and
``summary.json``) is placed by its configuration: its policy (``[malleable]
policy-allocation``) and its setting (slowdown F, solar scale, solar day, beta). For each
setting the tool prints, per policy, the means over seeds of

- brown energy, green energy used and VMs, normalised to ``offline`` when the setting has
  offline runs (Fig. 7's left axis), else to ``baseline``;
- brown energy and average run time against ``baseline`` (% change: negative is a saving;
  Fig. 7's right axis is the run-time reduction, i.e. minus this);
- GreenPar's objective (1) as the MILP prices it (brown cost + beta x the kWh of one server
  in an hour x the brown price x the average run time in hours), SLA violations and
  resizes.

With ``--plots`` it draws ``DIR/plots/greenpar-fig7-SETTING.png`` (bars as Fig. 7).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lease_manager import LeaseManagerError
from lease_manager.config.schema import load_config
from lease_manager.plugins import Plugins

POLICIES = ("baseline", "reactive", "nebulous", "aggressive", "offline")
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
        brown_kwh = float(summary.get("brown_joules", 0.0)) / 3.6e6
        price = float(summary.get("energy_cost", 0.0)) / brown_kwh if brown_kwh else 0.0
        runtime_h = float(summary.get("greenpar_avg_runtime", math.nan)) / 3600
        # GreenPar's objective (1), as the MILP prices it: brown cost + beta x a server's
        # kWh in an hour x the brown price x the average run time in hours
        kw = float(summary.get("greenpar_beta_server_watts", math.nan)) / 1000
        summary["greenpar_objective"] = (float(summary.get("energy_cost", 0.0))
                                         + config.get("greenpar", "beta") * kw * price
                                         * runtime_h)
        runs.append({"policy": config.get("malleable", "policy-allocation"),
                     "setting": setting, "seed": meta.get("seed"), "summary": summary})
    return runs


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
    for policy in sorted(by_policy, key=lambda p: (POLICIES + (p,)).index(p)):
        group = by_policy[policy]
        row = {}
        for field, name in (("brown_joules", "brown"), ("green_used_joules", "green"),
                            ("greenpar_vms", "vms")):
            row[name] = mean(group, field) / mean(ref, field) if ref else math.nan
        row["brown_vs_baseline_%"] = 100 * (mean(group, "brown_joules")
                                            / mean(base, "brown_joules") - 1) if base else math.nan
        row["runtime_vs_baseline_%"] = 100 * (mean(group, "greenpar_avg_runtime")
                                              / mean(base, "greenpar_avg_runtime") - 1
                                              ) if base else math.nan
        row["brown_kwh"] = mean(group, "brown_joules") / 3.6e6
        row["green_kwh"] = mean(group, "green_used_joules") / 3.6e6
        row["avg_runtime_h"] = mean(group, "greenpar_avg_runtime") / 3600
        row["objective"] = mean(group, "greenpar_objective")
        row["sla_violations"] = mean(group, "greenpar_sla_violations")
        row["resizes"] = mean(group, "greenpar_resizes")
        row["seeds"] = len(group)
        out[policy] = row
    return out


COLUMNS = (("brown", "brown/ref"), ("green", "green/ref"), ("vms", "VMs/ref"),
           ("brown_vs_baseline_%", "brown vs base %"),
           ("runtime_vs_baseline_%", "runtime vs base %"), ("brown_kwh", "brown kWh"),
           ("green_kwh", "green kWh"), ("avg_runtime_h", "runtime h"),
           ("objective", "objective $"),
           ("sla_violations", "SLA viol."), ("resizes", "resizes"), ("seeds", "seeds"))


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
    for k, (setting, group) in enumerate(sorted(settings.items())):
        data = figure(group)
        print(f"\n{setting}")
        print(table(data))
        if args.plots:
            plot(data, setting, directory / "plots" / f"greenpar-fig7-{k + 1}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
