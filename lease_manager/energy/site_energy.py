"""A site's energy parts, built before its scheduler and given to its constructor: the node
power states (which nodes are off and could be booted), the power cap plans are placed under
(the states' :class:`~lease_manager.energy.power_cap.PowerCap`, or at-start's
:class:`~lease_manager.energy.counted_cap.CountedCap`), the boots planned ahead that
re-evaluation may lift, and the operating points; then the site's energy accounting."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from lease_manager.energy.counted_cap import CountedCap
from lease_manager.energy.counted_states import CountedPowerStates
from lease_manager.energy.energy_accounting import EnergyAccounting
from lease_manager.energy.node_states import NodePowerStates
from lease_manager.energy.operating_points import OperatingPoints
from lease_manager.energy.power_model import power_cap_from_config

if TYPE_CHECKING:
    from lease_manager.config.schema import Config
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.kernel.count_table import CountTable
    from lease_manager.kernel.scheduler import Enactment
    from lease_manager.kernel.scheduler.seams import PlannedBoots, PowerGate
    from lease_manager.kernel.table_protocol import PlannedTable, Table
    from lease_manager.policies import NodePowerPolicy, OperatingPointPolicy


class EnergyParts:
    """What one site's scheduler is built with when the site has a power model, and what its
    energy accounting reads."""

    __slots__ = ("model", "states", "power", "planned_boots", "operating_point",
                 "counted_cap")

    def __init__(self, model: PowerModel, states: NodePowerStates | CountedPowerStates,
                 power: PowerGate | None, planned_boots: PlannedBoots | None,
                 operating_point: OperatingPoints, counted_cap: CountedCap | None) -> None:
        self.model = model
        #: the nodes' power states (the engine steps them once it is built)
        self.states = states
        #: the power cap plans are placed under (None: no cap)
        self.power = power
        #: the boots planned ahead for plans (when-planned without a cap; else None)
        self.planned_boots = planned_boots
        #: sets each arriving lease's DVFS level and stretch
        self.operating_point = operating_point
        #: at-start under a cap: the cap as a bound on the VMs running (None otherwise)
        self.counted_cap = counted_cap


def energy_parts(config: Config, table: Table, model: PowerModel,
                 node_power: NodePowerPolicy, operating_point: OperatingPointPolicy, *,
                 origin: float, enactment: Enactment,
                 call_at: Callable[[float, Callable[[float], None]], None],
                 planned: bool) -> EnergyParts:
    """One site's energy parts on ``table`` (its slot table, before its scheduler is built):
    node power states from ``origin`` (the run's start), driven by the engine's steps once it
    is built; ``planned``: an offline plan holds the envelope (no cap in the states)."""
    initially_off = config.get("power", "initial-state") == "off"
    states: NodePowerStates | CountedPowerStates
    counted_cap = None
    if table.counted:   # at-start: node states follow from the counts plans need
        counted = cast("CountTable", table)
        counted_cap = _counted_cap(config, counted, model)
        states = CountedPowerStates(counted, model, node_power, origin=origin,
                                    initially_off=initially_off, enactment=enactment,
                                    call_at=call_at)
        power: PowerGate | None = counted_cap
        planned_boots: PlannedBoots | None = None
    else:
        try:
            states = NodePowerStates(
                cast("PlannedTable", table), model, node_power, origin=origin,
                initially_off=initially_off, enactment=enactment, call_at=call_at,
                cap=None if planned else power_cap_from_config(config, model))
        except ValueError as exc:
            raise config.error("power", "power-cap", str(exc)) from None
        power = states.cap
        planned_boots = states if states.cap is None else None
    levels = OperatingPoints(model, operating_point, config.get("power", "gamma"))
    return EnergyParts(model, states, power, planned_boots, levels, counted_cap)


def _counted_cap(config: Config, table: CountTable, model: PowerModel) -> CountedCap | None:
    """At-start under a power cap (``placement`` lets it through only where the site's power
    is a function of the VMs running): the cap as a bound on them, set on the table (None
    without a cap)."""
    series = power_cap_from_config(config, model)   # (constant, scaled)
    if series is None:
        return None
    policy = config.get("power", "policy-operating-point")
    cap = CountedCap(model, float(series.values[0]), table.vector, table.capacity,
                     0 if policy == "lowest" else model.top_level)
    try:
        most = cap.vm_limit()
    except ValueError as exc:
        raise config.error("power", "power-cap", str(exc)) from None
    if most is not None:
        table.cap_vms(most)
    return cap


def energy_accounting(config: Config, parts: EnergyParts, *, planned: bool,
                      site: str | None) -> EnergyAccounting:
    """The site's energy accounting of ``parts``; ``site`` names it in a run with several.
    With an offline plan (``planned``) or at-start's cap, the power is checked against the
    envelope as a whole."""
    model = parts.model
    # (the counted states have the interface of the node states that the accounting reads)
    states = cast("NodePowerStates", parts.states)
    # with a plan made offline (``planned``), or at-start's cap held by the counts, the power
    # is checked against the envelope as a whole
    envelope = (power_cap_from_config(config, model)
                if planned or parts.counted_cap is not None else None)
    if site is None:
        return EnergyAccounting(model, states, envelope=envelope)
    return EnergyAccounting(model, states, site=site, only=site, envelope=envelope)
