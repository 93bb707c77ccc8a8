"""GreenPar's benchmark: CPU seconds of the 24-hour workload (``etc/greenpar.ini``: 19 jobs of
SDSC Blue Horizon mapped to NPB applications, 50 servers, High day, 15-minute epochs) under
each allocation policy, and as a ratio to a reference measured in the same run: the same
replay with no allocation policy (every lease rigid).

Targets (issue "Green-energy-driven malleable leases"): ``aggressive`` under 60 CPU-s and
``offline`` under 10 CPU-minutes on the 2-core reference machine (the MILP solves are most of
it; ``greenpar_solver_cpu_seconds`` in each run's summary). Each replay runs in a fresh
process, ``--repeat`` times; the medians of the replays' own CPU seconds are printed. Needs
lm-greenpar.

Usage::

    python bench/greenpar.py               # 1 repeat (aggressive and offline take a while)
    python bench/greenpar.py --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from simulate_cpu import simulate_cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "etc" / "greenpar.ini"
POLICIES = ("baseline", "reactive", "nebulous", "aggressive", "offline")
TARGETS = {"aggressive": 60.0, "offline": 600.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="replays of each variant")
    args = parser.parse_args(argv)
    variants = {"rigid (reference)": ("malleable.policy-allocation=none",),
                **{p: (f"malleable.policy-allocation={p}",) for p in POLICIES}}
    times: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for k, (name, settings) in enumerate(variants.items()):   # a folder per replay
                times[name].append(simulate_cpu_seconds(CONFIG, settings,
                                                        Path(tmp) / f"{i}-{k}"))
    ref = statistics.median(times["rigid (reference)"])
    print(f"GreenPar's 24-hour workload, {args.repeat} replay(s) each, medians of CPU seconds")
    print(f"{'variant':<20} {'CPU s':>8} {'ratio':>9}  target")
    for name, values in times.items():
        med = statistics.median(values)
        target = TARGETS.get(name)
        verdict = "" if target is None else (
            f"< {target:g} s: {'met' if med < target else 'MISSED'}")
        print(f"{name:<20} {med:>8.2f} {med / max(ref, 1e-3):>8.1f}x  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
