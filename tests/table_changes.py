"""One seeded random change of a slot table, shared by the tests that replay the same changes
on two tables and compare their answers."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np

from lease_manager.errors import OvercommitError
from lease_manager.kernel.slottable import Reservation, SlotTable

INF = float("inf")


def random_change(t: SlotTable, rng: random.Random, live: list[Reservation],
                  reservation: Callable[[random.Random, float], Reservation]
                  ) -> tuple[object, list[Reservation]]:
    """Add a ``reservation(rng, horizon)`` (half the time; it may be refused), or remove,
    truncate or extend one of ``live``, or advance the horizon. Returns ``"refused"`` or
    None, and the reservations still live."""
    op = rng.random()
    lo = t.horizon
    outcome: object = None
    if op < 0.5:
        r = reservation(rng, lo)
        try:
            live.append(t.add(r))
        except OvercommitError:
            outcome = "refused"
    elif op < 0.6 and live:
        t.remove(live.pop(rng.randrange(len(live))))
    elif op < 0.75 and live:
        r = rng.choice(live)
        t.truncate(r, max(r.start, lo + 0.5) + rng.choice([0, 0.5, 1, 2, 4]))
        if r.end <= r.start:
            live.remove(r)
    elif op < 0.85 and live:
        r = rng.choice(live)
        if r.end != INF:
            try:
                t.extend(r, r.end + rng.choice([0.5, 1, 3, INF]))
            except OvercommitError:
                outcome = "refused"
    else:
        ended = t.advance(lo + rng.choice([0.5, 1, 2, 4]))
        live = [r for r in live if r not in ended]
    return outcome, live


def vm_reservation(rng: random.Random, start: float, end: float, nodes: Sequence[int],
                   counts: Sequence[int], vector: np.ndarray) -> Reservation:
    """``counts[i]`` VMs of ``vector`` on ``nodes[i]`` over ``[start, end)``, drawing one unit
    of power a VM; 7 times in 10 (drawn from ``rng``) with its VMs' nodes and shape."""
    r = Reservation(None, start, end, np.array(nodes), np.array([c * vector for c in counts]),
                    np.array([float(sum(counts))]))
    if rng.random() < 0.7:
        r.vm_nodes = tuple(n for n, c in zip(nodes, counts) for _ in range(c))
        r.vm_shape = vector.tobytes()
    return r
