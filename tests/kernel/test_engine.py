"""The engine: stop conditions, the held-lease guarantee, probes and summary fields."""

from __future__ import annotations

import pytest

import lease_manager
from lease_manager import QueuePolicy
from lease_manager.kernel.lease import LeaseState
from lease_manager.plugins import Plugins

from support import HOUR, MIN, be, simulate


class HoldEverything(QueuePolicy):
    """Holds every lease and never releases one: the core must release them at the end."""

    name = "hold-everything"

    def hold(self, lease, now):
        return True


class ReleaseAfterAnHour(QueuePolicy):
    """Holds leases for an hour after they arrive (a queue mechanism with a timer)."""

    name = "release-after-an-hour"

    def hold(self, lease, now):
        return True

    def release(self, held, now):
        return [l for l in held if now >= l.submit + HOUR]


class _Policies:
    def __init__(self):
        self.cycles = 0

    @lease_manager.hookimpl
    def register_policies(self):
        return [HoldEverything, ReleaseAfterAnHour]

    @lease_manager.hookimpl
    def scheduling_cycle_end(self, ctx, now):
        self.cycles += 1

    @lease_manager.hookimpl
    def collect_summary(self, ctx):
        return {"cycles_seen": self.cycles}


def plugins():
    return Plugins(entry_points=False, extra=[_Policies()])


def test_held_leases_are_never_lost():
    """Nothing ever releases the leases; when the run would end, the core queues them."""
    leases = [be(1, 2, HOUR, 0), be(2, 2, HOUR, 10)]
    run = simulate(leases, "scheduling.policy-queue=hold-everything", plugins=plugins())
    assert all(l.state is LeaseState.DONE for l in leases)
    assert run.summary["held_leases_force_released"] == 2
    assert leases[0].wait == 10 and leases[1].wait == 0   # released together at t=10


def test_held_lease_wait_counts():
    """Released only at the first decision point an hour after arrival: there is none until
    the engine runs dry, so both leases are released by the core at 0:10 (the last event)."""
    leases = [be(1, 1, HOUR, 0), be(2, 1, 3 * HOUR, 0), be(3, 1, 30 * MIN, 10)]
    run = simulate(leases, "scheduling.policy-queue=release-after-an-hour", plugins=plugins())
    assert all(l.state is LeaseState.DONE for l in leases)
    assert run.summary["avg_wait"] == pytest.approx(sum(l.wait for l in leases) / 3)


def test_stop_at_a_time_accounts_for_unfinished_leases():
    """Stop at 0:45: #1 (0:00-1:00) is still running, #2 (4 nodes) still queued."""
    leases = [be(1, 2, HOUR, 0), be(2, 4, HOUR, MIN), be(3, 1, 30 * MIN, 0)]
    run = simulate(leases, "simulation.stop-when=time", "simulation.runtime=00:45:00",
                   "scheduling.backfilling=off")
    states = {l.id: l.state for l in leases}
    assert states == {1: LeaseState.ACTIVE, 2: LeaseState.QUEUED, 3: LeaseState.DONE}
    assert run.summary["leases_unfinished"] == 2 and run.accounting.recorded == 3


def test_usage_probe_and_plugin_summary_fields():
    leases = [be(1, 2, HOUR, 0), be(2, 4, HOUR, MIN)]
    run = simulate(leases, "accounting.probes=usage", plugins=plugins())
    times, values = run.metrics.series["utilization"]
    assert values[:2] == [0.5, 0.5] and max(values) == 1.0
    assert run.metrics.series["queue_length"][1][1] == 1      # #2 waits at 0:01
    assert run.summary["cycles_seen"] == run.engine.steps


class Tagger(lease_manager.Annotator):
    """Tags every lease with a draw from its own random stream."""

    name = "tagger"

    def annotate(self, lease):
        lease.extra["draw"] = float(self.ctx.rng("tagger").random())


class _Annotators:
    @lease_manager.hookimpl
    def register_policies(self):
        return [Tagger]


def test_annotators_are_seeded_per_stream():
    def draws(seed, other_stream_first=False):
        plugins = Plugins(entry_points=False, extra=[_Annotators()])
        from lease_manager.config.schema import load_config
        from lease_manager.run import Run
        cfg = load_config(None, plugins.schema, ["simulation.resources=4 CPU:1 Memory:1024",
                                                 "tracefile.annotators=tagger",
                                                 f"simulation.seed={seed}"])
        leases = [be(i, 1, HOUR, i) for i in range(1, 4)]
        run = Run(cfg, plugins, leases=leases)
        if other_stream_first:
            run.rng("someone-else").random(100)
        run.run()
        return [l.extra["draw"] for l in leases]

    assert draws(1) == draws(1) == draws(1, other_stream_first=True)
    assert draws(1) != draws(2)


def test_policies_can_set_timers_on_the_run():
    """run.call_at(t, fn) makes t a decision point: fn runs then, followed by a cycle."""
    from lease_manager.config.schema import load_config
    from lease_manager.run import Run
    plugins = Plugins(entry_points=False)
    cfg = load_config(None, plugins.schema, ["simulation.resources=4 CPU:1 Memory:1024"])
    run = Run(cfg, plugins, leases=[be(1, 1, HOUR, 0)])
    seen = []
    run.call_at(90 * MIN, seen.append)
    run.run()
    assert seen == [90 * MIN]
    with pytest.raises(ValueError, match="past"):
        run.call_at(-1, seen.append)
