"""Garg et al.'s meta-scheduling benchmark: CPU seconds of a replay of the week of LLNL Thunder
on the eight sites of Table 3 (``etc/garg.ini``: arrival rate 100, 40% high urgency, OurDVS,
50 s cycles) under each site-selection policy, and as a ratio to a reference measured in the
same run: the same week replayed on one site of the same 7,240 CPUs with conservative
backfilling, as best-effort leases (no deadlines), no power model and no meta-scheduling.

Target (issue "DVFS and carbon/profit-aware meta-scheduling"): under 10 CPU-s per policy on
the 2-core reference machine. Each replay runs in a fresh process, ``--repeat`` times; the
medians of the replays' own CPU seconds (``summary.json``) are printed. Needs lm-dvfs.

Usage::

    python bench/garg.py               # 3 repeats
    python bench/garg.py --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from simulate_cpu import simulate_cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "etc" / "garg.ini"
POLICIES = ("gmce", "gmp", "mce-mce", "mp-mp", "mce-mp", "mp-mce", "edf-est")
REFERENCE = ("simulation.sites-file=", "simulation.resources=7240 CPU:1 Memory:1024",
             "scheduling.backfilling=conservative", "simulation.site-selection-cycle=0",
             "power.policy-operating-point=highest", "accounting.probes=",
             "tracefile.annotators=")
TARGET = 10.0


def replay(settings: tuple[str, ...], out: Path, config: Path = CONFIG) -> float:
    """One replay in a fresh process; its CPU seconds."""
    return simulate_cpu_seconds(config, settings, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="replays of each variant")
    args = parser.parse_args(argv)
    variants = {"one site (reference)": REFERENCE,
                **{p: (f"simulation.policy-site-selection={p}",) for p in POLICIES}}
    times: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for k, (name, settings) in enumerate(variants.items()):   # a folder per replay
                times[name].append(replay(settings, Path(tmp) / f"{i}-{k}"))
    ref = statistics.median(times["one site (reference)"])
    print(f"week of LLNL Thunder, {args.repeat} replays each, medians of CPU seconds")
    print(f"{'variant':<22} {'CPU s':>7} {'ratio':>7}  target")
    for name, values in times.items():
        med = statistics.median(values)
        verdict = "" if name not in POLICIES else (
            f"< {TARGET:g} s: {'met' if med < TARGET else 'MISSED'}")
        print(f"{name:<22} {med:>7.2f} {med / ref:>6.2f}x  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
