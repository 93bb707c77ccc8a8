"""What checking a plugin policy's answers costs a replay (issue 40, item 5).

Replays the 30-day trace (``etc/sample.ini``, aggressive backfilling unless ``--set`` says
otherwise) with greedy host selection, recording every ``order_hosts`` answer; then passes the
recorded answers through the host-selection check (:mod:`lease_manager.policies.answers`) in
a loop, minus the same loop unchecked, and prints that cost as a share of the replay's CPU
time, the reference measured in the same run (median of ``--repeat`` loops). Built-in
policies are not checked; a plugin's host-selection policy making the same answers pays this.
Usage: ``python bench/policy_checks.py [--set section.option=value ...] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from lease_manager.policies.answers import Guard
from lease_manager.run import load_run

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    run = load_run(ROOT / "etc" / "sample.ini",
                   [f"tracefile.tracefile={ROOT / 'traces' / 'sdsc-blue-30days.swf'}",
                    "scheduling.backfilling=aggressive", *args.set])
    policy = run.policies["host-selection"]
    order_hosts = policy.order_hosts
    answers: list[tuple[Any, Any]] = []

    def recording(lease: Any, start: float, end: float, table: Any) -> Any:
        answer = order_hosts(lease, start, end, table)
        answers.append((lease, answer))
        return answer

    object.__setattr__(policy, "order_hosts", recording)
    cpu = time.process_time()
    run.run()
    replay = time.process_time() - cpu
    pending: Any = iter(())

    class Replayed:
        """A policy answering the recorded answers again, in order."""

        name = "recorded"

        def order_hosts(self, lease: Any, start: float, end: float, table: Any) -> Any:
            return next(pending)

    plain = Replayed()
    checked = Guard(plain, "host-selection", str).host_selection()["order_hosts"]
    table = run.ctx.table
    costs = []
    for _ in range(args.repeat):
        timings = []
        for call in (plain.order_hosts, checked):
            pending = iter([answer for _, answer in answers])
            cpu = time.process_time()
            for lease, _ in answers:
                call(lease, 0.0, 1.0, table)
            timings.append(time.process_time() - cpu)
        costs.append(timings[1] - timings[0])
    cost = statistics.median(costs)
    print(f"{len(answers):,} order_hosts answers in a {replay:.3f} CPU-s replay; checking them: "
          f"{cost * 1e3:.1f} ms (median of {args.repeat}; {cost / max(len(answers), 1) * 1e6:.1f}"
          f" us each), {100 * cost / replay:.2f}% of the replay")


if __name__ == "__main__":
    main()
