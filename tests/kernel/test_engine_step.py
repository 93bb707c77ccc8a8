"""``Engine.step()`` and ``Engine.peek()``: driving the loop one step (one instant) at a time,
as SimPy's ``step`` and ``peek`` do, with the same schedule as ``run()``."""

from __future__ import annotations

import math

from lease_manager.config.schema import load_config
from lease_manager.kernel.lease import LeaseState
from lease_manager.plugins import Plugins
from lease_manager.run import Run

from support import HOUR, MIN, be, five_leases

S = LeaseState


def _run(leases, *settings: str) -> Run:
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, ["simulation.resources=4 CPU:1 Memory:1024",
                                                "scheduling.backfilling=aggressive",
                                                *settings])
    return Run(config, plugins, leases=leases)


def test_step_takes_one_instant_at_a_time():
    """Four nodes; #1 2 VMs 1 h and #3 1 VM 30 min at 0:00, #2 4 VMs 1 h at 0:10::

        node   0:00      0:30      1:00                2:00
        n1     [#1 ------------------][#2 ------------------]
        n2     [#1 ------------------][#2 ------------------]
        n3     [#3 -----]             [#2 ------------------]
        n4                            [#2 ------------------]

    The steps are the instants 0:00 (#1 and #3 start), 0:10 (#2 arrives and reserves 1:00,
    aggressive backfilling), 0:30 (#3 ends), 1:00 (#1 ends, #2 starts) and 2:00 (#2 ends);
    then the run is over: ``peek`` is inf and ``step`` does nothing."""
    one, three, two = be(1, 2, HOUR, 0), be(3, 1, 30 * MIN, 0), be(2, 4, HOUR, 10 * MIN)
    run = _run([one, three, two])
    engine = run.engine
    run.start()
    seen = []
    while not math.isinf(engine.peek()):
        at = engine.peek()
        assert engine.step()
        seen.append((at, one.state, two.state, three.state))
    assert seen == [
        (0, S.ACTIVE, S.NEW, S.ACTIVE),
        (10 * MIN, S.ACTIVE, S.SCHEDULED, S.ACTIVE),
        (30 * MIN, S.ACTIVE, S.SCHEDULED, S.DONE),
        (HOUR, S.DONE, S.ACTIVE, S.DONE),
        (2 * HOUR, S.DONE, S.DONE, S.DONE)]
    assert two.start == HOUR and two.end == 2 * HOUR
    assert engine.steps == 5 and engine.now == 2 * HOUR
    assert not engine.step() and engine.exhausted and engine.steps == 5
    engine.run()   # (nothing left: returns at once)
    assert engine.steps == 5


def test_steps_then_run_give_the_run_schedule():
    """Two steps by hand, then ``run()`` for the rest: the schedule of ``run()`` alone."""
    whole, stepped = five_leases(), five_leases()
    plain = _run(whole)
    plain.run()
    run = _run(stepped)
    run.start()
    assert run.engine.step() and run.engine.step()
    run.engine.run()
    assert [(l.start, l.end) for l in stepped] == [(l.start, l.end) for l in whole]
    assert run.engine.steps == plain.engine.steps


def test_peek_sees_the_stop_time():
    """Four nodes, stop at 0:45: #1 (4 VMs, 0:00-1:00) starts at 0:00; #2 arrives at 0:10 and
    reserves 1:00. The next event, #1's end and #2's start at 1:00, is past the stop time: the
    run is over after two steps."""
    run = _run([be(1, 4, HOUR, 0), be(2, 1, HOUR, 10 * MIN)],
               "simulation.stop-when=time", "simulation.runtime=00:45:00")
    engine = run.engine
    run.start()
    assert engine.peek() == 0 and engine.step()
    assert engine.peek() == 10 * MIN and engine.step()
    assert engine.peek() == math.inf and not engine.step()
    assert engine.steps == 2 and not engine.exhausted
