"""A held lease is never lost: it is released eventually (also at the end of a trace), its
wait counts, and a real trace runs with the invariants checked, AUTO and non-AUTO."""

from __future__ import annotations

import pytest

import lease_manager
from lease_manager.config.schema import load_config
from lease_manager.kernel.lease import LeaseState
from lease_manager.run import Run
from lm_autonomic import AutonomicQueue

from lma_helpers import TRACE, Snapshots, lease, make_run, plugins

VM3 = (1.0, 1024.0, 0.0)
IO_SITE = "2 CPU:8 Memory:8192 IO:100"


def test_released_when_the_site_is_idle_even_if_7_3_never_holds():
    """z needs IO 300 > Total 200: 7.1-7.3 can never hold. It is the last lease of the trace;
    it waits for x to end, then the idle site takes it."""
    x = lease(1, 1, 100, 0, "CPU", vm=VM3)
    z = lease(2, 2, 10, 10, "IO", vm=VM3, req_IO=150)
    run = make_run([x, z], resources=IO_SITE)
    summary = run.run()
    assert z.state is LeaseState.DONE and z.start == 100 and z.wait == 90
    assert summary["autonomic_released_idle_site"] == 1
    assert summary["avg_wait"] == 45                 # the held time is wait
    assert "held_leases_force_released" not in summary


def test_several_unsatisfiable_leases_go_one_at_a_time():
    leases = [lease(1, 1, 100, 0, "CPU", vm=VM3)] + [
        lease(i, 2, 10, 10 + i, "IO", vm=VM3, req_IO=150) for i in (2, 3, 4)]
    run = make_run(leases, resources=IO_SITE)
    summary = run.run()
    assert all(l.state is LeaseState.DONE for l in leases)
    assert [l.start for l in leases[1:]] == [100, 110, 120]
    assert summary["autonomic_released_idle_site"] == 3
    assert summary["autonomic_still_prepending"] == 0


class NeverRelease(AutonomicQueue):
    """The autonomic policy with its release step removed: only the core's backstop is left."""

    name = "autonomic-never-release"

    def release(self, held, now):
        self._reconcile(now)
        return ()


class _Extra:
    @lease_manager.hookimpl
    def register_policies(self):
        return [NeverRelease]


def test_core_backstop_is_reconciled():
    snap = Snapshots()
    x = lease(1, 1, 100, 0, "CPU", vm=VM3)
    z = lease(2, 2, 10, 10, "IO", vm=VM3, req_IO=150)
    run = make_run([x, z], "scheduling.policy-queue=autonomic-never-release",
                   resources=IO_SITE, extra=[_Extra(), snap])
    summary = run.run()
    assert summary["held_leases_force_released"] == 1
    assert summary["autonomic_released_by_core"] == 1
    assert z.state is LeaseState.DONE and z.wait == 90
    assert summary["autonomic_monitored_jobs_left"] == 0


def _trace_run(queue: str, max_jobs: int, resources: str) -> Run:
    plug = plugins()
    config = load_config(None, plug.schema, [
        f"simulation.resources={resources}", f"tracefile.tracefile={TRACE}",
        "tracefile.vm-resources=CPU:1 Memory:1024", "tracefile.paradigm=cloud",
        f"tracefile.max-jobs={max_jobs}", "tracefile.annotators=thesis-workload",
        "accounting.probes=resource-contention", "accounting.check-invariants=yes",
        "scheduling.backfilling=aggressive", "scheduling.policy-host-selection=ea-consolidation",
        f"scheduling.policy-queue={queue}"])
    return Run(config, plug)


@pytest.mark.skipif(not TRACE.exists(), reason="traces/sdsc-blue-30days.swf is absent")
@pytest.mark.parametrize("resources", ["18 CPU:8 Memory:8192", "6 CPU:8 Memory:8192"])
def test_real_trace_auto_vs_nonauto(resources):
    """The first 500 jobs of the 30-day Blue excerpt (and on a third of the site, where many
    leases are held): every lease ends exactly once (the core's invariant check runs in
    ``run()``), nothing is left held or monitored, and the monitoring sums stay exact."""
    rows = {}
    for queue in ("fcfs", "autonomic"):
        run = _trace_run(queue, 500, resources)
        summary = run.run()
        run.table.check()
        rows[queue] = summary
        assert summary["leases_completed"] + summary["leases_rejected"] == \
            summary["leases_total"]
        assert "held_leases_force_released" not in summary
        if queue == "autonomic":
            policy = run.policies["queue"]
            policy.monitor.check()
            assert summary["autonomic_monitored_jobs_left"] == 0
            assert summary["autonomic_still_prepending"] == 0
            assert not policy.monitor.monitoring_data.values.any()
            released = (summary["autonomic_released_by_7_3"]
                        + summary["autonomic_released_idle_site"])
            assert released == summary["autonomic_prepending"]
    assert rows["fcfs"]["leases_completed"] == rows["autonomic"]["leases_completed"]
    if resources.startswith("6 "):
        assert rows["autonomic"]["autonomic_prepending"] > 0


@pytest.mark.skipif(not TRACE.exists(), reason="traces/sdsc-blue-30days.swf is absent")
@pytest.mark.parametrize("setting", [
    "autonomic.util=site", "autonomic.util=monitoring", "autonomic.requirements=vm",
    "autonomic.unmapped-demand=none", "autonomic.full-host-discount=no",
    "scheduling.policy-admission=autonomic-unsatisfiable"])
def test_real_trace_under_each_reading(setting):
    """300 real leases on a third of the site with IO and network bounded on every node,
    under each reading: the monitoring sums match MonitoredJobs at the end, every held lease
    is released (or, rejected as unsatisfiable, never admitted), nothing is left monitored."""
    plug = plugins()
    config = load_config(None, plug.schema, [
        "simulation.resources=6 CPU:8 Memory:8192 IO:100 Net-in:100 Net-out:100",
        f"tracefile.tracefile={TRACE}", "tracefile.vm-resources=CPU:1 Memory:1024",
        "tracefile.paradigm=cloud", "tracefile.max-jobs=300",
        "tracefile.annotators=thesis-workload", "accounting.check-invariants=yes",
        "scheduling.backfilling=aggressive", "scheduling.policy-host-selection=ea-consolidation",
        "scheduling.policy-queue=autonomic", setting])
    run = Run(config, plug)
    summary = run.run()
    policy = run.policies["queue"]
    policy.monitor.check()
    assert summary["autonomic_monitored_jobs_left"] == 0
    assert summary["autonomic_still_prepending"] == 0
    assert "held_leases_force_released" not in summary
    assert summary["autonomic_prepending"] == (summary["autonomic_released_by_7_3"]
                                               + summary["autonomic_released_idle_site"])
    assert summary["leases_completed"] + summary["leases_rejected"] == summary["leases_total"]
    unsatisfiable = sum(n for reason, n in summary["rejected_by_reason"].items()
                        if reason.startswith("inequalities 7.1-7.3 can never hold"))
    assert unsatisfiable == summary.get("autonomic_rejected_unsatisfiable", 0)
    if setting.endswith("unsatisfiable"):
        assert unsatisfiable > 0
