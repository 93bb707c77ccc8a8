"""Reactive's two readings of the text, as options, on hand-computed schedules.

Site: 16 dual-core servers, a busy server 100 W (a sleeping one 0), 15-minute epochs, F = 1.1
(the SLA's rate for job A: SP(2)/F = 1.818 single-server seconds per second), no migration
time, no resize interval. Job A (N = 2, 4 VMs): SP 1.0, 2.0, 3.6 on 1, 2, 4 servers.
"""

from __future__ import annotations

import pytest

from lmg_helpers import allocations, green, job, simulate, speedups


@pytest.fixture
def table(tmp_path):
    return speedups(tmp_path / "sp.csv", {"A": {4: {1: 1.0, 2: 2.0, 4: 3.6}}})


@pytest.mark.parametrize("reading", ["sla", "above-request"])
def test_reactive_spends_the_slack_f_gives_or_only_what_it_did_above_its_pace(
        tmp_path, table, reading):
    """Job A, 2 h at N (work 14,400); green 400 W (G = 4) in 0:15-0:30 only.

    Both readings: 0:00 on 2 (1 server falls behind at once); 0:15 G = 4, 2 -> 4 (gain 0.8
    a server); done 1,800 + 3.6 x 900 = 5,040 by 0:30, where there is no green.

    ``sla`` (the fewest servers keeping done >= 1.818 x elapsed at the next epoch):
    - 0:30 1 server (5,040 + 900 >= 1.818 x 2,700 = 4,909); 0:45 still 1 (6,840 >= 6,545);
    - 1:00 6,840 + 900 < 1.818 x 4,500 = 8,182: back to 2;
    - 1:45 (6,300 s) 12,240 done, 1 server keeps it (13,140 >= 13,091): 1;
    - 2:00 1 server would not (14,040 < 14,727); 2 end it at 7,830 s (14,400 >= 1.818 x
      7,830 = 14,236): 2. Run time 7,830 s, 8.75% above its 7,200 s at N.

    ``above-request`` (below N only while done >= SP(N) x elapsed = 2.0 x elapsed):
    - 0:30 1 server: 5,040 + 900 >= 2.0 x 2,700 = 5,400 (the 1,440 banked at 4 servers);
    - 0:45 1 more epoch would leave it 360 behind its pace (6,840 < 7,200): 2, at its pace
      from then on, so never below 2 again; the 8,460 left take 4,230 s: ends at 6,930 s,
      3.75% below 7,200.

        servers  0:00  0:15  0:30  0:45  1:00  1:45  2:00   end
        sla        2     4     1     1     2     1     2    7,830
        above      2     4     1     2     2     2     2    6,930
        green      0   400 W   0 ...

    Power (100 W a busy server): sla 200, 400 (green), 100 to 1:00, 200 to 1:45, 100 to
    2:00, 200 to the end: brown 180,000 + 180,000 + 540,000 + 90,000 + 126,000 = 1,116,000
    J. above: 200, 400 (green), 100 to 0:45, 200 to 6,930 s: brown 180,000 + 90,000 +
    846,000 = 1,116,000 J (SP(1) and SP(2) do the same work per server-second).
    """
    solar = green(tmp_path / "g", [(0, 0), (900, 400), (1800, 0)])
    a = job(1, "A", 2, 2 * 3600)
    r = simulate([a], "reactive", f"greenpar.speedups={table}",
                 f"greenpar.reactive-slack={reading}", solar=solar)
    if reading == "sla":
        assert allocations(a) == [(0, 2), (900, 4), (1800, 1), (3600, 2), (6300, 1),
                                  (7200, 2)]
        assert a.end == pytest.approx(7830)
    else:
        assert allocations(a) == [(0, 2), (900, 4), (1800, 1), (2700, 2)]
        assert a.end == pytest.approx(6930)
    assert r.summary["brown_joules"] == pytest.approx(1_116_000)
    assert r.summary["greenpar_sla_violations"] == 0


def test_above_request_never_shrinks_a_job_that_never_grew(table):
    """Without green, job A (2 h at N, work 14,400) has no work above its pace to spend:
    under ``above-request`` it keeps its 2 servers and ends at 7,200 s. Under ``sla`` the
    slack F gives lets it shrink at 1:15 (9,000 done; 9,900 >= 1.818 x 5,400 = 9,818), and
    at 1:30 (9,900 + 900 < 1.818 x 6,300 = 11,455) it is back on 2; the 4,500 left take
    2,250 s: it ends at 7,650 s (1.0625 x 7,200), having drawn 100 W instead of 200 W for
    15 minutes and 200 W for 450 s more: the same brown energy, 450 s later.

        servers  0:00  1:15  1:30   end
        above      2     2     2    7,200
        sla        2     1     2    7,650
    """
    for reading, expected in (("above-request", [(0, 2)]),
                              ("sla", [(0, 2), (4500, 1), (5400, 2)])):
        a = job(1, "A", 2, 2 * 3600)
        simulate([a], "reactive", f"greenpar.speedups={table}",
                 f"greenpar.reactive-slack={reading}")
        assert allocations(a) == expected
        assert a.end == pytest.approx(7200 if reading == "above-request" else 7650)


@pytest.mark.parametrize("reading", ["fit", "while-short"])
def test_reactive_grows_within_g_or_while_short_of_it(tmp_path, table, reading):
    """Job A, 1 h at N (work 7,200); green 300 W from 0:15: G = 3.

    ``fit``: doubling 2 -> 4 would need 4 > 3 servers: A stays on 2 and ends at 3,600 s.
    ``while-short`` (Fig. 2, line 7 "while G > C"): C = 2 < 3, so A doubles to 4 at 0:15
    (1,800 done, 5,400 left at 3.6: 1,500 s), ends at 2,400 s. At 0:30 its minimum is 1
    (5,040 + 900 >= 1.818 x 2,700) and growth takes it 1 -> 2 -> 4 again (C = 2 < 3): no
    change.

        servers  0:00  0:15   0:40   1:00
        fit        2     2     2      end (3,600 s)
        short      2     4     end (2,400 s)
        green      0   300 W ...

    Brown: both 200 W x 900 s = 180,000 J before 0:15; then fit 200 W under 300 W of green
    (none), while-short 400 W under 300 W for 1,500 s (150,000 J): 180,000 against 330,000.
    """
    solar = green(tmp_path / "g", [(0, 0), (900, 300)])
    a = job(1, "A", 2, 3600)
    r = simulate([a], "reactive", f"greenpar.speedups={table}",
                 f"greenpar.reactive-growth={reading}", solar=solar)
    if reading == "fit":
        assert allocations(a) == [(0, 2)] and a.end == pytest.approx(3600)
        assert r.summary["brown_joules"] == pytest.approx(180_000)
    else:
        assert allocations(a) == [(0, 2), (900, 4)] and a.end == pytest.approx(2400)
        assert r.summary["brown_joules"] == pytest.approx(330_000)


@pytest.mark.parametrize("scope", ["job", "site"])
def test_reactive_resizes_once_an_hour_per_job_or_per_site(tmp_path, table, scope):
    """``resize-interval = 3600``. Job 1 (A, N = 2) from 0:00, job 2 (A, N = 2) from 0:30,
    both 10 h at N; green 400 W (G = 4) from 0:15, 800 W (G = 8) from 0:45.

    0:15  G = 4: job 1 2 -> 4 (gain 0.8 a server; 2 + 2 = 4 <= G).
    0:30  job 2 starts on 2 (its minimum; 4 + 2 = 6 > G = 4: no growth); job 1 is held.
    0:45  G = 8. ``job``: job 2 has never changed, so it may: minimum 2 (1 server would
          leave 1,800 + 3,600 < 1.818 x 4,500 by 1:45), 2 -> 4 (4 + 4 = 8 <= G).
          ``site``: the site changed job 1 at 0:15, so no job changes before 1:15.
    1:15  ``site``: a round: job 1's minimum is 1 (14,760 done, + 3,600 >= 1.818 x 8,100),
          growth 1 -> 2 (gain 1.0 a server), then job 1 2 -> 4 and job 2 2 -> 4 (0.8 each;
          job 1 first): job 1 back at 4 (no change), job 2 2 -> 4.

        servers   0:00  0:15  0:30  0:45  1:15
        job 1       2     4     4     4     4
        job 2       -     -     2    4 (job) / 2 (site) -> 4
        power     200   400   600   800 (job) / 600 (site: 200 W of green unused) -> 800
    """
    solar = green(tmp_path / "g", [(0, 0), (900, 400), (2700, 800)])
    one, two = job(1, "A", 2, 10 * 3600), job(2, "A", 2, 10 * 3600, submit=1800)
    simulate([one, two], "reactive", f"greenpar.speedups={table}",
             "greenpar.resize-interval=3600", f"greenpar.reactive-resize-scope={scope}",
             solar=solar)
    assert allocations(one)[:2] == [(0, 2), (900, 4)]
    assert allocations(two)[:2] == [(1800, 2), (2700 if scope == "job" else 4500, 4)]
    assert all(t != 4500 for t, _ in allocations(one))     # job 1 unchanged at 1:15
