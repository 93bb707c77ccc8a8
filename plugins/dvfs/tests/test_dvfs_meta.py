"""Garg et al.'s meta-schedulers and accounting by hand, on two sites."""

from __future__ import annotations

import pytest

from lmd_helpers import deadline_lease, make_run, run

# two one-node sites, 100 W per running CPU at their single level, idle 0, no cooling:
# a emits 0.5 kg/kWh at $0.05/kWh, b 0.1 kg/kWh at $0.20/kWh
SITES = ("site:a.resources=1 CPU:1 Memory:1024", "site:a.pstates=1.0:0:100",
         "site:a.carbon-rate=0.5", "site:a.electricity-price=0.05",
         "site:b.resources=1 CPU:1 Memory:1024", "site:b.pstates=1.0:0:100",
         "site:b.carbon-rate=0.1", "site:b.electricity-price=0.2",
         "simulation.site-selection-cycle=50", "accounting.probes=garg-accounting")


def three():
    """Arriving at 10 (decided together at 50): L1 100 s, deadline 1000; L2 200 s, deadline
    300; L3 50 s, deadline 1000."""
    return [deadline_lease(1, 1, 100, 10, 1000), deadline_lease(2, 1, 200, 10, 300),
            deadline_lease(3, 1, 50, 10, 1000)]


def kg(watts: float, seconds: float, rate: float) -> float:
    return watts * seconds / 3.6e6 * rate


def test_mce_mce_commits_the_pair_of_least_carbon_first():
    """Every lease's least-carbon site is b. Carbon at b: L3 0.000139 kg < L1 0.000278 kg <
    L2 0.000556 kg: L3 -> b [50,100). Then L1 -> b [100,200). L2 at b would end at 400 > 300:
    only a is feasible: L2 -> a [50,250).

    time  50   100       200       250
    a     [L2-----------------------)
    b     [L3-)[L1--------)
    carbon: b 100 W x 150 s x 0.1 + a 100 W x 200 s x 0.5 = 0.000417 + 0.002778 kg
    """
    leases = three()
    r = run(leases, *SITES, "simulation.policy-site-selection=mce-mce")
    assert [(x.site, x.start, x.end) for x in leases] == [("b", 100, 200), ("a", 50, 250),
                                                          ("b", 50, 100)]
    s = r.summary
    assert s["garg_carbon_kg"] == pytest.approx(kg(100, 150, 0.1) + kg(100, 200, 0.5))
    assert s["garg_sites"]["a"]["carbon_kg"] == pytest.approx(kg(100, 200, 0.5))
    assert s["carbon_kg"] == pytest.approx(s["garg_carbon_kg"])   # the core's integral


def test_gmce_takes_leases_in_deadline_order_to_the_cleanest_site_that_meets_them():
    """Sites by r x P(f_max): b (10) before a (50). EDF: L2 (300) -> b [50,250); L1 -> b
    [250,350); L3 -> b [350,400): all on b."""
    leases = three()
    run(leases, *SITES, "simulation.policy-site-selection=gmce")
    assert [(x.site, x.start, x.end) for x in leases] == [("b", 250, 350), ("b", 50, 250),
                                                          ("b", 350, 400)]


def test_gmp_orders_sites_by_price_and_edf_est_by_start():
    """GMP: a ($0.05) before b: L2 -> a [50,250), L1 -> a? it would end at 350 <= 1000: yes
    [250,350); L3 -> a [350,400). EDF-EST: L2 -> a (both start at 50: the first listed), L1 ->
    b [50,150) (starts before a's 250), L3 -> b [150,200) (b 150 < a 250)."""
    leases = three()
    run(leases, *SITES, "simulation.policy-site-selection=gmp")
    assert [(x.site, x.start) for x in leases] == [("a", 250), ("a", 50), ("a", 350)]
    leases = three()
    run(leases, *SITES, "simulation.policy-site-selection=edf-est")
    assert [(x.site, x.start) for x in leases] == [("b", 50), ("a", 50), ("b", 150)]


def test_a_lease_no_site_can_finish_in_time_is_rejected():
    """L4: 400 s, deadline 300: neither site can finish it."""
    late = deadline_lease(4, 1, 400, 10, 300)
    r = run([late], *SITES, "simulation.policy-site-selection=mce-mp")
    assert late.reason == "no site can finish it by its deadline"
    assert r.summary["leases_rejected"] == 1 and r.summary["garg_leases"] == 0


def test_energy_cost_carbon_and_profit_of_one_lease_by_hand():
    """Site c: COP 2 (total = 1.5 x IT), $0.10/kWh, 0.5 kg/kWh, 100 W per running CPU.
    One lease: 4 CPUs, 1 h at f_max, 10 GB of data; p^c = $0.40 per CPU-hour; data sold at
    $0.17/GB, costing c $0.05/GB.

    E^c = 100 x 4 x 3600 = 1.44 MJ (0.4 kWh); E = 0.6 kWh = 2.16 MJ
    cost = 0.1 x 0.6 = $0.06; carbon = 0.5 x 0.6 = 0.3 kg
    ProfExec = 4 x 1 x 0.40 - 0.06 = $1.54; ProfData = 10 x (0.17 - 0.05) = $1.20
    Prof = $2.74; workload 4 CPU-hours
    """
    one = deadline_lease(1, 4, 3600, 0, 10000, **{"data-gb": "10"})
    r = run([one], "simulation.resources=4 CPU:1 Memory:1024", "power.pstates=1.0:0:100",
            "power.cop=2", "power.electricity-price=0.1", "power.carbon-rate=0.5",
            "accounting.probes=garg-accounting", "dvfs.data-price=0.17",
            "dvfs.data-cost=0.05")
    s = r.summary
    assert s["garg_energy_joules"] == pytest.approx(2.16e6)
    assert s["energy_joules"] == pytest.approx(2.16e6)
    assert s["garg_energy_cost"] == pytest.approx(0.06)
    assert s["garg_carbon_kg"] == pytest.approx(0.3)
    assert s["garg_profit_exec"] == pytest.approx(1.54)
    assert s["garg_profit_data"] == pytest.approx(1.2)
    assert s["garg_profit"] == pytest.approx(2.74)
    assert s["garg_workload_cpu_hours"] == pytest.approx(4)
    assert s["garg_carbon_per_cpu_hour"] == pytest.approx(0.075)


def test_the_workload_annotator_draws_deadlines_from_the_seed():
    """Arrival rate 10: submits 0, 1000, 2000 become 0, 100, 200. Every lease gets a deadline
    submit + ratio x run time with ratio >= 1 (high urgency: mean 4; low: 12; variance 0 here,
    so the ratio is the mean), its requested time its run time, and an urgency class."""
    from lease_manager import Lease, LeaseType, VMRequest

    leases = [Lease(i, LeaseType.BEST_EFFORT, 1000.0 * i, VMRequest.uniform(1, [1, 0]), 500.0,
                    100.0) for i in range(3)]
    r = make_run(leases, "simulation.resources=4 CPU:1 Memory:1024",
                 "tracefile.annotators=garg-workload", "dvfs.arrival-rate=10",
                 "dvfs.urgent-share=0.5", "dvfs.high-urgency=4 0", "dvfs.low-urgency=12 0")
    for lease in leases:
        r.annotators[0].annotate(lease)
    assert [x.submit for x in leases] == [0, 100, 200]
    assert all(x.type is LeaseType.DEADLINE and x.requested_duration == 100 for x in leases)
    ratios = {"high": 4, "low": 12}
    assert [x.deadline for x in leases] == [x.submit + 100 * ratios[x.extra["urgency"]]
                                            for x in leases]
    again = [Lease(i, LeaseType.BEST_EFFORT, 1000.0 * i, VMRequest.uniform(1, [1, 0]), 500.0,
                   100.0) for i in range(3)]
    r2 = make_run(again, "simulation.resources=4 CPU:1 Memory:1024",
                  "tracefile.annotators=garg-workload", "dvfs.urgent-share=0.5")
    for lease in again:
        r2.annotators[0].annotate(lease)
    assert [x.extra["urgency"] for x in again] == [x.extra["urgency"] for x in leases]
    assert all(x.deadline >= x.submit + 100 for x in again)


def test_a_promise_horizon_sends_leases_past_a_busy_cheap_site():
    """GMP with promise-horizon = 60 (decisions at 50): L2 -> a [50,250) (starts at once).
    L1 at a would start at 250 > 50 + 60: b [50,150). L3: a at 250, b at 150, both beyond
    110: rejected. Without the horizon all three go to a (test above).

    time  50        150       250
    a     [L2------------------)
    b     [L1-------)
    """
    leases = three()
    run(leases, *SITES, "simulation.policy-site-selection=gmp", "dvfs.promise-horizon=60")
    assert [(x.site, x.start, x.end) for x in leases[:2]] == [("b", 50, 150), ("a", 50, 250)]
    assert leases[2].reason == ("no site can finish it by its deadline starting within the "
                                "promise horizon (60 s)")


def test_the_bounds_of_section_4_3_on_a_three_lease_example():
    """Sites a and b of 2 CPUs each, 100 W per running CPU at their one level (so f_opt is
    f_max), no cooling; a: 0.5 kg/kWh, $0.05/kWh; b: 0.1 kg/kWh, $0.20/kWh. At 0: L1 2 CPUs
    x 100 s, deadline 150; L2 1 CPU x 200 s, deadline 160; L3 2 CPUs x 50 s, deadline 1000;
    L4 4 CPUs x 100 s, deadline 40 (molded on 2 CPUs it takes 200 s: dropped, and rejected).

    Carbon (sites b, a): L1 -> b [0,100) (molded: 200 CPU-s / 2); L2 -> b would end at 200 >
    160 -> a [0,100); L3 -> b [100,150). TWL = 500 CPU-s; TCE = 300 CPU-s x 100 W at 0.1 +
    200 CPU-s x 100 W at 0.5 = 0.000833 + 0.002778 kg: 0.026 kg per CPU-hour.
    Profit (sites a, b): L1 -> a [0,100); L2 -> b [0,100); L3 -> a [100,150).
    TP = 500/3600 x $0.40 - (300 x 100 J at $0.05 + 200 x 100 J at $0.20) per kWh
       = 0.055556 - 0.000417 - 0.001111 = $0.054028: $0.389 per CPU-hour.
    """
    sites = tuple(x.replace("1 CPU:1", "2 CPU:1") for x in SITES)
    leases = [deadline_lease(1, 2, 100, 0, 150), deadline_lease(2, 1, 200, 0, 160),
              deadline_lease(3, 2, 50, 0, 1000), deadline_lease(4, 4, 100, 0, 40)]
    s = run(leases, *sites, "simulation.policy-site-selection=gmce").summary
    hours = 500 / 3600
    assert s["garg_bound_workload_cpu_hours"] == pytest.approx(hours)
    assert s["garg_carbon_bound_per_cpu_hour"] == pytest.approx(
        (kg(100, 300, 0.1) + kg(100, 200, 0.5)) / hours)
    assert s["garg_carbon_bound_per_cpu_hour"] == pytest.approx(0.026)
    profit = hours * 0.4 - 100 * 300 / 3.6e6 * 0.05 - 100 * 200 / 3.6e6 * 0.2
    assert s["garg_profit_bound_per_cpu_hour"] == pytest.approx(profit / hours)
    assert s["garg_profit_bound_per_cpu_hour"] == pytest.approx(0.389, abs=1e-3)
    # every lease arrives at 0: the reading that honours arrival times gives the same
    assert s["garg_carbon_bound_arrivals_per_cpu_hour"] == s["garg_carbon_bound_per_cpu_hour"]
    assert s["garg_profit_bound_arrivals_per_cpu_hour"] == s["garg_profit_bound_per_cpu_hour"]
    # The bound is per unit of the workload *it* fits, which is not the policy's: gmce decides
    # at 50 s (the cycle), too late for L2, and runs only L1 and L3, both on the clean site b:
    # 0.01 kg per CPU-hour, below the "lower bound". The paper's bounds hold on average over
    # the same workload only.
    assert s["garg_workload_cpu_hours"] == pytest.approx(300 / 3600)
    assert s["garg_carbon_per_cpu_hour"] == pytest.approx(kg(100, 300, 0.1) / (300 / 3600))


def test_the_bounds_map_every_lease_in_one_cycle_with_absolute_deadlines():
    """Relaxation 3 as printed: every lease is mapped in one cycle at the first arrival (0),
    deadlines kept absolute. Sites a and b as above, 2 CPUs each. L1: 2 CPUs x 100 s,
    submitted at 0, deadline 650; L2: 2 CPUs x 100 s, submitted at 500, deadline 600. EDF: L2,
    then L1. Molded on 2 CPUs each takes 100 s.

    Carbon, one cycle (sites b, a):   Carbon, by arrival (L2 not before 500):
    time  0     100    200              0     100        500    600    700
    b     [L2---)[L1---)                b                [L2----)[L1 ends 700 > 650: no]
    a                                   a     [L1---)
    one cycle: 400 CPU-s at 0.1 kg/kWh x 100 W: 0.01 kg per CPU-hour;
    by arrival: 200 CPU-s at 0.1 and 200 at 0.5: 0.03 kg per CPU-hour.
    Profit (sites a, b), one cycle: both on a, $0.40 - 100 W x $0.05/kWh = $0.395 per CPU-hour;
    by arrival: L2 on a [500,600), L1 on b [0,100): $0.40 - 100 W x ($0.05 + $0.20)/2 per kWh
    = $0.3875 per CPU-hour.
    Each bound's work per site (one cycle): carbon a 0, b 400 CPU-s; profit a 400, b 0.
    """
    sites = tuple(x.replace("1 CPU:1", "2 CPU:1") for x in SITES)
    leases = [deadline_lease(1, 2, 100, 0, 650), deadline_lease(2, 2, 100, 500, 600)]
    s = run(leases, *sites, "simulation.policy-site-selection=gmce").summary
    assert s["garg_bound_workload_cpu_hours"] == pytest.approx(400 / 3600)
    assert s["garg_bound_arrivals_workload_cpu_hours"] == pytest.approx(400 / 3600)
    assert s["garg_carbon_bound_per_cpu_hour"] == pytest.approx(0.01)
    assert s["garg_carbon_bound_arrivals_per_cpu_hour"] == pytest.approx(0.03)
    assert s["garg_profit_bound_per_cpu_hour"] == pytest.approx(0.395)
    assert s["garg_profit_bound_arrivals_per_cpu_hour"] == pytest.approx(0.3875)
    assert s["garg_carbon_bound_site_cpu_hours"] == pytest.approx({"a": 0.0, "b": 400 / 3600})
    assert s["garg_profit_bound_site_cpu_hours"] == pytest.approx({"a": 400 / 3600, "b": 0.0})


def test_a_bad_data_attribute_is_refused_with_the_reason():
    """data-gb 'lots': the meta-scheduler rejects the lease, naming the attribute; without a
    meta-scheduler the lease runs and the probe counts it (its data as none)."""
    bad = deadline_lease(1, 1, 100, 10, 1000, **{"data-gb": "lots"})
    good = deadline_lease(2, 1, 100, 10, 1000)
    s = run([bad, good], *SITES, "simulation.policy-site-selection=mce-mp").summary
    assert bad.reason == "bad attribute: data-gb 'lots' is not a number"
    assert good.state.value == "done" and s["garg_bad_data_leases"] == 0
    alone = deadline_lease(1, 1, 100, 0, 1000, **{"data-gb": "-3"})
    s = run([alone], "simulation.resources=1 CPU:1 Memory:1024", "power.pstates=1.0:0:100",
            "accounting.probes=garg-accounting").summary
    assert s["garg_bad_data_leases"] == 1 and s["garg_profit_data"] == 0


def test_carbon_first_books_the_only_wide_site_so_a_later_wide_lease_misses_its_deadline():
    """Issue 39, Garg Fig. 8 cause E in small. Site a: 1 CPU, 0.5 kg/kWh, $0.05/kWh; site b:
    2 CPUs, 0.1 kg/kWh, $0.20/kWh (100 W per running CPU, one level, no cooling). N: 1 CPU x
    200 s, submitted at 10 (decided at 50), deadline 1000; W: 2 CPUs x 100 s, submitted at 60
    (decided at 100, alone in its cycle), deadline 250. Only b can hold W.

    MCE-MCE: N's least-carbon site is b, [50,250). At 100, before any commit of W's cycle, b
    has 1 CPU free until 250 (W would run [250,350), past 250) and a is too small: no site can
    finish W, rejected. MP-MCE and MP-MP: N's most profitable site is a (cheaper energy), so b
    is free for W at 100.

    MCE-MCE (W rejected)           MP-MCE, MP-MP
    time  50   100  200  250       time  50   100  200  250
    a                              a     [N-------------)
    b cpu0[N-------------)         b cpu0      [W---)
    b cpu1                         b cpu1      [W---)
    work 200 CPU-s                 work 400 CPU-s

    Carbon: MCE-MCE 100 W x 200 s at 0.1 kg/kWh; MP-MCE 100 W x 200 s at 0.5 + 200 W x 100 s
    at 0.1. The paper's min-min keeps nothing back for W (no order by size, no reservation; a
    lease no site can finish by its deadline is removed): its policies as printed.
    """
    sites = (*SITES[:4], "site:b.resources=2 CPU:1 Memory:1024", *SITES[5:])
    both = [("a", 50, 250), ("b", 100, 200)]
    cases = {"mce-mce": ([("b", 50, 250)], 200, kg(100, 200, 0.1)),
             "mp-mce": (both, 400, kg(100, 200, 0.5) + kg(200, 100, 0.1)),
             "mp-mp": (both, 400, kg(100, 200, 0.5) + kg(200, 100, 0.1))}
    for policy, (placed, cpu_seconds, carbon) in cases.items():
        leases = [deadline_lease(1, 1, 200, 10, 1000), deadline_lease(2, 2, 100, 60, 250)]
        s = run(leases, *sites, f"simulation.policy-site-selection={policy}").summary
        assert [(x.site, x.start, x.end) for x in leases if x.state.value == "done"] == placed
        assert s["garg_workload_cpu_hours"] == pytest.approx(cpu_seconds / 3600)
        assert s["garg_carbon_kg"] == pytest.approx(carbon)
        if len(placed) == 1:
            assert leases[1].reason == "no site can finish it by its deadline"
