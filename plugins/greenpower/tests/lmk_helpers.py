"""Helpers of the green-power plugin's tests (a module name of its own)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

import lm_greenpower
from lease_manager import Lease, LeaseType, Run, VMRequest
from lease_manager.config.schema import load_config
from lease_manager.plugins import Plugins

ROOT = Path(__file__).resolve().parents[3]

#: the platform of the hand-computed instances: 1 s intervals, 10 W on, boot 1 s at 20 W,
#: shutdown 1 s at 15 W, nothing when off; tasks draw only their own watts
PLATFORM = ("power.pstates=1:10:10", "power.switch-on=1:20", "power.switch-off=1:15",
            "power.initial-state=off", "power.policy-node-power=switch-off-idle",
            "planning.interval=1")


def plugins() -> Plugins:
    """The built-in plugins and this one, whether or not it is installed."""
    return Plugins(entry_points=False, extra=[lm_greenpower])


def task(lease_id: int, duration: float, watts: float) -> Lease:
    """A one-VM best-effort task with its own power."""
    return Lease(lease_id, LeaseType.BEST_EFFORT, 0.0, VMRequest.uniform(1, [1, 1]), duration,
                 duration, extra={"watts": str(watts)})


def plan(tmp_path: Path, tasks: Sequence[tuple[float, float]],
         cap: Sequence[tuple[float, float]], planner: str, *settings: str,
         resources: str = "2 CPU:2 Memory:1024") -> tuple[Run, list[Lease]]:
    """Plan and replay ``tasks`` ((duration, watts)) under the step envelope ``cap`` with
    ``planner``; the run (finished, its invariants checked) and its leases. The core's power
    in every interval equals the planner's board's."""
    path = tmp_path / "cap.csv"
    path.write_text("time,watts\n" + "".join(f"{t},{w}\n" for t, w in cap))
    leases = [task(i, d, w) for i, (d, w) in enumerate(tasks, start=1)]
    p = plugins()
    config = load_config(None, p.schema, [f"simulation.resources={resources}", *PLATFORM,
                                          f"power.power-cap={path}",
                                          f"planning.policy-planner={planner}", *settings])
    run = Run(config, p, leases=leases)
    run.run()
    assert run.energy.violations() == []
    board = run.planning.board
    end = int(np.ceil(run.energy.window[1]))
    np.testing.assert_allclose(run.energy.profile.at(np.arange(end) + 0.5),
                               board.used[:end] + float(run.power.off_watts.sum()))
    return run, leases


def gantt(leases: Sequence[Lease]) -> list[tuple[int, float, float, int]]:
    """(lease, start, end, node) of every lease, in id order."""
    return [(l.id, l.start, l.end, int(l.allocations[0].nodes[0])) for l in leases]


def steps(run: Run) -> list[tuple[float, float]]:
    """The run's power profile as (time, watts) steps."""
    p = run.energy.profile
    return list(zip(p.times.tolist(), p.watts.tolist()))
