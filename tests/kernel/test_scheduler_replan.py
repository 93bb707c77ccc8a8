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


def test_simultaneous_early_ends_are_taken_in_haizeas_order():
    """Three nodes. #1 (100 s, really 10 s) on node 0, #2 (50 s, really 10 s) on node 1, #3
    (200 s) on node 2, all at 0; #4 (30 s) at 1 reserves #2's end, 50, on node 1. At 10 both
    #1 and #2 end early. Haizea takes early ends in the order of the reservations' ends: #2
    (50) first, so #4 is re-planned while #1 still holds node 0 and starts at once on node 1;
    only then does #1 end. (Taken the other way, #4 would start on node 0.) Haizea 1.0 run on
    this workload starts #4 at 10 on its second node::

        node 0  |#1 0-10|
        node 1  |#2 0-10|#4 10---40|
        node 2  |#3 0-----------------200|
    """
    leases = [be(1, 1, 100, 0, actual=10), be(2, 1, 50, 0, actual=10), be(3, 1, 200, 0),
              be(4, 1, 30, 1)]
    simulate(leases, *SETTINGS, "scheduling.reevaluation=replan",
             resources="3 CPU:1 Memory:1024")
    assert (leases[3].start, leases[3].end) == (10, 40)
    assert leases[3].allocations[-1].nodes.tolist() == [1]
