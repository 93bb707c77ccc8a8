"""The one-slot fit (``[dvfs] slot-fit = one-slot``): a lease must fit inside one free time
slot (t_s, t_e, n) of its site, by hand on a two-CPU site."""

from __future__ import annotations

import math

import numpy as np

from lease_manager.kernel.resources import parse_site
from lease_manager.kernel.slottable import Reservation, SlotTable
from lm_dvfs.slots import free_slots, one_slot_start

from lmd_helpers import deadline_lease, run

# one site of two one-CPU nodes, 100 W per running CPU at its single level
SITE = ("simulation.resources=2 CPU:1 Memory:1024", "power.pstates=1.0:0:100",
        "power.policy-operating-point=without-dvs")


def three():
    """All submitted at 0, in this order: L1 1 CPU x 100 s, L2 1 CPU x 300 s (deadlines
    1000); L3 1 CPU x 50 s, deadline 120."""
    return [deadline_lease(1, 1, 100, 0, 1000), deadline_lease(2, 1, 300, 0, 1000),
            deadline_lease(3, 1, 50, 0, 120)]


def test_profile_fit_backfills_across_slots():
    """Conservative backfilling (the default): L2 takes the free CPU at once; L3 could only
    start at 100, end 150 > 120: rejected.

    time  0        100      300
    cpu0  [L1------)
    cpu1  [L2----------------)
    """
    leases = three()
    run(leases, *SITE)
    assert [(x.start, x.end) for x in leases[:2]] == [(0, 100), (0, 300)]
    assert leases[2].state.value == "rejected"


def test_one_slot_fit_waits_for_a_slot_long_enough():
    """One slot: L1 -> [0,100) (the empty site is one slot [0,inf) of 2 CPUs). For L2 the
    slots are [0,100) with 1 CPU (too short for 300 s) and [100,inf) with 2: L2 -> [100,400).
    For L3 the free count is 1 all through [0,400) (L1's CPU frees at 100 as L2 takes one),
    one slot: L3 -> [0,50) on the CPU L1 does not hold, by its deadline 120.

    time  0    50       100                400
    cpu0  [L1-----------)[L2----------------)
    cpu1  [L3-)
    free  0    1        1                  2
    """
    leases = three()
    r = run(leases, *SITE, "dvfs.slot-fit=one-slot")
    assert [(x.start, x.end) for x in leases] == [(0, 100), (100, 400), (0, 50)]
    assert [x.state.value for x in leases] == ["done"] * 3
    assert r.summary["energy_joules"] == 100 * (100 + 300 + 50)


def test_free_slots_and_one_slot_start_on_the_plan():
    """The plan of the one-slot test once L1 and L2 are placed (L3 not yet): slots from 0 are
    [0,400) with 1 CPU (the count stays 1 as L1 ends and L2 starts) and [400,inf) with 2. A
    2-CPU lease must wait for 400; a 1-CPU lease of 450 s too (the first slot is 400 long);
    a 1-CPU lease of 50 s that must start by 0 gets 0, by -1 nothing."""
    table = SlotTable(parse_site("2 CPU:1 Memory:1024"))
    one = np.array([1.0, 0.0])
    table.add(Reservation(None, 0.0, 100.0, np.array([0]), np.array([one])))
    table.add(Reservation(None, 100.0, 400.0, np.array([0]), np.array([one])))
    view = table.view()
    assert free_slots(view, one, 0.0) == [(0.0, 400.0, 1.0), (400.0, math.inf, 2.0)]
    lease = deadline_lease(9, 2, 50, 0, 1000)
    assert one_slot_start(view, lease.vms, 50, 0.0, 1000.0) == 400.0
    single = deadline_lease(9, 1, 450, 0, 1000)
    assert one_slot_start(view, single.vms, 450, 0.0, 1000.0) == 400.0
    short = deadline_lease(9, 1, 50, 0, 1000)
    assert one_slot_start(view, short.vms, 50, 0.0, 0.0) == 0.0
    assert one_slot_start(view, short.vms, 50, 0.0, -1.0) is None
