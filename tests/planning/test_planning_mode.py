"""The offline planning mode with the built-in planner ``in-order`` (list scheduling in the
workload's order, each lease placed by PlaceTask), on hand-computed instances.

Grid of 1 s intervals; one level of 10 W (idle = full: a lease draws only its own ``watts``).
Switching on takes 2 intervals at 20 W, switching off 1 interval at 15 W, off draws 0 W. Every
plan is replayed by the core and checked: the core's power profile must be the board's,
interval by interval, and stay under the envelope.
"""

from __future__ import annotations

import numpy as np
import pytest

from lease_manager.config.schema import load_config
from lease_manager.errors import ConfigError
from lease_manager.kernel.lease import LeaseState
from lease_manager.plugins import Plugins
from lease_manager.run import Run

from support import be

PLAN = ("power.pstates=1:10:10", "power.switch-on=2:20", "power.switch-off=1:15",
        "power.initial-state=off", "power.policy-node-power=switch-off-idle",
        "planning.policy-planner=in-order", "planning.interval=1")


def planned(tmp_path, tasks, cap, *settings, resources="1 CPU:1 Memory:1024"):
    """Plan and replay ``tasks`` ((duration, watts) each, 1 VM) under the step ``cap``
    ((time, watts) pairs); the run, after checking it against the board."""
    path = tmp_path / "cap.csv"
    path.write_text("time,watts\n" + "".join(f"{t},{w}\n" for t, w in cap))
    leases = []
    for i, (duration, watts) in enumerate(tasks, start=1):
        lease = be(i, 1, duration, 0, memory=1)
        lease.extra["watts"] = str(watts)
        leases.append(lease)
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [f"simulation.resources={resources}", *PLAN,
                                                f"power.power-cap={path}", *settings])
    run = Run(config, plugins, leases=leases)
    run.run()
    assert run.energy.violations() == []
    check_against_board(run)
    return run


def check_against_board(run):
    """The core's power in every interval of the plan equals the board's (plus off power)."""
    board = run.planning.board
    end = int(run.energy.window[1])
    grid = np.arange(end) + 0.5
    core = run.energy.profile.at(grid)
    np.testing.assert_allclose(core, board.used[:end] + run.power.off_watts.sum())
    for lease in run.scheduler.active_leases():
        raise AssertionError(f"{lease} unfinished")


def gantt(run):
    return [(l.id, l.start, l.end, l.allocations[0].nodes.tolist()) for l in run.leases]


def states(run):
    return [s[1:] for s in run.node_states.intervals(*run.energy.window) if s[1] != "off"]


def profile(run):
    p = run.energy.profile
    return [(t, w) for t, w in zip(p.times.tolist(), p.watts.tolist())]


@pytest.fixture(autouse=True)
def keep_leases(monkeypatch):
    """Keep each run's leases (by id) on the run for the assertions."""
    original = Run.__init__

    def init(self, config, plugins=None, *, leases=None, **kw):
        self.leases = list(leases or [])
        original(self, config, plugins, leases=self.leases, **kw)

    monkeypatch.setattr(Run, "__init__", init)


def test_a_boot_starts_one_interval_before_the_task_when_the_envelope_allows(tmp_path):
    """One task of 2 s at 10 W. Envelope: 0 W until 2, 15 W from 2 to 3, 100 W from 3.

    The boot (2 intervals at 20 W) needs 20 W: not before 3. The task starts as the boot ends.
    m0  [off 0-3][boot 3-5][T1 5-7][down 7-8]
    power (W): 0-3 0 | 3-5 20 | 5-7 10 + 10 = 20     (the run ends with the task, at 7)
    """
    run = planned(tmp_path, [(2, 10)], [(0, 0), (2, 15), (3, 100)])
    assert gantt(run) == [(1, 5, 7, [0])]
    assert states(run) == [("switching-on", 3, 5), ("on", 5, 7)]
    assert profile(run) == [(0, 0), (3, 20), (5, 20), (7, 20)]
    assert run.summary["planned_makespan"] == run.summary["makespan"] == 7
    assert run.summary["node_switch_ons"] == run.summary["planned_switch_ons"] == 1


LATE = [(0, 30), (7, 100)]


@pytest.mark.parametrize("look_ahead", [False, True])
def test_look_ahead_keeps_a_machine_on(tmp_path, look_ahead):
    """One machine of one core. T1: 2 s at 30 W (needs 40 W to run), T2: 2 s at 10 W, in
    that order. Envelope: 30 W until 7, then 100 W.

    T1 cannot run before 7: boot 5-7, T1 7-9. T2 then fits before it: boot 0-2, T2 2-4. Its
    shutdown (4-5) would end just as T1's boot begins (5): a gap of 3 = Toff + Ton. Without
    look-ahead the machine goes off and boots again; with it, it stays on.
                    without look-ahead                     with look-ahead
    m0  [boot 0-2][T2 2-4][down 4-5][boot 5-7][T1 7-9]   [boot 0-2][T2 2-4][on 4-7][T1 7-9]
    power (W): 0-2 20 | 2-4 20 | 4-5 15 | 5-7 20 | 7-9 40   ... | 4-7 10 | 7-9 40
    energy: 40 + 40 + 15 + 40 + 80 = 215 J                  40 + 40 + 30 + 80 = 190 J
    """
    settings = ("power.look-ahead=yes",) if look_ahead else ()
    run = planned(tmp_path, [(2, 30), (2, 10)], LATE, *settings)
    assert gantt(run) == [(1, 7, 9, [0]), (2, 2, 4, [0])]
    if look_ahead:
        assert states(run) == [("switching-on", 0, 2), ("on", 2, 9)]
        assert run.summary["energy_it_joules"] == 190
        assert run.summary["node_switch_ons"] == 1
    else:
        assert states(run) == [("switching-on", 0, 2), ("on", 2, 4), ("switching-off", 4, 5),
                               ("switching-on", 5, 7), ("on", 7, 9)]
        assert run.summary["energy_it_joules"] == 215
        assert run.summary["node_switch_ons"] == 2


@pytest.mark.parametrize("look", ["none", "look-ahead", "look-back"])
def test_look_back_cancels_a_shutdown(tmp_path, look):
    """One machine of one core. T1: 2 s at 10 W, T2: 2 s at 30 W (needs 40 W), in that
    order. Envelope: 30 W until 8, then 100 W.

    T1: boot 0-2, T1 2-4, shutdown planned 4-5. T2 runs from 8: its boot would begin at 6,
    2 s = Ton after the shutdown began (a gap of 4 = 2 Ton). Look-back cancels the shutdown;
    look-ahead does not (the gap is above Toff + Ton = 3).
                 without look-back                          with look-back
    m0  [boot 0-2][T1 2-4][down 4-5][off 5-6][boot 6-8][T2 8-10]   ...[T1 2-4][on 4-8][T2 8-10]
    power (W): 0-2 20 | 2-4 20 | 4-5 15 | 5-6 0 | 6-8 20 | 8-10 40   ... | 4-8 10 | 8-10 40
    energy: 40 + 40 + 15 + 0 + 40 + 80 = 215 J                    40 + 40 + 40 + 80 = 200 J
    """
    settings = () if look == "none" else (f"power.{look}=yes",)
    run = planned(tmp_path, [(2, 10), (2, 30)], [(0, 30), (8, 100)], *settings)
    assert gantt(run) == [(1, 2, 4, [0]), (2, 8, 10, [0])]
    if look == "look-back":
        assert states(run) == [("switching-on", 0, 2), ("on", 2, 10)]
        assert run.summary["energy_it_joules"] == 200
    else:
        assert states(run) == [("switching-on", 0, 2), ("on", 2, 4), ("switching-off", 4, 5),
                               ("switching-on", 6, 8), ("on", 8, 10)]
        assert run.summary["energy_it_joules"] == 215


def test_a_machine_that_is_on_is_preferred_to_a_boot_one_interval_earlier(tmp_path):
    """Two machines of one core. T1: 3 s at 10 W, T2: 1 s at 10 W. Envelope 100 W.

    T1: boot 0-2 on m0, T1 2-5. T2 could boot m1 (boot 0-2, T2 2-3), or wait for m0's core:
    m0 is free at 5, three intervals later: it boots m1 (waiting is only worth one interval,
    as in the authors' simulator).
    m0  [boot 0-2][T1 2-5]
    m1  [boot 0-2][T2 2-3][down 3-4]
    """
    run = planned(tmp_path, [(3, 10), (1, 10)], [(0, 100)], resources="2 CPU:1 Memory:1024")
    assert gantt(run) == [(1, 2, 5, [0]), (2, 2, 3, [1])]


def test_the_on_machine_is_preferred_when_it_frees_a_core_one_interval_later(tmp_path):
    """Two machines of one core. T1: 2 s at 10 W, T2: 2 s at 10 W. Envelope: 100 W until 3,
    then 30 W.

    T1: boot 0-2, T1 2-4 on m0. T2 on m1 would boot at 0-2 and run 2-4, but at 3-4 the site
    would draw 10 + 10 + 10 + 10 = 40 W > 30 W; later, at 30 W, a boot (20 W) beside m0 (20 W)
    does not fit before m0 is done. On m0, T2 runs 4-6 (20 W): the machine that is on.
    m0  [boot 0-2][T1 2-4][T2 4-6][down 6-7]
    power (W): 0-2 20 | 2-4 20 | 4-6 20
    """
    run = planned(tmp_path, [(2, 10), (2, 10)], [(0, 100), (3, 30)],
                  resources="2 CPU:1 Memory:1024")
    assert gantt(run) == [(1, 2, 4, [0]), (2, 4, 6, [0])]
    assert run.summary["node_switch_ons"] == 1


def test_a_lease_the_envelope_never_has_room_for_is_rejected(tmp_path):
    """T1: 2 s at 10 W (20 W with the machine) fits; T2: 2 s at 50 W needs 60 W, and the
    envelope never gives more than 40 W: the planner places it nowhere, the run rejects it."""
    run = planned(tmp_path, [(2, 10), (2, 50)], [(0, 40)])
    one, two = run.leases
    assert one.state is LeaseState.DONE
    assert two.state is LeaseState.REJECTED
    assert "placed it nowhere" in two.reason
    assert run.summary["planned_leases"] == 1


def test_the_planning_mode_explains_what_it_needs(tmp_path):
    plugins = Plugins(entry_points=False)
    base = ["simulation.resources=1 CPU:1 Memory:1024", "planning.policy-planner=in-order"]
    cases = [
        ([], "offline planning needs a [power] model"),
        (list(PLAN[:2]), "set policy-node-power = switch-off-idle"),
        ([*PLAN, "power.idle-timeout=5"], "set idle-timeout = 0"),
        ([*PLAN, "planning.interval=3"], "not a multiple of [planning] interval = 3 s"),
    ]
    for settings, message in cases:
        config = load_config(None, plugins.schema, [*base, *settings])
        with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
            Run(config, plugins, leases=[be(1, 1, 1, 0)])


def test_a_cap_that_drops_just_as_the_run_ends_is_not_exceeded(tmp_path):
    """One task of 2 s at 10 W; envelope 100 W until 7 s, then 15 W (the shutdown's 15 W
    still fits). The run ends with the task at 7, where the cap drops: power.csv's last row
    repeats the 20 W before it, and that is no violation (it was one before).
    m0  [off 0-3][boot 3-5][T1 5-7][down 7-8]          cap: 0 until 3, 100 until 7, then 15
    """
    run = planned(tmp_path, [(2, 10)], [(0, 0), (3, 100), (7, 15)])
    assert gantt(run) == [(1, 5, 7, [0])]
    assert run.energy._rows_it[-1] == 20 and run.energy._rows_cap[-1] == 15


def test_every_run_checks_the_replay_against_the_planners_board(tmp_path):
    """A board that says one thing and a replay that draws another is an invariant violation
    (here a planner that misreports 1 W in interval 3)."""
    from lease_manager.observers.invariants import InvariantViolation
    from lease_manager.policies.planners import InOrder

    class Misreporting(InOrder):
        def plan(self, tasks, board):
            board = super().plan(tasks, board)
            board.used[3] += 1
            return board

    path = tmp_path / "cap.csv"
    path.write_text("time,watts\n0,100\n")
    plugins = Plugins(entry_points=False)
    plugins.policies["planner"]["in-order"] = (Misreporting, "test")
    config = load_config(None, plugins.schema, ["simulation.resources=1 CPU:1 Memory:1024",
                                                *PLAN, f"power.power-cap={path}"])
    lease = be(1, 1, 2, 0, memory=1)
    lease.extra["watts"] = "10"
    with pytest.raises(InvariantViolation, match="interval 3, the planner's board 21 W"):
        Run(config, plugins, leases=[lease]).run()
