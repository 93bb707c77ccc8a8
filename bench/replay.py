"""Replay benchmark: CPU time and memory of trace replays, as ratios to a bare replayer.

Every figure is the whole process (start-up included), read from the operating system's
accounting of the finished child (CPU = user + system seconds; peak RSS of that process),
median of ``--repeat`` paired rounds (``--repeat-30days`` on the 30-day trace): in each round
the bare replayer (``bench/bare_replayer.py``, count-based FCFS, no validation) and then every
mode run once, in the same session. A ratio is the median of the rounds' ratios, each a
mode's CPU over the bare replayer's in that round, so it holds when the machine's speed
drifts; their range is printed beside it. Children run with bytecode caching (as an
installed package does) even if ``PYTHONDONTWRITEBYTECODE`` is set here.

Workloads and targets (issue 16):

(a) ``traces/sdsc-blue-30days.swf`` with ``etc/sample.ini`` (144 nodes, one VM per node):
    every mode at most 10x the bare replayer, start-up included; the FCFS replay
    (``backfilling = off``) must match the bare replayer lease by lease.
(b) the full SDSC Blue Horizon log (``SDSC-BLUE-2000-4.2-cln.swf.gz``, queues 1-4, 8
    processors per VM; ``--full PATH``, by default ``shared/traces/`` next to the
    repository): off and aggressive at most 10x, intermediate(4) 15x, conservative 30x.
(c) growth: the full log cut to its first 1/4 and 1/2 and all of its jobs; the exponent of
    CPU against leases (a least-squares slope of the logs) at most 1.1. For reference, the
    same exponent on the 30-day trace tiled 1, 2 and 4 times, a load that does not change
    (the log's later part is busier: longer queues cost more per lease there).
(d) ``--scale``: the 30-day jobs with node counts x70 tiled in time on 10,000 nodes
    (aggressive): CPU per lease at most 2x that at 144 nodes, and the peak memory of the
    200,000-lease replay at most 1.5 GB with invariants checked; ``--million`` adds the
    1,000,000-lease replay (under 4 GB). With ``when-planned`` the table is rows x 10,000
    nodes (the 200,000-lease replay takes minutes; the million, tens of them), which
    ``at-start`` avoids.

(e) ``--energy``: the 30-day trace with a ``[power]`` model whose idle nodes switch off after
    5 minutes (``bench/energy.py``'s model, boots of 60 s), in the default placement (``auto``,
    which counts it: at-start): every mode at most 15x the bare replayer.
    ``--energy-placements auto,when-planned`` adds Haizea's placement, in the same rounds.

(a) to (d) run with both placements (``--placement`` picks one, or ``auto``, the default
configuration's choice): ``when-planned`` (Haizea's: reservations mapped to nodes when
planned) and ``at-start`` (counted reservations, nodes chosen when a lease starts), which
``auto`` picks for these replays. FCFS is checked against the bare replayer lease by lease in
each placement.

Usage::

    python bench/replay.py --quick              # (a) only
    python bench/replay.py                      # (a), (b), (c): several minutes
    python bench/replay.py --scale [--million]  # (d): long
    python bench/replay.py --modes conservative --placement at-start --repeat 5
    python bench/replay.py --quick --placement auto --energy   # the default configuration
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "etc" / "sample.ini"
TRACE_30DAYS = ROOT / "traces" / "sdsc-blue-30days.swf"
FULL_LOG = ROOT.parent / "shared" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"
FULL_SETTINGS = ("tracefile.queues=1,2,3,4", "tracefile.procs-per-vm=8")
BARE = Path(__file__).resolve().parent / "bare_replayer.py"

#: mode name -> the --set overrides that select it
MODES: dict[str, tuple[str, ...]] = {
    "off": ("scheduling.backfilling=off",),
    "aggressive": ("scheduling.backfilling=aggressive",),
    "intermediate": ("scheduling.backfilling=intermediate",
                     "scheduling.backfilling-reservations=4"),
    "conservative": ("scheduling.backfilling=conservative",),
}
LABELS = {"intermediate": "intermediate(4)"}
PLACEMENTS = ("when-planned", "at-start")
#: (e): bench/energy.py's power model, idle nodes switched off after 5 minutes
ENERGY = ("power.pstates=2.4:100:200", "power.off-watts=5", "power.switch-on=60:150",
          "power.switch-off=30:120", "power.policy-node-power=switch-off-idle",
          "power.idle-timeout=300")
PLACEMENT_LABELS = {"at-start": "at start", "when-planned": "planned", "auto": "default"}


def variants(modes: list[str], placements: list[str]) -> list[tuple[str, str]]:
    """(mode, placement) pairs, placements within each mode."""
    return [(mode, placement) for mode in modes for placement in placements]


def settings_of(mode: str, placement: str) -> tuple[str, ...]:
    return MODES[mode] + (f"scheduling.placement={placement}",)


def label(mode: str, placement: str) -> str:
    return f"{LABELS.get(mode, mode)} {PLACEMENT_LABELS[placement]}"


#: the most a mode may cost, as a multiple of the bare replayer: workload -> backfilling
#: mode (None: any other) -> ratio
TARGET_RATIO: dict[str, dict[str | None, float]] = {
    "30days": {None: 10.0},
    "full": {"intermediate": 15.0, "conservative": 30.0, None: 10.0},
    "energy": {None: 15.0}}


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


class Measure:
    """One finished child process: CPU seconds, peak RSS (MB), whether it succeeded and, if
    not, the last line it printed on stderr."""

    def __init__(self, cpu: float, rss_mb: float, ok: bool, error: str) -> None:
        self.cpu, self.rss_mb, self.ok, self.error = cpu, rss_mb, ok, error


def run_child(cmd: list[str], timeout: float) -> Measure:
    """Start ``cmd`` and reap it with ``os.wait4`` (its own usage, not the children's sum)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env(), stdout=subprocess.DEVNULL,
                                stderr=err)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = status
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return Measure(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, ok,
                   "" if ok else (lines[-1] if lines else f"killed or status {status}"))


def simulate_cmd(out: Path, settings: tuple[str, ...], config: Path = CONFIG) -> list[str]:
    cmd = [sys.executable, "-m", "lease_manager.cli", "simulate", str(config), "--quiet",
           "--force", "--out", str(out)]
    for setting in settings:
        cmd += ["--set", setting]
    return cmd


def bare_cmd(trace: Path, slots: int, out: Path, procs_per_vm: int = 1, queues: str = "",
             max_jobs: int = 0) -> list[str]:
    return [sys.executable, str(BARE), str(trace), str(slots), str(out), "--procs-per-vm",
            str(procs_per_vm), "--queues", queues, "--max-jobs", str(max_jobs)]


def leases_of(out: Path) -> int:
    import json
    return int(json.loads((out / "summary.json").read_text())["leases_total"])


def fcfs_matches(bare_csv: Path, leases_csv: Path) -> str:
    """Compare the FCFS replay with the bare replayer lease by lease: '' or what differs."""
    import csv
    with open(bare_csv) as fh:
        bare = {r["job"]: (float(r["start"]), float(r["end"])) for r in csv.DictReader(fh)}
    with open(leases_csv) as fh:
        ours = {r["source_id"]: (float(r["start"] or "nan"), float(r["end"] or "nan"))
                for r in csv.DictReader(fh) if r["state"] == "done"}
    differ = [job for job, times in ours.items() if bare.get(job) != times]
    if len(ours) != len(bare) or differ:
        return (f"FCFS differs from the bare replayer: {len(ours)} leases done against "
                f"{len(bare)} jobs, {len(differ)} with other start or end times")
    return ""


def ratio_table(title: str, workload: str, trace: Path, slots: int,
                runs: list[tuple[str, str]], settings: tuple[str, ...], repeat: int,
                timeout: float, *, procs_per_vm: int = 1, queues: str = "",
                max_jobs: int = 0) -> None:
    """Paired rounds of the bare replayer and every (mode, placement); prints medians, and
    the median and range of each round's ratio (a mode's CPU over the bare replayer's in
    the same round: paired, so the machine's drift between rounds cancels)."""
    print(f"\n{title}")
    cpu: dict[tuple[str, str] | str, list[float]] = {"bare": [], **{v: [] for v in runs}}
    ratios: dict[tuple[str, str], list[float]] = {v: [] for v in runs}
    rss: dict[tuple[str, str], list[float]] = {v: [] for v in runs}
    errors: dict[tuple[str, str], str] = {}
    leases: dict[tuple[str, str], int] = {}
    fcfs: dict[str, str] = {}   # per placement: '' (not checked yet), 'ok' or what differs
    with tempfile.TemporaryDirectory(prefix="lm-bench-") as tmp:
        tmpdir = Path(tmp)
        for _ in range(repeat):
            m = run_child(bare_cmd(trace, slots, tmpdir / "bare.csv", procs_per_vm, queues,
                                   max_jobs), timeout)
            cpu["bare"].append(m.cpu)
            for variant in runs:
                out = tmpdir / "-".join(variant)
                m = run_child(simulate_cmd(out, settings + settings_of(*variant)), timeout)
                if not m.ok:
                    errors[variant] = m.error
                    continue
                cpu[variant].append(m.cpu)
                ratios[variant].append(m.cpu / cpu["bare"][-1])
                rss[variant].append(m.rss_mb)
                leases[variant] = leases_of(out)
                if variant[0] == "off" and not fcfs.get(variant[1]):
                    fcfs[variant[1]] = fcfs_matches(tmpdir / "bare.csv",
                                                    out / "leases.csv") or "ok"
    bare = statistics.median(cpu["bare"])
    print(f"bare replayer: {bare:.3f} CPU-s (median of {repeat})")
    head = (f"{'mode, placement':<26} {'leases':>8} {'CPU s':>8} {'x bare':>7} "
            f"{'range':>11} {'target':>7} {'ms/lease':>9} {'peak MB':>8}")
    print(head)
    print("-" * len(head))
    for variant in runs:
        name = label(*variant)
        if variant in errors:
            print(f"{name:<26} {errors[variant]}")
            continue
        c = statistics.median(cpu[variant])
        mode = variant[0]
        target = TARGET_RATIO[workload].get(mode, TARGET_RATIO[workload].get(None))
        ratio = statistics.median(ratios[variant])
        spread = f"{min(ratios[variant]):.1f}-{max(ratios[variant]):.1f}x"
        verdict = "" if target is None else ("ok" if ratio <= target else "MISSED")
        print(f"{name:<26} {leases[variant]:>8,} {c:>8.2f} {ratio:>6.1f}x {spread:>11} "
              f"{target or 0:>6.0f}x "
              f"{1000 * c / max(leases[variant], 1):>9.3f} {statistics.median(rss[variant]):>8.1f}"
              f"  {verdict}", flush=True)
    for placement, verdict in fcfs.items():
        print(f"FCFS ({placement}) lease by lease against the bare replayer: {verdict}")


def startup(repeat: int, timeout: float) -> None:
    """A one-lease replay: what starting a run costs."""
    with tempfile.TemporaryDirectory(prefix="lm-bench-") as tmp:
        one = Path(tmp) / "one.swf"
        lines = TRACE_30DAYS.read_text().splitlines()
        first = next(line for line in lines if line.strip() and not line.startswith(";"))
        one.write_text(first + "\n")
        runs = [run_child(simulate_cmd(Path(tmp) / "out", (f"tracefile.tracefile={one}",)),
                          timeout) for _ in range(repeat)]
    if not all(r.ok for r in runs):
        print(f"\nstart-up: {runs[0].error}")
        return
    print(f"\nstart-up (a one-lease replay): {statistics.median(r.cpu for r in runs):.3f} "
          f"CPU-s, {statistics.median(r.rss_mb for r in runs):.1f} MB peak")


def growth(full: Path, runs: list[tuple[str, str]], repeat: int, timeout: float) -> None:
    """(c): CPU against leases over 1/4, 1/2 and all of the full log; the exponent."""
    total = sum(1 for _ in __import__("bare_replayer").jobs(str(full), 8, {1, 2, 3, 4}, 0))
    cuts = [(name, FULL_SETTINGS + (f"tracefile.tracefile={full}",
                                    f"tracefile.max-jobs={max_jobs}"))
            for name, max_jobs in (("1/4", total // 4), ("1/2", total // 2), ("all", 0))]
    print(f"\n(c) growth: the full log cut to its first 1/4, 1/2 and all of its {total:,} jobs")
    exponent_table(cuts, runs, repeat, timeout, target=1.1)


def stationary_growth(runs: list[tuple[str, str]], repeat: int, timeout: float) -> None:
    """(c), for reference: the 30-day trace tiled 1, 2 and 4 times (each copy 30 days after
    the one before), a load that does not change along the trace. The log's later part is
    busier, with longer queues; this tells the algorithm's growth from the workload's."""
    with tempfile.TemporaryDirectory(prefix="lm-bench-") as tmp:
        cuts = []
        for copies in (1, 2, 4):
            trace = Path(tmp) / f"tiled-{copies}.swf"
            tiled_trace(trace, copies, 1)
            cuts.append((f"x{copies}", (f"tracefile.tracefile={trace}",)))
        print("\n(c) for reference, a steady load: the 30-day trace tiled 1, 2 and 4 times")
        exponent_table(cuts, runs, repeat, timeout, target=None)


def exponent_table(cuts: Sequence[tuple[str, Sequence[str]]], runs: list[tuple[str, str]],
                   repeat: int, timeout: float, target: float | None) -> None:
    """CPU of each variant on each workload of ``cuts`` (name, settings) and the exponent of
    CPU against leases (a least-squares slope of the logs)."""
    import numpy as np

    head = f"{'mode, placement':<26} " + " ".join(f"{name + ' CPU s':>11}" for name, _ in cuts) \
        + f" {'exponent':>9}"
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory(prefix="lm-bench-") as tmp:
        for variant in runs:
            sizes, cpus = [], []
            for name, settings in cuts:
                out = Path(tmp) / f"{'-'.join(variant)}-{name.replace('/', '')}"
                measured = [run_child(simulate_cmd(out, (*settings, *settings_of(*variant))),
                                      timeout) for _ in range(repeat)]
                if not all(r.ok for r in measured):
                    print(f"{label(*variant):<26} {name}: {measured[0].error}")
                    break
                sizes.append(leases_of(out))
                cpus.append(statistics.median(r.cpu for r in measured))
            if len(cpus) == len(cuts):
                slope = float(np.polyfit(np.log(sizes), np.log(cpus), 1)[0])
                verdict = "" if target is None else ("ok" if slope <= target else "MISSED")
                print(f"{label(*variant):<26} " + " ".join(f"{c:>11.2f}" for c in cpus)
                      + f" {slope:>9.2f}  {verdict}", flush=True)


def tiled_trace(path: Path, copies: int, scale: int) -> None:
    """The 30-day jobs with processor counts x ``scale``, ``copies`` times one after another
    (each copy 30 days later): the scale workload of issue 16."""
    jobs = [line.split() for line in TRACE_30DAYS.read_text().splitlines()
            if line.strip() and not line.startswith(";")]
    span = 30 * 86400
    number = 0
    with open(path, "w") as fh:
        fh.write(f"; scale workload: sdsc-blue-30days, processors x{scale}, {copies} copies\n")
        for copy in range(copies):
            for f in jobs:
                number += 1
                g = list(f)
                g[0] = str(number)
                g[1] = str(int(float(f[1])) + copy * span)
                for i in (4, 7):
                    if int(g[i]) > 0:
                        g[i] = str(int(g[i]) * scale)
                fh.write(" ".join(g) + "\n")


def scale(repeat: int, timeout: float, million: bool, placements: Sequence[str]) -> None:
    """(d): 10,000 nodes against 144, and the memory of 200,000 (and 1,000,000) leases."""
    print("\n(d) scale: the 30-day jobs, processors x70, tiled in time, on 10,000 nodes "
          "(aggressive)")
    for placement in placements:
        with tempfile.TemporaryDirectory(prefix="lm-bench-") as tmp:
            scale_one(placement, Path(tmp), repeat, timeout, million)


def scale_one(placement: str, tmpdir: Path, repeat: int, timeout: float, million: bool) -> None:
    """:func:`scale` for one placement, its files in ``tmpdir``."""
    name = label("aggressive", placement)
    small_settings = settings_of("aggressive", placement)
    settings = small_settings + ("simulation.resources=10000 CPU:1 Memory:1024",)
    small = [run_child(simulate_cmd(tmpdir / "small", small_settings), timeout)
             for _ in range(repeat)]
    if not all(r.ok for r in small):
        print(f"{name}, 144 nodes: {next(r.error for r in small if not r.ok)}")
        return
    per_small = statistics.median(r.cpu for r in small) / leases_of(tmpdir / "small")
    trace4 = tmpdir / "x70-4.swf"
    tiled_trace(trace4, 4, 70)
    big = [run_child(simulate_cmd(tmpdir / "big", settings + (
        f"tracefile.tracefile={trace4}",)), timeout) for _ in range(repeat)]
    if not all(r.ok for r in big):
        print(f"{name}, 10,000 nodes: {next(r.error for r in big if not r.ok)}")
        return
    per_big = statistics.median(r.cpu for r in big) / leases_of(tmpdir / "big")
    print(f"{name}: CPU per lease: {1000 * per_small:.3f} ms at 144 nodes (30-day trace), "
          f"{1000 * per_big:.3f} ms at 10,000 nodes ({leases_of(tmpdir / 'big'):,} leases): "
          f"{per_big / per_small:.2f}x (target 2x: "
          f"{'ok' if per_big <= 2 * per_small else 'MISSED'})", flush=True)
    for copies, limit in ((40, 1536.0),) + (((200, 4096.0),) if million else ()):
        trace = tmpdir / f"x70-{copies}.swf"
        tiled_trace(trace, copies, 70)
        m = run_child(simulate_cmd(tmpdir / f"mem{copies}", settings + (
            f"tracefile.tracefile={trace}",)), timeout)
        if not m.ok:
            print(f"{name}, {copies} copies: {m.error}")
            continue
        n = leases_of(tmpdir / f"mem{copies}")
        print(f"{name}: {n:,} leases on 10,000 nodes: {m.cpu:.1f} CPU-s, peak "
              f"{m.rss_mb:,.0f} MB (target {limit:,.0f} MB: "
              f"{'ok' if m.rss_mb <= limit else 'MISSED'})", flush=True)
        trace.unlink()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated backfilling modes (default: {','.join(MODES)})")
    parser.add_argument("--placement", default="both", choices=PLACEMENTS + ("auto", "both"),
                        help="reservations mapped when planned, at start, auto's choice (the "
                             "default configuration), or both named placements (default)")
    parser.add_argument("--energy", action="store_true",
                        help="(e): the 30-day trace with idle nodes switched off, in the "
                             "default placement")
    parser.add_argument("--energy-placements", default="auto",
                        help="with --energy: comma-separated placements among auto, "
                             "at-start, when-planned (default: auto)")
    parser.add_argument("--quick", action="store_true", help="only the 30-day trace")
    parser.add_argument("--full", type=Path, default=FULL_LOG,
                        help=f"the full SDSC Blue log (default: {FULL_LOG})")
    parser.add_argument("--skip-growth", action="store_true", help="skip (c)")
    parser.add_argument("--scale", action="store_true", help="run (d) (long)")
    parser.add_argument("--million", action="store_true", help="with --scale: 1,000,000 leases")
    parser.add_argument("--repeat", type=int, default=3, help="paired rounds (default 3)")
    parser.add_argument("--repeat-30days", type=int, default=9,
                        help="paired rounds on the 30-day trace, where a replay takes well "
                             "under a second and start-up is much of it (default 9)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds allowed per replay (default: 1800)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        parser.error(f"unknown mode(s) {', '.join(unknown) or '(none)'}; "
                     f"choose among {', '.join(MODES)}")
    sys.path.insert(0, str(BARE.parent))
    if args.repeat < 1 or args.repeat_30days < 1:
        parser.error("--repeat and --repeat-30days need at least one round")
    print(f"python {sys.version.split()[0]}; medians of {args.repeat_30days} paired rounds "
          f"on the 30-day trace, {args.repeat} elsewhere; whole processes (start-up included)")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("(PYTHONDONTWRITEBYTECODE is set here; the children run without it)")
    placements = list(PLACEMENTS) if args.placement == "both" else [args.placement]
    energy_placements = [p.strip() for p in args.energy_placements.split(",") if p.strip()]
    if not energy_placements or any(p not in PLACEMENT_LABELS for p in energy_placements):
        parser.error(f"--energy-placements: choose among {', '.join(PLACEMENT_LABELS)}")
    runs = variants(modes, placements)
    startup(args.repeat, args.timeout)
    ratio_table(f"(a) {TRACE_30DAYS.name} (etc/sample.ini: 144 nodes, one VM per node)",
                "30days", TRACE_30DAYS, 144, runs, (f"tracefile.tracefile={TRACE_30DAYS}",),
                args.repeat_30days, args.timeout)
    if not args.quick:
        full_log(args, runs)
    if args.scale:
        scale(1, args.timeout, args.million, placements)
    if args.energy:
        ratio_table(f"(e) {TRACE_30DAYS.name} with [power] switch-off-idle (5 min), default "
                    f"placement", "energy", TRACE_30DAYS, 144, variants(modes, energy_placements),
                    ENERGY + (f"tracefile.tracefile={TRACE_30DAYS}",), args.repeat_30days,
                    args.timeout)
    return 0


def full_log(args: argparse.Namespace, runs: list[tuple[str, str]]) -> None:
    """(b) and, unless skipped, (c): the full SDSC Blue log, if it is there."""
    full = args.full.resolve()
    if not full.is_file():
        print(f"\n(b), (c) skipped: full log not found at {full} (give it with --full)")
        return
    ratio_table(f"(b) {full.name} (queues 1-4, 8 processors per VM)", "full", full, 144,
                runs, FULL_SETTINGS + (f"tracefile.tracefile={full}",), args.repeat,
                args.timeout, procs_per_vm=8, queues="1,2,3,4")
    if not args.skip_growth:
        growth(full, runs, 1, args.timeout)
        stationary_growth(runs, 1, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
