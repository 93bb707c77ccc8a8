"""The SLA guard of GreenPar's optimising policies: a job that must grow to keep its SLA gets
the servers it needs, whatever the solver's plan says."""

from __future__ import annotations

import pytest

from lmg_helpers import allocations, job, simulate, speedups


def test_aggressive_makes_room_for_a_job_that_must_grow(tmp_path, monkeypatch):
    """Day 0524, beta = 0.8: a job shrunk by the plan (8 -> 4 servers at 38,700 s) could not
    grow back at 42,300 s, when its SLA needed it: the servers it gave up were held by jobs
    the plan had not counted on, and the grow was refused at every epoch until a job ended
    (1.1225 F). Here the solver plans job A's shrink, then has no plan (a failed solve: the
    policy keeps its last one), so job B starts as asked on the servers A gave up.

    3 servers, no green, F = 1.25 (SLA rate 1.6 for both jobs), 15-minute epochs, no
    resize interval, no migration time. A (N = 2, V = 4: SP 1.0 on 1 server, 2.0 on 2),
    4,000 s at N (work 8,000). B (N = 2, V = 4: SP 1.8 on 1 server, 2.0 on 2), submitted
    at 2,000 s, 3,000 s at N (work 6,000). The plan (solved at 0): A on 2, 2, then 1.

    A on 2 servers to 1,800, where 1 server keeps its SLA to 2,700 (3,600 + 900 >= 1.6 x
    2,700 = 4,320): 2 -> 1. At 2,000 B arrives, the solve fails, and B starts as asked on
    the 2 free servers. At 2,700 A must grow (on 1 server: 5,400 < 1.6 x 3,600 = 5,760).

    Without the guard: no server is free, the grow is refused at 2,700, 3,600 and 4,500;
    B ends at 5,000 (6,000 / 2.0 from 2,000), A grows then (done 6,800) and ends at 5,600 >
    1.25 x 4,000 = 5,000.
    With it: B, with room to spare (on 1 server it gains 0.2 a second), shrinks 2 -> 1 at
    2,700 and A grows 1 -> 2 (done 4,500, 3,500 left). At 3,600 the plan's 1 server keeps
    A's SLA to 4,500 (6,300 + 900 = 1.6 x 4,500): 2 -> 1. At 4,500 A must grow again (800
    left: on 1 server it would end at 5,300), one server is free: 1 -> 2, and A ends at
    4,900. B (done 1,400 at 2,700) ends at 2,700 + 4,600 / 1.8 = 5,255.6: 3,255.6 s <=
    1.25 x 3,000.

    server   0      1,800 2,000  2,700  3,600  4,500 4,900  5,255.6
    0        A ----------------------------------------|
    1        A ------|     B ----|A -----|      A ------|
    2                      B --------------------------------------|
    Busy servers: 2 to 1,800, 1 to 2,000, 3 to 3,600, 2 to 4,500, 3 to 4,900, 1 to
    5,255.6 (without the guard: 2, 1, 3 to 5,000, 2 to 5,600).
    """
    import lm_greenpar.base as base
    import lm_greenpar.optimizing as optimizing
    from lm_greenpar.milp import Solution

    table = speedups(tmp_path / "sp.csv", {"A": {4: {1: 1.0, 2: 2.0}},
                                           "Q": {4: {1: 1.8, 2: 2.0}}})

    def run(guard: bool):
        solves = []

        def fake(problem, jobs, limit, gap, node_limit=None):
            solves.append(len(jobs))
            if len(solves) > 1:   # no plan at the limit
                return Solution(1, "node limit reached", False, 0.0, 0.0, {}, {}, {},
                                node_limited=True)
            return Solution(1, "node limit reached", False, 0.0, 0.0, {1: 4},
                            {1: [2, 2] + [1] * (len(problem.green) - 2)}, {},
                            node_limited=True)

        monkeypatch.setattr(optimizing, "solve", fake)
        if not guard:
            monkeypatch.setattr(base.GreenParPolicy, "make_room",
                                lambda self, wanted, leases, now: frozenset())
        a, b = job(1, "A", 2, 4000), job(2, "Q", 2, 3000, submit=2000)
        r = simulate([a, b], "aggressive", f"greenpar.speedups={table}",
                     "greenpar.slowdown=1.25", servers=3)
        monkeypatch.undo()
        return a, b, r

    a, b, r = run(guard=False)
    assert allocations(a) == [(0, 2), (1800, 1), (5000, 2)]
    assert a.end == pytest.approx(5600) and b.end == pytest.approx(5000)
    assert r.summary["resizes_refused"] == 3
    assert r.summary["greenpar_sla_violations"] == 1
    assert r.summary["greenpar_sla_guard_changes"] == 0

    a, b, r = run(guard=True)
    assert allocations(a) == [(0, 2), (1800, 1), (2700, 2), (3600, 1), (4500, 2)]
    assert allocations(b) == [(2000, 2), (2700, 1)]
    assert a.end == pytest.approx(4900) and b.end == pytest.approx(2700 + 4600 / 1.8)
    assert r.summary["resizes_refused"] == 0
    assert r.summary["greenpar_sla_guard_changes"] == 1
    assert r.summary["greenpar_forced_resizes"] == 0
    assert r.summary["greenpar_sla_violations"] == 0
    # B had no plan (the failed solve) but fit as asked: it did not wait, nothing reverted
    assert r.summary["greenpar_revert_waits"] == 0
    assert r.summary["greenpar_revert_changes"] == 0
