"""``LeaseScheduler.length``: how long a reservation for the rest of a lease lasts, its
remaining work stretched by its DVFS level plus the shutdown (per VM with Haizea's enactment
overhead); an advance reservation's interval is what it asked for. Written out on the hot
path, it must stay the composition of the lease's and the scheduler's own definitions, bit
for bit."""

from __future__ import annotations

import random

import pytest

from lease_manager.config.schema import load_config
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.scheduler import LeaseScheduler, SchedulerSettings
from lease_manager.plugins import Plugins
from lease_manager.run import Run


@pytest.mark.parametrize("per_vm", [0.0, 0.7, 3.0])
@pytest.mark.parametrize("shutdown", [0.0, 1.3, 30.0])
def test_length_is_the_remaining_work_stretched_plus_the_shutdown(shutdown, per_vm):
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, ["simulation.resources=4 CPU:1 Memory:1024"])
    run = Run(config, plugins, leases=[])
    built = run.scheduler
    sched = LeaseScheduler(built.table, built.timeline, admission=built.admission,
                           pricing=built.pricing, queue=built.queue_policy,
                           host_selection=built.host_selection,
                           settings=SchedulerSettings(shutdown=shutdown, shutdown_per_vm=per_vm))
    rng = random.Random(int(shutdown * 10 + per_vm * 100))
    for i in range(300):
        kind = rng.choice([LeaseType.BEST_EFFORT, LeaseType.ADVANCE_RESERVATION,
                           LeaseType.DEADLINE])
        requested = rng.choice([1, 60, 3600.0, rng.uniform(1, 1e6)])
        lease = Lease(i, kind, 0, VMRequest.uniform(rng.randint(1, 4), [1, 0]), requested,
                      requested, start_request=0 if kind is LeaseType.ADVANCE_RESERVATION
                      else None, deadline=2e7 if kind is LeaseType.DEADLINE else None)
        lease.work_done = rng.choice([0, 0.0, requested * rng.random()])
        lease.stretch = rng.choice([1.0, 1.25, 1 / 0.6])
        expected = (requested if kind is LeaseType.ADVANCE_RESERVATION
                    else lease.remaining_requested * lease.stretch + sched.shutdown_of(lease))
        got = sched.length(lease)   # (repr: the same float, bit for bit, and type)
        assert (type(got), repr(got)) == (type(expected), repr(expected))
    run.close()
