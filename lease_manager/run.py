"""A run: the site, scheduler, policies, clock and outputs built from one configuration.

Plugins do not see the ``Run``: hooks and policies get its
:class:`~lease_manager.context.RunContext` (``run.ctx``). A run registers its policies and
the core's observers (accounting, the invariant checker) as plugins when it is built and
unregisters them when it is closed, so one :class:`~lease_manager.plugins.Plugins` object
serves any number of runs, one after another.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lease_manager import placement
from lease_manager.config.schema import Config, load_config
from lease_manager.context import RunContext
from lease_manager.energy.counted_cap import CountedCap
from lease_manager.energy.counted_states import CountedPowerStates
from lease_manager.energy.energy_accounting import EnergyAccounting
from lease_manager.energy.lease_power import lease_watts
from lease_manager.energy.node_states import NodePowerStates
from lease_manager.energy.operating_points import OperatingPoints
from lease_manager.energy.power_model import (
    PowerModel,
    power_cap_from_config,
    power_model_from_config,
)
from lease_manager.energy.series import StepSeries
from lease_manager.errors import LeaseManagerError, TraceError
from lease_manager.input_files import input_problem
from lease_manager.kernel.clock import RealClock, SimulatedClock
from lease_manager.kernel.count_table import CountTable
from lease_manager.kernel.engine import Engine, ReplayEnactment
from lease_manager.kernel.events import Timeline
from lease_manager.kernel.reallocation import LEASE_COLUMNS, Reallocation
from lease_manager.kernel.resources import NodeSet, parse_amounts
from lease_manager.kernel.scheduler import LeaseScheduler, SchedulerSettings, SuspendResume
from lease_manager.kernel.scheduler.haizea_resumption import HaizeaSuspendResume
from lease_manager.kernel.scheduler.image_transfer import ImageTransfers
from lease_manager.kernel.slottable import SlotTable
from lease_manager.multisite import (
    Site,
    SiteSchedulers,
    SitesEnergy,
    SitesInvariants,
    SiteTables,
    check_sites,
)
from lease_manager.observers.accounting import Accounting, write_summary
from lease_manager.observers.decisions import DECISIONS_FILE, DecisionLog
from lease_manager.observers.invariants import InvariantChecker, stranded
from lease_manager.observers.metrics import Metrics
from lease_manager.plugins import (
    ACCOUNTING_PLUGIN,
    BUILTIN_PLUGINS,
    DECISIONS_PLUGIN,
    ENERGY_PLUGIN,
    INVARIANTS_PLUGIN,
    MALLEABLE_PLUGIN,
    Plugins,
)
from lease_manager.policies.answers import guard
from lease_manager.workload.lwf import is_lwf, read_lwf
from lease_manager.workload.overheads import read_image_file, with_images, with_overheads
from lease_manager.workload.site_source import site_nodes
from lease_manager.workload.swf import SWFConversion, SWFReader, TraceStats, swf_leases
from lease_manager.workload.tasks import is_task_file, read_tasks

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.scheduler import Enactment
    from lease_manager.planning.mode import PlanningMode


class Run:
    """One replay (or real-time run) of a workload under one configuration."""

    #: the energy accounting (None without a ``[power]`` model)
    energy: EnergyAccounting | None

    def __init__(self, config: Config, plugins: Plugins | None = None, *,
                 leases: Iterable[Lease] | None = None,
                 clock: SimulatedClock | RealClock | None = None, serve: bool = False,
                 enactment: Callable[[Run], Enactment] | None = None) -> None:
        self.config = config
        self.plugins = plugins if plugins is not None else Plugins()
        self._registered: list[str] = []
        self.plugins.begin_run(self)
        try:
            self._build(leases, clock, serve, enactment)
        except BaseException:
            self.close()
            raise

    def _build(self, leases: Iterable[Lease] | None, clock: SimulatedClock | RealClock | None,
               serve: bool, enactment: Callable[[Run], Enactment] | None) -> None:
        config = self.config
        self.timeline = Timeline()
        self.metrics = Metrics()
        self.trace_stats = TraceStats()
        self.trace_reader: SWFReader | None = None
        #: the sites' tables that count VMs (``placement = at-start``)
        self._counted: list[CountTable] = []
        one_site = None if config.sites else site_nodes(config)
        #: the placement that runs, and why (``[scheduling] placement``, ``auto``'s choice)
        self.placement = placement.choose(config, self.plugins, serve=serve,
                                          from_trace=leases is None, nodes=one_site)
        #: the sites of a run with several (``[site:NAME]``; empty: one site)
        self.sites = [self._site(name) for name in config.sites]
        if self.sites:
            check_sites(self.sites)
            self.nodes, self.table = self.sites[0].nodes, self.sites[0].table
        else:
            assert one_site is not None
            self.nodes = one_site
            self.table = self._new_table(config, self.nodes)
        #: what plugins see of this run
        self.ctx = self._context(config, self.nodes, self.table)
        self.ctx.sites = {site.name: site.ctx for site in self.sites}

        self._build_policies(config)
        #: offline planning (``[planning] policy-planner``; None: an ordinary replay)
        self.planning = self._planning_mode(config)
        self._hooks = HookRelay(self.plugins, self.ctx)
        self.enactment = (enactment(self) if enactment is not None
                          else ReplayEnactment(self.timeline))
        tables: Any = self.table
        if self.sites:
            for site in self.sites:
                site.scheduler = self._build_scheduler(site.config, site.table)
                site.ctx.scheduler.bind(site.scheduler)
            selection = self._instantiate("site-selection",
                                          config.get("simulation", "policy-site-selection"))
            self.scheduler: Any = SiteSchedulers(
                self.sites, selection, cycle=config.get("simulation", "site-selection-cycle"),
                call_at=lambda time, fn: self.engine.call_at(time, fn))
            tables = SiteTables([site.table for site in self.sites])
        else:
            self.scheduler = self._build_scheduler(config)
        self.ctx.scheduler.bind(self.scheduler)
        if clock is None:
            if config.get("simulation", "clock") == "real":
                clock = RealClock(speedup=config.get("simulation", "speedup"))
            else:
                clock = SimulatedClock()
        self.clock = clock
        arrivals = self._checked(leases if leases is not None else self._trace_leases())
        if self.planning is not None:
            arrivals = iter(self.planning.plan(list(arrivals), self._envelope(config)))
        self.engine = Engine(self.scheduler, tables, self.timeline, clock, arrivals,
                             stop_when=config.get("simulation", "stop-when"),
                             runtime=config.get("simulation", "runtime"), serve=serve)
        self.started_at = clock.now()
        for counted in self._counted:   # what nodes have free is kept for the clock's now
            counted.set_now(self.started_at)
            self.engine.before_step.insert(0, counted.set_now)
        if not serve:
            self.ctx._peek = self.engine.peek_arrivals
        if self.sites:
            self.scheduler.origin = self.started_at   # site-selection cycles count from it
        if self.sites:
            self._build_sites_energy()
        elif self.power is not None:
            self._build_energy(config, self.power)
        self.reallocation: Reallocation | None = None
        if config.get("malleable", "policy-allocation") != "none":
            self._build_reallocation(config)
        self.summary: dict[str, Any] = {}

    def _new_table(self, config: Config, nodes: NodeSet) -> SlotTable:
        """The site's slot table: one that counts VMs when the run's placement is at-start."""
        if not self.placement.at_start:
            return SlotTable(nodes)
        shape = self.placement.vm_shape   # an LWF trace's one VM shape
        table: Any = CountTable(nodes, vm_vector(config, nodes) if shape is None else shape,
                                origin=0.0)
        self._counted.append(table)
        return table

    def _build_reallocation(self, config: Config) -> None:
        """Malleable leases: the allocation policy and what carries its decisions out, with
        their ``leases.csv`` columns after any others."""
        if self.sites:
            raise config.error("malleable", "policy-allocation", "malleable leases need a "
                               "run with one site")
        policy = self._instantiate("allocation", config.get("malleable", "policy-allocation"))
        try:
            self.reallocation = Reallocation(
                self.scheduler, policy, epoch=config.get("malleable", "epoch"),
                migration_time=config.get("malleable", "migration-time"),
                migration_energy=config.get("malleable", "migration-energy"),
                origin=self.started_at)
        except ValueError as exc:
            raise config.error("malleable", "migration-energy", str(exc)) from None
        self._register(self.reallocation, MALLEABLE_PLUGIN)
        self.engine.soft_wake.append(self.reallocation.next_wake)
        accounting = self.accounting
        before, values = accounting.extra_columns, accounting.extra_values
        accounting.extra_columns = before + LEASE_COLUMNS
        accounting.extra_values = (
            (lambda lease: values(lease) + Reallocation.lease_values(lease)) if values
            else Reallocation.lease_values)

    def _context(self, config: Config, nodes: NodeSet, table: SlotTable) -> RunContext:
        return RunContext(config, nodes, table, self.metrics, lambda: self.clock.now(),
                          lambda time, fn: self.engine.call_at(time, fn))

    def _site(self, name: str) -> Site:
        config = self.config.for_site(name)
        nodes = site_nodes(config)
        table = self._new_table(config, nodes)
        return Site(name, config, nodes, table, self._context(config, nodes, table))

    def _attach_energy(self, config: Config, table: SlotTable, model: PowerModel,
                       scheduler: LeaseScheduler, node_power: Any, operating_point: Any,
                       site: str | None) -> EnergyAccounting:
        """One site's node power states (driven by the engine's steps), its operating points
        and its energy accounting, registered as a plugin; ``site`` names it in a run with
        several."""
        states: Any
        counted_cap = None
        if table.counted:   # at-start: node states follow from the counts plans need
            counted_cap = self._counted_cap(config, cast(CountTable, table), model)
            states = CountedPowerStates(
                cast(CountTable, table), model, node_power, origin=self.started_at,
                initially_off=config.get("power", "initial-state") == "off",
                scheduler=scheduler, enactment=self.enactment, call_at=self.engine.call_at)
        else:
            try:
                states = NodePowerStates(
                    table, model, node_power, origin=self.started_at,
                    initially_off=config.get("power", "initial-state") == "off",
                    scheduler=scheduler, enactment=self.enactment,
                    call_at=self.engine.call_at,
                    cap=(None if self.planning is not None
                         else power_cap_from_config(config, model)))
            except ValueError as exc:
                raise config.error("power", "power-cap", str(exc)) from None
        self.engine.before_step.append(states.before_step)
        self.engine.after_step.append(states.after_step)
        self.engine.soft_wake.append(states.next_wake)
        if states.cap is not None:
            self.engine.wake_while_queued = True
        scheduler.operating_point = OperatingPoints(model, operating_point,
                                                    config.get("power", "gamma"))
        energy = (EnergyAccounting(model, states) if site is None
                  else EnergyAccounting(model, states, site=site, only=site))
        if self.planning is not None:   # the plan is checked against the envelope
            energy.envelope = power_cap_from_config(config, model)
        if counted_cap is not None:   # at-start: the counts hold the cap, checked as one
            scheduler.power = counted_cap
            energy.envelope = power_cap_from_config(config, model)
        if site is None:
            self.ctx.power_cap = (energy.envelope if self.planning is not None
                                  or counted_cap is not None
                                  else states.cap.cap if states.cap is not None else None)
        self._register(energy, ENERGY_PLUGIN if site is None else f"{ENERGY_PLUGIN}:{site}")
        return energy

    def _counted_cap(self, config: Config, table: CountTable,
                     model: PowerModel) -> CountedCap | None:
        """At-start under a power cap (``placement`` lets it through only where the site's
        power is a function of the VMs running): the cap as a bound on them, set on the
        table (None without a cap)."""
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

    def _build_energy(self, config: Config, model: PowerModel) -> None:
        """The run's energy accounting (one site)."""
        self.energy = energy = self._attach_energy(
            config, self.table, model, self.scheduler, self.policies["node-power"],
            self.policies["operating-point"], None)
        self.node_states = energy.states
        self.accounting.extra_columns = energy.LEASE_COLUMNS
        self.accounting.extra_values = energy.lease_values
        self._lease_watts_column()

    def _build_sites_energy(self) -> None:
        """Each site's energy accounting (a run with several sites)."""
        for site in self.sites:
            if site.ctx.power is not None:
                site.energy = self._attach_energy(site.config, site.table, site.ctx.power,
                                                  site.scheduler, site.node_power,
                                                  site.operating_point, site.name)
        if any(site.energy is not None for site in self.sites):
            self.energy = energy = SitesEnergy(self.sites)   # type: ignore[assignment]
            self.accounting.extra_columns = ("site",) + energy.LEASE_COLUMNS
            self.accounting.extra_values = lambda lease: (lease.site,) + energy.lease_values(lease)
            self._lease_watts_column()
        else:
            self.accounting.extra_columns = ("site",)
            self.accounting.extra_values = lambda lease: (lease.site,)

    def _lease_watts_column(self) -> None:
        """``leases.csv`` gets a ``watts`` column when some lease has its own power."""
        self.accounting.optional_columns = ("watts",)
        self.accounting.optional_values = lambda lease: (lease_watts(lease),)

    def _build_policies(self, config: Config) -> None:
        """The run's policies, probes and annotators, and the core's observers, registered."""
        self.policies: dict[str, Any] = {}
        for kind, option in (("admission", "policy-admission"), ("pricing", "policy-pricing"),
                             ("queue", "policy-queue"),
                             ("host-selection", "policy-host-selection"),
                             ("preemption", "policy-preemption")):
            name = config.get("scheduling", option)
            self.policies[kind] = self._instantiate(kind, name)
        self.probes = [self._instantiate("probe", name)
                       for name in config.get("accounting", "probes")]
        self.annotators = [self._instantiate("annotator", name)
                           for name in config.get("tracefile", "annotators")]
        # the core's own observers: plugins whose hooks run before any other plugin's
        # (tryfirst; among those pluggy calls the last registered first: accounting first)
        self.invariants: Any = None
        if config.get("accounting", "check-invariants"):
            if self.sites:
                checkers = []
                for site in self.sites:
                    checker = site.invariants = InvariantChecker(site.nodes.capacity,
                                                                 only=site.name)
                    self._register(checker, f"{INVARIANTS_PLUGIN}:{site.name}")
                    checkers.append((site.name, checker))
                self.invariants = SitesInvariants(checkers)
            else:
                self.invariants = InvariantChecker(self.nodes.capacity)
                self._register(self.invariants, INVARIANTS_PLUGIN)
        self.accounting = Accounting(self.nodes.types.names)
        self._register(self.accounting, ACCOUNTING_PLUGIN)
        self.decisions: DecisionLog | None = None
        self._switches_logged = False
        if config.get("accounting", "decision-log"):
            self.decisions = DecisionLog()
            self._register(self.decisions, DECISIONS_PLUGIN)
        self.energy = None
        if self.sites:
            self._build_site_power()
            self.power = self.sites[0].ctx.power
            self.ctx.power = self.power
            return
        #: the ``[power]`` model (None: no energy accounting)
        self.power = power_model_from_config(config, self.nodes)
        self.ctx.power = self.power
        if self.power is not None:
            for kind in ("node-power", "operating-point"):
                self.policies[kind] = self._instantiate(kind,
                                                        config.get("power", f"policy-{kind}"))

    def _build_site_power(self) -> None:
        """Each site's power model and its own node-power and operating-point policies."""
        models = [power_model_from_config(site.config, site.nodes) for site in self.sites]
        if any(m is None for m in models) and any(m is not None for m in models):
            site = self.sites[[m is None for m in models].index(True)]
            raise site.config.error("power", "pstates", f"site {site.name!r} has no power "
                                    f"model and others have one (give every site one, or "
                                    f"none)")
        for site, model in zip(self.sites, models):
            site.ctx.power = model
            if model is None:
                continue
            for kind in ("node-power", "operating-point"):
                name = site.config.get("power", f"policy-{kind}")
                policy = self._instantiate(kind, name, site.ctx, f":{site.name}")
                setattr(site, kind.replace("-", "_"), policy)


    def _planning_mode(self, config: Config) -> PlanningMode | None:
        """The offline planning mode, with the host selection and admission that pin its plan
        (None without a planner)."""
        name = config.get("planning", "policy-planner")
        if name == "none":
            return None
        from lease_manager.planning.mode import PlanningMode  # (the planner's runs only)

        mode = PlanningMode(config, self._instantiate("planner", name), self.nodes, self.power)
        self.policies["host-selection"] = mode.hosts(self.policies["host-selection"])
        self.policies["admission"] = mode.admission(self.policies["admission"])
        return mode

    def _envelope(self, config: Config) -> StepSeries:
        assert self.power is not None, "planning needs a power model"
        cap = power_cap_from_config(config, self.power)
        return cap if cap is not None else StepSeries.constant(math.inf)

    def _build_scheduler(self, config: Config, table: SlotTable | None = None
                         ) -> LeaseScheduler:
        """The scheduler of ``table`` (the run's), with the run's policies, enactment and hook
        relay."""
        table = table if table is not None else self.table
        names = table.nodes.types.names
        model = (HaizeaSuspendResume if config.get("scheduling", "suspendresume-model")
                 == "haizea" else SuspendResume)
        suspend_resume = model(
            names.index("Memory") if "Memory" in names else None,
            config.get("scheduling", "suspend-rate"), config.get("scheduling", "resume-rate"),
            config.get("scheduling", "suspendresume-exclusion"),
            config.get("scheduling", "enactment-overhead"),
            suspend_override=config.get("scheduling", "override-suspend-time"),
            resume_override=config.get("scheduling", "override-resume-time"))
        migration = config.get("scheduling", "migration")
        settings = SchedulerSettings(
            backfilling=config.get("scheduling", "backfilling"),
            backfilling_reservations=config.get("scheduling", "backfilling-reservations"),
            suspension=config.get("scheduling", "suspension"), suspend_resume=suspend_resume,
            shutdown=config.get("scheduling", "shutdown-time"),
            # Haizea's shutdown time
            shutdown_per_vm=(config.get("scheduling", "enactment-overhead")
                             if config.get("scheduling", "overhead-in-shutdown") else 0.0),
            shutdown_after_early_end=config.get("scheduling", "shutdown-after-early-end"),
            threshold_factor=config.get("scheduling", "scheduling-threshold-factor"),
            forced_threshold=config.get("scheduling", "force-scheduling-threshold"),
            migration_bandwidth=(None if migration == "no" else math.inf
                                 if migration == "yes-notransfer"
                                 else config.get("scheduling", "migration-bandwidth")),
            reevaluation=config.get("scheduling", "reevaluation"),
            # a replay knows when every lease's work ends (Haizea's re-plan takes simultaneous
            # early ends in its own order)
            predicted_ends=isinstance(self.enactment, ReplayEnactment),
            preemption_order=config.get("scheduling", "preemption-order"),
            haizea_planning=isinstance(suspend_resume, HaizeaSuspendResume))
        preparation = None
        if config.get("preparation", "lease-preparation") == "imagetransfer":
            preparation = ImageTransfers(
                len(table.capacity),
                bandwidth=config.get("preparation", "imagetransfer-bandwidth"),
                mechanism=config.get("preparation", "transfer-mechanism"),
                avoid_redundant=config.get("preparation", "avoid-redundant-transfers"),
                reuse=config.get("preparation", "diskimage-reuse"),
                cache_size=config.get("preparation", "diskimage-cache-size"),
                force_time=config.get("preparation", "force-imagetransfer-time"))
        return LeaseScheduler(
            table, self.timeline,
            admission=self.policies["admission"], pricing=self.policies["pricing"],
            queue=self.policies["queue"], host_selection=self.policies["host-selection"],
            preemption=self.policies["preemption"], settings=settings,
            preparation=preparation, enactment=self.enactment, emit=self._hooks)

    def _instantiate(self, kind: str, name: str, ctx: RunContext | None = None,
                     label: str = "") -> Any:
        """The policy ``name`` of ``kind``, built for ``ctx`` (the run's by default) and
        registered. A policy from a package (not one of the core's own, whose answers its
        tests check) enters the core here: its answers are checked from now on
        (:func:`guard`)."""
        policy = self.plugins.policy(kind, name)(ctx or self.ctx)
        self._register(policy, f"run:{kind}:{name}{label}")
        plugins = self.plugins
        if plugins.policies[kind][name][1] in BUILTIN_PLUGINS:
            return policy
        return guard(policy, kind, lambda: plugins.provider(kind, name))

    def _register(self, plugin: Any, name: str) -> None:
        self.plugins.pm.register(plugin, name=name)
        self._registered.append(name)

    def close(self) -> None:
        """Unregister this run's policies and observers (idempotent): the ``Plugins`` object
        is then free for another run."""
        for name in reversed(self._registered):
            self.plugins.pm.unregister(name=name)
        self._registered.clear()
        self.plugins.end_run(self)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def now(self) -> float:
        return self.clock.now()

    def call_at(self, time: float, fn: Callable[[float], None]) -> None:
        """Call ``fn(now)`` at ``time`` (see :meth:`RunContext.call_at`)."""
        self.ctx.call_at(time, fn)

    def rng(self, name: str) -> np.random.Generator:
        """The random stream called ``name`` (see :meth:`RunContext.rng`)."""
        return self.ctx.rng(name)

    # ---------------------------------------------------------------------------- inputs
    def vm_vector(self) -> np.ndarray:
        """The per-VM capacity of trace leases (``[tracefile] vm-resources``), validated."""
        return vm_vector(self.config, self.nodes)

    def swf_conversion(self) -> SWFConversion:
        """How this run turns SWF jobs into leases (``[tracefile]`` options)."""
        return swf_conversion(self.config, self.nodes)

    def _trace_leases(self) -> Iterator[Lease]:
        cfg = self.config
        path = cfg.get("tracefile", "tracefile")
        if not path:
            raise cfg.error("tracefile", "tracefile", "no trace file given (set it in "
                                                      "[tracefile] or with --set)")
        problem = input_problem(path, limit=None)
        if problem:
            raise cfg.error("tracefile", "tracefile", f"{path} {problem}")
        if not Path(path).is_file():
            raise cfg.error("tracefile", "tracefile", f"trace file not found: {path}")
        if is_lwf(path):
            workload = read_lwf(path, self.nodes.types)
            self.trace_stats.read = self.trace_stats.replayed = len(workload.leases)
            leases: Iterable[Lease] = workload.leases
        elif is_task_file(path):
            tasks = read_tasks(path, self.vm_vector())
            self.trace_stats.read = self.trace_stats.replayed = len(tasks)
            leases = tasks
        else:
            self.trace_reader = SWFReader(path,
                                          skip_bad_lines=cfg.get("tracefile", "skip-bad-lines"))
            leases = swf_leases(self.trace_reader, self.swf_conversion(), self.trace_stats)
        injection = cfg.get("tracefile", "injectionfile")
        if injection:
            if not Path(injection).is_file():
                raise cfg.error("tracefile", "injectionfile", f"file not found: {injection}")
            from lease_manager.workload.convert import merge_workloads

            leases = merge_workloads(leases, read_lwf(injection, self.nodes.types).leases)
        imagefile = cfg.get("tracefile", "imagefile")
        if imagefile:   # Haizea's: disk images given to the leases in order
            leases = with_images(leases, read_image_file(imagefile))
        add, memory = cfg.get("tracefile", "add-overhead"), cfg.get("tracefile", "override-memory")
        if add != "none" or memory >= 0:   # Haizea's overheads (workload/overheads.py)
            names = self.nodes.types.names
            leases = with_overheads(
                leases, add=add, slowdown_percent=cfg.get("tracefile", "runtime-slowdown-overhead"),
                boot=cfg.get("tracefile", "bootshutdown-overhead"), memory=memory,
                slowdown_as=cfg.get("tracefile", "runtime-slowdown-as"),
                memory_index=names.index("Memory") if "Memory" in names else None)
        return iter(leases)

    def _checked(self, leases: Iterable[Lease]) -> Iterator[Lease]:
        strict = self.config.get("tracefile", "oversized") == "error"
        annotators = self.annotators
        for lease in leases:
            for annotator in annotators:
                annotator.annotate(lease)
            if strict:
                reason = self.scheduler.oversize_reason(lease)
                if reason:
                    file, _, line = (lease.origin or "").rpartition(":")
                    raise TraceError(reason, file=file or None,
                                     line=int(line) if line.isdigit() else None,
                                     field="requested processors" if self.trace_reader
                                     else "<nodes>")
            yield lease

    # ------------------------------------------------------------------------------ run
    def run(self, progress: Callable[[float], None] | None = None) -> dict[str, Any]:
        """Run to the stop condition; return the summary (also kept as ``self.summary``). The
        run is closed afterwards, even on error."""
        try:
            wall0, cpu0 = time.perf_counter(), time.process_time()
            self.start()
            try:
                self.engine.run(progress)
            except NotImplementedError as exc:
                if not self.placement.at_start or "at-start" not in str(exc):
                    raise
                # a policy (a third-party one, say) asked the counting table about a node's
                # future plan, which it does not keep
                raise LeaseManagerError(
                    f"placement = {self.placement.label()}: {exc} (a policy asked about "
                    f"nodes' future plans; set [scheduling] placement = when-planned)"
                ) from None
            summary = self.finish()
            if self.invariants is not None:
                if self.engine.exhausted:
                    self.invariants.violations += stranded(self.scheduler.active_leases())
                if self.energy is not None:
                    self.invariants.violations += self.energy.violations()
                    if self.planning is not None:
                        self.invariants.violations += self.planning.violations(self.energy)
                self.invariants.verify()
            # measured last: the final invariant check is part of the run's cost and peak
            summary["simulation"] = {
                "wall_seconds": round(time.perf_counter() - wall0, 3),
                "cpu_seconds": round(time.process_time() - cpu0, 3),
                "peak_rss_mb": peak_rss_mb(),
                "steps": self.engine.steps,
            }
            return summary
        finally:
            self.close()

    def start(self) -> None:
        """The clock is about to start: ``run_started``. (:meth:`run` calls it; a daemon calls
        it before restoring its leases.)"""
        self._hooks("run_started")

    def finish(self) -> dict[str, Any]:
        """The clock has stopped: ``run_finished``, then the summary, with the plugins' fields
        from ``collect_summary``; kept as ``self.summary`` and returned."""
        self._hooks("run_finished")
        active = self.scheduler.active_leases()
        if self.energy is not None:
            # the run ends when its last lease does (later steps, of plans that changed, do
            # not count), or when it was stopped with leases unfinished
            end = self.clock.now() if active else max(self.energy.last_event, self.started_at)
            self.energy.until = end
            for lease in active:
                self.energy.add_lease(lease)
            self.energy.close(self.started_at, end)
        self.accounting.finish(active)
        # every site's nodes count in the utilisation
        capacity = (np.sum([site.nodes.total for site in self.sites], axis=0) if self.sites
                    else self.nodes.total)
        summary = self.accounting.summary(capacity)
        if self.energy is not None:
            summary.update(self.energy.summary())
        summary["trace"] = self.trace_stats.as_dict()
        summary["placement"] = self.placement.label()
        if self.planning is not None:
            summary.update(self.planning.summary())
        if self.engine.force_released:
            summary["held_leases_force_released"] = self.engine.force_released
        for extra in self.plugins.pm.hook.collect_summary(ctx=self.ctx):
            for key, value in (extra or {}).items():
                if key in summary:
                    raise LeaseManagerError(f"a plugin's summary field {key!r} clashes with "
                                            f"another field of summary.json")
                summary[key] = value
        self.summary = summary
        return summary

    def stream_outputs(self, out: str | Path) -> None:
        """Write ``leases.csv`` to ``out`` as leases end (``leases.csv.part`` until
        :meth:`write` completes it) instead of keeping its rows until the end."""
        self.accounting.stream_to(Path(out) / "leases.csv.part")

    def write(self, out: str | Path) -> Path:
        """Write ``leases.csv``, ``summary.json`` and recorded series under ``out``."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        self.accounting.write_leases(out / "leases.csv")
        timings = self.summary.get("simulation")
        if timings:   # the peak so far, completing leases.csv included
            timings["peak_rss_mb"] = max(timings["peak_rss_mb"], peak_rss_mb())
        write_summary(out / "summary.json", self.summary)
        self.metrics.write(out / "series")
        if self.energy is not None:
            self.energy.write(out)
        if self.decisions is not None:
            self._log_node_switches(self.decisions)
            self.decisions.write(out / DECISIONS_FILE)
        return out

    def _log_node_switches(self, decisions: DecisionLog) -> None:
        """The nodes' shutdowns and boots, as lines of the decision log (once)."""
        if self.energy is None or self._switches_logged:
            return
        self._switches_logged = True
        if self.sites:
            for site in self.sites:
                if site.energy is not None:
                    decisions.add_node_switches(site.energy.state_intervals(), site.name)
        else:
            decisions.add_node_switches(self.energy.state_intervals())


def peak_rss_mb() -> float:
    """The process's peak resident memory so far, in MB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def vm_vector(cfg: Config, nodes: NodeSet) -> np.ndarray:
    """The per-VM capacity of trace leases (``[tracefile] vm-resources``), validated against
    the site's resource types and nodes."""
    types = nodes.types
    try:
        vector = types.vector(parse_amounts(cfg.get("tracefile", "vm-resources")))
    except ValueError as exc:
        raise cfg.error("tracefile", "vm-resources", str(exc)) from None
    if not (vector > 0).any():
        raise cfg.error("tracefile", "vm-resources", "a VM must need some resource")
    if not (nodes.capacity >= vector).all(axis=1).any():
        raise cfg.error("tracefile", "vm-resources",
                        f"a VM ({types.format(vector)}) fits on no node of the site")
    return vector


def swf_conversion(cfg: Config, nodes: NodeSet) -> SWFConversion:
    """How SWF jobs become leases under ``cfg``'s ``[tracefile]`` options."""
    return SWFConversion(
        vm_vector=vm_vector(cfg, nodes), procs_per_vm=cfg.get("tracefile", "procs-per-vm"),
        paradigm=cfg.get("tracefile", "paradigm"), queues=cfg.get("tracefile", "queues"),
        window_start=cfg.get("tracefile", "window-start"),
        window_length=cfg.get("tracefile", "window-length"),
        max_jobs=cfg.get("tracefile", "max-jobs"), rebase=cfg.get("tracefile", "rebase"))


class HookRelay:
    """Calls an event hook with ``ctx=`` filled in, on every implementation registered at the
    time of the call, in pluggy's order; results are ignored.

    The replay calls hooks hundreds of times per lease, so who implements what is cached until
    a plugin is registered or unregistered: a hook nobody implements costs a dictionary lookup,
    and plain implementations are called directly with the arguments they declare (as pluggy
    would call them). A hook with a wrapper implementation goes through pluggy itself.
    """

    def __init__(self, plugins: Plugins, ctx: RunContext) -> None:
        self._pm = plugins.pm
        self._ctx = ctx
        self._targets: dict[str, list[tuple[Callable[..., Any], tuple[str, ...] | None]]] = {}
        #: per hook, what :meth:`lease_hook` calls: functions of ``(ctx, lease, now)``
        self._lease_targets: dict[str, list[Callable[[RunContext, Lease, float], Any]]] = {}
        #: hooks found to have no implementation (until plugins change): a caller on a hot
        #: path may test this set instead of making a call that does nothing
        self.muted: set[str] = set()
        self._pm.add_cache(self)

    def clear(self) -> None:
        """Forget who implements what (the plugin manager calls this when plugins change)."""
        self._targets.clear()
        self._lease_targets.clear()
        self.muted.clear()

    def _resolve(self, name: str) -> list[tuple[Callable[..., Any], tuple[str, ...] | None]]:
        caller = getattr(self._pm.hook, name)
        impls = caller.get_hookimpls()
        if any(impl.hookwrapper or impl.wrapper for impl in impls):
            return [(caller, None)]
        return [(impl.function, impl.argnames) for impl in reversed(impls)]

    def __call__(self, name: str, **kwargs: Any) -> None:
        targets = self._targets.get(name)
        if targets is None:
            targets = self._targets_of(name)
        if targets:
            ctx = self._ctx
            every = len(kwargs) + 1
            for function, argnames in targets:
                # through pluggy (a wrapper is involved), or an implementation that takes every
                # argument (pluggy checked its names when it was registered)
                if argnames is None or len(argnames) == every:
                    function(ctx=ctx, **kwargs)
                else:
                    given = dict(kwargs, ctx=ctx)
                    function(*[given[arg] for arg in argnames])

    def lease_hook(self, name: str, lease: Lease, now: float) -> None:
        """``self(name, lease=lease, now=now)``, with positional arguments (as pluggy calls
        implementations): the hooks about one lease run a few times per lease in a replay,
        and keyword arguments cost a dictionary per call and per implementation."""
        targets = self._lease_targets.get(name)
        if targets is None:
            targets = self._lease_targets[name] = [
                _positional(function, argnames) for function, argnames in self._targets_of(name)]
        ctx = self._ctx
        for function in targets:
            function(ctx, lease, now)

    def _targets_of(self, name: str) -> list[tuple[Callable[..., Any], tuple[str, ...] | None]]:
        targets = self._targets.get(name)
        if targets is None:
            targets = self._targets[name] = self._resolve(name)
            if not targets:
                self.muted.add(name)
        return targets


_LEASE_ARGUMENTS = ("ctx", "lease", "now")


def _positional(function: Callable[..., Any],
                argnames: tuple[str, ...] | None) -> Callable[[RunContext, Lease, float], Any]:
    """``function`` (a hook implementation taking ``argnames``, or pluggy's caller for
    ``None``) as a function of ``(ctx, lease, now)``."""
    if argnames == _LEASE_ARGUMENTS:
        return function
    if argnames is None:
        return lambda ctx, lease, now: function(ctx=ctx, lease=lease, now=now)
    names = argnames
    return lambda ctx, lease, now: function(
        *[{"ctx": ctx, "lease": lease, "now": now}[arg] for arg in names])


def load_run(path: str | Path | None, overrides: Iterable[str] = (), *,
             plugins: Plugins | None = None, **kwargs: Any) -> Run:
    """Load a configuration file (with ``section.option=value`` overrides) and build its run."""
    plugins = plugins if plugins is not None else Plugins()
    config = load_config(path, plugins.schema, overrides)
    return Run(config, plugins, **kwargs)


def default_out_dir(config_path: str | Path) -> Path:
    return Path("results") / Path(config_path).stem

