"""Malleable leases on hand-computed schedules: a running lease shrunk and grown twice, a
resize that does not fit, the migration's time and energy, and the invariant on work.

Site: 4 nodes of CPU 2 (a node: 2 cores). The lease has 4 VMs; their CPU amount says how many
share a node: CPU 0.5 -> 4 per node (1 node), CPU 1 -> 2 per node (2 nodes), CPU 2 -> 1 per
node (4 nodes). The test policy ``scripted`` gives the rates: 1 node 1.2, 2 nodes 2 (the
reference: the lease's 1 h of run time is at 2 nodes, so its work is 7,200 single-server
seconds), 4 nodes 3.
"""

from __future__ import annotations

import pytest

from lease_manager import Allocation, AllocationPolicy, hookimpl
from lease_manager.kernel.lease import LeaseState, VMRequest
from lease_manager.kernel.malleable import work_of
from lease_manager.observers.invariants import InvariantViolation
from lease_manager.plugins import Plugins

from support import HOUR, be, simulate

SITE = "4 CPU:2 Memory:1024"
RATE = {1: 1.2, 2: 2.0, 4: 3.0}


def shape(nodes: int) -> Allocation:
    """The lease's 4 VMs on ``nodes`` nodes."""
    return Allocation(VMRequest.uniform(4, [2.0 * nodes / 4, 0.0]), RATE[nodes], RATE[2])


class Scripted(AllocationPolicy):
    """Lease 1 starts on 2 nodes; at each time of ``script`` it gets that many nodes."""

    name = "scripted"
    script: dict[float, int] = {}

    def initial(self, lease, now):
        return shape(2) if lease.id == 1 else None

    def reallocate(self, now, reasons):
        lease = next((l for l in self.ctx.scheduler.running() if l.id == 1), None)
        if lease is not None and now in self.script:
            yield lease, shape(self.script[now])


class _Plugin:
    @hookimpl
    def register_policies(self):
        return [Scripted]


def run(leases, script, *settings, extra=()):
    Scripted.script = script
    plugins = Plugins(entry_points=False, extra=[_Plugin(), *extra])
    return simulate(leases, "malleable.policy-allocation=scripted", "malleable.epoch=600",
                    *settings, resources=SITE, plugins=plugins)


def four_vms(lease_id=1, requested=2 * HOUR, actual=HOUR, submit=0):
    return be(lease_id, 4, requested, submit, actual=actual, cpu=1)


def test_shrunk_and_grown_twice_with_migrations():
    """
    nodes  0:00      0:10      0:20      0:30      0:40                  1:06:42
    n0     [== 2 ===][m][1 ===][m][ 4 ===][m][1 ===][m][ 2 ===============]
    n1     [== 2 ===]          [m][ 4 ===]          [m][ 2 ===============]
    n2                         [m][ 4 ===]
    n3                         [m][ 4 ===]

    Every resize pauses progress 60 s ([m]). Work done (single-server seconds):
    0:00-0:10 at 2: 1,200; 0:11-0:20 at 1.2: 648 (1,848); 0:21-0:30 at 3: 1,620 (3,468);
    0:31-0:40 at 1.2: 648 (4,116); from 0:41 at 2 the remaining 3,084 take 1,542 s: the lease
    ends at 2,460 + 1,542 = 4,002 s.

    Power (100 W a node, the lease fills its nodes): 100 x (2x600 + 600 + 4x600 + 600 +
    2x1,602) = 800,400 J, plus migrations of 600 J per node gained or lost
    (1 + 3 + 3 + 1 = 8 nodes: 4,800 J), 805,200 J in all.
    """
    lease = four_vms()
    r = run([lease], {600: 1, 1200: 4, 1800: 1, 2400: 2}, "malleable.migration-time=60",
            "malleable.migration-energy=600", "power.pstates=1.0:0:100")
    assert lease.state is LeaseState.DONE
    assert (lease.start, lease.end) == (0, 4002)
    assert [(a.start, a.end, a.nodes.tolist()) for a in lease.allocations] == [
        (0, 600, [0, 1]), (600, 1200, [0]), (1200, 1800, [0, 1, 2, 3]), (1800, 2400, [0]),
        (2400, 4002, [0, 1])]
    m = lease.malleable
    assert m.resizes == 4 and m.migration_seconds == 240 and m.migration_joules == 4800
    assert [(t, n) for t, n, _, _ in m.history] == [(0, 2), (600, 1), (1200, 4), (1800, 1),
                                                    (2400, 2)]
    assert work_of(lease) == pytest.approx(7200)
    assert lease.work_done == pytest.approx(HOUR)   # in seconds at the reference allocation
    assert r.summary["energy_it_joules"] == pytest.approx(805_200)
    assert r.summary["resizes"] == 4 and r.summary["resizes_refused"] == 0
    assert r.summary["migration_joules"] == 4800


def test_without_migration_time_the_end_follows_the_rates():
    """
    n0  [2 ][1 ][4 ][1 ][2 .....]
    Work: 1,200 + 720 + 1,800 + 720 = 4,440 by 0:40; the remaining 2,760 at 2 take 1,380 s:
    the lease ends at 3,780 s. Its reservations from 0:40 were planned for the rest of its
    2 h request (14,400 - 4,440 = 9,960 at 2: until 7,380 s) and truncated at its end.
    """
    lease = four_vms()
    r = run([lease], {600: 1, 1200: 4, 1800: 1, 2400: 2})
    assert lease.end == 3780
    assert work_of(lease) == pytest.approx(7200)
    assert r.summary["resizes"] == 4


def test_plugins_hear_each_resize_with_the_old_and_new_allocation():
    """The ``lease_resized`` hook, on the schedule of the test above (2 -> 1 -> 4 -> 1 -> 2
    nodes at 0:10, 0:20, 0:30, 0:40, 4 VMs throughout): at each resize, a plugin sees the old
    nodes and VMs, and the new allocation already in place (``reservations[0]`` from now on,
    the rate of the new node count; the old one closed at now, last of ``allocations``)."""
    heard = []

    class Listener:
        @hookimpl
        def lease_resized(self, ctx, lease, old_nodes, old_vms, now):
            new = lease.reservations[0]
            heard.append((now, lease.id, old_nodes, old_vms, len(new.nodes), lease.vms.count,
                          new.start, lease.malleable.rate, lease.allocations[-1].end))

    run([four_vms()], {600: 1, 1200: 4, 1800: 1, 2400: 2}, extra=[Listener()])
    assert heard == [(600, 1, 2, 4, 1, 4, 600, 1.2, 600), (1200, 1, 1, 4, 4, 4, 1200, 3.0, 1200),
                     (1800, 1, 4, 4, 1, 4, 1800, 1.2, 1800),
                     (2400, 1, 1, 4, 2, 4, 2400, 2.0, 2400)]


def test_a_refused_resize_is_not_announced():
    """The resize to 4 nodes at 0:20 of the next test does not fit: no hook for it, one for
    the shrink at 0:30."""
    heard = []

    class Listener:
        @hookimpl
        def lease_resized(self, ctx, lease, old_nodes, old_vms, now):
            heard.append((now, old_nodes, len(lease.reservations[0].nodes)))

    run([four_vms(), be(2, 2, 900, 0, cpu=2), be(3, 2, 2 * HOUR, 900, cpu=2)],
        {1200: 4, 1800: 1}, extra=[Listener()])
    assert heard == [(1800, 2, 1)]


def test_a_resize_that_does_not_fit_changes_nothing():
    """Leases 2 (0:00-0:15) and 3 (0:15-2:15), 2 VMs of CPU 2 on nodes 2-3, leave no room
    for lease 1 to grow to 4 nodes at 0:20 (the table has forgotten the time before 0:15,
    when lease 1's reservation had begun: the refused change is undone all the same): lease 1
    runs on at 2 nodes. Its shrink at 0:30 (to 1 node) goes through: 1,800 x 2 = 3,600 by 0:30, the
    remaining 3,600 at 1.2 take 3,000 s: it ends at 4,800 s."""
    one, two, three = four_vms(), be(2, 2, 900, 0, cpu=2), be(3, 2, 2 * HOUR, 900, cpu=2)
    r = run([one, two, three], {1200: 4, 1800: 1})
    assert [(a.start, a.end, a.nodes.tolist()) for a in one.allocations] == [
        (0, 1800, [0, 1]), (1800, 4800, [0])]
    assert r.summary["resizes"] == 1 and r.summary["resizes_refused"] == 1
    assert r.summary["malleable_leases"] == 1
    assert three.start == 900


def test_leases_csv_history_and_columns(tmp_path):
    lease = four_vms()
    r = run([lease], {600: 1, 1200: 4})
    r.write(tmp_path)
    header, row = (tmp_path / "leases.csv").read_text().splitlines()
    assert header.endswith(",resizes,allocations,work_single_server")
    assert row.endswith(",2,0:2x4;600:1x4;1200:4x4,7200")


def test_the_invariant_checker_sees_work_done_twice():
    """A lease whose recorded rates do not add up to its work breaks the run's invariant."""

    class Liar(Scripted):
        name = "scripted"

        def reallocate(self, now, reasons):
            for lease, allocation in super().reallocate(now, reasons):
                # claim that the allocation so far ran twice as fast
                lease.malleable.segments[lease.reservations[0].id] = (4.0, 0.0)
                yield lease, allocation

    class _LiarPlugin:
        @hookimpl
        def register_policies(self):
            return [Liar]

    Liar.script = {600: 1}
    plugins = Plugins(entry_points=False, extra=[_LiarPlugin()])
    with pytest.raises(InvariantViolation, match="single-server seconds"):
        simulate([four_vms()], "malleable.policy-allocation=scripted", "malleable.epoch=600",
                 resources=SITE, plugins=plugins)


def test_a_migration_energy_needs_a_migration_time():
    from lease_manager.errors import ConfigError

    with pytest.raises(ConfigError, match="migration time"):
        run([four_vms()], {}, "malleable.migration-energy=10")
