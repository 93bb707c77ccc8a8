"""The conversion of SWF jobs into leases works on blocks of jobs at once: it must give, lease
by lease, what applying the rules to one job at a time gives, with the same counts (in the
same order), at every lease handed out, and the same errors.

The reference below is the conversion as it was written before it took blocks: one job at a
time, in the order the README states the rules.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator

import numpy as np
import pytest

from lease_manager.errors import TraceError
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.workload import swf
from lease_manager.workload.swf import (
    AFTER_WINDOW,
    BEYOND_MAX_JOBS,
    SWFConversion,
    SWFReader,
    TraceStats,
    swf_leases,
)

VM = np.array([1.0, 1024.0])


def reference_leases(reader: SWFReader, conv: SWFConversion, stats: TraceStats
                     ) -> Iterator[Lease]:
    """The rules applied one job at a time."""
    window_start, window_end = conv.window_start, conv.window_start + conv.window_length
    queues = frozenset(conv.queues)
    vm_requests: dict[int, VMRequest] = {}
    base = None
    last_submit = -math.inf
    next_id = 1
    for job in reader.jobs():
        stats.read += 1
        if job.submit < 0:   # unknown: not placed in time, nor in the submit order
            stats.skipped["submit time < 0"] += 1
            continue
        if job.submit < last_submit:
            raise TraceError(f"jobs are not in submit order ({job.submit:g} after "
                             f"{last_submit:g})", file=reader.path, line=job.line,
                             field="field 2 (submit time)")
        last_submit = job.submit
        if queues and job.queue not in queues:
            stats.filtered["queue not selected"] += 1
            continue
        if job.submit < window_start:
            stats.filtered["before the time window"] += 1
            continue
        if job.submit >= window_end:
            stats.filtered[AFTER_WINDOW] += 1
            break
        if job.run_time < 0:
            stats.skipped["run time < 0"] += 1
            continue
        procs = job.requested_procs if job.requested_procs > 0 else job.allocated_procs
        if procs <= 0:
            stats.skipped["no processor count"] += 1
            continue
        if conv.max_jobs and stats.replayed >= conv.max_jobs:
            stats.filtered[BEYOND_MAX_JOBS] += 1
            break
        run = max(job.run_time, 1)
        requested = job.requested_time if job.requested_time > 0 else run
        actual = min(run, requested)
        if conv.paradigm == "cloud":
            requested = actual
        vms = -(-procs // conv.procs_per_vm)
        request = vm_requests.get(vms)
        if request is None:
            request = vm_requests[vms] = VMRequest.uniform(vms, conv.vm_vector)
        if base is None:
            base = job.submit if conv.rebase else 0
        stats.replayed += 1
        yield Lease(next_id, LeaseType.BEST_EFFORT, job.submit - base, request, requested,
                    actual, source_id=str(job.job), origin=f"{reader.path}:{job.line}")
        next_id += 1
    stats.bad_lines = len(reader.bad_lines)


def random_trace(rng: random.Random, jobs: int, *, disorder: bool, bad: bool) -> str:
    """SWF text: jobs with every kind of value the filters look at, between comments, blank
    lines and (if ``bad``) malformed lines; with ``disorder`` one job out of submit order.
    About one job in a hundred has an unknown submit time (-1)."""
    lines = ["; MaxNodes: 144", ""]
    submit = 0.0
    wrong = rng.randrange(jobs) if disorder else -1
    for n in range(1, jobs + 1):
        submit += rng.choice([0, 0, 1, 7, 60.5, 3600])
        at = submit - 500 if n == wrong else -1 if rng.random() < 0.01 else submit
        run = rng.choice([-1, 0, 0.5, 1, 2.25, 10, 3600, rng.uniform(0, 1e5)])
        alloc = rng.choice([-1, 0, 1, 8, 9, 64, 144])
        req_procs = rng.choice([-1, 0, 8, 17, 128])
        req_time = rng.choice([-1, 0, 0.5, 1, 300, 7200, rng.uniform(0, 1e5)])
        fields = [n, at, rng.choice([-1, 0, 5]), run, alloc, -1, -1, req_procs, req_time, -1,
                  1, rng.randrange(9), -1, -1, rng.choice([0, 1, 2, 3, 4, 5]), 1, -1, -1]
        lines.append(" ".join(str(f) for f in fields))
        if rng.random() < 0.002:
            lines.append(rng.choice([";", "; a comment", "", "; Note: a directive"]))
        if bad and rng.random() < 0.001:
            lines.append(rng.choice(["1 2 3", " ".join(["x"] * 18), " ".join(["1.5"] * 18),
                                     " ".join(["nan"] * 18)]))
    return "\n".join(lines) + "\n"


def outcome(leases: Iterator[Lease], stats: TraceStats, take: int | None = None) -> tuple:
    """The leases (every field the conversion sets, with the types of the numbers), the
    counts (in insertion order) and the error, after ``take`` leases or all of them."""
    got = []
    error = None
    try:
        for lease in itertools.islice(leases, take):
            got.append((lease.id, lease.type, lease.submit, lease.vms.count,
                        lease.vms.vectors.tolist(), lease.requested_duration,
                        type(lease.requested_duration), lease.actual_duration,
                        type(lease.actual_duration), lease.source_id, lease.origin))
    except TraceError as exc:
        error = str(exc)
    counts = (stats.read, stats.replayed, list(stats.filtered.items()),
              list(stats.skipped.items()), stats.bad_lines)
    return got, counts, error


CONVERSIONS = [
    {},
    {"queues": (1, 2, 3, 4), "procs_per_vm": 8},
    {"queues": (0, 5), "window_start": 2000.0, "window_length": 50_000.0, "rebase": True},
    {"max_jobs": 777, "paradigm": "cloud", "procs_per_vm": 4},
    {"queues": (2,), "max_jobs": 5000, "window_start": 100.0},
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("conv", CONVERSIONS, ids=lambda c: ",".join(c) or "plain")
def test_blocks_give_what_one_job_at_a_time_gives(tmp_path, seed, conv):
    rng = random.Random(seed)
    jobs = rng.choice([50, 3000, 9000])   # within one chunk of lines, and across chunks
    disorder, bad, skip = seed % 3 == 1, seed % 2 == 1, seed % 4 == 3
    path = tmp_path / "t.swf"
    path.write_text(random_trace(rng, jobs, disorder=disorder, bad=bad))
    conversion = SWFConversion(vm_vector=VM, **conv)
    for take in (None, 1, rng.randrange(1, 400)):
        ours, theirs = TraceStats(), TraceStats()
        got = outcome(swf_leases(SWFReader(path, skip_bad_lines=skip), conversion, ours),
                      ours, take)
        expected = outcome(reference_leases(SWFReader(path, skip_bad_lines=skip), conversion,
                                            theirs), theirs, take)
        assert got == expected


def test_the_traces_reach_every_filter_and_stop(tmp_path):
    """The random traces above do meet every rule (the comparison is not vacuous)."""
    rng = random.Random(0)
    path = tmp_path / "t.swf"
    path.write_text(random_trace(rng, 9000, disorder=False, bad=False))
    stats = TraceStats()
    list(swf_leases(SWFReader(path), SWFConversion(vm_vector=VM, queues=(1, 2, 3, 4),
                                                    window_start=100.0), stats))
    assert set(stats.filtered) == {"queue not selected", "before the time window"}
    assert set(stats.skipped) == {"submit time < 0", "run time < 0", "no processor count"}
    stats = TraceStats()
    list(swf_leases(SWFReader(path), SWFConversion(vm_vector=VM, window_length=1e5), stats))
    assert AFTER_WINDOW in stats.filtered
    stats = TraceStats()
    list(swf_leases(SWFReader(path), SWFConversion(vm_vector=VM, max_jobs=10), stats))
    assert stats.filtered[BEYOND_MAX_JOBS] == 1 and stats.replayed == 10


def test_a_block_may_be_a_single_job_between_refused_lines(tmp_path):
    """A line that the block's checks refuse goes through the one-line parser, which reports
    it; the jobs around it come in blocks of their own, in order."""
    good = [" ".join(str(f) for f in [n, n, 0, 10, 8] + [-1] * 13) for n in range(1, 6)]
    lines = [good[0], good[1], "3 3 0 10 8.5" + " -1" * 13, good[3], good[4]]
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    reader = SWFReader(path, skip_bad_lines=True)
    blocks = list(reader.blocks())
    assert [b.lines.tolist() for b in blocks] == [[1, 2], [4, 5]]
    assert reader.bad_lines == [(3, "field 5 (allocated processors): '8.5' is not an "
                                    "integer")]
    assert isinstance(blocks[0], swf.JobBlock)


def line_of(n: int, submit: float) -> str:
    return " ".join(str(f) for f in [n, submit, 0, 10, 8] + [-1] * 13)


def test_submit_order_is_checked_across_blocks(tmp_path):
    """A comment ends a block: the first job after it is compared with the last job before
    it (submits 0, 100, then 50: line 4 is out of order)."""
    path = tmp_path / "t.swf"
    path.write_text("\n".join([line_of(1, 0), line_of(2, 100), "; a comment",
                               line_of(3, 50)]) + "\n")
    stats = TraceStats()
    leases = swf_leases(SWFReader(path), SWFConversion(vm_vector=VM), stats)
    assert [lease.submit for lease in itertools.islice(leases, 2)] == [0, 100]
    with pytest.raises(TraceError, match=r"t.swf:4: field 2 \(submit time\): jobs are not "
                                         r"in submit order \(50 after 100\)"):
        next(leases)
    assert stats.read == 3


@pytest.mark.parametrize("comment", [False, True])
def test_max_jobs_stops_at_the_last_job_of_a_block(tmp_path, comment):
    """Three jobs, max-jobs 2: two leases, and the third job is the one reading stopped at,
    whether it ends a block or starts one."""
    lines = [line_of(1, 0), line_of(2, 5)] + (["; a comment"] if comment else []) + [
        line_of(3, 9)]
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    stats = TraceStats()
    leases = list(swf_leases(SWFReader(path), SWFConversion(vm_vector=VM, max_jobs=2), stats))
    assert [lease.source_id for lease in leases] == ["1", "2"]
    assert (stats.read, stats.replayed, dict(stats.filtered)) == (3, 2, {BEYOND_MAX_JOBS: 1})
