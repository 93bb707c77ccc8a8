"""Section 3.1's revert in GreenPar's optimising policies (``[greenpar] optimizing-revert``):
GreenPar "reverts back to the user-requested resource allocations when utilization becomes so
high that jobs cannot be started immediately upon arrival"."""

from __future__ import annotations

import pytest

from lmg_helpers import allocations, job, simulate, speedups

#: SP(n, V) of app "A": linear in servers (V = 4 and 8 VMs)
TABLE = {"A": {4: {1: 1.0, 2: 2.0, 4: 4.0}, 8: {2: 2.0, 4: 4.0, 8: 8.0}}}


def fake_solver(monkeypatch, first: list[int], second_ok: bool):
    """Aggressive's solves, scripted: the first (job A alone) plans A on ``first`` servers
    in its first epochs, then on the last of them; the second (at B's arrival) has no plan
    unless ``second_ok`` (then every running job where it is and the new one on 2); later
    ones plan a lone job on 4 servers and keep two jobs where they are."""
    import lm_greenpar.optimizing as optimizing
    from lm_greenpar.milp import Solution

    calls: list[float] = []

    def fake(problem, jobs, limit, gap, node_limit=None):
        calls.append(len(jobs))
        e = len(problem.green)
        if len(calls) == 1:
            plan = {jobs[0].key: (first + [first[-1]] * e)[:e]}
        elif len(calls) == 2 and not second_ok:
            return Solution(2, "infeasible", False, 0.0, 0.0, {}, {}, {})
        elif len(jobs) == 1:
            plan = {jobs[0].key: [4] * e}
        else:
            plan = {j.key: [j.current or 2] * e for j in jobs}
        return Solution(0, "optimal", False, 0.0, 0.0, {k: 4 for k in plan}, plan, {})

    monkeypatch.setattr(optimizing, "solve", fake)
    return calls


def mode(revert: bool | str) -> str:
    return revert if isinstance(revert, str) else "at-arrival" if revert else "off"


def run(tmp_path, revert: bool | str, *settings: str, a_runtime: float = 4000):
    table = speedups(tmp_path / "sp.csv", TABLE)
    a, b = job(1, "A", 2, a_runtime), job(2, "A", 2, 1000, submit=1000)
    r = simulate([a, b], "aggressive", f"greenpar.speedups={table}", "greenpar.slowdown=1.25",
                 f"greenpar.optimizing-revert={mode(revert)}", *settings,
                 servers=4)
    return a, b, r


def test_aggressive_reverts_when_a_job_cannot_start(tmp_path, monkeypatch):
    """4 servers drawing 0 W asleep and 100 W busy, no green, F = 1.25, 15-minute epochs, no
    resize interval, no migration time. A and B run app A (SP(n) = n on 4 VMs), both ask for
    N = 2 servers (SLA rate 2 / 1.25 = 1.6). A: 4,000 s at N (work 8,000), planned on 4
    servers. B: submitted at 1,000 s, 1,000 s at N (work 2,000); the solve at its arrival
    has no plan (all 4 servers are A's), so it cannot start at once.

    Without the revert, A keeps its 4 servers (rate 4) and ends at 2,000; B waits 1,000 s,
    starts at 2,000 on its 2 servers and ends at 3,000.
    With it, A goes back to its N = 2 at 1,000 (done 4,000 >= 1.6 x 1,000) and B starts at
    once on the 2 servers freed, ending at 2,000. At the epoch at 1,800 no job waits:
    Aggressive solves again (two jobs: kept where they are). At 2,000 B ends; the solve
    plans A alone on 4 servers: done 6,000, 2,000 left at rate 4, it ends at 2,500 (2,500 s
    <= 1.25 x 4,000).

    without:  server  0        1,000     2,000     3,000
              0-1     A ------------------|
              2-3     A ------------------|B --------|
    with:     0-1     A ----------------------------|  (2,500)
              2-3     A -------|B --------|A -------|
    Power (busy servers x 100 W, all brown): without, 400 W to 2,000, 200 W to 3,000; with,
    400 W to 2,500. Both 1,000,000 J: the revert moves A's speed-up from before B's arrival
    to after B's end, and B does not wait.
    """
    calls = fake_solver(monkeypatch, [4], second_ok=False)
    a, b, r = run(tmp_path, revert=False)
    assert allocations(a) == [(0, 4)]
    assert allocations(b) == [(2000, 2)]
    assert (b.start, b.end, a.end) == (2000, 3000, 2000)
    assert calls == [1, 2]   # (at 2,000 no job runs: nothing to solve)
    assert r.summary["energy_joules"] == pytest.approx(1e6)
    monkeypatch.undo()

    calls = fake_solver(monkeypatch, [4], second_ok=False)
    a, b, r = run(tmp_path, revert=True)
    assert allocations(a) == [(0, 4), (1000, 2), (2000, 4)]
    assert allocations(b) == [(1000, 2)]
    assert (b.start, b.end) == (1000, 2000)
    assert a.end == pytest.approx(2500)
    assert calls == [1, 2, 2, 1]   # the solve at 1,800: the waits are over
    assert r.summary["greenpar_revert_waits"] == 1
    assert r.summary["greenpar_revert_changes"] == 1
    assert r.summary["greenpar_sla_violations"] == 0
    assert r.summary["energy_joules"] == pytest.approx(1e6)


def test_aggressive_reverts_when_the_plan_counts_on_held_servers(tmp_path, monkeypatch):
    """As :func:`test_aggressive_reverts_when_a_job_cannot_start`, but the solve at B's
    arrival has a plan: A kept on its 4 servers and B on 2, 6 of the site's 4. Without the
    revert B waits for A's end (2,000 s) as before; with it, B's plan does not fit at its
    arrival, so A goes back to its N = 2 and B starts at once: the same Gantt chart and
    power profile as there (1,000,000 J)."""
    calls = fake_solver(monkeypatch, [4], second_ok=True)
    a, b, r = run(tmp_path, revert=False)
    assert allocations(a) == [(0, 4)]
    assert (b.start, b.end, a.end) == (2000, 3000, 2000)
    assert calls == [1, 2]
    monkeypatch.undo()

    calls = fake_solver(monkeypatch, [4], second_ok=True)
    a, b, r = run(tmp_path, revert=True)
    assert allocations(a) == [(0, 4), (1000, 2), (2000, 4)]
    assert allocations(b) == [(1000, 2)]
    assert a.end == pytest.approx(2500)
    assert calls == [1, 2, 2, 1]
    assert r.summary["greenpar_revert_waits"] == 1
    assert r.summary["energy_joules"] == pytest.approx(1e6)


def test_a_job_that_just_fits_reverts_nothing(tmp_path, monkeypatch):
    """The boundary: A (N = 2) is planned on 2 servers, so at B's arrival (1,000 s) the 2
    free servers are exactly B's N; the solve plans both on 2 (A's plan beyond: kept). B
    starts at once and nothing reverts; the runs with and without the revert are the same.
    A: 4,000 s at N on 2 servers (rate 2), ends at 4,000 (at 2,000, when B ends, the solve
    plans it alone on 4 servers: done 4,000, 4,000 left at rate 4, it ends at 3,000).

              server  0        1,000     2,000     3,000
              0-1     A ----------------------------|
              2-3              B --------|A --------|
    Power: 200 W to 1,000, 400 W to 3,000 (1,000,000 J).
    """
    for revert in (False, True):
        calls = fake_solver(monkeypatch, [2], second_ok=True)
        a, b, r = run(tmp_path, revert=revert)
        assert allocations(a) == [(0, 2), (2000, 4)]
        assert allocations(b) == [(1000, 2)]
        assert (b.start, b.end) == (1000, 2000)
        assert a.end == pytest.approx(3000)
        assert calls == [1, 2, 1]
        assert r.summary["energy_joules"] == pytest.approx(1e6)
        assert r.summary.get("greenpar_revert_waits", 0) == 0
        assert r.summary.get("greenpar_revert_changes", 0) == 0
        monkeypatch.undo()


def test_the_revert_and_the_hourly_migration_limit(tmp_path, monkeypatch):
    """``resize-interval = 1800``: A changed within the interval when B arrives. A: 8,000 s
    at N = 2 (work 16,000; SLA 10,000 s), planned on 2 servers then 4: it grows at 900. B
    (1,000 s at N, work 2,000) arrives at 1,000 and cannot start (the solve has no plan).

    off: A keeps 4 servers and ends at 900 + 14,200 / 4 = 4,450; B, reserved behind it,
    starts then and ends at 5,450.
    at-arrival: A goes back to 2 at once (done 1,800 + 400 = 2,200; a forced resize) and B
    starts at 1,000, ends at 2,000. At 1,800 no job waits: a solve keeps both where they
    are. At 2,000 the solve plans A alone on 4, but A changed at 1,000: it grows at the
    epoch at 3,600 (done 2,200 + 2 x 2,600 = 7,400) and ends at 3,600 + 8,600 / 4 = 5,750.
    within-interval: A keeps 4 at 1,000 and 1,800 and goes back to 2 at 2,700 (done 9,000),
    but B has a reservation behind A, which only A's early end moves: A ends at 2,700 +
    7,000 / 2 = 6,200 and B starts then, 1,750 s later than without the revert; the solve at
    the epoch at 6,300 (no job waits) plans B alone on 4: 1,800 left at rate 4, it ends at
    6,750.

    off:              server 0    900 1,000  2,000  2,700  3,600  4,450  5,450
                      0-1    A ------------------------------------|
                      2-3         A -------------------------------|B ------|
    at-arrival:       0-1    A ----------------------------------------------|  (5,750)
                      2-3         A-|B ------|             A ------------------|
    within-interval:  0-1    A ------------------------- (to 6,200) |B (6,200-6,750)
                      2-3         A -------------------|            B (6,300-6,750)
    Busy servers x 100 W: off 2 to 900, 4 to 4,450, 2 to 5,450; at-arrival 2 to 900, 4 to
    2,000, 2 to 3,600, 4 to 5,750; within-interval 2 to 900, 4 to 2,700, 2 to 6,300, 4 to
    6,750. All 1,800,000 J.
    """
    interval = "greenpar.resize-interval=1800"
    fake_solver(monkeypatch, [2, 4], second_ok=False)
    a, b, r = run(tmp_path, "off", interval, a_runtime=8000)
    assert allocations(a) == [(0, 2), (900, 4)]
    assert a.end == pytest.approx(4450) and b.start == pytest.approx(4450)
    assert r.summary["energy_joules"] == pytest.approx(1.8e6)
    monkeypatch.undo()

    calls = fake_solver(monkeypatch, [2, 4], second_ok=False)
    a, b, r = run(tmp_path, "at-arrival", interval, a_runtime=8000)
    assert allocations(a) == [(0, 2), (900, 4), (1000, 2), (3600, 4)]
    assert allocations(b) == [(1000, 2)]
    assert (b.start, b.end) == (1000, 2000)
    assert a.end == pytest.approx(5750)
    assert calls == [1, 2, 2, 1]
    assert r.summary["greenpar_forced_resizes"] == 1
    assert r.summary["greenpar_revert_changes"] == 1
    assert r.summary["energy_joules"] == pytest.approx(1.8e6)
    monkeypatch.undo()

    calls = fake_solver(monkeypatch, [2, 4], second_ok=False)
    a, b, r = run(tmp_path, "within-interval", interval, a_runtime=8000)
    assert allocations(a) == [(0, 2), (900, 4), (2700, 2)]
    assert allocations(b) == [(6200, 2), (6300, 4)]
    assert a.end == pytest.approx(6200)
    assert b.end == pytest.approx(6750)
    assert calls == [1, 2, 1]
    assert r.summary["greenpar_forced_resizes"] == 0
    assert r.summary["energy_joules"] == pytest.approx(1.8e6)


def test_offline_reverts_then_follows_its_plan_again(tmp_path, monkeypatch):
    """Offline, its one solve scripted: A (N = 2, 4,000 s at N, work 8,000) planned on 4, 4,
    2, then 4 servers in 15-minute epochs; B (N = 2, submitted at 1,000 s, 1,000 s at N) on 2
    from its arrival epoch. At 1,000 B's 2 servers do not fit beside A's 4 (4 servers).

    off: B waits, reserved behind A. At 1,800 A follows its plan to 2 servers (done 7,200),
    which does not move B's reservation; A ends at 2,200 and B starts then (A's early end
    moves it), ends at 3,200.
    at-arrival: A goes back to N = 2 at 1,000 (done 4,000) and B starts at once, ends at
    2,000. Once no job waits Offline follows its plan again: 2 at 1,800 (A keeps it), 4 at
    2,700 (done 4,000 + 2 x 1,700 = 7,400), A ends at 2,700 + 600 / 4 = 2,850.

    off:         server 0      1,000  1,800  2,200   3,200
                 0-1    A ----------------------|
                 2-3    A ---------------|      B -------|
    at-arrival:  0-1    A ---------------------------| (2,850)
                 2-3    A ------|B ----------| (2,000) |A (2,700-2,850)
    Busy servers x 100 W: off 4 to 1,800, 2 to 3,200 (1,000,000 J); at-arrival 4 to 2,000,
    2 to 2,700, 4 to 2,850 (1,000,000 J).
    """
    import lm_greenpar.optimizing as optimizing
    from lm_greenpar.milp import Solution

    def fake(problem, jobs, limit, gap, node_limit=None, start_requested=False):
        e = len(problem.green)
        plan = {1: ([4, 4, 2] + [4] * e)[:e], 2: ([0, 2] + [2] * e)[:e]}
        return Solution(0, "optimal", False, 0.0, 0.0, {1: 4, 2: 4}, plan, {})

    for revert in ("off", "at-arrival"):
        monkeypatch.setattr(optimizing, "solve", fake)
        table = speedups(tmp_path / "sp.csv", TABLE)
        a, b = job(1, "A", 2, 4000), job(2, "A", 2, 1000, submit=1000)
        r = simulate([a, b], "offline", f"greenpar.speedups={table}",
                     "greenpar.slowdown=1.25", f"greenpar.optimizing-revert={revert}",
                     servers=4)
        monkeypatch.undo()
        assert r.summary["energy_joules"] == pytest.approx(1e6)
        assert r.summary["greenpar_sla_violations"] == 0
        if revert == "off":
            assert allocations(a) == [(0, 4), (1800, 2)]
            assert a.end == pytest.approx(2200)
            assert (b.start, b.end) == (pytest.approx(2200), pytest.approx(3200))
        else:
            assert allocations(a) == [(0, 4), (1000, 2), (2700, 4)]
            assert allocations(b) == [(1000, 2)]
            assert (b.start, b.end) == (1000, 2000)
            assert a.end == pytest.approx(2850)
            assert r.summary["greenpar_revert_waits"] == 1
