"""Kassab et al.'s list heuristics: CPU seconds to plan an instance of 50 tasks under a green
envelope, over 150 instances (``etc/kassab.ini``, seeds 1-150: hyper-gamma tasks, powers in
[1, 150] W, a 1,000-hour window of the Sand Point envelope), and as a ratio to a reference
measured in the same run: the core's own list schedule in the workload's order (planner
``in-order``), the PlaceTask calls every heuristic makes.

Target (issue "Scheduling under a green power envelope"): the list heuristics under 1 CPU-s
per instance on the 2-core reference machine. The instances are built once (tasks drawn, the
envelope cut to the grid); each heuristic then plans every instance on a fresh board, timed by
``time.process_time``. Needs lm-greenpower.

Usage::

    python bench/kassab.py                    # 150 instances, envelope x1 (tight)
    python bench/kassab.py --scale 10         # the loose envelope
    python bench/kassab.py --instances 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from lease_manager.plugins import Plugins
from lease_manager.run import load_run

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "etc" / "kassab.ini"
HEURISTICS = ("in-order", "lpt", "spt", "lpn", "lptpn", "twoqs", "lpp", "random")
TARGET = 1.0


def instances(count: int, scale: float, plugins: Plugins) -> list[tuple[list, object]]:
    """The tasks and the empty board of seeds 1 to ``count``."""
    out = []
    for seed in range(1, count + 1):
        run = load_run(CONFIG, [f"simulation.seed={seed}", f"power.power-cap-scale={scale:g}",
                                "planning.policy-planner=in-order"], plugins=plugins)
        try:
            mode = run.planning
            assert mode is not None and mode.board is not None
            out.append((list(mode.tasks), mode.board.fresh()))
        finally:
            run.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=150)
    parser.add_argument("--scale", type=float, default=1.0, help="envelope scale (1 or 10)")
    args = parser.parse_args(argv)
    plugins = Plugins()
    built = instances(args.instances, args.scale, plugins)
    seconds: dict[str, list[float]] = {name: [] for name in HEURISTICS}
    placed: dict[str, int] = {name: 0 for name in HEURISTICS}
    planners = {}
    for name in HEURISTICS:
        run = load_run(CONFIG, [f"planning.policy-planner={name}"], plugins=plugins)
        planners[name] = run.planning.planner if run.planning is not None else None
        run.close()
    for tasks, board in built:          # the heuristics in turn on each instance
        for name, planner in planners.items():
            assert planner is not None
            cpu = time.process_time()
            plan = planner.plan(tasks, board.fresh())
            seconds[name].append(time.process_time() - cpu)
            placed[name] += len(plan.placements)
    n_tasks = sum(len(t) for t, _ in built)
    ref = statistics.median(seconds["in-order"])
    print(f"{len(built)} instances of {n_tasks // max(len(built), 1)} tasks, envelope "
          f"x{args.scale:g}: CPU seconds per instance")
    print(f"{'heuristic':<10} {'median':>8} {'mean':>8} {'max':>8} {'ratio':>7} {'placed':>7}"
          f"  target")
    for name, values in seconds.items():
        med = statistics.median(values)
        verdict = "" if name == "in-order" else (
            f"< {TARGET:g} s: {'met' if max(values) < TARGET else 'MISSED'}")
        print(f"{name:<10} {med:>8.4f} {statistics.fmean(values):>8.4f} {max(values):>8.4f} "
              f"{med / ref:>6.2f}x {placed[name] / n_tasks:>6.1%}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
