"""Hand-computed schedules for every backfilling mode on a 4-node site (1 CPU per node)."""

from __future__ import annotations

import pytest

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import LeaseState

from support import HOUR, MIN, be, five_leases, simulate, times


def test_off_head_of_line_blocks():
    """No backfilling: nothing passes #2, which waits for all four nodes.

    node  0:00     1:00  1:30  2:00 2:20      3:30
    n0    [#1------][#2--][#3--][#5]
    n1    [#1------][#2--][#3--]
    n2              [#2--][#4-----------------]
    n3              [#2--][#4-----------------]
    """
    leases = five_leases()
    run = simulate(leases, "scheduling.backfilling=off")
    assert times(run, leases) == {
        1: (0, HOUR), 2: (HOUR, 90 * MIN), 3: (90 * MIN, 2 * HOUR),
        4: (90 * MIN, 210 * MIN), 5: (2 * HOUR, 140 * MIN)}


def test_aggressive_backfills_around_one_reservation():
    """EASY: #2 holds the one future reservation (1:00); #3 and #5 fit before it.

    node  0:00 0:02  0:32 0:52 1:00  1:30         3:30
    n0    [#1-----------------][#2--]
    n1    [#1-----------------][#2--]
    n2       [#3---][#5]       [#2--][#4----------]
    n3       [#3---]           [#2--][#4----------]

    #4 (2 h) cannot finish before 1:00 and may not reserve while #2 holds the reservation; it
    gets one once #2 starts.
    """
    leases = five_leases()
    run = simulate(leases, "scheduling.backfilling=aggressive")
    assert times(run, leases) == {
        1: (0, HOUR), 2: (HOUR, 90 * MIN), 3: (2 * MIN, 32 * MIN),
        4: (90 * MIN, 210 * MIN), 5: (32 * MIN, 52 * MIN)}


@pytest.mark.parametrize("mode", ["conservative", "intermediate"])
def test_every_lease_reserves_on_arrival(mode):
    """Conservative (and intermediate with 3 reservations): every lease gets a reservation when
    it arrives; #4 is promised 1:30 at 0:03, #5 is backfilled at 0:32 in front of it.

    node  0:00 0:02  0:32 0:52 1:00  1:30         3:30
    n0    [#1-----------------][#2--][#4----------]
    n1    [#1-----------------][#2--][#4----------]
    n2       [#3---][#5]       [#2--]
    n3       [#3---]           [#2--]
    """
    leases = five_leases()
    run = simulate(leases, f"scheduling.backfilling={mode}",
                   "scheduling.backfilling-reservations=3")
    assert times(run, leases) == {
        1: (0, HOUR), 2: (HOUR, 90 * MIN), 3: (2 * MIN, 32 * MIN),
        4: (90 * MIN, 210 * MIN), 5: (32 * MIN, 52 * MIN)}
    assert leases[3].promised_start == 90 * MIN


def test_intermediate_limits_the_number_of_reservations():
    """Intermediate with one reservation behaves as aggressive; with two, #4 reserves at once.

    Leases: #1 4 nodes 1 h at 0, #2 2 nodes 1 h at 0:01, #3 2 nodes 1 h at 0:02,
    #4 4 nodes 1 h at 0:03, #5 1 node 30 min at 0:04.

    With two reservations #2 and #3 both reserve 1:00-2:00; #4 waits in the queue and starts
    at 2:00. With one, #3 cannot reserve, and still starts at 1:00 (it fits when the queue is
    processed at 1:00); #5 starts at 2:00 either way only if it cannot pass #4.
    """
    def leases():
        return [be(1, 4, HOUR, 0), be(2, 2, HOUR, MIN), be(3, 2, HOUR, 2 * MIN),
                be(4, 4, HOUR, 3 * MIN), be(5, 1, 30 * MIN, 4 * MIN)]

    two = leases()
    simulate(two, "scheduling.backfilling=intermediate", "scheduling.backfilling-reservations=2")
    assert [l.promised_start for l in two] == [0, HOUR, HOUR, 2 * HOUR, 3 * HOUR]
    one = leases()
    simulate(one, "scheduling.backfilling=intermediate", "scheduling.backfilling-reservations=1")
    assert one[1].promised_start == HOUR
    assert one[2].start == HOUR and one[2].promised_start == HOUR
    assert one[3].start == 2 * HOUR


def test_premature_end_moves_reservations_up():
    """HPC paradigm: #1 reserves 1 h but ends at 0:30; #2's reservation (1:00) and #3's
    (1:30) move up to 0:30 and 1:00. Nothing starts later than promised.

    planned:  n0-3 [#1 0:00-1:00][#2 1:00-1:30][#3 1:30-2:00]
    actual:   n0-3 [#1 0:00-0:30][#2 0:30-1:00][#3 1:00-1:30]
    """
    leases = [be(1, 4, HOUR, 0, actual=30 * MIN), be(2, 4, 30 * MIN, MIN),
              be(3, 4, 30 * MIN, 2 * MIN)]
    run = simulate(leases, "scheduling.backfilling=conservative")
    assert [l.promised_start for l in leases] == [0, HOUR, 90 * MIN]
    assert times(run, leases) == {1: (0, 30 * MIN), 2: (30 * MIN, HOUR), 3: (HOUR, 90 * MIN)}


def test_premature_end_with_aggressive_moves_the_reservation_and_backfills():
    """EASY: #2 reserved at 1:00 moves to 0:30 when #1 ends early; #3, queued behind it
    without a reservation, then starts when #2 ends.

    n0-1  [#1 0:00-0:30][#2 0:30-1:00][#3 1:00-1:20]
    n2-3  [#1 0:00-0:30][#2 0:30-1:00]
    """
    leases = [be(1, 4, HOUR, 0, actual=30 * MIN), be(2, 4, 30 * MIN, MIN),
              be(3, 2, 20 * MIN, 2 * MIN)]
    run = simulate(leases, "scheduling.backfilling=aggressive")
    assert times(run, leases) == {1: (0, 30 * MIN), 2: (30 * MIN, HOUR),
                                  3: (HOUR, 80 * MIN)}


def test_reevaluation_repeats_until_nothing_can_move():
    """Two nodes, conservative. #1 (n0, 2 h) ends early at 0:10. In scheduling order, #3 (both
    nodes, 30 min, promised 2:00) cannot move yet: n1 is held by #2 until 1:00 and by #4 until
    2:00. #4 (1 node, 1 h, promised 1:00 on n1) moves to n0 at 0:10. That frees n1 from 1:00,
    so a second pass moves #3 to 1:10, when both nodes are free. A single pass would leave #3
    waiting until 2:00 although it could start earlier.

    promised                         after #1 ends at 0:10
    n0 [#1 0:00------------2:00][#3]   n0 [#1][#4 0:10-1:10][#3 1:10-1:40]
    n1 [#2 0:00-1:00][#4 1:00-2:00][#3]   n1 [#2 0:00-1:00]   [#3 1:10-1:40]
    """
    leases = [be(1, 1, 2 * HOUR, 0, actual=10 * MIN), be(2, 1, HOUR, 0),
              be(3, 2, 30 * MIN, MIN), be(4, 1, HOUR, 2 * MIN)]
    run = simulate(leases, "scheduling.backfilling=conservative",
                   "scheduling.reevaluation=move-earlier", resources="2 CPU:1 Memory:1024")
    assert [l.promised_start for l in leases] == [0, 0, 2 * HOUR, HOUR]
    assert times(run, leases) == {1: (0, 10 * MIN), 2: (0, HOUR), 3: (70 * MIN, 100 * MIN),
                                  4: (10 * MIN, 70 * MIN)}


def test_multicore_nodes_are_shared_and_never_overcommitted():
    """Two 8-core nodes. One-core VMs of several leases share nodes (greedy prefers the node
    with fewer leases, and fills it as far as the lease's VMs fit).

    #1 6 VMs 1 h at 0 -> 6 cores of n0; #2 4 VMs 1 h at 0 -> n1 (fewer leases), 4 cores;
    #3 6 VMs 30 min at 0 -> n1 takes 4 (8 - 4 free), n0 the other 2: both nodes full;
    #4 1 VM at 0 waits for #3 to end at 0:30.

    n0  cores 0-5 #1 [0:00-1:00]   cores 6-7 #3 [0:00-0:30]  then #4 [0:30-1:00]
    n1  cores 0-3 #2 [0:00-1:00]   cores 4-7 #3 [0:00-0:30]
    """
    leases = [be(1, 6, HOUR, 0), be(2, 4, HOUR, 0), be(3, 6, 30 * MIN, 0), be(4, 1, 30 * MIN, 0)]
    run = simulate(leases, "scheduling.backfilling=aggressive", resources="2 CPU:8 Memory:0")
    assert times(run, leases)[4] == (30 * MIN, HOUR)
    alloc = {l.id: l.allocations[0] for l in leases}
    assert alloc[1].nodes.tolist() == [0] and alloc[1].amounts[0][0] == 6
    assert alloc[2].nodes.tolist() == [1]
    assert sorted(alloc[3].vm_nodes) == [0, 0, 1, 1, 1, 1]
    assert run.invariants is not None and run.invariants.over_commitments() == []


def test_lease_larger_than_the_site_is_rejected_and_counted():
    leases = [be(1, 5, HOUR, 0), be(2, 1, HOUR, 0)]
    run = simulate(leases)
    assert leases[0].state is LeaseState.REJECTED
    assert "larger than the site" in leases[0].reason
    assert run.summary["leases_rejected"] == 1 and run.summary["leases_completed"] == 1


def test_a_huge_mixed_lease_is_refused_without_placing_its_vms():
    """50 node sets of 1,000,000 VMs on 4 nodes took 98.6 CPU-s and 7.7 GB before being
    refused as larger than the site (the mapper placed them VM by VM); it is now refused from
    per-node slot counts, before any placement."""
    import time

    import numpy as np

    from lease_manager.kernel.lease import Lease, LeaseType, VMRequest

    def mixed(lease_id: int, counts: tuple[int, ...]) -> Lease:
        vectors = np.array([[0.5 + 0.01 * i, 1.0] for i in range(len(counts))])
        return Lease(lease_id, LeaseType.BEST_EFFORT, 0, VMRequest(counts, vectors), HOUR, HOUR)

    leases = [mixed(1, (1_000_000,) * 50), mixed(2, (2, 3)), mixed(3, (1,) * 9),
              mixed(4, (1, 5))]
    began = time.process_time()
    run = simulate(leases)
    assert time.process_time() - began < 5
    assert leases[0].state is LeaseState.REJECTED
    assert "larger than the site: 1000000 VMs of one node set" in leases[0].reason
    assert leases[1].state is LeaseState.DONE        # 5 VMs of about half a CPU: fits
    assert "at most 8 of its smallest size" in leases[2].reason
    assert "one node set requested, the site can host at most 4" in leases[3].reason
    assert run.summary["leases_rejected"] == 3


def test_every_lease_is_accounted_for_once():
    leases = five_leases()
    run = simulate(leases, "scheduling.backfilling=conservative")
    assert run.accounting.recorded == 5
    with pytest.raises(AssertionError, match="twice"):
        run.accounting.record(leases[0])


@pytest.mark.parametrize("placement", ["when-planned", "at-start"])
@pytest.mark.parametrize("mode", ["off", "aggressive", "intermediate"])
def test_the_arrays_beside_the_queue_follow_it(mode, placement):
    """After every scheduling cycle, each queued lease's key, VM count, shape id and length
    sit at its position in the arrays beside the queue, and the census counts the queued
    leases of each shape: leases leave the queue from the head (FCFS) or anywhere in it."""
    import collections
    import random

    from lease_manager.config.schema import load_config
    from lease_manager.plugins import Plugins
    from lease_manager.run import Run

    from support import be as lease_of

    rng = random.Random(7)
    leases, t = [], 0.0
    for i in range(1, 201):
        t += rng.choice([0, 0, 30, 120, 600])
        leases.append(lease_of(i, rng.randint(1, 4), rng.choice([300, 900, 3600]), t,
                               actual=rng.choice([None, 60.0, 200.0])))
    checked = []

    class Check:
        @hookimpl
        def scheduling_cycle_end(self, ctx, now):
            sched = run.scheduler
            queue, waiting = sched.queue, sched.waiting
            assert queue is waiting.leases
            assert [sched.queue_policy.sort_key(l) for l in queue] == waiting.keys
            assert list(waiting.counts) == [l.vms.count for l in queue]
            assert list(waiting.shapes) == [waiting.shape_id(l) for l in queue]
            assert list(waiting.lengths) == [sched.length(l) for l in queue]
            census = collections.Counter(waiting.shapes)
            assert {k: n for k, n in waiting.census.items() if n} == dict(census)
            checked.append(len(queue))

    plugins = Plugins(entry_points=False, extra=[Check()])
    config = load_config(None, plugins.schema, [
        "simulation.resources=4 CPU:1 Memory:1024", f"scheduling.backfilling={mode}",
        "scheduling.backfilling-reservations=3", f"scheduling.placement={placement}"])
    run = Run(config, plugins, leases=leases)
    run.run()
    assert all(l.state is LeaseState.DONE for l in leases)
    assert max(checked) >= 20   # (the queue was long at times)
