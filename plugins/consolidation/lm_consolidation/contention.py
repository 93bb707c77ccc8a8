"""The resource contention metric (thesis equations 5.1-5.4) and the probe that reports it.

For node ``n`` and resource ``r`` at time ``t``, let ``J`` be the leases scheduled on ``n`` at
``t`` that stress ``r``. The node's contention on ``r`` is the sum of their requirements of
``r`` on ``n`` when there is more than one of them (eqs 5.3, 5.4), else 0;
``RC(t) = sum over nodes and resources`` (eqs 5.1, 5.2). A lease counts once on a node however
many of its VMs are there (the equations count jobs), with its requirement for all of them.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager import Policy, hookimpl
from lease_manager.characteristics import RESOURCES, Contributions

if TYPE_CHECKING:
    from lease_manager import Lease, RunContext, SlotTableView

SERIES = "resource_contention"


def contention_matrix(count: np.ndarray, total: np.ndarray) -> np.ndarray:
    """RC(t, n, r) for every node and resource, from how many scheduled leases stress each
    resource on each node (``count``) and the sum of their requirements (``total``)."""
    return np.where(count > 1, total, 0.0)


def node_state_at(table: SlotTableView, t: float,
                  contributions: Contributions) -> tuple[np.ndarray, np.ndarray]:
    """``(count, total)`` (nodes x resources) over the reservations on every node at ``t``,
    read from the slot table (future reservations included): the straightforward evaluation,
    used by the tests and to check the probe."""
    n_nodes = table.capacity.shape[0]
    count = np.zeros((n_nodes, len(RESOURCES)))
    total = np.zeros((n_nodes, len(RESOURCES)))
    for node in range(n_nodes):
        for res in table.reservations_at(node, t):
            hit = contributions.contribution(res)
            if hit is None:
                continue
            nodes, amounts, mask = hit[:3]
            i = int(np.flatnonzero(nodes == node)[0])
            count[node] += mask
            total[node] += amounts[i]
    return count, total


def resource_contention_at(table: SlotTableView, t: float, contributions: Contributions) -> float:
    """RC(t) of equation 5.1, from the slot table."""
    return float(contention_matrix(*node_state_at(table, t, contributions)).sum())


class ResourceContentionProbe(Policy):
    """Resource contention RC(t) (thesis eqs 5.1-5.4) at every scheduling cycle: the series
    ``resource_contention``, and its time integral, mean, maximum and per-cycle sum in
    summary.json.

    A lease counts from ``lease_started`` until its VM reservation ends: at ``lease_ended``,
    or, for a preempted lease that runs on until its suspension, at the first cycle at or after
    its reservation's end. Suspension, resumption and migration segments do not count (their
    VMs do not run).
    """

    kind = "probe"
    name = "resource-contention"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        # the sum of requirements, in the resources' own units (CPU shares, MB...), eq. 5.2
        ctx.metrics.describe(SERIES, "", "resource contention RC(t)")
        n_nodes = ctx.site.count
        self.contributions = Contributions.for_run(ctx)
        #: leases stressing each resource on each node, and the sum of their requirements
        self.count = np.zeros((n_nodes, len(RESOURCES)))
        self.total = np.zeros((n_nodes, len(RESOURCES)))
        #: lease id -> (its running VM reservation, nodes, amounts, mask) while it counts
        self._held: dict[int, tuple[Any, np.ndarray, np.ndarray, np.ndarray]] = {}
        #: (end, lease id) of held reservations, to drop those that end with no hook (a
        #: preempted lease runs on until its suspension starts)
        self._ends: list[tuple[float, int]] = []
        self._dirty = False
        self._by_resource = np.zeros(len(RESOURCES))
        self.rc = 0.0
        self._first: float | None = None
        self._last: float | None = None
        self.integral = 0.0
        self.integral_by_resource = np.zeros(len(RESOURCES))
        self.cycle_sum = 0.0
        self.cycles = 0
        self.max = 0.0

    # ------------------------------------------------------------- running leases per node
    def _running_reservation(self, lease: Lease, now: float):
        for res in lease.reservations:
            if res.kind == "vm" and res.start <= now < res.end:
                return res
        return None

    def _add(self, lease: Lease, now: float) -> None:
        self._remove(lease.id)
        res = self._running_reservation(lease, now)
        if res is None:
            return
        hit = self.contributions.contribution(res)
        if hit is None:
            return
        nodes, amounts, mask = hit[:3]
        self.count[nodes] += mask
        self.total[nodes] += amounts
        self._held[lease.id] = (res, nodes, amounts, mask)
        heapq.heappush(self._ends, (res.end, lease.id))
        self._dirty = True

    def _remove(self, lease_id: int) -> None:
        hit = self._held.pop(lease_id, None)
        if hit is None:
            return
        _, nodes, amounts, mask = hit
        self.count[nodes] -= mask
        self.total[nodes] -= amounts
        idle = self.count[nodes] == 0
        if idle.any():   # no drift: a resource nobody stresses sums to exactly 0
            rows = self.total[nodes]
            rows[idle] = 0.0
            self.total[nodes] = rows
        self._dirty = True

    def _drop_ended(self, now: float) -> None:
        """Drop the leases whose VM reservation is over (ends are only ever brought earlier,
        and every change of plan pushes the new end)."""
        ends = self._ends
        while ends and ends[0][0] <= now:
            _, lease_id = heapq.heappop(ends)
            hit = self._held.get(lease_id)
            if hit is not None and hit[0].end <= now:
                self._remove(lease_id)

    @hookimpl
    def lease_started(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self._add(lease, now)

    @hookimpl
    def lease_preempted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        """A preempted running lease runs on until its VM reservation's (new) end: it is
        cancelled now, or suspended later."""
        hit = self._held.get(lease.id)
        if hit is not None:
            if hit[0].end <= now or not any(r is hit[0] for r in lease.reservations):
                self._remove(lease.id)
            else:
                heapq.heappush(self._ends, (hit[0].end, lease.id))

    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self._remove(lease.id)
        self.contributions.forget(lease)

    # ------------------------------------------------------------------------- recording
    @hookimpl
    def scheduling_cycle_end(self, ctx: RunContext, now: float) -> None:
        previous, previous_by_resource = self.rc, self._by_resource
        self._drop_ended(now)
        if self._dirty:
            self._dirty = False
            self._by_resource = contention_matrix(self.count, self.total).sum(axis=0)
            self.rc = float(self._by_resource.sum())
        if self._last is None:
            self._first = now
            self.cycle_sum += self.rc
            self.cycles += 1
        elif now > self._last:
            dt = now - self._last
            self.integral += previous * dt
            self.integral_by_resource += previous_by_resource * dt
            self.cycle_sum += self.rc
            self.cycles += 1
        else:   # another cycle at the same instant: its value replaces the last one
            self.cycle_sum += self.rc - previous
        self._last = now
        self.max = max(self.max, self.rc)
        ctx.metrics.record(SERIES, now, self.rc)

    @hookimpl
    def collect_summary(self, ctx: RunContext) -> dict[str, Any]:
        span = (self._last - self._first
                if self._last is not None and self._first is not None else 0.0)
        return {
            "resource_contention_integral": self.integral,
            "resource_contention_mean": self.integral / span if span > 0 else 0.0,
            "resource_contention_max": self.max,
            "resource_contention_cycle_sum": self.cycle_sum,
            "resource_contention_cycles": self.cycles,
            "resource_contention_integral_by_resource": {
                r: float(v) for r, v in zip(RESOURCES, self.integral_by_resource)},
        }
