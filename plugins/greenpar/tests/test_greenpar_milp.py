"""GreenPar's MILP (Fig. 3) on a hand-solved instance, checked against enumerating every
plan, and its report of a solve that hits the time limit."""

from __future__ import annotations

import attrs
import pytest

from lm_greenpar.milp import Job, Problem, enumerate_best, solve

PROBLEM = Problem(epoch=900, green=[0, 300, 400, 0], price=[0.1] * 4, base_watts=0,
                  server_watts=100, migration_joules=0, capacity=4, beta_cost=0.01)
#: job 1 runs on 2 of its 4 VMs' servers; 5,400 single-server seconds left; SLA rate 1
ONE = Job(1, ((1, 4, 1.0), (2, 4, 2.0), (4, 4, 3.0)), work=5400, sla_rate=1.0, current=2)
#: job 2 arrives: 2 VMs (1 or 2 servers) or 4 (1, 2 or 4); 1,800 to do; SLA rate 1/1.1
TWO = Job(2, ((1, 2, 1.0), (2, 2, 1.6), (1, 4, 0.9), (2, 4, 1.8), (4, 4, 2.8)), work=1800,
          sla_rate=1 / 1.1)


def test_two_jobs_four_epochs_against_enumeration():
    """
    epoch      0 (0 W)   1 (300 W)   2 (400 W)   3 (0 W)
    job 1      1 server  2 servers   4 servers   -          900 + 1,800 + 2,700 = 5,400
    job 2      1 (2 VMs) 1           -           -          900 + 900 = 1,800
    power      200 W     300 W       400 W       0
    brown      200 W x 0.25 h = 0.05 kWh = $0.005; run time 5 job-epochs x 0.25 h x
    $0.01 / 2 jobs = $0.00625: objective $0.01125.

    Job 1 cannot finish in 2 epochs (it would need 4 servers in epoch 0, where job 2 needs
    one), job 2 not in 1 (1,800 in one epoch needs 4 servers): 5 job-epochs at least, and
    epoch 0 has no green for the 2 servers that must run: the plan meets both lower bounds.
    Job 1's SLA holds exactly at the end of epoch 0 (900 done in 900 s at rate 1).
    With 4 VMs, job 2 could not finish in epoch 1 on 1 server (0.9 x 1,800 s = 1,620), and
    on 2 it would exceed the green power of epoch 1.
    """
    solution = solve(PROBLEM, [ONE, TWO], time_limit=30, gap=0.0)
    cost, plans = enumerate_best(PROBLEM, [ONE, TWO])
    assert solution.status == 0 and not solution.time_limited
    assert solution.objective == pytest.approx(0.01125) == pytest.approx(cost)
    assert solution.servers == plans == {1: [1, 2, 4, 0], 2: [1, 1, 0, 0]}
    assert solution.vms == {1: 4, 2: 2}
    assert solution.slack == {1: pytest.approx(0), 2: pytest.approx(0)}


@pytest.mark.parametrize("green", [[0, 0, 0, 0], [400, 400, 400, 400], [0, 800, 0, 800]])
def test_other_green_profiles_match_enumeration(green):
    problem = Problem(epoch=900, green=green, price=[0.1, 0.2, 0.1, 0.3], base_watts=50,
                      server_watts=100, migration_joules=3600, capacity=5, beta_cost=0.02)
    solution = solve(problem, [ONE, TWO], time_limit=30, gap=0.0)
    cost, _ = enumerate_best(problem, [ONE, TWO])
    assert solution.objective == pytest.approx(cost)


def test_a_job_changed_too_recently_keeps_its_servers():
    """Job 1 was resized less than resize-interval ago: it keeps its 2 servers in epochs 0
    and 1 (``hold = 2``). Its best plan otherwise starts on 1 server (above); now it must run
    on 2 in epoch 0, where job 2 still needs 1: 3 servers of brown (300 W x 0.25 h). The
    optimum, as enumeration finds it, honours the hold."""
    held = attrs.evolve(ONE, hold=2)
    solution = solve(PROBLEM, [held, TWO], time_limit=30, gap=0.0)
    cost, plans = enumerate_best(PROBLEM, [held, TWO])
    assert solution.servers[1][:2] == [2, 2]
    assert solution.objective == pytest.approx(cost) and solution.servers == plans
    assert cost > 0.01125


def test_a_solve_that_hits_the_time_limit_says_so():
    """Forty jobs over a day of epochs cannot be proved optimal in a hundredth of a second:
    the solution says it stopped at the limit."""
    jobs = [Job(i, ((1, 4, 1.0), (2, 4, 1.9), (4, 4, 3.5)), work=20000 + 500 * i,
                sla_rate=1.0 / 1.1) for i in range(40)]
    problem = Problem(epoch=900, green=[200.0 * (k % 7) for k in range(96)], price=[0.1] * 96,
                      base_watts=0, server_watts=30, migration_joules=900, capacity=50,
                      beta_cost=0.25)
    solution = solve(problem, jobs, time_limit=0.01, gap=0.0)
    assert solution.time_limited and solution.status == 1


#: ONE and TWO where the green falls after epoch 1 and brown costs three times as much from
#: epoch 1 on; the MILP needs branching to prove its optimum (5 nodes with scipy 1.17's HiGHS)
BRANCHING = Problem(epoch=900, green=[500, 400, 100, 400], price=[0.1, 0.3, 0.3, 0.3],
                    base_watts=50, server_watts=100, migration_joules=3600, capacity=6,
                    beta_cost=0.04)


def test_the_node_limit_stops_a_solve_deterministically():
    """
    Optimum (as enumeration finds it), 4 VMs each:
    epoch      0 (500 W)   1 (400 W)   2 (100 W)   3 (400 W)
    job 1      1 server    2           1           2      900 + 1,800 + 900 + 1,800 = 5,400
    job 2      4 (SP 2.8)  -           -           -      2,520 >= 1,800
    servers    5           2           1           2      migrations 4 x 3,600 J, 1 a epoch
    brown J    48,600      0           48,600      0      (550 W x 900 s + 3,600 - 450,000;
                                                           150 W x 900 s + 3,600 - 90,000)
    $0.1 x 0.0135 kWh + $0.3 x 0.0135 kWh = $0.0054; run time 5 job-epochs x 0.25 h x
    $0.04 / 2 = $0.025: objective $0.0304.

    Stopped after 1 node, HiGHS' best plan (job 2 on 2 VMs):
    job 1      4 servers   2           1           -      2,700 + 1,800 + 900 = 5,400
    job 2      1           1           -           -      900 + 900 = 1,800
    servers    5           3           1           0      migrations 2, 2, 1 servers
    brown J    52,200      0           48,600      0      (550 W x 900 s + 7,200 - 450,000)
    $0.00145 + $0.00405 + the same $0.025 = $0.0305.

    The same limit gives the same plan every time (nodes, not seconds); 6 nodes let HiGHS
    prove the optimum (a limit equal to the nodes it needs, 5, still stops it: the default
    must be above every solve's node count)."""
    cost, plans = enumerate_best(BRANCHING, [ONE, TWO])
    assert cost == pytest.approx(0.0304)
    first, again = (solve(BRANCHING, [ONE, TWO], time_limit=600, gap=0.0, node_limit=1)
                    for _ in range(2))
    assert first.node_limited and not first.time_limited and first.nodes == 1
    assert first.servers == again.servers == {1: [4, 2, 1, 0], 2: [1, 1, 0, 0]}
    assert first.vms == again.vms == {1: 4, 2: 2}
    assert first.objective == again.objective == pytest.approx(0.0305)
    assert first.slack == {1: pytest.approx(0), 2: pytest.approx(0)}
    free = solve(BRANCHING, [ONE, TWO], time_limit=600, gap=0.0, node_limit=6)
    assert free.status == 0 and not free.node_limited and free.nodes == 5
    assert free.servers == plans and free.objective == pytest.approx(0.0304)
    # HiGHS' dual bound: never above the optimum, and equal to it once proved
    assert first.dual_bound is not None and first.dual_bound <= 0.0304 + 1e-9
    assert free.dual_bound == pytest.approx(0.0304)
    assert solve(BRANCHING, [ONE, TWO], time_limit=600, gap=0.0, node_limit=5).node_limited



#: green enough in epoch 0 for 4 servers; job A (asked 1 server) arrives in epoch 0, job B
#: (asked 2) in epoch 1
STARTED = Problem(epoch=900, green=[400, 300, 400, 0], price=[0.1] * 4, base_watts=0,
                  server_watts=100, migration_joules=0, capacity=4, beta_cost=0.01)
JOB_A = Job(1, ((1, 2, 1.0), (2, 2, 1.6), (1, 4, 0.9), (2, 4, 1.8), (4, 4, 2.8)), work=1800,
            sla_rate=1 / 1.1, requested=1)
JOB_B = Job(2, ((1, 4, 1.0), (2, 4, 2.0), (4, 4, 3.0)), work=3600, sla_rate=2 / 1.1, first=1,
            requested=2)


def test_a_solve_started_from_the_requested_plan_never_returns_a_worse_one():
    """
    The requested plan (Baseline's: N servers, 2N VMs, from arrival to the end of the work):
    epoch      0 (400 W)   1 (300 W)   2 (400 W)   3 (0 W)
    job A      1 (2 VMs)   1           -           -          900 + 900 = 1,800
    job B      -           2 (4 VMs)   2           -          1,800 + 1,800 = 3,600
    power      100 W       300 W       200 W       0          all green: no brown
    run time 4 job-epochs x 0.25 h x $0.01 / 2 jobs = $0.005; SLA kept (A: 900 >= 900/1.1
    by epoch 0's end; B: 1,800 >= 900 x 2/1.1), so no slack.

    The optimum (enumeration): A on 4 servers with 4 VMs in epoch 0 (2.8 x 900 = 2,520 >=
    1,800 on 400 W of green), B as asked: 3 job-epochs, $0.00375.

    Stopped before its first node (node limit 0), HiGHS alone has no plan at all; started
    from the requested plan it returns that plan (slack-free, $0.005); with one node, or no
    limit, it finds the optimum either way."""
    assert enumerate_best(STARTED, [JOB_A, JOB_B]) == (pytest.approx(0.00375),
                                                       {1: [4, 0, 0, 0], 2: [0, 2, 2, 0]})
    alone = solve(STARTED, [JOB_A, JOB_B], time_limit=600, gap=0.0, node_limit=0)
    assert not alone.ok and alone.start_objective is None
    started = solve(STARTED, [JOB_A, JOB_B], time_limit=600, gap=0.0, node_limit=0,
                    start_requested=True)
    assert started.ok and started.node_limited and not started.time_limited
    assert started.start_objective == pytest.approx(0.005)
    assert started.objective == pytest.approx(0.005)
    assert started.servers == {1: [1, 1, 0, 0], 2: [0, 2, 2, 0]}
    assert started.vms == {1: 2, 2: 4}
    assert started.slack == {1: pytest.approx(0), 2: pytest.approx(0)}
    for limit in (1, None):
        best = solve(STARTED, [JOB_A, JOB_B], time_limit=600, gap=0.0, node_limit=limit,
                     start_requested=True)
        assert best.status == 0 and best.objective == pytest.approx(0.00375)
        assert best.servers[1] == [4, 0, 0, 0] and best.vms[1] == 4
        assert best.dual_bound == pytest.approx(0.00375)
    assert started.dual_bound is None   # stopped before its first node: no finite bound yet


def requested_cost(problem: Problem, jobs: list[Job]) -> float | None:
    """The objective of every job at its requested servers from its first epoch, priced by
    hand as :func:`enumerate_best` prices a plan (None: over the capacity)."""
    servers = [0.0] * len(problem.green)
    runtime = 0.0
    for job in jobs:
        n = job.requested
        speed = {(m, v): sp for m, v, sp in job.options}[(n, 2 * n)]
        done, k = 0.0, job.first
        while done < job.work - 1e-9:
            servers[k] += n
            done += speed * problem.epoch
            runtime += problem.epoch / 3600
            k += 1
    if max(servers) > problem.capacity:
        return None
    brown = sum(price * max(0.0, (problem.base_watts + problem.server_watts * s - green)
                            * problem.epoch) / 3.6e6
                for s, green, price in zip(servers, problem.green, problem.price))
    return brown + problem.beta_cost * runtime / len(jobs)


def random_instance(rng) -> tuple[Problem, list[Job]]:
    horizon = rng.randint(4, 7)
    capacity = rng.randint(3, 6)
    jobs = []
    for key in range(rng.randint(2, 5)):
        n = rng.choice([1, 2])
        options = tuple((m, v, n if (m, v) == (n, 2 * n) else round(m * rng.uniform(0.6, 1), 2))
                        for v in (2 * n, 4 * n) for m in (1, 2, 4) if v / 4 <= m <= v)
        epochs = rng.randint(1, horizon - 2)
        jobs.append(Job(key, options, work=n * 900 * epochs, sla_rate=n / 1.1,
                        first=rng.randint(0, horizon - epochs - 1), requested=n))
    problem = Problem(epoch=900, green=[rng.choice([0, 150, 300, 600]) for _ in range(horizon)],
                      price=[rng.choice([0.1, 0.3]) for _ in range(horizon)], base_watts=20,
                      server_watts=100, migration_joules=3600, capacity=capacity,
                      beta_cost=0.04)
    return problem, jobs


def test_a_started_solve_never_ends_worse_than_the_requested_plan():
    """On 30 seeded small instances, stopped at 0 or 1 node or not at all: the start's
    objective is the requested plan's priced by hand, and the plan returned never costs
    more (when the requested plans overflow the site in some epoch, the start is repaired or
    absent: the next test)."""
    import random

    rng = random.Random(39)
    over = 0
    for _ in range(30):
        problem, jobs = random_instance(rng)
        expected = requested_cost(problem, jobs)
        over += expected is None
        for limit in (0, 1, None):
            s = solve(problem, jobs, time_limit=600, gap=0.0, node_limit=limit,
                      start_requested=True)
            if expected is None:    # over the site: the jobs of the epochs over it are
                assert s.start_objective is None or s.start_changed > 0   # left to HiGHS
                assert s.start_objective is None or s.objective <= s.start_objective + 1e-9
                continue
            assert s.start_changed == 0
            assert s.start_objective == pytest.approx(expected, rel=1e-9, abs=1e-12)
            assert s.ok and s.objective <= s.start_objective * (1 + 1e-9) + 1e-12
            assert sum(s.slack.values()) == pytest.approx(0, abs=1e-6)
    assert 0 < over < 30    # both cases are exercised


def test_requested_plans_over_the_site_in_an_epoch_are_left_to_the_solver():
    """The MILP counts a job for the whole of every epoch it runs in. A (2 servers, 1,350 s
    of work at its requested speed) ends half-way through epoch 1, where B (2 servers)
    arrives: at no instant do they hold more than 2 of the 3 servers, but as requested
    plans epoch 1 counts 4:

        epoch      0        1            2
        A          2        2 (to 450 s) -
        B          -        2 (from 450) 2
        C          -        -            1
        counted    2        4 > 3        3

    So the requested plans are not a point of the model; the jobs running in epoch 1 (A and
    B) are left to HiGHS, C keeps its requested plan, and the solve started from that point
    never ends above it."""
    from lm_greenpar.milp import build
    from lm_greenpar.milp_start import requested_start

    problem = Problem(epoch=900, green=[0, 0, 0, 0], price=[0.1] * 4, base_watts=0,
                      server_watts=100, migration_joules=0, capacity=3, beta_cost=0.01)
    options = ((1, 4, 1.0), (2, 4, 2.0), (4, 4, 3.0))
    jobs = [Job(1, options, work=2.0 * 1350, sla_rate=2 / 1.1, requested=2),
            Job(2, options, work=2.0 * 900, sla_rate=2 / 1.1, first=1, first_length=450,
                requested=2),
            Job(3, ((1, 2, 1.0), (2, 2, 1.6)), work=900, sla_rate=1 / 1.1, first=2,
                requested=1)]
    built = build(problem, jobs)
    found = requested_start(problem, jobs, built, gap=0.0, node_limit=None)
    assert found is not None
    x, objective, changed = found
    assert changed == 2
    c_vars = {n: i for i, n, _, _ in built.xs[3][2]}
    assert x[c_vars[1]] == pytest.approx(1) and x[c_vars[2]] == pytest.approx(0)
    s = solve(problem, jobs, time_limit=600, gap=0.0, node_limit=1, start_requested=True)
    assert s.start_changed == 2 and s.start_objective == pytest.approx(objective)
    assert s.ok and s.objective <= objective * (1 + 1e-9)


def test_the_resize_interval_keeps_the_plan_to_one_change_an_interval():
    """``resize_interval`` (``[greenpar] plan-resize-interval``), PROBLEM with 3,600 J a
    server moved. Without the limit the best plan changes job 1 at every epoch:

    epoch      0 (0 W)   1 (300 W)   2 (400 W)   3 (0 W)
    job 1      1 (2->1)  2 (1->2)    4 (2->4)    -        4 servers moved: 14,400 J
    job 2      1 (2 VMs) 1           -           -
    brown      183.6 kJ  3.6 kJ      7.2 kJ      0        $0.0051 + 0.0001 + 0.0002
    run time   5 job-epochs: $0.00625                     objective $0.01165

    With an interval of 1,800 s (two epochs) job 1 may not change in two consecutive epochs,
    so it keeps its 2 servers (9,000 s of work it needs in three epochs either way):

    job 1      2         2           2           -        nothing moved
    job 2      1         1           -           -
    brown      270 kJ    0 (300 W)   0 (200 W)   0        $0.0075
    run time   5 job-epochs: $0.00625                     objective $0.01375

    (job 1 on 2, 2, 4 would cost $0.0002 more: 7.2 kJ of moves in epoch 2 beyond the sun.)
    Enumerating every plan with the same rule finds the same optimum."""
    moving = attrs.evolve(PROBLEM, migration_joules=3600)
    free = solve(moving, [ONE, TWO], time_limit=30, gap=0.0)
    assert free.servers == {1: [1, 2, 4, 0], 2: [1, 1, 0, 0]}
    assert free.objective == pytest.approx(0.01165)
    limited = attrs.evolve(moving, resize_interval=1800)
    solution = solve(limited, [ONE, TWO], time_limit=30, gap=0.0)
    cost, plans = enumerate_best(limited, [ONE, TWO])
    assert solution.servers == plans == {1: [2, 2, 2, 0], 2: [1, 1, 0, 0]}
    assert solution.objective == pytest.approx(0.01375) == pytest.approx(cost)


@pytest.mark.parametrize("first_length", [300, 600])
@pytest.mark.parametrize("interval", [900, 1200, 1800])
@pytest.mark.parametrize("green", [[0, 300, 400, 0], [400, 0, 400, 400], [0, 800, 0, 800]])
def test_the_resize_interval_matches_enumeration(first_length, interval, green):
    """Solved part-way through epoch 0 (job 1 may change now, at 0, and then only at an
    epoch's start ``interval`` or more later: with 300 s left of epoch 0 and 1,200 s, not at
    300 but at 1,200), the MILP's optimum is the enumeration's."""
    problem = attrs.evolve(PROBLEM, migration_joules=3600, resize_interval=interval,
                           first_length=first_length, green=green)
    solution = solve(problem, [ONE, TWO], time_limit=30, gap=0.0)
    cost, _ = enumerate_best(problem, [ONE, TWO])
    assert solution.status == 0
    assert solution.objective == pytest.approx(cost)


def test_a_started_solve_keeps_the_resize_interval():
    """Offline's start (every job's requested plan) marks no change, so it is a point of the
    model with the limit: the solve from it ends at the enumeration's optimum."""
    new_one = attrs.evolve(ONE, current=None, requested=2, first=0,
                           options=((1, 4, 1.0), (2, 4, 2.0), (4, 4, 3.0)))
    new_two = attrs.evolve(TWO, requested=1)
    problem = attrs.evolve(PROBLEM, migration_joules=3600, resize_interval=1800)
    solution = solve(problem, [new_one, new_two], time_limit=30, gap=0.0,
                     start_requested=True)
    cost, _ = enumerate_best(problem, [new_one, new_two])
    assert solution.start_objective is not None
    assert solution.objective == pytest.approx(cost)
