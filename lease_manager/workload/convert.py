"""Converting workloads between SWF and LWF, and merging workloads from several sources.

- :func:`swf_to_lwf` applies the SWF replay rules
  (:func:`lease_manager.workload.swf.swf_leases`: the same filters, skips and durations as a
  replay) and writes the leases as LWF, so that replaying the LWF file gives exactly the
  leases replaying the SWF file gives.
- :func:`lwf_to_swf` writes what SWF can express: best-effort leases of one VM size. Advance
  reservations, immediate and deadline leases, and leases with VMs of several sizes are skipped
  and counted (or, with ``strict=True``, stop the conversion naming the lease's line).
- :func:`merge_workloads` interleaves leases from several sources by submit time (an SWF trace
  plus an LWF file of injected advance reservations, say), renumbering them.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs
import numpy as np

from lease_manager.errors import TraceError
from lease_manager.kernel.lease import Lease, LeaseType
from lease_manager.kernel.resources import NodeSet, ResourceTypes
from lease_manager.workload.lwf import LWFWorkload, read_lwf
from lease_manager.workload.lwf_writer import write_lwf
from lease_manager.workload.swf import SWFConversion, SWFReader, TraceStats, swf_leases


# ----------------------------------------------------------------------------- SWF -> LWF
def swf_to_lwf(swf_path: str | Path, lwf_path: str | Path, conv: SWFConversion,
               types: ResourceTypes, *, skip_bad_lines: bool = False,
               site: NodeSet | None = None, name: str | None = None) -> TraceStats:
    """Convert an SWF trace into an LWF file with the replay's conversion rules.

    Each job the replay would keep becomes a best-effort lease: ``conv.vm_vector`` (over
    ``types``) per VM, the requested time as ``<duration>`` and the actual duration as
    ``<realduration>``, the job number as the lease id. ``site``, if given, is written as the
    file's ``<site>``. Returns the reader's statistics (jobs read, replayed, filtered, skipped),
    which are also recorded in a comment at the end of the file.
    """
    vector = np.asarray(conv.vm_vector, dtype=float)
    if vector.shape != (len(types),):
        raise ValueError(f"the VM vector has {vector.size} amounts; the resource types are "
                         f"{', '.join(types.names)}")
    stats = TraceStats()
    reader = SWFReader(swf_path, skip_bad_lines=skip_bad_lines)
    leases = swf_leases(reader, conv, stats)
    window = ("" if conv.window_start == 0 and math.isinf(conv.window_length) else
              f", window [{conv.window_start:g}, {conv.window_start + conv.window_length:g}) s")
    description = (f"Converted from the SWF trace {Path(swf_path).name} by lease_manager: "
                   f"one VM ({types.format(vector)}) per {conv.procs_per_vm} processor(s), "
                   f"{conv.paradigm} paradigm{window}"
                   f"{', rebased to the first job' if conv.rebase else ''}"
                   f"{f', at most {conv.max_jobs} jobs' if conv.max_jobs else ''}.")
    # the statistics are complete once every lease is written: a comment after the requests
    write_lwf(lwf_path, leases, types=types, site=site,
              name=name if name is not None else Path(swf_path).stem,
              description=description, comment=lambda: _stats_comment(stats))
    return stats


def _stats_comment(stats: TraceStats) -> str:
    parts = [f"SWF jobs read: {stats.read}", f"leases written: {stats.replayed}"]
    if stats.filtered:
        parts.append("filtered out: " + ", ".join(f"{k}: {v}" for k, v in stats.filtered.items()))
    if stats.skipped:
        parts.append("skipped: " + ", ".join(f"{k}: {v}" for k, v in stats.skipped.items()))
    if stats.bad_lines:
        parts.append(f"malformed lines skipped: {stats.bad_lines}")
    return "; ".join(parts)


# ----------------------------------------------------------------------------- LWF -> SWF
@attrs.define
class ConversionStats:
    """What :func:`lwf_to_swf` converted, and what it skipped (counted by reason)."""

    read: int = 0
    converted: int = 0
    skipped: collections.Counter = attrs.field(factory=collections.Counter)

    def as_dict(self) -> dict:
        return {"leases_read": self.read, "jobs_written": self.converted,
                "leases_skipped": dict(self.skipped)}


def swf_reason(lease: Lease, vm_vector: np.ndarray | None = None) -> str:
    """Why ``lease`` cannot be written as an SWF job (empty if it can)."""
    if lease.type is not LeaseType.BEST_EFFORT:
        return f"{lease.type.value} lease"
    if len(lease.vms.counts) != 1:
        return "VMs of several sizes"
    if math.isinf(lease.requested_duration):
        return "unlimited duration"
    if vm_vector is not None and not np.allclose(lease.vms.vectors[0], vm_vector):
        return "VM size differs from the given VM vector"
    return ""


def _num(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else np.format_float_positional(x, trim="-")


# Longer than ~50 lines on purpose: one pass over the leases, writing each SWF line beside the
# reason a lease is skipped.
def lwf_to_swf(lwf_path: str | Path, swf_path: str | Path, types: ResourceTypes | None = None,
               procs_per_vm: int = 1, *, strict: bool = False,
               vm_vector: np.ndarray | None = None) -> ConversionStats:
    """Write the leases of an LWF file that SWF can express as an SWF trace.

    Best-effort leases with one group of VMs become jobs: processors (fields 5 and 8) = VMs x
    ``procs_per_vm``, run time = the real duration (the requested duration when the file gives
    none), requested time = the requested duration, submit time = arrival; jobs are numbered
    1, 2, ... in arrival order; unknown fields are -1. Replaying the SWF file with
    ``[tracefile] procs-per-vm`` = ``procs_per_vm`` and ``vm-resources`` = the leases' VM
    size gives the same leases back. Other leases (advance reservations, immediate and
    deadline leases, VMs of several sizes, unlimited durations and, if ``vm_vector`` is given,
    VMs of another size) are skipped and counted by reason, or with ``strict`` raise a
    :class:`TraceError` naming the lease's line. A header comment records the conversion.
    """
    if procs_per_vm < 1:
        raise ValueError("procs_per_vm must be at least 1")
    workload = read_lwf(lwf_path, types)
    stats = ConversionStats()
    vector = None if vm_vector is None else np.asarray(vm_vector, dtype=float)
    rows = []
    for lease in workload.leases:
        stats.read += 1
        reason = swf_reason(lease, vector)
        if reason:
            if strict:
                file, _, line = (lease.origin or "").rpartition(":")
                raise TraceError(f"lease {lease.source_id or lease.id} cannot be expressed in "
                                 f"SWF ({reason}): SWF holds best-effort leases of one VM size",
                                 file=file or str(lwf_path),
                                 line=int(line) if line.isdigit() else None)
            stats.skipped[reason] += 1
            continue
        stats.converted += 1
        procs = lease.vms.count * procs_per_vm
        run = lease.actual_duration if lease.actual_duration is not None else \
            lease.requested_duration
        fields = [stats.converted, _num(lease.submit), -1, _num(run), procs, -1, -1, procs,
                  _num(lease.requested_duration), -1, -1, -1, -1, -1, -1, -1, -1, -1]
        rows.append(" ".join(map(str, fields)))
    _write_swf(Path(swf_path), _swf_header(workload, Path(lwf_path).name, procs_per_vm, stats),
               rows)
    return stats


def _swf_header(workload: LWFWorkload, lwf_name: str, procs_per_vm: int,
                stats: ConversionStats) -> list[str]:
    """The header comments of an SWF file converted from an LWF workload: the conversion's
    rules, what it skipped and the directives."""
    header = [
        "; Version: 2.2",
        f"; Computer: lease_manager (converted from the LWF workload {workload.name or '-'})",
        f"; Conversion: {lwf_name} -> SWF by lease_manager lwf_to_swf: best-effort "
        f"leases of one VM size; processors = VMs x {procs_per_vm}; run time = real duration "
        f"(else the requested duration)",
    ]
    if stats.skipped:
        header.append(f"; Note: {sum(stats.skipped.values())} of {stats.read} leases could not "
                      f"be expressed in SWF and were skipped: "
                      + ", ".join(f"{k}: {v}" for k, v in sorted(stats.skipped.items())))
    header += [f"; MaxJobs: {stats.converted}", f"; MaxRecords: {stats.converted}"]
    if workload.site is not None:
        header.append(f"; MaxNodes: {workload.site.count}")
    header.append(";")
    return header


def _write_swf(path: Path, header: list[str], rows: list[str]) -> None:
    """Write an SWF file's header and job rows, whole or not at all (through a temporary
    file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("\n".join(header) + "\n")
            for row in rows:
                fh.write(row + "\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -------------------------------------------------------------------------------- merging
def merge_workloads(*sources: Iterable[Lease], first_id: int = 1) -> Iterator[Lease]:
    """Interleave leases from several sources by submit time and renumber them.

    Each source must be in submit order (a :class:`TraceError` naming the lease's origin
    otherwise). Ties keep source order: a lease of the first source comes before one of the
    second submitted at the same time. The leases' ``id`` is set to ``first_id, first_id + 1,
    ...`` in the merged order (``source_id`` and ``origin`` still say where each came from).
    Streams: sources are consumed only as far as the merged output is.
    """
    numbers = itertools.count(first_id)
    for lease in heapq.merge(*(_in_order(source) for source in sources),
                             key=lambda lease: lease.submit):
        lease.id = next(numbers)
        yield lease


def _in_order(source: Iterable[Lease]) -> Iterator[Lease]:
    last = -math.inf
    for lease in source:
        if lease.submit < last:
            file, _, line = (lease.origin or "").rpartition(":")
            raise TraceError(f"leases to merge are not in submit order ({lease.submit:g} after "
                             f"{last:g})", file=file or None,
                             line=int(line) if line.isdigit() else None)
        last = lease.submit
        yield lease
