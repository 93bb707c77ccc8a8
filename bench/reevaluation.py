"""Re-evaluation after early ends, compared: ``move-earlier``, ``compress`` and ``replan`` for
each backfilling mode and placement, on 30-day windows of real logs (issue 38).

Workloads (144 nodes for Blue, one VM per node; hpc paradigm; greedy host selection):

- ``blue-30days``: ``traces/sdsc-blue-30days.swf`` with ``etc/sample.ini`` (Haizea's trace);
- ``blue-dayN``: 30 days of the full SDSC Blue Horizon log from day N (queues 1-4, 8
  processors per VM, rebased; ``--full PATH``, by default ``shared/traces/`` next to the
  repository, as ``bench/replay.py``), N = 100, 340, 580, 820 (the log spans 979 days);
- ``ds-30days``: ``traces/thesis-ds.swf`` (SDSC DataStar, the thesis' DS window, every queue)
  on its 1,664 processors as 208 units of 8 (8 processors per VM, rebased).

For each run: average wait (s), average bounded slowdown (bound 10 s) and the replay's CPU
seconds (``summary.json``'s ``simulation.cpu_seconds``: the replay without start-up; median
of ``--repeat`` runs). Invariants are checked on every run, as always. Prints one table per
backfilling mode and placement and writes every row to ``--csv``.

Usage::

    nice -n 10 python bench/reevaluation.py --csv results/reevaluation.csv   # ~15 min
    python bench/reevaluation.py --workloads blue-30days --placements at-start
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay import FULL_LOG, FULL_SETTINGS, ROOT, run_child, simulate_cmd  # noqa: E402

DAY = 86_400
WINDOW_DAYS = (100, 340, 580, 820)
REEVALUATIONS = ("move-earlier", "compress", "replan")
MODES: dict[str, tuple[str, ...]] = {
    "aggressive": ("scheduling.backfilling=aggressive",),
    "intermediate(4)": ("scheduling.backfilling=intermediate",
                        "scheduling.backfilling-reservations=4"),
    "conservative": ("scheduling.backfilling=conservative",),
}
PLACEMENTS = ("at-start", "when-planned")


def workloads(full: Path) -> dict[str, tuple[str, ...]]:
    """Workload name -> the --set overrides of ``etc/sample.ini`` that replay it."""
    out: dict[str, tuple[str, ...]] = {"blue-30days": ()}
    for day in WINDOW_DAYS:
        out[f"blue-day{day}"] = FULL_SETTINGS + (
            f"tracefile.tracefile={full}", f"tracefile.window-start={day * DAY}",
            "tracefile.window-length=30:00:00:00", "tracefile.rebase=yes")
    out["ds-30days"] = (f"tracefile.tracefile={ROOT / 'traces' / 'thesis-ds.swf'}",
                        "tracefile.procs-per-vm=8", "tracefile.rebase=yes",
                        "simulation.resources=208 CPU:1 Memory:1024")
    return out


def measure(settings: tuple[str, ...], repeat: int, timeout: float) -> dict[str, float] | str:
    """One configuration: its summary's figures (CPU: median of ``repeat``), or the error."""
    cpus = []
    summary: dict = {}
    with tempfile.TemporaryDirectory(prefix="lm-reeval-") as tmp:
        out = Path(tmp) / "run"
        for _ in range(repeat):
            m = run_child(simulate_cmd(out, settings), timeout)
            if not m.ok:
                return m.error
            summary = json.loads((out / "summary.json").read_text())
            cpus.append(summary["simulation"]["cpu_seconds"])
    return {"leases": summary["leases_total"], "avg_wait": summary["avg_wait"],
            "avg_bounded_slowdown": summary["avg_bounded_slowdown"],
            "cpu_seconds": statistics.median(cpus)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", type=Path, default=FULL_LOG,
                        help=f"the full SDSC Blue log (default: {FULL_LOG})")
    parser.add_argument("--workloads", help="comma-separated names (default: all)")
    parser.add_argument("--modes", help="comma-separated: " + ", ".join(MODES))
    parser.add_argument("--placements", help="comma-separated: " + ", ".join(PLACEMENTS))
    parser.add_argument("--reevaluations",
                        help="comma-separated: " + ", ".join(REEVALUATIONS))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--csv", type=Path, help="write every row here")
    args = parser.parse_args()
    loads = workloads(args.full)
    names = args.workloads.split(",") if args.workloads else list(loads)
    modes = args.modes.split(",") if args.modes else list(MODES)
    placements = args.placements.split(",") if args.placements else list(PLACEMENTS)
    reevaluations = (args.reevaluations.split(",") if args.reevaluations
                     else list(REEVALUATIONS))
    for name in names + modes + placements + reevaluations:
        if (name not in loads and name not in MODES and name not in PLACEMENTS
                and name not in REEVALUATIONS):
            parser.error(f"unknown workload, mode, placement or re-evaluation: {name}")
    rows = []
    for mode in modes:
        for placement in placements:
            print(f"\n{mode}, {placement}: average wait (s) / bounded slowdown / replay CPU s")
            print(f"{'workload':<14} {'leases':>7}  " + "  ".join(
                f"{r:>28}" for r in reevaluations))
            for name in names:
                cells = []
                leases = 0
                for reevaluation in reevaluations:
                    settings = loads[name] + MODES[mode] + (
                        f"scheduling.placement={placement}",
                        f"scheduling.reevaluation={reevaluation}")
                    got = measure(settings, args.repeat, args.timeout)
                    if isinstance(got, str):
                        cells.append(f"{'error: ' + got:>28.28}")
                        continue
                    leases = int(got["leases"])
                    rows.append({"workload": name, "mode": mode, "placement": placement,
                                 "reevaluation": reevaluation, **got})
                    cells.append(f"{got['avg_wait']:>12,.1f} {got['avg_bounded_slowdown']:>7.2f} "
                                 f"{got['cpu_seconds']:>7.2f}")
                print(f"{name:<14} {leases:>7,}  " + "  ".join(cells), flush=True)
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        with open(args.csv, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["workload"])
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
