"""``greedy``'s order when every node's free capacity lasts to the end is the general scores'
order, node for node."""

from __future__ import annotations

import math
import random

import numpy as np

from lease_manager.errors import OvercommitError
from lease_manager.kernel.resources import parse_site
from lease_manager.kernel.slottable import Reservation, SlotTable
from lease_manager.policies.host_selection import GreedyPolicy


def test_the_order_by_lease_counts_is_the_order_by_scores():
    """On 40 seeded random tables (1-CPU reservations, up to 6 on a node: the count is capped
    at 4), for starts and ends of every kind (zero, finite and unlimited lengths), the order
    ``greedy`` returns equals the order of the whole score (``_by_scores``), whether every
    node's capacity lasts to the end (the counts alone are sorted) or not."""
    rng = random.Random(11)
    policy = GreedyPolicy(None)   # type: ignore[arg-type]   # (it reads no context)
    by_counts = policy._by_counts
    calls = {"counts": 0, "scores": 0}

    def counted(counts: np.ndarray) -> np.ndarray:
        calls["counts"] += 1
        return by_counts(counts)
    policy._by_counts = counted   # type: ignore[method-assign]
    for _ in range(40):
        t = SlotTable(parse_site("8 CPU:6 Memory:6"))
        for _ in range(rng.randint(5, 40)):
            start = float(rng.randint(0, 30))
            end = start + rng.choice([1.0, 3.0, 10.0, 25.0, math.inf])
            node = rng.randrange(8)
            try:
                t.add(Reservation(None, start, end, np.array([node]), np.array([[1.0, 0.0]])))
            except OvercommitError:
                continue
        t.advance(float(rng.randint(0, 5)))
        for _ in range(10):
            start = float(rng.randint(int(t.horizon), 40)) + rng.choice([0.0, 0.5])
            end = start + rng.choice([0.0, 1.0, 2.0, 8.0, 30.0, math.inf])
            before = calls["counts"]
            got = policy.order_hosts(None, start, end, t.view())   # type: ignore[arg-type]
            want = policy._by_scores(t.lease_counts_at(start),
                                     t.capacity_lasts_until(start, end) - start, end - start)
            assert got.tolist() == want.tolist(), (start, end)
            calls["scores"] += calls["counts"] == before
    assert calls["counts"] > 50 and calls["scores"] > 50
