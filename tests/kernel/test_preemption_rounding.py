"""A lease is counted preempted when its plan runs shorter than its length (it runs in front
of an advance reservation and yields to it), not when the plan's span rounds below it."""

from __future__ import annotations

from lease_manager.kernel.lease import Lease, LeaseState, LeaseType, VMRequest

from support import simulate

#: a start and a length whose float sum, less the start, is 7e-13 s short of the length
#: (GreenPar's malleable leases hit such lengths: 437.988... s is SP's stretch x the work)
START, LENGTH = 29_639.0, 437.9881743192934


def test_a_reservation_that_rounds_short_is_not_a_preemption():
    """One best-effort lease on an empty site, no advance reservation anywhere:

        t        29,639 ─────────────── 30,076.988
        node 1   [ lease 1, 437.988 s ]

    Its reservation ends at 30,076.988174319293, and 30,076.988174319293 - 29,639 =
    437.98817431929274 in floats, 6.8e-13 s below its length. Nothing can preempt it, so it
    is preempted 0 times (before the fix: once, and the summary counted 5-28 preemptions a
    day in GreenPar's runs, which have no advance reservations)."""
    assert (START + LENGTH) - START < LENGTH   # the rounding the test is about
    lease = Lease(1, LeaseType.BEST_EFFORT, START, VMRequest.uniform(1, [1, 0]), LENGTH,
                  LENGTH)
    run = simulate([lease], "tracefile.vm-resources=CPU:1 Memory:0",
                   resources="1 CPU:1 Memory:1024")
    assert lease.state is LeaseState.DONE
    assert (lease.start, lease.end) == (START, START + LENGTH)
    assert lease.preemptions == 0
    assert run.summary["preemptions"] == 0


def test_a_lease_that_yields_to_a_reservation_is_still_a_preemption():
    """A best-effort lease of 1,000 s at 0 and an advance reservation of the only node at
    600 s: the lease runs in front of it and is preempted once (its plan, 0-600 s, is
    shorter than its length), then resumes after it.

        t        0 ──── 600 ──── 900 ────── 1,300
        node 1   [ 1 ]  [ AR 2 ]  [ 1, rest ]
    """
    be = Lease(1, LeaseType.BEST_EFFORT, 0.0, VMRequest.uniform(1, [1, 0]), 1000.0, 1000.0)
    ar = Lease(2, LeaseType.ADVANCE_RESERVATION, 0.0, VMRequest.uniform(1, [1, 0]), 300.0,
               300.0, start_request=600.0)
    simulate([be, ar], "tracefile.vm-resources=CPU:1 Memory:0",
             resources="1 CPU:1 Memory:1024")
    assert be.preemptions == 1 and be.state is LeaseState.DONE
