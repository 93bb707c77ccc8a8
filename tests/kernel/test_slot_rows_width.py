"""The slot table's rows keep columns only for the nodes reservations have used (its width).

Every node past the width is free all the time; the table answers for it from the site's
capacities (a site of a few thousand nodes has rows of every node from the start; the tests use
:class:`NarrowTable` to make small sites' rows narrow). These tests check, by hand and against
a table whose rows hold every node from the start (``first_width`` larger than the site), that
the answers are the same, bit for bit, and that the rows stay narrow when reservations keep to
the first nodes.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from table_changes import random_change, vm_reservation

from lease_manager.kernel.lease import VMRequest
from lease_manager.kernel.mapper import place
from lease_manager.kernel.resources import parse_site
from lease_manager.kernel.slot_rows import DENSE_ROW_BYTES, FIRST_WIDTH
from lease_manager.kernel.slottable import Reservation, SlotTable

FULL = [2.0, 1024.0]
HALF = [1.0, 512.0]
VM = np.array(HALF)
INF = math.inf


class NarrowTable(SlotTable):
    """A slot table whose rows start 64 nodes wide whatever the site (a site of a few
    thousand nodes has rows of every node from the start otherwise)."""

    dense_row_bytes = 0


class DenseTable(SlotTable):
    """A slot table whose rows hold every node from the start (the layout before widths)."""

    first_width = 1 << 40


def res(start, end, nodes, amounts) -> Reservation:
    return Reservation(None, start, end, np.array(nodes), np.array(amounts, dtype=float))


def vms(count) -> VMRequest:
    return VMRequest.uniform(count, HALF)


def test_rows_stay_narrow_and_answer_for_every_node_by_hand():
    """A site of 1,000 nodes ``[2 CPU, 1024 MB]``; VMs of ``[1, 512]`` (two per idle node).

    ::

        node     0    5    10   15   20
        n0       [AAAAAAAAA)                 A: full n0 and n1, [0, 10)
        n1       [AAAAAAAAA)
        n2            [BBBBBBBBBBBBBB)       B: half of n2, [5, 20)
        n500     [CCCCCCCCCCCCCCCCCCC)       C: full n500, [0, 20), added later, then
                                                ended at 15
        n3..999  (free)

    VMs the site hosts (A and B only): [0, 5): 0+0+2+997*2 = 1996; [5, 10): 1995;
    [10, 20): 1999; from 20: 2000. The rows keep the first 64 nodes; C on n500 widens them
    to 501 (the larger of 501 and twice 64); ending C leaves them 501 wide.
    """
    site = parse_site("1000 CPU:2 Memory:1024")
    t, dense = NarrowTable(site), DenseTable(site)
    for table in (t, dense):
        table.add(res(0, 10, [0, 1], [FULL, FULL]))
        table.add(res(5, 20, [2], [HALF]))
    assert t.width == FIRST_WIDTH == 64 and t._free.shape[1] == 64 and dense.width == 1000

    free = np.tile(FULL, (1000, 1))
    free[[0, 1]] = 0
    free[2] = HALF
    np.testing.assert_array_equal(t.free_at(6), free)
    np.testing.assert_array_equal(t.min_free(0, 20), free)
    fits = np.full(1000, 2.0)
    fits[[0, 1]] = 0
    fits[2] = 1
    np.testing.assert_array_equal(t.vm_fits(VM, 0, 20), fits)
    assert [t.room_at(VM, s) for s in (0, 6, 12, 25)] == [1996, 1995, 1999, 2000]
    assert t.fits_at(vms(1995), 20, 0) and not t.fits_at(vms(1996), 20, 0)
    assert t.fits_at(vms(1996), 5, 0) and not t.fits_at(vms(1997), 5, 0)
    assert t.earliest_fit(vms(1998), 5, 0) == 10
    assert t.earliest_fit(vms(2000), 5, 0) == 20
    assert t.lease_counts_at(6).tolist() == [1, 1, 1] + [0] * 997
    lasts = np.full(1000, INF)
    lasts[2] = 5
    np.testing.assert_array_equal(t.capacity_lasts_until(0), lasts)
    assert place(t, vms(3), 0, 20, np.arange(1000)).vm_nodes == (2, 3, 3)
    assert place(t, vms(3), 0, 20, np.arange(999, -1, -1)).vm_nodes == (999, 999, 998)

    c = res(0, 20, [500], [FULL])
    t.add(c)
    dense.add(res(0, 20, [500], [FULL]))
    assert t.width == 501 and t._free.shape[1] == 501
    assert [t.room_at(VM, s) for s in (0, 6, 12, 25)] == [1994, 1993, 1997, 2000]
    assert t.vm_fits(VM, 0, 20)[[499, 500, 501]].tolist() == [2, 0, 2]
    assert t.earliest_fit(vms(1998), 5, 0) == 20

    assert [r.start for r in t.advance(10)] == [0]   # A ends
    dense.advance(10)
    t.truncate(c, 15)
    dense.truncate(dense.reservations_at(500, 12)[0], 15)
    assert t.width == 501
    free[[0, 1]] = FULL
    free[500] = 0
    np.testing.assert_array_equal(t.free_at(12), free)
    free[500] = FULL
    np.testing.assert_array_equal(t.free_at(16), free)
    assert [t.room_at(VM, s) for s in (12, 16, 25)] == [1997, 1999, 2000]
    assert t.earliest_fit(vms(1999), 3, 10) == 15
    t.check()
    for s, e in ((10, 12), (10, 30), (16, INF)):
        np.testing.assert_array_equal(t.min_free(s, e), dense.min_free(s, e))
        np.testing.assert_array_equal(t.vm_fits(VM, s, e), dense.vm_fits(VM, s, e))
        np.testing.assert_array_equal(t.capacity_lasts_until(s, e),
                                      dense.capacity_lasts_until(s, e))
        np.testing.assert_array_equal(t.lease_counts_at(s), dense.lease_counts_at(s))


def test_rows_of_a_site_of_a_few_thousand_nodes_hold_every_node():
    """A row of every node of 3,276 nodes of two types costs 3,276 x 20 = 65,520 bytes, at
    most ``DENSE_ROW_BYTES`` (65,536): the rows hold every node from the start. One more
    node and they start 64 wide."""
    assert DENSE_ROW_BYTES == 65_536
    assert SlotTable(parse_site("3276 CPU:2 Memory:1024")).width == 3276
    assert SlotTable(parse_site("3277 CPU:2 Memory:1024")).width == 64


def test_a_million_idle_nodes_cost_no_rows():
    """40 overlapping leases of 1 to 25 whole-node VMs, mapped in index order on a
    1,000,000-node site, make 80 rows. Rows of every node were 20 MB each (1.6 GB); these
    keep the 445 nodes the leases hold, rounded up by doubling from 64: 512."""
    t = SlotTable(parse_site("1000000 CPU:2 Memory:1024"))
    at = 0
    for i in range(40):
        size = 1 + i % 25
        placement = place(t, VMRequest.uniform(size, FULL), float(i), float(i + 100),
                          np.arange(1_000_000))
        t.add(placement.reservation(None, float(i), float(i + 100 + i % 7)))
        at += size
    assert t.breakpoints > 60
    assert at == 445 and t.width == 512
    assert t._free.nbytes + t._nres.nbytes < 2 << 20
    assert t.room_at(np.array(FULL), 50) == 1_000_000 - at
    t.check()


# ------------------------------------------------------------------- random cross-check
SITE = "200 CPU:4 Memory:6; 100 CPU:8 Memory:12"
SHAPES = [np.array(v) for v in ([1.0, 1.0], [1.0, 0.0], [2.0, 3.0], [0.3, 0.7])]


def random_reservation(rng: random.Random, lo: float) -> tuple:
    """The arguments of a reservation of VMs of one shape on 1-3 nodes, mostly among the
    first 40 (where host selection in index order puts them), sometimes past the first
    rows' 64 nodes (the rows then widen to 128 or more, never to all 300)."""
    v = SHAPES[rng.randrange(len(SHAPES))]
    pool = range(64, 150) if rng.random() < 0.05 else range(40)
    nodes = sorted(rng.sample(pool, rng.randint(1, 3)))
    counts = [rng.randint(1, 3) for _ in nodes]
    start = lo + rng.choice([0, 0, 1, 2, 5, 0.5]) + rng.randint(0, 20)
    end = INF if rng.random() < 0.1 else start + rng.choice([0.5, 1, 2, 3, 7, 15])
    return start, end, nodes, counts, v


def reservation(rng: random.Random, lo: float) -> Reservation:
    """:func:`random_reservation` as a reservation."""
    return vm_reservation(rng, *random_reservation(rng, lo))


def answers(t: SlotTable, live: list[Reservation], rng: random.Random) -> list:
    """Every query of the table that reads its rows, at random times and demands."""
    out: list = []
    for _ in range(3):
        at = t.horizon + rng.choice([0, 0, 0.5, 1]) + rng.randint(0, 25)
        length = rng.choice([0.5, 1, 2, 4, 9, 30, INF])
        groups = rng.sample(range(len(SHAPES)), rng.choice([1, 1, 2]))
        most = 400 if len(groups) == 1 else 30   # (the mapper fits mixed VMs one by one)
        demand = VMRequest(tuple(rng.randint(1, most) for _ in groups),
                           np.array([SHAPES[g] for g in groups]))
        vector = demand.vectors[0]
        own = rng.choice(live) if live else None
        released = rng.sample(live, min(2, len(live)))
        order = np.array(rng.sample(range(300), 300) if rng.random() < 0.5 else range(300))
        nodes = np.array(sorted(rng.sample(range(300), 2)))
        placement = place(t, demand, at, at + length, order)
        out += [t.free_at(at).tobytes(), t.min_free(at, at + length).tobytes(),
                t.vm_fits(vector, at, at + length).tobytes(), t.lease_counts_at(at).tobytes(),
                t.capacity_lasts_until(at, at + length).tobytes(),
                t.fits_at(demand, length, at), t.room_at(vector, at),
                list(t.iter_fit_starts(demand, length, at, not_after=at + 30)),
                t.earliest_fit(demand, length, at, own=own),
                t.earliest_fit(demand, length, at, released=released),
                t.earliest_fit(demand, length, at, site_demand=np.array([30.0])),
                t.may_fit_before(demand, length, at, at + 12),
                t.earliest_fit_on(nodes, np.array([vector, vector]), length, at, at + 40),
                None if placement is None else (placement.vm_nodes, placement.amounts.tobytes())]
    return out


def replay(cls: type[SlotTable], seed: int, steps: int) -> tuple[list, list[int]]:
    """Seeded random changes of a ``cls`` table; its answers after each, and its widths."""
    rng = random.Random(seed)
    t = cls(parse_site(SITE), site_resources={"power": 200.0})
    t.room_at(SHAPES[0], 0.0)
    live: list[Reservation] = []
    seen: list = []
    widths = []
    for _ in range(steps):
        outcome, live = random_change(t, rng, live, reservation)
        seen.append((outcome, answers(t, live, rng)))
        widths.append(t.width)
    t.check()
    return seen, widths


@pytest.mark.parametrize("seed", range(3))
def test_narrow_rows_answer_as_rows_of_every_node(seed):
    """The same random changes and questions on a table with narrow rows and on one whose
    rows hold every node give the same answers, bit for bit; the narrow rows were narrower
    than the site most of the time and grew when a reservation landed past them."""
    narrow, widths = replay(NarrowTable, seed, 120)
    dense, dense_widths = replay(DenseTable, seed, 120)
    assert narrow == dense
    assert set(dense_widths) == {300}
    assert max(widths) < 300 and len(set(widths)) > 1, sorted(set(widths))
    assert sum(seen[0] == "refused" for seen in narrow) > 3
