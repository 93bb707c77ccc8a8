"""Replay benchmark: CPU time and memory of trace replays under every backfilling mode.

Each replay runs in a fresh subprocess (``python -m lease_manager.cli simulate ...``) so that
its peak RSS is its own; the figures are read from the run's ``summary.json``.

Workloads:

(a) ``traces/sdsc-blue-30days.swf`` with ``etc/sample.ini`` (144 nodes, one VM per node);
(b) the full SDSC Blue Horizon log (``SDSC-BLUE-2000-4.2-cln.swf.gz``, queues 1-4, 8 processors
    per VM) -- by default from ``shared/traces/`` next to the repository (``--full PATH``);
(c) linearity: the full log cut to its first 1/4 and 1/2 of the replayed jobs
    (``tracefile.max-jobs``) and all of it; the cost per lease is shown relative to the 1/4 run.

Usage::

    python bench/replay.py --quick              # the 30-day trace only
    python bench/replay.py                      # everything (several minutes)
    python bench/replay.py --modes conservative --skip-linearity
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
CONFIG = ROOT / "etc" / "sample.ini"
TRACE_30DAYS = ROOT / "traces" / "sdsc-blue-30days.swf"
FULL_LOG = ROOT.parent / "shared" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"
FULL_SETTINGS = ("tracefile.queues=1,2,3,4", "tracefile.procs-per-vm=8")

#: mode name -> the --set overrides that select it
MODES: dict[str, tuple[str, ...]] = {
    "off": ("scheduling.backfilling=off",),
    "aggressive": ("scheduling.backfilling=aggressive",),
    "conservative": ("scheduling.backfilling=conservative",),
    "intermediate": ("scheduling.backfilling=intermediate",
                     "scheduling.backfilling-reservations=4"),
}
LABELS = {"intermediate": "intermediate(4)"}

#: targets: CPU seconds per replay (by workload, then mode; None = any mode) and peak RSS (MB)
TARGET_CPU = {"30days": {None: 1.0}, "full": {"conservative": 60.0, None: 30.0}}
TARGET_RSS = {"full": 500.0}


def target_cpu(workload: str, mode: str) -> float | None:
    targets = TARGET_CPU.get(workload, {})
    return targets.get(mode, targets.get(None))


class Result:
    """One replay's figures (or why there are none)."""

    def __init__(self, trace: str, mode: str, *, leases: int = 0, cpu: float = float("nan"),
                 rss: float = float("nan"), wall: float = float("nan"), replayed: int = 0,
                 error: str = "") -> None:
        self.trace, self.mode = trace, mode
        self.leases, self.cpu, self.rss, self.wall = leases, cpu, rss, wall
        self.replayed = replayed
        self.error = error

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def rate(self) -> float:
        return self.leases / self.cpu if self.ok and self.cpu > 0 else float("nan")

    @property
    def per_lease(self) -> float:
        return self.cpu / self.leases if self.ok and self.leases else float("nan")


def replay(trace: str, mode: str, settings: tuple[str, ...], timeout: float,
           config: Path = CONFIG) -> Result:
    """Run one replay in a fresh interpreter and read its summary."""
    with tempfile.TemporaryDirectory(prefix="lm-bench-") as out:
        cmd = [sys.executable, "-m", "lease_manager.cli", "simulate", str(config), "--quiet",
               "--out", out]
        for setting in settings + MODES[mode]:
            cmd += ["--set", setting]
        wall0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  cwd=ROOT)
        except subprocess.TimeoutExpired:
            return Result(trace, mode, error=f"timeout after {timeout:g} s")
        wall = time.perf_counter() - wall0
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout or "").strip().splitlines()
            return Result(trace, mode, error=f"exit {proc.returncode}: "
                                             f"{lines[-1] if lines else 'no output'}")
        try:
            summary = json.loads((Path(out) / "summary.json").read_text())
        except (OSError, ValueError) as exc:
            return Result(trace, mode, error=f"no summary.json: {exc}")
    sim = summary["simulation"]
    return Result(trace, mode, leases=int(summary["leases_total"]),
                  cpu=float(sim["cpu_seconds"]), rss=float(sim["peak_rss_mb"]), wall=wall,
                  replayed=int(summary.get("trace", {}).get("jobs_replayed", 0)))


# ------------------------------------------------------------------------------- printing
HEADER = (f"{'trace':<22} {'mode':<16} {'leases':>8} {'CPU s':>8} {'leases/CPU-s':>13} "
          f"{'peak RSS MB':>12}  target")


def verdict(value: float, limit: float | None) -> str:
    if limit is None or value != value:   # no target, or NaN
        return ""
    return "ok" if value < limit else "MISSED"


def row(r: Result, workload: str) -> str:
    label = LABELS.get(r.mode, r.mode)
    if not r.ok:
        return f"{r.trace:<22} {label:<16} {'-':>8} {'-':>8} {'-':>13} {'-':>12}  {r.error}"
    targets = []
    cpu_limit = target_cpu(workload, r.mode)
    if cpu_limit is not None:
        targets.append(f"CPU < {cpu_limit:g} s: {verdict(r.cpu, cpu_limit)}")
    rss_limit = TARGET_RSS.get(workload)
    if rss_limit is not None:
        targets.append(f"RSS < {rss_limit:g} MB: {verdict(r.rss, rss_limit)}")
    return (f"{r.trace:<22} {label:<16} {r.leases:>8,} {r.cpu:>8.2f} {r.rate:>13,.0f} "
            f"{r.rss:>12.1f}  {'; '.join(targets)}")


def run_table(title: str, workload: str, trace: str, modes: list[str],
              settings: tuple[str, ...], timeout: float) -> dict[str, Result]:
    print(f"\n{title}")
    print(HEADER)
    print("-" * len(HEADER))
    results = {}
    for mode in modes:
        results[mode] = r = replay(trace, mode, settings, timeout)
        print(row(r, workload), flush=True)
    return results


def count_jobs(path: Path) -> int:
    """How many jobs of the full log the replay keeps (queues 1-4, with a run time and a
    processor count): a quick conversion without scheduling, as ``max-jobs`` counts them."""
    import numpy as np

    from lease_manager.workload.swf import SWFConversion, SWFReader, TraceStats, swf_leases

    stats = TraceStats()
    conv = SWFConversion(vm_vector=np.array([1.0, 1024.0]), procs_per_vm=8,
                         queues=(1, 2, 3, 4))
    for _ in swf_leases(SWFReader(path), conv, stats):
        pass
    return stats.replayed


def linearity(full: Path, modes: list[str], timeout: float,
              full_results: dict[str, Result]) -> None:
    total = next((r.replayed for r in full_results.values() if r.ok and r.replayed), 0)
    if not total:
        t0 = time.perf_counter()
        total = count_jobs(full)
        print(f"\n(counted {total:,} replayed jobs in {time.perf_counter() - t0:.1f} s)")
    cuts = [("1/4", total // 4), ("1/2", total // 2), ("all", 0)]
    print(f"\n(c) linearity: the full log cut to its first 1/4, 1/2 and all of its "
          f"{total:,} replayed jobs")
    head = (f"{'mode':<16} {'cut':<4} {'leases':>8} {'CPU s':>8} {'ms/lease':>9} "
            f"{'vs 1/4':>7} {'peak RSS MB':>12}")
    print(head)
    print("-" * len(head))
    for mode in modes:
        base = None
        for name, max_jobs in cuts:
            if max_jobs == 0 and mode in full_results:
                r = full_results[mode]       # the full run of (b): not run twice
            else:
                r = replay(f"full[{name}]", mode, FULL_SETTINGS + (
                    f"tracefile.tracefile={full}", f"tracefile.max-jobs={max_jobs}"), timeout)
            label = LABELS.get(mode, mode)
            if not r.ok:
                print(f"{label:<16} {name:<4} {r.error}", flush=True)
                continue
            if base is None and name == "1/4":
                base = r.per_lease
            ratio = r.per_lease / base if base else float("nan")
            print(f"{label:<16} {name:<4} {r.leases:>8,} {r.cpu:>8.2f} "
                  f"{1000 * r.per_lease:>9.3f} {ratio:>6.2f}x {r.rss:>12.1f}", flush=True)
    print("(a linear replay keeps the cost per lease flat: 'vs 1/4' near 1.0x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated backfilling modes (default: {','.join(MODES)}; "
                             f"intermediate uses 4 reservations)")
    parser.add_argument("--quick", action="store_true", help="only the 30-day trace")
    parser.add_argument("--full", type=Path, default=FULL_LOG,
                        help=f"the full SDSC Blue log (default: {FULL_LOG})")
    parser.add_argument("--skip-linearity", action="store_true",
                        help="do not run the 1/4 and 1/2 cuts of the full log")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds allowed per replay (default: 600)")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        parser.error(f"unknown mode(s) {', '.join(unknown) or '(none)'}; "
                     f"choose among {', '.join(MODES)}")

    print(f"python {sys.version.split()[0]}; config {CONFIG.relative_to(ROOT)}; "
          f"timeout {args.timeout:g} s per replay")
    print("targets: 30-day trace < 1 CPU-s per mode; full log < 60 CPU-s conservative, "
          "< 30 CPU-s other modes, < 500 MB peak RSS")
    results = run_table(f"(a) {TRACE_30DAYS.name} (etc/sample.ini: 144 nodes, one VM per node)",
                        "30days", "sdsc-blue-30days", modes,
                        (f"tracefile.tracefile={TRACE_30DAYS}",), args.timeout)
    failed = not all(r.ok for r in results.values())
    if args.quick:
        return 1 if failed else 0

    full = args.full.resolve()
    if not full.is_file():
        print(f"\n(b), (c) skipped: full log not found at {full} (give it with --full PATH)")
        return 1 if failed else 0
    full_results = run_table(f"(b) {full.name} (queues 1-4, 8 processors per VM)", "full",
                             full.name.split(".swf")[0], modes,
                             FULL_SETTINGS + (f"tracefile.tracefile={full}",), args.timeout)
    failed |= not all(r.ok for r in full_results.values())
    if not args.skip_linearity:
        linearity(full, modes, args.timeout, full_results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
