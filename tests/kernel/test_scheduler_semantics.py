"""Haizea's lease semantics on hand-computed schedules: advance reservations, preemption with
suspension and resumption, immediate and deadline leases, cancellation.

Site: 4 nodes of CPU 100, Memory 1024; a VM takes a whole node (CPU 100, Memory 1024);
suspend and resume rates 32 MB/s (a VM suspends or resumes in 32 s); aggressive backfilling.
"""

from __future__ import annotations

import pytest

from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest

from support import HOUR, MIN, simulate

NODE = [100, 1024]
SITE = "4 CPU:100 Memory:1024"


def lease(lease_id: int, kind: LeaseType, vms: int, duration: float, submit: float, *,
          start: float | None = None, deadline: float | None = None,
          actual: float | None = None) -> Lease:
    return Lease(lease_id, kind, submit, VMRequest.uniform(vms, NODE), duration,
                 duration if actual is None else actual, start_request=start, deadline=deadline)


def be(i, vms, duration, submit, **kw):
    return lease(i, LeaseType.BEST_EFFORT, vms, duration, submit, **kw)


def ar(i, vms, start, duration, submit):
    return lease(i, LeaseType.ADVANCE_RESERVATION, vms, duration, submit, start=start)


def run(leases, *settings):
    return simulate(leases, "scheduling.backfilling=aggressive", *settings, resources=SITE)


def segments(l: Lease) -> list[tuple[str, float, float]]:
    return [(r.kind, r.start, r.end) for r in l.allocations]


def test_ar_preempts_a_running_lease_which_is_suspended_and_resumed():
    """
    n0  [BE 0:00 ---- 0:29:28][susp][AR 0:30-1:00][resume 1:00:00-1:00:32][BE ----- 1:31:04]
    n1-3                            [AR 0:30-1:00]

    The suspension is planned to end exactly when the AR starts: 1024 MB / 32 MB/s = 32 s
    before 0:30. The BE lease did 29 min 28 s of work and runs the remaining 30 min 32 s after
    resuming: it completes at 1:31:04 with its full hour of work done.
    """
    b, a = be(1, 1, HOUR, 0), ar(2, 4, 30 * MIN, 30 * MIN, 15 * MIN)
    r = run([b, a])
    assert (a.start, a.end) == (30 * MIN, HOUR)
    assert segments(b) == [("vm", 0, 1768), ("suspend", 1768, 1800),
                           ("resume", 3600, 3632), ("vm", 3632, 5464)]
    assert (b.start, b.end, b.state) == (0, 5464, LeaseState.DONE)
    assert sum(s.end - s.start for s in b.allocations if s.kind == "vm") == HOUR
    assert (b.preemptions, b.suspensions, b.time_suspended) == (1, 1, 3632 - 1768)
    assert r.summary["ar_accepted"] == 1 and r.summary["suspensions"] == 1


def test_without_suspension_the_preempted_lease_is_cancelled_and_requeued():
    """suspension = none: the BE lease is cancelled when the AR is accepted (0:15), requeued,
    and reruns its whole hour after the AR: 1:00-2:00."""
    b, a = be(1, 1, HOUR, 0), ar(2, 4, 30 * MIN, 30 * MIN, 15 * MIN)
    run([b, a], "scheduling.suspension=none")
    assert segments(b) == [("vm", 0, 15 * MIN), ("vm", HOUR, 2 * HOUR)]
    assert (b.start, b.end) == (0, 2 * HOUR) and b.preemptions == 1 and b.suspensions == 0
    assert (a.start, a.end) == (30 * MIN, HOUR)


def test_without_preemption_the_ar_is_rejected():
    b, a = be(1, 1, HOUR, 0), ar(2, 4, 30 * MIN, 30 * MIN, 15 * MIN)
    r = run([b, a], "scheduling.policy-preemption=no-preemption")
    assert a.state is LeaseState.REJECTED and "not free" in a.reason
    assert (b.start, b.end) == (0, HOUR)
    assert r.summary["ar_rejected"] == 1


def test_eight_leases_of_the_whole_site_run_back_to_back():
    leases = [be(i, 4, 15 * MIN, 0) for i in range(1, 9)]
    run(leases)
    assert [(l.start, l.end) for l in leases] == [
        (i * 15 * MIN, (i + 1) * 15 * MIN) for i in range(8)]


def test_ar_preempts_a_future_reservation_which_is_requeued():
    """#1 (4 nodes, 0:00-1:00) runs; #2 (4 nodes, 30 min) reserves 1:00-1:30; an AR for
    1:00-1:20 arrives at 0:10 and takes 1:00; #2 is requeued and runs 1:20-1:50."""
    first, second, a = be(1, 4, HOUR, 0), be(2, 4, 30 * MIN, 0), ar(3, 4, HOUR, 20 * MIN, 10 * MIN)
    run([first, second, a])
    assert (a.start, a.end) == (HOUR, 80 * MIN)
    assert (second.start, second.end) == (80 * MIN, 110 * MIN) and second.preemptions == 1


def test_ar_in_a_free_interval_preempts_nothing_and_past_starts_are_rejected():
    b, a, late = be(1, 2, HOUR, 0), ar(2, 2, 10 * MIN, 20 * MIN, 0), ar(3, 1, 0, MIN, 5 * MIN)
    r = run([b, a, late])
    assert (a.start, a.end) == (10 * MIN, 30 * MIN) and b.preemptions == 0
    assert late.state is LeaseState.REJECTED and "passed" in late.reason
    assert r.summary["preemptions"] == 0


def test_ar_preempts_the_youngest_lease_first():
    """Two 2-node BE leases run; an AR needs 2 nodes: the younger (#2, submitted later) is
    preempted, the older keeps running."""
    old, young = be(1, 2, HOUR, 0), be(2, 2, HOUR, 5 * MIN)
    a = ar(3, 2, 30 * MIN, 10 * MIN, 20 * MIN)
    run([old, young, a])
    assert old.preemptions == 0 and (old.start, old.end) == (0, HOUR)
    assert young.preemptions == 1


def test_global_exclusion_serialises_suspensions_across_nodes():
    """A 2-VM lease (on two nodes) suspends one VM after the other with global exclusion (64 s),
    both at once with local exclusion (32 s); it resumes after the AR (0:30-0:40) the same way
    and runs the rest of its hour: local ends at 0:40 + 32 s + (1 h - 29:28) = 4264 s, global
    at 0:40 + 64 s + (1 h - 28:56) = 4328 s."""
    for exclusion, suspend in (("local", 32), ("global", 64)):
        b, a = be(1, 2, HOUR, 0), ar(2, 4, 30 * MIN, 10 * MIN, 1)
        run([b, a], f"scheduling.suspendresume-exclusion={exclusion}")
        assert segments(b)[:2] == [("vm", 0, 1800 - suspend), ("suspend", 1800 - suspend, 1800)]
        assert b.end == 40 * MIN + suspend + (HOUR - (1800 - suspend)) == \
            {32: 4264, 64: 4328}[suspend]


def test_serial_only_suspends_one_vm_leases_and_cancels_the_others():
    one, two = be(1, 1, HOUR, 0), be(2, 2, HOUR, 0)
    a = ar(3, 4, 30 * MIN, 10 * MIN, MIN)
    run([one, two, a], "scheduling.suspension=serial-only")
    assert one.suspensions == 1 and one.preemptions == 1
    assert two.suspensions == 0 and two.preemptions == 1
    assert segments(two) == [("vm", 0, MIN), ("vm", 40 * MIN, 100 * MIN)]


def test_immediate_leases_start_now_or_are_rejected():
    """#1 takes 3 nodes; #2 (immediate, 1 node) starts at once; #3 (immediate, 1 node) finds
    no room and is rejected, never queued."""
    first = be(1, 3, HOUR, 0)
    now1 = lease(2, LeaseType.IMMEDIATE, 1, 10 * MIN, MIN)
    now2 = lease(3, LeaseType.IMMEDIATE, 1, 10 * MIN, 2 * MIN)
    r = run([first, now1, now2])
    assert (now1.start, now1.end) == (MIN, 11 * MIN)
    assert now2.state is LeaseState.REJECTED
    assert r.summary["immediate_accepted"] == 1 and r.summary["immediate_rejected"] == 1


def test_deadline_leases_move_within_their_windows_to_make_room():
    """#1 holds the site 0:00-1:00. #2 (4 nodes, 30 min, deadline 2:00) gets 1:00-1:30.
    #3 (30 min, deadline 1:45) fits only if #2 moves: #3 takes 1:00-1:30 and #2 slides to
    1:30-2:00, still by its deadline. #4 (1 h, deadline 3:00) gets 2:00-3:00. #5 (1 h,
    deadline 2:30) cannot fit even if the others move: rejected, and nothing moves.

    n0-3 [#1 0:00-1:00][#3 1:00-1:30][#2 1:30-2:00][#4 2:00-3:00]
    """
    first = be(1, 4, HOUR, 0)
    d2 = lease(2, LeaseType.DEADLINE, 4, 30 * MIN, MIN, start=0, deadline=2 * HOUR)
    d3 = lease(3, LeaseType.DEADLINE, 4, 30 * MIN, 2 * MIN, start=0, deadline=105 * MIN)
    d4 = lease(4, LeaseType.DEADLINE, 4, HOUR, 3 * MIN, start=0, deadline=3 * HOUR)
    d5 = lease(5, LeaseType.DEADLINE, 4, HOUR, 4 * MIN, start=0, deadline=150 * MIN)
    r = run([first, d2, d3, d4, d5])
    assert (d3.start, d3.end) == (HOUR, 90 * MIN)
    assert (d2.start, d2.end) == (90 * MIN, 2 * HOUR)
    assert (d4.start, d4.end) == (2 * HOUR, 3 * HOUR)
    assert d5.state is LeaseState.REJECTED and "deadline" in d5.reason
    assert r.summary["deadline_met"] == 3 and r.summary["deadline_missed"] == 0


def test_shutdown_time_is_added_to_best_effort_and_carved_out_of_ars():
    """shutdown-time 60 s: a 10-minute BE lease holds its node 10 min + 60 s; an AR keeps
    exactly its interval (its work gets the interval minus the shutdown)."""
    b = be(1, 4, 10 * MIN, 0)
    a = ar(2, 4, 20 * MIN, 10 * MIN, 0)
    run([b, a], "scheduling.shutdown-time=60")
    assert (b.start, b.end) == (0, 11 * MIN)
    assert (a.start, a.end) == (20 * MIN, 30 * MIN)


def test_migration_resumes_elsewhere_when_that_is_earlier():
    """#1 (1 node, 1 h) runs on n0; #2 holds n1-n3 0:00-0:45. An AR for 1 node, 0:30-2:00,
    arrives at 0:01: every node is busy at 0:30, so #1 (the older-id of two equally young
    leases) is suspended and the AR takes n0. Without migration #1 resumes on n0 at 2:00; with
    migration its 1024 MB image moves at 100 MB/s (10.24 s) to n1, free from 0:45.

    n0  [#1 0:00-0:29:28][susp][AR 0:30 ------------------------ 2:00][resume][#1 ...]  (no)
    n1  [#2 0:00 ------------ 0:45][migrate][resume][#1 ...]                           (yes)
    """
    for migration, resumed in (("no", 2 * HOUR), ("yes", 45 * MIN)):
        b = be(1, 1, HOUR, 0)
        blocker = be(2, 3, 45 * MIN, 0)
        a = ar(3, 1, 30 * MIN, 90 * MIN, MIN)
        run([b, blocker, a], f"scheduling.migration={migration}",
            "scheduling.migration-bandwidth=100", "scheduling.policy-host-selection=no-policy")
        kinds = [seg[0] for seg in segments(b)]
        assert b.state is LeaseState.DONE and b.suspensions == 1
        first_after = next(seg for seg in segments(b) if seg[0] in ("migrate", "resume"))
        assert first_after[1] == resumed
        assert ("migrate" in kinds) == (migration == "yes")
        if migration == "yes":
            assert segments(b)[2] == ("migrate", 45 * MIN, 45 * MIN + 10.24)
        assert sum(e - s for k, s, e in segments(b) if k == "vm") == HOUR


@pytest.mark.parametrize("backfilling, first_vms, state_at_cancel", [
    ("off", 3, LeaseState.QUEUED),           # #2 waits at the head of the queue
    ("conservative", 3, LeaseState.SCHEDULED),  # #2 holds a reservation for 1:00-2:00
    ("conservative", 2, LeaseState.ACTIVE),  # #2 runs from 0:00
])
def test_cancellation_in_any_state_frees_the_schedule(backfilling, first_vms, state_at_cancel):
    """#1 holds 3 (or 2) nodes 0:00-1:00; #2 (2 nodes, 1 h) arrives at 0:00; #3 (4 nodes,
    10 min) at 0:02 waits behind them. #2 is cancelled at 0:05, wherever it is; #3 then starts
    when #1 ends, at 1:00."""
    from lease_manager.config.schema import load_config
    from lease_manager.plugins import Plugins
    from lease_manager.run import Run

    first, second, third = be(1, first_vms, HOUR, 0), be(2, 2, HOUR, 0), be(3, 4, 10 * MIN, 2 * MIN)
    plugins = Plugins(entry_points=False)
    cfg = load_config(None, plugins.schema, [f"simulation.resources={SITE}",
                                             f"scheduling.backfilling={backfilling}"])
    r = Run(cfg, plugins, leases=[first, second, third])
    seen = {}

    def cancel_second(now):
        seen["state"] = second.state
        r.scheduler.cancel(second, now)

    r.engine.call_at(5 * MIN, cancel_second)
    r.run()
    r.table.check()
    assert seen["state"] is state_at_cancel
    assert second.state is LeaseState.CANCELLED and second.end == 5 * MIN
    assert third.start == HOUR
    assert r.summary["leases_cancelled"] == 1 and r.summary["leases_completed"] == 2


LWF = __import__("support").ROOT / "tests" / "lwf"


@pytest.mark.parametrize("workload, settings, expected", [
    # the AR suspends the BE lease 0:29:28-0:30, which resumes 1:00:00-1:00:32 and ends 1:31:04
    ("ar-preempts-running-be", [], {"1": (0, 5464), "2": (1800, 3600)}),
    # no suspension: cancelled at 0:15, requeued, reruns 1:00-2:00
    ("ar-preempts-running-be", ["scheduling.suspension=none"],
     {"1": (0, 7200), "2": (1800, 3600)}),
    # no preemption: the AR is rejected
    ("ar-preempts-running-be", ["scheduling.policy-preemption=no-preemption"],
     {"1": (0, 3600), "2": None}),
    ("eight-whole-site-leases", [],
     {str(i): ((i - 1) * 900, i * 900) for i in range(1, 9)}),
])
def test_lwf_workloads_replay_as_computed_by_hand(workload, settings, expected, tmp_path):
    """The issue's scenarios as LWF files (tests/lwf/), replayed through a configuration."""
    import csv
    import subprocess
    import sys
    ini = tmp_path / "run.ini"
    ini.write_text(f"[simulation]\nresources = {SITE}\n[tracefile]\n"
                   f"tracefile = {LWF / (workload + '.lwf')}\n"
                   "[scheduling]\nbackfilling = aggressive\n")
    sets = [arg for s in settings for arg in ("--set", s)]
    subprocess.run([sys.executable, "-m", "lease_manager.cli", "simulate", str(ini), "-q",
                    "--out", str(tmp_path / "out"), *sets], check=True)
    with (tmp_path / "out" / "leases.csv").open() as fh:
        rows = {r["source_id"]: r for r in csv.DictReader(fh)}
    for source_id, times in expected.items():
        row = rows[source_id]
        if times is None:
            assert row["state"] == "rejected"
        else:
            assert (float(row["start"]), float(row["end"])) == times, source_id


def test_a_pending_resumption_moves_up_when_a_lease_ends_early():
    """#1 (1 node) is suspended for an AR on n0 (0:30-1:00); #2 (3 nodes, reserved 2 h but
    ending at 0:40) holds n1-n3; #1's resumption waits for n0 at 1:00. Nothing frees n0
    earlier, so it stays at 1:00; but with migration, #2's early end lets it move to 0:40 on n1.
    """
    b = be(1, 1, HOUR, 0)
    other = be(2, 3, 2 * HOUR, 0, actual=40 * MIN)
    a = ar(3, 1, 30 * MIN, 30 * MIN, MIN)
    run([b, other, a], "scheduling.migration=yes", "scheduling.migration-bandwidth=100",
        "scheduling.policy-host-selection=no-policy")
    first_after = next(seg for seg in segments(b) if seg[0] in ("migrate", "resume"))
    assert first_after[1] == 40 * MIN


def test_a_price_above_the_users_maximum_is_rejected_by_the_user():
    """constant pricing, 2 per CPU-hour with CPU:100 per core (cpu-unit 100): a 1-VM, 1-hour
    lease costs 2. A user willing to pay 1.5 rejects it; one willing to pay 3 runs, and the
    revenue is 2."""
    cheap, fine = be(1, 1, HOUR, 0), be(2, 1, HOUR, 0)
    cheap.max_price, fine.max_price = 1.5, 3.0
    r = run([cheap, fine], "scheduling.policy-pricing=constant", "pricing.rate=2",
            "pricing.cpu-unit=100")
    assert cheap.state is LeaseState.REJECTED and "rejected by the user" in cheap.reason
    assert fine.state is LeaseState.DONE and fine.price == 2.0
    assert r.summary["revenue"] == 2.0


@pytest.mark.parametrize("factor, runs_before_the_ar", [(1, True), (100, False)])
def test_a_lease_may_run_in_front_of_an_ar_and_suspend_before_it(factor, runs_before_the_ar):
    """An AR holds all 4 nodes 1:00-1:30 (submitted at 0:00). A 1-node, 1-hour BE lease
    arriving at 0:00:01 cannot finish before 1:00. With F = 1 the 3,599 s slot is longer than
    (1 + 1) x (32 + 32) s, so it runs now, suspends 0:59:28-1:00 and resumes at 1:30 for its
    last 33 s of work: 1:30:00-1:30:32 resume, done at 1:31:05. With F = 100 the slot is too
    short (6,464 s needed): it waits for a reservation after the AR and runs 1:30-2:30.

    n0  [BE 0:00:01 --- 0:59:28][susp][AR 1:00-1:30][resume][BE 33 s]
    n1-3                              [AR 1:00-1:30]
    """
    a, b = ar(1, 4, HOUR, 30 * MIN, 0), be(2, 1, HOUR, 1)
    run([a, b], f"scheduling.scheduling-threshold-factor={factor}")
    if runs_before_the_ar:
        assert segments(b) == [("vm", 1, 3568), ("suspend", 3568, 3600),
                               ("resume", 5400, 5432), ("vm", 5432, 5465)]
        assert b.suspensions == 1 and b.preemptions == 1   # it yields to the AR, as planned
    else:
        assert segments(b) == [("vm", 90 * MIN, 150 * MIN)] and b.suspensions == 0
    assert (a.start, a.end) == (HOUR, 90 * MIN)


def test_a_reservation_moved_from_a_fractional_time_keeps_its_whole_length():
    """One node, conservative. #1 reserves 0.3 s but ends at 0.1; #2 (0.6 s) was promised
    0.3 and moves to 0.1. Its reservation's length, taken as 0.9 - 0.3, is an ulp short of
    0.6 in floating point: the moved reservation must still last the whole 0.6 s, or the
    work outlives it and the lease is never ended (it was left active for ever).

    planned  n0 [#1 0-0.3][#2 0.3-0.9]
    actual   n0 [#1 0-0.1][#2 0.1-0.7]
    """
    one = be(1, 1, 0.3, 0, actual=0.1)
    two = be(2, 1, 0.6, 0)
    simulate([one, two], "scheduling.backfilling=conservative",
             resources="1 CPU:100 Memory:1024")
    assert two.state is LeaseState.DONE and (two.start, two.end) == (0.1, 0.7)


def test_an_advance_reservation_with_a_shutdown_ends_with_its_interval():
    """shutdown-time 0.1 s: an AR of 0.5 s from 0.2 runs its work for 0.5 - 0.1 s, then shuts
    down. In floating point 0.2 + (0.5 - 0.1) + 0.1 is above 0.2 + 0.5: the lease must still
    end at its interval's end, 0.7.

    n0 [AR 0.2 -- work -- 0.6][shutdown 0.6-0.7]
    """
    a = ar(1, 1, 0.2, 0.5, 0)
    run([a], "scheduling.shutdown-time=0.1")
    assert a.state is LeaseState.DONE and (a.start, a.end) == (0.2, 0.7)


@pytest.mark.parametrize("threshold, runs_before_the_ar", [(3599, True), (3600, False)])
def test_a_forced_scheduling_threshold_replaces_the_factor(threshold, runs_before_the_ar):
    """As above with F = 100 (6,464 s needed), but Haizea's force-scheduling-threshold sets
    the shortest slot: the 3,599 s slot is long enough for a threshold of 3,599 s (it runs in
    front of the AR), not for 3,600 s (it waits until 1:30)."""
    a, b = ar(1, 4, HOUR, 30 * MIN, 0), be(2, 1, HOUR, 1)
    run([a, b], "scheduling.scheduling-threshold-factor=100",
        f"scheduling.force-scheduling-threshold={threshold}")
    assert (segments(b)[0] == ("vm", 1, 3568)) is runs_before_the_ar
