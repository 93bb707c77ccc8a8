"""Energy benchmark: what a ``[power]`` model costs a replay, as a ratio to the same replay
without one, measured in the same run.

The 30-day SDSC Blue Horizon trace (``etc/sample.ini``) is replayed without a power model,
with every node always on, and with idle nodes switched off after 5 minutes (boots of 60 s);
the three alternate, ``--repeat`` times each, every replay in a fresh subprocess, and the
medians of the replays' own CPU seconds (``summary.json``) are compared.

Target (issue "energy core"): always-on costs at most 1.3x the replay without a power model.
Switching nodes off does more work (each boot and shutdown is a change of the slot table), so
it is printed without a target; so is a power cap (22 kW, below the trace's average load, so
the queue grows and every queued lease is tried at more candidate starts).

Usage::

    python bench/energy.py               # 3 repeats
    python bench/energy.py --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from simulate_cpu import simulate_cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "etc" / "sample.ini"
POWER = ("power.pstates=2.4:100:200", "power.off-watts=5", "power.switch-on=60:150",
         "power.switch-off=30:120")
VARIANTS: dict[str, tuple[str, ...]] = {
    "no power model": (),
    "always-on": POWER,
    "switch-off-idle (5 min)": (*POWER, "power.policy-node-power=switch-off-idle",
                                "power.idle-timeout=300"),
    "always-on, cap 22 kW": (*POWER, "power.power-cap=22000"),
}
REFERENCE = "no power model"
TARGETS = {"always-on": 1.3}


def replay(settings: tuple[str, ...], out: Path) -> float:
    """One replay in a fresh process; its CPU seconds."""
    return simulate_cpu_seconds(CONFIG, settings, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="replays of each variant")
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for k, (name, settings) in enumerate(VARIANTS.items()):   # a folder per replay
                times[name].append(replay(settings, Path(tmp) / f"{i}-{k}"))
    ref = statistics.median(times[REFERENCE])
    print(f"30-day trace, {args.repeat} replays each, medians of CPU seconds")
    print(f"{'variant':<26} {'CPU s':>8} {'ratio':>7}  target")
    for name, values in times.items():
        med = statistics.median(values)
        target = TARGETS.get(name)
        verdict = "" if target is None else (
            f"<= {target:g}x: {'met' if med / ref <= target else 'MISSED'}")
        print(f"{name:<26} {med:>8.2f} {med / ref:>6.2f}x  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
