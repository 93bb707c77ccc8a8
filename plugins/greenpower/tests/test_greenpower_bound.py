"""The compulsory-part and pair bounds (``lm_greenpower.bound``) on hand-computed envelopes,
and on the four Fig. 2 instances where the GA stays above NM 0 (issue 39)."""

from __future__ import annotations

import numpy as np
import pytest

from lm_greenpower.bound import Overload, compulsory_overload, incompatible_pair, task_starts

#: W per interval: 30, but 24 in interval 3, and nothing from 6
CAP = np.array([30.0, 30, 30, 24, 30, 30, 0, 0])


def test_starts_are_the_runs_of_the_envelope_at_or_above_the_need():
    assert task_starts(4, 20.0, CAP).tolist() == [0, 1, 2]      # [x, x + 4) inside 0-5
    assert task_starts(4, 25.0, CAP).tolist() == []             # interval 3 splits 0-5
    assert task_starts(2, 25.0, CAP).tolist() == [0, 1, 4]
    assert task_starts(9, 0.0, CAP).tolist() == []              # longer than the envelope


def test_two_compulsory_parts_over_the_envelope():
    """Machines of 10 W, 2 cores. A (4 intervals, 10 W) needs 20 W: it can start at 0, 1 or 2,
    so it runs through [2, 4) whatever the plan. B (5, 5 W) needs 15 W: starts 0 or 1, so it
    runs through [1, 5).

        interval      0   1   2   3   4   5   6   7
        envelope     30  30  30  24  30  30   0   0
        A compulsory          ##  ##
        B compulsory      ##  ##  ##  ##
        need              15  25  25  15                (one machine: 10 W + the tasks')

    At 3 A and B need 10 + 10 + 5 = 25 W > 24: no plan places both. At 2 they need 25 <= 30."""
    assert compulsory_overload([4, 5], [10, 5], CAP, 10.0, 2) == Overload(3, (0, 1), 25.0, 24.0)


def test_enough_power_or_more_machines():
    """With 25 W in interval 3 they fit (None). With 1 core a machine, two tasks need two
    machines: 2 x 10 + 15 = 35 W > 30 at 2, the first overload."""
    roomy = CAP.copy()
    roomy[3] = 25.0
    assert compulsory_overload([4, 5], [10, 5], roomy, 10.0, 2) is None
    assert compulsory_overload([4, 5], [10, 5], roomy, 10.0, 1) == Overload(2, (0, 1), 35.0,
                                                                            30.0)


def test_a_task_with_no_start_and_a_task_free_to_move():
    """C (7 intervals) fits nowhere: left out (no plan places it, so none is short of it).
    D (2 intervals, 10 W) can start at 0 to 4: its starts span more than 2, so it has no
    compulsory part. Only A remains: 20 W <= 24."""
    assert task_starts(2, 20.0, CAP).tolist() == [0, 1, 2, 3, 4]
    assert compulsory_overload([4, 7, 2], [10, 1, 10], CAP, 10.0, 2) is None


def test_a_pair_that_always_meets_in_a_dip():
    """Machines of 10 W, 2 cores; the envelope 30 W but 24 W in intervals 2-3, nothing from 6.
    A (4, 10 W) needs 20 W: starts 0, 1, 2, so it runs through 2-3 whatever the plan. B (3,
    5 W) needs 15 W: starts 0 to 3, and each covers 2 or 3. Together they need 10 + 10 + 5 =
    25 W > 24: every pair of starts overlaps in the dip, so no plan places both.

        interval      0   1   2   3   4   5   6
        envelope     30  30  24  24  30  30   0
        A compulsory          ##  ##                   (B has none: 20 W alone there)

    The compulsory parts never overload (20 W <= 24), the pair does. With 25 W in the dip, B
    at 0 and A at 0 share 0-2 at 25 W: compatible. With 1-core machines they need two
    machines, 35 W: B at 0 and A at 2 share only interval 2, still too little at 30 W."""
    cap = np.array([30.0, 30, 24, 24, 30, 30, 0])
    assert task_starts(3, 15.0, cap).tolist() == [0, 1, 2, 3]
    assert compulsory_overload([4, 3], [10, 5], cap, 10.0, 2) is None
    assert incompatible_pair([4, 3], [10, 5], cap, 10.0, 2) == (0, 1)
    assert incompatible_pair([4, 3], [10, 5], cap, 10.0, 2, max_starts=3) is None  # B: 4 starts
    roomy = cap.copy()
    roomy[2:4] = 25.0
    assert incompatible_pair([4, 3], [10, 5], roomy, 10.0, 2) is None
    assert incompatible_pair([4, 3], [10, 5], np.array([40.0, 40, 30, 30, 40, 40, 0]), 10.0,
                             1) == (0, 1)


def test_a_pair_that_can_run_one_after_the_other():
    """Over 0-6 (30 W, 24 W in 2-3) A (4) and B (3) fit one after the other: A 0-4, B 4-7;
    no dip matters then."""
    cap = np.array([30.0, 30, 24, 24, 30, 30, 30, 0])
    assert incompatible_pair([4, 3], [10, 5], cap, 10.0, 2) is None


def fig_2_run(planner: str, phi_max: int):
    """Fig. 2's instance of seed 81 at ``phi_max`` under the 80 m envelope with the 2,000-hour
    window of etc/kassab-fig2-80m-window-sweep.ini, planned by ``planner`` (finished)."""
    import lm_greenpower
    from lease_manager import Plugins, load_run

    from lmk_helpers import ROOT

    run = load_run(ROOT / "etc" / "kassab.ini", [
        f"power.power-cap={ROOT / 'etc' / 'kassab-envelope-sand-point-80m.csv'}",
        "power.power-cap-window=7200000", "power.power-cap-window-draw=3600000",
        f"tracefile.tracefile={ROOT / 'traces' / 'kassab-50-tasks.csv'}",
        f"greenpower.max-watts={phi_max}", "simulation.seed=81",
        f"planning.policy-planner={planner}"],
        plugins=Plugins(entry_points=False, extra=[lm_greenpower]))
    run.run()
    return run


@pytest.mark.parametrize("phi_max, ids, where", [
    (105, (16, 22, 27, 42), Overload(9145, (0, 1, 2, 3), 432.0, 414.874)),
    (120, (16, 28), Overload(8998, (0, 1), 217.0, 206.327)),
    (135, (16, 28), Overload(8998, (0, 1), 232.0, 206.327)),
    (150, (16, 27, 42), Overload(9135, (0, 1, 2), 429.0, 415.852))])
def test_the_four_fig_2_instances_no_plan_can_place_whole(phi_max, ids, where):
    """Issue 39: the 4 instances of Fig. 2 (seed 81, phi_max 105-150, the 2,000-hour window)
    on which the GA stays above NM 0. Each task listed can start only within one stretch of
    the envelope (hours 885-915), so its compulsory part is fixed, and there the parts need
    more than the envelope: at phi_max 150, tasks 16 (466 intervals, 96 W), 27 (315, 109 W) and
    42 (399, 129 W) all run through interval 9135 in any plan that places them, 95 + 334 =
    429 W against 415.852 W. Every task listed is placed by some planner of the sweep (at
    105 and 150 LPT and LPN between them, checked here; 28 at 120 and 135 by the GA only), so
    NM counts each whole for a plan that leaves it out, and every plan leaves one out: NM > 0
    for every planner, the GA too."""
    run = fig_2_run("lpt", phi_max)
    board = run.planning.board
    tasks = {t.lease_id: t for t in run.planning.tasks}
    got = compulsory_overload([tasks[i].length for i in ids], [tasks[i].watts for i in ids],
                              board.cap[:board.horizon], board.platform.p_stat,
                              board.platform.cores)
    assert got is not None and got.interval == where.interval and got.tasks == where.tasks
    assert got.need == pytest.approx(where.need) and got.cap == pytest.approx(where.cap)
    if phi_max in (105, 150):
        placed = [{t.lease_id for t, _ in r.planning.board.placements}
                  for r in (run, fig_2_run("lpn", phi_max))]
        assert set(ids) <= placed[0] | placed[1]
        assert not any(set(ids) <= p for p in placed)
