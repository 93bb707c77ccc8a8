"""The slot table's fast paths give the general paths' answers, bit for bit.

Each test replays the same seeded random changes (adds, some refused; removals, truncations,
extensions; the horizon advanced) on two tables, one of them forced through the general path,
and compares their whole state or their answers after every change.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from table_changes import random_change, vm_reservation

from lease_manager.kernel.lease import VMRequest
from lease_manager.kernel.profiles import runs_fit
from lease_manager.kernel.resources import parse_site
from lease_manager.kernel.slottable import Reservation, SlotTable

SITE = "6 CPU:4 Memory:6"
#: VM shapes, some fractional (their totals are floor(free / size + EPS) in floating point)
SHAPES = [np.array(v) for v in ([1.0, 1.0], [1.0, 0.0], [2.0, 3.0], [0.3, 0.7], [0.1, 2.0])]


def random_reservation(rng: random.Random, lo: float) -> Reservation:
    """VMs of one shape on 1-3 nodes over a short interval (some never end), drawing power."""
    v = SHAPES[rng.randrange(len(SHAPES))]
    nodes = sorted(rng.sample(range(6), rng.randint(1, 3)))
    counts = [rng.randint(1, 2) for _ in nodes]
    start = lo + rng.choice([0, 0, 1, 2, 5, 0.5]) + rng.randint(0, 20)
    end = math.inf if rng.random() < 0.1 else start + rng.choice([0.5, 1, 2, 3, 7, 15])
    return vm_reservation(rng, start, end, nodes, counts, v)


def replay(seed: int, steps: int, patch: Callable[[SlotTable], None] | None,
           look: Callable[[SlotTable, random.Random], object]) -> list[object]:
    """Random changes of a table (``patch`` applied to it first); after each, ``look`` at it."""
    rng = random.Random(seed)
    t = SlotTable(parse_site(SITE), site_resources={"power": 25.0})
    if patch is not None:
        patch(t)
    watch = t.watch()
    for v in SHAPES[:3]:
        t.room_at(v, 0.0)   # keep totals for some shapes from the start, others later
    live: list[Reservation] = []
    seen: list[object] = []
    for step in range(steps):
        watch.reset()
        outcome, live = random_change(t, rng, live, random_reservation)
        if step == steps // 3:
            t.room_at(SHAPES[3], t.horizon)
        seen.append((step, outcome, watch.lo, watch.hi, watch.freed, look(t, rng)))
    t.check()
    return seen


def state(t: SlotTable, rng: random.Random) -> object:
    """Everything the table keeps per row, in time order (bytes: bit for bit)."""
    slots = t._slots(0, len(t._t))
    return (list(t._t), t._free[slots].tobytes(), t._nres[slots].tobytes(),
            t._site[slots].tobytes(),
            sorted((key, shape.totals[slots].tobytes()) for key, shape in t._shapes.items()))


@pytest.mark.parametrize("seed", range(6))
def test_changes_of_one_row_equal_the_general_path(seed):
    """``_apply`` on one row (one slot, ``_change_rows``) leaves the table as the grid of
    row and node indices would."""
    calls = {"one row": 0}

    def general(t: SlotTable) -> None:
        def grid(ks, ke):
            slots = t._slots(ks, ke)
            return slots, slots[:, None]
        t._change_rows = grid

    def count(t: SlotTable) -> None:
        rows = t._change_rows

        def counted(ks, ke):
            calls["one row"] += ke - ks == 1
            return rows(ks, ke)
        t._change_rows = counted

    fast = replay(seed, 300, count, state)
    assert fast == replay(seed, 300, general, state)
    assert calls["one row"] > 50
    assert sum(seen[1] == "refused" for seen in fast) > 5


def fit_questions(t: SlotTable, rng: random.Random) -> list[tuple[bool, bool]]:
    """``fits_at`` and the general answer (every group's totals at the start, then its
    cumulative minima through the window's rows) for random demands, starts and lengths."""
    answers = []
    for _ in range(12):
        at = t.horizon + rng.choice([0, 0, 0.5, 1]) + rng.randint(0, 25)
        length = rng.choice([0.5, 1, 2, 4, 9, 30, math.inf])
        groups = rng.sample(range(len(SHAPES)), rng.choice([1, 1, 1, 2]))
        demand = VMRequest(tuple(rng.randint(1, 20) for _ in groups),
                           np.array([SHAPES[g] for g in groups]))
        k0 = t._row(at)
        j = (len(t._t) if math.isinf(length)
             else bisect_left(t._t, at + length, k0 + 1))
        general = True
        for count, vector in zip(demand.counts, demand.vectors):
            shape = t._shape(vector)
            # through every row of the window, not only those where capacity can fall
            cum = np.minimum.accumulate(t._window_fits(shape, k0, len(t._t)), axis=0).sum(
                axis=1).tolist()
            answers.append((t._cum_fits(shape, k0), cum))
            if shape.totals[t._slot[k0]] < count or cum[j - k0 - 1] < count:
                general = False
                break
        answers.append((t.fits_at(demand, length, at), general))
        ks, ke = t._span(at, at + length)
        vector = demand.vectors[0]
        answers.append((t.vm_fits(vector, at, at + length).tolist(),
                        t._window_fits(t._shape(vector), ks, ke).min(axis=0).tolist()))
    return answers


@pytest.mark.parametrize("seed", range(4))
def test_fits_at_and_vm_fits_equal_their_general_answers(seed):
    """``fits_at`` and ``vm_fits`` read row ``k0`` alone where the window is that row or no
    reservation starts in it, and otherwise only the rows where a reservation starts; everywhere
    their answers (and the cumulative minima ``fits_at`` keeps) are those of every row of the
    window (the cumulative minima; the per-node least)."""
    answers = [a for seen in replay(seed, 200, None, fit_questions) for a in seen[-1]]
    assert all(fast == general for fast, general in answers)
    fits = [general for _, general in answers if isinstance(general, bool)]
    assert 0.15 < sum(fits) / len(fits) < 0.85


def move_questions(t: SlotTable, rng: random.Random) -> list[tuple[bool, bool, str]]:
    """``may_fit_before`` and its general answer (the runs of unblocked rows) for random
    demands, with which case the general answer is: the last row free, every row blocked, or
    some runs to look at."""
    answers = []
    for _ in range(12):
        after = t.horizon + rng.choice([0, 0, 0.5, 1]) + rng.randint(0, 15)
        before = after + rng.choice([0.5, 1, 3, 6, 12, 20])
        duration = rng.choice([0.5, 1, 2, 5, 10])
        groups = rng.sample(range(len(SHAPES)), rng.choice([1, 1, 1, 2]))
        demand = VMRequest(tuple(rng.randint(1, 20) for _ in groups),
                           np.array([SHAPES[g] for g in groups]))
        k0 = t._row(after)
        kb = bisect_left(t._t, before, k0 + 1)
        blocked = t._blocked_rows(demand, k0, kb)
        case = "last" if not blocked[-1] else "all" if blocked.all() else "runs"
        answers.append((t.may_fit_before(demand, duration, after, before),
                        runs_fit(t._t, k0, blocked, after, duration), case))
    return answers


@pytest.mark.parametrize("seed", range(4))
def test_may_fit_before_equals_its_general_answer(seed):
    """With one VM shape, ``may_fit_before`` answers from the last row's totals (not
    blocked: yes) and the largest totals (below the demand: every row is blocked, no); its
    answers are always those of the runs of unblocked rows."""
    answers = [a for seen in replay(seed, 200, None, move_questions) for a in seen[-1]]
    assert all(fast == general for fast, general, _ in answers)
    cases = Counter(case for _, _, case in answers)
    assert min(cases["last"], cases["all"], cases["runs"]) > 100, cases
    assert 0 < sum(general for _, general, case in answers if case == "runs") < cases["runs"]
