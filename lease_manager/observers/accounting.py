"""Accounting: one row per lease (``leases.csv``) and the run's summary (``summary.json``).

The accountant is a per-run plugin. It records a lease once, when it reaches its final state
(or, for leases still unfinished when the run stops, at the end); recording one twice is a bug
and raises. It keeps compact rows and running sums, not lease objects, so memory does not grow
with what finished leases held.
"""

from __future__ import annotations

import collections
import csv
import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import LeaseState

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease

COLUMNS = ("lease_id", "source_id", "type", "state", "submit", "start", "end", "vms",
           "requested", "actual", "wait", "price", "reason", "nodes")
#: bound of the bounded slowdown, seconds
SLOWDOWN_BOUND = 10.0


def _fmt(x: float | str | None) -> str:
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    if math.isinf(x):
        return "inf"
    if float(x).is_integer():
        return str(int(x))
    return repr(round(float(x), 6))


class Accounting:
    """Observes leases and accumulates what the run's outputs report: a per-run plugin
    (``lease_manager.accounting``) whose hooks run before any other plugin's."""

    def __init__(self, resource_names: Iterable[str]) -> None:
        self.resource_names = tuple(resource_names)
        #: more ``leases.csv`` columns, and a function giving a lease's values for them (the
        #: energy accounting's, with a power model)
        self.extra_columns: tuple[str, ...] = ()
        self.extra_values: Callable[[Lease], tuple[float | str | None, ...]] | None = None
        #: columns written only if some lease has a value (not None) for them, after the
        #: extra ones, and the function giving a lease's values (a lease's own ``watts``)
        self.optional_columns: tuple[str, ...] = ()
        self.optional_values: Callable[[Lease], tuple[float | str | None, ...]] | None = None
        self._rows: list[tuple] = []
        self._seen: set[int] = set()
        self.submitted = 0
        self.states: collections.Counter = collections.Counter()
        self.rejected_by_reason: collections.Counter = collections.Counter()
        self._waits = 0.0
        self._started = 0
        self.max_wait = 0.0
        self._slowdown = 0.0
        self._bounded_slowdown = 0.0
        self._completed = 0
        self.first_submit = math.inf
        self.last_end = -math.inf
        self.revenue = 0.0
        self.by_type: collections.Counter = collections.Counter()   # (type, accepted?)
        self.deadlines: collections.Counter = collections.Counter()  # met / missed
        self.preemptions = 0
        self.suspensions = 0
        self.time_suspended = 0.0
        self.used = np.zeros(len(self.resource_names))   # capacity x seconds actually held

    # ------------------------------------------------------------------------ observing
    @hookimpl(tryfirst=True)
    def lease_submitted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.submitted += 1
        if lease.submit < self.first_submit:
            self.first_submit = lease.submit

    @hookimpl(tryfirst=True)
    def lease_rejected(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.record(lease)

    @hookimpl(tryfirst=True)
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.record(lease)

    def record(self, lease: Lease) -> None:
        """Account for ``lease`` in its current state (once per lease)."""
        if lease.id in self._seen:
            raise AssertionError(f"lease {lease.id} is accounted for twice")
        self._seen.add(lease.id)
        state = lease.state
        self.states[state] += 1
        if state is LeaseState.REJECTED:
            self.rejected_by_reason[lease.reason.split(":")[0]] += 1
        self.by_type[lease.type.value, state is not LeaseState.REJECTED] += 1
        self.preemptions += lease.preemptions
        self.suspensions += lease.suspensions
        self.time_suspended += lease.time_suspended
        end = lease.end
        if lease.deadline is not None and state is LeaseState.DONE and end is not None:
            self.deadlines["met" if end <= lease.deadline + 1e-9 else "missed"] += 1
        wait = lease.wait
        if wait is not None:
            self._started += 1
            self._waits += wait
            if wait > self.max_wait:
                self.max_wait = wait
        nodes: set[int] = set()
        for res in lease.allocations:
            self.used += res.amounts.sum(axis=0) * (res.end - res.start)
            nodes.update(res.nodes.tolist())
        if state is LeaseState.DONE:
            assert end is not None and lease.start is not None and wait is not None
            self._completed += 1
            run_time = end - lease.start
            if run_time > 0:
                self._slowdown += (wait + run_time) / run_time
            self._bounded_slowdown += max(1.0, (wait + run_time) / max(run_time, SLOWDOWN_BOUND))
            self.last_end = max(self.last_end, end)
            if lease.price and math.isfinite(lease.price):
                self.revenue += lease.price
        self._rows.append((lease.id, lease.source_id or "", lease.type.value, state.value,
                           lease.submit, lease.start, lease.end, lease.vms.count,
                           lease.requested_duration, lease.actual_duration, wait,
                           lease.price, lease.reason, tuple(sorted(nodes)))
                          + (self.extra_values(lease) if self.extra_values else ())
                          + (self.optional_values(lease) if self.optional_values else ()))

    def finish(self, unfinished: Iterable[Lease]) -> None:
        """Account for the leases still active when the run stopped."""
        for lease in unfinished:
            self.record(lease)

    # -------------------------------------------------------------------------- results
    def summary(self, capacity_total: np.ndarray) -> dict[str, Any]:
        S = LeaseState
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
        lease ran on, space-separated)."""
        first = len(COLUMNS) + len(self.extra_columns)
        present = [i for i in range(len(self.optional_columns))
                   if any(row[first + i] is not None for row in self._rows)]
        keep = list(range(len(COLUMNS), first)) + [first + i for i in present]
        with path.open("w", newline="") as fh:
            out = csv.writer(fh, lineterminator="\n")
            out.writerow(COLUMNS + self.extra_columns
                         + tuple(self.optional_columns[i] for i in present))
            for row in sorted(self._rows, key=lambda r: r[0]):
                out.writerow(row[:4] + tuple(_fmt(x) for x in row[4:7]) + (row[7],)
                             + tuple(_fmt(x) for x in row[8:12]) + (row[12],)
                             + (" ".join(map(str, row[13])),)
                             + tuple(_fmt(row[i]) for i in keep))

    @property
    def recorded(self) -> int:
        return len(self._rows)


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    path.write_text(json.dumps(summary, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")
