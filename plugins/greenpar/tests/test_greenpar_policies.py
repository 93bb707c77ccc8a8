"""GreenPar's heuristic policies on hand-computed schedules.

Site: 16 dual-core servers, a busy server 100 W (an idle one 0), 15-minute epochs, F = 1.1,
no migration time. Speedups (2 VMs per requested server, 4 VMs for job A and B, 8 for C):

    A (N=2, V=4): 1 server 1.0, 2 servers 2.0, 4 servers 3.6
    B (N=2, V=4): 1.2, 2.0, 2.4
    C (N=4, V=8): 2 servers 2.0, 4 servers 3.5, 8 servers 6.0
"""

from __future__ import annotations

import pytest

from lease_manager.kernel.lease import Lease, LeaseType, VMRequest

from lmg_helpers import allocations, green, job, simulate, speedups

TABLE = {"A": {4: {1: 1.0, 2: 2.0, 4: 3.6}}, "B": {4: {1: 1.2, 2: 2.0, 4: 2.4}},
         "C": {8: {2: 2.0, 4: 3.5, 8: 6.0}}}


@pytest.fixture
def table(tmp_path):
    return speedups(tmp_path / "sp.csv", TABLE)


def three_jobs():
    return [job(1, "A", 2, 10 * 3600), job(2, "B", 2, 10 * 3600), job(3, "C", 4, 10 * 3600)]


def test_reactive_minimum_allocations_then_growth_by_marginal_speedup(tmp_path, table):
    """
    At 0:00 (no green): each job at the fewest servers whose speedup is at least SP(N)/F:
    A 2 (SP(1) = 1.0 < 2.0/1.1), B 2 (1.2 < 1.82), C 4 (SP(2) = 2.0 < 3.5/1.1 = 3.18): 8.
    At 0:15 the forecast gives 1,400 W for the next epoch: G = 14 servers. The minima are
    the same (after 900 s at SP(N), halving for the next 900 s would average below SP(N)/F:
    A (2.0 + 1.0)/2, B (2.0 + 1.2)/2, C (3.5 + 2.0)/2). Growth by speedup gained per server
    added: A 2->4 (3.6 - 2.0)/2 = 0.8, C 4->8 (6.0 - 3.5)/4 = 0.625, B 2->4 0.2: A to 4
    (10 servers), C to 8 (14); B's 2 more would exceed 14.

    servers   0:00   0:15 ...   5:40 (A ends)
    A          2      4           -
    B          2      2           4     (the green A used goes to B)
    C          4      8           8
    power     800 W  1,400 W (all green)

    A's work is 10 h x SP(2) = 72,000 single-server seconds: 1,800 by 0:15, the other 70,200
    at 3.6 take 19,500 s: A ends at 20,400 s.
    """
    solar = green(tmp_path / "g", [(0, 0), (900, 1400)])
    leases = three_jobs()
    r = simulate(leases, "reactive", f"greenpar.speedups={table}", solar=solar)
    a, b, c = leases
    assert allocations(a) == [(0, 2), (900, 4)] and a.end == 20400
    assert allocations(b) == [(0, 2), (20400, 4)]
    assert allocations(c)[:2] == [(0, 4), (900, 8)]
    assert r.summary["greenpar_sla_violations"] == 0
    assert r.summary["greenpar_vms"] == 4 + 4 + 8


def test_reactive_with_less_green_grows_only_the_best(tmp_path, table):
    """G = 10 at 0:15: A grows to 4 (0.8 per server, 10 servers); C's 4 more would make 14,
    B's 2 more 12: both wait until A ends (20,400 s) and frees its 4 green servers."""
    solar = green(tmp_path / "g", [(0, 0), (900, 1000)])
    leases = three_jobs()
    simulate(leases, "reactive", f"greenpar.speedups={table}", solar=solar)
    a, b, c = leases
    assert allocations(a) == [(0, 2), (900, 4)] and a.end == 20400
    assert allocations(b)[0] == (0, 2) and allocations(b)[1][0] >= 20400
    assert allocations(c)[0] == (0, 4) and allocations(c)[1][0] >= 20400


@pytest.mark.parametrize("slowdown, servers", [(1.1, 1), (1.09, 2)])
def test_the_sla_at_its_boundary(tmp_path, slowdown, servers):
    """Job D (N=2): SP(1) = 1.0, SP(2) = 1.1. With F = 1.1, one server gives exactly
    SP(N)/F = 1.0: the SLA holds at its boundary and Reactive (no green) starts D on 1
    server; with F = 1.09, SP(N)/F = 1.009 > 1.0: 2 servers. On 1 server its 3,960
    single-server seconds (3,600 s at SP(2) = 1.1) take 3,960 s = F x 3,600, exactly its SLA.
    On 2 servers it does 990 by 0:15, where one server for the next epoch keeps its average
    speedup at (990 + 900) / 1,800 = 1.05 >= 1.009, and so on: it shrinks to 1 and ends at
    900 + 2,970 = 3,870 s (<= 1.09 x 3,600 = 3,924)."""
    table = speedups(tmp_path / "sp.csv", {"D": {4: {1: 1.0, 2: 1.1, 4: 1.15}}})
    d = job(1, "D", 2, 3600)
    r = simulate([d], "reactive", f"greenpar.speedups={table}",
                 f"greenpar.slowdown={slowdown}")
    assert allocations(d)[0] == (0, servers)
    assert d.end - d.start == pytest.approx(3960 if servers == 1 else 3870)
    assert r.summary["greenpar_sla_violations"] == 0


@pytest.mark.parametrize("sp1, first, end", [(1.05, 1, 1022.5), (1.0, 2, 830.0)])
def test_the_sla_with_migration_pauses_at_its_boundary(tmp_path, sp1, first, end):
    """A migration pause (45 s here) makes no progress, so a job must not end in the dip it
    makes below its SLA line (Reactive, seed 17, ended at 1.1001 F: shrunk to exactly its
    SLA at an epoch's end, grown by green and ended 74 s after the pause). Job D (N = 2, 4
    VMs): SP(1) = ``sp1``, SP(2) = 1.1, SP(4) = 2.0; F = 1.1, so the SLA's rate is
    SP(2)/F = 1.0 single-server second per second.

    A decision keeps the SLA until the next epoch starts with one pause's work (1.0 x 45) to
    spare, unless the job ends before; a new job has done nothing.

    - SP(1) = 1.05, 1,000 s at N (work 1,100): on 1 server it ends at 1,048 s > 900, and at
      900 s it is ahead of its SLA line by (1.05 - 1.0) x 900 = 45, exactly the reserve: it
      starts on 1 server. At 0:15 G = 4 (400 W): it grows 1 -> 4 (margin at its end:
      1,100 - 1.0 x (900 + 45 + 155 / 2.0) = 77.5), pauses until 945 and does its last 155
      at 2.0 in 77.5 s.

          servers  0 ---- 1 ---- 900 pause 945 -- 4 -- 1,022.5 (<= 1,100)
          green    0 W           400 W

    - SP(1) = 1.0, 830 s at N (work 913): one server only follows the line (margin at 900:
      0 - 45 < 0); 2 servers end it at 830 s, before 900, with 913 - 830 = 83 to spare.
      Without the reserve (the old rule) it started on 1 server, grew to 4 at 900 with 13
      left, paused to 945 and ended at 951.5 s > 1.1 x 830 = 913: a breach.

          servers  0 ---- 2 ---- 830
    """
    table = speedups(tmp_path / "sp.csv", {"D": {4: {1: sp1, 2: 1.1, 4: 2.0}}})
    solar = green(tmp_path / "g", [(0, 0), (900, 400)])
    d = job(1, "D", 2, 1000 if sp1 == 1.05 else 830)
    r = simulate([d], "reactive", f"greenpar.speedups={table}", "malleable.migration-time=45",
                 solar=solar)
    assert allocations(d)[0] == (0, first)
    if first == 1:
        assert allocations(d) == [(0, 1), (900, 4)]
    assert d.end - d.start == pytest.approx(end)
    assert r.summary["greenpar_sla_violations"] == 0


@pytest.mark.parametrize("interval", [0, 3600])
def test_reactive_changes_a_job_at_most_once_an_hour(tmp_path, table, interval):
    """GreenPar's experiments migrated VMs at most once an (accelerated) hour
    (``resize-interval = 3600``). Job A alone (N = 2, 4 VMs: SP 1.0, 2.0, 3.6 on 1, 2, 4
    servers), 4 h at N (work 28,800), F = 1.1 (SLA rate 1.818); green 400 W (G = 4) in
    0:15-0:30 only. With the limit a decision keeps the SLA until the first epoch's start an
    hour on (3,600 s), when the job may change again (its start is not a change).

    0:00  2 servers (1 server falls behind the line at once).
    0:15  G = 4: 2 -> 4 (the gain 0.8 per server; 1,800 + 3.6 x 3,600 >= 1.818 x 4,500).
    Without the limit, 0:30: no green, 1 server keeps the SLA over the epoch (5,040 + 900
    >= 1.818 x 2,700 = 4,909): 4 -> 1. With it, A keeps 4 servers until 1:15 (4,500 s),
    where it has done 1,800 + 3.6 x 3,600 = 14,760 and 1 server keeps the SLA over the
    next hour (14,760 + 3,600 >= 1.818 x 8,100 = 14,727): 4 -> 1. At 2:15 (8,100) 1 server
    still keeps it (21,960 >= 21,273), at 2:30 (9,000) no longer (22,860 < 22,909): 1 -> 2.
    At 3:30 (12,600) 26,460 are done: the last 2,340 on 1 server end at 14,940 s, with
    28,800 >= 1.818 x 14,940 = 27,164: 2 -> 1.

    servers   0:00  0:15  0:30  1:15  2:30  3:30   end
    no limit   2     4     1    ...
    1 h        2     4     4     1     2     1     14,940 (<= 1.1 x 14,400 = 15,840)
    """
    solar = green(tmp_path / "g", [(0, 0), (900, 400), (1800, 0)])
    a = job(1, "A", 2, 4 * 3600)
    r = simulate([a], "reactive", f"greenpar.speedups={table}",
                 f"greenpar.resize-interval={interval}", solar=solar)
    if interval:
        assert allocations(a) == [(0, 2), (900, 4), (4500, 1), (9000, 2), (12600, 1)]
        assert a.end == pytest.approx(14940)
        assert r.summary["greenpar_forced_resizes"] == 0
    else:
        assert allocations(a)[:3] == [(0, 2), (900, 4), (1800, 1)]
    assert r.summary["greenpar_sla_violations"] == 0


@pytest.mark.parametrize("idle, grown", [(0, True), (10, False)])
def test_green_covers_the_sleeping_servers_first(tmp_path, table, idle, grown):
    """G, the servers the predicted green power can run, counts the site's 16 servers
    drawing their sleeping watts: G = (green - 16 x idle) / (busy - idle). Job A (N = 2,
    SP 1.0, 2.0, 3.6 on 1, 2, 4 servers), 480 W from 0:15. Sleeping at 0 W: G = 480 / 100 = 4,
    and A grows 2 -> 4 at 0:15. Sleeping at 10 W: G = (480 - 160) / 90 = 3.6 -> 3 < 4: A
    stays on 2 (growing would draw 160 + 4 x 90 = 520 W, 40 W of it brown)."""
    solar = green(tmp_path / "g", [(0, 0), (900, 480)])
    a = job(1, "A", 2, 3600)
    simulate([a], "reactive", f"greenpar.speedups={table}", watts=f"{idle}:100", solar=solar)
    assert allocations(a) == ([(0, 2), (900, 4)] if grown else [(0, 2)])


def test_aggressive_does_not_start_a_job_below_its_sla(tmp_path, table, monkeypatch):
    """A solve cut short by its time limit returns its best plan so far, which may pay the
    SLA's slack (seen on the day 0524: 4 short jobs started on half their servers ended at
    1.2-1.95 F). Here the solver "returns" job A (N = 2, 4 VMs: SP 1.0, 2.0, 3.6 on 1, 2, 4
    servers; F = 1.1, rate 1.818) on 1 server: 1.0 < 1.818 breaks the SLA at once, so
    Aggressive starts it on the fewest servers that keep it, 2, and counts the plan as unsafe.
    A plan of 4 servers keeps it and is followed."""
    import lm_greenpar.optimizing as optimizing
    from lm_greenpar.milp import Solution

    for planned, started, unsafe in ((1, 2, 1), (4, 4, 0)):
        def fake(problem, jobs, limit, gap, node_limit=None, n=planned):
            return Solution(1, "time limit reached", True, 0.0, 0.0, {j.key: 4 for j in jobs},
                            {j.key: [n] * len(problem.green) for j in jobs}, {})

        monkeypatch.setattr(optimizing, "solve", fake)
        a = job(1, "A", 2, 3600)
        r = simulate([a], "aggressive", f"greenpar.speedups={table}")
        assert allocations(a)[0] == (0, started)
        assert r.summary["greenpar_unsafe_starts"] == unsafe
        assert r.summary["greenpar_sla_violations"] == 0


def test_baseline_runs_every_job_as_asked(tmp_path, table):
    leases = three_jobs()
    solar = green(tmp_path / "g", [(0, 0), (900, 1400)])
    r = simulate(leases, "baseline", f"greenpar.speedups={table}", solar=solar)
    assert [allocations(l) for l in leases] == [[(0, 2)], [(0, 2)], [(0, 4)]]
    assert [l.end for l in leases] == [10 * 3600] * 3
    assert r.summary["resizes"] == 0



def test_nebulous_starts_with_4n_grows_by_hint_and_shrinks_to_its_floor(tmp_path):
    """Nebulous on three jobs (N = 2 each; 16 servers, 100 W busy, 15-minute epochs,
    F = 1.1). Speedups: P (poor: doubling its 4 VMs' servers from 2 gives 2.2/2.0 = 1.1 < 1.15)
    V=4: 1 server 1.5, 2 servers 2.0, 4 servers 2.2; E (excellent: 3.6/2.0 = 1.8 >= 1.7)
    V=4: 1.0, 2.0, 3.6 and V=8: 2 servers 2.4, 4 servers 4.0, 8 servers 6.0.

    Jobs: 1 = P, 4 h at 0:00 (work 4 h x 2.0 = 28,800 single-server seconds); 2 = E, 1 h at
    0:00 (7,200); 3 = E, 3 h at 1:00 (21,600). Green (forecast = actual, W; G = the servers
    it powers): 0 until 0:15, 600 (G = 6) until 0:30, 200 (G = 2) until 0:45, 800 (G = 8)
    until 2:00, 600 (G = 6) after.

    0:00  No run-time estimate for P or E yet: both start with 2N = 4 VMs on N = 2 servers.
    0:15  G = 6, 4 used: growth goes by hint (then lowest average allocation / N, then id):
          E (job 2) 2 -> 4 (6 used); P's 2 more would make 8 > 6.
    0:30  G = 2, 6 used: shrink by the poorest hint first, but each job keeps its floor, the
          fewest servers keeping its average allocation at N/F = 1.82 after another epoch.
          P has had 2 x 1,800 = 3,600 server-seconds; 1.82 x 2,700 = 4,909 needed: 1 server
          (4,500) is too few, its floor is 2. E has had 2 x 900 + 4 x 900 = 5,400: floor 1.
          P stays at 2; E 4 -> 2 -> 1 (3 used, above G: the floor wins).
    0:45  G = 8, 3 used: by hint, one doubling each in turn: E 1 -> 2, P 2 -> 4, E 2 -> 4
          (8 used).
    0:50:50  Job 2 ends: 1,800 (at 2.0) + 3,240 (3.6) + 900 (1.0) = 5,940 by 0:45, the other
          1,260 at 3.6 take 350 s: 3,050 s. E's run-time estimate is now 3,600 s (job 2's run
          time at its requested allocation).
    1:00  Job 3 (E) arrives: the least hourly green predicted over 1:00-2:00 (its estimate)
          is 800 W; P's 4 busy servers draw 400 W, so the surplus 400 W covers exactly 2N = 4
          more servers: job 3 starts with 4N = 8 VMs on 2N = 4 servers (8 used, G = 8).
    2:00  G = 6, 8 used: P (poor) halves first, 4 -> 2 (floor 1: 23,400 server-seconds of
          1.82 x 8,100 = 14,727), and that is enough: job 3 keeps its 4.
    2:30  Job 3 ends: 21,600 at SP(4, 8) = 4.0 take 5,400 s. G = 6, 2 used: P 2 -> 4.
    3:45  P ends: 2.0 x 2,700 + 2.2 x 4,500 + 2.0 x 1,800 = 18,900 by 2:30, the other 9,900
          at 2.2 take 4,500 s: 13,500 s, within F x 4 h = 15,840.

    servers  0:00  0:15  0:30  0:45  0:50:50  1:00  2:00  2:30  3:45
    P (1)     2     2     2     4     4        4     2     4     -
    E (2)     2     4     1     4     -
    E (3)                                      4     4     -
    green W   0    600   200   800   800      800   600   600
    """
    table = speedups(tmp_path / "sp.csv", {
        "P": {4: {1: 1.5, 2: 2.0, 4: 2.2}},
        "E": {4: {1: 1.0, 2: 2.0, 4: 3.6}, 8: {2: 2.4, 4: 4.0, 8: 6.0}}})
    solar = green(tmp_path / "g", [(0, 0), (900, 600), (1800, 200), (2700, 800),
                                   (7200, 600)])
    leases = [job(1, "P", 2, 4 * 3600), job(2, "E", 2, 3600),
              job(3, "E", 2, 3 * 3600, submit=3600)]
    r = simulate(leases, "nebulous", f"greenpar.speedups={table}", solar=solar)
    p, e, e3 = leases
    assert allocations(p) == [(0, 2), (2700, 4), (7200, 2), (9000, 4)] and p.end == 13500
    assert allocations(e) == [(0, 2), (900, 4), (1800, 1), (2700, 4)] and e.end == 3050
    assert allocations(e3) == [(3600, 4)] and e3.vms.count == 8 and e3.end == 9000
    assert r.summary["greenpar_vms"] == 4 + 4 + 8
    assert r.summary["greenpar_sla_violations"] == 0
    assert r.summary["greenpar_allocation_sla_violations"] == 0


def test_nebulous_floor_at_its_boundary_without_green(tmp_path):
    """Job P (N = 2, 4 VMs; 2 h, work 2 h x 2.0 = 14,400), no green (G = 0): Nebulous
    shrinks it whenever its floor allows. The floor: the fewest servers n with
    (server-seconds so far) + 900 n >= N/F x (elapsed + 900), N/F = 2/1.1 = 1.818.
    At N all along, n = 1 needs 2e + 900 >= 1.818 (e + 900), i.e. e >= 4,050 s:

    elapsed  had     need (x 1.818)    floor  servers
    3,600    7,200   4,500: 8,182      2      2     (8,100 < 8,182; at 0.9 N it would be 1)
    4,500    9,000   5,400: 9,818      1      1     (9,900)
    5,400    9,900   6,300: 11,455     2      2     (10,800 < 11,455: back up)
    6,300    11,700  7,200: 13,091     2      2
    7,200    13,500  8,100: 14,727     2      2

    Work: 9,000 by 1:15 (at 2.0), 1,350 by 1:30 (1 server, 1.5), the other 4,050 at 2.0
    take 2,025 s: P ends at 7,425 s, within F x 2 h = 7,920.
    """
    table = speedups(tmp_path / "sp.csv", {"P": {4: {1: 1.5, 2: 2.0, 4: 2.2}}})
    p = job(1, "P", 2, 2 * 3600)
    r = simulate([p], "nebulous", f"greenpar.speedups={table}")
    assert allocations(p) == [(0, 2), (4500, 1), (5400, 2)] and p.end == 7425
    assert r.summary["greenpar_allocation_sla_violations"] == 0


def test_nebulous_shrinks_only_for_as_long_as_its_floor_holds_within_the_resize_interval(
        tmp_path):
    """With jobs resized at most once an hour (``resize-interval = 3600``, the paper's
    experiments), a shrink must keep Nebulous' floor (average allocation >= N/F) for the
    hour the job is then held, not only for one epoch: else it is undone, forced, an epoch
    later (0524: 50 forced changes). Job P (N = 2, 4 VMs: 1.5 on 1 server, 2.0 on 2), 6 h
    at N (work 43,200), no green (G = 0), F = 1.1, N/F = 1.818, no migration time.

    At an epoch's start the decision's span is 3,600 s. At N all along (2e server-seconds
    after e seconds), 1 server for the hour keeps the floor if 2e + 3,600 >= 1.818 (e +
    3,600), i.e. e >= 16,200 s: P shrinks at 4:30 (exactly on its boundary: 36,000 server-
    seconds against 36,000) and is held until 5:30 (19,800). Then 1 server for another hour
    would give 39,600 < 1.818 x 23,400 = 42,545: back to 2.
    (Before: the floor looked one epoch ahead, 2e + 900 >= 1.818 (e + 900) from e = 4,050:
    P shrank at 1:15 and was forced back at 1:30, again at 2:30, 4:00 and 5:15: 4 forced
    changes in 6 h.)

    Work: 32,400 by 4:30, 5,400 by 5:30 (1.5 a second), the other 5,400 at 2.0 take 2,700 s:
    P ends at 22,500 s (1.04 x 6 h), average allocation 41,400 / 22,500 = 1.84 servers.

    servers  0:00  4:30  5:30  6:15
    P         2     1     2     -
    power   200 W 100 W 200 W   (100 W a busy server): 4,140,000 J
    """
    table = speedups(tmp_path / "sp.csv", {"P": {4: {1: 1.5, 2: 2.0, 4: 2.2}}})
    p = job(1, "P", 2, 6 * 3600)
    r = simulate([p], "nebulous", f"greenpar.speedups={table}",
                 "greenpar.resize-interval=3600")
    assert allocations(p) == [(0, 2), (16200, 1), (19800, 2)]
    assert p.end == pytest.approx(22500)
    assert r.summary["greenpar_forced_resizes"] == 0
    assert r.summary["energy_joules"] == pytest.approx(4_140_000)
    assert r.summary["greenpar_allocation_sla_violations"] == 0


def a_job_arrives_while_one_is_shrunk(policy: str, table):
    """The scenario of the two tests below: A (N = 2, 4,000 s at N), a plain lease on 1
    server from 0 to 2,400 s, and B (N = 2, 1,800 s) submitted at 2,000 s, on 3 servers,
    F = 1.25, under ``policy``. Returns A, B and the run."""
    a = job(1, "A", 2, 4000)
    plain = Lease(2, LeaseType.BEST_EFFORT, 0.0, VMRequest.uniform(1, [2.0, 4096.0]),
                  2400, 2400)
    b = job(3, "A", 2, 1800, submit=2000)
    r = simulate([a, plain, b], policy, f"greenpar.speedups={table}",
                 "greenpar.slowdown=1.25", servers=3)
    return a, b, r


def test_nebulous_takes_a_shrunk_jobs_servers_back_while_a_job_waits(tmp_path, table):
    """GreenPar (3.1) "reverts back to the user-requested resource allocations when
    utilization becomes so high that jobs cannot be started immediately upon arrival": the
    overview's rule holds for Nebulous as for Reactive. Without it, a waiting job is given
    the servers a shrunk job gave up, and the shrunk job cannot take them back when its
    floor needs them: it ends below its average allocation of N/F.

    3 servers, no green (G = 0), F = 1.25 (N/F = 1.6), no migration time, no resize
    interval. A (N = 2, V = 4: SP 1.0 on 1 server, 2.0 on 2), 4,000 s at N (work 8,000).
    L: a plain lease on 1 server, 0 to 2,400 s. B (app A, N = 2), submitted at 2,000 s,
    1,800 s at N (work 3,600; no estimate yet for app A: 4 VMs).

    A's floor, the fewest servers n with (server-seconds so far) + n x span >= 1.6 x
    (elapsed + span), span to the next epoch: at 0 and 900, 2 (1,800 + 900 = 2,700 <
    2,880 at 900); at 1,800, 1 (3,600 + 900 = 4,500 >= 4,320): 2 -> 1. At 2,000 B arrives:
    1 server free, B needs 2, so it waits.

    Before: A stays on 1 server; L ends at 2,400 and B starts on A's freed server and L's.
    At 2,700 A's floor is 2 (4,500 + 900 < 1.6 x 3,600 = 5,760), but no server is free until
    B ends at 4,200; A, 6,000 done then, runs its last 2,000 on 2 servers and ends at
    5,200 with 3,600 + 2,400 + 2,000 = 8,000 server-seconds: 1.54 < 1.6 on average.
    Now: at 2,000 A is back on N = 2 servers (3,800 done, 4,200 left: 2,100 s) and stays
    there while B waits; it ends at 4,100 (8,400 server-seconds over 4,100 s: 2.05). B
    starts on A's servers at 4,100; its floor keeps it on 2 (at 5,400, 2,600 + 900 <
    1.6 x 2,200 = 3,520) until it ends at 5,900.

    server   0      1,800  2,000  2,400       4,100        5,900
    0        A ---------------------------------|B ----------|
    1        A ------|      A ------------------|B ----------|
    2        L ----------------------|
    Busy servers (100 W each): 3 to 1,800, 2 to 2,000, 3 to 2,400, 2 to 5,900:
    1,400,000 J.
    """
    a, b, r = a_job_arrives_while_one_is_shrunk("nebulous", table)
    assert allocations(a) == [(0, 2), (1800, 1), (2000, 2)]
    assert a.end == pytest.approx(4100)
    assert allocations(b) == [(4100, 2)] and b.end == pytest.approx(5900)
    assert r.summary["greenpar_allocation_sla_violations"] == 0
    assert r.summary["resizes_refused"] == 0
    assert r.summary["energy_joules"] == pytest.approx(1_400_000)


def test_reactive_takes_a_shrunk_jobs_servers_back_before_a_waiting_job_is_promised_them(
        tmp_path, table):
    """Reactive shrinks a job for one epoch (Fig. 2, line 16: "assume that j will run for
    another threshold time period t"), counting on growing it back at the next decision. If
    a job that cannot start on arrival is meanwhile promised the servers it gave up, the grow
    does not fit and the job ends above its SLA (day 0524, EP profiles: 1.1026 F). GreenPar
    (3.1) "reverts back to the user-requested resource allocations when utilization becomes
    so high that jobs cannot be started immediately upon arrival": the shrunk job is back at
    N before the waiting job is queued.

    3 servers, no green, F = 1.25. A (N = 2, V = 4: SP 1.0 on 1 server, 2.0 on 2), 4,000 s
    at N (work 8,000), SLA rate 1.6. L: a plain lease on 1 server, 0 to 2,400 s. B (app A,
    N = 2), submitted at 2,000 s, 1,800 s at N.

    A at 0 and 900: 2 servers (1 server loses 0.6 a second: 360 - 540 < 0 at 900). At 1,800
    it has done 3,600 against 2,880: 1 server keeps the SLA to 2,700 (4,500 >= 1.6 x 2,700 =
    4,320): 2 -> 1. At 2,000 B arrives: 1 server free, B needs 2, so it waits.

    Before: B waits on A's freed server and L's; at 2,400 (L ends) it starts on both. At
    2,700 A needs 2 servers (on 1: 5,400 < 1.6 x 3,600 = 5,760) but none is free until B
    ends at 4,200 (done 6,000 then, 2,000 left: 1,000 s on 2): A ends at 5,200 > 1.25 x
    4,000 = 5,000.
    Now: at 2,000 A is back on 2 servers (done 3,800; 4,200 left: 2,100 s), ends at 4,100
    (8,000 >= 1.6 x 4,100 = 6,560); B starts on A's servers at 4,100 and ends at 5,900.

    server   0      1,800  2,000  2,400       4,100        5,900
    0        A ---------------------------------|B ----------|
    1        A ------|      A ------------------|B ----------|
    2        L ----------------------|
    (before: server 1 idle 1,800-2,400, then B 2,400-4,200, A on 2 servers 4,200-5,200)
    Busy servers (100 W each): 3 to 1,800, 2 to 2,000, 3 to 2,400, 2 to 5,900.
    """
    a, b, r = a_job_arrives_while_one_is_shrunk("reactive", table)
    assert allocations(a) == [(0, 2), (1800, 1), (2000, 2)]
    assert a.end == pytest.approx(4100)
    assert (b.start, b.end) == (pytest.approx(4100), pytest.approx(5900))
    assert r.summary["greenpar_sla_violations"] == 0
    assert r.summary["resizes_refused"] == 0


def test_reactive_takes_the_servers_back_within_the_resize_interval(tmp_path):
    """As above, with jobs changed at most once an hour (``resize-interval = 3600``): the
    shrink must then hold for an hour, and the job shrunk 200 s before the waiting job
    arrives is taken back to N at once (a forced change), else the queue is promised its
    server first.

    3 servers, no green, F = 1.25, SLA rate 1.6. A (N = 2, V = 4: SP 1.0 on 1 server, 2.0
    on 2), 8,000 s at N (work 16,000). L: a plain lease on 1 server, 0 to 6,000 s. B (N = 2,
    V = 4: SP 0.5 on 1 server, 2.0 on 2), submitted at 5,600 s, 4,000 s at N (work 8,000).

    A on 2 servers until 5,400, where 1 server keeps the SLA for the hour to 9,000 (10,800 +
    3,600 >= 1.6 x 9,000 = 14,400; at 4,500: 12,600 < 12,960): 2 -> 1. At 5,600 B arrives:
    1 server free, B needs 2, so it waits.

    Before: A is held on 1 server until 9,000 (its SLA keeps to each next epoch). B starts at
    6,000 (L ends) on A's freed server and L's. At 9,000 A needs 2 (14,400 on the line)
    but none is free. At 9,900 B may go to 1 server (7,800 done, the last 200 take 400 s:
    8,000 >= 1.6 x 4,300 = 6,880), and A is back on 2 (15,300 done, 700 left: 350 s), ending
    at 10,250 > 1.25 x 8,000 = 10,000.
    Now: at 5,600 A is back on 2 servers (forced: 200 s after its last change; 11,000 done,
    5,000 left: 2,500 s) and ends at 8,100. B starts on A's servers at 8,100 and stays on 2
    (on 1 server it would fall below its line: at 11,700 the last 800 take 1,600 s, 8,000 <
    1.6 x 5,200) until 12,100.

    server   0      5,400  5,600  6,000   8,100          12,100
    0        A ----------------------------|B --------------|
    1        A ------|      A -------------|B --------------|
    2        L ---------------------|
    Busy servers (100 W each): 3 to 5,400, 2 to 5,600, 3 to 6,000, 2 to 12,100.
    """
    table = speedups(tmp_path / "sp.csv", {"A": {4: {1: 1.0, 2: 2.0}},
                                           "P": {4: {1: 0.5, 2: 2.0}}})
    a = job(1, "A", 2, 8000)
    plain = Lease(2, LeaseType.BEST_EFFORT, 0.0, VMRequest.uniform(1, [2.0, 4096.0]),
                  6000, 6000)
    b = job(3, "P", 2, 4000, submit=5600)
    r = simulate([a, plain, b], "reactive", f"greenpar.speedups={table}",
                 "greenpar.slowdown=1.25", "greenpar.resize-interval=3600", servers=3)
    assert allocations(a) == [(0, 2), (5400, 1), (5600, 2)]
    assert a.end == pytest.approx(8100)
    assert allocations(b) == [(8100, 2)]
    assert b.end == pytest.approx(12100)
    assert r.summary["greenpar_forced_resizes"] == 1
    assert r.summary["greenpar_sla_violations"] == 0
