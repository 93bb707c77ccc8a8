"""The planning board's pieces: periods merging, the envelope on the grid, candidates."""

from __future__ import annotations

import attrs
import numpy as np

from lease_manager.planning.board import (
    PlanTask,
    Platform,
    PowerBoard,
    Spot,
    _sliding_min,
    envelope_intervals,
    merge_periods,
)

PF = Platform(machines=3, cores=2, p_stat=10, p_on=20, t_on=2, p_off=15, t_off=1)


def test_periods_merge_when_the_machine_cannot_or_should_not_go_off():
    # gaps: 2 (< Toff + Ton = 3: must stay on), 3 and 4
    periods = [(0, 2), (4, 5), (8, 9), (13, 14)]
    assert merge_periods(periods, PF) == [(0, 5), (8, 9), (13, 14)]
    ahead = attrs.evolve(PF, look_ahead=True)
    assert merge_periods(periods, ahead) == [(0, 9), (13, 14)]
    back = attrs.evolve(PF, look_back=True)
    assert merge_periods(periods, back) == [(0, 14)]
    assert merge_periods([(3, 6), (0, 4)], PF) == [(0, 6)]


def test_the_envelope_on_the_grid_is_its_least_value_in_each_interval():
    times, values = np.array([0.0, 5.0, 7.5, 20.0]), np.array([40.0, 10.0, 30.0, 50.0])
    got = envelope_intervals(times, values, 5.0, 0.0, 5)
    assert got.tolist() == [40, 10, 30, 30, 50]


def test_sliding_min():
    values = np.array([5.0, 3, 8, 1, 9, 9, 2])
    for width in range(1, 8):
        expect = [min(values[i:i + width]) for i in range(len(values) - width + 1)]
        assert _sliding_min(values, width).tolist() == expect


def test_candidates_and_fits_on_used_and_fresh_machines():
    """Cap 60 W everywhere. T1 (3 intervals, 1 core, 20 W) on m0 at 2: m0 boots 0-2, runs
    2-5 at 30 W, shuts down 5-6. T2 (2 intervals, 1 core, 25 W) fits on m0 where it runs beside
    T1 (55 W) or after it; on a fresh machine it would draw 10 + 25 W beside m0's 30 W (65 W) and
    fits only once m0 is done (boot 3-5 beside m0's 30 W, run 5-7 beside its shutdown's 15 W)."""
    board = PowerBoard(PF, np.full(20, 60.0))
    one, two = PlanTask(0, 1, 3, 1, 20), PlanTask(1, 2, 2, 1, 25)
    assert board.place_earliest(one) == Spot(2, 0)
    assert board.used[:7].tolist() == [20, 20, 30, 30, 30, 15, 0]
    xs, _ = board.candidates(two, 0)
    assert xs[:4].tolist() == [0, 1, 2, 3]
    assert not board.fits(two, Spot(0, 0))    # m0 would boot earlier: its boot is planned
    assert board.fits(two, Spot(2, 0)) and not board.fits(two, Spot(2, 1))
    assert board.candidates(two, 1)[0][:1].tolist() == [5] and board.fits(two, Spot(5, 1))
    assert board.earliest(two) == Spot(2, 0)
    copy = board.copy()
    copy.place(two, Spot(5, 1))
    assert copy.machines_used == [0, 1] and board.machines_used == [0]
    assert copy.switch_ons() == 2 and copy.makespan == 7
    assert board.fresh().placements == []
