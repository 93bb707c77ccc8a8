"""The slot-table transaction every re-planning path uses (``PlanChange``), and the one way a
new plan is adopted (announced once, its events on the timeline).

Site ``3 CPU:2 Memory:1024`` (nodes n0-n2, a full node is ``[2, 1024]``)::

    time   0      1h     2h     3h
    n0     [A-----------)               A: full n0, 0-2h
    n1            [B-----------)        B: full n1, 1h-3h
    n2                                   (free)
"""

from __future__ import annotations

import numpy as np
import pytest

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import LeaseState
from lease_manager.kernel.resources import parse_site
from lease_manager.kernel.scheduler import PlanChange
from lease_manager.kernel.slottable import Reservation, ReservationKind, SlotTable
from lease_manager.plugins import Plugins

from support import HOUR, MIN, be, simulate

FULL = [2.0, 1024.0]
TIMES = [0, 0.5 * HOUR, HOUR, 1.5 * HOUR, 2 * HOUR, 2.5 * HOUR, 3 * HOUR, 4 * HOUR]


def res(start, end, node) -> Reservation:
    return Reservation(None, start, end, np.array([node]), np.array([FULL]))


def scene() -> tuple[SlotTable, Reservation, Reservation]:
    table = SlotTable(parse_site("3 CPU:2 Memory:1024"))
    a, b = res(0, 2 * HOUR, 0), res(HOUR, 3 * HOUR, 1)
    table.add(a)
    table.add(b)
    return table, a, b


def state(table: SlotTable) -> tuple[list[list[list[float]]], list[int]]:
    """Free capacity at the interesting instants, and the reservations held (by id)."""
    free = [table.free_at(t).tolist() for t in TIMES]
    held = sorted(r.id for r in table.reservations_between(0, 10 * HOUR))
    return free, held


def test_rollback_restores_the_table_exactly():
    """Remove A, move it to n2 (C), truncate B to 2h, add and drop a temporary D: after the
    rollback the table is as before, and its own consistency check passes."""
    table, a, b = scene()
    before = state(table)
    change = PlanChange(table)
    change.remove(a)
    change.add(res(0, 2 * HOUR, 2))
    change.truncate(b, 2 * HOUR)
    d = res(3 * HOUR, 4 * HOUR, 0)
    change.add(d)
    change.remove(d)
    assert state(table) != before
    change.rollback()
    assert state(table) == before
    assert b.end == 3 * HOUR
    table.check()


def test_a_truncation_to_nothing_is_rolled_back():
    """B truncated at its start leaves the table; the rollback puts it back whole."""
    table, _, b = scene()
    before = state(table)
    with PlanChange(table) as change:
        change.truncate(b, HOUR)
        assert b.id not in state(table)[1]
        change.rollback()
    assert state(table) == before


def test_an_exception_inside_the_block_rolls_back():
    table, a, _ = scene()
    before = state(table)
    with pytest.raises(RuntimeError), PlanChange(table) as change:
        change.remove(a)
        change.add(res(0, HOUR, 2))
        raise RuntimeError("the new plan failed half way")
    assert state(table) == before
    table.check()


def test_kept_changes_stay():
    table, a, _ = scene()
    change = PlanChange(table)
    change.remove(a)
    moved = res(0, 2 * HOUR, 2)
    change.add(moved)
    change.keep()
    change.rollback()   # nothing left to undo
    assert state(table)[1] == sorted([moved.id, _b_id(table)])


def _b_id(table: SlotTable) -> int:
    return next(r.id for r in table.reservations_between(0, 10 * HOUR) if r.nodes[0] == 1)


def test_reservation_kinds_compare_equal_to_the_strings_outputs_carry():
    assert ReservationKind.VM == "vm" and f"{ReservationKind.SUSPEND}" == "suspend"
    assert res(0, 1, 0).kind is ReservationKind.VM


class _Announcements:
    def __init__(self) -> None:
        self.scheduled: list[tuple[int, float, float]] = []

    @hookimpl
    def lease_scheduled(self, lease, now):
        self.scheduled.append((lease.id, now, lease.reservations[0].start))


def test_a_move_earlier_is_announced_once_and_starts_on_time():
    """4 nodes, conservative. #1 (4 nodes, reserved 1 h, ends at 0:30) holds the site;
    #2 (4 nodes, 1 h) is planned at 1:00. #1's early end moves #2 to 0:30: one announcement
    for the first plan at 0:00:01, one for the move at 0:30, and #2 starts at 0:30.

        n0-n3  [#1 0:00-0:30 (reserved to 1:00)][#2 0:30-1:30]
    """
    watcher = _Announcements()
    plugins = Plugins(entry_points=False, extra=[watcher])
    first, second = be(1, 4, HOUR, 0, actual=30 * MIN), be(2, 4, HOUR, 1)
    simulate([first, second], "scheduling.backfilling=conservative", plugins=plugins)
    assert [s for s in watcher.scheduled if s[0] == 2] == [(2, 1, HOUR), (2, 30 * MIN, 30 * MIN)]
    assert second.state is LeaseState.DONE and second.start == 30 * MIN
