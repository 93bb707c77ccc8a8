"""Energy-aware host selection: ``ea-consolidation`` (thesis Algorithms 1-2) and
``ea-time-horizon`` (Algorithm 3).

The score of node ``n`` for lease ``j`` at time ``t`` (eqs 6.1-6.3) is the contention ``j``
would meet there: for every resource ``r`` that ``j`` stresses, the requirements of ``r`` of the
other leases scheduled on ``n`` at ``t`` that also stress ``r`` (reservations in the slot
table, future ones included). ``j``'s own requirement is not part of it. Lower is better.

``ea-time-horizon`` integrates that score over the lease's interval ``[t, t + duration)``: the
node's change points split it into steps where the set of reservations is constant, each step
weighs the score at its start by its length, and the sum is divided by the duration. Because the
score is a sum over reservations, that integral is computed exactly, with no explicit split, as
the sum over the reservations overlapping the interval of (their part of the score) x (their
overlap) / duration.

Ties keep a deterministic order: ``[consolidation] tie-break = node-index`` (the default; the
thesis' Haizea sorts nodes by score with a stable sort, so equal scores keep node order) or
``greedy`` (Haizea's greedy score, then node index).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from lease_manager import HostSelectionPolicy
from lease_manager.characteristics import Contributions

if TYPE_CHECKING:
    from lease_manager import Lease, RunContext, SlotTableView


def node_scores(lease: Lease, start: float, end: float, table: SlotTableView,
                contributions: Contributions, *, horizon: bool = False) -> np.ndarray:
    """Every node's score for ``lease`` over ``[start, end)``: at ``start`` (eqs 6.1-6.3), or,
    with ``horizon``, averaged over the interval (Algorithm 3). Leases that stress nothing
    score 0 everywhere."""
    n_nodes = table.capacity.shape[0]
    mask = contributions.profile(lease).mask
    if not mask.any():
        return np.zeros(n_nodes)
    duration = end - start
    horizon = horizon and duration > 0 and math.isfinite(duration)
    if horizon:
        pool = table.reservations_between(start, end)
    else:   # the reservations that hold resources at ``start``: r.start <= start < r.end
        pool = table.reservations_between(start, math.nextafter(start, math.inf))
    hits = [h for h in map(contributions.contribution, pool)
            if h is not None and h[3] is not lease]
    if not hits:
        return np.zeros(n_nodes)
    nodes = np.concatenate([h[0] for h in hits])
    weights = np.concatenate([h[1] for h in hits]) @ mask
    if horizon:
        overlap = [(min(h[4].end, end) - max(h[4].start, start)) / duration for h in hits]
        weights *= np.repeat(overlap, [len(h[0]) for h in hits])
    return np.bincount(nodes, weights=weights, minlength=n_nodes)


def greedy_scores(start: float, end: float, table: SlotTableView) -> np.ndarray:
    """Haizea's greedy score (higher first), as the built-in ``greedy`` policy computes it:
    0.5 x fewer leases at the start (up to 4) + 0.25 + 0.25 x how long free capacity lasts."""
    horizon = 4
    counts = np.minimum(table.lease_counts_at(start), horizon)
    lease_score = (horizon - counts) / horizon
    duration = end - start
    lasts = table.capacity_lasts_until(start, end) - start
    duration_score = np.minimum(lasts / duration, 1.0) if duration > 0 else 1.0
    return 0.5 * lease_score + 0.25 + 0.25 * duration_score


class EAConsolidation(HostSelectionPolicy):
    """Energy-aware consolidation (thesis Algorithms 1-2): nodes where the lease would meet the
    least resource contention at its tentative start first."""

    name = "ea-consolidation"
    horizon = False

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.contributions = Contributions.for_run(ctx)
        self.tie_break = ctx.config.get("consolidation", "tie-break")

    def scores(self, lease: Lease, start: float, end: float,
               table: SlotTableView) -> np.ndarray:
        return node_scores(lease, start, end, table, self.contributions, horizon=self.horizon)

    def order_hosts(self, lease: Lease, start: float, end: float,
                    table: SlotTableView) -> np.ndarray:
        score = self.scores(lease, start, end, table)
        index = np.arange(len(score))
        if self.tie_break == "greedy":
            return np.lexsort((index, -greedy_scores(start, end, table), score))
        return np.lexsort((index, score))


class EATimeHorizon(EAConsolidation):
    """Energy-aware consolidation over the lease's time horizon (thesis Algorithm 3): the
    contention the lease would meet, averaged over its run time, lowest first."""

    name = "ea-time-horizon"
    horizon = True
