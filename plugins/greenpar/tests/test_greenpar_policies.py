"""GreenPar's heuristic policies on hand-computed schedules.

Site: 16 dual-core servers, a busy server 100 W (an idle one 0), 15-minute epochs, F = 1.1,
no migration time. Speedups (2 VMs per requested server, 4 VMs for job A and B, 8 for C):

    A (N=2, V=4): 1 server 1.0, 2 servers 2.0, 4 servers 3.6
    B (N=2, V=4): 1.2, 2.0, 2.4
    C (N=4, V=8): 2 servers 2.0, 4 servers 3.5, 8 servers 6.0
"""

from __future__ import annotations

import pytest

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


def test_baseline_runs_every_job_as_asked(tmp_path, table):
    leases = three_jobs()
    solar = green(tmp_path / "g", [(0, 0), (900, 1400)])
    r = simulate(leases, "baseline", f"greenpar.speedups={table}", solar=solar)
    assert [allocations(l) for l in leases] == [[(0, 2)], [(0, 2)], [(0, 4)]]
    assert [l.end for l in leases] == [10 * 3600] * 3
    assert r.summary["resizes"] == 0
