"""What the decision log costs: the 30-day trace with it off (the default) and on, in paired
rounds with the bare replayer, for each backfilling mode.

Off, no implementation of the log's hooks is registered and the scheduler skips hooks that
nobody implements, so the off run is the default replay; the table shows its ratio to the
bare replayer beside the same run with ``[accounting] decision-log = yes``.

    python bench/decision_log.py                # 3 paired rounds, EASY and conservative
    python bench/decision_log.py --repeat 5 --modes off,aggressive,conservative
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay import MODES, TRACE_30DAYS, bare_cmd, run_child, simulate_cmd  # noqa: E402

LOG_ON = ("accounting.decision-log=yes",)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", default="aggressive,conservative")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"--modes: unknown {', '.join(unknown)}; choose among {', '.join(MODES)}")
    cpu: dict[str, list[float]] = {"bare": []}
    with tempfile.TemporaryDirectory(prefix="lm-bench-") as tmp:
        tmpdir = Path(tmp)
        for _ in range(args.repeat):
            cpu["bare"].append(run_child(bare_cmd(TRACE_30DAYS, 144, tmpdir / "bare.csv"),
                                         args.timeout).cpu)
            for mode in modes:
                for log, extra in (("off", ()), ("on", LOG_ON)):
                    m = run_child(simulate_cmd(tmpdir / f"{mode}-{log}", MODES[mode] + extra),
                                  args.timeout)
                    if not m.ok:
                        print(f"{mode}, log {log}: {m.error}")
                        return 1
                    cpu.setdefault(f"{mode} {log}", []).append(m.cpu)
    bare = cpu["bare"]
    print(f"bare replayer: {statistics.median(bare):.3f} CPU-s (median of {args.repeat})")
    print(f"{'mode':<14} {'log off':>9} {'x bare':>7} {'log on':>9} {'x bare':>7} {'on/off':>7}")
    for mode in modes:
        off, on = cpu[f"{mode} off"], cpu[f"{mode} on"]
        ratio_off = statistics.median(o / b for o, b in zip(off, bare))
        ratio_on = statistics.median(o / b for o, b in zip(on, bare))
        on_off = statistics.median(n / f for n, f in zip(on, off))
        print(f"{mode:<14} {statistics.median(off):>9.3f} {ratio_off:>6.1f}x "
              f"{statistics.median(on):>9.3f} {ratio_on:>6.1f}x {on_off:>6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
