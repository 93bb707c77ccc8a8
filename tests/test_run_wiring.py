"""A run is built in one pass (issue 42): the scheduler is built with its site's energy parts
and the reallocation plugin, the site schedulers with their origin; what plugins see of the
scheduler is typed, and asks one site's scheduler for ``what_if``."""

from __future__ import annotations

import pytest

from lease_manager import AllocationPolicy, hookimpl
from lease_manager.config.schema import load_config
from lease_manager.errors import LeaseManagerError
from lease_manager.kernel.clock import SimulatedClock
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.plugins import Plugins
from lease_manager.policies.host_selection import NoPolicy
from lease_manager.reallocation import Reallocation
from lease_manager.run import Run

from support import be

POWER = ("power.pstates=1.0:100:200", "power.switch-off=5:50", "power.switch-on=20:150",
         "power.off-watts=5", "scheduling.policy-host-selection=no-policy",
         "scheduling.placement=when-planned")
SITES = ("site:a.resources=1 CPU:1 Memory:1024", "site:b.resources=1 CPU:1 Memory:1024")


class Never(AllocationPolicy):
    """Makes no lease malleable."""

    name = "never"

    def initial(self, lease, now):
        return None

    def reallocate(self, now, reasons):
        return ()


class _Plugin:
    @hookimpl
    def register_policies(self):
        return [Never]


def built(*settings: str, leases: list[Lease] | None = None, **kwargs) -> Run:
    plugins = Plugins(entry_points=False, extra=[_Plugin()])
    config = load_config(None, plugins.schema, list(settings))
    return Run(config, plugins, leases=leases if leases is not None else [], **kwargs)


def test_the_scheduler_is_built_with_the_node_states_it_reads():
    """Without a cap: the node states are the scheduler's bootable nodes (one dict) and its
    planned boots, and it has operating points; with a cap, the cap is its power gate and
    boots are not lifted."""
    with built("simulation.resources=2 CPU:1 Memory:1024", *POWER,
               "power.initial-state=off") as run:
        sched, states = run.site_scheduler, run.node_states
        assert sched.boots is states and sched.bootable is states.bootable
        assert sched.bootable == {0: 20.0, 1: 20.0}   # off, bootable by 0 + 20 s
        assert sched.planned_boots is states and sched.power is None
        assert sched.operating_point is not None
    with built("simulation.resources=2 CPU:1 Memory:1024", *POWER,
               "power.power-cap=100000") as run:
        sched = run.site_scheduler
        assert sched.power is run.node_states.cap is not None
        assert sched.planned_boots is None


def test_a_lease_on_an_off_node_waits_only_for_its_boot():
    """One node, off at 0 (boot 20 s). Lease 1: 10 s at 0. The scheduler learns from the
    node states it was built with that the node could be booted by 20:

    n0  [boot 0-20][1: 20-30]
    """
    lease = be(1, 1, 10, 0)
    run = built("simulation.resources=1 CPU:1 Memory:1024", *POWER,
                "power.initial-state=off", leases=[lease])
    run.run()
    assert (lease.start, lease.end) == (20, 30)
    assert run.site_scheduler.boots.boot_until == -float("inf")   # no node left off at the end


def test_the_reallocation_plugin_serves_the_scheduler_built_with_it():
    with built("simulation.resources=4 CPU:1 Memory:1024",
               "malleable.policy-allocation=never") as run:
        assert run.reallocation is not None
        assert run.site_scheduler.malleability is run.reallocation
        assert run.reallocation.scheduler is run.site_scheduler
        with pytest.raises(ValueError, match="serves one scheduler"):
            run.reallocation.bind(built("simulation.resources=1 CPU:1 Memory:1024")
                                  .site_scheduler)
    unbound = Reallocation(object(), epoch=60, migration_time=0,   # type: ignore[arg-type]
                           migration_energy=0)
    with pytest.raises(AssertionError, match="binds its allocator"):
        _ = unbound.scheduler


def test_site_selection_cycles_count_from_the_run_start():
    """The clock starts at 20; cycles of 50 s end at 70, 120, ... Lease 1 (10 s) arrives at
    30 and is decided at 70 (it would be at 50 if cycles counted from 0):

    time  20   30        70   80
    a               [1----)
    """
    lease = be(1, 1, 10, 30)
    run = built(*SITES, "simulation.site-selection-cycle=50", leases=[lease],
                clock=SimulatedClock(20))
    run.run()
    assert (lease.site, lease.start, lease.end) == ("a", 70, 80)


def test_what_if_asks_one_sites_scheduler():
    """With several sites, ``ctx.scheduler.what_if`` says where to ask (each site's context);
    ``run.site_scheduler`` is the one-site scheduler only."""
    deadline = Lease(2, LeaseType.DEADLINE, 0, VMRequest.uniform(1, [1, 0]), 100, 100,
                     deadline=500)
    with built(*SITES) as run:
        with pytest.raises(TypeError, match=r"ask ctx.sites\[name\].scheduler"):
            run.ctx.scheduler.what_if(deadline, 0)
        assert run.ctx.sites["b"].scheduler.what_if(deadline, 0) == (None, 0, 100)
        with pytest.raises(LeaseManagerError, match="a scheduler per site"):
            _ = run.site_scheduler
    with built("simulation.resources=1 CPU:1 Memory:1024") as run:
        assert run.ctx.scheduler.what_if(deadline, 0) == (None, 0, 100)


class SeesTheEnvelope(NoPolicy):
    """Host selection that notes what the context holds when it is built (with the run's
    other policies, before any energy part)."""

    name = "sees-the-envelope"
    seen: list = []

    def __init__(self, ctx):
        super().__init__(ctx)
        SeesTheEnvelope.seen.append((ctx.power, ctx.power_cap))


def test_the_context_is_built_with_the_power_model_and_the_envelope():
    """The context plugins get holds the power model and the site's envelope from its
    construction, so a policy sees them when it is built (they used to be set once the energy
    parts existed, after the policies): a 500 W cap, the values the node states' cap keeps
    to; without a cap, none; with several sites, the run's context has no envelope of its
    own."""
    class Registers:
        @hookimpl
        def register_policies(self):
            return [SeesTheEnvelope]

    plugins = Plugins(entry_points=False, extra=[Registers()])
    config = load_config(None, plugins.schema,
                         ["simulation.resources=2 CPU:1 Memory:1024", *POWER,
                          "power.power-cap=500",
                          "scheduling.policy-host-selection=sees-the-envelope"])
    SeesTheEnvelope.seen.clear()
    with Run(config, plugins, leases=[]) as run:
        (power, cap_seen), = SeesTheEnvelope.seen
        assert power is run.power is not None and cap_seen is run.ctx.power_cap
        assert run.ctx.power is run.power is not None
        cap = run.node_states.cap
        assert cap is not None and run.ctx.power_cap is not None
        assert list(run.ctx.power_cap.values) == list(cap.cap.values) == [500.0]
    with built("simulation.resources=2 CPU:1 Memory:1024", *POWER) as run:
        assert run.ctx.power is not None and run.ctx.power_cap is None
    with built(*SITES, *POWER, "power.power-cap=500") as run:
        assert run.ctx.power_cap is None
        assert all(site.ctx.power is not None for site in run.sites)
