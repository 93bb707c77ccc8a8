"""The invariant checker on hand-made allocations: it must catch an over-committed node at the
instant it happens, let back-to-back allocations share a node, and sweep as leases end so that
what it keeps does not grow with the trace.

Two nodes of ``CPU:2 Memory:1024``; allocations are drawn as ``[start, end)``.
"""

from __future__ import annotations

import numpy as np
import pytest

from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest
from lease_manager.kernel.slottable import Reservation
from lease_manager.observers.invariants import InvariantChecker, InvariantViolation

CAPACITY = np.array([[2.0, 1024.0], [2.0, 1024.0]])


def lease(lease_id: int, *spans: tuple[float, float, list[int], float]) -> Lease:
    """A done lease whose allocations are ``(start, end, nodes, cpu per node)``."""
    out = Lease(lease_id, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(1, [1, 0]), 10, 10)
    for start, end, nodes, cpu in spans:
        amounts = np.tile([cpu, 0.0], (len(nodes), 1))
        out.allocations.append(Reservation(out, start, end, np.array(nodes), amounts))
    out.start = spans[0][0]
    out.state = LeaseState.DONE
    return out


def started(checker: InvariantChecker, *leases: Lease) -> None:
    for item in leases:
        checker.lease_started(None, item, item.start)


def test_three_one_core_leases_on_a_two_core_node_are_caught_at_the_instant():
    """n0: A [0, 10) 1 CPU, B [5, 15) 1 CPU, C [8, 9) 1 CPU: at 8 n0 holds 3 CPUs.

    n0  [A----------)
             [B----------)
                [C)
    """
    checker = InvariantChecker(CAPACITY)
    a, b, c = lease(1, (0, 10, [0], 1)), lease(2, (5, 15, [0], 1)), lease(3, (8, 9, [0], 1))
    started(checker, a, b, c)
    for item in (c, a, b):
        checker.lease_ended(None, item, item.allocations[-1].end)
    assert checker.over_commitments() == ["node 0 holds [3.0, 0.0] at time 8, above its "
                                          "capacity [2.0, 1024.0]"]
    with pytest.raises(InvariantViolation, match="node 0 holds"):
        checker.verify()


def test_back_to_back_allocations_share_a_node():
    """n0: A [0, 10) 2 CPUs then B [10, 20) 2 CPUs: the end comes before the start at 10.
    n1: D runs [0, 4), is suspended, and resumes [6, 9) on it, 2 CPUs each time."""
    checker = InvariantChecker(CAPACITY)
    a, b = lease(1, (0, 10, [0], 2)), lease(2, (10, 20, [0], 2))
    d = lease(3, (0, 4, [1], 2), (6, 9, [1], 2))
    started(checker, a, d, b)
    for item in (d, a, b):
        checker.lease_ended(None, item, item.allocations[-1].end)
    checker.verify()


def test_the_sweep_keeps_only_what_leases_still_running_may_overlap():
    """A long lease L runs [0, 1000) on n1; 50 short ones run one after another on n0 and end.
    While L runs, their allocations wait (L's may overlap them); once L ends, the sweep passes
    everything and keeps nothing."""
    checker = InvariantChecker(CAPACITY)
    long = lease(0, (0, 1000, [1], 2))
    started(checker, long)
    for i in range(1, 51):
        short = lease(i, (10 * i, 10 * i + 10, [0], 2))
        started(checker, short)
        checker.lease_ended(None, short, 10 * i + 10)
    assert len(checker._events) == 100   # held back by L's first start, 0
    checker.lease_ended(None, long, 1000)
    assert checker._events == [] and checker.over_commitments() == []
    # with no long lease, each short one is swept as soon as the next has started and ended
    checker = InvariantChecker(CAPACITY)
    for i in range(1, 51):
        short = lease(i, (10 * i, 10 * i + 10, [0], 2))
        started(checker, short)
        checker.lease_ended(None, short, 10 * i + 10)
        assert len(checker._events) == 0


@pytest.mark.parametrize("batch", [1, 2, 3, 4096])
def test_events_applied_in_batches_give_the_same_usage_and_findings(batch):
    """The sweep applies the events it passed together once there are enough of them: however
    many at a time, each node's usage is the same sums in the same order, and the
    over-commitments found are the same, in the sweep's order."""
    rng = np.random.default_rng(7)
    spans = []
    for i in range(60):
        start = float(rng.integers(0, 100))
        nodes = sorted(rng.choice(2, size=int(rng.integers(1, 3)), replace=False).tolist())
        spans.append(lease(i, (start, start + float(rng.integers(0, 20)), nodes,
                               float(rng.choice([0.5, 0.7, 1.0, 1.3])))))
    found = []
    for size in (batch, 10 ** 9):
        checker = InvariantChecker(CAPACITY)
        checker._batch = size
        for item in sorted(spans, key=lambda item: item.start):
            started(checker, item)
        for item in sorted(spans, key=lambda item: item.allocations[-1].end):
            checker.lease_ended(None, item, item.allocations[-1].end)
        if size == batch:
            assert len(checker._passed) < batch   # applied as they came
        found.append((checker.over_commitments(), checker._usage.tolist()))
    assert found[0] == found[1] and found[0][0]


def _random_batch(rng: np.random.Generator, count: int, width: int, events: int,
                  ) -> list[tuple[float, int, int, np.ndarray, np.ndarray]]:
    """Passed events as the sweep keeps them: (time, 0 end / 1 start, sequence, nodes,
    amounts), in time order; a few nodes much more often than the rest, some given as negative
    indices, fractional amounts that may take a node above its capacity (or whole ones, as
    integers; or as float32), node indices as int64 or int32."""
    node_type = rng.choice([np.int64, np.int32])
    amount_type = rng.choice([np.float64, np.float64, np.float32, np.int64])
    weights = 1.0 / np.arange(1, count + 1) ** 1.5
    weights /= weights.sum()
    batch = []
    t = 0.0
    for seq in range(events):
        t += float(rng.choice([0.0, 0.5, 1.0]))
        size = int(rng.integers(1, min(count, 8) + 1))
        nodes = rng.choice(count, size=size, replace=False, p=weights)
        if rng.random() < 0.2:
            nodes = nodes - count   # (the same nodes, counted from the end)
        amounts = rng.choice([0.1, 0.25, 1 / 3, 0.5, 0.7, 1.0, 1.3], size=(size, width))
        amounts *= rng.choice([1.0, 1.0, 1.0, 512.0], size=width)
        if amount_type is np.int64:
            amounts = np.ceil(amounts)
        batch.append((t, int(rng.random() < 0.55), seq, nodes.astype(node_type),
                      amounts.astype(amount_type)))
    return batch


@pytest.mark.parametrize("seed", range(6))
def test_the_batched_sweep_adds_and_finds_exactly_what_one_event_at_a_time_does(seed):
    """Random batches (over-commitments, fractional amounts, one to three resources, nodes of
    different capacities or alike, nodes in many events of a batch and a few in most of them):
    the batch path's usage is bitwise the one of applying each event in turn, and it reports
    the same over-commitments in the same order (ten at most)."""
    rng = np.random.default_rng(1000 + seed)
    for _ in range(6):
        count = int(rng.choice([1, 2, 5, 40, 300]))
        width = int(rng.integers(1, 4))
        capacity = rng.choice([1.0, 2.0, 3.0], size=(count, width))
        if rng.random() < 0.4:
            capacity[:] = capacity[0]   # (nodes alike: one capacity row to compare with)
        batched, reference = InvariantChecker(capacity), InvariantChecker(capacity)
        assert batched._uniform == reference._uniform == bool((capacity == capacity[0]).all())
        for _ in range(4):
            batch = _random_batch(rng, count, width, int(rng.choice([1, 30, 300])))
            batched._passed = list(batch)
            batched._apply()
            reference._apply_one_by_one(batch)
            assert batched._usage.tobytes() == reference._usage.tobytes()
            assert batched._over == reference._over
            assert batched._passed == [] and batched._passed_rows == 0
