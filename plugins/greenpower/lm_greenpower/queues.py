"""Kassab et al.'s orders as queue policies, for trace replays and the daemon (online).

The wait queue is kept in the order's sort (ties by arrival): ``lpt``, ``spt``, ``lpn``,
``lptpn``, ``lpp`` (its possible places counted on the site's envelope, ``[power]
power-cap``, on the grid of ``[planning] interval``) and ``random`` (arrival order). A lease's
power is its own ``watts`` times its VMs, or else its share of the node model's dynamic power.

``twoqs`` has no order of single leases: it interleaves two sorts of a whole set. It holds
arriving leases back and, at each scheduling cycle, queues those that arrived, in TwoQs order
among themselves (after the leases already queued): exact when leases arrive together (a batch
at time 0, as in the paper's instances), first come first served between cycles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from lease_manager import Lease, QueuePolicy

from .orders import possible_places, two_queues


def lease_watts(lease: Lease, ctx: Any) -> float:
    """The lease's dynamic power, all VMs (W)."""
    text = lease.extra.get("watts")
    if text is not None:
        try:
            return float(text) * lease.vms.count
        except ValueError:
            return 0.0
    model = ctx.power
    if model is None:
        return 0.0
    cpu = model.cpu
    share = float(lease.vms.total[cpu]) / float(ctx.site.capacity[0, cpu])
    return max(share * float(model.full[0, model.top_level] - model.idle[0]), 0.0)


class OrderQueue(QueuePolicy):
    """The wait queue in one of Kassab et al.'s orders."""

    def key(self, lease: Lease) -> float:
        raise NotImplementedError

    def sort_key(self, lease: Lease) -> Any:
        return (self.key(lease), lease.submit, lease.id)


class LPTQueue(OrderQueue):
    """Queue in largest processing time (requested) first order."""

    name = "lpt"

    def key(self, lease: Lease) -> float:
        return -lease.requested_duration


class SPTQueue(OrderQueue):
    """Queue in shortest processing time (requested) first order."""

    name = "spt"

    def key(self, lease: Lease) -> float:
        return lease.requested_duration


class LPNQueue(OrderQueue):
    """Queue in largest power need first order."""

    name = "lpn"

    def key(self, lease: Lease) -> float:
        return -lease_watts(lease, self.ctx)


class LPTPNQueue(OrderQueue):
    """Queue in largest processing time x power need first order."""

    name = "lptpn"

    def key(self, lease: Lease) -> float:
        return -lease.requested_duration * lease_watts(lease, self.ctx)


class RandomQueue(OrderQueue):
    """Queue in arrival order (the workload's order: Kassab et al.'s Random)."""

    name = "random"

    def key(self, lease: Lease) -> float:
        return 0.0


class LPPQueue(OrderQueue):
    """Queue in least possible places first order (on the site's envelope)."""

    name = "lpp"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.interval = float(ctx.config.get("planning", "interval"))
        self._cap: np.ndarray | None = None

    def _envelope(self) -> np.ndarray:
        if self._cap is None:
            cap = self.ctx.power_cap
            if cap is None:
                self._cap = np.full(1, math.inf)
            else:
                end = float(cap.times[-1]) + self.interval
                starts = np.arange(0.0, end, self.interval)
                self._cap = cap.at(starts)
        return self._cap

    def key(self, lease: Lease) -> float:
        model = self.ctx.power
        static = float(model.idle[0] - model.off_watts[0]) if model is not None else 0.0
        length = max(1, math.ceil(lease.requested_duration / self.interval - 1e-9))
        need = static + lease_watts(lease, self.ctx)
        return float(possible_places(np.array([length]), np.array([need]),
                                     self._envelope())[0])


class TwoQsQueue(QueuePolicy):
    """Queue each cycle's arrivals in TwoQs order (LPTPN and LPT queues in turn)."""

    name = "twoqs"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._rank: dict[int, tuple[float, int]] = {}

    def hold(self, lease: Lease, now: float) -> bool:
        return True

    def release(self, held: Sequence[Lease], now: float) -> Iterable[Lease]:
        batch = sorted(held, key=lambda l: (l.submit, l.id))
        lpt = sorted(batch, key=lambda l: -l.requested_duration)
        lptpn = sorted(batch, key=lambda l: -l.requested_duration * lease_watts(l, self.ctx))
        ordered = two_queues(lptpn, lpt)
        for rank, lease in enumerate(ordered):
            self._rank[lease.id] = (now, rank)
        return ordered

    def sort_key(self, lease: Lease) -> Any:
        return (*self._rank.get(lease.id, (lease.submit, 0)), lease.id)


QUEUES = [LPTQueue, SPTQueue, LPNQueue, LPTPNQueue, TwoQsQueue, LPPQueue, RandomQueue]
