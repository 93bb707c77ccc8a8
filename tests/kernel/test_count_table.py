"""The table that counts VMs (``placement = at-start``): unit tests on small hand-computed
profiles, a scheduling scenario where counting and pinning differ, and a seeded randomized
replay whose every lease must find nodes when it starts.

Unless said otherwise the site is ``3 CPU:2 Memory:1024`` and VMs are ``CPU:1`` (two per
node, six in all).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError, OvercommitError
from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.count_table import CountTable
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest
from lease_manager.kernel.mapper import Placement, place
from lease_manager.kernel.resources import parse_site
from lease_manager.kernel.slottable import Reservation
from lease_manager.plugins import Plugins
from lease_manager.policies import HostSelectionPolicy
from lease_manager.run import Run

from support import HOUR, MIN, ROOT, be, simulate, times

VM = np.array([1.0, 0.0])
SHAPE = VM.tobytes()


def table() -> CountTable:
    return CountTable(parse_site("3 CPU:2 Memory:1024"), VM)


def pending(start, end, count) -> Reservation:
    return Reservation(None, start, end, np.empty(0, dtype=np.intp), np.empty((0, 2)),
                       vm_shape=SHAPE, pending=count)


def running(t: CountTable, start, end, count) -> Reservation:
    """A reservation of ``count`` VMs pinned now, nodes in index order."""
    placement = place(t, VMRequest.uniform(count, VM), start, end, np.arange(3))
    assert placement is not None
    return t.add(placement.reservation(None, start, end))


def vms(count) -> VMRequest:
    return VMRequest.uniform(count, VM)


def random_plan(rng: random.Random, reservations: tuple[int, int] = (5, 60), first: int = 0
                ) -> tuple[CountTable, list[Reservation]]:
    """A table of 24 VM slots with a seeded random plan: ``reservations`` (a range) pending
    reservations of 1-6 VMs from ``first`` x 5 s on, at whole and fractional times, and the
    ones that fitted (the others are left out)."""
    t = CountTable(parse_site("12 CPU:2 Memory:1024"), VM)
    planned = []
    for _ in range(rng.randint(*reservations)):
        start = float(rng.randint(first, 80) * 5) + rng.choice([0.0, 0.0, 0.25, 2.5])
        res = pending(start, start + rng.choice([5, 10, 12.5, 25, 60, 200]), rng.randint(1, 6))
        try:
            planned.append(t.add(res))
        except OvercommitError:
            pass
    return t, planned


def test_profile_counts_pending_and_running_vms():
    """Six slots. R = 3 VMs running [0, 10) on n0, n0, n1. A pending reservation of 4 VMs
    over [5, 20) is refused (only 3 slots are free until 10); P = 3 VMs over [5, 20) fits.

    time   0    5    10   20
    R      [---------)
    P           [---------)
    free   3    0    3    6
    """
    t = table()
    r = running(t, 0, 10, 3)
    assert r.vm_nodes == (0, 0, 1)
    with pytest.raises(OvercommitError):
        t.add(pending(5, 20, 4))
    t.check()   # the refused reservation left nothing behind
    with pytest.raises(OvercommitError):   # within one row of the profile
        t.add(pending(5, 10, 4))
    t.check()
    assert t.breakpoints == 2
    p = t.add(pending(5, 20, 3))
    assert [t.room_at(VM, x) for x in (0, 5, 10, 20)] == [3, 0, 3, 6]
    assert t.fits_at(vms(3), 5, 0) and not t.fits_at(vms(3), 6, 0)
    assert t.fits_at(vms(3), math.inf, 20) and not t.fits_at(vms(4), 1, 10)
    assert t.earliest_fit(vms(4), 5, 0) == 20
    assert t.earliest_fit(vms(3), 5, 0) == 0
    assert t.earliest_fit(vms(3), 10, 0) == 10
    assert t.earliest_fit(vms(4), 1, 0) == 20
    # with P's own reservation counted as free, 4 VMs fit from 10 on
    assert t.earliest_fit(vms(4), 10, 0, own=p) == 10
    t.check()


def test_nodes_are_known_for_now_only_and_released_when_reservations_end():
    """R (2 VMs on n0) runs [0, 10): now, n0 has no slot free, n1 and n2 two each; at 10 the
    clock moves and n0 is free again. Per-node questions about a later instant are refused."""
    t = table()
    running(t, 0, 10, 2)
    assert t.vm_fits(VM, 0, 10).tolist() == [0, 2, 2]
    assert t.lease_counts_at(0).tolist() == [1, 0, 0]
    assert (t.capacity_lasts_until(0, 10) == math.inf).all()
    with pytest.raises(NotImplementedError):
        t.vm_fits(VM, 5, 10)
    t.set_now(10)
    assert t.vm_fits(VM, 10, 20).tolist() == [2, 2, 2]
    assert [r.end for r in t.advance(10)] == [10]
    t.check()


def test_a_pending_reservation_is_pinned_when_it_starts():
    t = table()
    p = t.add(pending(5, 15, 3))
    t.set_now(5)
    placement = place(t, vms(3), 5, 15, np.array([2, 1, 0]))
    t.pin(p, placement)
    assert p.pending == 0 and p.vm_nodes == (2, 2, 1)
    assert t.vm_fits(VM, 5, 15).tolist() == [2, 1, 0]
    t.truncate(p, 8)   # it ends early, at a later step
    assert t.vm_fits(VM, 5, 15).tolist() == [2, 1, 0]
    t.set_now(8)
    assert t.vm_fits(VM, 8, 15).tolist() == [2, 2, 2]
    t.check()


def test_remove_and_truncate_give_the_slots_back():
    t = table()
    a = t.add(pending(0, 10, 6))
    b = t.add(pending(10, 20, 6))
    t.truncate(a, 4)
    assert [t.room_at(VM, x) for x in (0, 4, 10)] == [0, 6, 0]
    t.remove(b)
    assert t.room_at(VM, 10) == 6 and t.breakpoints == 2
    t.check()


def test_a_lease_of_another_shape_is_refused_an_ar_is_not():
    t = table()
    other = Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(1, [2.0, 0.0]), 10, 10)
    ar = Lease(2, LeaseType.ADVANCE_RESERVATION, 0, vms(1), 10, 10, start_request=5)
    assert "shape" in t.refuses(other)
    assert t.refuses(ar) == ""
    assert t.refuses(be(3, 1, 10, 0)) == ""


@pytest.mark.parametrize("settings, counted", [
    (("scheduling.policy-preemption=no-preemption", "scheduling.suspension=none"), True),
    (("scheduling.suspension=none",), False),
    (("scheduling.policy-preemption=no-preemption",), False),
])
def test_an_ar_that_may_preempt_or_suspend_is_refused_by_a_counting_scheduler(settings,
                                                                             counted):
    """Leases given in code, at-start named: an AR is counted only if it can neither
    preempt a lease nor have one run in front of it and suspend; otherwise it is rejected
    with the reason (4 nodes: a lease on 1 node for 0-100, the AR on 2 nodes for 50-80)."""
    ar = Lease(2, LeaseType.ADVANCE_RESERVATION, 0, vms(2), 30, 30, start_request=50)
    leases = [be(1, 1, 100, 0), ar]
    run = simulate(leases, "scheduling.placement=at-start", *settings)
    if counted:
        assert ar.state is LeaseState.DONE and (ar.start, ar.end) == (50, 80)
    else:
        assert ar.state is LeaseState.REJECTED
        assert "may preempt or suspend" in ar.reason and "when-planned" in ar.reason
    assert run.table.counted


def test_backfilling_onto_a_node_that_pinning_would_have_reserved():
    """Four 1-core nodes, aggressive, no-policy host order. #1 (1 node, 1 h) really ends at
    0:05; #2 (2 nodes) and #3 (1 node) run from 0:00. #4 (2 nodes, 1 h) arrives at 0:10: the
    earliest two free nodes are at 1:00. #5 (1 node, 3 h) arrives at 0:15.

    when-planned: #4 is mapped to n0 and n1 at 1:00 when it is planned, so #5 cannot use n0
    (free now) past 1:00 and waits until n2 frees up at 1:00.
    n0 [#1 0:00-0:05]          [#4 1:00-2:00]
    n1 [#2 0:00 ------- 1:00]  [#4 1:00-2:00]
    n2 [#2 0:00 ------- 1:00]  [#5 1:00 ---------------------- 4:00]
    n3 [#3 0:00 ---------------------- 2:00]

    at-start: #4 holds 2 VMs from 1:00; from 1:00 to 2:00 one VM is still free in number (n0,
    n1, n2 free, #4 takes two), so #5 starts on n0 at once and #4 gets n1 and n2 at 1:00.
    n0 [#1][#5 0:15 --------------------------------- 3:15]
    n1 [#2 0:00 ------- 1:00][#4 1:00-2:00]
    n2 [#2 0:00 ------- 1:00][#4 1:00-2:00]
    n3 [#3 0:00 ---------------------- 2:00]
    """
    def leases():
        return [be(1, 1, HOUR, 0, actual=5 * MIN), be(2, 2, HOUR, 0), be(3, 1, 2 * HOUR, 0),
                be(4, 2, HOUR, 10 * MIN), be(5, 1, 3 * HOUR, 15 * MIN)]

    settings = ("scheduling.backfilling=aggressive", "scheduling.policy-host-selection=no-policy",
                "tracefile.vm-resources=CPU:1 Memory:0")
    pinned = leases()
    run = simulate(pinned, *settings)
    assert times(run, pinned)[4] == (HOUR, 2 * HOUR) and pinned[3].allocations[0].nodes.tolist() \
        == [0, 1]
    assert times(run, pinned)[5] == (HOUR, 4 * HOUR)
    assert pinned[4].allocations[0].nodes.tolist() == [2]
    counted = leases()
    run = simulate(counted, *settings, "scheduling.placement=at-start")
    assert times(run, counted)[5] == (15 * MIN, 195 * MIN)
    assert counted[4].allocations[0].nodes.tolist() == [0]
    assert times(run, counted)[4] == (HOUR, 2 * HOUR)
    assert counted[3].allocations[0].nodes.tolist() == [1, 2]


def test_queries_over_few_rows_answer_as_the_array_queries(monkeypatch):
    """Fit queries over at most ``FEW_ROWS`` rows read the profile as lists; forcing the
    array path or the list path for every query gives the same answers, on 40 seeded random
    profiles (some thirty reservations of 1-6 VMs on 24 slots, queries with and without a
    latest start and an own reservation, finite and unlimited lengths)."""
    from lease_manager.kernel import count_table

    rng = random.Random(5)
    answers: dict[int, list] = {0: [], 10**9: []}
    for _ in range(40):
        tables = {}
        for few in answers:
            tables[few] = CountTable(parse_site("12 CPU:2 Memory:1024"), VM)
        state = rng.getstate()
        for few, t in tables.items():
            rng.setstate(state)
            planned = []
            for _ in range(rng.randint(5, 30)):
                start = float(rng.randint(0, 40) * 10)
                res = pending(start, start + rng.choice([5, 10, 25, 60, 200]), rng.randint(1, 6))
                try:
                    planned.append(t.add(res))
                except OvercommitError:
                    pass
            monkeypatch.setattr(count_table, "FEW_ROWS", few)
            for _ in range(30):
                count, length = rng.randint(1, 24), rng.choice([1.0, 10.0, 55.0, math.inf])
                after = float(rng.randint(0, 450))
                not_after = rng.choice([None, after + rng.randint(0, 200)])
                own = rng.choice([None, *planned]) if planned else None
                answers[few].append((
                    list(t.iter_fit_starts(vms(count), length, after, not_after=not_after,
                                           own=own)),
                    t.may_fit_before(vms(count), length, after, after + rng.randint(1, 300))))
    assert answers[0] == answers[10**9]
    assert sum(bool(starts) for starts, _ in answers[0]) > 200   # (not all empty)
    assert 0 < sum(may for _, may in answers[0]) < len(answers[0])


def test_earliest_fit_is_the_first_candidate_start(monkeypatch):
    """``earliest_fit`` scans the rows up to the first fit; on 60 seeded random profiles
    (up to 60 reservations of 1-6 VMs on 24 slots, at whole and fractional times) it gives
    the first of every candidate start, computed by the array path and by the list path,
    for queries with and without a latest start and an own reservation (planned or
    started), of whole, fractional and unlimited lengths; ``iter_fit_starts``, which
    begins with it, gives every candidate."""
    from lease_manager.kernel import count_table

    rng = random.Random(17)
    found = none = 0
    for _ in range(60):
        t, planned = random_plan(rng)
        for _ in range(40):
            count = rng.randint(1, 24)
            length = rng.choice([0.5, 1.0, 10.0, 12.5, 55.0, math.inf])
            after = float(rng.randint(0, 450)) + rng.choice([0.0, 0.25])
            not_after = rng.choice([None, after, after + rng.randint(0, 200) + 0.5])
            own = rng.choice([None, *planned]) if planned else None
            every = []
            for few in (0, 10**9):
                monkeypatch.setattr(count_table, "FEW_ROWS", few)
                every.append(list(t._fit_starts(vms(count), length, after,
                                                not_after=not_after, own=own)))
                assert list(t.iter_fit_starts(vms(count), length, after, not_after=not_after,
                                              own=own)) == every[-1]
            got = t.earliest_fit(vms(count), length, after, not_after=not_after, own=own)
            assert [starts[:1] for starts in every] == [[got] if got is not None else []] * 2, \
                (count, length, after, not_after, own)
            assert got is None or type(got) is float
            found += got is not None
            none += got is None
    assert found > 300 and none > 100


def test_may_fit_before_is_the_runs_statement():
    """``may_fit_before`` reads the rows one by one, up to the first run that lasts; on 60
    seeded random profiles (as above) it answers as the array statement of the test,
    ``profiles.runs_fit`` on the rows before ``before``: the last of them has room, or a run
    of rows with room, from ``after`` or a row's start, lasts the duration."""
    from lease_manager.kernel import profiles

    rng = random.Random(29)
    answers = []
    for _ in range(60):
        t, _ = random_plan(rng)
        times, room = (a.tolist() for a in t.profile(0.0))
        for _ in range(40):
            count = rng.randint(1, 24)
            length = rng.choice([0.5, 1.0, 10.0, 12.5, 55.0, 300.0])
            after = float(rng.randint(0, 450)) + rng.choice([0.0, 0.25])
            before = after + rng.choice([0.25, 5.0, 30.0, 100.0, 400.0])
            k0 = max(i for i, x in enumerate(times) if x <= after)
            kb = min((i for i, x in enumerate(times) if x >= before), default=len(times))
            blocked = np.array(room[k0:kb]) < count
            expected = profiles.runs_fit(times, k0, blocked, after, length)
            got = t.may_fit_before(vms(count), length, after, before)
            assert got == expected, (count, length, after, before)
            answers.append(got)
    assert 200 < sum(answers) < len(answers) - 200


def test_earlier_start_by_hand():
    """Six VM slots (3 nodes of 2 CPUs). L, planned for 2 VMs over [30, 50), asks where it
    could start earlier if it gave its reservation up. Gantt chart (VMs held) and room:

        time    0     10    20    30    40    50
        A       5                                   A: 5 VMs over [0, 10)
        B                   3                       B: 3 VMs over [20, 30)
        C                         3                 C: 3 VMs over [30, 40)
        L                         2     2           L: 2 VMs over [30, 50) (own)
        room    1     6     3     1(3)  4(6)  6     (in brackets: with L's VMs back)

    - 2 VMs for 10 s from 0: 10 (the run of rows with room from 10 lasts 10 s);
    - 2 VMs for 20 s from 0: 10 (the run from 10 reaches 30 and goes on in L's rows);
    - 4 VMs for 10 s from 0: 10; for 20 s: none (the row at 20 has room for 3);
    - 2 VMs for 20 s from 15: 15 (``after``, inside a run);
    - 3 VMs (more than L gives back) for 25 s from 0: 10, read on past 30 as
      ``earliest_fit`` does (room 1 + 2 at 30, then 4 + 2 at 40: the window ends at 35)."""
    t = table()
    t.add(pending(0.0, 10.0, 5))
    t.add(pending(20.0, 30.0, 3))
    t.add(pending(30.0, 40.0, 3))
    own = t.add(pending(30.0, 50.0, 2))
    assert t.profile_lists(0.0) == ([0.0, 10.0, 20.0, 30.0, 40.0, 50.0], [1, 6, 3, 1, 4, 6])
    got = [t.earlier_start(vms(2), 10.0, 0.0, own), t.earlier_start(vms(2), 20.0, 0.0, own),
           t.earlier_start(vms(4), 10.0, 0.0, own), t.earlier_start(vms(4), 20.0, 0.0, own),
           t.earlier_start(vms(2), 20.0, 15.0, own), t.earlier_start(vms(3), 25.0, 0.0, own)]
    assert got == [10.0, 10.0, 10.0, None, 15.0, 10.0]


def test_count_fits_by_hand():
    """Six VM slots; the profile of ``test_earlier_start_by_hand`` (L's 2 VMs held):

        time    0     10    20    30    40    50
        room    1     6     3     1     4     6

    - 1 VM over [0, 40): fits (the fewest free is 1);
    - 2 VMs over [0, 5): no (1 free at 0);
    - 2 VMs over [10, 30): fits (6, 3); over [10, 30.5): no (1 free at 30);
    - 6 VMs over [12, 20): fits (a window ending at a row's start does not reach it);
    - 4 VMs from 40 on, unlimited: fits (4, 6); 5 VMs: no."""
    t = table()
    for start, end, count in ((0.0, 10.0, 5), (20.0, 30.0, 3), (30.0, 40.0, 3),
                              (30.0, 50.0, 2)):
        t.add(pending(start, end, count))
    assert t.profile_lists(0.0) == ([0.0, 10.0, 20.0, 30.0, 40.0, 50.0], [1, 6, 3, 1, 4, 6])
    got = [t.count_fits(1, 0.0, 40.0), t.count_fits(2, 0.0, 5.0), t.count_fits(2, 10.0, 30.0),
           t.count_fits(2, 10.0, 30.5), t.count_fits(6, 12.0, 20.0),
           t.count_fits(4, 40.0, math.inf), t.count_fits(5, 40.0, math.inf)]
    assert got == [True, False, True, False, True, True, False]


def test_next_fitting_by_hand():
    """The profile of ``test_count_fits_by_hand``, read from 10 (room 6, 3, 1, 4, 6 from 10,
    20, 30, 40, 50), with room for 5 VMs now. Queued (VMs, length): (6, 5) is above the room;
    (4, 15) meets 3 at 20; (2, 20) fits (6, 3); (1, inf) fits (the fewest is 1); (2, 10)
    fits within its row. From 0: the third; from 3: the fourth; from 4: the last; past it:
    none (5)."""
    t = table()
    for start, end, count in ((0.0, 10.0, 5), (20.0, 30.0, 3), (30.0, 40.0, 3),
                              (30.0, 50.0, 2)):
        t.add(pending(start, end, count))
    t.advance(10.0)
    counts, lengths = [6, 4, 2, 1, 2], [5.0, 15.0, 20.0, math.inf, 10.0]
    got = [t.next_fitting(counts, lengths, first, 10.0, 5) for first in (0, 3, 4)]
    assert got == [2, 3, 4] and t.next_fitting(counts, lengths, 5, 10.0, 5) == 5


def test_next_fitting_is_count_fits_in_turn():
    """On 60 seeded random profiles, ``next_fitting`` finds the first queued lease for which
    the room now and ``count_fits`` say yes, at whole and fractional times, for lengths that
    end on a breakpoint, an ulp either side of it, past every row and never."""
    rng = random.Random(38)
    for _ in range(60):
        t, _ = random_plan(rng, reservations=(10, 60))
        now = float(rng.randint(0, 400)) + rng.choice([0.0, 0.25])
        t.advance(now)
        times, _ = t.profile_lists(now)
        counts, lengths = [], []
        for _ in range(30):
            counts.append(rng.randint(1, 24))
            end = rng.choice(times[1:] or [now + 1.0])
            lengths.append(rng.choice([end - now, math.nextafter(end - now, 0.0),
                                       math.nextafter(end - now, math.inf), 1e6, math.inf,
                                       rng.uniform(0.1, 300.0)]))
        room = rng.randint(1, 24)
        for first in range(len(counts) + 1):
            expected = next((k for k in range(first, len(counts)) if counts[k] <= room
                             and t.count_fits(counts[k], now, now + lengths[k])), len(counts))
            assert t.next_fitting(counts, lengths, first, now, room) == expected


def test_earlier_start_is_may_fit_before_then_earliest_fit():
    """``earlier_start`` reads the rows once; on 60 seeded random profiles (as above) it
    answers as ``may_fit_before`` followed by ``earliest_fit`` with the lease's own
    reservation given up, kept when it is before that reservation, for planned leases of
    their own VM count (re-evaluation's question) and of more VMs than they hold, for their
    own length, a length an ulp longer or shorter, half of it, and 7.5 s more (the cases read
    on past the rows before the reservation)."""
    rng = random.Random(41)
    found = none = 0
    for _ in range(60):
        t, planned = random_plan(rng, reservations=(20, 90), first=1)
        for _ in range(40):
            own = rng.choice(planned)
            after = float(rng.randint(0, int(own.start))) + rng.choice([0.0, 0.25])
            if not after < own.start:
                continue
            count = own.pending + rng.choice([0, 0, 0, 3, 8])
            length = own.end - own.start
            length = rng.choice([length, length, math.nextafter(length, math.inf),
                                 math.nextafter(length, 0.0), length / 2, length + 7.5])
            expected = None
            if t.may_fit_before(vms(count), length, after, own.start):
                start = t.earliest_fit(vms(count), length, after, not_after=own.start,
                                       own=own)
                expected = start if start is not None and start < own.start else None
            got = t.earlier_start(vms(count), length, after, own)
            assert got == expected, (count, length, after, own)
            assert got is None or type(got) is float
            found += got is not None
            none += got is None
    assert found > 1500 and none > 200


@pytest.mark.parametrize("mode", ["off", "aggressive", "intermediate", "conservative"])
def test_seeded_random_workload_every_lease_finds_nodes_when_it_starts(mode):
    """300 leases of 1-6 one-core VMs on 4 nodes of 3 cores, early ends and deadlines mixed
    in: with counted reservations every lease must get nodes when it starts (an over-commit
    would raise) and the invariant check (per node, over time) must hold."""
    rng = random.Random(11)
    leases: list[Lease] = []
    t = 0.0
    for i in range(1, 301):
        t += rng.choice([0, 0, 30, 120, 600])
        requested = rng.choice([60, 300, 900, 3600])
        actual = requested * rng.choice([0.2, 0.5, 1.0])
        lease = be(i, rng.randint(1, 6), requested, t, actual=actual)
        if rng.random() < 0.1:
            lease.type = LeaseType.DEADLINE
            lease.deadline = t + requested * rng.choice([2, 20])
        leases.append(lease)
    run = simulate(leases, f"scheduling.backfilling={mode}",
                   "scheduling.backfilling-reservations=3", "scheduling.placement=at-start",
                   "tracefile.vm-resources=CPU:1 Memory:0", resources="4 CPU:3 Memory:1024")
    done = [lease for lease in leases if lease.state is LeaseState.DONE]
    assert len(done) + sum(lease.state is LeaseState.REJECTED for lease in leases) == 300
    assert len(done) > 250
    assert run.summary["leases_total"] == 300


class _LooksAhead(HostSelectionPolicy):
    """A host selection policy that does not say it supports placement at start."""

    name = "looks-ahead"

    def order_hosts(self, lease, start, end, table):
        return np.arange(table.capacity.shape[0])


class _Plugin:
    @hookimpl
    def register_policies(self):
        return [_LooksAhead]


def test_at_start_is_refused_where_it_cannot_serve(tmp_path):
    """One line naming the option and why, for each configuration it cannot serve."""
    lwf = tmp_path / "one.lwf"   # an advance reservation
    lwf.write_text('<?xml version="1.0"?><lease-workload name="x"><lease-requests>'
                   '<lease-request arrival="00:00:00.00"><lease id="1" preemptible="no">'
                   '<nodes><node-set numnodes="1"><res type="CPU" amount="1"/></node-set>'
                   '</nodes><start><exact time="00:10:00.00"/></start>'
                   '<duration time="00:10:00.00"/><software><none/></software></lease>'
                   '</lease-request></lease-requests></lease-workload>')
    for settings, words in (
            (("power.pstates=2.4:100:200", "power.power-cap=1e6", "power.initial-state=off",
              "power.switch-on=20:150"), "(power cap:"),
            (("scheduling.policy-host-selection=looks-ahead",), "(host selection:"),
            ((f"tracefile.tracefile={lwf}",), "(advance reservations that may preempt:"),
            ((f"tracefile.injectionfile={lwf}",), "(injection file:")):
        plugins = Plugins(entry_points=False, extra=[_Plugin()])
        config = load_config(ROOT / "etc" / "sample.ini", plugins.schema,
                             ["scheduling.placement=at-start", *settings])
        with pytest.raises(ConfigError, match="placement") as err:
            Run(config, plugins)
        assert words in str(err.value) and "\n" not in str(err.value)
    plugins = Plugins(entry_points=False)
    config = load_config(ROOT / "etc" / "sample.ini", plugins.schema,
                         ["scheduling.placement=at-start"])
    with pytest.raises(ConfigError, match="daemon"):
        Run(config, plugins, serve=True)


def test_taking_nodes_out_of_the_free_list_matches_a_set(monkeypatch):
    """``_take_nodes`` on 400 seeded random sorted lists, taking their first nodes, a few
    scattered ones, many scattered ones, or some that are not free: it changes the list as
    removing a set would, or refuses and changes nothing (both ways of taking scattered
    nodes: one by one and by filtering)."""
    from lease_manager.kernel import count_table
    from lease_manager.kernel.count_table import _take_nodes

    rng = random.Random(3)
    outcomes = []
    for case in range(400):
        monkeypatch.setattr(count_table, "FEW_NODES", rng.choice([0, 8, 10**6]))
        free = sorted(rng.sample(range(60), rng.randint(0, 40)))
        kind = case % 4
        count = rng.randint(1, max(1, len(free)))
        if kind == 0:
            nodes = free[:count]
        elif kind == 1:
            nodes = rng.sample(free, min(count, 3)) if free else [5]
        elif kind == 2:
            nodes = rng.sample(free, count) if free else [5]
        else:
            nodes = [*rng.sample(free, count - 1), rng.choice([n for n in range(61)
                                                               if n not in free])]
        before = list(free)
        ok = _take_nodes(free, list(nodes))
        possible = set(nodes) <= set(before)
        assert ok == possible
        assert free == (sorted(set(before) - set(nodes)) if ok else before)
        outcomes.append(ok)
    assert 0 < sum(outcomes) < len(outcomes)


def _same_nodes(a: CountTable, b: CountTable) -> None:
    """Both tables answer every per-node query about now alike."""
    assert a.vm_fits(VM, a.now, a.now + 1).tolist() == b.vm_fits(VM, b.now, b.now + 1).tolist()
    assert a.lease_counts_at(a.now).tolist() == b.lease_counts_at(b.now).tolist()
    assert a.lease_counts_at(a.now).dtype == b.lease_counts_at(b.now).dtype
    assert (a.free_at(a.now) == b.free_at(b.now)).all()


def test_the_list_of_free_nodes_answers_as_the_arrays():
    """A site of one-core nodes (one VM each) keeps its free nodes in a list; a copy made to
    keep arrays from the start must answer alike after every step of 30 seeded random runs
    (reservations pinned on random or first free nodes, refused over-commits, early ends,
    removals, the clock moving), and the list must be the nodes with a free slot."""
    rng = random.Random(7)
    site = parse_site("9 CPU:1 Memory:1024")
    pinned = 0
    for _ in range(30):
        tables = [CountTable(site, VM), CountTable(site, VM)]
        tables[1]._keep_arrays()
        assert tables[0].one_per_node and not tables[1].one_per_node
        held: list[list[Reservation]] = [[], []]
        now = 0.0
        for _ in range(40):
            op = rng.random()
            if op < 0.5:
                count = rng.randint(1, 4)
                first = tables[0].first_free(count)
                nodes = (first if first is not None and rng.random() < 0.5
                         else rng.sample(range(9), count))
                end = now + rng.choice([5.0, 20.0, math.inf])
                outcome = []
                for t, mine in zip(tables, held):
                    res = Reservation(None, now, end, np.array(nodes, dtype=np.intp),
                                      np.tile(VM, (count, 1)), vm_nodes=tuple(nodes),
                                      vm_shape=SHAPE)
                    try:
                        mine.append(t.add(res))
                        outcome.append(True)
                    except OvercommitError:
                        outcome.append(False)
                assert outcome[0] == outcome[1]
                pinned += outcome[0]
            elif op < 0.7 and held[0]:
                k = rng.randrange(len(held[0]))
                cut = rng.random() < 0.5
                for t, mine in zip(tables, held):
                    res = mine.pop(k)
                    if res in t:
                        if cut and res.end > now:
                            t.truncate(res, now)
                        else:
                            t.remove(res)
            else:
                now += rng.choice([1.0, 5.0, 10.0])
                for t in tables:
                    t.advance(now)
            _same_nodes(*tables)
            free = tables[0].vm_fits(VM, now, now + 1)
            assert tables[0].first_free(int(free.sum())) == np.flatnonzero(free).tolist()
            assert tables[0].first_free(int(free.sum()) + 1) is None
            for t in tables:
                t.check()
    assert pinned > 200


@pytest.mark.parametrize("policy", ["greedy", "no-policy"])
@pytest.mark.parametrize("mode", ["off", "aggressive"])
def test_first_free_nodes_are_where_host_selection_and_the_mapper_put_a_lease(
        monkeypatch, policy, mode):
    """A seeded random workload on eight one-core nodes, replayed with the first free nodes
    taken from the table's list and again with host selection ordering every node and the
    mapper placing along that order: every lease gets the same nodes at the same times."""
    from lease_manager.policies.host_selection import GreedyPolicy, NoPolicy

    def leases():
        rng = random.Random(13)
        made, t = [], 0.0
        for i in range(1, 201):
            t += rng.choice([0, 0, 20, 90, 400])
            requested = rng.choice([60, 300, 900])
            made.append(be(i, rng.randint(1, 5), requested, t,
                           actual=requested * rng.choice([0.3, 1.0])))
        return made

    placed = []
    for fast in (True, False):
        for cls in (GreedyPolicy, NoPolicy):
            monkeypatch.setattr(cls, "free_nodes_first", fast)
        done = leases()
        simulate(done, f"scheduling.backfilling={mode}", "scheduling.placement=at-start",
                 f"scheduling.policy-host-selection={policy}",
                 "tracefile.vm-resources=CPU:1 Memory:0", resources="8 CPU:1 Memory:1024")
        placed.append([(lease.start, lease.end, [r.nodes.tolist() for r in lease.allocations])
                       for lease in done])
    assert placed[0] == placed[1]
    assert len({tuple(nodes[0]) for _, _, nodes in placed[0]}) > 20   # (varied placements)


def test_a_subclass_ordering_hosts_its_own_way_is_asked():
    """A policy deriving from greedy with its own order does not inherit the shortcut."""
    from lease_manager.policies.host_selection import GreedyPolicy

    class Reversed(GreedyPolicy):
        def order_hosts(self, lease, start, end, table):
            return super().order_hosts(lease, start, end, table)[::-1]

    class Same(GreedyPolicy):
        pass

    assert GreedyPolicy.free_nodes_first and Same.free_nodes_first
    assert not Reversed.free_nodes_first


def test_the_profile_lists_and_their_arrays_agree_through_random_changes():
    """The profile is kept as lists and made into arrays when a query over many rows asks;
    through 40 seeded random runs of adds (refused over-commits too), early ends, removals
    and the clock moving, with the arrays made before every change: the profile must match
    its reservations (``check``), the arrays the lists, and ``fits_at`` (on the lists) and
    ``room_at`` the answers read from the arrays."""
    rng = random.Random(21)
    refused = checked = 0
    for _ in range(40):
        t = table()
        planned: list[Reservation] = []
        now = 0.0
        for _ in range(40):
            t.profile(t.horizon)   # (the arrays exist before each change)
            op = rng.random()
            if op < 0.55:
                start = now + rng.choice([0.0, 0.0, 3.0, 10.0, 17.0])
                end = start + rng.choice([1.0, 5.0, 12.0, 30.0, math.inf])
                try:
                    planned.append(t.add(pending(start, end, rng.randint(1, 4))))
                except OvercommitError:
                    refused += 1
            elif op < 0.8 and planned:
                res = planned.pop(rng.randrange(len(planned)))
                if res in t:
                    if rng.random() < 0.5 and res.end > max(res.start, now):
                        t.truncate(res, rng.uniform(max(res.start, now), min(res.end,
                                                                               res.start + 40)))
                    else:
                        t.remove(res)
            else:
                now += rng.choice([1.0, 4.0, 9.0])
                t.advance(now)
            t.check()
            times, free = t.profile(t.horizon)
            assert times.tolist() == t._t and free.tolist() == t._room
            for _ in range(5):
                at = now + rng.choice([0.0, 2.0, 7.5, 20.0])
                length = rng.choice([0.5, 4.0, 15.0, math.inf])
                count = rng.randint(1, 6)
                k0 = int(np.searchsorted(times, at, side="right")) - 1
                ke = (len(times) if math.isinf(length)
                      else max(k0 + 1, int(np.searchsorted(times, at + length, side="left"))))
                assert t.fits_at(vms(count), length, at) == bool(free[k0:ke].min() >= count)
                assert t.room_at(VM, at) == free[k0]
                checked += 1
    assert refused > 20 and checked > 5000


def _on(t: CountTable, start, end, nodes) -> Reservation:
    """One VM on each of ``nodes``, pinned now."""
    placement = Placement.one_per_node(tuple(nodes), np.array(nodes), VM)
    return t.add(placement.reservation(None, start, end))


def test_idle_nodes_of_one_slot_each_are_not_listed_until_taken():
    """Six nodes of one VM slot each. The free nodes past the highest one ever taken are not
    in the list: taking n1 and n4 lists n0-n4 (n0, n2, n3 free), the first free three are then
    n0, n2, n3, and n5 joins the list only when it is needed. The answers are those of a full
    list: what each node has free, and the first free nodes."""
    t = CountTable(parse_site("6 CPU:1 Memory:1024"), VM)
    assert t.one_per_node and t._free_nodes == [] and t._tail == 0
    a = _on(t, 0, 10, [1, 4])
    assert t._free_nodes == [0, 2, 3] and t._tail == 5
    assert t.lease_counts_at(0).tolist() == [0, 1, 0, 0, 1, 0]
    assert t.first_free(3) == [0, 2, 3] and t._tail == 5
    assert t.first_free(4) == [0, 2, 3, 5] and t._tail == 6
    assert t.first_free(5) is None
    with pytest.raises(OvercommitError):
        _on(t, 0, 10, [3, 4])
    b = _on(t, 0, 5, [0, 2, 3, 5])
    assert t.first_free(1) is None and t.vm_fits(VM, 0, 5).tolist() == [0] * 6
    t.check()
    t.set_now(5)
    assert [r.end for r in t.advance(5)] == [5]
    assert b.end == 5 and t._free_nodes == [0, 2, 3, 5] and t.first_free(2) == [0, 2]
    t.set_now(10)
    assert [r.id for r in t.advance(10)] == [a.id] and t._free_nodes == list(range(6))
    t.check()


def test_a_million_idle_nodes_of_one_slot_are_no_list():
    """A million-node site's table listed every free node (a list of a million numbers: the
    table took 60 MB to make, now 32 MB of arrays)."""
    import tracemalloc

    site = parse_site("1000000 CPU:1 Memory:1024")
    tracemalloc.start()
    try:
        t = CountTable(site, VM)
        made = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert t.one_per_node and made < 40e6


def test_the_free_nodes_include_those_never_taken():
    """Six nodes of one VM slot each: the nodes past the highest one ever taken are implied
    free, not listed, but ``free_nodes`` (which the node power states follow to tell idle
    nodes) names them: none taken -> all six; n1 and n4 taken -> n0, n2, n3, n5. Without
    them a node that never ran a lease was never idle, so it never switched off."""
    t = CountTable(parse_site("6 CPU:1 Memory:1024"), VM)
    assert t.free_nodes() == [0, 1, 2, 3, 4, 5]
    _on(t, 0, 10, [1, 4])
    assert t.free_nodes() == [0, 2, 3, 5]
    assert t.first_free(4) == [0, 2, 3, 5]
    assert t.free_nodes() == [0, 2, 3, 5]
    t.check()


def test_moving_a_pending_reservation_by_hand():
    """Six VM slots. A (4 VMs) is planned over [10, 30), B (2 VMs) over [30, 40), C (3 VMs)
    over [0, 5). Moving A to [5, 25) leaves::

        time   0    5    10   25   30   40
        before 3    6    2    2    4    6      (A from 10, B from 30, C to 5)
        after  3    2    2    6    4    6      (A from 5 to 25)

    and the breakpoint at 10 goes (nothing starts or ends there). Moving it on to [2, 22)
    does not fit (3 + 4 > 6 over [2, 5)) and changes nothing."""
    t = table()
    a = t.add(pending(10, 30, 4))
    t.add(pending(30, 40, 2))
    t.add(pending(0, 5, 3))
    assert t.profile_lists(0) == ([0, 5, 10, 30, 40], [3, 6, 2, 4, 6])
    moved = pending(5, 25, 4)
    t.move(a, moved)
    assert t.profile_lists(0) == ([0, 5, 25, 30, 40], [3, 2, 6, 4, 6])
    assert a not in t and moved in t
    t.check()
    with pytest.raises(OvercommitError):
        t.move(moved, pending(2, 22, 4))
    assert t.profile_lists(0) == ([0, 5, 25, 30, 40], [3, 2, 6, 4, 6]) and moved in t
    t.check()


class _Recorder:
    """A watch that keeps every change a table records."""

    def __init__(self) -> None:
        self.changes: list[tuple[float, float, bool]] = []

    def record(self, lo: float, hi: float, freed: bool) -> None:
        self.changes.append((lo, hi, freed))


def test_moving_a_pending_reservation_is_remove_then_add():
    """On 150 seeded random plans, built twice: a planned reservation moved to a random
    earlier (or overlapping, or later) interval by ``move`` on one table and by
    ``remove`` then ``add`` on the other leaves the same rows, breakpoints and references,
    reservations in the same order, the same ends to forget and the same changes recorded
    by a watch; where it does not fit, the same table as before (the two steps put it
    back)."""
    moved = refused = 0
    for seed in range(150):
        tables = []
        for way in ("fused", "two steps"):
            t, planned = random_plan(random.Random(seed), first=2)
            recorder = _Recorder()
            t._watches.append(recorder)   # type: ignore[arg-type]
            rng = random.Random(1000 + seed)
            old = rng.choice(planned)
            start = max(0.0, old.start + rng.choice([-200.0, -30.0, -12.5, -5.0, -0.25, 2.5]))
            new = pending(start, start + (old.end - old.start), old.pending)
            try:
                if way == "fused":
                    t.move(old, new)
                else:
                    t.remove(old)
                    try:
                        t.add(new)
                    except OvercommitError:
                        t.add(old)
                        raise
                fitted = True
            except OvercommitError:
                fitted = False
            t.check()
            names = {r.id: i for i, r in enumerate(planned)} | {new.id: -1}
            held = [names[i] for i in t._reservations]
            if fitted:
                tables.append((t._t, t._room, t._refs, held,
                               [(end, names.get(i)) for end, i in t._ends], recorder.changes))
            else:   # (putting back adds it again, last, with one more end to forget)
                tables.append((t._t, t._room, t._refs, sorted(held)))
        assert tables[0] == tables[1], seed
        moved += fitted
        refused += not fitted
    assert moved > 100 and refused > 0
