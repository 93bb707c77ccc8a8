"""Garg et al.'s per-site quantities (section 3, eqs 1-9), from a site's power model.

A site's CPUs draw P(f) watts each while they run a lease at frequency f (``cubic-law``
with ``cubic-idle = not-counted`` gives the paper's P(f) = beta + alpha f^3; any ``pstates``
model works too). A lease of n CPUs and e seconds of work at f_max, at level f:

- (3) E^c = P(f) x n x e x (gamma (f_max / f - 1) + 1)      IT energy
- (4) E = E^c x (COP + 1) / COP                              with cooling
- (5) cost = p^e x E        (6) CO2 = r x E                  (per kWh)
- (7) ProfExec = n x e x p^c - cost   (revenue on e, not on the stretched time)
- (8) ProfData = DT x (p^DTU - p^DT)   (9) Prof = ProfExec + ProfData
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs
import numpy as np

from lease_manager import lease_gamma, stretch

if TYPE_CHECKING:
    from lease_manager import Lease, PowerModel, StepSeries

JOULES_PER_KWH = 3.6e6
#: the ``<extra>`` attribute (or annotation) with a lease's data to transfer, in GB
DATA_ATTRIBUTE = "data-gb"


def lease_data_gb(lease: Lease) -> float | str:
    """The GB of data ``lease`` transfers (its ``data-gb`` attribute; 0 without one), or why
    the attribute is invalid."""
    text = lease.extra.get(DATA_ATTRIBUTE)
    if text is None or text == "":
        return 0.0
    try:
        value = float(text)
    except (TypeError, ValueError):
        return f"data-gb {text!r} is not a number"
    if not (math.isfinite(value) and 0 <= value <= 1e12):
        return f"data-gb {text!r} is not in [0, 1e12]"
    return value


def f_opt(beta: float, alpha: float, fmin: float, fmax: float) -> float:
    """The frequency of least energy per unit of work for gamma = 1 (appendix B):
    (beta / (2 alpha))^(1/3), clamped to [fmin, fmax]."""
    if alpha <= 0:
        return fmax
    return min(max((beta / (2.0 * alpha)) ** (1.0 / 3.0), fmin), fmax)


def mean_over(series: StepSeries, start: float, end: float) -> float:
    """The time-weighted mean of a step series over ``[start, end)`` (its value at ``start``
    if the interval is empty)."""
    if not end > start:
        return float(series.at(start))
    points = np.concatenate([[start], series.breakpoints(start, end), [end]])
    points = np.unique(np.clip(points, start, end))
    values = series.at(points[:-1])
    return float((values * np.diff(points)).sum() / (end - start))


@attrs.frozen
class Prices:
    """The provider's prices: ``cpu_hour`` (p^c, $ per CPU-hour), ``data`` (p^DTU, $ per GB
    charged to users) and each site's data-transfer cost (p^DT, $ per GB; ``"*"``: every
    site not named; 0 if neither)."""

    cpu_hour: float = 0.40
    data: float = 0.0
    data_cost: Mapping[str, float] = attrs.field(factory=dict)


@attrs.frozen
class Outcome:
    """A lease's energy, cost, carbon and profit at one site and level (eqs 3-9)."""

    energy_it: float      # J, E^c
    energy: float         # J, E (with cooling)
    cost: float           # $
    carbon: float         # kg
    profit_exec: float    # $
    profit_data: float    # $
    workload: float       # CPU-seconds, n x e

    @property
    def profit(self) -> float:
        return self.profit_exec + self.profit_data


class SiteEconomics:
    """One site's P(f) per CPU, cooling, price and carbon rate (from its power model)."""

    def __init__(self, name: str, model: PowerModel, cpus: np.ndarray, gamma: float) -> None:
        self.name = name
        self.model = model
        #: default gamma of the site (``[power] gamma``)
        self.gamma = gamma
        cpus = np.asarray(cpus, dtype=float)
        # watts per running CPU at each level; a site of several node groups takes the mean
        # (the paper's sites are homogeneous)
        self.watts_per_cpu = (model.full / cpus[:, None]).mean(axis=0)

    def stretch(self, lease: Lease, level: int) -> float:
        """T(f) / T(f_max) of ``lease`` at ``level``."""
        gamma = lease_gamma(lease, self.gamma)
        if isinstance(gamma, str):
            raise ValueError(gamma)
        return 1.0 if level == self.model.top_level else stretch(self.model, level, gamma)

    def least_energy_level(self, lease: Lease) -> int:
        """The level of least energy per unit of work, P(f) x T(f) (the faster of equals):
        the level next to f_opt that OurDVS starts from."""
        energy = [self.watts_per_cpu[k] * self.stretch(lease, k)
                  for k in range(self.model.levels)]
        best = min(energy)
        return max(k for k, e in enumerate(energy) if e <= best * (1 + 1e-12))

    def index(self, rate: str, now: float) -> float:
        """GMCE's (``carbon``) or GMP's (``price``) site order: r x (COP + 1) / COP x
        P(f_max), or p^e in place of r."""
        series = self.model.carbon if rate == "carbon" else self.model.price
        return float(series.at(now)) * self.model.cooling_factor * float(
            self.watts_per_cpu[self.model.top_level])

    def outcome(self, lease: Lease, level: int, start: float, prices: Prices,
                work: float | None = None, cpus: float | None = None) -> Outcome:
        """Eqs 3-9 for ``lease`` running from ``start`` at ``level``. ``work`` is e, its
        seconds at f_max (default: its requested time, what a scheduler knows; accounting
        gives the actual); ``cpus`` is n (default: the CPUs its VMs ask for)."""
        model = self.model
        e = lease.requested_duration if work is None else work
        n = float(lease.vms.total[model.cpu]) if cpus is None else cpus
        seconds = e * self.stretch(lease, level)
        energy_it = float(self.watts_per_cpu[level]) * n * seconds
        energy = energy_it * model.cooling_factor
        end = start + seconds
        kwh = energy / JOULES_PER_KWH
        cost = mean_over(model.price, start, end) * kwh
        carbon = mean_over(model.carbon, start, end) * kwh
        data = lease_data_gb(lease)
        if isinstance(data, str):   # meta-schedulers reject such leases; a probe counts them
            data = 0.0
        cost_gb = prices.data_cost.get(self.name, prices.data_cost.get("*", 0.0))
        profit_data = data * (prices.data - cost_gb)
        return Outcome(energy_it, energy, cost, carbon,
                       n * e / 3600.0 * prices.cpu_hour - cost, profit_data, n * e)
