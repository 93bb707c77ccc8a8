"""PlaceTask (Kassab et al., Algorithm 1 and the rules of section 4.1), one hand-computed case
for each case the text distinguishes. The tasks come in the given order (``random`` keeps it).

Platform of ``lmk_helpers``: 1 s intervals; a machine draws 10 W when on (Pstat), 20 W for its
1 s boot (Pon, Ton) and 15 W for its 1 s shutdown (Poff, Toff); a task draws its own phi on top.
The text's cases:

1. no machine is available: a machine is booted if the envelope has Pon during Ton and then
   Pstat + phi all through the task (``test_a_task_waits_for_a_whole_window``, where x <- x + 1
   until a window long enough comes);
2. a machine is available (on, a free core all through the task): only phi is checked
   (``test_an_on_machine_needs_only_phi``);
3. no core is available: another machine is booted (``test_no_free_core_boots_another``);
4. a machine switching off at the task's start: its shutdown is cancelled
   (``test_a_shutdown_is_cancelled``);
5. look-ahead / look-back: a machine is kept on rather than shut down and booted again
   (``test_look_ahead_and_look_back_keep_the_machine_on``).

Every plan is replayed by the core: its power, interval by interval, is the board's and never
above the envelope (``plan`` checks both).
"""

from __future__ import annotations

import pytest

from lmk_helpers import gantt, plan, steps


def test_a_task_waits_for_a_whole_window(tmp_path):
    """T1 (3 s, 20 W) needs 30 W with its machine for 3 intervals, after a 20 W boot. The
    envelope is 40 W, but 20 W in [2, 3). Start 1 (boot 0-1) and start 2 (boot 1-2) both run
    through [2, 3): no. Start 3: the boot fits at 2 (20 W under 20 W), the run at 40 W.
    m0  [boot 2-3][T1 3-6][down 6-7]
    power (W): 0-2 0 | 2-3 20 | 3-6 30       makespan 6
    """
    run, leases = plan(tmp_path, [(3, 20)], [(0, 40), (2, 20), (3, 40)], "random")
    assert gantt(leases) == [(1, 3, 6, 0)]
    assert steps(run)[:3] == [(0, 0), (2, 20), (3, 30)]
    assert run.summary["makespan"] == 6


def test_an_on_machine_needs_only_phi(tmp_path):
    """Envelope 35 W. T1 (4 s, 10 W): m0 boots 0-1, runs T1 1-5 (20 W). T2 (2 s, 15 W) on m0 at
    1 adds only its 15 W: 35 W. Booting m1 for it would need 20 + 20 W at 0 and 20 + 25 W
    after: it fits only on m0.
    m0  [boot 0-1][T1 1-5][down 5-6]
                  [T2 1-3]
    power (W): 0-1 20 | 1-3 35 | 3-5 20      makespan 5, one boot
    """
    run, leases = plan(tmp_path, [(4, 10), (2, 15)], [(0, 35)], "random")
    assert gantt(leases) == [(1, 1, 5, 0), (2, 1, 3, 0)]
    assert steps(run)[:3] == [(0, 20), (1, 35), (3, 20)]
    assert run.summary["node_switch_ons"] == 1


def test_no_free_core_boots_another(tmp_path):
    """Machines of 1 core; envelope 100 W. T1 (3 s, 5 W): m0 boots 0-1, T1 1-4. T2 (2 s, 5 W)
    finds no core on m0 before 4; m1 boots 0-1 beside m0's boot (40 W) and runs T2 1-3.
    m0  [boot 0-1][T1 1-4][down 4-5]
    m1  [boot 0-1][T2 1-3][down 3-4]
    power (W): 0-1 40 | 1-3 30 | 3-4 30 (T1 15, m1's shutdown 15)      makespan 4, two boots
    """
    run, leases = plan(tmp_path, [(3, 5), (2, 5)], [(0, 100)], "random",
                       resources="2 CPU:1 Memory:1024")
    assert gantt(leases) == [(1, 1, 4, 0), (2, 1, 3, 1)]
    assert steps(run)[:3] == [(0, 40), (1, 30), (3, 30)]
    assert run.summary["node_switch_ons"] == 2


def test_a_shutdown_is_cancelled(tmp_path):
    """Envelope 20 W until 3, then 40 W. T1 (2 s, 10 W): m0 boots 0-1, T1 1-3 (20 W). T2
    (2 s, 10 W) has no room beside T1. At 3, m0 is switching off: T2 runs there, the shutdown
    cancelled (m0 stays on, 20 W). A fresh m1 could boot only at 3, for a start at 4.
    m0  [boot 0-1][T1 1-3][T2 3-5][down 5-6]
    power (W): 0-1 20 | 1-5 20      makespan 5, one boot
    """
    run, leases = plan(tmp_path, [(2, 10), (2, 10)], [(0, 20), (3, 40)], "random")
    assert gantt(leases) == [(1, 1, 3, 0), (2, 3, 5, 0)]
    assert steps(run)[:2] == [(0, 20), (1, 20)]
    assert run.summary["makespan"] == 5 and run.summary["node_switch_ons"] == 1


@pytest.mark.parametrize("ahead, back, boots", [("yes", "no", 1), ("no", "yes", 1),
                                                ("no", "no", 2)])
def test_look_ahead_and_look_back_keep_the_machine_on(tmp_path, ahead, back, boots):
    """Envelope 30 W, 20 W in [3, 5). T1 (2 s, 10 W): m0 boots 0-1, T1 1-3. T2 (2 s, 15 W)
    needs 25 W with its machine: the first 2 intervals with room are 5-7. m0 is off there
    (the lowest-index machine off). Its gap is 2 intervals (3-5), Toff + Ton = 2 Ton:
    - look-ahead (a boot would begin as the shutdown ends) or look-back (a shutdown within
      Ton before the boot): m0 stays on 3-5 at 10 W, one boot;
    - neither: it shuts down 3-4 (15 W) and boots 4-5 (20 W), two boots.
    m0  [boot 0-1][T1 1-3][on 3-5 | down 3-4, boot 4-5][T2 5-7][down 7-8]
    power (W): 0-1 20 | 1-3 20 | 3-5 10 (or 3-4 15, 4-5 20) | 5-7 25      makespan 7
    """
    run, leases = plan(tmp_path, [(2, 10), (2, 15)], [(0, 30), (3, 20), (5, 30)], "random",
                       f"power.look-ahead={ahead}", f"power.look-back={back}")
    assert gantt(leases) == [(1, 1, 3, 0), (2, 5, 7, 0)]
    middle = [(3, 10)] if boots == 1 else [(3, 15), (4, 20)]
    assert steps(run)[:len(middle) + 3] == [(0, 20), (1, 20), *middle, (5, 25)]
    assert run.summary["node_switch_ons"] == boots
