"""Kassab et al.'s orders as queue policies: a replay under the envelope (online)."""

from __future__ import annotations

from lease_manager.config.schema import load_config
from lease_manager.run import Run

from lmk_helpers import plugins, task

ONLINE = ("simulation.resources=1 CPU:1 Memory:1024", "power.pstates=1:10:10",
          "power.switch-on=5:20", "power.switch-off=1:15", "power.initial-state=off",
          "power.policy-node-power=switch-off-idle", "scheduling.backfilling=conservative")


def replay(tmp_path, queue, tasks, *settings):
    path = tmp_path / "cap.csv"
    path.write_text("time,watts\n0,1000\n")
    leases = [task(i, d, w) for i, (d, w) in enumerate(tasks, start=1)]
    p = plugins()
    config = load_config(None, p.schema, [*ONLINE, f"power.power-cap={path}",
                                          f"scheduling.policy-queue={queue}", *settings])
    run = Run(config, p, leases=leases)
    run.run()
    assert run.energy.violations() == []
    return {l.id: (l.start, l.end) for l in leases}


TASKS = [(10, 5), (30, 1), (20, 2)]    # p x phi: 50, 30, 40


def test_orders_online_on_one_core():
    """One core, booted 0-5; the three tasks arrive together at 0 and run one after another in
    the queue's order (conservative backfilling plans them all at once).
    lpt:   [T2 5-35][T3 35-55][T1 55-65]      spt:   [T1 5-15][T3 15-35][T2 35-65]
    lpn:   [T1 5-15][T3 15-35][T2 35-65]      lptpn: [T1 5-15][T3 15-35][T2 35-65]
    twoqs: LPTPN T1, then LPT T2, then T3:    [T1 5-15][T2 15-45][T3 45-65]
    random (arrival order):                   [T1 5-15][T2 15-45][T3 45-65]
    """
    import tempfile
    from pathlib import Path

    expected = {
        "lpt": {2: (5, 35), 3: (35, 55), 1: (55, 65)},
        "spt": {1: (5, 15), 3: (15, 35), 2: (35, 65)},
        "lpn": {1: (5, 15), 3: (15, 35), 2: (35, 65)},
        "lptpn": {1: (5, 15), 3: (15, 35), 2: (35, 65)},
        "twoqs": {1: (5, 15), 2: (15, 45), 3: (45, 65)},
        "random": {1: (5, 15), 2: (15, 45), 3: (45, 65)},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for queue, want in expected.items():
            assert replay(Path(tmp), queue, TASKS) == want, queue


def test_lpp_online_counts_places_on_the_envelope(tmp_path):
    """Envelope on a 10 s grid: 100 W for 0-40 s, 25 W for 40-60 s, 100 W for 60-90 s, then
    0. With the machine's 10 W, T1 (10 s, 20 W) needs 30 W: it can start in the 7 intervals
    at 100 W; T2 (10 s, 5 W: 15 W) in all 9; T3 (20 s, 30 W: 40 W) where two intervals in a
    row are at 100 W: 0, 10, 20, 60, 70 (5). LPP queues T3, T1, T2."""
    env = tmp_path / "env.csv"
    env.write_text("time,watts\n0,100\n40,25\n60,100\n90,0\n")
    p = plugins()
    config = load_config(None, p.schema, [*ONLINE, f"power.power-cap={env}",
                                          "scheduling.policy-queue=lpp", "planning.interval=10"])
    leases = [task(1, 10, 20), task(2, 10, 5), task(3, 20, 30)]
    run = Run(config, p, leases=leases)
    try:
        policy = run.policies["queue"]
        assert [policy.key(lease) for lease in leases] == [7, 9, 5]
    finally:
        run.close()
