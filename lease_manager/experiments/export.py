"""``lease-manager export RUN-DIR --format batsim|swf``: a run's schedule for the field's tools.

- ``batsim``: Batsim's ``jobs.csv`` (the columns Batsim 4 writes and evalys reads). Batsim's
  resources are machines, so ``allocated_resources`` is the interval set of the *nodes* a
  lease ran on (``0-3 7``) and ``requested_number_of_resources`` its number of VMs (one per
  node in the HPC paradigm). States map as done -> ``COMPLETED_SUCCESSFULLY``, failed ->
  ``COMPLETED_FAILED``, cancelled after its start -> ``COMPLETED_KILLED``, rejected or cancelled
  before it started -> ``REJECTED`` (its times empty, as Batsim writes them).
  ``consumed_energy`` is the lease's energy with a ``[power]`` model, else empty.
- ``swf``: the simulated schedule in the Standard Workload Format: submit, wait and run times
  as simulated, allocated processors, status (1 done, 0 failed, 5 cancelled or rejected), and,
  when the run's trace was an SWF file that is still there unchanged, the original job's other
  fields (user, group, queue, memory...) and header.

A lease still running (or still waiting) when the run stopped has no final state: Batsim never
writes such a job, so neither export does; the command says how many it left out.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.gantt import blocks, number, read_leases

FORMATS = ("batsim", "swf")
BATSIM_COLUMNS = ("job_id", "workload_name", "profile", "submission_time",
                  "requested_number_of_resources", "requested_time", "success", "final_state",
                  "starting_time", "execution_time", "finish_time", "waiting_time",
                  "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
                  "metadata")
#: header directives of the original SWF trace that still describe the schedule
SWF_KEPT_DIRECTIVES = ("Computer", "Installation", "Acknowledge", "Information",
                       "TimeZoneString", "MaxQueues", "Queues", "Queue", "MaxPartitions",
                       "Partitions", "Partition")


def _final(row: dict[str, str]) -> str | None:
    """The lease's Batsim final state, or None for a lease with none (still running)."""
    state, started = row.get("state", ""), number(row.get("start")) is not None
    ended = number(row.get("end")) is not None
    if state == "done":
        return "COMPLETED_SUCCESSFULLY"
    if state == "failed" and started and ended:
        return "COMPLETED_FAILED"
    if state == "cancelled" and started and ended:
        return "COMPLETED_KILLED"
    if state in ("rejected", "cancelled", "failed"):
        return "REJECTED"
    return None


def _text(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() else repr(float(x))


def interval_set(nodes: list[int]) -> str:
    """Node indices as Batsim's hyphen interval set: ``0-3 7``."""
    return " ".join(str(a) if n == 1 else f"{a}-{a + n - 1}" for a, n in blocks(nodes))


def batsim_rows(rows: list[dict[str, str]], workload: str) -> Iterator[dict[str, str]]:
    """``jobs.csv`` rows of the leases that reached a final state."""
    for row in rows:
        final = _final(row)
        if final is None:
            continue
        submit = number(row.get("submit")) or 0.0
        requested = number(row.get("requested"))
        out = {"job_id": row["lease_id"], "workload_name": workload,
               "profile": row.get("type", ""), "submission_time": _text(submit),
               "requested_number_of_resources": row.get("vms", ""),
               "requested_time": _text(requested) if requested is not None else "",
               "success": "1" if final == "COMPLETED_SUCCESSFULLY" else "0",
               "final_state": final, "allocated_resources": "", "consumed_energy": "",
               "metadata": f"source job {row['source_id']}" if row.get("source_id") else ""}
        if final != "REJECTED":
            start, end = number(row["start"]), number(row["end"])
            assert start is not None and end is not None
            run, turnaround = end - start, end - submit
            out.update(starting_time=_text(start), execution_time=_text(run),
                       finish_time=_text(end), waiting_time=_text(start - submit),
                       turnaround_time=_text(turnaround),
                       stretch=_text(turnaround / run) if run > 0 else "inf",
                       allocated_resources=interval_set(
                           [int(n) for n in (row.get("nodes") or "").split()]))
            energy = number(row.get("energy_joules"))
            if energy is not None:
                out["consumed_energy"] = _text(energy)
        yield out


def _run_meta(run_dir: Path) -> dict[str, Any]:
    try:
        meta = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _trace_path(meta: dict[str, Any]) -> str | None:
    """The run's trace file: ``simulate`` records ``"trace": {"path", "sha256"}``, a sweep's
    run its name (``"trace"``) and ``"trace_path"``."""
    trace = meta.get("trace")
    path = trace.get("path") if isinstance(trace, dict) else meta.get("trace_path")
    return path if isinstance(path, str) else None


def _original_swf(meta: dict[str, Any]) -> Any:
    """The run's trace as an :class:`SWFReader`, when it is an SWF file still there with the
    checksum the run recorded; else None."""
    from lease_manager.experiments.run_folder import sha256
    from lease_manager.workload.lwf import is_lwf
    from lease_manager.workload.swf import SWFReader
    from lease_manager.workload.tasks import is_task_file

    trace = meta.get("trace")
    if not isinstance(trace, dict):   # a sweep's run.json names its trace, with no checksum
        return None
    path, digest = trace.get("path"), trace.get("sha256")
    if (not path or not Path(path).is_file() or is_lwf(path) or is_task_file(path)
            or sha256(path) != digest):
        return None
    return SWFReader(path, skip_bad_lines=True)


def _procs_per_vm(meta: dict[str, Any]) -> float:
    value = ((meta.get("effective") or {}).get("tracefile") or {}).get("procs-per-vm", 1)
    return float(value) if isinstance(value, (int, float)) and value > 0 else 1.0


def _times_as_in_trace(meta: dict[str, Any]) -> bool:
    """Are the run's times the trace's (no rebasing, no window moving the origin)?"""
    tracefile = (meta.get("effective") or {}).get("tracefile") or {}
    return tracefile.get("rebase") is False and tracefile.get("window-start") == 0


def swf_lines(rows: list[dict[str, str]], meta: dict[str, Any],
              run_name: str) -> Iterator[str]:
    """The schedule as SWF lines, header first."""
    original = _original_swf(meta)
    jobs: dict[str, Any] = {}
    if original is not None:
        jobs = {str(job.job): job for job in original.jobs()}
    ppv = _procs_per_vm(meta)
    kept = [r for r in rows if _final(r) is not None]
    ids = {r["source_id"]: r["lease_id"] for r in kept if r.get("source_id")}
    nodes = [int(n) for r in kept for n in (r.get("nodes") or "").split()]
    yield "; Version: 2.2"
    yield f"; Conversion: lease-manager export --format swf of the run {run_name}"
    yield ("; Note: the simulated schedule: submit, wait and run times and allocated "
           "processors are the replay's; status 5 with wait and run -1 is a lease rejected "
           "or cancelled before it started")
    if original is not None:
        yield f"; Note: the other fields are those of the same job in {Path(original.path).name}"
        for key in SWF_KEPT_DIRECTIVES:
            for value in original.header.get(key, []):
                yield f"; {key}: {value}"
    yield f"; MaxJobs: {len(kept)}"
    yield f"; MaxRecords: {len(kept)}"
    if nodes:
        yield f"; MaxNodes: {max(nodes) + 1}"
    if original is not None and _times_as_in_trace(meta):
        for key in ("UnixStartTime", "StartTime"):
            for value in original.header.get(key, [])[:1]:
                yield f"; {key}: {value}"
    yield ";"
    for row in kept:
        job = jobs.get(row.get("source_id") or "")
        submit = number(row["submit"]) or 0.0
        start, end = number(row.get("start")), number(row.get("end"))
        final = _final(row)
        vms = int(row.get("vms") or 0)
        procs = int(math.ceil(vms * ppv)) if job is None else job.requested_procs
        if final == "REJECTED":
            wait, run, alloc, status = -1.0, -1.0, -1, 5
        else:
            assert start is not None and end is not None
            wait, run, alloc = start - submit, end - start, int(math.ceil(vms * ppv))
            status = {"COMPLETED_SUCCESSFULLY": 1, "COMPLETED_FAILED": 0}.get(final or "", 5)
        requested = number(row.get("requested"))
        fields = [row["lease_id"], _text(submit), _text(wait), _text(run), str(alloc)]
        if job is not None:
            preceding = ids.get(str(job.preceding_job), "-1") if job.preceding_job > 0 else "-1"
            fields += [_text(job.avg_cpu_time), _text(job.used_memory), str(procs),
                       _text(requested if requested is not None else job.requested_time),
                       _text(job.requested_memory), str(status), str(job.user),
                       str(job.group), str(job.executable), str(job.queue),
                       str(job.partition), preceding, _text(job.think_time)]
        else:
            fields += ["-1", "-1", str(procs),
                       _text(requested) if requested is not None else "-1", "-1",
                       str(status), "-1", "-1", "-1", "-1", "-1", "-1", "-1"]
        yield " ".join(fields)


def export_command(directory: str, fmt: str, out: str | None = None) -> int:
    """Write ``directory``'s schedule in ``fmt``; print what was written."""
    run_dir = Path(directory)
    if not (run_dir / "leases.csv").is_file():
        raise LeaseManagerError(f"{directory}: not a run folder (it has no leases.csv)")
    if fmt not in FORMATS:
        raise LeaseManagerError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    rows = read_leases(run_dir)
    target = Path(out) if out else run_dir / ("jobs.csv" if fmt == "batsim" else "schedule.swf")
    if target.is_dir():
        raise LeaseManagerError(f"--out {target}: is a folder; give a file name")
    if not target.parent.is_dir():
        raise LeaseManagerError(f"--out {target}: its folder {target.parent} does not exist")
    meta = _run_meta(run_dir)
    name = run_dir.resolve().name
    left_out = sum(1 for r in rows if _final(r) is None)
    try:
        if fmt == "batsim":
            trace = _trace_path(meta) or name
            with target.open("w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=BATSIM_COLUMNS, lineterminator="\n")
                writer.writeheader()
                writer.writerows(batsim_rows(rows, Path(trace).name.split(".")[0]))
        else:
            with target.open("w") as fh:
                for line in swf_lines(rows, meta, name):
                    fh.write(line + "\n")
    except OSError as exc:
        raise LeaseManagerError(f"cannot write {target}: {exc.strerror}") from None
    print(f"wrote {target}: {len(rows) - left_out} leases"
          + (f"; left out {left_out} still running or waiting when the run stopped "
             "(no final state)" if left_out else ""))
    return 0

