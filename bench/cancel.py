"""How a cancellation scales with the plan: cancelling one lease among N planned leases under
conservative backfilling (``placement = when-planned``, the daemon's; ``reevaluation =
move-earlier``).

On 20 nodes of 16 CPUs, N best-effort leases of 1 to 16 one-CPU VMs for 1 to 24 hours (seeded)
all arrive at 0; conservative backfilling gives each waiting one a reservation. At 1 the
planned lease with the earliest start is cancelled and the schedule re-evaluated (every later
lease may move earlier): the CPU time of that cancel and the scheduling cycle after it is what
is timed (median of ``--repeat``). Printed beside it, as references measured in the same run:
the same cancel with N/4 leases (4x for a cost linear in the plan, 16x for a quadratic one) and
the cycle that planned the N leases in the first place. Invariants are checked as always
(``table.check()`` after the cancel).

Usage: ``python bench/cancel.py [-n 2000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lease_manager.config.schema import load_config  # noqa: E402
from lease_manager.plugins import Plugins  # noqa: E402
from lease_manager.run import Run  # noqa: E402

from support import be  # noqa: E402

SETTINGS = ("simulation.resources=20 CPU:16 Memory:32768",
            "tracefile.vm-resources=CPU:1 Memory:1024",
            "scheduling.backfilling=conservative", "scheduling.placement=when-planned",
            "scheduling.reevaluation=move-earlier")


def measure(n: int) -> dict[str, float]:
    """One run: N leases planned at 0, the earliest planned one cancelled at 1."""
    rng = np.random.default_rng(1)
    leases = [be(i + 1, int(rng.integers(1, 17)), float(rng.integers(3600, 86400)), 0.0)
              for i in range(n)]
    plugins = Plugins(entry_points=False)
    run = Run(load_config(None, plugins.schema, list(SETTINGS)), plugins, leases=leases)
    out: dict[str, float] = {}
    cpu0 = time.process_time()

    def cancel(now: float) -> None:
        out["plan_s"] = time.process_time() - cpu0   # (the cycle at 0 planned them all)
        sched = run.scheduler
        out["planned"] = len(sched.future)
        victim = min(sched.future.values(), key=lambda lease: lease.reservations[0].start)
        t = time.process_time()
        sched.cancel(victim, now)
        sched.cycle(now)
        out["cancel_s"] = time.process_time() - t
        run.table.check()
        run.engine.stop()

    run.start()
    run.call_at(1.0, cancel)
    run.engine.run()
    run.close()
    return out


def median_of(n: int, repeat: int) -> dict[str, float]:
    runs = [measure(n) for _ in range(repeat)]
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="leases (default 2000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (median)")
    args = parser.parse_args()
    small = median_of(args.n // 4, args.repeat)
    big = median_of(args.n, args.repeat)
    print(f"cancel among {big['planned']:,.0f} planned leases: {big['cancel_s']:.3f} s CPU, "
          f"{big['cancel_s'] / small['cancel_s']:.1f}x the cancel among "
          f"{small['planned']:,.0f} ({small['cancel_s']:.3f} s; 4x linear, 16x quadratic), "
          f"{big['cancel_s'] / big['plan_s']:.2f}x planning the {args.n:,} leases "
          f"({big['plan_s']:.2f} s)")


if __name__ == "__main__":
    main()
