"""``[scheduling] reevaluation = replan``: Haizea's ``reevaluate_schedule`` after early ends."""

from __future__ import annotations

import pytest

from lease_manager.config.schema import load_config
from lease_manager.kernel.events import EventKind
from lease_manager.plugins import Plugins
from lease_manager.run import Run

from support import be, simulate

SETTINGS = ("scheduling.backfilling=aggressive", "scheduling.policy-preemption=no-preemption")


def four_leases():
    """#1 1 VM 40 s (really 7 s) at 2; #2 2 VMs 20 s at 3; #3 2 VMs 10 s (really 8 s) at 3;
    #4 1 VM 30 s at 6."""
    return [be(1, 1, 40, 2, actual=7), be(2, 2, 20, 3), be(3, 2, 10, 3, actual=8),
            be(4, 1, 30, 6)]


def test_move_earlier_keeps_the_reserved_nodes():
    """Three nodes of one CPU. #3 cannot start at 3 and reserves the earliest slot, 23, on the
    first nodes free then (1, 2). #1 ends at 9 instead of 42: #3 still cannot start earlier
    (one node free), so it keeps nodes 1 and 2, and #4 backfills node 0 at once::

        node 0  |#1 2-9|#4 9-------------39|
        node 1  |  #2 3------23|#3 23-31|
        node 2  |  #2 3------23|#3 23-31|
    """
    leases = four_leases()
    simulate(leases, *SETTINGS, "scheduling.reevaluation=move-earlier",
             resources="3 CPU:1 Memory:1024")
    assert [(lease.start, lease.end) for lease in leases] == [
        (2, 9), (3, 23), (23, 31), (9, 39)]
    assert leases[2].allocations[-1].nodes.tolist() == [1, 2]


def test_replan_plans_the_future_reservation_again_from_scratch():
    """Same leases. At #1's early end (9) Haizea gives up #3's reservation and plans it
    again: not now (one node free), so at the next end of a VM reservation, 23, where the
    greedy order now ties on all three free nodes and takes 0 and 1. Node 0 is then taken
    from 23, #4 (30 s) no longer fits in front of it and waits until 23, on node 2::

        node 0  |#1 2-9|      |#3 23-31|
        node 1  |  #2 3------23|#3 23-31|
        node 2  |  #2 3------23|#4 23-------------53|

    Haizea 1.0 itself gives these times (its own run of this workload, 3 nodes of
    CPU:100 Memory:1024, suspension none: #4 starts at 23, ends at 53).
    """
    leases = four_leases()
    simulate(leases, *SETTINGS, "scheduling.reevaluation=replan",
             resources="3 CPU:1 Memory:1024")
    assert [(lease.start, lease.end) for lease in leases] == [
        (2, 9), (3, 23), (23, 31), (23, 53)]
    assert leases[2].allocations[-1].nodes.tolist() == [0, 1]
    assert leases[3].allocations[-1].nodes.tolist() == [2]


def test_replan_moves_a_reservation_earlier_when_it_can_start_now():
    """Haizea's ``reservation_prematureend.lwf`` with 4 nodes: #1 (1 node, 1 h, really
    30 min) runs from 0; #2 (4 nodes, 15 min) arrives at 15 min and reserves 1:00; #1's
    early end at 30 min re-plans #2 from scratch: it starts at once::

        node 0  |#1 0-30min|#2 30-45min|
        node 1-3           |#2 30-45min|
    """
    leases = [be(1, 1, 3600, 0, actual=1800), be(2, 4, 900, 900)]
    simulate(leases, *SETTINGS, "scheduling.reevaluation=replan")
    assert [(lease.start, lease.end) for lease in leases] == [(0, 1800), (1800, 2700)]


@pytest.mark.parametrize("mode", ["move-earlier", "replan"])
def test_cancellation_reevaluates_by_the_mode(mode):
    """A cancelled lease's nodes go to the reserved lease in either mode: #1 (4 nodes,
    100 s) is cancelled at 10, and #2 (4 nodes, reserved at 100) starts at 10."""
    leases = [be(1, 4, 100, 0), be(2, 4, 50, 1)]
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, ["simulation.resources=4 CPU:1 Memory:1024",
                                                *SETTINGS, f"scheduling.reevaluation={mode}"])
    run = Run(config, plugins, leases=leases)
    run.timeline.push(10, EventKind.CALL, lambda now: run.scheduler.cancel(leases[0], now))
    run.run()
    assert leases[1].start == 10
