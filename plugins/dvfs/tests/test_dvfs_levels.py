"""DVS of Garg et al. by hand: f_opt, the level OurDVS starts at, T(f) stretching, stepping up
to meet a deadline, and the energy of eq. 3."""

from __future__ import annotations

import pytest

from lease_manager.energy.power_model import cubic_pstates
from lm_dvfs import f_opt

from lmd_helpers import deadline_lease, run

NEW_YORK = "65:7.5:0.675:1.8:5"   # Table 3: beta, alpha; f_min = 0.375 f_max; 5 levels
ONE_NODE = ("simulation.resources=1 CPU:1 Memory:1024", f"power.cubic-law={NEW_YORK}",
            "power.cubic-idle=not-counted", "accounting.probes=garg-accounting")


def p(f: float) -> float:
    return 65 + 7.5 * f ** 3


def test_f_opt_and_the_least_energy_level_of_table_3_sites():
    """New York: f_opt = (65 / 15)^(1/3) = 1.6303 GHz (as Table 3 prints). Levels 0.675,
    0.95625, 1.2375, 1.51875, 1.8 GHz; energy per unit of work P(f) x 1.8 / f:
    1.51875 GHz: 91.274 x 1.18519 = 108.18; 1.8 GHz: 108.74 x 1 = 108.74 -> level 3.
    California (60, 60, f 0.9-2.4): f_opt = 0.5^(1/3) = 0.7937, below f_min -> 0.9 (level 0)."""
    assert f_opt(65, 7.5, 0.675, 1.8) == pytest.approx(1.630324, abs=1e-6)
    assert f_opt(60, 60, 0.9, 2.4) == 0.9
    assert f_opt(75, 5, 0.675, 1.8) == 1.8          # Pennsylvania: (7.5)^(1/3) = 1.96 > f_max
    levels = cubic_pstates(NEW_YORK, 1, idle_counted=False)
    assert [s.ghz for s in levels] == pytest.approx([0.675, 0.95625, 1.2375, 1.51875, 1.8])
    per_work = [s.full * 1.8 / s.ghz for s in levels]
    assert per_work[3] == pytest.approx(108.176, abs=1e-3) and min(per_work) == per_work[3]

    r = run([deadline_lease(1, 1, 100, 0, 1000)], *ONE_NODE,
            "power.policy-operating-point=our-dvs")
    assert r.scheduler.operating_point.policy.economics.least_energy_level(
        deadline_lease(9, 1, 1, 0, 1)) == 3


def test_our_dvs_steps_up_until_the_deadline_is_met():
    """One node; 100 s of work at f_max each; gamma 1 unless said. our-dvs starts at level 3
    (1.51875 GHz: T = 100 x 1.8 / 1.51875 = 118.52 s).

    lease 1: at 0, deadline 130: level 3 meets it       [0, 118.52)
    lease 2: at 200, deadline 315: 318.52 > 315; level 4 (f_max) [200, 300)
    lease 3: at 400, deadline 515, gamma 0.5: T = 100 x (0.5 x (1.18519 - 1) + 1) = 109.26 s
             at level 3                                  [400, 509.26)
    lease 4: at 600, deadline 690: even f_max needs 100 s: rejected

    time  0        118.5  200      300  400       509.3  600
    node  [1 (L3)---)      [2 (L4)--)    [3 (L3)---)
    power 91.27 W          108.74 W      91.27 W            (P = 65 + 7.5 f^3, idle 0)
    energy (eq. 3): 91.274 x 118.52 + 108.74 x 100 + 91.274 x 109.26 = 31,664 J
    """
    leases = [deadline_lease(1, 1, 100, 0, 130), deadline_lease(2, 1, 100, 200, 315),
              deadline_lease(3, 1, 100, 400, 515, gamma="0.5"),
              deadline_lease(4, 1, 100, 600, 690)]
    r = run(leases, *ONE_NODE, "power.policy-operating-point=our-dvs")
    l1, l2, l3, l4 = leases
    assert (l1.level, l1.start, l1.end) == (3, 0, pytest.approx(100 * 1.8 / 1.51875))
    assert (l2.level, l2.start, l2.end) == (4, 200, 300)
    assert (l3.level, l3.start) == (3, 400)
    assert l3.end == pytest.approx(400 + 100 * (0.5 * (1.8 / 1.51875 - 1) + 1))
    assert l4.reason == "cannot finish by its deadline 690"
    expected = (p(1.51875) * 100 * 1.8 / 1.51875 + p(1.8) * 100
                + p(1.51875) * 100 * (0.5 * (1.8 / 1.51875 - 1) + 1))
    assert expected == pytest.approx(31664, abs=1)
    s = r.summary
    assert s["energy_it_joules"] == pytest.approx(expected)      # the core's integral
    assert s["garg_energy_joules"] == pytest.approx(expected)    # eq. 3, per lease
    assert s["garg_workload_cpu_hours"] == pytest.approx(300 / 3600)


def test_prev_dvs_starts_at_the_lowest_level_and_without_dvs_at_f_max():
    """Lease: 100 s of work, deadline 200. prev-dvs: 0.675 GHz needs 266.7 s, 0.95625 GHz
    188.2 s -> level 1. without-dvs: f_max, 100 s."""
    prev = deadline_lease(1, 1, 100, 0, 200)
    run([prev], *ONE_NODE, "power.policy-operating-point=prev-dvs")
    assert prev.level == 1 and prev.end == pytest.approx(100 * 1.8 / 0.95625)
    flat = deadline_lease(1, 1, 100, 0, 200)
    run([flat], *ONE_NODE, "power.policy-operating-point=without-dvs")
    assert flat.level == 4 and flat.end == 100


ONE_SITE = ("site:ny.resources=1 CPU:1 Memory:1024", f"site:ny.cubic-law={NEW_YORK}",
            "site:ny.cubic-idle=not-counted", "simulation.policy-site-selection=edf-est",
            "simulation.site-selection-cycle=50", "accounting.probes=garg-accounting")


@pytest.mark.parametrize("policy", ["prev-dvs", "our-dvs"])
def test_the_level_penalty_is_the_energy_over_the_same_work_at_least_energy_levels(policy):
    """One New York CPU (no cooling); two leases of 100 s of work at f_max, submitted at 10,
    decided at 50 in EDF order: L2 (deadline 250), then L1 (deadline 1000). The least-energy
    level is 3 (1.51875 GHz: 108.18 J per 100 s of work).

    prev-dvs: L2 at level 0 would end at 316.7 > 250: level 1 (T = 188.24 s); L1 at level 0
    (T = 266.67 s):
        time   50          238.2              504.9
        cpu    [L2, 1.0 GHz)[L1, 0.675 GHz----)
        power  71.56 W      67.31 W
        energy 71.558 x 188.24 + 67.306 x 266.67 = 13,470 + 17,948 = 31,418 J
        least  2 x 108.18 x 100 = 21,635 J: penalty 1.452; work 100 s at level 0, 100 at 1
    our-dvs: both at level 3 ([50, 168.5), [168.5, 287.0)): energy = least, penalty 1."""
    leases = [deadline_lease(1, 1, 100, 10, 1000), deadline_lease(2, 1, 100, 10, 250)]
    s = run(leases, *ONE_SITE, f"power.policy-operating-point={policy}").summary
    least = 2 * p(1.51875) * 100 * 1.8 / 1.51875
    assert least == pytest.approx(21635.3, abs=0.1)
    if policy == "prev-dvs":
        assert [x.level for x in leases] == [0, 1]
        energy = p(0.95625) * 100 * 1.8 / 0.95625 + p(0.675) * 100 * 1.8 / 0.675
        assert energy == pytest.approx(31418, abs=1)
        levels = [100 / 3600, 100 / 3600, 0, 0, 0]
    else:
        assert [x.level for x in leases] == [3, 3]
        energy = least
        levels = [0, 0, 0, 200 / 3600, 0]
    assert s["garg_energy_joules"] == pytest.approx(energy)
    assert s["garg_energy_least_level_joules"] == pytest.approx(least)
    assert s["garg_energy_least_level_per_cpu_hour"] == pytest.approx(least / (200 / 3600))
    site = s["garg_sites"]["ny"]
    assert site["energy_least_level_joules"] == pytest.approx(least)
    assert site["level_cpu_hours"] == pytest.approx(levels)
