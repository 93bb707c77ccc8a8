"""Haizea's suspension and resumption times (``suspendresume-model = haizea``)."""

from __future__ import annotations

import numpy as np

from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.reservation import Reservation
from lease_manager.kernel.scheduler.haizea_resumption import HaizeaSuspendResume


def lease_on(vm_nodes: tuple[int, ...], memory: float) -> Reservation:
    lease = Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(len(vm_nodes), [1, memory]),
                  100)
    nodes = np.array(sorted(set(vm_nodes)))
    return Reservation(lease, 0, 100, nodes, np.ones((len(nodes), 2)), vm_nodes=vm_nodes)


def test_local_exclusion_spends_the_overhead_once_per_vm_in_each_round():
    """Three VMs of 1000 MB at 32 MB/s (31.25 s, rounded up to 32 s), two on node 0 and one on
    node 1, overhead 2 s. Round 1 (the first VM of each node): 32 s + 2 x 2 s = 36 s; round
    2 (node 0's second VM) cannot overlap it and follows: 32 s + 2 s. In all 70 s::

        node 0  |VM a 0----32|+4|VM b 36----68|+2|
        node 1  |VM c 0----32|+4|
    """
    model = HaizeaSuspendResume(1, 32.0, 32.0, "local", 2.0)
    assert model.suspend_time(lease_on((0, 0, 1), 1000)) == 70.0


def test_global_exclusion_and_overrides():
    """Global: every VM in turn, 32 s + 2 s each (102 s for three); an override of 0 leaves
    the overhead alone (2 s x 3 VMs on three nodes in one round: 6 s). Haizea's estimate of a
    whole lease is its VMs x (its whole memory / rate, rounded up, + overhead)."""
    res = lease_on((0, 1, 2), 1000)
    assert HaizeaSuspendResume(1, 32.0, 32.0, "global", 2.0).suspend_time(res) == 102.0
    model = HaizeaSuspendResume(1, 32.0, 32.0, "local", 2.0, suspend_override=0.0)
    assert model.suspend_time(res) == 6.0
    assert model.estimate(res.lease, 32.0, None) == 3 * (94 + 2)
    assert model.estimate(res.lease, 32.0, 0.0) == 0.0


def test_haizea_runs_a_best_effort_lease_in_front_of_any_reservation():
    """Two nodes, Haizea's model (VMs of 1,024 MB at 32 MB/s: 32 s to suspend or resume;
    threshold (1 + 1) x 32 s = 64 s). #1 (1 VM, 100 s) runs on node 0 from 0; #2 (2 VMs,
    100 s) at 1 reserves 100-200 on both nodes; #3 (1 VM, 300 s) at 2 cannot run to its end
    on node 1, but it can run until #2's reservation, 98 s >= 64 s: it runs 2-68, suspends
    68-100, resumes on node 1 at 200 (32 s) and runs its remaining 234 s. Haizea 1.0 gives
    the same (#3 from 2 to 466 on its second node)::

        node 0  |#1 0---------100|#2 100-200|
        node 1  |#3 2--68|susp|   |#2 100-200|res|#3 232--------466|
    """
    from support import be, simulate

    leases = [be(1, 1, 100, 0, memory=1024), be(2, 2, 100, 1, memory=1024),
              be(3, 1, 300, 2, memory=1024)]
    simulate(leases, "scheduling.suspendresume-model=haizea", "scheduling.suspension=all",
             "scheduling.suspend-rate=32", "scheduling.resume-rate=32",
             "scheduling.policy-preemption=no-preemption", "scheduling.reevaluation=replan",
             resources="2 CPU:1 Memory:1024")
    assert [(x.start, x.end) for x in leases] == [(0, 100), (100, 200), (2, 466)]
    assert [(str(r.kind), r.start, r.end) for r in leases[2].allocations] == [
        ("vm", 2, 68), ("suspend", 68, 100), ("resume", 200, 232), ("vm", 232, 466)]


def test_haizea_cancels_a_lease_that_has_not_run_its_threshold():
    """Haizea suspends a preempted lease only if it has run its scheduling threshold (64 s
    here) by the preemption: #1 (1 VM, 100 s) runs from 0; the AR #2 (both nodes, 50-150)
    arrives at 10. 50 s < 64 s: #1 is cancelled at 10 and requeued, losing its work, and runs
    again 150-250 (a partial run in front of the AR, 40 s, is under the threshold). Haizea 1.0
    gives the same (#1's last start 150, end 250)."""
    from lease_manager.kernel.lease import LeaseType as T

    from support import be, simulate

    leases = [be(1, 1, 100, 0, memory=1024),
              Lease(2, T.ADVANCE_RESERVATION, 10, VMRequest.uniform(2, [1, 1024]), 100, 100,
                    start_request=50)]
    simulate(leases, "scheduling.suspendresume-model=haizea", "scheduling.suspension=all",
             "scheduling.suspend-rate=32", "scheduling.resume-rate=32",
             "scheduling.policy-preemption=ar-preempts-everything",
             resources="2 CPU:1 Memory:1024")
    assert [(str(r.kind), r.start, r.end) for r in leases[0].allocations] == [
        ("vm", 0, 10), ("vm", 150, 250)]
    assert leases[0].suspensions == 0 and (leases[1].start, leases[1].end) == (50, 150)
