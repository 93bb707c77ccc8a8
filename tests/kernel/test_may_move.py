"""The tables' cheap test of which planned leases might start earlier (re-evaluation looks
only at those): a necessary condition of ``may_fit_before``, and exactly the test its
docstring states, on both the slot table and the count table."""

from __future__ import annotations

import math
import random
from bisect import bisect_left

import numpy as np
import pytest

from lease_manager.errors import OvercommitError
from lease_manager.kernel.count_table import CountTable
from lease_manager.kernel.lease import VMRequest
from lease_manager.kernel.mapper import place
from lease_manager.kernel.resources import parse_site
from lease_manager.kernel.scheduler import reevaluation
from lease_manager.kernel.slottable import Reservation, SlotTable
from lease_manager.run import load_run

from support import ROOT

VM = np.array([1.0, 512.0])     # two per node on "3 CPU:2 Memory:1024"
SITE = "3 CPU:2 Memory:1024"


def stated(times: list[float], free: list[int], count: int, duration: float, start: float,
           after: float) -> bool:
    """The test as stated, row by row: room in the row just before ``start``, or a window
    of ``duration`` from ``after`` or from a later row's start, with room in every row up to
    the first row without room, which begins by ``start``."""
    if not start > after:
        return False
    if free[bisect_left(times, start) - 1] >= count:
        return True
    for k in range(len(times)):
        begin = after if k == 0 else times[k]
        if begin >= start:
            return False
        stop = next((times[j] for j in range(k, len(times)) if free[j] < count), math.inf)
        if free[k] >= count and stop <= start and begin + duration <= stop:
            return True
    return False


def test_hand_profile():
    """Six VM slots on 3 nodes. A holds n0 and n1 (4 VMs) over [0, 10); B and C hold every
    node over [10, 20) and [25, 30); the rows from 0 on have 2, 0, 6, 0 and 6 VMs free::

        time   0    10   20   25   30
        A      [----)
        B           [----)
        C                     [----)
        free   2    0    6    0    6

    From 0 on, of the leases planned as (VMs, start, end):
    - (2, 20, 30) may move: the row before 20 is full, but 2 VMs are free over [0, 10),
      a 10-s window wholly before 20;
    - (3, 20, 30) may not: no row before 20 has 3 free;
    - (2, 20, 35) may not: a 15-s window before 20 would cross the full row at 10 (a row
      with room that begins by 20 - 15 = 5, the row at 0, is not enough);
    - (2, 10, 20) may: the row before 10, at 0, has 2 free;
    - (3, 30, 40) may not: the row before 30 is full, and the only run with 3 free before
      it, [20, 25), lasts 5 s, not 10;
    - (6, 30, 35) may: 6 are free over [20, 25), which lasts exactly 5 s;
    - (6, 30, 36) may not: [20, 25) is 1 s too short.
    From 6 on, (2, 20, 30) may not either: 2 are free over [6, 10), only 4 s.
    """
    t = SlotTable(parse_site(SITE))
    t.add(Reservation(None, 0.0, 10.0, np.array([0, 1]), np.array([[2.0, 1024.0]] * 2)))
    t.add(Reservation(None, 10.0, 20.0, np.array([0, 1, 2]), np.array([[2.0, 1024.0]] * 3)))
    t.add(Reservation(None, 25.0, 30.0, np.array([0, 1, 2]), np.array([[2.0, 1024.0]] * 3)))
    planned = [(2, 20.0, 30.0), (3, 20.0, 30.0), (2, 20.0, 35.0), (2, 10.0, 20.0),
               (3, 30.0, 40.0), (6, 30.0, 35.0), (6, 30.0, 36.0)]   # (VMs, start, end)
    test = t.move_test(VM, 0.0)
    assert [test(*lease) for lease in planned] == [True, False, False, True, False, True,
                                                   False]
    test = t.move_test(VM, 6.0)
    assert [test(*lease) for lease in planned] == [False, False, False, True, False, True,
                                                   False]


def _random_slot_table(rng: random.Random) -> SlotTable:
    t = SlotTable(parse_site(SITE))
    for _ in range(rng.randint(2, 10)):
        start = float(rng.randint(0, 40))
        nodes = rng.sample([0, 1, 2], rng.randint(1, 3))
        amounts = [rng.choice([[1.0, 512.0], [2.0, 1024.0], [0.5, 100.0]]) for _ in nodes]
        try:
            t.add(Reservation(None, start, start + rng.choice([2.0, 5.0, 12.0, math.inf]),
                              np.array(nodes), np.array(amounts)))
        except OvercommitError:
            continue
    t.advance(float(rng.randint(0, 8)))
    return t


def _random_count_table(rng: random.Random) -> CountTable:
    t = CountTable(parse_site(SITE), VM)
    for _ in range(rng.randint(2, 10)):
        start = float(rng.randint(0, 40))
        end = start + rng.choice([2.0, 5.0, 12.0, math.inf])
        count = rng.randint(1, 4)
        try:
            if start == 0.0:   # what runs now is pinned; later reservations are counted
                placement = place(t, VMRequest.uniform(count, VM), start, end, np.arange(3))
                if placement is not None:
                    t.add(placement.reservation(None, start, end))
            else:
                t.add(Reservation(None, start, end, np.empty(0, dtype=np.intp),
                                  np.empty((0, 2)), vm_shape=VM.tobytes(), pending=count))
        except OvercommitError:
            continue
    return t


def test_move_test_is_necessary_and_is_the_stated_test():
    """On 80 seeded random tables of each kind, for 30 random planned leases each: whenever
    ``may_fit_before`` says a lease may move, ``move_test`` says so too, and ``move_test`` is
    the row-by-row statement of its test."""
    rng = random.Random(11)
    checked = passed = 0
    for make in (_random_slot_table, _random_count_table):
        for _ in range(80):
            t = make(rng)
            after = float(rng.randint(int(t.horizon), int(t.horizon) + 10)) + rng.choice(
                [0.0, 0.5])
            counts = [rng.randint(1, 6) for _ in range(30)]
            durations = [rng.choice([1.0, 3.0, 5.0, 12.0, 30.0]) for _ in range(30)]
            starts = [after + rng.choice([0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 13.0, 25.0, 41.0])
                      for _ in range(30)]
            test = t.move_test(VM, after)
            found = [test(c, s, s + d) for c, s, d in zip(counts, starts, durations)]
            if isinstance(t, CountTable):
                row_times, row_free = (a.tolist() for a in t.profile(after))
            else:
                k0 = t._row(after)
                row_times = list(t._t[k0:])
                row_free = t._row_totals(t._shape(VM))[k0:].tolist()
            for i in range(30):
                demand = VMRequest.uniform(counts[i], VM)
                assert found[i] == stated(row_times, row_free, counts[i], durations[i],
                                          starts[i], after), (i, counts[i], starts[i])
                if starts[i] > after and t.may_fit_before(demand, durations[i], after,
                                                           starts[i]):
                    assert found[i]
                    passed += 1
                checked += 1
    assert 0 < passed < checked


def _take_some(t: SlotTable | CountTable, rng: random.Random, after: float) -> None:
    """Add up to three reservations from ``after`` on (slots are only taken)."""
    for _ in range(rng.randint(1, 3)):
        start = after + rng.choice([0.0, 0.5, 1.0, 3.0, 8.0, 20.0])
        end = start + rng.choice([1.0, 2.0, 5.0, 12.0])
        count = rng.randint(1, 3)
        try:
            if isinstance(t, CountTable):
                t.add(Reservation(None, start, end, np.empty(0, dtype=np.intp),
                                  np.empty((0, 2)), vm_shape=VM.tobytes(), pending=count))
            else:
                nodes = rng.sample([0, 1, 2], count)
                t.add(Reservation(None, start, end, np.array(nodes),
                                  np.array([[1.0, 512.0]] * count)))
        except OvercommitError:
            continue


def test_move_test_stays_necessary_while_slots_are_taken():
    """On 80 seeded random tables of each kind: a test made at ``after`` answers 15 random
    leases, then the table takes slots (up to three reservations are added), and for 15 more
    leases, whenever ``may_fit_before`` says one may move on the table as it is now, the
    test says so too (re-evaluation keeps a test while moves only take slots)."""
    rng = random.Random(23)
    checked = passed = 0
    for make in (_random_slot_table, _random_count_table):
        for _ in range(80):
            t = make(rng)
            after = float(rng.randint(int(t.horizon), int(t.horizon) + 10))
            test = t.move_test(VM, after)
            for phase in range(2):
                if phase:
                    _take_some(t, rng, after)
                for _ in range(15):
                    count = rng.randint(1, 6)
                    duration = rng.choice([1.0, 3.0, 5.0, 12.0, 30.0])
                    start = after + rng.choice([0.5, 1.0, 2.0, 5.0, 10.0, 13.0, 25.0, 41.0])
                    found = test(count, start, start + duration)
                    if phase and t.may_fit_before(VMRequest.uniform(count, VM), duration,
                                                  after, start):
                        assert found, (count, start, duration)
                        passed += 1
                    checked += phase
    assert 0 < passed < checked


@pytest.mark.parametrize("mode, fewer", [("move-earlier", 3), ("compress", 2)])
@pytest.mark.parametrize("placement", ["at-start", "when-planned"])
def test_reevaluation_with_the_test_moves_what_it_moves_without(tmp_path, monkeypatch,
                                                                placement, mode, fewer):
    """Conservative backfilling on the first 2,500 jobs of the 30-day Blue trace: with the
    test, re-evaluation (pass after pass, or compression's one pass) asks ``move_earlier``
    about fewer leases (a third or less here with passes repeated, half or less with
    compression), and the schedule is the same, byte for byte, as when it asks about every
    planned lease."""
    calls = {"n": 0}
    move_earlier = reevaluation.EarlierMoves.move_earlier

    def counted(self, lease, now):
        calls["n"] += 1
        return move_earlier(self, lease, now)

    monkeypatch.setattr(reevaluation.EarlierMoves, "move_earlier", counted)
    outputs, asked = [], []
    for many in (reevaluation.MANY_FUTURE, math.inf):
        monkeypatch.setattr(reevaluation, "MANY_FUTURE", many)
        calls["n"] = 0
        run = load_run(ROOT / "etc" / "sample.ini", [
            "scheduling.backfilling=conservative", f"scheduling.placement={placement}",
            f"scheduling.reevaluation={mode}", "tracefile.max-jobs=2500"])
        run.run()
        out = tmp_path / str(many)
        run.write(out)
        outputs.append((out / "leases.csv").read_bytes())
        asked.append(calls["n"])
    assert outputs[0] == outputs[1]
    assert 0 < fewer * asked[0] <= asked[1]
