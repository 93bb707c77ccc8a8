"""SWF jobs into leases: the conversion rules and filters of a replay (:func:`swf_leases`),
and the count of what was kept, filtered out and skipped (:class:`TraceStats`)."""

from __future__ import annotations

import collections
import math
from collections.abc import Iterator
from typing import Protocol

import attrs
import numpy as np

from lease_manager.errors import TraceError
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest


@attrs.frozen
class SWFConversion:
    """How SWF jobs become leases (the rules and filters of a replay)."""

    vm_vector: np.ndarray
    procs_per_vm: int = 1
    paradigm: str = "hpc"
    queues: tuple[int, ...] = ()
    window_start: float = 0
    window_length: float = math.inf
    max_jobs: int = 0
    rebase: bool = False


#: filters after which the reader stops: the rest of the trace is not read
AFTER_WINDOW = "after the time window"
BEYOND_MAX_JOBS = "beyond max-jobs"
STOPPING_FILTERS = (AFTER_WINDOW, BEYOND_MAX_JOBS)


@attrs.define
class TraceStats:
    """What the conversion kept, filtered out and skipped (skips are counted by reason).

    Every job read is counted once: ``read == replayed + sum(filtered) + sum(skipped)``. A
    stopping filter (after the window, beyond ``max-jobs``) counts the one job at which reading
    stopped; the jobs after it are not read.
    """

    read: int = 0
    replayed: int = 0
    filtered: collections.Counter = attrs.field(factory=collections.Counter)
    skipped: collections.Counter = attrs.field(factory=collections.Counter)
    bad_lines: int = 0

    def as_dict(self) -> dict:
        return {"jobs_read": self.read, "jobs_replayed": self.replayed,
                "jobs_filtered": dict(self.filtered), "jobs_skipped": dict(self.skipped),
                "bad_lines": self.bad_lines}


#: what the filters make of a job (its code, from :func:`_job_codes`), and where it is counted
(_LEASE, _QUEUE_NOT_SELECTED, _BEFORE_WINDOW, _AFTER_WINDOW, _NEGATIVE_RUN, _NO_PROCS,
 _NEGATIVE_SUBMIT) = range(7)
_FILTERED_FOR = {_QUEUE_NOT_SELECTED: "queue not selected",
                 _BEFORE_WINDOW: "before the time window"}
_SKIPPED_FOR = {_NEGATIVE_SUBMIT: "submit time < 0", _NEGATIVE_RUN: "run time < 0",
                _NO_PROCS: "no processor count"}


def _job_codes(values: np.ndarray, procs: np.ndarray, queues: np.ndarray | None,
               window_start: float, window_end: float) -> np.ndarray:
    """What the filters make of each job of ``values`` (one job per row, ``procs`` its
    processors): the first filter, in the order :func:`swf_leases` applies them, that takes
    it, or ``_LEASE``."""
    submit = values[:, 1]
    codes = np.full(len(values), _LEASE, dtype=np.int8)
    # the filters in reverse order: an earlier one overwrites what a later one set
    codes[procs <= 0] = _NO_PROCS
    codes[values[:, 3] < 0] = _NEGATIVE_RUN
    codes[submit >= window_end] = _AFTER_WINDOW
    codes[submit < window_start] = _BEFORE_WINDOW
    if queues is not None:
        codes[~np.isin(values[:, 14], queues)] = _QUEUE_NOT_SELECTED
    codes[submit < 0] = _NEGATIVE_SUBMIT   # (the first filter: an unknown time is in no window)
    return codes


class JobRows(Protocol):
    """Consecutive jobs read together (a :class:`~lease_manager.workload.swf.JobBlock`):
    ``values[i]`` holds the 18 fields of the job on line ``lines[i]``."""

    @property
    def values(self) -> np.ndarray: ...

    @property
    def lines(self) -> np.ndarray: ...


class JobSource(Protocol):
    """What :func:`swf_leases` reads jobs from (an :class:`~lease_manager.workload.swf.SWFReader`):
    blocks of jobs in file order, the file's name and the bad lines skipped."""

    path: str
    bad_lines: list[tuple[int, str]]

    def blocks(self) -> Iterator[JobRows]: ...


def swf_leases(reader: JobSource, conv: SWFConversion, stats: TraceStats | None = None,
               *, first_id: int = 1) -> Iterator[Lease]:
    """Turn the reader's jobs into best-effort leases, in submit order.

    Rules: jobs with submit time < 0 (unknown: they cannot be placed in time, and the submit
    order is checked over the others) or run time < 0 are skipped (counted); a run time of 0
    becomes 1 s; a requested time <= 0 means the run time; the actual duration is min(run
    time, requested time); VMs = ceil(processors / procs_per_vm) with processors = field 8 if
    > 0 else field 5; in the cloud paradigm the requested time is the actual duration.

    The filters are applied to a block of jobs at once (:func:`_job_codes`, :func:`_stop`),
    and the jobs are then counted and turned into leases one by one: :class:`TraceStats` is
    up to date whenever a lease is handed out.
    """
    stats = stats if stats is not None else TraceStats()
    window_start, window_end = conv.window_start, conv.window_start + conv.window_length
    queues = np.array(sorted(conv.queues), dtype=float) if conv.queues else None
    max_jobs, per_vm, vector, cloud = (conv.max_jobs, conv.procs_per_vm, conv.vm_vector,
                                       conv.paradigm == "cloud")
    path = reader.path
    counted_in = {**{code: (stats.filtered, key) for code, key in _FILTERED_FOR.items()},
                  **{code: (stats.skipped, key) for code, key in _SKIPPED_FOR.items()}}
    vm_requests: dict[int, VMRequest] = {}
    base: float | None = None
    last_submit, next_id, best_effort = -math.inf, first_id, LeaseType.BEST_EFFORT
    for block in reader.blocks():
        values = block.values
        procs = np.where(values[:, 7] > 0, values[:, 7], values[:, 4])
        codes = _job_codes(values, procs, queues, window_start, window_end)
        stop, why, before, newest = _stop(values[:, 1], codes, last_submit,
                                          max_jobs - stats.replayed if max_jobs else None)
        jobs = _kept_jobs(values, procs, block.lines, np.flatnonzero(codes[:stop] == _LEASE))
        for code in codes[:stop].tolist():
            stats.read += 1
            if code:
                counter, key = counted_in[code]
                counter[key] += 1
                continue
            number, job_submit, run_time, requested_time, job_procs, line = next(jobs)
            run = max(run_time, 1)
            requested = requested_time if requested_time > 0 else run
            actual = min(run, requested)
            if cloud:
                requested = actual
            vms = -(-job_procs // per_vm)
            request = vm_requests.get(vms)
            if request is None:
                request = vm_requests[vms] = VMRequest.uniform(vms, vector)
            if base is None:
                base = job_submit if conv.rebase else 0
            stats.replayed += 1
            yield Lease(next_id, best_effort, job_submit - base, request, requested, actual,
                        source_id=str(number), origin=f"{path}:{line}")
            next_id += 1
        if why is not None:
            _count_stop(stats, why, float(values[stop, 1]), before, path,
                        int(block.lines[stop]))
            break
        last_submit = newest
    stats.bad_lines = len(reader.bad_lines)


def _kept_jobs(values: np.ndarray, procs: np.ndarray, lines: np.ndarray, rows: np.ndarray
               ) -> Iterator[tuple[int, float, float, float, int, int]]:
    """The jobs of a block that become leases (``rows``): job number, submit time, run time,
    requested time, processors and line, each as a Python number."""
    kept_values = values[rows]
    return zip(kept_values[:, 0].astype(np.int64).tolist(), kept_values[:, 1].tolist(),
               kept_values[:, 3].tolist(), kept_values[:, 8].tolist(),
               procs[rows].astype(np.int64).tolist(), lines[rows].tolist())


def _count_stop(stats: TraceStats, why: str, submit: float, before: float, path: str,
                line: int) -> None:
    """Count the job at which reading stopped (:func:`_stop` says ``why``), or refuse the
    trace if it is out of submit order (the job's ``submit`` time comes after ``before``)."""
    stats.read += 1
    if why == "order":
        raise TraceError(f"jobs are not in submit order ({submit:g} after {before:g})",
                         file=path, line=line, field="field 2 (submit time)")
    stats.filtered[why] += 1   # jobs are in submit order: reading stops


def _stop(submit: np.ndarray, codes: np.ndarray, last_submit: float, room: int | None
          ) -> tuple[int, str | None, float, float]:
    """Where reading stops in a block of jobs (their ``submit`` times and filter ``codes``),
    and why (None: it does not): at the first job out of submit order (an error, "order"),
    after the window, or beyond max-jobs (``room`` leases left; None: no limit), whichever
    comes first; the order is that of the jobs whose submit time is known. Also the submit
    time the first job out of order comes after, and the block's last known submit time
    (both ``last_submit``, the previous blocks' last, where there is none)."""
    stop, why, before = len(codes), None, last_submit
    known = np.flatnonzero(submit >= 0)
    known_submit = submit[known]
    previous = np.concatenate(([last_submit], known_submit[:-1]))
    out_of_order = np.flatnonzero(known_submit < previous)
    if len(out_of_order):
        stop, why = int(known[out_of_order[0]]), "order"
        before = float(previous[out_of_order[0]])
    after = np.flatnonzero(codes[:stop] == _AFTER_WINDOW)
    if len(after):
        stop, why = int(after[0]), AFTER_WINDOW
    if room is not None:
        kept = np.flatnonzero(codes[:stop] == _LEASE)
        if len(kept) > room:
            stop, why = int(kept[room]), BEYOND_MAX_JOBS
    newest = float(known_submit[-1]) if len(known) else last_submit
    return stop, why, before, newest
