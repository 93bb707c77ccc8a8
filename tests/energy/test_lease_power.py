"""A lease's own dynamic power (its ``watts`` attribute), in the accounting and under a cap.

One node of 4 cores, always on, one level of 95 W idle and 95 W full: a lease without its own
power adds nothing to the node's 95 W; a lease with ``watts`` adds that much per VM.
"""

from __future__ import annotations

import csv

from lease_manager.kernel.lease import LeaseState

from support import be, simulate

FLAT = ("power.pstates=1.0:95:95", "scheduling.policy-host-selection=no-policy")


def watts(lease, value):
    lease.extra["watts"] = value
    return lease


def test_a_leases_own_watts_replace_the_node_models_dynamic_power(tmp_path):
    """Lease 1: 2 VMs of 30 W each, 100 s at 0; lease 2: 1 VM with no power of its own, 50 s
    at 0 (its share of full minus idle is 0 W).

    n0 (4 cores)  [1: 2 cores 0-100][2: 1 core 0-50]
    power (W): 0-100 95 + 2 x 30 = 155          energy 15,500 J
    lease 1: 2/4 x 95 + 60 = 107.5 W x 100 s = 10,750 J; lease 2: 1/4 x 95 x 50 = 1,187.5 J
    """
    one, two = watts(be(1, 2, 100, 0), "30"), be(2, 1, 50, 0)
    run = simulate([one, two], *FLAT, resources="1 CPU:4 Memory:1024")
    profile = run.energy.profile
    assert list(zip(profile.times.tolist(), profile.watts.tolist())) == [
        (0, 155), (50, 155), (100, 155)]
    assert run.summary["energy_it_joules"] == 15500
    assert run.energy.energy_of(one) == 10750
    assert run.energy.energy_of(two) == 1187.5
    assert run.energy.violations() == []
    run.write(tmp_path)
    rows = list(csv.DictReader((tmp_path / "leases.csv").open()))
    assert [(r["watts"], r["energy_joules"]) for r in rows] == [("30", "10750"),
                                                                ("", "1187.5")]


def test_no_watts_column_when_no_lease_has_its_own_power(tmp_path):
    run = simulate([be(1, 1, 10, 0)], *FLAT, resources="1 CPU:4 Memory:1024")
    run.write(tmp_path)
    header = (tmp_path / "leases.csv").read_text().splitlines()[0]
    assert header.endswith(",level,ghz,stretched_requested,energy_joules")


def test_a_cap_counts_a_leases_own_watts():
    """Cap 200 W. Lease 1: 1 VM of 80 W, 100 s at 0; lease 2: 1 VM of 50 W, 50 s at 10.

    95 + 80 = 175 W; with lease 2, 225 W > 200 W: it waits for lease 1 although cores are free.
    n0  [1: 0-100][2: 100-150]
    power (W): 0-100 175 | 100-150 145
    """
    one, two = watts(be(1, 1, 100, 0), "80"), watts(be(2, 1, 50, 10), "50")
    run = simulate([one, two], *FLAT, "power.power-cap=200", resources="1 CPU:4 Memory:1024")
    assert [(one.start, one.end), (two.start, two.end)] == [(0, 100), (100, 150)]
    assert run.energy.profile.watts.tolist() == [175, 145, 145]
    assert run.energy.violations() == []


def test_a_lease_with_bad_watts_is_rejected_with_the_reason():
    bad, good = watts(be(1, 1, 10, 0), "lots"), watts(be(2, 1, 10, 0), "-3")
    run = simulate([bad, good], *FLAT, resources="1 CPU:4 Memory:1024")
    assert bad.state is good.state is LeaseState.REJECTED
    assert bad.reason == "bad attribute: watts 'lots' is not a number"
    assert good.reason == "bad attribute: watts '-3' is not in [0, 1e+09]"
    assert run.summary["leases_rejected"] == 2
