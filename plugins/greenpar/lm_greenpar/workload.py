"""``lm-greenpar-workload``: a day of an SWF log as a GreenPar workload (section 4).

GreenPar's Grid5k workload is "an arbitrary 24-hour period" of a log with the smallest jobs
left out, each job mapped "to the closest NPB application in terms of core count (assuming 1
VM per core) and runtime", giving 12 FT, 6 LU, 3 MG, 2 CG, 1 SP, 1 EP and 1 IS, at about 33%
utilisation under Baseline (section 5). The paper gives neither the NPB run times nor the
mapping, so this tool maps by **run-time rank**: the day's jobs, shortest first, get the
mix's applications in the order of their NPB run times (:data:`NPB_ORDER`), each
application as many jobs as its share of the mix gives the day (largest remainders). The
core count is the annotator's (``[greenpar] core-map``, from the job's size).

It writes an LWF file whose jobs carry their application (``<extra><attr name="app">``, which
the annotator ``greenpar-apps`` keeps), submitted from 0 at the window's start, and prints
the day's jobs, its utilisation under Baseline (N servers per job from the core map, over
the 24 hours) and its peak demand in servers.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lease_manager import (
    Lease,
    LeaseManagerError,
    ResourceTypes,
    SWFConversion,
    read_swf_leases,
    write_lwf,
)

#: NPB applications from the shortest run to the longest (the serial class C runs as NPB's
#: reports order them: IS, MG, EP, CG, FT, then LU, SP and BT; our reading, not the paper's)
NPB_ORDER = ("IS", "MG", "EP", "CG", "FT", "LU", "SP", "BT")
#: GreenPar's Grid5k mix
GRID5K_MIX = (("FT", 12), ("LU", 6), ("MG", 3), ("CG", 2), ("SP", 1), ("EP", 1), ("IS", 1))
DAY = 86400.0


def apportion(mix: Sequence[tuple[str, float]], count: int) -> list[str]:
    """``count`` applications in the mix's proportions (largest remainders; ties to the
    application listed first), shortest NPB run first."""
    total = sum(w for _, w in mix)
    quotas = [(app, count * w / total) for app, w in mix]
    counts = {app: math.floor(q) for app, q in quotas}
    left = count - sum(counts.values())
    by_remainder = sorted(range(len(quotas)), key=lambda i: (-(quotas[i][1] % 1), i))
    for i in by_remainder[:left]:
        counts[quotas[i][0]] += 1
    unknown = [app for app in counts if app not in NPB_ORDER]
    if unknown:
        raise ValueError(f"no NPB run-time rank for {', '.join(unknown)} "
                         f"(known: {', '.join(NPB_ORDER)})")
    return [app for app in NPB_ORDER for _ in range(counts.get(app, 0))]


def map_by_runtime(leases: Sequence[Lease], mix: Sequence[tuple[str, float]]) -> None:
    """Set each job's ``app``: the shortest jobs the shortest NPB applications (ties in run
    time by submit time, then the log's job number)."""
    order = sorted(leases, key=lambda l: (l.run_duration, l.submit, str(l.source_id)))
    for lease, app in zip(order, apportion(mix, len(leases))):
        lease.extra["app"] = app


def day_of(path: str | Path, start: float, min_nodes: int = 2) -> list[Lease]:
    """The jobs of SWF ``path`` (field 8 in nodes, one VM per node) submitted in
    ``[start, start + 24 h)`` that asked for at least ``min_nodes`` and ran, from 0."""
    conv = SWFConversion(vm_vector=np.array([1.0, 384.0]), window_start=start,
                         window_length=DAY)
    leases = [l for l in read_swf_leases(path, conv)
              if l.vms.count >= min_nodes and l.run_duration > 0]
    for lease in leases:
        lease.submit -= start
    return leases


def servers(size: int, core_map: Sequence[tuple[int, int, int]]) -> int:
    """N for a job of ``size`` nodes (the core map's cores / 2)."""
    for low, high, cores in core_map:
        if low <= size <= high:
            return max(1, cores // 2)
    raise ValueError(f"no core-map range holds size {size}")


def baseline_load(leases: Sequence[Lease], core_map: Sequence[tuple[int, int, int]],
                  capacity: int) -> tuple[float, int]:
    """Utilisation of ``capacity`` servers over the day, and the peak servers, when every job
    runs on its N servers from its arrival."""
    busy = 0.0
    events: list[tuple[float, int]] = []
    for lease in leases:
        n = servers(lease.vms.count, core_map)
        end = lease.submit + lease.run_duration
        busy += n * (min(end, DAY) - lease.submit)
        events += [(lease.submit, n), (end, -n)]
    level = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        level += step
        peak = max(peak, level)
    return busy / (capacity * DAY), peak


def main(argv: Sequence[str] | None = None) -> int:
    from . import CORE_MAP

    parser = argparse.ArgumentParser(prog="lm-greenpar-workload",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("swf", help="an SWF log whose field 8 holds nodes")
    parser.add_argument("--start", type=float, required=True,
                        help="the day's start, seconds into the log")
    parser.add_argument("--out", required=True, help="the LWF file to write")
    parser.add_argument("--min-nodes", type=int, default=2)
    parser.add_argument("--servers", type=int, default=50)
    parser.add_argument("--core-map", default="1-2:2 3-8:4 9-16:8 17-64:16 65-1000000000:32")
    args = parser.parse_args(argv)
    try:
        core_map = CORE_MAP.parse(args.core_map)
        leases = day_of(args.swf, args.start, args.min_nodes)
        if not leases:
            raise LeaseManagerError(f"{args.swf}: no job of at least {args.min_nodes} nodes "
                                    f"in [{args.start:g}, {args.start + DAY:g})")
        map_by_runtime(leases, GRID5K_MIX)
        util, peak = baseline_load(leases, core_map, args.servers)
        write_lwf(args.out, leases, types=ResourceTypes(("CPU", "Memory")),
                  description=f"GreenPar workload: {args.swf} from {args.start:g} s for 24 h, "
                              f"jobs of at least {args.min_nodes} nodes, NPB applications by "
                              f"run-time rank (lm-greenpar-workload)")
    except (LeaseManagerError, OSError, ValueError) as exc:
        print(f"lm-greenpar-workload: error: {exc}", file=sys.stderr)
        return 2
    apps = {a: sum(1 for l in leases if l.extra["app"] == a) for a in NPB_ORDER}
    print(f"{len(leases)} jobs ({', '.join(f'{n} {a}' for a, n in apps.items() if n)}); "
          f"utilisation under Baseline {100 * util:.1f}% of {args.servers} servers over the "
          f"day, peak {peak} servers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
