"""Admission (``no-ARs``, ``utilization-threshold``) and pricing (``constant``, ``maximum``,
``adaptive``, suspension surcharge) policies, on a small site with hand-placed reservations and
hand-computed figures.

The site: 4 nodes of CPU:100 Memory:1024 (400 CPU). Reservations placed by hand:

- A: nodes 0 and 1, CPU 100 each, over [0, 3600)        (200 CPU)
- B: node 2, CPU 50, over [1800, 7200)                   (50 CPU)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest
from lease_manager.kernel.slottable import Reservation
from lease_manager.plugins import BUILTIN_PLUGINS, Plugins
from lease_manager.policies import admission, pricing
from lease_manager.policies.utilization import lease_interval, projected_utilization
from lease_manager.run import Run

from support import HOUR, be, simulate

SITE = "4 CPU:100 Memory:1024"


def plugins() -> Plugins:
    # once the lead lists these modules in BUILTIN_PLUGINS, registering them again would fail
    extra = [m for m in (admission, pricing) if m.__name__ not in BUILTIN_PLUGINS]
    return Plugins(entry_points=False, extra=extra)


def make_run(*settings: str, reservations: bool = True) -> Run:
    p = plugins()
    config = load_config(None, p.schema, [f"simulation.resources={SITE}", *settings])
    run = Run(config, p, leases=[])
    if reservations:
        run.table.add(Reservation(None, 0, 3600, np.array([0, 1]),
                                  np.array([[100.0, 0.0], [100.0, 0.0]])))
        run.table.add(Reservation(None, 1800, 7200, np.array([2]), np.array([[50.0, 0.0]])))
    return run


def lease(kind: LeaseType = LeaseType.BEST_EFFORT, *, vms: int = 1, cpu: float = 100,
          duration: float = HOUR, start: float | None = None, submit: float = 0) -> Lease:
    return Lease(1, kind, submit, VMRequest.uniform(vms, [cpu, 256]), duration,
                 start_request=start)


# ------------------------------------------------------------------------- the projection
def test_projection_of_a_best_effort_lease():
    """[0, 3600): A 200 x 3600 + B 50 x 1800 + the lease 100 x 3600 = 1,170,000 CPU-s
    over 400 x 3600 = 1,440,000: 0.8125."""
    run = make_run()
    p = projected_utilization(run.table, lease(), now=0)
    assert (p.start, p.end, p.reserved, p.demand, p.capacity) == (0, 3600, 810000, 100, 400)
    assert p.utilization == pytest.approx(0.8125)


def test_projection_of_an_advance_reservation():
    """[1800, 5400): A 200 x 1800 + B 50 x 3600 + 100 x 3600 = 900,000 over 1,440,000."""
    p = projected_utilization(make_run().table, lease(LeaseType.ADVANCE_RESERVATION,
                                                      start=1800), now=0)
    assert (p.start, p.end) == (1800, 5400)
    assert p.utilization == pytest.approx(0.625)


def test_projection_counts_a_reservation_that_holds_vms_without_nodes():
    """placement = at-start: a future reservation holds VMs, not nodes, until it starts. The
    same plan as test_projection_of_a_best_effort_lease, counted: A (2 VMs of CPU 100) on
    nodes 0-1 over [0, 3600), B (1 VM of CPU 100, pending) over [1800, 7200): over
    [0, 3600) A 200 x 3600 + B 100 x 1800 + the lease 100 x 3600 = 1,260,000 of
    1,440,000 CPU-s: 0.875."""
    run = make_run("scheduling.placement=at-start", "tracefile.vm-resources=CPU:100 Memory:256",
                   reservations=False)
    table = run.table
    a, b = lease(vms=2), lease()
    table.add(Reservation(a, 0, 3600, np.array([0, 1]), np.array([[100.0, 256], [100.0, 256]]),
                          vm_nodes=(0, 1), vm_shape=a.vms.shape_key))
    table.add(Reservation(b, 1800, 7200, np.empty(0, dtype=np.intp), np.empty((0, 0)),
                          vm_shape=b.vms.shape_key, pending=1))
    p = projected_utilization(run.table, lease(), now=0)
    assert (p.reserved, p.demand, p.capacity) == (900000, 100, 400)
    assert p.utilization == pytest.approx(0.875)


def test_projection_starts_now_for_best_effort_and_not_before_now():
    """At now = 3000, [3000, 6600): A 200 x 600 + B 50 x 3600 + 2 x 100 x 3600 = 1,020,000
    over 1,440,000; an AR asking for a start in the past is projected from now too."""
    run = make_run()
    p = projected_utilization(run.table, lease(vms=2), now=3000)
    assert (p.start, p.end, p.reserved) == (3000, 6600, 300000)
    assert p.utilization == pytest.approx(1020000 / 1440000)
    assert lease_interval(lease(LeaseType.ADVANCE_RESERVATION, start=100), 3000) == (3000, 6600)
    assert lease_interval(lease(LeaseType.DEADLINE, start=5000), 3000) == (5000, 8600)


def test_projection_of_an_unlimited_lease_is_its_limit():
    """Only what is reserved for ever counts: C holds 100 CPU from 0 on; (100 + 100) / 400."""
    run = make_run()
    run.table.add(Reservation(None, 0, math.inf, np.array([3]), np.array([[100.0, 0.0]])))
    p = projected_utilization(run.table, lease(duration=math.inf), now=0)
    assert p.utilization == pytest.approx(0.5)
    assert math.isinf(p.end)


# ------------------------------------------------------------------------------ admission
def test_no_ars_rejects_only_advance_reservations():
    run = make_run("scheduling.policy-admission=no-ARs", reservations=False)
    policy = run.policies["admission"]
    assert isinstance(policy, admission.NoARs)
    assert policy.admit(lease(LeaseType.ADVANCE_RESERVATION, start=10), 0) == \
        "advance reservations are not accepted"
    for kind in (LeaseType.BEST_EFFORT, LeaseType.IMMEDIATE, LeaseType.DEADLINE):
        assert policy.admit(lease(kind), 0) is None


def test_utilization_threshold_default_accepts_0_8125():
    run = make_run("scheduling.policy-admission=utilization-threshold")
    policy = run.policies["admission"]
    assert isinstance(policy, admission.UtilizationThreshold) and policy.threshold == 0.9
    assert policy.admit(lease(), 0) is None


def test_utilization_threshold_rejects_with_the_figures():
    policy = admission.UtilizationThreshold(make_run("admission.threshold=0.8").ctx)
    assert policy.admit(lease(), 0) == (
        "projected utilization 81.25% over [0, 3600) would exceed the threshold 80.00%")
    # the AR's interval is quieter (0.625)
    assert policy.admit(lease(LeaseType.ADVANCE_RESERVATION, start=1800), 0) is None
    # exactly at the threshold is accepted: 0.625
    policy = admission.UtilizationThreshold(make_run("admission.threshold=0.625").ctx)
    assert policy.admit(lease(LeaseType.ADVANCE_RESERVATION, start=1800), 0) is None
    assert "62.50%" in policy.admit(lease(LeaseType.ADVANCE_RESERVATION, start=1800, cpu=101), 0)


def test_utilization_threshold_in_a_simulation():
    """One node of CPU:4; threshold 0.5. Lease 1 (2 CPU for an hour) projects 0.5: accepted.
    Lease 2 (the same) arrives at 60, while lease 1 holds [0, 3600): (2 x 3540 + 2 x 3600) /
    (4 x 3600) = 99.17%: rejected. (Admission sees reservations, not the queue: a lease
    arriving at 0 too would have been accepted.) Lease 3 arrives once lease 1 has ended:
    accepted."""
    leases = [be(1, 2, HOUR, 0), be(2, 2, HOUR, 60), be(3, 2, HOUR, 2 * HOUR)]
    run = simulate(leases, "scheduling.policy-admission=utilization-threshold",
                   "admission.threshold=0.5", resources="1 CPU:4 Memory:1024",
                   plugins=plugins())
    assert [lease.state for lease in leases] == [LeaseState.DONE, LeaseState.REJECTED,
                                                 LeaseState.DONE]
    assert leases[1].reason == ("projected utilization 99.17% over [60, 3660) would exceed the "
                                "threshold 50.00%")
    assert run.summary["leases_rejected"] == 1


def test_threshold_option_is_validated():
    with pytest.raises(ConfigError, match=r"\[admission\] threshold"):
        make_run("admission.threshold=-0.1")


# -------------------------------------------------------------------------------- pricing
def test_constant_price():
    """2 VMs of CPU:100 = 2 CPUs (cpu-unit 100) for 1.5 h at 2 per CPU-hour: 6."""
    run = make_run("scheduling.policy-pricing=constant", "pricing.rate=2",
                   "pricing.cpu-unit=100")
    policy = run.policies["pricing"]
    assert isinstance(policy, pricing.Constant)
    price = policy.price(lease(vms=2, duration=1.5 * HOUR), 0)
    assert price == 6.0 and isinstance(price, float)


def test_constant_price_defaults_count_raw_cpu_units():
    policy = pricing.Constant(make_run().ctx)
    assert policy.price(lease(vms=2, cpu=1, duration=HOUR / 2), 0) == 1.0   # 2 CPUs x 0.5 h


def test_maximum_price_uses_the_highest_rate():
    policy = pricing.Maximum(make_run("pricing.rates=0.5, 1.0, 3", "pricing.cpu-unit=100").ctx)
    assert policy.price(lease(vms=2, duration=1.5 * HOUR), 0) == 9.0


def test_adaptive_price_follows_the_projected_utilization():
    """rate 2 x (1 + 0.5 x 0.8125) x 1 CPU x 1 h = 2.8125; on an empty site the lease alone
    projects 0.25: 2 x 1.125 = 2.25."""
    settings = ("pricing.rate=2", "pricing.adaptive-factor=0.5", "pricing.cpu-unit=100")
    assert pricing.Adaptive(make_run(*settings).ctx).price(lease(), 0) == pytest.approx(2.8125)
    empty = make_run(*settings, reservations=False)
    assert pricing.Adaptive(empty.ctx).price(lease(), 0) == pytest.approx(2.25)
    assert pricing.Adaptive(make_run("pricing.adaptive-factor=0").ctx).price(lease(), 0) == 100.0


def test_suspension_surcharge():
    """4 per CPU-hour of suspension: 2 CPUs suspended (suspending, resuming) for 30 minutes
    owe 4; the default surcharge is 0 for every policy."""
    run = make_run("pricing.suspension-surcharge=4", "pricing.cpu-unit=100",
                   reservations=False)
    for cls in (pricing.Constant, pricing.Maximum, pricing.Adaptive):
        policy = cls(run.ctx)
        assert policy.surcharge(lease(vms=2), 1800) == 4.0
        assert policy.surcharge(lease(vms=2), 0) == 0.0
        assert cls(make_run(reservations=False).ctx).surcharge(lease(vms=2), 1800) == 0.0


def test_unlimited_leases_cost_infinity_unless_free():
    run = make_run(reservations=False)
    assert math.isinf(pricing.Constant(run.ctx).price(lease(duration=math.inf), 0))
    assert pricing.Constant(make_run("pricing.rate=0").ctx).price(lease(duration=math.inf), 0) == 0


def test_price_in_a_simulation_and_max_price():
    """Constant pricing at 1 per CPU-hour: lease 1 (2 CPU, 1 h) costs 2; lease 2 (1 CPU, 2 h,
    willing to pay at most 1.5) is rejected by the core."""
    leases = [be(1, 2, HOUR, 0), be(2, 1, 2 * HOUR, 0)]
    leases[1].max_price = 1.5
    simulate(leases, "scheduling.policy-pricing=constant", resources="1 CPU:4 Memory:1024",
             plugins=plugins())
    assert leases[0].price == 2.0 and leases[0].state is LeaseState.DONE
    assert leases[1].state is LeaseState.REJECTED and "above the maximum 1.5" in leases[1].reason


def test_a_users_rate_rejects_a_higher_price_as_haizea_11_does():
    """Haizea 1.1's ``simul_userrate``: the user pays at most the lease's price at that rate per
    CPU-hour (1.1's test_pricing3 expects "rejected by user"). Constant pricing at 2 per
    CPU-hour; leases of 1 CPU for 1 h: price 2. Lease 1's user rate 3 (at most 3): accepted;
    lease 2's rate 1.5 (at most 1.5): rejected; lease 3's rate 2 (at most 2): accepted (not
    above)."""
    leases = [be(i, 1, HOUR, 0) for i in (1, 2, 3)]
    for x, rate in zip(leases, ("3", "1.5", "2")):
        x.extra["simul_userrate"] = rate
    simulate(leases, "scheduling.policy-pricing=constant", "pricing.rate=2",
             resources="1 CPU:4 Memory:1024", plugins=plugins())
    assert [x.state for x in leases] == [LeaseState.DONE, LeaseState.REJECTED, LeaseState.DONE]
    assert leases[1].reason == "rejected by the user: price 2 is above the maximum 1.5"


def test_rates_option_is_validated():
    for bad, message in (("", "at least one rate"),
                         ("1, x", "'x' in '1, x' is not a finite number"),
                         ("1, -2", r"not in \[0, 1e\+09\]"), ("inf", "is not a finite number"),
                         ("1_0", "is not a finite number")):
        with pytest.raises(ConfigError, match=message):
            make_run(f"pricing.rates={bad}")


def test_options_are_documented():
    doc = plugins().schema.document()
    for name in ("## [admission]", "### `threshold`", "## [pricing]", "### `rate`",
                 "### `rates`", "### `cpu-unit`", "### `adaptive-factor`",
                 "### `suspension-surcharge`"):
        assert name in doc
