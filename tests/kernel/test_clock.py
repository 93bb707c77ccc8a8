"""The same scheduler on the real clock: identical schedule, and requests from other threads."""

from __future__ import annotations

import threading
import time

from lease_manager.config.schema import load_config
from lease_manager.kernel.clock import RealClock, SimulatedClock
from lease_manager.kernel.lease import LeaseState
from lease_manager.plugins import Plugins
from lease_manager.run import Run

from support import HOUR, MIN, be, five_leases


def _run(leases, clock, **kw) -> Run:
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, ["simulation.resources=4 CPU:1 Memory:1024",
                                                "scheduling.backfilling=aggressive"])
    return Run(config, plugins, leases=leases, clock=clock, **kw)


def test_real_clock_gives_the_simulated_schedule():
    """3.5 hours of schedule at a speed-up of 100,000 (about 0.13 s of wall time)."""
    simulated, real = five_leases(), five_leases()
    _run(simulated, SimulatedClock()).run()
    wall = time.perf_counter()
    _run(real, RealClock(speedup=100_000)).run()
    assert time.perf_counter() - wall >= 3.5 * HOUR / 100_000
    assert [(l.start, l.end) for l in real] == [(l.start, l.end) for l in simulated]


def test_serving_engine_takes_leases_from_another_thread_and_stops():
    clock = RealClock(speedup=10_000)
    run = _run([], clock, serve=True)
    worker = threading.Thread(target=run.run)
    worker.start()
    lease = be(1, 2, 10 * MIN, 0)
    lease.submit = clock.now()
    run.engine.submit(lease)
    deadline = time.monotonic() + 5
    while lease.state is not LeaseState.DONE and time.monotonic() < deadline:
        time.sleep(0.01)
    run.engine.stop()
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert lease.state is LeaseState.DONE
    assert lease.end - lease.start == 10 * MIN
