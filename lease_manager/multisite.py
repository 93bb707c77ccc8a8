"""Several sites in one run (``[site:NAME]`` sections).

Each site has its own nodes, slot table, scheduler (with its own backfilling mode), power
model, node power states and energy accounting; the run's policies are shared, except the
node-power and operating-point policies, one per site, built with the site's context. A
``site-selection`` policy sends each arriving lease to one site (``lease.site``), where it
stays. The engine steps all sites together through :class:`SiteSchedulers` and
:class:`SiteTables`, which look to it like one scheduler and one slot table.

Plugins see the first site as ``ctx.site`` and ``ctx.table``, and every lease of every site
through ``ctx.scheduler``. ``scheduling_cycle_start`` and ``scheduling_cycle_end`` fire once per
site per step.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from lease_manager.energy.energy_accounting import WATTS_COLUMN, write_energy_files
from lease_manager.errors import ConfigError
from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.slottable import SlotTable
from lease_manager.observers.invariants import InvariantChecker, InvariantViolation
from lease_manager.observers.leases_csv import LeaseColumns
from lease_manager.plugins import INVARIANTS_PLUGIN

if TYPE_CHECKING:
    from lease_manager.config.schema import Config
    from lease_manager.context import RunContext, SchedulerView
    from lease_manager.energy.energy_accounting import EnergyAccounting
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.resources import NodeSet
    from lease_manager.kernel.scheduler import LeaseScheduler
    from lease_manager.kernel.scheduler.seams import SteppedScheduler
    from lease_manager.kernel.slottable import Reservation
    from lease_manager.kernel.table_protocol import EngineTables
    from lease_manager.policies import (
        NodePowerPolicy,
        OperatingPointPolicy,
        SiteSelectionPolicy,
    )



@attrs.define(eq=False)
class Site:
    """One site of a run with several."""

    name: str
    config: Config
    nodes: NodeSet
    table: SlotTable
    ctx: RunContext
    #: its node-power and operating-point policies (with a power model)
    node_power: NodePowerPolicy | None = None
    operating_point: OperatingPointPolicy | None = None
    #: its scheduler (built with the site's energy parts, after the site's context and
    #: policies), then its energy accounting and invariant checker
    scheduler: LeaseScheduler = attrs.field(init=False)
    energy: EnergyAccounting | None = None
    invariants: InvariantChecker | None = None


class SiteView:
    """What a site-selection policy sees of one site."""

    def __init__(self, site: Site) -> None:
        self.name = site.name
        self.config = site.config
        self.table = site.scheduler.table_view
        self.power = site.ctx.power
        self._scheduler = site.scheduler

    def what_if(self, lease: Lease, now: float, level: int | None = None
                ) -> tuple[int | None, float, float] | None:
        """Where the site would plan ``lease`` if it arrived now, changing nothing: ``(level,
        start, end)`` of its first reservation, at DVFS ``level`` if given, else at the level
        the site's operating-point policy picks; None if the site cannot finish it by its
        deadline or cannot host it (:meth:`LeaseScheduler.what_if`)."""
        return self._scheduler.what_if(lease, now, level)

    @property
    def capped(self) -> bool:
        """Does the site have a power cap (its answers then depend on more than the lease's
        own window)?"""
        return self._scheduler.power is not None

    def length(self, lease: Lease) -> float:
        """How long the lease's reservation would last at its current level."""
        return self._scheduler.length(lease)

    @property
    def n_waiting(self) -> int:
        """Leases queued or held at the site."""
        return len(self._scheduler.queue) + len(self._scheduler.held)

    @property
    def n_planned(self) -> int:
        """Leases with a plan at the site that has not started."""
        return len(self._scheduler.future)


def check_sites(sites: Sequence[Site]) -> None:
    """Every site must have the same resource types (a lease is described once)."""
    first = sites[0]
    for site in sites[1:]:
        if site.nodes.types != first.nodes.types:
            raise site.config.error(
                "simulation", "resources",
                f"site {site.name!r} has resource types {', '.join(site.nodes.types.names)}; "
                f"site {first.name!r} has {', '.join(first.nodes.types.names)} (every site "
                f"needs the same)")


class SiteTables:
    """The sites' slot tables, as the engine sees them (:class:`EngineTables`): advanced
    together."""

    def __init__(self, tables: Sequence[EngineTables]) -> None:
        self.tables = list(tables)

    def advance(self, now: float) -> list[Reservation]:
        return [res for table in self.tables for res in table.advance(now)]

    def check(self) -> None:
        for table in self.tables:
            table.check()


if TYPE_CHECKING:   # mypy checks that SiteTables is what the engine asks of tables
    def _engine_tables(tables: SiteTables) -> EngineTables:
        return tables


class SiteSchedulers:
    """The sites' schedulers, as the engine and plugins see them: one scheduler whose leases
    are those of every site, each arrival sent to the site the policy picks."""

    def __init__(self, sites: Sequence[Site], policy: SiteSelectionPolicy, *,
                 cycle: float = 0.0, origin: float = 0.0,
                 call_at: Callable[[float, Callable[[float], None]], None] | None = None,
                 view: SchedulerView | None = None) -> None:
        """``view``: the run context's view of the scheduler, which shows this one from
        now on."""
        self.sites = list(sites)
        self.policy = policy
        self._by_name = {site.name: site.scheduler for site in self.sites}
        self._views = [SiteView(site) for site in self.sites]
        #: with a cycle: leases that arrived in the current one, decided at its end
        self.cycle_length = cycle
        self.origin = origin
        self._call_at = call_at
        self.pending: list[Lease] = []
        if view is not None:
            view.bind(self)

    def scheduler_of(self, lease: Lease) -> LeaseScheduler:
        return self._by_name[lease.site or ""]

    # ------------------------------------------------------------------ the engine's calls
    def submit(self, lease: Lease, now: float) -> None:
        if self.cycle_length > 0:
            if not self.pending:
                assert self._call_at is not None, "a site-selection cycle needs call_at"
                k = math.floor((now - self.origin) / self.cycle_length) + 1
                self._call_at(self.origin + k * self.cycle_length, self._decide)
            self.pending.append(lease)
            return
        sites = self._views
        length = self.sites[0].scheduler.length(lease)
        self._send(lease, self.policy.select(lease, sites, length, now), now)

    def _decide(self, now: float) -> None:
        """A cycle's end: the policy decides the leases that arrived in it."""
        batch, self.pending = self.pending, []
        sent: set[int] = set()

        def send(lease: Lease, choice: int | str) -> None:
            if lease.id in sent or all(lease is not other for other in batch):
                raise ValueError(f"site-selection policy {self.policy.name!r} sent lease "
                                 f"{lease.id} twice, or one not in its batch")
            sent.add(lease.id)
            self._send(lease, choice, now)

        self.policy.select_batch(batch, self._views, now, send)
        missing = [lease.id for lease in batch if lease.id not in sent]
        if missing:
            raise ValueError(f"site-selection policy {self.policy.name!r} decided nothing for "
                             f"leases {missing[:10]} of its batch")

    def _send(self, lease: Lease, choice: int | str, now: float) -> None:
        """Submit ``lease`` to site ``choice``, or reject it with ``choice`` as the reason."""
        if isinstance(choice, str):   # no site: the first site records the rejection
            self.sites[0].scheduler.refuse(lease, now, choice)
            return
        sites = self.sites
        if not (isinstance(choice, (int, np.integer)) and 0 <= choice < len(sites)):
            raise ValueError(f"site-selection policy {self.policy.name!r} chose {choice!r} for "
                             f"lease {lease.id}; the sites are 0 to {len(sites) - 1}")
        lease.site = sites[int(choice)].name
        sites[int(choice)].scheduler.submit(lease, now)

    def cycle(self, now: float) -> None:
        for site in self.sites:
            site.scheduler.cycle(now)

    def work_finished(self, res: Reservation, now: float) -> None:
        if res.lease is not None:
            self.scheduler_of(res.lease).work_finished(res, now)

    def segment_started(self, res: Reservation, now: float) -> None:
        if res.lease is not None:
            self.scheduler_of(res.lease).segment_started(res, now)

    def segment_ended(self, res: Reservation, now: float) -> None:
        if res.lease is not None:
            self.scheduler_of(res.lease).segment_ended(res, now)

    def release_all_held(self, now: float) -> int:
        return sum(site.scheduler.release_all_held(now) for site in self.sites)

    def untie_ended(self) -> None:
        for site in self.sites:
            site.scheduler.untie_ended()

    def active_leases(self) -> list[Lease]:
        return [*self.pending,
                *(lease for site in self.sites for lease in site.scheduler.active_leases())]

    # ------------------------------------------------------- every site's leases together
    @property
    def queue(self) -> list[Lease]:
        return [lease for site in self.sites for lease in site.scheduler.queue]

    @property
    def held(self) -> dict[int, Lease]:
        return {i: lease for site in self.sites for i, lease in site.scheduler.held.items()}

    @property
    def future(self) -> dict[int, Lease]:
        return {i: lease for site in self.sites for i, lease in site.scheduler.future.items()}

    @property
    def running(self) -> dict[int, Lease]:
        return {i: lease for site in self.sites for i, lease in site.scheduler.running.items()}


class SitesEnergy:
    """The sites' energy accounting as one: totals and a ``sites`` breakdown in the summary,
    every site's rows in ``series/power.csv`` and ``node_states.csv``."""

    LEASE_COLUMNS: tuple[str, ...] = ()

    def __init__(self, sites: Sequence[Site]) -> None:
        self.sites = [s for s in sites if s.energy is not None]
        first = self.sites[0].energy
        assert first is not None
        self.LEASE_COLUMNS = first.LEASE_COLUMNS

    def _each(self) -> Iterator[tuple[Site, EnergyAccounting]]:
        for site in self.sites:
            assert site.energy is not None
            yield site, site.energy

    @property
    def last_event(self) -> float:
        return max(energy.last_event for _, energy in self._each())

    @property
    def until(self) -> float:
        return min(energy.until for _, energy in self._each())

    @until.setter
    def until(self, value: float) -> None:
        for _, energy in self._each():
            energy.until = value

    def _of(self, lease: Lease) -> EnergyAccounting | None:
        return next((e for s, e in self._each() if s.name == lease.site), None)

    def add_lease(self, lease: Lease) -> None:
        energy = self._of(lease)
        if energy is not None:
            energy.add_lease(lease)

    def lease_values(self, lease: Lease) -> tuple[float | None, ...]:
        energy = self._of(lease)
        return (energy.lease_values(lease) if energy is not None
                else (None,) * len(self.LEASE_COLUMNS))

    def close(self, start: float, end: float) -> None:
        for _, energy in self._each():
            energy.close(start, end)

    def summary(self) -> dict[str, Any]:
        per_site = {site.name: energy.summary() for site, energy in self._each()}
        total: dict[str, Any] = {}
        for fields in per_site.values():
            for key, value in fields.items():
                if key == "energy_window":
                    total[key] = value
                else:
                    total[key] = total.get(key, 0) + value
        for fields in per_site.values():
            fields.pop("energy_window", None)
        total["sites"] = per_site
        return total

    def write(self, out: Path) -> None:
        write_energy_files(out, [energy for _, energy in self._each()])

    def violations(self) -> list[str]:
        return [f"site {site.name}: {v}" for site, energy in self._each()
                for v in energy.violations()]


class SitesColumns:
    """``leases.csv``'s columns of a run with several sites: each lease's ``site``, then the
    energy columns of its site's accounting and ``watts`` (with power models): a per-run
    plugin (``lease_manager.sites``)."""

    def __init__(self, energy: SitesEnergy | None) -> None:
        self.energy = energy

    @hookimpl(tryfirst=True)
    def lease_columns(self, ctx: RunContext) -> list[LeaseColumns]:
        energy = self.energy
        if energy is None:
            return [LeaseColumns(("site",), lambda lease: (lease.site,))]
        return [LeaseColumns(("site",) + energy.LEASE_COLUMNS,
                             lambda lease: (lease.site,) + energy.lease_values(lease)),
                WATTS_COLUMN]


class SitesInvariants:
    """The sites' invariant checkers as one."""

    def __init__(self, checkers: Sequence[tuple[str, InvariantChecker]]) -> None:
        self.checkers = list(checkers)
        self.violations: list[str] = []

    def verify(self) -> None:
        problems = list(self.violations)
        for name, checker in self.checkers:
            problems += [f"site {name}: {p}"
                         for p in itertools.chain(checker.violations,
                                                  checker.over_commitments())]
        if problems:
            more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
            raise InvariantViolation("; ".join(problems[:10]) + more)


def build_site_power(sites: Sequence[Site], instantiate: Callable[..., Any]) -> None:
    """Each site's own node-power and operating-point policies (with a power model, in its
    context), built with its context by ``instantiate(kind, name, ctx, label)``."""
    models = [site.ctx.power for site in sites]
    if any(m is None for m in models) and any(m is not None for m in models):
        site = sites[[m is None for m in models].index(True)]
        raise site.config.error("power", "pstates", f"site {site.name!r} has no power "
                                f"model and others have one (give every site one, or "
                                f"none)")
    for site, model in zip(sites, models):
        if model is None:
            continue
        for kind in ("node-power", "operating-point"):
            name = site.config.get("power", f"policy-{kind}")
            policy = instantiate(kind, name, site.ctx, f":{site.name}")
            setattr(site, kind.replace("-", "_"), policy)


def sites_invariants(sites: Sequence[Site], register: Callable[[Any, str], None]
                     ) -> SitesInvariants:
    """Each site's invariant checker, registered by ``register(checker, name)``, as one."""
    checkers = []
    for site in sites:
        checker = site.invariants = InvariantChecker(site.nodes.capacity, only=site.name)
        register(checker, f"{INVARIANTS_PLUGIN}:{site.name}")
        checkers.append((site.name, checker))
    return SitesInvariants(checkers)


def refuse_sites_in_the_daemon(config: Config) -> None:
    """The daemon runs one site."""
    if config.sites:
        raise ConfigError(f"the daemon runs one site; this configuration has "
                          f"{len(config.sites)} ([site:NAME] sections)",
                          file=str(config.path) if config.path else None)


if TYPE_CHECKING:   # mypy checks that SiteSchedulers has both of the scheduler's seams
    def _sites(scheduler: SiteSchedulers) -> SteppedScheduler:
        return scheduler
