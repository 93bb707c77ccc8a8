"""Power caps (``[power] power-cap``) on hand-computed schedules.

Power model as in ``test_node_power``: one level, 100 W idle, 200 W full; switching off takes
5 s at 50 W, switching on 20 s at 150 W, an off node draws 5 W. One core per node, so a lease
of one VM draws 100 W above idle. Nodes are visited in node order (``no-policy``).
"""

from __future__ import annotations

import csv
import math

import pytest

from lease_manager.run import load_run

from support import ROOT, be, simulate

SAMPLE = ROOT / "etc" / "sample.ini"

POWER = ("power.pstates=1.0:100:200", "power.switch-off=5:50", "power.switch-on=20:150",
         "power.off-watts=5", "scheduling.policy-host-selection=no-policy")


def profile(run) -> list[tuple[float, float]]:
    p = run.energy.profile
    return list(zip(p.times.tolist(), p.watts.tolist()))


def states(run) -> list[tuple[int, str, float, float]]:
    return list(run.node_states.intervals(*run.energy.window))


def test_a_power_cap_delays_a_lease_until_another_ends():
    """Two nodes, always on, cap 350 W. Lease 1: 1 VM, 100 s at 0; lease 2: 1 VM, 50 s at 10.

    Two idle nodes draw 200 W; lease 1 adds 100 W (300 W). Lease 2 would add another 100 W
    (400 W > 350 W) although n1 is free: it waits until lease 1 ends.
    n0  [1: 0-100]
    n1  [idle 0-100][2: 100-150]
    power (W): 0-100 300 | 100-150 300          cap: 350 throughout
    energy: 300 x 150 = 45,000 J. Lease 2 waits 90 s (without the cap: 0 s).
    """
    one, two = be(1, 1, 100, 0), be(2, 1, 50, 10)
    run = simulate([one, two], *POWER, "power.power-cap=350",
                   resources="2 CPU:1 Memory:1024")
    assert [(one.start, one.end), (two.start, two.end)] == [(0, 100), (100, 150)]
    assert profile(run) == [(0, 300), (100, 300), (150, 300)]
    assert run.summary["energy_it_joules"] == 45000
    assert run.energy.violations() == []
    free = simulate([be(1, 1, 100, 0), be(2, 1, 50, 10)], *POWER,
                    resources="2 CPU:1 Memory:1024")
    assert free.energy.profile.watts.max() == 400


def test_a_node_is_booted_only_once_the_cap_has_room_for_its_boot(tmp_path):
    """One node, off at the start, switch-off-idle (timeout 0). Cap: 100 W until 100 s, then
    400 W. Lease 1: 1 VM, 10 s at 0.

    The boot draws 150 W, above the cap until 100 s: it waits for the cap to grow.
    n0  [off 0-100][boot 100-120][1: 120-130][down 130-135][off ...]
    power (W): 0-100 5 | 100-120 150 | 120-130 200 (the run ends with the lease, at 130)
    energy: 500 + 3000 + 2000 = 5,500 J.
    """
    cap = tmp_path / "cap.csv"
    cap.write_text("time,watts\n0,100\n100,400\n")
    lease = be(1, 1, 10, 0)
    run = simulate([lease], *POWER, "power.initial-state=off",
                   "power.policy-node-power=switch-off-idle", f"power.power-cap={cap}",
                   resources="1 CPU:1 Memory:1024")
    assert (lease.start, lease.end) == (120, 130)
    assert states(run) == [(0, "off", 0, 100), (0, "switching-on", 100, 120),
                           (0, "on", 120, 130)]
    assert profile(run) == [(0, 5), (100, 150), (120, 200), (130, 200)]
    assert run.summary["energy_it_joules"] == 5500
    assert run.energy.violations() == []


def solar(path, days: int, night: float, peak: float) -> None:
    """An hourly solar-like series: ``night`` W from 18:00 to 6:00, a sine up to
    ``night + peak`` W at noon."""
    rows = ["time,watts"]
    for hour in range(24 * days):
        h = hour % 24
        sun = math.sin(math.pi * (h - 6) / 12) if 6 <= h <= 18 else 0.0
        rows.append(f"{hour * 3600},{night + peak * max(sun, 0.0):.3f}")
    path.write_text("\n".join(rows) + "\n")


TRACE_POWER = ("power.pstates=2.4:100:200", "power.switch-on=60:150",
               "power.switch-off=30:120", "power.off-watts=5", "tracefile.max-jobs=100")


def test_a_green_envelope_on_a_real_trace(tmp_path):
    """The first 100 jobs of the 30-day SDSC Blue trace (``etc/sample.ini``, 144 one-core
    nodes) under a solar envelope: 720 W at night (what 144 off nodes draw), up to 20,720 W
    at noon. Nodes start off and are switched off after 5 idle minutes.

    Every lease is accounted for once (run or refused because no daytime ever has room for
    it), the invariants hold (power never above the cap among them), nights draw only the
    off power, and the leases wait longer than without the envelope."""
    cap = tmp_path / "solar.csv"
    solar(cap, 60, 720.0, 20000.0)
    settings = [*TRACE_POWER, "power.initial-state=off", "power.policy-node-power=switch-off-idle",
                "power.idle-timeout=300", f"power.green-production={cap}"]
    free = load_run(SAMPLE, settings)
    free_summary = free.run()
    run = load_run(SAMPLE, [*settings, "power.power-cap=green"])
    s = run.run()
    run.table.check()
    run.write(tmp_path / "out")
    assert s["leases_completed"] + s["leases_rejected"] == s["leases_total"] == 100
    assert run.invariants.violations == []   # run() raises if not; the cap's among them
    assert run.energy.violations() == []
    reasons = s["rejected_by_reason"]
    assert all("power cap" in reason for reason in reasons)
    with (tmp_path / "out" / "series" / "power.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert all(float(r["it_watts"]) <= float(r["cap_watts"]) + 1e-6 for r in rows)
    night = [float(r["it_watts"]) for r in rows
             if not 6 <= (float(r["time"]) % 86400) / 3600 <= 18]
    assert max(night) == pytest.approx(720.0)
    assert s["avg_wait"] > free_summary["avg_wait"]
    assert s["green_used_joules"] == pytest.approx(s["energy_joules"])
