"""Task files: a CSV list of independent best-effort tasks, one per line.

The form Kassab et al.'s instances take (a processing time and a power per task), and a quick
way to write any small workload by hand::

    id,submit,duration,vms,watts
    1,0,3600,1,30
    2,0,1800,2,

A header names the columns, in any order: ``duration`` (seconds, > 0) is required; ``id`` (the
lease's ``source_id``; default the line number), ``submit`` (seconds >= 0, default 0, in
non-decreasing order), ``vms`` (a whole number >= 1, default 1; each VM is ``[tracefile]
vm-resources``), ``actual`` (the run time, seconds > 0, at most ``duration``; default
``duration``) and ``watts`` (the lease's own dynamic power per VM, see
:mod:`lease_manager.energy.lease_power`; empty: the node model's) are optional. Any other
column, and any bad value, is an error naming the file, the line and the column.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from lease_manager.energy.lease_power import MAX_LEASE_WATTS, WATTS_ATTRIBUTE
from lease_manager.errors import TraceError
from lease_manager.input_files import csv_rows, input_problem
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.numbers import parse_float

COLUMNS = ("id", "submit", "duration", "vms", "actual", "watts")
#: the longest task a file may give, in seconds (about 31,700 years)
MAX_SECONDS = 1e12
#: the most VMs one task may ask for
MAX_VMS = 1_000_000


def is_task_file(path: str | Path) -> bool:
    """Is ``path`` a task file (by its name: ``.csv``)?"""
    return str(path).lower().endswith(".csv")


def read_tasks(path: str | Path, vm_vector: np.ndarray) -> list[Lease]:
    """The tasks of ``path`` as best-effort leases of VMs of ``vm_vector``; raise
    :class:`TraceError` naming the file, line and column of the first bad value."""
    return list(iter_tasks(path, vm_vector))


def iter_tasks(path: str | Path, vm_vector: np.ndarray) -> Iterator[Lease]:
    name = str(path)
    problem = input_problem(path)
    if problem:
        raise TraceError(f"the task file {problem}", file=name)
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"cannot read the task file: {exc}", file=name) from None
    rows = csv_rows(text.splitlines(),
                    lambda message, line: TraceError(message, file=name, line=line))
    header = _header(next(rows, []), name)
    last_submit = 0.0
    lease_id = 0
    for number, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise TraceError(f"expected {len(header)} fields, found {len(row)}", file=name,
                             line=number)
        cells = {column: cell.strip() for column, cell in zip(header, row)}

        def number_of(column: str, low: float, high: float, default: float | None = None,
                      *, above: bool = False, line: int = number,
                      cells: dict[str, str] = cells) -> float | None:
            return _value(cells, column, name, line, low, high, default, above)

        submit = number_of("submit", 0.0, MAX_SECONDS, 0.0)
        duration = number_of("duration", 0.0, MAX_SECONDS, above=True)
        vms = number_of("vms", 1, MAX_VMS, 1)
        actual = number_of("actual", 0.0, MAX_SECONDS, duration, above=True)
        watts = number_of("watts", 0.0, MAX_LEASE_WATTS, math.nan)
        assert submit is not None and duration is not None and vms is not None
        assert actual is not None and watts is not None
        if not float(vms).is_integer():
            raise TraceError(f"{cells['vms']} is not a whole number", file=name, line=number,
                             field="vms")
        if actual > duration:
            raise TraceError(f"{cells['actual']} is longer than the duration {duration:g}",
                             file=name, line=number, field="actual")
        if submit < last_submit:
            raise TraceError(f"tasks are not in submit order ({submit:g} s after "
                             f"{last_submit:g} s)", file=name, line=number, field="submit")
        last_submit = submit
        lease_id += 1
        extra = {} if math.isnan(watts) else {WATTS_ATTRIBUTE: repr(watts)}
        yield Lease(lease_id, LeaseType.BEST_EFFORT, submit,
                    VMRequest.uniform(int(vms), vm_vector), duration, actual,
                    source_id=cells.get("id") or str(number - 1), extra=extra,
                    origin=f"{name}:{number}")


def _header(first: list[str], name: str) -> list[str]:
    """The columns a task file's first row names (lower case), checked."""
    header = [h.strip().lower() for h in first]
    if not header or not any(header):
        raise TraceError("empty file: expected a header line (id,submit,duration,vms,watts)",
                         file=name, line=1)
    for column in header:
        if column not in COLUMNS:
            raise TraceError(f"unknown column {column!r} (columns: {', '.join(COLUMNS)})",
                             file=name, line=1)
    if len(set(header)) != len(header):
        raise TraceError("a column is named twice", file=name, line=1)
    if "duration" not in header:
        raise TraceError("no duration column", file=name, line=1)
    return header


def _value(cells: dict[str, str], column: str, name: str, line: int, low: float, high: float,
           default: float | None, above: bool) -> float | None:
    """The number in ``column`` (``default`` if empty; ``duration`` may not be), within
    ``[low, high]`` (``(low, high]`` if ``above``)."""
    text = cells.get(column, "")
    if not text:
        if default is None:
            raise TraceError("missing", file=name, line=line, field=column)
        return default
    try:
        value = parse_float(text)
    except ValueError as exc:
        raise TraceError(str(exc), file=name, line=line, field=column) from None
    if not (low <= value <= high) or (above and value <= low):
        bound = f"({low:g}, {high:g}]" if above else f"[{low:g}, {high:g}]"
        raise TraceError(f"{text} is not in {bound}", file=name, line=line, field=column)
    return value
