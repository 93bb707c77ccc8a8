"""No impossible plan reaches the slot table (issues 41 and 44): a reservation that starts
before now or before its lease arrived, an empty or reversed one, one at no finite time, or
one that never ends for a lease of finite length turns the lease away with a reason (rejected
if it never ran, failed otherwise) where its plan is committed, instead of a ``ValueError``
from the table that ended the run.

The planners give no such plan for any input we know of (the last one, an advance
reservation whose image cannot arrive in time, is rejected by the image-transfer planner
itself: ``test_image_transfer.py``). So each path is driven here by a planner made to return
one: the planner's answer for the lease under test is shifted by hand, and the test checks
that the lease is turned away with the reason, that the table holds nothing of it, and that
the other leases run as if it had never come.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.reservation import Reservation, ReservationKind
from lease_manager.kernel.scheduler.haizea_asap import HaizeaPlanner
from lease_manager.kernel.scheduler.image_transfer import TransferPlanner
from lease_manager.kernel.scheduler.placing import Placer, plan_fault
from lease_manager.kernel.scheduler.suspension import Suspender

from support import be, simulate

TWO_NODES = "2 CPU:1 Memory:1024"
PREFIX = "planning gave it an impossible plan: "


def _res(lease: Lease, start: float, end: float,
         kind: ReservationKind = ReservationKind.VM) -> Reservation:
    return Reservation(lease, start, end, np.array([0]), np.array([[1.0, 0.0]]), kind=kind)


def test_plan_fault_names_what_is_wrong_with_a_plan():
    """Each fault, on a 100 s lease that arrived at 10, planned at now = 20."""
    lease = be(1, 1, 100, 10)
    assert plan_fault(lease, [_res(lease, 20, 120)], 20) is None
    assert plan_fault(lease, [_res(lease, 20, 30, ReservationKind.TRANSFER),
                              _res(lease, 30, 130)], 20) is None
    cases = {
        (-54, 46): "its vm reservation would start at -54 s, before now (20 s)",
        (30, 30): "its vm reservation is an empty or reversed interval [30, 30)",
        (40, 30): "its vm reservation is an empty or reversed interval [40, 30)",
        (math.nan, 30): "its vm reservation starts at nan, not a time",
        (math.inf, math.inf): "its vm reservation starts at inf, not a time",
        (20, math.nan): "its vm reservation is an empty or reversed interval [20, nan)",
        (20, math.inf): "its vm reservation never ends, for a lease of 100 s",
    }
    for (start, end), message in cases.items():
        assert plan_fault(lease, [_res(lease, start, end)], 20) == message, (start, end)
    # the fault of a later reservation of the plan (an image sent in time, a VM before it)
    assert plan_fault(lease, [_res(lease, 20, 30, ReservationKind.TRANSFER),
                              _res(lease, 15, 30)], 20) == \
        "its vm reservation would start at 15 s, before now (20 s)"
    # before the arrival: only a planner called before the lease arrived can do that
    assert plan_fault(lease, [_res(lease, 5, 50)], 0) == \
        "its vm reservation would start at 5 s, before the lease arrived (10 s)"
    # an unlimited lease's reservation may be endless
    unlimited = Lease(2, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(1, [1, 0]), math.inf, None)
    assert plan_fault(unlimited, [_res(unlimited, 0, math.inf)], 0) is None


def _shift_place_at(monkeypatch, lease_id: int, fault: str, when=lambda start: True) -> None:
    """Make ``Placer.place_at`` answer lease ``lease_id`` with a reservation that has ``fault``."""
    original = Placer.place_at

    def place_at(self, lease, start, duration):
        res = original(self, lease, start, duration)
        if res is not None and lease.id == lease_id and when(start):
            if fault == "before-now":
                res.start = -74.0
            elif fault == "empty":
                res.end = res.start
            else:
                res.end = math.inf
        return res

    monkeypatch.setattr(Placer, "place_at", place_at)


def _lease_under_test(kind: str) -> Lease:
    vms = VMRequest.uniform(1, [1, 0])
    if kind == "immediate":
        return Lease(2, LeaseType.IMMEDIATE, 10, vms, 50, 50)
    if kind == "advance-reservation":
        return Lease(2, LeaseType.ADVANCE_RESERVATION, 10, vms, 50, 50, start_request=10)
    if kind == "deadline":
        return Lease(2, LeaseType.DEADLINE, 10, vms, 50, 50, start_request=10, deadline=200)
    return be(2, 1, 50, 10)


@pytest.mark.parametrize("kind", ["immediate", "best-effort", "advance-reservation",
                                  "deadline"])
@pytest.mark.parametrize("fault", ["before-now", "empty", "endless"])
def test_an_impossible_plan_from_any_planning_path_rejects_the_lease(monkeypatch, tmp_path,
                                                                     kind, fault):
    """Two nodes; #2 (1 VM, 50 s, arriving at 10) would run 10-60 on node 1, and #3 (1 VM,
    100 s, arriving at 20) would wait for it. #2's plan is made impossible: #2 is rejected at
    10 with the reason, holds nothing, and #3 starts at once::

        node 0  |#1 0-------------------100|
        node 1       |#3 20-------------------120|     (#2 rejected at 10)
                0    10 20                100  120
    """
    _shift_place_at(monkeypatch, 2, fault)
    leases = [be(1, 1, 100, 0), _lease_under_test(kind), be(3, 1, 100, 20)]
    run = simulate(leases, "accounting.decision-log=yes", resources=TWO_NODES)
    one, two, three = leases
    assert two.state.value == "rejected"
    assert two.reason.startswith(PREFIX + "its vm reservation "), two.reason
    assert two.start is None and two.allocations == []
    assert (one.start, one.end, three.start, three.end) == (0, 100, 20, 120)
    run.write(tmp_path)
    records = [json.loads(line) for line in
               (tmp_path / "decisions.jsonl").read_text().splitlines()]
    rejected = [r for r in records if r["lease"] == 2 and r["decision"] == "rejected"]
    assert len(rejected) == 1 and rejected[0]["t"] == 10
    assert rejected[0]["reason"] == two.reason


def test_an_impossible_image_transfer_rejects_a_best_effort_lease(monkeypatch):
    """#2 (1 VM, 50 s, 1,000 MB image: 80 s at 100 Mb/s) arrives at 10; its transfer would
    go 10-90 and it would run 90-140. Planned instead with its transfer at -70-10 (before
    now), it is rejected at 10; #3 (no image) arrives at 20 and starts at once::

        node 0  |#1 0--------------100|
        node 1        |#3 20-------------120|     (#2 rejected at 10)
    """
    original = TransferPlanner.plan_asap

    def plan_asap(self, lease, now, allow_future):
        found = original(self, lease, now, allow_future)
        if found is not None and lease.id == 2:
            transfer = found[0][0]
            assert transfer.kind == ReservationKind.TRANSFER
            transfer.start, transfer.end = -70.0, 10.0
        return found

    monkeypatch.setattr(TransferPlanner, "plan_asap", plan_asap)
    two = be(2, 1, 50, 10)
    two.extra.update({"disk-image": "a", "disk-image-size": 1000})
    leases = [be(1, 1, 100, 0), two, be(3, 1, 100, 20)]
    simulate(leases, "preparation.lease-preparation=imagetransfer", resources=TWO_NODES)
    assert two.state.value == "rejected"
    assert two.reason == PREFIX + "its transfer reservation would start at -70 s, before " \
                                  "now (10 s)"
    assert (leases[2].start, leases[2].end) == (20, 120)


def test_an_impossible_plan_from_haizeas_planning_rejects_the_lease(monkeypatch):
    """Haizea's planning (``suspendresume-model = haizea``), the same case as the first
    test with #2's plan made empty: #2 rejected at 10, #3 runs 20-120 on node 1."""
    original = HaizeaPlanner.plan

    def plan(self, lease, now, allow_future):
        found = original(self, lease, now, allow_future)
        if found is not None and lease.id == 2:
            found[0][-1].end = found[0][-1].start
        return found

    monkeypatch.setattr(HaizeaPlanner, "plan", plan)
    leases = [be(1, 1, 100, 0), be(2, 1, 50, 10), be(3, 1, 100, 20)]
    simulate(leases, "scheduling.suspendresume-model=haizea", resources=TWO_NODES)
    assert leases[1].state.value == "rejected"
    assert leases[1].reason.startswith(PREFIX + "its vm reservation is an empty")
    assert (leases[2].start, leases[2].end) == (20, 120)


def test_an_impossible_resumption_fails_a_suspended_lease(monkeypatch):
    """#1 (2 VMs of 320 MB, 100 s) runs from 0; the AR #2 (2 VMs, 50-100) arrives at 10, so
    #1 suspends 40-50 (320 MB at 32 MB/s on each node) and, planned again when its
    suspension ends, would resume 100-110 and run 110-170. That resumption plan is made to
    start at -74: #1, which has run, fails at 50 with the reason (it is not "rejected": it
    was accepted and ran 40 s)::

        node 0  |#1 0-40|s 40-50|#2 50------100|     (#1's resumption refused at 50)
        node 1  |#1 0-40|s 40-50|#2 50------100|
    """
    original = Suspender.resumption_plan

    def resumption_plan(self, lease, now, allow_future):
        plan = original(self, lease, now, allow_future)
        if plan:
            plan[0].start = -74.0
        return plan

    monkeypatch.setattr(Suspender, "resumption_plan", resumption_plan)
    leases = [be(1, 2, 100, 0, memory=320),
              Lease(2, LeaseType.ADVANCE_RESERVATION, 10, VMRequest.uniform(2, [1, 0]), 50, 50,
                    start_request=50)]
    simulate(leases, "scheduling.suspension=all",
             "scheduling.policy-preemption=ar-preempts-everything",
             "scheduling.suspend-rate=32", "scheduling.resume-rate=32", resources=TWO_NODES)
    one, two = leases
    assert (two.state.value, two.start, two.end) == ("done", 50, 100)
    assert (one.state.value, one.start, one.end) == ("failed", 0, 50)
    assert one.reason == PREFIX + "its resume reservation would start at -74 s, before now " \
                                  "(50 s)"
    assert [(r.kind.value, r.start, r.end) for r in one.allocations] == \
        [("vm", 0, 40), ("suspend", 40, 50)]


def test_an_impossible_migration_fails_a_suspended_lease(monkeypatch):
    """``migration = yes``. #1 (1 VM of 320 MB, 100 s) runs from 0 on node 0; the AR #2 (2
    nodes, 50-100) arrives at 10 and the AR #3 (1 node, 100-400) at 20. #1 suspends 40-50;
    planned again at 50, it resumes sooner on node 1 than on node 0 (free at 400): its memory
    would move 100-103.2 (320 MB at 100 MB/s), resume 103.2-113.2 and run 113.2-173.2. Its
    migration is made to start at -74: #1 fails at 50 with the reason::

        node 0  |#1 0-40|s 40-50|#2 50---100|#3 100-------------------400|
        node 1                  |#2 50---100|   (#1's migration here refused at 50)
    """
    original = Suspender.resumption_plan

    def resumption_plan(self, lease, now, allow_future):
        plan = original(self, lease, now, allow_future)
        if plan:
            assert [r.kind.value for r in plan] == ["migrate", "resume", "vm"]
            assert (plan[0].start, plan[0].end) == (100, 103.2)
            plan[0].start = -74.0
        return plan

    monkeypatch.setattr(Suspender, "resumption_plan", resumption_plan)

    def ar(lease_id, submit, vms, start, duration):
        return Lease(lease_id, LeaseType.ADVANCE_RESERVATION, submit,
                     VMRequest.uniform(vms, [1, 0]), duration, duration, start_request=start)

    leases = [be(1, 1, 100, 0, memory=320), ar(2, 10, 2, 50, 50), ar(3, 20, 1, 100, 300)]
    simulate(leases, "scheduling.suspension=all",
             "scheduling.policy-preemption=ar-preempts-everything", "scheduling.migration=yes",
             "scheduling.suspend-rate=32", "scheduling.resume-rate=32", resources=TWO_NODES)
    one, two, three = leases
    assert [(x.state.value, x.start, x.end) for x in (two, three)] == \
        [("done", 50, 100), ("done", 100, 400)]
    assert (one.state.value, one.end) == ("failed", 50)
    assert one.reason == PREFIX + "its migrate reservation would start at -74 s, before " \
                                  "now (50 s)"


def test_an_impossible_plan_when_a_reserved_lease_is_planned_again_fails_it(monkeypatch,
                                                                           tmp_path):
    """``reevaluation = replan``, one node: #1 (asks 100 s, runs 40) from 0; #2 (50 s) arrives
    at 10 and is reserved 100-150. #1 ends at 40 and #2 is planned again from 40, where it
    would run 40-90; that plan is made empty: #2, accepted and reserved, fails at 40::

        node 0  |#1 0--40|      (#2 reserved 100-150, refused when re-planned at 40)
    """
    _shift_place_at(monkeypatch, 2, "empty", when=lambda start: start == 40)
    leases = [be(1, 1, 100, 0, actual=40), be(2, 1, 50, 10)]
    run = simulate(leases, "scheduling.reevaluation=replan",
                   "scheduling.backfilling=conservative", "accounting.decision-log=yes",
                   resources="1 CPU:1 Memory:1024")
    one, two = leases
    assert (one.state.value, one.end) == ("done", 40)
    assert (two.state.value, two.start, two.end) == ("failed", None, 40)
    assert two.reason == PREFIX + "its vm reservation is an empty or reversed interval " \
                                  "[40, 40)"
    run.write(tmp_path)
    ended = [json.loads(line) for line in (tmp_path / "decisions.jsonl").read_text().splitlines()
             if '"ended"' in line and json.loads(line)["lease"] == 2]
    assert ended == [{"t": 40, "lease": 2, "decision": "ended", "state": "failed",
                      "reason": two.reason}]
    from lease_manager.experiments.explain import explain

    assert f"ended: failed ({two.reason})" in explain(tmp_path, 2)


# ------------------------------------------------------- the planners' own checks, by path
# Each path below could compute a time before now from a lease's own numbers; each planner
# refuses it itself, before any plan is committed.

def test_a_suspension_that_cannot_end_by_the_reservation_is_not_planned_in_the_past():
    """Suspension path. #1 (4 VMs of 1,024 MB, 1,000 s) runs from 0; the AR #2 (4 VMs,
    20-120) arrives at 10. Suspending #1 takes 32 s (1,024 MB at 32 MB/s), so it would start
    at 20 - 32 = -12, before now: #1 is not suspended but stopped at 10 and requeued (its
    work lost), and runs again after the AR::

        nodes 0-3  |#1 0-10|  |#2 20------120|#1 120------------------1120|
    """
    one = be(1, 4, 1000, 0, memory=1024)
    two = Lease(2, LeaseType.ADVANCE_RESERVATION, 10, VMRequest.uniform(4, [1, 0]), 100, 100,
                start_request=20)
    simulate([one, two], "scheduling.suspension=all",
             "scheduling.policy-preemption=ar-preempts-everything",
             "scheduling.suspend-rate=32", "scheduling.resume-rate=32")
    assert (two.state.value, two.start, two.end) == ("done", 20, 120)
    assert (one.state.value, one.end) == ("done", 1120)
    assert [(r.kind.value, r.start, r.end) for r in one.allocations] == \
        [("vm", 0, 10), ("vm", 120, 1120)]
    assert one.suspensions == 0


def test_a_deadline_lease_that_could_only_have_started_in_the_past_is_rejected():
    """Deadline path. #1 (100 s, deadline 150) arrives at 100: it would have to start by 50,
    before now; it is rejected, nothing is planned::

        node 0  (empty)     #1 would need 50-150; now is 100
    """
    lease = Lease(1, LeaseType.DEADLINE, 100, VMRequest.uniform(1, [1, 0]), 100, 100,
                  start_request=0, deadline=150)
    simulate([lease], resources="1 CPU:1 Memory:1024")
    assert (lease.state.value, lease.reason) == ("rejected", "cannot finish by its deadline 150")
    assert lease.allocations == []


def test_an_advance_reservation_whose_start_has_passed_is_rejected():
    """Advance-reservation path. #1 asks for 50-150 and arrives at 100: rejected, nothing
    planned (the image-transfer case of this path is in ``test_image_transfer.py``)::

        node 0  (empty)     #1 asked for 50-150; now is 100
    """
    lease = Lease(1, LeaseType.ADVANCE_RESERVATION, 100, VMRequest.uniform(1, [1, 0]), 100,
                  100, start_request=50)
    simulate([lease], resources="1 CPU:1 Memory:1024")
    assert (lease.state.value, lease.reason) == ("rejected",
                                                 "its start time 50 has already passed")
    assert lease.allocations == []
