"""The plugins one run registers for its life: its policies (built for its context), the core's
observers, and the per-run plugins; all unregistered when the run is closed, so one
:class:`~lease_manager.plugins.Plugins` object serves any number of runs, one after another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lease_manager.observers.accounting import Accounting
from lease_manager.observers.invariants import InvariantChecker
from lease_manager.plugins import (
    ACCOUNTING_PLUGIN,
    BUILTIN_PLUGINS,
    DECISIONS_PLUGIN,
    INVARIANTS_PLUGIN,
)

if TYPE_CHECKING:
    from lease_manager.config.schema import Config
    from lease_manager.context import RunContext
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.kernel.resources import NodeSet
    from lease_manager.multisite import Site, SitesInvariants
    from lease_manager.observers.decisions import DecisionLog
    from lease_manager.observers.leases_csv import LeaseColumns
    from lease_manager.planning.mode import PlanningMode
    from lease_manager.plugins import Plugins

#: the scheduler's policies: kind -> the ``[scheduling]`` option that names it
SCHEDULING_POLICIES = (("admission", "policy-admission"), ("pricing", "policy-pricing"),
                       ("queue", "policy-queue"), ("host-selection", "policy-host-selection"),
                       ("preemption", "policy-preemption"))


class RunPlugins:
    """What a run registers with ``plugins``, by name, in order."""

    def __init__(self, plugins: Plugins) -> None:
        self.plugins = plugins
        self.names: list[str] = []

    def register(self, plugin: Any, name: str) -> None:
        self.plugins.pm.register(plugin, name=name)
        self.names.append(name)

    def policy(self, kind: str, name: str, ctx: RunContext, label: str = "") -> Any:
        """The policy ``name`` of ``kind``, built for ``ctx`` and registered. A policy from a
        package (not one of the core's own, whose answers its tests check) enters the core
        here: its answers are checked from now on (:func:`guard`)."""
        plugins = self.plugins
        policy = plugins.policy(kind, name)(ctx)
        self.register(policy, f"run:{kind}:{name}{label}")
        if plugins.policies[kind][name][1] in BUILTIN_PLUGINS:
            return policy
        from lease_manager.policies.answers import guard

        return guard(policy, kind, lambda: plugins.provider(kind, name))

    def policies(self, config: Config, ctx: RunContext
                 ) -> tuple[dict[str, Any], list[Any], list[Any]]:
        """The scheduler's policies by kind, the probes and the annotators ``config``
        names, built for ``ctx`` and registered."""
        policies = {kind: self.policy(kind, config.get("scheduling", option), ctx)
                    for kind, option in SCHEDULING_POLICIES}
        probes = [self.policy("probe", name, ctx) for name in config.get("accounting", "probes")]
        annotators = [self.policy("annotator", name, ctx)
                      for name in config.get("tracefile", "annotators")]
        return policies, probes, annotators

    def observers(self, config: Config, nodes: NodeSet, sites: Sequence[Site]
                  ) -> tuple[InvariantChecker | SitesInvariants | None, Accounting,
                             DecisionLog | None]:
        """The core's own observers, registered: the invariant checker (each site's, in a
        run with several; None without ``check-invariants``), the accountant and the
        decision log (None without ``decision-log``). Their hooks run before any other
        plugin's (tryfirst; among those pluggy calls the last registered first: the
        accountant first)."""
        invariants: InvariantChecker | SitesInvariants | None = None
        if config.get("accounting", "check-invariants"):
            if sites:
                from lease_manager.multisite import sites_invariants

                invariants = sites_invariants(sites, self.register)
            else:
                invariants = InvariantChecker(nodes.capacity)
                self.register(invariants, INVARIANTS_PLUGIN)
        accounting = Accounting(nodes.types.names)
        self.register(accounting, ACCOUNTING_PLUGIN)
        decisions = None
        if config.get("accounting", "decision-log"):
            from lease_manager.observers.decisions import DecisionLog

            decisions = DecisionLog()
            self.register(decisions, DECISIONS_PLUGIN)
        return invariants, accounting, decisions

    def planning(self, config: Config, ctx: RunContext, power: PowerModel | None,
                 policies: dict[str, Any]) -> PlanningMode | None:
        """The offline planning mode (``[planning] policy-planner``; None without a planner),
        with the host selection and admission that pin its plan in ``policies``."""
        name = config.get("planning", "policy-planner")
        if name == "none":
            return None
        from lease_manager.planning.mode import PlanningMode  # (the planner's runs only)

        mode = PlanningMode(config, self.policy("planner", name, ctx), ctx.site, power)
        policies["host-selection"] = mode.hosts(policies["host-selection"])
        policies["admission"] = mode.admission(policies["admission"])
        return mode

    def lease_columns(self, ctx: RunContext) -> list[LeaseColumns]:
        """The plugins' ``leases.csv`` columns (``lease_columns``), in pluggy's order."""
        columns: list[LeaseColumns] = []
        for part in self.plugins.pm.hook.lease_columns(ctx=ctx):
            columns.extend(part or ())
        return columns

    def unregister_all(self) -> None:
        """Unregister what was registered, the last first (idempotent)."""
        for name in reversed(self.names):
            self.plugins.pm.unregister(name=name)
        self.names.clear()
