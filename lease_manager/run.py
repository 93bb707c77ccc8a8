"""A run: the site, scheduler, policies, clock and outputs built from one configuration.

Plugins do not see the ``Run``: hooks and policies get its
:class:`~lease_manager.context.RunContext` (``run.ctx``). A run registers its policies and
the core's observers (accounting, the invariant checker) as plugins when it is built and
unregisters them when it is closed, so one :class:`~lease_manager.plugins.Plugins` object
serves any number of runs, one after another.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lease_manager import placement
from lease_manager.config.schema import Config, load_config
from lease_manager.context import RunContext
from lease_manager.energy.counted_states import CountedPowerStates
from lease_manager.energy.energy_accounting import EnergyAccounting
from lease_manager.energy.node_states import NodePowerStates
from lease_manager.energy.power_model import (
    PowerModel,
    power_cap_from_config,
    power_model_from_config,
)
from lease_manager.energy.site_energy import EnergyParts, energy_accounting, energy_parts
from lease_manager.errors import LeaseManagerError
from lease_manager.kernel.clock import RealClock, SimulatedClock
from lease_manager.kernel.count_table import CountTable
from lease_manager.kernel.engine import Engine, ReplayEnactment, timeline_calls
from lease_manager.kernel.events import Timeline
from lease_manager.kernel.resources import NodeSet
from lease_manager.kernel.scheduler import LeaseScheduler, SchedulerSettings, SuspendResume
from lease_manager.kernel.scheduler.haizea_resumption import HaizeaSuspendResume
from lease_manager.kernel.scheduler.image_transfer import ImageTransfers
from lease_manager.kernel.slottable import SlotTable
from lease_manager.observers.metrics import Metrics
from lease_manager.plugins import (
    ENERGY_PLUGIN,
    MALLEABLE_PLUGIN,
    SITES_PLUGIN,
    HookRelay,
    Plugins,
)
from lease_manager.reallocation import Reallocation
from lease_manager.run_inputs import checked, planned, swf_conversion, trace_leases, vm_vector
from lease_manager.run_outputs import check_invariants, peak_rss_mb, summary_of, write_outputs
from lease_manager.run_plugins import RunPlugins
from lease_manager.workload.site_source import site_nodes
from lease_manager.workload.swf import SWFConversion, SWFReader, TraceStats

if TYPE_CHECKING:
    from lease_manager.energy.series import StepSeries
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.scheduler import Enactment
    from lease_manager.kernel.scheduler.seams import SteppedScheduler
    from lease_manager.kernel.table_protocol import EngineTables, Table
    from lease_manager.multisite import Site
    from lease_manager.policies import NodePowerPolicy, OperatingPointPolicy


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
        #: what this run registers (unregistered when it is closed)
        self._own = RunPlugins(self.plugins)
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
        self._build_sites(config, serve, from_trace=leases is None)
        self._build_policies(config)
        #: offline planning (``[planning] policy-planner``; None: an ordinary replay)
        self.planning = self._own.planning(config, self.ctx, self.power, self.policies)
        self._hooks = HookRelay(self.plugins, self.ctx)
        self.enactment = (enactment(self) if enactment is not None
                          else ReplayEnactment(self.timeline))
        self.clock = clock if clock is not None else _clock(config)
        #: the clock's time as the run starts (node power states, malleable epochs and
        #: site-selection cycles count from it)
        self.started_at = self.clock.now()
        for counted in self._counted:   # what nodes have free is kept for the clock's now
            counted.set_now(self.started_at)
        self.reallocation: Reallocation | None = None
        tables = self._build_schedulers(config)
        self._build_engine(config, tables, leases, serve)
        # every plugin that adds leases.csv columns is registered by now
        self.accounting.add_columns(self._own.lease_columns(self.ctx))
        self.summary: dict[str, Any] = {}

    def _build_sites(self, config: Config, serve: bool, from_trace: bool) -> None:
        """The placement, the site's nodes and slot table (or each site's), and the context
        plugins see."""
        #: the sites' tables that count VMs (``placement = at-start``)
        self._counted: list[CountTable] = []
        #: the sites' node power states, stepped by the engine
        self._stepped_states: list[NodePowerStates | CountedPowerStates] = []
        one_site = None if config.sites else site_nodes(config)
        #: the placement that runs, and why (``[scheduling] placement``, ``auto``'s choice)
        self.placement = placement.choose(config, self.plugins, serve=serve,
                                          from_trace=from_trace, nodes=one_site)
        #: the sites of a run with several (``[site:NAME]``; empty: one site)
        self.sites = [self._site(name) for name in config.sites]
        if self.sites:
            from lease_manager.multisite import check_sites
            check_sites(self.sites)
            self.nodes, self.table = self.sites[0].nodes, self.sites[0].table
            #: the ``[power]`` model (None: no energy accounting; the first site's with several)
            self.power = self.sites[0].ctx.power
        else:
            assert one_site is not None
            self.nodes = one_site
            self.table = self._new_table(config, self.nodes)
            self.power = power_model_from_config(config, self.nodes)
        # the envelope that the node states, at-start's cap or an offline plan keep to (each
        # builds the same values from the configuration); with several sites, none
        cap = (power_cap_from_config(config, self.power)
               if not self.sites and self.power is not None else None)
        #: what plugins see of this run (a replay's workload is read ahead)
        self.ctx = self._context(config, self.nodes, self.table, self.power, cap,
                                 sites=self.sites,
                                 peek=None if serve else lambda: self.engine.peek_arrivals())

    def _build_schedulers(self, config: Config) -> EngineTables:
        """The scheduler (each site's, and the one that sends leases to them), each built with
        its energy parts and the reallocation plugin; return the table, or tables, the engine
        advances."""
        if not self.sites:
            parts = None
            if self.power is not None:
                parts = self._energy_parts(config, self.table, self.power,
                                           self.policies["node-power"],
                                           self.policies["operating-point"])
                self.energy = self._account_energy(config, parts, None)
                self.node_states = parts.states
            if config.get("malleable", "policy-allocation") != "none":
                self.reallocation = self._build_reallocation(config)
            self._one_site = self._build_scheduler(config, self.table, parts, self.reallocation)
            #: what the engine drives (:class:`SiteSchedulers` in a run with several sites)
            self.scheduler: SteppedScheduler = self._one_site
            self.ctx.scheduler.bind(self._one_site)
            return self.table
        sites_parts = []
        for site in self.sites:
            parts = None
            if site.ctx.power is not None:
                assert site.node_power is not None and site.operating_point is not None
                parts = self._energy_parts(site.config, site.table, site.ctx.power,
                                           site.node_power, site.operating_point)
            site.scheduler = self._build_scheduler(site.config, site.table, parts)
            site.ctx.scheduler.bind(site.scheduler)
            sites_parts.append(parts)
        selection = self._instantiate("site-selection",
                                      config.get("simulation", "policy-site-selection"))
        from lease_manager.multisite import SiteSchedulers
        self.scheduler = SiteSchedulers(
            self.sites, selection, cycle=config.get("simulation", "site-selection-cycle"),
            origin=self.started_at, call_at=lambda time, fn: self.engine.call_at(time, fn),
            view=self.ctx.scheduler)
        self._account_sites_energy(sites_parts)
        if config.get("malleable", "policy-allocation") != "none":
            raise config.error("malleable", "policy-allocation", "malleable leases need a "
                               "run with one site")
        from lease_manager.multisite import SiteTables
        return SiteTables([site.table for site in self.sites])

    def _build_engine(self, config: Config, tables: EngineTables, leases: Iterable[Lease] | None,
                      serve: bool) -> None:
        """The engine, stepping the scheduler and ``tables`` through the arrivals (``leases``,
        or the trace's) on the run's clock."""
        if leases is None:
            leases, self.trace_reader = trace_leases(config, self.nodes, self.trace_stats)
        strict = config.get("tracefile", "oversized") == "error"
        arrivals: Iterator[Lease] = checked(
            leases, self.annotators, self.site_scheduler.oversize_reason if strict else None,
            "requested processors" if self.trace_reader else "<nodes>")
        if self.planning is not None:
            arrivals = planned(arrivals, self.planning, config, self.power)
        self.engine = Engine(self.scheduler, tables, self.timeline, self.clock, arrivals,
                             stop_when=config.get("simulation", "stop-when"),
                             runtime=config.get("simulation", "runtime"), serve=serve)
        for counted in self._counted:   # what nodes have free is kept for the clock's now
            self.engine.before_step.insert(0, counted.set_now)
        for states in self._stepped_states:
            self.engine.before_step.append(states.before_step)
            self.engine.after_step.append(states.after_step)
            self.engine.soft_wake.append(states.next_wake)
            if states.cap is not None:
                self.engine.wake_while_queued = True
        if self.reallocation is not None:
            self.engine.soft_wake.append(self.reallocation.next_wake)

    def _new_table(self, config: Config, nodes: NodeSet) -> SlotTable:
        """The site's slot table: one that counts VMs when the run's placement is at-start."""
        if not self.placement.at_start:
            return SlotTable(nodes)
        shape = self.placement.vm_shape   # an LWF trace's one VM shape
        table = CountTable(nodes, vm_vector(config, nodes) if shape is None else shape,
                           origin=0.0)
        self._counted.append(table)
        # (the scheduler is typed on SlotTable; it asks a table whether it counts VMs)
        return cast("SlotTable", table)

    def _build_reallocation(self, config: Config) -> Reallocation:
        """Malleable leases: the allocation policy and what carries its decisions out (given
        to the scheduler, which it serves)."""
        policy = self._instantiate("allocation", config.get("malleable", "policy-allocation"))
        try:
            reallocation = Reallocation(
                policy, epoch=config.get("malleable", "epoch"),
                migration_time=config.get("malleable", "migration-time"),
                migration_energy=config.get("malleable", "migration-energy"),
                origin=self.started_at)
        except ValueError as exc:
            raise config.error("malleable", "migration-energy", str(exc)) from None
        self._register(reallocation, MALLEABLE_PLUGIN)
        return reallocation

    def _context(self, config: Config, nodes: NodeSet, table: Table, power: PowerModel | None,
                 power_cap: StepSeries | None = None, sites: Iterable[Site] = (),
                 peek: Callable[[], list[Lease]] | None = None) -> RunContext:
        return RunContext(config, nodes, table, self.metrics, lambda: self.clock.now(),
                          lambda time, fn: self.engine.call_at(time, fn),
                          sites={site.name: site.ctx for site in sites}, peek=peek,
                          power=power, power_cap=power_cap)

    def _site(self, name: str) -> Site:
        config = self.config.for_site(name)
        nodes = site_nodes(config)
        table = self._new_table(config, nodes)
        from lease_manager.multisite import Site
        power = power_model_from_config(config, nodes)
        return Site(name, config, nodes, table, self._context(config, nodes, table, power))

    def _energy_parts(self, config: Config, table: Table, model: PowerModel,
                      node_power: NodePowerPolicy, operating_point: OperatingPointPolicy
                      ) -> EnergyParts:
        """One site's node power states (the engine steps them once it is built), power cap
        and operating points, built before its scheduler."""
        parts = energy_parts(config, table, model, node_power, operating_point,
                             origin=self.started_at, enactment=self.enactment,
                             call_at=timeline_calls(self.timeline),
                             planned=self.planning is not None)
        self._stepped_states.append(parts.states)
        return parts

    def _account_energy(self, config: Config, parts: EnergyParts,
                        site: str | None) -> EnergyAccounting:
        """One site's energy accounting, registered as a plugin; ``site`` names it in a run
        with several."""
        energy = energy_accounting(config, parts, planned=self.planning is not None, site=site)
        self._register(energy, ENERGY_PLUGIN if site is None else f"{ENERGY_PLUGIN}:{site}")
        return energy

    def _account_sites_energy(self, sites_parts: list[EnergyParts | None]) -> None:
        """Each site's energy accounting (a run with several sites)."""
        for site, parts in zip(self.sites, sites_parts):
            if parts is not None:
                site.energy = self._account_energy(site.config, parts, site.name)
        energy = None
        if any(site.energy is not None for site in self.sites):
            from lease_manager.multisite import SitesEnergy
            self.energy = energy = SitesEnergy(self.sites)   # type: ignore[assignment]
        from lease_manager.multisite import SitesColumns
        self._register(SitesColumns(energy), SITES_PLUGIN)

    def _build_policies(self, config: Config) -> None:
        """The run's policies, probes and annotators, the core's observers and the power
        models, registered."""
        own = self._own
        self.policies, self.probes, self.annotators = own.policies(config, self.ctx)
        self.invariants, self.accounting, self.decisions = own.observers(
            config, self.nodes, self.sites)
        #: the nodes' switches are in the decision log
        self.switches_logged = False
        self.energy = None
        if self.sites:
            from lease_manager.multisite import build_site_power
            build_site_power(self.sites, self._instantiate)
            return
        if self.power is not None:
            for kind in ("node-power", "operating-point"):
                self.policies[kind] = self._instantiate(kind,
                                                        config.get("power", f"policy-{kind}"))

    def _build_scheduler(self, config: Config, table: SlotTable, energy: EnergyParts | None,
                         allocator: Reallocation | None = None) -> LeaseScheduler:
        """The scheduler of ``table``, with the run's policies, enactment and hook relay, the
        site's ``energy`` parts (with a power model) and the reallocation plugin."""
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
            preparation=preparation, enactment=self.enactment, emit=self._hooks,
            boots=energy.states if energy else None, power=energy.power if energy else None,
            planned_boots=energy.planned_boots if energy else None,
            operating_point=energy.operating_point if energy else None, allocator=allocator)

    def _instantiate(self, kind: str, name: str, ctx: RunContext | None = None,
                     label: str = "") -> Any:
        """The policy ``name`` of ``kind``, built for ``ctx`` (the run's by default) and
        registered (:meth:`RunPlugins.policy`)."""
        return self._own.policy(kind, name, ctx or self.ctx, label)

    def _register(self, plugin: Any, name: str) -> None:
        self._own.register(plugin, name)

    def close(self) -> None:
        """Unregister this run's policies and observers (idempotent): the ``Plugins`` object
        is then free for another run."""
        self._own.unregister_all()
        self.plugins.end_run(self)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def now(self) -> float:
        return self.clock.now()

    @property
    def site_scheduler(self) -> LeaseScheduler:
        """The scheduler of a run with one site (a daemon's), with its whole interface
        (:attr:`scheduler` is what the engine drives)."""
        if self.sites:
            raise LeaseManagerError("a run with several sites has a scheduler per site "
                                    "(run.sites[i].scheduler)")
        return self._one_site

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
            check_invariants(self)
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
        self.summary = summary_of(self)
        return self.summary

    def stream_outputs(self, out: str | Path) -> None:
        """Write ``leases.csv`` to ``out`` as leases end (``leases.csv.part`` until
        :meth:`write` completes it) instead of keeping its rows until the end."""
        self.accounting.stream_to(Path(out) / "leases.csv.part")

    def write(self, out: str | Path) -> Path:
        """Write ``leases.csv``, ``summary.json`` and recorded series under ``out``."""
        return write_outputs(self, Path(out))


def _clock(config: Config) -> SimulatedClock | RealClock:
    """The clock ``[simulation] clock`` names."""
    if config.get("simulation", "clock") == "real":
        return RealClock(speedup=config.get("simulation", "speedup"))
    return SimulatedClock()


def load_run(path: str | Path | None, overrides: Iterable[str] = (), *,
             plugins: Plugins | None = None, **kwargs: Any) -> Run:
    """Load a configuration file (with ``section.option=value`` overrides) and build its run."""
    plugins = plugins if plugins is not None else Plugins()
    config = load_config(path, plugins.schema, overrides)
    return Run(config, plugins, **kwargs)


def default_out_dir(config_path: str | Path) -> Path:
    return Path("results") / Path(config_path).stem

