"""Probe ``garg-accounting``: the paper's metrics (eqs 3-9) per site and in total.

For every lease that finished, with n CPUs, e seconds of work at f_max (its work done) and its
DVFS level on its site: energy E (with cooling), energy cost, carbon, profit from execution and
from data transfer, and the workload executed, n x e. Summary fields (all ``garg_`` prefixed):
``energy_joules``, ``energy_cost``, ``carbon_kg``, ``profit``, ``profit_exec``, ``profit_data``,
``workload_cpu_hours``, ``leases``, the paper's averages per unit of workload
``carbon_per_cpu_hour``, ``cost_per_cpu_hour``, ``energy_per_cpu_hour`` and
``profit_per_cpu_hour``; ``energy_least_level_joules``, the energy the same leases would take at
the same sites at their least-energy levels (the level OurDVS starts from), and its average
``energy_least_level_per_cpu_hour`` (a policy's energy over it is its level penalty: what its
stepping up, or PrevDVS's start at f_min, costs); the bounds of section 4.3 (:mod:`.bounds`) for
every lease submitted, ``carbon_bound_per_cpu_hour`` (lower) and ``profit_bound_per_cpu_hour``
(upper), with the workload the carbon bound fits, ``bound_workload_cpu_hours`` (every lease in
one cycle, as printed), and the same with ``bound_arrivals`` in place of ``bound`` for the
reading in which no lease starts before it is submitted; the CPU-hours each bound as printed maps
to each site, ``carbon_bound_site_cpu_hours`` and ``profit_bound_site_cpu_hours`` (site name to
CPU-hours); ``bad_data_leases``, leases that ran with an invalid ``data-gb`` (counted as no
data); and ``garg_sites`` with the same per site (and its COP, and ``level_cpu_hours``: the work
run at each of its levels, lowest first).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from lease_manager import LeaseState, Policy, hookimpl

from .bounds import BoundSite, bound, parse_cubic_law
from .economics import Outcome, SiteEconomics, lease_data_gb
from .meta import prices_from

if TYPE_CHECKING:
    from lease_manager import Lease, RunContext

FIELDS = ("energy_joules", "energy_cost", "carbon_kg", "profit", "profit_exec", "profit_data",
          "workload_cpu_hours", "leases", "energy_least_level_joules")


def _totals(outcomes: list[Outcome], least: list[float]) -> dict[str, float]:
    """The sums and averages over ``outcomes``; ``least``: each one's energy at its
    least-energy level."""
    out = {
        "energy_joules": sum(o.energy for o in outcomes),
        "energy_cost": sum(o.cost for o in outcomes),
        "carbon_kg": sum(o.carbon for o in outcomes),
        "profit": sum(o.profit for o in outcomes),
        "profit_exec": sum(o.profit_exec for o in outcomes),
        "profit_data": sum(o.profit_data for o in outcomes),
        "workload_cpu_hours": sum(o.workload for o in outcomes) / 3600.0,
        "leases": float(len(outcomes)),
        "energy_least_level_joules": sum(least),
    }
    work = out["workload_cpu_hours"]
    for name, field in (("carbon", "carbon_kg"), ("cost", "energy_cost"),
                        ("energy", "energy_joules"), ("profit", "profit"),
                        ("energy_least_level", "energy_least_level_joules")):
        out[f"{name}_per_cpu_hour"] = out[field] / work if work > 0 else 0.0
    return out


class GargAccounting(Policy):
    """Garg et al.'s energy, cost, carbon, profit and workload (see the module docstring)."""

    kind = "probe"
    name = "garg-accounting"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.prices = prices_from(ctx.config)
        self._economics: dict[str, SiteEconomics | None] = {}
        self.outcomes: dict[str, list[Outcome]] = {}
        #: per site, each outcome's energy (J) at its lease's least-energy level
        self.least: dict[str, list[float]] = {}
        #: per site, the CPU-seconds of work run at each level
        self.level_work: dict[str, list[float]] = {}
        #: every lease submitted, for the bounds
        self.leases: list[Lease] = []
        #: leases that ran with an invalid ``data-gb`` attribute (counted as no data)
        self.bad_data = 0

    def _site(self, name: str) -> SiteEconomics | None:
        """The economics of site ``name`` ("" in a run of one site), built on first use (the
        power models come after the policies)."""
        if name not in self._economics:
            site = self.ctx.sites.get(name, self.ctx)
            model = site.power
            self._economics[name] = None if model is None else SiteEconomics(
                name, model, site.site.capacity[:, model.cpu], site.config.get("power", "gamma"))
            self.outcomes[name] = []
            self.least[name] = []
            self.level_work[name] = [0.0] * model.levels if model is not None else []
        return self._economics[name]

    @hookimpl
    def lease_submitted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self.leases.append(lease)

    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if lease.state is not LeaseState.DONE or lease.start is None:
            return
        site = lease.site or ""
        econ = self._site(site)
        if econ is None:
            return
        if isinstance(lease_data_gb(lease), str):
            self.bad_data += 1   # ran with its data counted as 0 (no meta-scheduler refused it)
        level = econ.model.top_level if lease.level is None else lease.level
        outcome = econ.outcome(lease, level, lease.start, self.prices, work=lease.work_done)
        self.outcomes[site].append(outcome)
        self.level_work[site][level] += outcome.workload
        try:
            least = econ.least_energy_level(lease)
        except ValueError:   # a bad gamma (the lease ran at f_max): no other level to compare
            least = level
        self.least[site].append(outcome.energy if least == level else econ.outcome(
            lease, least, lease.start, self.prices, work=lease.work_done).energy)

    @hookimpl
    def collect_summary(self, ctx: RunContext) -> dict[str, Any]:
        every = [o for outcomes in self.outcomes.values() for o in outcomes]
        least = [e for energies in self.least.values() for e in energies]
        summary: dict[str, Any] = {f"garg_{k}": v for k, v in _totals(every, least).items()}
        summary["garg_bad_data_leases"] = self.bad_data
        sites = []
        for name, site in (ctx.sites or {"": ctx}).items():
            econ = self._site(name)
            if econ is not None:
                sites.append(BoundSite(econ, float(site.site.total[econ.model.cpu]),
                                       parse_cubic_law(site.config.get("power", "cubic-law"))))
        if sites:
            carbon = bound(self.leases, sites, self.prices, "carbon")
            profit = bound(self.leases, sites, self.prices, "profit")
            summary["garg_carbon_bound_per_cpu_hour"] = carbon.per_cpu_hour
            summary["garg_profit_bound_per_cpu_hour"] = profit.per_cpu_hour
            summary["garg_bound_workload_cpu_hours"] = carbon.workload_cpu_hours
            summary["garg_carbon_bound_site_cpu_hours"] = carbon.site_cpu_hours
            summary["garg_profit_bound_site_cpu_hours"] = profit.site_cpu_hours
            carbon = bound(self.leases, sites, self.prices, "carbon", arrivals=True)
            profit = bound(self.leases, sites, self.prices, "profit", arrivals=True)
            summary["garg_carbon_bound_arrivals_per_cpu_hour"] = carbon.per_cpu_hour
            summary["garg_profit_bound_arrivals_per_cpu_hour"] = profit.per_cpu_hour
            summary["garg_bound_arrivals_workload_cpu_hours"] = carbon.workload_cpu_hours
        if ctx.sites:
            summary["garg_sites"] = {}
            for name in ctx.sites:
                fields: dict[str, Any] = {**_totals(self.outcomes.get(name, []),
                                                    self.least.get(name, []))}
                econ = self._site(name)
                if econ is not None:   # as drawn, when the configuration draws it; None: inf
                    cop = econ.model.cop
                    fields["cop"] = None if math.isinf(cop) else cop
                    fields["level_cpu_hours"] = [w / 3600.0 for w in self.level_work[name]]
                summary["garg_sites"][name] = fields
        return summary
