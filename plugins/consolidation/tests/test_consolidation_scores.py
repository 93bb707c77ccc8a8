"""Resource contention (eqs 5.1-5.4) and the EA scores (eqs 6.1-6.3, Algorithms 1-3) on a
hand-computed slot table.

Three nodes of 4 CPUs and 4096 MB; every VM is 1 CPU and 1024 MB, so a lease's CPU and Memory
requirement on a node is (its VMs there) x 1 and x 1024::

    time        0        20        50    60        100
    node 0   A  [CPU,Memory] 1 VM ................................)
             B  [Memory,IO] 2 VMs, IO 10/VM ....)                      <- ends halfway
    node 1   C  [Memory] 2 VMs ...................................)
             D  [IO,Net-in] 1 VM, IO 30, Net-in 5 ................)
    node 2   D  (its other VM) ...................................)
             F  [IO] 1 VM, IO 8 ..................................)
             E  [CPU,Memory] 1 VM                      [..........)    <- future reservation

RC(20): node 0 Memory is stressed by A and B: 1024 + 2048 = 3072 (CPU: A alone, IO: B alone);
node 1: C and D share nothing (C's two VMs are one lease: no contention); node 2 IO: D and F,
30 + 8 = 38. RC(20) = 3110. RC(70): B has ended and E shares nothing with D or F:
RC(70) = 38.

A new lease X stresses {Memory, IO}, tentative interval [20, 100):

- ea-consolidation, at 20: node 0: A's Memory 1024 + B's Memory 2048 + B's IO 20 = 3092;
  node 1: C's Memory 2048 + D's IO 30 = 2078; node 2: D's IO 30 + F's IO 8 = 38.
  Order: 2, 1, 0.
- ea-time-horizon over [20, 100) (80 s): node 0: A 1024 x 80 + B 2068 x 30 (B ends at 50)
  = 143,960 -> 1799.5; node 1: 2078 x 80 -> 2078; node 2: 38 x 80 + E's 1024 x 40 = 44,000
  -> 550. Order: 2, 0, 1: node 0 moves ahead of node 1 because B ends halfway.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lease_manager.characteristics import Contributions, parse_stress_on
from lm_consolidation.contention import node_state_at, resource_contention_at
from lm_consolidation.host_selection import EAConsolidation, EATimeHorizon, node_scores

from lmc_helpers import lease, make_run, reserve, table


@pytest.fixture
def scenario():
    tab = table()
    leases = {
        "A": lease(1, 1, 100, stress="CPU,Memory"),
        "B": lease(2, 2, 50, stress="Memory,IO", req_IO=10),
        "C": lease(3, 2, 100, stress="Memory"),
        "D": lease(4, 2, 100, stress="IO Net-in", req_IO=30, req_Net_in=5),
        "E": lease(5, 1, 40, stress={"CPU", "Memory"}),
        "F": lease(6, 1, 100, stress="IO", req_IO=8),
    }
    reserve(tab, leases["A"], 0, 100, [0])
    reserve(tab, leases["B"], 0, 50, [0, 0])
    reserve(tab, leases["C"], 0, 100, [1, 1])
    reserve(tab, leases["D"], 0, 100, [1, 2])
    reserve(tab, leases["F"], 0, 100, [2])
    reserve(tab, leases["E"], 60, 100, [2])
    return tab, leases, Contributions(tab.nodes.types.names)


def test_resource_contention_eqs_5_1_to_5_4(scenario):
    tab, _, contrib = scenario
    assert resource_contention_at(tab, 20, contrib) == 3110
    assert resource_contention_at(tab, 70, contrib) == 38
    assert resource_contention_at(tab, 100, contrib) == 0
    count, total = node_state_at(tab, 20, contrib)
    #                            CPU  Memory IO  Net-in Net-out
    assert count.tolist() == [[1, 2, 1, 0, 0],        # A, B
                              [0, 1, 1, 1, 0],        # C (2 VMs, one lease), D
                              [0, 0, 2, 1, 0]]        # D, F
    assert total[0].tolist() == [1, 3072, 20, 0, 0]
    assert total[2].tolist() == [0, 0, 38, 5, 0]


def test_simple_score_at_the_tentative_start(scenario):
    tab, _, contrib = scenario
    x = lease(10, 1, 80, stress="Memory,IO", req_IO=50)
    assert node_scores(x, 20, 100, tab, contrib).tolist() == [3092, 2078, 38]
    # at 60, B has ended and E has started on node 2
    assert node_scores(x, 60, 100, tab, contrib).tolist() == [1024, 2078, 1062]


def test_time_horizon_score_differs_when_a_lease_ends_halfway(scenario):
    tab, _, contrib = scenario
    x = lease(10, 1, 80, stress="Memory,IO", req_IO=50)
    scores = node_scores(x, 20, 100, tab, contrib, horizon=True)
    assert scores.tolist() == pytest.approx([1799.5, 2078, 550])
    run = make_run()
    simple, horizon = EAConsolidation(run.ctx), EATimeHorizon(run.ctx)
    assert simple.order_hosts(x, 20, 100, tab).tolist() == [2, 1, 0]
    assert horizon.order_hosts(x, 20, 100, tab).tolist() == [2, 0, 1]


def test_time_horizon_matches_algorithm_3_step_by_step(scenario):
    """Algorithm 3 literally: split [t, t + d) at the node's change points, weigh the simple
    score at each step's start by the step's length, divide by d."""
    tab, _, contrib = scenario
    x = lease(10, 1, 80, stress="Memory,IO")
    for start, end in ((20, 100), (0, 30), (45, 75), (10, 200)):
        expected = []
        for node in range(3):
            points = tab.change_points(start, end, node=node)
            t, acc = start, 0.0
            for chp in [*points, end]:
                acc += node_scores(x, t, end, tab, contrib)[node] * (chp - t)
                t = chp
            expected.append(acc / (end - start))
        assert node_scores(x, start, end, tab, contrib, horizon=True).tolist() == \
            pytest.approx(expected), (start, end)


def test_scores_count_only_resources_the_lease_stresses(scenario):
    tab, _, contrib = scenario
    cpu_only = lease(11, 1, 80, stress="CPU")
    assert node_scores(cpu_only, 20, 100, tab, contrib).tolist() == [1, 0, 0]
    assert node_scores(cpu_only, 60, 100, tab, contrib).tolist() == [1, 0, 1]
    nothing = lease(12, 1, 80)
    assert node_scores(nothing, 20, 100, tab, contrib).tolist() == [0, 0, 0]


def test_a_lease_is_not_in_contention_with_itself(scenario):
    """B re-placing itself (its reservation still in the table) does not count itself."""
    tab, leases, contrib = scenario
    assert node_scores(leases["B"], 20, 50, tab, contrib).tolist() == [1024, 2078, 38]


def test_ties_by_node_index_or_by_greedy():
    """Two nodes; Z (CPU) on node 0. W stresses Memory: both nodes score 0. By node index:
    0, 1; with tie-break = greedy: node 1 first (fewer leases)."""
    tab = table("2 CPU:4 Memory:4096")
    reserve(tab, lease(1, 1, 100, stress="CPU"), 0, 100, [0])
    w = lease(2, 1, 50, stress="Memory")
    assert EAConsolidation(make_run().ctx).order_hosts(w, 0, 50, tab).tolist() == [0, 1]
    greedy = make_run("consolidation.tie-break=greedy")
    assert EAConsolidation(greedy.ctx).order_hosts(w, 0, 50, tab).tolist() == [1, 0]
    assert EATimeHorizon(greedy.ctx).order_hosts(w, 0, 50, tab).tolist() == [1, 0]


def test_unlimited_interval_falls_back_to_the_simple_score(scenario):
    tab, _, contrib = scenario
    x = lease(10, 1, 80, stress="Memory,IO")
    assert node_scores(x, 20, math.inf, tab, contrib, horizon=True).tolist() == \
        node_scores(x, 20, math.inf, tab, contrib).tolist()


def test_requirements_on_a_site_without_memory():
    """Memory is not a site type and not given: the lease still stresses it (the flag counts)
    but adds 0; an explicit req-Memory counts per VM."""
    tab = table("1 CPU:4")
    a = lease(1, 1, 10, stress="Memory")
    a.vms = type(a.vms).uniform(1, [1.0])
    b = lease(2, 2, 10, stress="Memory", req_Memory=100)
    b.vms = type(b.vms).uniform(2, [1.0])
    reserve(tab, a, 0, 10, [0])
    reserve(tab, b, 0, 10, [0, 0])
    contrib = Contributions(tab.nodes.types.names)
    count, total = node_state_at(tab, 0, contrib)
    assert count[0].tolist() == [0, 2, 0, 0, 0]
    assert total[0].tolist() == [0, 200, 0, 0, 0]
    assert resource_contention_at(tab, 0, contrib) == 200


@pytest.mark.parametrize("text, expected", [
    ("CPU,Memory", {"CPU", "Memory"}), ("cpu memory", {"CPU", "Memory"}),
    ("IO+Net-in", {"IO", "Net-in"}), ("none", set()), ("", set()),
    (["Net-out", "io"], {"Net-out", "IO"}), (frozenset({"CPU"}), {"CPU"}),
])
def test_parse_stress_on(text, expected):
    assert parse_stress_on(text) == expected


def test_parse_stress_on_names_an_unknown_resource():
    with pytest.raises(ValueError, match="unknown resource type 'GPU'"):
        parse_stress_on("CPU,GPU")


def test_a_bad_attribute_names_the_lease():
    tab = table()
    bad = lease(7, 1, 10, stress="CPU", req_IO="lots")
    bad.extra["stress-on"] = "CPU,IO"
    reserve(tab, bad, 0, 10, [0])
    x = lease(8, 1, 10, stress="IO")
    with pytest.raises(ValueError, match=r"lease 7 .*req-IO: 'lots' is not a number"):
        node_scores(x, 0, 10, tab, Contributions(tab.nodes.types.names))


def test_contributions_are_arrays_in_resource_order(scenario):
    tab, leases, contrib = scenario
    res = leases["D"].reservations[0]
    nodes, amounts, mask = contrib.contribution(res)[:3]
    assert nodes.tolist() == [1, 2]
    assert amounts.tolist() == [[0, 0, 30, 5, 0], [0, 0, 30, 5, 0]]
    assert np.array_equal(mask, [0, 0, 1, 1, 0])


def test_a_lease_of_two_vm_shapes_counts_what_its_vms_hold_on_the_node():
    """One VM of 2048 MB and one of 512 MB, both on node 0, IO 10 per VM: the lease needs
    2 CPUs, 2560 MB and 20 IO there."""
    from lease_manager import Lease, LeaseType, Reservation, VMRequest

    tab = table()
    mixed = Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest((1, 1), np.array([[1.0, 2048.0],
                                                                          [1.0, 512.0]])),
                  10, 10, extra={"stress-on": "CPU,Memory,IO", "req-IO": 10})
    res = tab.add(Reservation(mixed, 0, 10, np.array([0]), np.array([[2.0, 2560.0]]),
                              vm_nodes=(0, 0)))
    contrib = Contributions(tab.nodes.types.names)
    assert contrib.contribution(res).amounts.tolist() == [[2, 2560, 20, 0, 0]]
    other = lease(2, 1, 10, stress="Memory")
    assert node_scores(other, 0, 10, tab, contrib).tolist() == [2560, 0, 0]
