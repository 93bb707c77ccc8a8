"""Deadline leases preempting (Haizea 1.1's ``deadline`` preemption policy), planned around
the victims' suspensions."""

from __future__ import annotations

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
