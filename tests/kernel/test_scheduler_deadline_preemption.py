"""Deadline leases preempting (Haizea 1.1's ``deadline`` preemption policy), planned around
the victims' suspensions."""

from __future__ import annotations

import pytest

from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest
from lease_manager.plugins import Plugins
from lease_manager.policies.preemption import DeadlinePreemption

from support import be, simulate

SITE = "2 CPU:1 Memory:320"
SUSPEND = ("scheduling.suspend-rate=32", "scheduling.resume-rate=32",
           "scheduling.backfilling=aggressive")


def deadline(lease_id: int, vms: int, duration: float, submit: float, until: float,
             memory: float = 320) -> Lease:
    return Lease(lease_id, LeaseType.DEADLINE, submit, VMRequest.uniform(vms, [1, memory]),
                 duration, duration, start_request=submit, deadline=until)


def test_a_deadline_lease_preempts_a_best_effort_lease_around_its_suspension():
    """#1 (best-effort, 2 VMs of 320 MB, 1,000 s) runs from 0 on both nodes. #2 (deadline
    lease, 1 VM, 100 s) arrives at 50 with deadline 400: no slot ends by 400, so it preempts
    #1, which suspends in 320 MB / 32 MB/s = 10 s (one VM per node), and starts when the
    suspension is over, 60. #1 resumes on its nodes when both are free (160) in 10 s and
    runs its remaining 950 s::

        node 0  |#1 0----50|susp|#2 60--160|res|#1 170-------------1120|
        node 1  |#1 0----50|susp|          |res|#1 170-------------1120|
    """
    leases = [be(1, 2, 1000, 0, memory=320), deadline(2, 1, 100, 50, 400)]
    simulate(leases, *SUSPEND, "scheduling.policy-preemption=deadline", resources=SITE)
    assert (leases[1].start, leases[1].end) == (60, 160)
    assert (leases[0].start, leases[0].end) == (0, 1120)
    assert leases[0].suspensions == 1 and leases[0].state is LeaseState.DONE


def test_without_the_policy_the_deadline_lease_is_rejected():
    leases = [be(1, 2, 1000, 0, memory=320), deadline(2, 1, 100, 50, 400)]
    simulate(leases, *SUSPEND, "scheduling.policy-preemption=no-preemption", resources=SITE)
    assert leases[1].state is LeaseState.REJECTED
    assert leases[1].reason == "cannot finish by its deadline 400"


def test_deadline_policy_scores():
    """Best-effort leases first; a deadline lease only while it still meets its deadline
    after the preemptor (slack = (deadline - (now + preemptor's duration)) / remaining);
    advance reservations never."""
    policy = DeadlinePreemption.__new__(DeadlinePreemption)
    preemptor = deadline(9, 1, 100, 0, 500)
    relaxed = deadline(1, 1, 100, 0, 1000)      # (1000 - 100) / 100 = 9
    tight = deadline(2, 1, 100, 0, 150)         # 0 + 100 + 100 >= 150: not preemptable
    ar = Lease(3, LeaseType.ADVANCE_RESERVATION, 0, VMRequest.uniform(1, [1, 0]), 100, 100,
               start_request=10)
    assert policy.score(preemptor, be(4, 1, 100, 0), 0) == DeadlinePreemption.BEST_EFFORT
    assert policy.score(preemptor, relaxed, 0) == 9
    # as the scheduler asks: at the preemption time 100, with the victim's remaining time
    # (100), suspend (10) and resume (10) estimates: (1000 - (100 + 10 + 100 + 10)) / 100
    assert policy.score(preemptor, relaxed, 100, estimates=(100, 10, 10)) == 7.8
    assert policy.score(preemptor, relaxed, 800, estimates=(100, 10, 10)) is None   # 1020
    assert policy.score(preemptor, tight, 0) is None
    assert policy.score(preemptor, ar, 0) is None
    assert policy.score(be(5, 1, 10, 0), be(4, 1, 100, 0), 0) is None   # BE preempts nothing
    assert Plugins(entry_points=False).policy("preemption", "deadline") is DeadlinePreemption


def test_deadline_leases_preempting_on_a_real_trace(tmp_path):
    """The 600-request Blue Horizon excerpt (144 nodes, 1 VM per requested processor's node,
    1 GB per VM) with 40 deadline leases injected (16 nodes, 1 h, each 3 h before its
    deadline): without preemption 3 of them find no slot and are rejected; under the
    ``deadline`` policy all 40 are accepted, preempting (and suspending) 6 best-effort
    leases, and meet their deadlines; the run's invariants hold (checked by every run)."""
    from lease_manager.kernel.resources import parse_site
    from lease_manager.run import load_run
    from lease_manager.workload.lwf_writer import write_lwf

    from support import TRACES

    site = parse_site("144 CPU:1 Memory:1024")
    injected = [Lease(1000 + k, LeaseType.DEADLINE, 20_000.0 * k + 5_000,
                      VMRequest.uniform(16, [1, 1024]), 3600, 3600,
                      start_request=20_000.0 * k + 5_000, deadline=20_000.0 * k + 15_800)
                for k in range(40)]
    write_lwf(tmp_path / "deadlines.lwf", injected, site=site)
    config = tmp_path / "run.ini"
    config.write_text(f"""[simulation]
resources = 144 CPU:1 Memory:1024
[tracefile]
tracefile = {TRACES / 'sdsc-blue-600requests.swf'}
injectionfile = deadlines.lwf
vm-resources = CPU:1 Memory:1024
[scheduling]
policy-preemption = deadline
suspend-rate = 32
resume-rate = 32
""")
    summary = load_run(config).run()
    assert (summary["deadline_met"], summary["deadline_missed"]) == (40, 0)
    assert (summary["preemptions"], summary["suspensions"]) == (6, 6)
    summary = load_run(config, ["scheduling.policy-preemption=no-preemption"]).run()
    assert (summary["deadline_met"], summary["leases_rejected"]) == (37, 3)


# Deadline leases preempting deadline leases (Haizea 1.1's deadline4, deadline5 and deadline15
# workloads on 4 nodes of CPU:100 Memory:1024, one VM per node; a memory image is written or
# read in 1024 MB / 32 MB/s = 32 s).

NODES = "4 CPU:100 Memory:1024"
DEADLINE = (*SUSPEND, "scheduling.policy-preemption=deadline")


def windowed(lease_id: int, vms: int, duration: float, submit: float, earliest: float,
             until: float) -> Lease:
    """A deadline lease of ``vms`` whole nodes to run in ``[earliest, until]``."""
    return Lease(lease_id, LeaseType.DEADLINE, submit, VMRequest.uniform(vms, [100, 1024]),
                 duration, duration, start_request=earliest, deadline=until)


def test_a_deadline_lease_without_slack_is_not_preempted_deadline4():
    """Haizea 1.1's deadline4. #1 (30 min in [3600, 5400]) is planned at 3600 when it
    arrives. #2 (30 min in [3600, 6000]) arrives at 900: its window holds no free 30 min,
    and preempting #1 at 3600 would end #1 at 3600 + 32 + 1800 + 32 + 1800 = 7264, after its
    deadline 5400 (Haizea's DeadlinePolicy, at the preemption time with the suspend and resume
    estimates), so #1 is no victim and #2 is rejected (as Haizea's test expects). Before, #1
    was scored at 900 and requeued as a best-effort lease, and ran at once, 900-2700, before
    its earliest start::

        nodes 0-3  |          |#1 3600-------5400|
        (#2 rejected)
    """
    leases = [windowed(1, 4, 1800, 0, 3600, 5400), windowed(2, 4, 1800, 900, 3600, 6000)]
    simulate(leases, *DEADLINE, resources=NODES)
    assert (leases[0].start, leases[0].end, leases[0].preemptions) == (3600, 5400, 0)
    assert leases[1].state is LeaseState.REJECTED


def test_a_running_deadline_victim_resumes_by_its_deadline_deadline5():
    """Haizea 1.1's deadline5. #1 (1 h in [1800, 8100]) runs from 1800. #2 (30 min in
    [3600, 5400]) arrives at 2700 and must run 3600-5400: #1 (slack (8100 - (3600 + 32 +
    1800 + 32)) / 1800 > 0) suspends 3568-3600 with 1768 s done, and its resumption is
    planned at once on its nodes: 5400-5432, then its remaining 1832 s, ending 7264 <= 8100::

        nodes 0-3  |#1 1800---3568|susp|#2 3600----5400|res|#1 5432----7264|
    """
    leases = [windowed(1, 4, 3600, 0, 1800, 8100), windowed(2, 4, 1800, 2700, 3600, 5400)]
    simulate(leases, *DEADLINE, resources=NODES)
    assert (leases[1].start, leases[1].end) == (3600, 5400)
    assert (leases[0].start, leases[0].end) == (1800, 7264)
    assert leases[0].suspensions == 1 and leases[0].state is LeaseState.DONE


def test_a_preemption_that_would_make_a_victim_miss_its_deadline_is_refused_deadline15():
    """Haizea 1.1's deadline15. #1 and #2 (2 nodes, 1 h from 1800; deadlines 36,000 and
    14,400) run side by side 1800-5400; #3 (4 nodes, 3.5 h in [5400, 18000]) follows at
    5400. #4 (4 nodes, 15 min in [3600, 4500]) arrives at 1200: it would preempt #1 and #2
    at 3600, but #2 could then only run after #3, ending at 21,600 > 14,400, so the
    preemption is refused and #4 is rejected (Haizea's test expects exactly this). Before,
    #2 was requeued as a best-effort lease and missed its deadline::

        nodes 0-1  |#1 1800----5400|#3 5400------------18000|
        nodes 2-3  |#2 1800----5400|#3                      |
        (#4 rejected)
    """
    leases = [windowed(1, 2, 3600, 0, 1800, 36000), windowed(3, 4, 12600, 0, 5400, 18000),
              windowed(2, 2, 3600, 900, 1800, 14400), windowed(4, 4, 900, 1200, 3600, 4500)]
    run = simulate(leases, *DEADLINE, resources=NODES)
    one, three, two, four = leases
    assert [(x.start, x.end) for x in (one, two, three)] == [(1800, 5400), (1800, 5400),
                                                             (5400, 18000)]
    assert four.state is LeaseState.REJECTED
    assert all(x.preemptions == 0 for x in (one, two, three))
    assert run.summary["deadline_missed"] == 0


def test_a_planned_deadline_victim_is_planned_again_inside_its_window():
    """#1 (best-effort, 2 nodes, 10,000 s) runs from 0 on two nodes; #2 (deadline, 2
    nodes, 1,000 s in [500, 20000]) is planned 500-1500 on the other two. #3 (deadline, 4
    nodes, 1,000 s in [500, 1500]) arrives at 100 and needs every node 500-1500: #1 suspends
    by 500 (468-500), and #2 is planned again in its window, at 1500, after #3::

        nodes 0-1  |#1 0-----468|susp|#3 500---1500| ... #1 resumes
        nodes 2-3  |            |    |#3 500---1500|#2 1500---2500|
    """
    leases = [be(1, 2, 10000, 0, cpu=100, memory=1024), windowed(2, 2, 1000, 0, 500, 20000),
              windowed(3, 4, 1000, 100, 500, 1500)]
    simulate(leases, *DEADLINE, resources=NODES)
    first, second, third = leases
    assert (third.start, third.end) == (500, 1500)
    assert (second.start, second.end, second.preemptions) == (1500, 2500, 1)
    assert first.suspensions == 1 and first.state is LeaseState.DONE


def test_the_invariants_catch_an_early_start_and_a_missed_deadline():
    """The checker reports a lease started before its requested start and a deadline lease
    that completed after its deadline."""
    import numpy as np

    from lease_manager.observers.invariants import InvariantChecker, InvariantViolation

    checker = InvariantChecker(np.ones((1, 2)))
    early = windowed(1, 1, 100, 0, 500, 1000)
    checker.lease_started(None, early, 400)   # type: ignore[arg-type]
    late = windowed(2, 1, 100, 0, 0, 1000)
    late.state, late.end = LeaseState.DONE, 1100.0
    checker.lease_ended(None, late, 1100)   # type: ignore[arg-type]
    with pytest.raises(InvariantViolation) as caught:
        checker.verify()
    assert "lease 1 started at 400, before the earliest start 500" in str(caught.value)
    assert "deadline lease 2 ended at 1100.0, after its deadline 1000" in str(caught.value)


def test_a_running_deadline_victim_that_cannot_suspend_runs_again_whole_in_its_window():
    """Without suspension, #1 (deadline, 4 nodes, 1 h in [0, 20000]) running from 0 is
    cancelled when #2 (4 nodes, 15 min in [1000, 1900]) arrives at 500, and is planned again
    whole, after #2 (its nodes counted as held until #2 starts)::

        nodes 0-3  |#1 0--500 (lost)|      |#2 1000--1900|#1 1900-------5500|
    """
    leases = [windowed(1, 4, 3600, 0, 0, 20000), windowed(2, 4, 900, 500, 1000, 1900)]
    simulate(leases, *DEADLINE, "scheduling.suspension=none", resources=NODES)
    first, second = leases
    assert (second.start, second.end) == (1000, 1900)
    assert (first.end, first.preemptions, first.suspensions) == (5500, 1, 0)
    assert first.state is LeaseState.DONE
