"""``[scheduling] reevaluation = compress``: conservative backfilling's compression after early
ends (Mu'alem and Feitelson, IEEE TPDS 2001), against ``move-earlier`` and ``replan``."""

from __future__ import annotations

import pytest

from support import be, simulate

SETTINGS = ("scheduling.backfilling=conservative", "scheduling.policy-preemption=no-preemption")
PLACEMENTS = ("at-start", "when-planned")


def queue_of_four():
    """Four nodes. Running from 0: #1 2 nodes 100 s (really 10 s), #2 2 nodes 50 s. The queue
    of four, each reserved on arrival (conservative): #3 4 nodes 30 s (really 20 s) at 1,
    #4 2 nodes 40 s at 2, #5 1 node 60 s at 3, #6 3 nodes 20 s at 4."""
    return [be(1, 2, 100, 0, actual=10), be(2, 2, 50, 0), be(3, 4, 30, 1, actual=20),
            be(4, 2, 40, 2), be(5, 1, 60, 3), be(6, 3, 20, 4)]


def starts(leases):
    return {lease.id: (lease.start, lease.end) for lease in leases}


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_compress_considers_each_waiting_lease_once_in_arrival_order(placement):
    """The schedule before #1's early end (each lease at the earliest start it was given on
    arrival; `=` planned, nodes counted, one row per node in use)::

        0    10   50   90  100  130  150  190
        |#1..........(2 nodes)..|#3 (4)|
        |#2 (2)....|#4 (2)|     |#3 (4)|
                                |#5 (1)...........|
                                |#6 (3)|

    #1 ends at 10 instead of 100. Compression takes #3, #4, #5, #6 once each, in order of
    arrival, each with its own slot counted free: #3 needs 4 nodes for 30 s: they are all
    free only from 90 (#2 until 50, then #4's 2 nodes until 90) -> 90; #4 fits on #1's two
    nodes at once, 10-50, before #3 -> 10; #5 (1 node, 60 s): 50-90 is free but only 40 s
    long, and 120-180 has a node beside #6 -> 120; #6 (3 nodes, 20 s): 50-70 -> 50::

        0    10   50   70   90  120       180
        |#1|#4 (2)|
        |#2 (2)...|#6 (3)| |#3 (4)|#5 (1)....|

    #4's move freed 50-90, where #3 would now start at 70, but #3 was considered before it:
    compression does not go back. #3 then ends at 110 instead of 120; the second compression
    moves #5 from 120 to 110 (110-170).

    ``move-earlier`` repeats the pass: #3 moves again to 70 (70-100), #5 to 100, and #3's
    early end at 90 brings #5 to 90 (90-150). ``replan`` (Haizea's ``reevaluate_schedule``)
    also takes the reserved leases once each, in scheduling order (here the order of
    arrival), each planned again from scratch while the others keep their reservations: on
    this queue it gives compression's schedule.
    """
    expected = {
        "compress": {1: (0, 10), 2: (0, 50), 3: (90, 110), 4: (10, 50), 5: (110, 170),
                     6: (50, 70)},
        "move-earlier": {1: (0, 10), 2: (0, 50), 3: (70, 90), 4: (10, 50), 5: (90, 150),
                         6: (50, 70)},
    }
    expected["replan"] = expected["compress"]
    for mode, schedule in expected.items():
        leases = queue_of_four()
        simulate(leases, *SETTINGS, f"scheduling.reevaluation={mode}",
                 f"scheduling.placement={placement}")
        assert starts(leases) == schedule, mode


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_compress_never_moves_a_lease_later_than_promised(placement):
    """Every lease starts no later than the start it was given on arrival (the run's
    invariant check also asserts this): #3 100 -> 90, #5 130 -> 110, #6 130 -> 50."""
    leases = queue_of_four()
    simulate(leases, *SETTINGS, "scheduling.reevaluation=compress",
             f"scheduling.placement={placement}")
    promised = {3: 100, 4: 50, 5: 130, 6: 130}
    for lease in leases:
        if lease.id in promised:
            assert lease.start <= promised[lease.id]


@pytest.mark.parametrize("placement, backfilling, means", [
    ("at-start", "conservative", "compress"),
    ("when-planned", "conservative", "move-earlier"),
    ("at-start", "aggressive", "move-earlier"),
    ("when-planned", "intermediate", "move-earlier"),
])
def test_auto_is_compress_for_conservative_counted_and_move_earlier_otherwise(
        placement, backfilling, means):
    """The default, ``reevaluation = auto``, runs what bench/reevaluation.py's table chose
    (README): compression with conservative backfilling and counted nodes, ``move-earlier``
    elsewhere; on the queue of four it gives that re-evaluation's schedule."""
    schedules = []
    for reevaluation in ("auto", means):
        leases = queue_of_four()
        run = simulate(leases, f"scheduling.backfilling={backfilling}",
                       "scheduling.policy-preemption=no-preemption",
                       f"scheduling.reevaluation={reevaluation}",
                       f"scheduling.placement={placement}")
        assert run.scheduler.reevaluation == means
        schedules.append(starts(leases))
    assert schedules[0] == schedules[1]
