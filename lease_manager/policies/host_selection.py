"""Built-in host selection: Haizea's ``greedy`` (and ``haizea-greedy``, its score exactly) and
``no-policy`` (node order)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.hookspecs import hookimpl
from lease_manager.policies import HostSelectionPolicy

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.slottable import SlotTableView


class NoPolicy(HostSelectionPolicy):
    """Visit hosts in node order."""

    name = "no-policy"
    orders_every_node = True
    supports_placement_at_start = True
    free_nodes_first = True

    def order_hosts(self, lease: Lease, start: float, end: float,
                    table: SlotTableView) -> np.ndarray:
        return np.arange(table.capacity.shape[0])


class GreedyPolicy(HostSelectionPolicy):
    """Haizea's greedy: hosts with fewer leases first, then hosts whose free capacity lasts.

    Score = 0.5 x (4 - min(leases on the host at the start, 4)) / 4 + 0.25 + 0.25 x
    min(1, how long the host's free capacity lasts / lease duration); highest first, ties by
    node index. (Haizea's third term, "highest capacity", is the constant 0.25 there too.)
    """

    name = "greedy"
    orders_every_node = True
    supports_placement_at_start = True
    #: (nodes with a free slot hold no lease when they host one VM at most: score order is
    #: index order among them)
    free_nodes_first = True
    HORIZON = 4

    def order_hosts(self, lease: Lease, start: float, end: float,
                    table: SlotTableView) -> np.ndarray:
        counts = table.lease_counts_at(start)   # (a new array: changed in place below)
        if table.counted:   # nothing is placed on nodes later: every free capacity lasts
            return self._by_counts(counts)
        until = table.capacity_lasts_until(start, end)
        if np.minimum.reduce(until, initial=math.inf) == math.inf:
            # every node's free capacity lasts to the end: every duration score is 1
            return self._by_counts(counts)
        return self._by_scores(counts, until - start, end - start)

    def _by_counts(self, counts: np.ndarray) -> np.ndarray:
        """The order when every duration score is 1: the scores then fall strictly as
        min(leases, 4) grows, so they sort as those counts do (``counts`` is changed; a
        stable sort of small integers is a radix sort)."""
        np.minimum(counts, self.HORIZON, out=counts)
        return counts.astype(np.uint8).argsort(kind="stable")

    def _by_scores(self, counts: np.ndarray, lasts: np.ndarray,
                   duration: float) -> np.ndarray:
        """The order by the whole score (``lasts``: how long each node's free capacity lasts)."""
        counts = np.minimum(counts, self.HORIZON)
        lease_score = (self.HORIZON - counts) / self.HORIZON
        if np.isinf(duration):   # an unlimited lease: only capacity free for ever lasts
            duration_score = np.where(np.isinf(lasts), 1.0, 0.0)
        else:
            duration_score = (np.minimum(lasts / duration, 1.0) if duration > 0
                              else np.ones(len(lasts)))
        score = 0.5 * lease_score + 0.25 + 0.25 * duration_score
        return np.argsort(-score, kind="stable")   # ties by node index


class HaizeaGreedyPolicy(HostSelectionPolicy):
    """Haizea's greedy score exactly (Haizea files use it for ``greedy``): 0.5 x (4 - min(leases
    on the host at the start, 4)) / 4 + 0.25 + 0.25 x min(1, time until the host's next change
    of any kind (a reservation on it starting or ending) / the lease's requested duration);
    highest first, ties by node index. ``greedy`` counts only the time the host's free
    capacity lasts, over the interval asked for."""

    name = "haizea-greedy"
    orders_every_node = True
    HORIZON = 4

    def order_hosts(self, lease: Lease, start: float, end: float,
                    table: SlotTableView) -> np.ndarray:
        counts = np.minimum(table.lease_counts_at(start), self.HORIZON)
        lease_score = (self.HORIZON - counts) / self.HORIZON
        requested = lease.requested_duration
        duration_score = np.ones(len(counts))
        if requested > 0 and not np.isinf(requested):
            for node in range(len(counts)):
                later = table.change_points(start, node=node)
                if later:
                    duration_score[node] = min(1.0, (later[0] - start) / requested)
        score = 0.5 * lease_score + 0.25 + 0.25 * duration_score
        return np.argsort(-score, kind="stable")


@hookimpl
def register_policies():
    return [GreedyPolicy, NoPolicy, HaizeaGreedyPolicy]
