"""The offline planning mode (``[planning] policy-planner``): every lease known at time 0,
planned on a grid under the envelope by a planner, then replayed and checked by the core.

The run reads the whole workload (annotators applied), builds the
:class:`~lease_manager.planning.board.PowerBoard` of its site (nodes, ``[power]`` model,
``[power] power-cap``, ``[power] look-ahead``/``look-back``), gives the planner the leases as
:class:`~lease_manager.planning.board.PlanTask` objects and times its CPU. Each planned lease is
then submitted at time 0 as an advance reservation at its planned start, for its duration
rounded up to whole intervals, on its planned node; a lease the planner did not place is
rejected. The ordinary machinery does the rest: node boots and shutdowns by ``switch-off-idle``
(whose rules the board follows), energy accounting, and the invariants, which check the plan
independently of the board: no node over-committed, every lease once, no lease on a node that
is not on, the power never above the envelope and its integral equal to the energy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.energy.lease_power import bad_watts, lease_watts
from lease_manager.kernel.lease import LeaseType
from lease_manager.planning.board import PlanTask, Platform, PowerBoard, envelope_intervals

if TYPE_CHECKING:
    from lease_manager.config.schema import Config
    from lease_manager.energy.energy_accounting import EnergyAccounting
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.energy.series import StepSeries
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.resources import NodeSet
    from lease_manager.kernel.slottable import SlotTableView
    from lease_manager.policies import AdmissionPolicy, HostSelectionPolicy, Planner

#: what a lease the planner did not place is rejected with
UNPLACED = "the planner placed it nowhere (no room under the envelope within the horizon)"


class PlanningMode:
    """One run's offline planning: checks the configuration, plans, and pins the plan."""

    def __init__(self, config: Config, planner: Planner, nodes: NodeSet,
                 model: PowerModel | None) -> None:
        self.config = config
        self.planner = planner
        self.interval = float(config.get("planning", "interval"))
        self.nodes = nodes
        if self.interval <= 0:
            raise config.error("planning", "interval", "must be above 0 seconds")
        if model is None:
            raise config.error("planning", "policy-planner", "offline planning needs a "
                               "[power] model (pstates or cubic-law)")
        self.model = model
        self._check(config, nodes, model)
        #: lease id -> planned node, and the leases the planner did not place
        self.node_of: dict[int, int] = {}
        self.unplaced: set[int] = set()
        self.cpu_seconds = 0.0
        self.board: PowerBoard | None = None
        self.tasks: list[PlanTask] = []

    def _check(self, config: Config, nodes: NodeSet, model: PowerModel) -> None:
        need = (("policy-node-power", "switch-off-idle"), ("initial-state", "off"))
        for option, value in need:
            if config.get("power", option) != value:
                raise config.error("power", option, f"offline planning plans machines off "
                                   f"when idle: set {option} = {value}")
        if config.get("power", "idle-timeout") != 0:
            raise config.error("power", "idle-timeout", "offline planning switches machines "
                               "off as soon as they are idle: set idle-timeout = 0")
        if nodes.groups and len(nodes.groups) > 1:
            raise config.error("simulation", "resources", "offline planning needs identical "
                               "nodes (one node group)")
        if config.sites:
            raise config.error("planning", "policy-planner", "offline planning plans one site")
        for option, seconds in (("switch-on", float(model.on_seconds[0])),
                                ("switch-off", float(model.off_seconds[0]))):
            steps = seconds / self.interval
            if abs(steps - round(steps)) > 1e-9:
                raise config.error("power", option, f"offline planning needs switching times "
                                   f"of whole intervals ({seconds:g} s is not a multiple of "
                                   f"[planning] interval = {self.interval:g} s)")

    # ------------------------------------------------------------------------- planning
    def platform(self) -> Platform:
        model = self.model
        off = float(model.off_watts[0])
        return Platform(
            machines=self.nodes.count, cores=int(self.nodes.capacity[0, model.cpu]),
            p_stat=max(float(model.idle[0]) - off, 0.0),
            p_on=max(float(model.on_watts[0]) - off, 0.0),
            t_on=round(float(model.on_seconds[0]) / self.interval),
            p_off=max(float(model.off_switch_watts[0]) - off, 0.0),
            t_off=round(float(model.off_seconds[0]) / self.interval),
            look_ahead=self.config.get("power", "look-ahead"),
            look_back=self.config.get("power", "look-back"))

    def task(self, index: int, lease: Lease) -> PlanTask | None:
        """The lease as the board sees it, or None if it cannot be a task (several VM shapes,
        a bad ``watts`` attribute: the core rejects it the usual way)."""
        if len(lease.vms.counts) != 1 or bad_watts(lease) or lease.unlimited:
            return None
        model = self.model
        cpu = model.cpu
        per_vm = float(lease.vms.vectors[0, cpu])
        cores = math.ceil(per_vm * lease.vms.count - 1e-9)
        watts = lease_watts(lease)
        if watts is None:
            share = per_vm * lease.vms.count / float(self.nodes.capacity[0, cpu])
            dynamic = share * (float(model.full[0, model.top_level]) - float(model.idle[0]))
            total = max(dynamic, 0.0)
        else:
            total = watts * lease.vms.count
        length = max(1, math.ceil(lease.requested_duration / self.interval - 1e-9))
        return PlanTask(index, lease.id, length, cores, total)

    def plan(self, leases: Sequence[Lease], cap: StepSeries) -> list[Lease]:
        """Plan ``leases``, pin each planned lease to its start and node, and return them all
        (those not planned are rejected when submitted)."""
        tasks = [t for t in (self.task(i, lease) for i, lease in enumerate(leases))
                 if t is not None]
        #: the tasks the planner was given
        self.tasks = tasks
        horizon = self._horizon(cap, tasks)
        platform = self.platform()
        off = float(self.model.off_watts.sum())
        envelope = envelope_intervals(cap.times, cap.values, self.interval, 0.0, horizon) - off
        if (envelope < -1e-6).any():
            raise self.config.error("power", "power-cap", f"the envelope "
                                    f"({float(envelope.min()) + off:g} W at its lowest) is "
                                    f"below what the nodes draw when off ({off:g} W)")
        board = PowerBoard(platform, np.maximum(envelope, 0.0), horizon)
        cpu0 = time.process_time()
        planned = self.planner.plan(tasks, board)
        self.cpu_seconds = time.process_time() - cpu0
        self.board = planned
        by_id = {lease.id: lease for lease in leases}
        placed = {task.lease_id: spot for task, spot in planned.placements}
        for task in tasks:
            lease = by_id[task.lease_id]
            spot = placed.get(task.lease_id)
            if spot is None:
                self.unplaced.add(lease.id)
                continue
            length = task.length * self.interval
            lease.type = LeaseType.ADVANCE_RESERVATION
            lease.start_request = spot.x * self.interval
            lease.requested_duration = lease.actual_duration = length
            self.node_of[lease.id] = spot.machine
        for lease in leases:
            lease.submit = 0.0
        return list(leases)

    def _horizon(self, cap: StepSeries, tasks: Sequence[PlanTask]) -> int:
        given = float(self.config.get("planning", "horizon"))
        if given > 0:
            return max(1, math.floor(given / self.interval + 1e-9))
        last = float(cap.times[-1]) if len(cap.times) else 0.0
        end = math.ceil(last / self.interval - 1e-9)
        if float(cap.values[-1]) <= float(self.model.off_watts.sum()):
            return max(end, 1)      # no power after the last change: nothing runs then
        pf = self.platform()
        return end + sum(t.length for t in tasks) + pf.t_on + pf.t_off + 1

    def violations(self, energy: EnergyAccounting) -> list[str]:
        """Where the power the core replayed differs from the plan's, interval by interval
        (the board and the core's node power states follow the same rules: they must agree)."""
        board = self.board
        if board is None:
            return []
        start, end = energy.window
        count = min(math.ceil(end / self.interval - 1e-9), board.horizon)
        mid = (np.arange(count) + 0.5) * self.interval
        inside = (mid >= start) & (mid < end)
        replayed = energy.profile.at(mid[inside])
        planned = board.used[:count][inside] + float(self.model.off_watts.sum())
        wrong = np.flatnonzero(np.abs(replayed - planned) > 1e-6 * np.maximum(planned, 1.0))
        return [f"the replayed plan draws {replayed[i]:g} W in interval "
                f"{int(mid[inside][i] // self.interval)}, the planner's board "
                f"{planned[i]:g} W" for i in wrong[:5].tolist()]

    def summary(self) -> dict[str, Any]:
        board = self.board
        return {
            "planner": self.planner.name,
            "planner_cpu_seconds": self.cpu_seconds,
            "planning_interval": self.interval,
            "planned_leases": len(self.node_of),
            "planned_makespan": (board.makespan if board is not None else 0) * self.interval,
            "planned_switch_ons": board.switch_ons() if board is not None else 0,
        }

    # ----------------------------------------------------------------- pinning the plan
    def hosts(self, inner: HostSelectionPolicy) -> PlannedHosts:
        return PlannedHosts(self, inner)

    def admission(self, inner: AdmissionPolicy) -> PlannedAdmission:
        return PlannedAdmission(self, inner)


class PlannedHosts:
    """Host selection that puts a planned lease on its planned node."""

    orders_every_node = False

    def __init__(self, mode: PlanningMode, inner: HostSelectionPolicy) -> None:
        self.mode = mode
        self.inner = inner

    def order_hosts(self, lease: Lease, start: float, end: float,
                    table: SlotTableView) -> Sequence[int] | np.ndarray:
        node = self.mode.node_of.get(lease.id)
        if node is None:
            return self.inner.order_hosts(lease, start, end, table)
        return [node]


class PlannedAdmission:
    """Admission that rejects the leases the planner did not place."""

    def __init__(self, mode: PlanningMode, inner: AdmissionPolicy) -> None:
        self.mode = mode
        self.inner = inner

    def admit(self, lease: Lease, now: float) -> str | None:
        if lease.id in self.mode.unplaced:
            return UNPLACED
        return self.inner.admit(lease, now)
