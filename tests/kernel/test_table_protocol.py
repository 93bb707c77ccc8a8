"""The tables' shared interface (kernel/table_protocol.py): the methods both tables answer in
place of the scheduler's ``table.counted`` branches, ``move`` on both, the view of a table
that keeps no per-node plan, and the sites' tables as the engine sees them.

Site: ``3 CPU:2 Memory:1024`` (two ``CPU:1`` VMs per node, six in all), or ``3 CPU:1
Memory:1024`` (one VM per node) where the list of free nodes is tested.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lease_manager.errors import OvercommitError
from lease_manager.kernel.count_table import CountTable
from lease_manager.kernel.lease import VMRequest
from lease_manager.kernel.resources import parse_site
from lease_manager.kernel.slottable import Reservation, SlotTable
from lease_manager.multisite import SiteTables

VM = np.array([1.0, 0.0])
SHAPE = VM.tobytes()


def on_nodes(start: float, end: float, nodes: list[int]) -> Reservation:
    return Reservation(None, start, end, np.array(nodes, dtype=np.intp),
                       np.tile(VM, (len(nodes), 1)), vm_shape=SHAPE,
                       vm_nodes=tuple(nodes))


def pending(start: float, end: float, count: int) -> Reservation:
    return Reservation(None, start, end, np.empty(0, dtype=np.intp), np.empty((0, 2)),
                       vm_shape=SHAPE, pending=count)


def test_slot_table_move_puts_the_new_reservation_in_place_or_the_old_one_back():
    """A (n0, n1) over [0, 10) moves to B (n0, n1) over [5, 15); then to C, which over-commits
    n0 against D (n0 twice over [20, 30)): C is refused and B is back.

        n0 |    BBBBBBBBBB     DD (2 VMs)
        n1 |    BBBBBBBBBB
           0    5        15   20   30
    """
    t = SlotTable(parse_site("3 CPU:2 Memory:1024"))
    a = t.add(on_nodes(0, 10, [0, 1]))
    b = on_nodes(5, 15, [0, 1])
    t.move(a, b)
    assert a not in t and b in t
    assert t.free_at(5)[:, 0].tolist() == [1, 1, 2] and t.free_at(0)[:, 0].tolist() == [2, 2, 2]
    t.add(Reservation(None, 20, 30, np.array([0]), np.array([[2.0, 0.0]])))
    c = on_nodes(12, 25, [0, 2])
    with pytest.raises(OvercommitError):
        t.move(b, c)
    assert b in t and c not in t
    t.check()


def test_count_table_move_is_remove_then_add():
    """P (2 VMs, [10, 20)) moves to Q (2 VMs, [15, 25)): free slots are those of Q alone; a
    move to R (6 VMs over [18, 30), where 2 are held by S) is refused, P's successor kept.

        slots free | 6 ... 4 over [15, 25) ...
    """
    t = CountTable(parse_site("3 CPU:2 Memory:1024"), VM)
    p = t.add(pending(10, 20, 2))
    q = pending(15, 25, 2)
    t.move(p, q)
    assert p not in t and q in t
    assert t.change_points(0) == [15, 25]
    assert [t.room_at(VM, x) for x in (10, 15, 24, 25)] == [6, 4, 4, 6]
    t.add(pending(40, 50, 2))
    with pytest.raises(OvercommitError):
        t.move(q, pending(18, 45, 6))
    assert q in t and [t.room_at(VM, x) for x in (15, 41)] == [4, 4]
    t.check()


def test_what_the_scheduler_asked_table_counted_for_is_answered_by_each_table():
    """holds_counts_at: a counting table holds a count for a start after its clock; the slot
    table never. counting / free_node_list: the counting table's own (its list only for
    its shape, with one VM a node); the slot table has neither. planned: the slot table's own
    per-node plan; none on the counting table."""
    slot = SlotTable(parse_site("3 CPU:1 Memory:1024"))
    count = CountTable(parse_site("3 CPU:1 Memory:1024"), VM, origin=0.0)
    count.set_now(5)
    assert [count.holds_counts_at(x) for x in (0, 5, 6)] == [False, False, True]
    assert not slot.holds_counts_at(6)
    assert count.counting() is count and slot.counting() is None
    assert count.free_node_list(VMRequest.uniform(2, VM)) is count
    assert count.free_node_list(VMRequest.uniform(1, np.array([1.0, 512.0]))) is None
    assert slot.free_node_list(VMRequest.uniform(1, VM)) is None
    assert count.planned() is None and slot.planned() is slot
    two_per_node = CountTable(parse_site("3 CPU:2 Memory:1024"), VM)
    assert two_per_node.free_node_list(VMRequest.uniform(1, VM)) is None


def test_the_view_of_a_counting_table_says_which_placement_answers_a_nodes_plan():
    """A counting table keeps no per-node plan: its view raises NotImplementedError naming
    ``placement = at-start`` (the run turns it into one line), and answers change_points over
    the whole site. The slot table's view hands out its own bound methods."""
    count = CountTable(parse_site("3 CPU:2 Memory:1024"), VM)
    count.add(pending(10, 20, 2))
    view = count.view()
    assert view.counted and view.change_points(0) == [10, 20]
    assert view.room_at(VM, 10) == 4
    for ask in (lambda: view.next_start_on(0, 0), lambda: view.change_points(0, node=1),
                lambda: view.earliest_fit_on(np.array([0]), np.array([[1.0, 0.0]]), 5, 0),
                lambda: view.site_room([(0, 10, 1.0)])):
        with pytest.raises(NotImplementedError, match="at-start"):
            ask()
    with pytest.raises(AttributeError, match="read, not changed"):
        view.add   # noqa: B018
    slot = SlotTable(parse_site("3 CPU:2 Memory:1024"))
    sview = slot.view()
    assert not sview.counted
    assert sview.next_start_on == slot.next_start_on and sview.free_at == slot.free_at
    assert sview.next_start_on(0, 0) == math.inf


def test_site_tables_advance_every_sites_table():
    """Two sites: one reservation ends at 10 on the first, one at 20 on the second; advancing
    to 15 returns the first only, to 20 the second."""
    first, second = SlotTable(parse_site("1 CPU:1")), SlotTable(parse_site("1 CPU:1"))
    a = first.add(Reservation(None, 0, 10, np.array([0]), np.array([[1.0]])))
    b = second.add(Reservation(None, 0, 20, np.array([0]), np.array([[1.0]])))
    tables = SiteTables([first, second])
    assert tables.advance(15) == [a]
    assert tables.advance(20) == [b]
    tables.check()
