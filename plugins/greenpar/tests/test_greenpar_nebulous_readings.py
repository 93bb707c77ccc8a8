"""Nebulous' options, by hand: what its speedup hint measures (``nebulous-hint``) and what its
floor counts (``nebulous-slack``, a diagnostic of the README's Nebulous cause).

Site: 16 dual-core servers, a busy server 100 W (an idle one 0), 15-minute epochs, no
migration time, F = 1.1 (N/F = 1.818 for N = 2). A job starts with 2N VMs (no run-time
estimate for the first job of an application).
"""

from __future__ import annotations

import csv

import pytest

from lmg_helpers import ROOT, allocations, green, job, simulate, speedups


@pytest.mark.parametrize("reading, x_end, y_end, joules", [
    ("servers", 2400, 3400, 830_000), ("resources", 3400, 3150, 905_000)])
def test_nebulous_hint_reading_decides_which_job_grows(tmp_path, reading, x_end, y_end,
                                                       joules):
    """Jobs X and Y (N = 1, 2 VMs), 1 h each at N (work 3,600), green 300 W all along
    (G = 3). Speedups: X, 2 VMs: 1.0 on 1 server, 1.8 on 2; 4 VMs: 0.9, 1.2 on 2, 1.3 on 4.
    Y, 2 VMs: 1.0, 1.2; 4 VMs: 0.95, 1.9 on 2, 2.0 on 4. Hints (excellent >= 1.7, fair >=
    1.15): `servers` SP(2, 2) / SP(1, 2): X 1.8 excellent, Y 1.2 fair; `resources`
    SP(2, 4) / SP(1, 2): X 1.2 fair, Y 1.9 excellent.

    Both start on 1 server at 0:00. At 0:15 one doubling fits G (2 used, 3 powered): the
    best hint grows.
    servers:   X 1 -> 2 at 900 (900 + 2,700 / 1.8 = 1,500 s): X ends at 2,400; Y then
               grows (2,400 done, the last 1,200 at 1.2): ends at 3,400.
    resources: Y 1 -> 2 at 900 (2,700 / 1.2 = 2,250 s): Y ends at 3,150; X then grows
               (3,150 done, the last 450 at 1.8): ends at 3,400.

    servers   0:00  0:15  2,400 (servers) / 3,150 (resources)  3,400
    X          1     2|1        - | 2                             -
    Y          1     1|2        2 | -                             -
    power: 200 W, then 300 W, then 200 W (all green): 830,000 J (servers), 905,000 J
    (resources).
    """
    table = speedups(tmp_path / "sp.csv", {
        "X": {2: {1: 1.0, 2: 1.8}, 4: {1: 0.9, 2: 1.2, 4: 1.3}},
        "Y": {2: {1: 1.0, 2: 1.2}, 4: {1: 0.95, 2: 1.9, 4: 2.0}}})
    solar = green(tmp_path / "g", [(0, 300)])
    x, y = job(1, "X", 1, 3600), job(2, "Y", 1, 3600)
    r = simulate([x, y], "nebulous", f"greenpar.speedups={table}",
                 f"greenpar.nebulous-hint={reading}", solar=solar)
    assert (x.end, y.end) == (pytest.approx(x_end), pytest.approx(y_end))
    grown = x if reading == "servers" else y
    assert allocations(grown) == [(0, 1), (900, 2)]
    assert r.summary["energy_joules"] == pytest.approx(joules)
    assert r.summary["brown_joules"] == pytest.approx(0)


@pytest.mark.parametrize("reading, expected, end, brown", [
    ("allocation", [(0, 2), (900, 4), (3600, 1)], 10440, 684_000),
    ("within-f", [(0, 2), (900, 4), (3600, 2), (4500, 1), (5400, 2)], 8955, 981_000)])
def test_nebulous_slack_reading_decides_whether_servers_held_in_the_sun_are_spent(
        tmp_path, reading, expected, end, brown):
    """Job P (N = 2, 4 VMs: 1.5 on 1 server, 2.0 on 2, 2.2 on 4), 2.5 h at N (work
    18,000); green 400 W until 1:00 (G = 4), none after. The floor: the fewest servers n
    with (server-seconds counted) + 900 n >= 1.818 (elapsed + 900).

    0:15  G = 4: P 2 -> 4 (1,800 done by then; 5,940 more by 1:00 at 2.2: 7,740).
    1:00  No green: P shrinks to its floor.
      allocation: 1,800 + 10,800 = 12,600 server-seconds: 1 server keeps the floor (13,500
        >= 8,182) and goes on doing so until 2:48 (at 2:45, 19,800 >= 19,636). The other
        10,260 at 1.5 take 6,840 s: P ends at 10,440 s, 1.16 x its 9,000 s (its run-time
        SLA is not Nebulous'), 2.03 servers on average.
      within-f: servers above N count as N: 7,200, and 1 server would give 8,100 < 8,182:
        P 4 -> 2. At 1:15, 9,000 + 900 >= 1.818 x 5,400 = 9,818: 1 server; at 1:30 9,900 +
        900 < 11,455: back to 2, and it stays (1:45 12,600 < 13,091, 2:00 14,400 < 14,727,
        2:15 16,200 < 16,364). Work: 7,740 + 1,800 + 1,350 = 10,890 by 1:30, the other
        7,110 at 2.0 take 3,555 s: P ends at 8,955 s.

    servers     0:00  0:15  1:00  1:15  1:30  2:29:15  2:54
    allocation   2     4     1                           -
    within-f     2     4     2     1     2     -
    Brown energy (100 W a busy server, all green until 1:00): allocation 100 W x 6,840 s =
    684,000 J; within-f 200 W x 900 + 100 W x 900 + 200 W x 3,555 = 981,000 J.
    """
    table = speedups(tmp_path / "sp.csv", {"P": {4: {1: 1.5, 2: 2.0, 4: 2.2}}})
    solar = green(tmp_path / "g", [(0, 400), (3600, 0)])
    p = job(1, "P", 2, 2.5 * 3600)
    r = simulate([p], "nebulous", f"greenpar.speedups={table}",
                 f"greenpar.nebulous-slack={reading}", solar=solar)
    assert allocations(p) == expected
    assert p.end == pytest.approx(end)
    assert r.summary["brown_joules"] == pytest.approx(brown)
    assert r.summary["greenpar_allocation_sla_violations"] == 0


def test_the_is_only_table_is_the_shipped_is_rows_under_every_name():
    """``etc/greenpar-nebulous-speedups-is-only.csv`` (the IS-only day of cause 7) gives every
    application IS's row of the shipped table, for the same (app, VMs, servers) as the
    EP-only table."""
    def rows(path):
        with open(path, newline="") as fh:
            return [(r["app"], r["vms"], r["servers"], r["speedup"]) for r in csv.DictReader(fh)]

    shipped = {(v, n): sp for app, v, n, sp in
               rows(ROOT / "plugins/greenpar/lm_greenpar/data/speedups.csv") if app == "IS"}
    is_only = rows(ROOT / "etc/greenpar-nebulous-speedups-is-only.csv")
    ep_only = rows(ROOT / "etc/greenpar-speedups-ep-only.csv")
    assert [r[:3] for r in is_only] == [r[:3] for r in ep_only]
    assert all(sp == shipped[v, n] for _, v, n, sp in is_only)
