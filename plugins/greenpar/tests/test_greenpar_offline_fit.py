"""Why Offline's jobs can wait although its plan starts each on arrival: the MILP of Fig. 3
has no limit on how often a job's servers change, so its plan may change a job twice within
``[greenpar] resize-interval``; the run keeps the hourly limit, the job holds the servers the
plan had given to the next arrival, and that job does not fit (section 3.1's revert)."""

from __future__ import annotations

import pytest

from lmg_helpers import allocations, green, job, simulate, speedups

#: SP(n, V) of app "A": on 2N VMs, 2 servers are as efficient as 1 (100 J per single-server
#: second at 100 W a server), 4 servers a third less (133 J); 4N VMs on 2 servers are below
#: the SLA's rate (1.6 for N = 2, F = 1.25), so 2N VMs are the only plan that keeps it
TABLE = {"A": {4: {1: 1.0, 2: 2.0, 4: 3.0}, 8: {2: 1.5, 4: 2.9}}}


def run(tmp_path, interval: float, sun: float = 400, *settings: str):
    table = speedups(tmp_path / "sp.csv", TABLE)
    solar = green(tmp_path / "solar", [(0, 0), (900, sun), (1800, 0)])
    a, b = job(1, "A", 2, 4000), job(2, "A", 2, 1000, submit=2000)
    r = simulate([a, b], "offline", f"greenpar.speedups={table}", "greenpar.slowdown=1.25",
                 "greenpar.beta=1", f"greenpar.resize-interval={interval:g}", *settings,
                 servers=4, solar=solar)
    return a, b, r


def test_the_plan_changes_a_job_within_the_hourly_limit_and_the_next_job_waits(tmp_path):
    """4 servers drawing 0 W asleep and 100 W busy, 400 W of sun in [900, 1,800) only,
    brown at $0.1/kWh, F = 1.25, 15-minute epochs, beta = 1 (an hour of average run time
    costs $0.01), section 3.1's revert at arrivals (the default). A (N = 2, 4,000 s at N:
    work 8,000, SLA rate 1.6) arrives at 0; B (N = 2, 1,000 s at N: work 2,000) at 2,000.

    The MILP (solved for real): A on 2 servers, 4 in the sunny epoch (2,700 of work on
    green), then 2 again beside B: A 2, 4, 2, 2 (work 1,800 + 2,700 + 1,800 + 1,800), B 2, 2
    from its arrival. Brown by the MILP's count 540 kJ for A (epoch 0 and epochs 2-3 on 2)
    against 720 kJ ($0.005 more) for A on 4 throughout, which ends one epoch sooner but saves
    only $0.00125 of run time (a quarter hour, halved over two jobs): it plans A's change at
    900 and back at 1,800, 900 s apart. Capacity: epoch 2 holds A 2 + B 2 = 4.

    resize-interval = 0 (the plan followed): A shrinks at 1,800 (done 1,800 + 2,700 = 4,500)
    and ends at 1,800 + 3,500 / 2 = 3,550; B starts on arrival on its planned 2, ends 3,000.
    resize-interval = 1,800: A grew at 900, so at 1,800 it keeps 4 servers (may change again
    at 2,700). At 2,000 B's planned 2 do not fit beside A's 4: B waits (one revert wait), A
    goes back to its requested 2 at once (a forced resize; done 1,800 + 3 x 1,100 = 5,100)
    and B starts as asked, on 2. A ends at 2,000 + 2,900 / 2 = 3,450, B at 3,000.

    resize-interval 0:      server 0      900   1,800 2,000      3,000  3,550
                            0-1    A --------------------------------------|
                            2-3           A ------|     B ----------|
    resize-interval 1,800:  0-1    A -----------------------------------|   (3,450)
                            2-3           A ------------|B ---------|
    Busy watts: interval 0: 200 to 900, 400 to 1,800, 200 to 2,000, 400 to 3,000, 200 to
    3,550 (1,090,000 J); interval 1,800: 200 to 900, 400 to 3,000, 200 to 3,450 (1,110,000
    J). 360,000 J of it green either way (400 W over [900, 1,800)).
    """
    a, b, r = run(tmp_path, 0)
    assert allocations(a) == [(0, 2), (900, 4), (1800, 2)]
    assert allocations(b) == [(2000, 2)]
    assert a.end == pytest.approx(3550) and b.end == pytest.approx(3000)
    assert r.summary["greenpar_revert_waits"] == 0
    assert r.summary["energy_joules"] == pytest.approx(1.09e6)

    a, b, r = run(tmp_path, 1800)
    assert allocations(a) == [(0, 2), (900, 4), (2000, 2)]
    assert allocations(b) == [(2000, 2)]
    assert a.end == pytest.approx(3450) and b.end == pytest.approx(3000)
    assert r.summary["greenpar_revert_waits"] == 1
    assert r.summary["greenpar_forced_resizes"] == 1
    assert r.summary["energy_joules"] == pytest.approx(1.11e6)


def test_a_plan_that_keeps_the_interval_is_followed_and_no_job_waits(tmp_path):
    """The same jobs, 300 W of sun in [900, 1,800), resize-interval = 1,800.

    Without `plan-resize-interval` the plan is as above, A 2, 4, 2, 2 (brown 180 + 90 + 360
    + 360 kJ by the MILP's count), and the run cannot follow it: B waits, A reverts.

    With it, the MILP may change A once in any two epochs (its start is not a change), and
    B must run on 2 from its arrival in epoch 2 (1 server is below its SLA rate, and A + B
    fit in 4). The cheapest plans, by the MILP's count (brown at $0.1/kWh, run time $0.01
    per hour averaged over the two jobs):

        A 2, 2, 2, 2, 1   brown 180 + 0 + 360 + 360 + 90 = 990 kJ   7 job-epochs  $0.03625
        A 4, 2, 2, 2      360 + 0 + 360 + 360 = 1,080 kJ             6             $0.0375
        A 2, 2, 2, 2, 2   1,080 kJ                                   7             $0.03875
        A 4, 4, 1, 1, 1   360 + 90 + 270 + 270 + 90 = 1,080 kJ      7             $0.03875

    (A on 1 server any earlier breaks its cumulative SLA, 1.6 x elapsed; A on 4 in epoch 2
    leaves no room for B.) So A keeps 2 servers until 3,600 (7,200 done) and ends its last
    800 on 1 at 4,400, inside its SLA (1.25 x 4,000 = 5,000). B starts on arrival on its
    planned 2 and ends at 3,000. No job waits.

        server  0           900   1,800 2,000        3,000   3,600    4,400
        0       A ----------------------------------------------------|
        1       A --------------------------------------------|
        2-3                             B ----------|
    Busy watts: 200 to 2,000, 400 to 3,000, 200 to 3,600, 100 to 4,400 (1,000,000 J); 180,000
    J green (A's 200 W under 300 W of sun in [900, 1,800)).
    """
    a, b, r = run(tmp_path, 1800, 300)
    assert allocations(a) == [(0, 2), (900, 4), (2000, 2)]
    assert r.summary["greenpar_revert_waits"] == 1

    a, b, r = run(tmp_path, 1800, 300, "greenpar.plan-resize-interval=true")
    assert allocations(a) == [(0, 2), (3600, 1)]
    assert allocations(b) == [(2000, 2)]
    assert a.end == pytest.approx(4400) and b.end == pytest.approx(3000)
    assert r.summary["greenpar_revert_waits"] == 0
    assert r.summary["greenpar_forced_resizes"] == 0
    assert r.summary["energy_joules"] == pytest.approx(1.0e6)
    assert r.summary["green_used_joules"] == pytest.approx(1.8e5)
