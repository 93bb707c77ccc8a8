"""Consolidation benchmark: CPU time of the EA host selection policies beside greedy's.

Target: ``ea-time-horizon`` on the 30-day SDSC Blue trace, 9 nodes x 16 cores, conservative
backfilling, in under 10 CPU-seconds. Each replay runs the chapter-6 configuration
(``etc/thesis-ch6-PARADIGM-POLICY-16cores.ini``: annotator ``thesis-workload`` and probe
``resource-contention`` on) in a fresh subprocess; the figure is the run's process CPU time from
``summary.json`` (``simulation.cpu_seconds``), with the part spent in host selection
(``order_hosts``) and what the core alone spends on the same schedule (the recorded host orders
replayed with the plugin off, in the same process after the measured run: warm, so a lower
bound) beside it. Needs the consolidation plugin (``pip install -e
plugins/consolidation``). On a shared machine take the figures as rough: ``--repeat 3`` keeps
the lowest of three.

Usage::

    python bench/consolidation.py                   # hpc and cloud paradigms
    python bench/consolidation.py --paradigms hpc --repeat 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POLICIES = (("greedy", "greedy"), ("ea-consolidation", "eaconsolidation"),
            ("ea-time-horizon", "eatimeconsolidation"))
TARGET = {"ea-time-horizon": 10.0}


def one(config: str, out: str) -> None:
    """In the subprocess: run ``config``, timing host selection, and write the outputs; then
    replay the same host orders with the plugin off (no annotator, no probe, no scores) to
    measure what the core alone spends on the same schedule."""
    import lease_manager
    from lease_manager import HostSelectionPolicy
    from lease_manager.plugins import Plugins
    from lease_manager.run import load_run

    run = load_run(config)
    policy = run.policies["host-selection"]
    inner = policy.order_hosts
    spent = [0.0, 0]
    orders: list = []

    def timed(*args, **kwargs):
        t0 = time.process_time()
        try:
            order = inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - t0
            spent[1] += 1
        orders.append(order)
        return order

    policy.order_hosts = timed
    summary = run.run()
    run.write(out)

    class Replay(HostSelectionPolicy):
        """The recorded orders, in order."""

        name = "bench-replay"

        def __init__(self, ctx) -> None:
            super().__init__(ctx)
            self.orders = iter(orders)

        def order_hosts(self, lease, start, end, table):
            return next(self.orders)

    class Provider:
        @lease_manager.hookimpl
        def register_policies(self):
            return [Replay]

    core = load_run(config, ["scheduling.policy-host-selection=bench-replay",
                             "tracefile.annotators=", "accounting.probes="],
                    plugins=Plugins(extra=[Provider()]))
    replayed = core.run()
    if replayed["makespan"] != summary["makespan"]:
        raise RuntimeError("the replayed host orders gave another schedule")
    summary["bench"] = {"host_selection_cpu_seconds": round(spent[0], 3),
                        "host_selection_calls": spent[1],
                        "core_only_cpu_seconds": replayed["simulation"]["cpu_seconds"]}
    (Path(out) / "summary.json").write_text(json.dumps(summary, indent=1))


def replay(config: Path, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="lm-bench-ea-") as out:
        proc = subprocess.run([sys.executable, __file__, "--one", str(config), out],
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            raise RuntimeError(lines[-1] if lines else f"exit {proc.returncode}")
        return json.loads((Path(out) / "summary.json").read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paradigms", default="hpc,cloud", help="default: hpc,cloud")
    parser.add_argument("--repeat", type=int, default=1, help="replays per figure; the "
                        "lowest CPU time is kept (default: 1)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--one", nargs=2, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        one(*args.one)
        return 0

    print(f"python {sys.version.split()[0]}; 30-day SDSC Blue trace, 9 nodes x 16 cores, "
          f"conservative backfilling; target: ea-time-horizon < {TARGET['ea-time-horizon']:g} "
          f"CPU-s")
    head = (f"{'paradigm':<8} {'host selection':<17} {'leases':>7} {'CPU s':>7} "
            f"{'vs greedy':>9} {'in policy':>9} {'core only':>9} {'calls':>7} {'makespan':>10}"
            f"  target")
    print(head)
    print("-" * len(head))
    failed = False
    for paradigm in [p.strip() for p in args.paradigms.split(",") if p.strip()]:
        base = None
        for policy, label in POLICIES:
            config = ROOT / "etc" / f"thesis-ch6-{paradigm}-{label}-16cores.ini"
            try:
                runs = [replay(config, args.timeout) for _ in range(max(1, args.repeat))]
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"{paradigm:<8} {policy:<17} error: {exc}", flush=True)
                failed = True
                continue
            s = min(runs, key=lambda r: r["simulation"]["cpu_seconds"])
            s["bench"]["core_only_cpu_seconds"] = min(r["bench"]["core_only_cpu_seconds"]
                                                      for r in runs)
            cpu = s["simulation"]["cpu_seconds"]
            if policy == "greedy":
                base = cpu
            ratio = f"{cpu / base:.2f}x" if base else "-"
            target = TARGET.get(policy)
            verdict = ""
            if target is not None:
                ok = cpu < target
                failed |= not ok
                verdict = f"< {target:g} s: {'ok' if ok else 'MISSED'}"
            b = s["bench"]
            print(f"{paradigm:<8} {policy:<17} {s['leases_total']:>7,} {cpu:>7.2f} {ratio:>9} "
                  f"{b['host_selection_cpu_seconds']:>9.2f} {b['core_only_cpu_seconds']:>9.2f} "
                  f"{b['host_selection_calls']:>7,} "
                  f"{s['makespan']:>10,.0f}  {verdict}", flush=True)
    print("(CPU s: the whole replay, annotator and RC probe included; in policy: the part "
          "spent in order_hosts;\n core only: the same schedule replayed with the recorded "
          "host orders and the plugin off, i.e. what the core spends on it)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
