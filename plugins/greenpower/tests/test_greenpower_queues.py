"""Kassab et al.'s orders as queue policies: a replay under the envelope (online)."""

from __future__ import annotations

import pytest

from lease_manager import Lease, LeaseType, VMRequest
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


def online_look(tmp_path, look, ar_start, *, cap):
    """One core; T1 (2 s, 10 W) at 0, T2 (2 s, 10 W) an advance reservation at ``ar_start``;
    boot 2 s at 20 W, shutdown 1 s at 15 W, idle 10 W, no idle timeout. The node's states
    (off left out), switch-ons and energy."""
    settings = ["simulation.resources=1 CPU:1 Memory:1024", "power.pstates=1:10:10",
                "power.switch-on=2:20", "power.switch-off=1:15", "power.initial-state=off",
                "power.policy-node-power=switch-off-idle"]
    if cap:
        path = tmp_path / "cap.csv"
        path.write_text("time,watts\n0,1000\n")
        settings.append(f"power.power-cap={path}")
    if look != "none":
        settings.append(f"power.{look}=yes")
    p = plugins()
    config = load_config(None, p.schema, settings)
    t2 = Lease(2, LeaseType.ADVANCE_RESERVATION, 0.0, VMRequest.uniform(1, [1, 1]), 2, 2,
               start_request=ar_start, extra={"watts": "10"})
    leases = [task(1, 2, 10), t2]
    run = Run(config, p, leases=leases)
    run.run()
    assert run.energy.violations() == []
    assert [(l.id, l.start, l.end) for l in leases] == [(1, 2, 4), (2, ar_start, ar_start + 2)]
    states = [(s, float(a), float(b)) for _, s, a, b in run.node_states.intervals(
        *run.energy.window) if s != "off"]
    return states, run.summary["node_switch_ons"], run.summary["energy_it_joules"]


@pytest.mark.parametrize("look", ["none", "look-ahead", "look-back"])
@pytest.mark.parametrize("cap", [False, True], ids=["no-cap", "cap"])
def test_look_ahead_and_look_back_online(tmp_path, look, cap):
    """Online (a replay, not a plan), T1 runs 2-4 after a boot 0-2; T2 is reserved at 7, 8
    or 30. Toff + Ton = 3, 2 Ton = 4.

    Without a cap the options decide the gap 4-7 (= Toff + Ton: look-ahead and look-back keep
    the node on) and the gap 4-8 (= 2 Ton: only look-back); a gap of 26 always switches off:
      off:  [boot 0-2][T1 2-4][down 4-5](off)[boot s-2..s][T2 s..s+2]
            power (W): 20 | 20 | 15 | 0 | 20 | 20          energy 40+40+15+40+40 = 175 J
      kept: [boot 0-2][T1 2-4][on 4-s][T2 s..s+2]
            power (W): 20 | 20 | 10 | 20                   s = 7: 40+40+30+40 = 150 J,
                                                           s = 8: 40+40+40+40 = 160 J
    Under a cap (1,000 W, never binding) the node stays on until T2 whatever the options and
    however long the gap (look-ahead's choice for every gap; look-back has no shutdown to
    cancel): 'kept' for s = 7, 8 and 30 (s = 30: 40+40+260+40 = 380 J), 1 switch-on each.
    """
    booted = ("switching-on", 0.0, 2.0)
    for start in (7, 8, 30):
        kept = ([booted, ("on", 2.0, start + 2.0)], 1, 40 + 40 + 10 * (start - 4) + 40)
        off = ([booted, ("on", 2.0, 4.0), ("switching-off", 4.0, 5.0),
                ("switching-on", start - 2.0, float(start)), ("on", float(start), start + 2.0)],
               2, 175)
        if cap:
            want = kept
        else:
            stays = {"none": False, "look-ahead": start == 7, "look-back": start <= 8}[look]
            want = kept if stays else off
        assert online_look(tmp_path, look, start, cap=cap) == want, start
