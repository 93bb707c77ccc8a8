"""The energy invariants on node states, made to fire: states that do not tile the run and a
lease on a node that is not on are named. The checks read the state rows by column, and row
by row to say where (or when a node's rows are not together).

Scenario (as ``test_nodes_switched_off_when_idle_and_booted_for_a_later_lease``): one level,
100 W idle, 200 W full; switching off 5 s at 50 W, on 20 s at 150 W; idle-timeout 10 s.
Lease 1: 1 VM, 30 s at 0; lease 2: 2 VMs, 10 s at 100.

    n0  [1: 0-30][idle 30-40][down 40-45][off 45-100][boot 100-120][2: 120-130]
    n1  [idle 0-10][down 10-15][off 15-100 ..........][boot 100-120][2: 120-130]
"""

from __future__ import annotations

import pytest

from support import be, simulate

POWER = ("power.pstates=1.0:100:200", "power.switch-off=5:50", "power.switch-on=20:150",
         "power.off-watts=5", "scheduling.policy-host-selection=no-policy",
         "power.policy-node-power=switch-off-idle", "power.idle-timeout=10")


def closed_again(run, rows):
    """The run's energy accounting closed again on node state rows ``rows``."""
    run.node_states.intervals = lambda start, end: iter(rows)
    run.energy.close(*run.energy.window)
    return run.energy.violations()


@pytest.mark.parametrize("placement", ["at-start", "when-planned"])
def test_states_that_tile_the_run_in_any_row_order_break_nothing(placement):
    run = simulate([be(1, 1, 30, 0), be(2, 2, 10, 100)], *POWER,
                   f"scheduling.placement={placement}", resources="2 CPU:1 Memory:1024")
    rows = list(run.node_states.intervals(*run.energy.window))
    assert len(rows) == 10 and run.energy.violations() == []
    # n1's rows first, then n0's, interleaved: read row by row, they still tile the run
    assert closed_again(run, [rows[5], rows[0], rows[6], rows[1], rows[7], rows[2], rows[8],
                              rows[3], rows[9], rows[4]]) == []


def test_a_gap_between_two_states_and_an_early_end_are_named():
    """n1's off interval starts 1 s late (a gap after its shutdown) and n0's last state ends
    1 s before the run does."""
    run = simulate([be(1, 1, 30, 0), be(2, 2, 10, 100)], *POWER,
                   resources="2 CPU:1 Memory:1024")
    rows = list(run.node_states.intervals(*run.energy.window))
    assert rows[7] == (1, "off", 15, 100) and rows[4] == (0, "on", 120, 130)
    rows[7] = (1, "off", 16, 100)
    rows[4] = (0, "on", 120, 129)
    assert closed_again(run, rows) == [
        "node 1: its off interval starts at 16, not where the previous one ended (15)",
        "node 0: its states end at 129, not at the run's end 130"]


def test_a_lease_on_a_node_still_booting_is_named():
    """n0's boot ends 1 s after lease 2 starts on it (120): the lease holds a node that is not
    on."""
    run = simulate([be(1, 1, 30, 0), be(2, 2, 10, 100)], *POWER,
                   resources="2 CPU:1 Memory:1024")
    rows = list(run.node_states.intervals(*run.energy.window))
    assert rows[3:5] == [(0, "switching-on", 100, 120), (0, "on", 120, 130)]
    rows[3:5] = [(0, "switching-on", 100, 121), (0, "on", 121, 130)]
    assert closed_again(run, rows) == [
        "a lease holds node 0 at 120 while the node is not on"]
