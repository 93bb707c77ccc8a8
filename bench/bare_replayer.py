"""The reference of the replay benchmarks: a bare count-based FCFS replayer.

It reads an SWF trace with the replay's conversion rules (jobs with a negative run time
skipped, run time at least 1 s, requested time <= 0 meaning the run time, VMs = ceil(requested
processors, else allocated, / procs-per-VM), queues and max-jobs filters), keeps the running
jobs in a heap by end time and starts jobs first come first served while the site has room
for their VMs: what a replay with ``backfilling = off`` decides on a site of identical nodes
hosting ``slots`` VMs in all. It writes ``job,submit,start,end`` per job. No validation, no
leases, no plugins: the least a replay can do, measured in the same run as lease_manager.

Usage: ``python bench/bare_replayer.py TRACE SLOTS OUT.csv [--procs-per-vm N] [--queues
1,2] [--max-jobs N]``.
"""

from __future__ import annotations

import argparse
import gzip
import heapq
from collections import deque


def jobs(path: str, procs_per_vm: int, queues: set[int], max_jobs: int):
    """(job, submit, VMs, actual run time) of the jobs a replay keeps, in submit order."""
    opener = gzip.open if path.endswith(".gz") else open
    kept = 0
    with opener(path, "rt") as fh:
        for line in fh:
            f = line.split()
            if not f or f[0].startswith(";"):
                continue
            if queues and int(f[14]) not in queues:
                continue
            run = float(f[3])
            procs = int(f[7]) if int(f[7]) > 0 else int(f[4])
            if run < 0 or procs <= 0:
                continue
            if max_jobs and kept >= max_jobs:
                return
            kept += 1
            run = max(run, 1.0)
            requested = float(f[8]) if float(f[8]) > 0 else run
            yield f[0], float(f[1]), -(-procs // procs_per_vm), min(run, requested)


def replay(path: str, slots: int, out: str, procs_per_vm: int = 1,
           queues: set[int] | None = None, max_jobs: int = 0) -> int:
    """Replay FCFS; returns the number of jobs replayed."""
    free = slots
    running: list[tuple[float, int]] = []   # (end, VMs)
    queue: deque = deque()
    done = 0
    with open(out, "w") as sink:
        sink.write("job,submit,start,end\n")

        def start_head(now: float) -> None:
            nonlocal free, done
            while queue and queue[0][2] <= free:
                job, submit, vms, run = queue.popleft()
                free -= vms
                heapq.heappush(running, (now + run, vms))
                sink.write(f"{job},{submit!r},{now!r},{now + run!r}\n")
                done += 1

        for job in jobs(path, procs_per_vm, queues or set(), max_jobs):
            if job[2] > slots:   # larger than the site: rejected
                continue
            submit = job[1]
            while running and running[0][0] <= submit:   # ends up to the arrival, in order
                now = running[0][0]
                while running and running[0][0] == now:
                    free += heapq.heappop(running)[1]
                start_head(now)
            queue.append(job)
            start_head(submit)
        while running:
            now = running[0][0]
            while running and running[0][0] == now:
                free += heapq.heappop(running)[1]
            start_head(now)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("slots", type=int, help="VMs the site hosts in all")
    parser.add_argument("out")
    parser.add_argument("--procs-per-vm", type=int, default=1)
    parser.add_argument("--queues", default="")
    parser.add_argument("--max-jobs", type=int, default=0)
    args = parser.parse_args()
    queues = {int(q) for q in args.queues.split(",") if q}
    replay(args.trace, args.slots, args.out, args.procs_per_vm, queues, args.max_jobs)


if __name__ == "__main__":
    main()
