"""Accounting: one row per lease (``leases.csv``) and the run's summary (``summary.json``).

The accountant is a per-run plugin. It records a lease once, when it reaches its final state
(or, for leases still unfinished when the run stops, at the end); recording one twice is a bug
and raises. It keeps running sums, not lease objects, and either compact rows or, once told
where (:meth:`Accounting.stream_to`), nothing: each row goes to ``leases.csv`` as soon as
every lease with a smaller id is recorded too (leases arrive in id order in a trace), so a
replay's memory does not grow with its number of leases.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from lease_manager.errors import LeaseManagerError
from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import LeaseState, LeaseType
from lease_manager.observers.leases_csv import (
    COLUMNS,
    CSVLines,
    LeaseColumns,
    LeaseValues,
    format_field,
    joined,
)

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.reservation import Reservation

__all__ = ["COLUMNS", "SLOWDOWN_BOUND", "Accounting", "LeaseColumns", "write_summary"]

_FLOAT = np.dtype(float)
#: bound of the bounded slowdown, seconds
SLOWDOWN_BOUND = 10.0
S = members(LeaseState)
#: the text of each lease type and state (an enum's value is a Python-level property)
_TYPE_TEXT = {t: t.value for t in LeaseType}
_STATE_TEXT = {s: s.value for s in LeaseState}
#: allocations on at most this many nodes, of two resources, have their amounts summed in
#: Python (the same additions, row after row, as numpy's sum over the rows of a C-ordered
#: array)
_SUM_IN_PYTHON = 32
#: read-only arrays of amounts whose sums over their rows are kept (and the arrays with them),
#: at most
_KNOWN_SUMS = 256


def _row_sums(amounts: np.ndarray, width: int) -> list[float] | None:
    """The sum of ``amounts``' rows (nodes x ``width`` resources, float64) as numpy's
    ``amounts.sum(axis=0)`` computes it, in Python numbers; None for other arrays."""
    shape = amounts.shape
    if amounts.dtype is not _FLOAT or len(shape) != 2 or shape[1] != width:
        return None
    if width == 2 and (shape[0] == 1 or (1 < shape[0] <= _SUM_IN_PYTHON
                                         and amounts.flags.c_contiguous)):
        rows = amounts.tolist()
        first, second = rows[0]
        for x, y in itertools.islice(rows, 1, None):   # numpy adds the rows of a C-ordered
            first += x                                 # array in turn
            second += y
        return [first, second]
    return amounts.sum(axis=0).tolist()


def _after(names: tuple[str, ...], values: LeaseValues | None,
           columns: list[LeaseColumns]) -> tuple[tuple[str, ...], LeaseValues | None]:
    """``columns`` after the columns ``names`` whose values ``values`` gives."""
    if values is not None:
        columns = [LeaseColumns(names, values), *columns]
    return joined(columns)


class Accounting:
    """Observes leases and accumulates what the run's outputs report: a per-run plugin
    (``lease_manager.accounting``) whose hooks run before any other plugin's."""

    def __init__(self, resource_names: Iterable[str]) -> None:
        self.resource_names = tuple(resource_names)
        #: more ``leases.csv`` columns, and a function giving a lease's values for them (the
        #: plugins' columns, :meth:`add_columns`)
        self.extra_columns: tuple[str, ...] = ()
        self.extra_values: LeaseValues | None = None
        #: columns written only if some lease has a value (not None) for them, after the
        #: extra ones, and the function giving a lease's values (a lease's own ``watts``)
        self.optional_columns: tuple[str, ...] = ()
        self.optional_values: LeaseValues | None = None
        self._rows: list[tuple] = []
        self._seen: set[int] = set()
        self._recorded = 0
        self._lines = CSVLines()
        #: with :meth:`stream_to`: the file rows go to, rows waiting for a smaller id (a
        #: heap), the ids submitted and not recorded while they arrive in order (in that
        #: order, recorded ones left in until they come first), the largest id submitted,
        #: and whether ids arrived in order so far
        self._stream: IO[str] | None = None
        self._stream_path: Path | None = None
        self._waiting: list[tuple[int, str]] = []
        self._unrecorded: collections.deque[int] = collections.deque()
        self._last_id = -math.inf
        self._in_order = True
        #: with streaming: the optional values of the leases that have some, by id
        self._optional: dict[int, tuple] = {}
        self.submitted = 0
        self.states: collections.Counter = collections.Counter()
        self.rejected_by_reason: collections.Counter = collections.Counter()
        self._waits = 0.0
        self._started = 0
        self.max_wait = 0.0
        self._slowdown = 0.0
        self._bounded_slowdown = 0.0
        #: Haizea's slowdown: time in the system over the requested duration (and bounded)
        self._slowdown_requested = 0.0
        self._bounded_slowdown_requested = 0.0
        self._requested_counted = 0
        self._completed = 0
        self.first_submit = math.inf
        self.last_end = -math.inf
        self.revenue = 0.0
        self.by_type: collections.Counter = collections.Counter()   # (type, accepted?)
        self.deadlines: collections.Counter = collections.Counter()  # met / missed
        self.preemptions = 0
        self.suspensions = 0
        self.time_suspended = 0.0
        #: capacity x seconds actually held (:attr:`used`)
        self._used: list[float] = [0.0] * len(self.resource_names)
        #: id -> (read-only amounts, the sums of their rows): see _use
        self._row_sums: dict[int, tuple[np.ndarray, list[float]]] = {}

    # ------------------------------------------------------------------------ observing
    @hookimpl(tryfirst=True)
    def lease_submitted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.submitted += 1
        if lease.submit < self.first_submit:
            self.first_submit = lease.submit
        if self._stream is not None:
            lease_id = lease.id
            if lease_id < self._last_id:
                self._in_order = False   # rows wait until the end, then merge
                self._unrecorded.clear()
            elif lease_id > self._last_id:
                self._last_id = lease_id
            if self._in_order:
                self._unrecorded.append(lease_id)

    @hookimpl(tryfirst=True)
    def lease_rejected(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.record(lease)

    @hookimpl(tryfirst=True)
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.record(lease)

    def add_columns(self, columns: Sequence[LeaseColumns]) -> None:
        """Add the plugins' ``leases.csv`` columns (what ``lease_columns`` returned), in their
        order, after the core's and any added before; sparse ones after every other one."""
        always = [part for part in columns if not part.sparse]
        sparse = [part for part in columns if part.sparse]
        if always:
            self.extra_columns, self.extra_values = _after(
                self.extra_columns, self.extra_values, always)
        if sparse:
            self.optional_columns, self.optional_values = _after(
                self.optional_columns, self.optional_values, sparse)
        every = COLUMNS + self.extra_columns + self.optional_columns
        twice = sorted({name for name in every if every.count(name) > 1})
        if twice:
            raise LeaseManagerError(f"leases.csv would have the column(s) {', '.join(twice)} "
                                    f"twice (a plugin's lease_columns)")

    def record(self, lease: Lease) -> None:
        """Account for ``lease`` in its current state (once per lease)."""
        lease_id = lease.id
        if lease_id in self._seen:
            raise AssertionError(f"lease {lease_id} is accounted for twice")
        self._seen.add(lease_id)
        state = lease.state
        self.states[state] += 1
        accepted = state is not S.REJECTED
        if not accepted:
            self.rejected_by_reason[lease.reason.split(":")[0]] += 1
        type_text = _TYPE_TEXT[lease.type]
        self.by_type[type_text, accepted] += 1
        self.preemptions += lease.preemptions
        self.suspensions += lease.suspensions
        self.time_suspended += lease.time_suspended
        start, end, submit = lease.start, lease.end, lease.submit
        done = state is S.DONE
        if lease.deadline is not None and done and end is not None:
            self.deadlines["met" if end <= lease.deadline + 1e-9 else "missed"] += 1
        wait = None if start is None else start - submit   # (Lease.wait)
        if wait is not None:
            self._started += 1
            self._waits += wait
            if wait > self.max_wait:
                self.max_wait = wait
        nodes = self._nodes_used(lease)
        if done:
            assert end is not None and start is not None and wait is not None
            self._count_completed(lease, submit, start, end, wait)
        row = ((lease_id, lease.source_id or "", type_text, _STATE_TEXT[state],
                submit, start, end, lease.vms.count,
                lease.requested_duration, lease.actual_duration, wait,
                lease.price, lease.reason, nodes)
               + (self.extra_values(lease) if self.extra_values else ()))
        optional = self.optional_values(lease) if self.optional_values else ()
        self._recorded += 1
        if self._stream is None:
            self._rows.append(row + optional)
            return
        if optional and any(value is not None for value in optional):
            self._optional[lease_id] = optional   # added to its line at the end
        line = self._lines.row(row)
        heapq.heappush(self._waiting, (lease_id, line))
        if self._in_order:
            first = self._unrecorded[0] if self._unrecorded else None
            if first is None or first >= lease_id or first in self._seen:
                self._flush_ready()
            # else a smaller id is still to come, first: no row waiting goes before it

    def _nodes_used(self, lease: Lease) -> list[int]:
        """The nodes ``lease`` ran on, sorted, with what it held added to :attr:`used`."""
        allocations = lease.allocations
        nodes: list[int]
        if len(allocations) == 1:   # one reservation's nodes are distinct: sort them only
            res = allocations[0]
            amounts = res.amounts
            known = self._row_sums.get(id(amounts))
            if known is not None and known[0] is amounts and len(known[1]) == 2:
                # (_use's commonest case written out: rows summed before, two resources)
                duration = res.end - res.start
                used_first, used_second = self._used
                sum_first, sum_second = known[1]
                self._used = [used_first + sum_first * duration,
                              used_second + sum_second * duration]
            else:
                self._use(res)
            # (one VM on each node: its VMs' nodes are its nodes, as Python numbers)
            nodes = (list(res.vm_nodes) if len(res.vm_nodes) == len(res.nodes)
                     else res.nodes.tolist())
            nodes.sort()
        elif allocations:
            for res in allocations:
                self._use(res)
            nodes = sorted(set(itertools.chain.from_iterable(
                res.nodes.tolist() for res in allocations)))
        else:
            nodes = []
        return nodes

    def _count_completed(self, lease: Lease, submit: float, start: float, end: float,
                         wait: float) -> None:
        """Add a lease that is done to the slowdowns, the makespan and the revenue."""
        self._completed += 1
        # (max(a, b) written out: b if b > a else a, the same for a nan)
        run_time = end - start
        if run_time > 0:
            self._slowdown += (wait + run_time) / run_time
        bounded = (wait + run_time) / (SLOWDOWN_BOUND if SLOWDOWN_BOUND > run_time
                                       else run_time)
        self._bounded_slowdown += bounded if bounded > 1.0 else 1.0
        requested = lease.requested_duration
        if math.isfinite(requested) and requested > 0:
            self._requested_counted += 1
            self._slowdown_requested += (end - submit) / requested
            self._bounded_slowdown_requested += (end - submit) / (
                SLOWDOWN_BOUND if SLOWDOWN_BOUND > requested else requested)
        if end > self.last_end:
            self.last_end = end
        price = lease.price
        if price and math.isfinite(price):
            self.revenue += price

    def _use(self, res: Reservation) -> None:
        """Add what ``res`` held, capacity x seconds, to :attr:`used`: the sum over its nodes
        times its duration, added to the running sums, as numpy's
        ``used += res.amounts.sum(axis=0) * (res.end - res.start)`` computes it."""
        amounts, duration = res.amounts, res.end - res.start
        known = self._row_sums.get(id(amounts))
        sums: list[float] | None
        if known is not None and known[0] is amounts:
            sums = known[1]
        else:
            sums = _row_sums(amounts, len(self._used))
            if sums is None:   # (not float64 rows, one per node: numpy's own arithmetic)
                used = np.array(self._used)
                used += amounts.sum(axis=0) * duration
                self._used = used.tolist()
                return
            if not amounts.flags.writeable:   # rows shared by many reservations (one VM a
                if len(self._row_sums) >= _KNOWN_SUMS:   # node): summed once
                    self._row_sums.clear()
                self._row_sums[id(amounts)] = (amounts, sums)
        if len(sums) == 2:
            used_first, used_second = self._used
            first, second = sums
            self._used = [used_first + first * duration, used_second + second * duration]
        else:
            self._used = [used + total * duration for used, total in zip(self._used, sums)]

    @property
    def used(self) -> np.ndarray:
        """Capacity x seconds actually held, per resource."""
        return np.array(self._used, dtype=float)

    # ---------------------------------------------------------------------- streaming
    def stream_to(self, path: Path) -> None:
        """Write ``leases.csv`` rows to ``path`` as the run goes (:meth:`write_leases` then
        completes it), instead of keeping them."""
        self._stream_path = path
        self._stream = path.open("w", newline="")
        self._stream.write(self._lines.header(COLUMNS + self.extra_columns))

    def discard_stream(self) -> None:
        """Stop streaming and remove what was written (a run that failed)."""
        if self._stream is not None and self._stream_path is not None:
            self._stream.close()
            self._stream_path.unlink(missing_ok=True)
        self._stream = None

    def _flush_ready(self) -> None:
        """Write the waiting rows whose id is below every id still unrecorded (ids arrive in
        order, so no later lease has a smaller one)."""
        unrecorded, waiting, seen = self._unrecorded, self._waiting, self._seen
        while unrecorded and unrecorded[0] in seen:
            unrecorded.popleft()
        limit = unrecorded[0] if unrecorded else math.inf
        assert self._stream is not None
        while waiting and waiting[0][0] < limit:
            self._stream.write(heapq.heappop(waiting)[1])

    def finish(self, unfinished: Iterable[Lease]) -> None:
        """Account for the leases still active when the run stopped."""
        for lease in unfinished:
            self.record(lease)

    # -------------------------------------------------------------------------- results
    def summary(self, capacity_total: np.ndarray) -> dict[str, Any]:
        first = self.first_submit if not math.isinf(self.first_submit) else 0.0
        makespan = max(self.last_end - first, 0.0) if self._completed else 0.0
        util = {}
        for i, name in enumerate(self.resource_names):
            denom = capacity_total[i] * makespan
            util[name] = float(self.used[i] / denom) if denom > 0 else 0.0
        main = "CPU" if "CPU" in util else (self.resource_names[0] if self.resource_names else "")
        done = self._completed
        return {
            "leases_total": self.submitted,
            "leases_completed": self.states[S.DONE],
            "leases_rejected": self.states[S.REJECTED],
            "leases_cancelled": self.states[S.CANCELLED],
            "leases_failed": self.states[S.FAILED],
            "leases_unfinished": sum(c for s, c in self.states.items() if not s.terminal),
            "rejected_by_reason": dict(self.rejected_by_reason),
            "makespan": makespan,
            "avg_wait": self._waits / self._started if self._started else 0.0,
            "max_wait": self.max_wait,
            "avg_slowdown": self._slowdown / done if done else 0.0,
            "avg_bounded_slowdown": self._bounded_slowdown / done if done else 0.0,
            "avg_slowdown_requested": (self._slowdown_requested / self._requested_counted
                                       if self._requested_counted else 0.0),
            "avg_bounded_slowdown_requested": (self._bounded_slowdown_requested
                                               / self._requested_counted
                                               if self._requested_counted else 0.0),
            "utilization": util.get(main, 0.0),
            "utilization_by_resource": util,
            "revenue": self.revenue,
            "ar_accepted": self.by_type["advance-reservation", True],
            "ar_rejected": self.by_type["advance-reservation", False],
            "immediate_accepted": self.by_type["immediate", True],
            "immediate_rejected": self.by_type["immediate", False],
            "deadline_met": self.deadlines["met"],
            "deadline_missed": self.deadlines["missed"],
            "preemptions": self.preemptions,
            "suspensions": self.suspensions,
            "time_suspended": self.time_suspended,
        }

    def write_leases(self, path: Path) -> None:
        """Write ``leases.csv``, one row per lease in id order (``nodes``: the node indices the
        lease ran on, space-separated, then the extra columns and the optional ones some lease
        has a value for); after :meth:`stream_to`, complete the streamed file and put it at
        ``path``."""
        if self._stream is not None:
            self._finish_stream(path)
            return
        first = len(COLUMNS) + len(self.extra_columns)
        present = [i for i in range(len(self.optional_columns))
                   if any(row[first + i] is not None for row in self._rows)]
        with path.open("w", newline="") as fh:
            fh.write(self._lines.header(COLUMNS + self.extra_columns
                                        + tuple(self.optional_columns[i] for i in present)))
            for row in sorted(self._rows, key=lambda r: r[0]):
                fh.write(self._lines.row(row[:first] + tuple(row[first + i] for i in present)))

    def _finish_stream(self, path: Path) -> None:
        stream, streamed = self._stream, self._stream_path
        assert stream is not None and streamed is not None
        self._stream = None
        if self._in_order:
            for _, line in sorted(self._waiting):
                stream.write(line)
            stream.close()
        else:   # ids came out of order: merge the rows written (in order) with the others
            stream.close()
            merged = streamed.with_name(streamed.name + ".merge")
            with streamed.open(newline="") as written, merged.open("w", newline="") as fh:
                fh.write(next(written))   # the header
                lines = ((int(line.split(",", 1)[0]), line) for line in written)
                for _, line in heapq.merge(lines, sorted(self._waiting)):
                    fh.write(line)
            merged.replace(streamed)
        if self._optional:
            self._add_optional(streamed)
        streamed.replace(path)

    def _add_optional(self, streamed: Path) -> None:
        """Append the optional columns some lease has a value for to every line."""
        present = [i for i in range(len(self.optional_columns))
                   if any(values[i] is not None for values in self._optional.values())]
        done = streamed.with_name(streamed.name + ".optional")
        with streamed.open(newline="") as lines, done.open("w", newline="") as fh:
            names = tuple(self.optional_columns[i] for i in present)
            fh.write(next(lines)[:-1] + "," + self._lines.fields(names))
            empty = tuple("" for _ in present)
            for line in lines:
                values = self._optional.get(int(line.split(",", 1)[0]))
                fields = (empty if values is None
                          else tuple(format_field(values[i]) for i in present))
                fh.write(line[:-1] + "," + self._lines.fields(fields))
        done.replace(streamed)

    @property
    def recorded(self) -> int:
        return self._recorded


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    path.write_text(json.dumps(summary, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")
