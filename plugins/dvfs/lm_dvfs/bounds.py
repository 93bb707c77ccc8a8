"""The lower bound on carbon and the upper bound on profit of Garg et al., section 4.3.

Three relaxations: every lease is known at once (one scheduling cycle); leases are moldable,
each site a fluid pool of its CPUs with no fragmentation; energy is counted at the optimal
frequency although the deadline test runs at f_max. Steps: leases in EDF order; sites by
r x (COP+1)/COP x P(f_max) (carbon) or p^e x (COP+1)/COP x P(f_max) (profit); each lease goes
to the first site whose pool can finish it by its deadline at f_max (it starts when the pool
drains and takes n x e / CPUs), else it is dropped.

Relaxation 3 as printed ("all applications are considered in only one scheduling cycle"): every
lease is mapped in one cycle at the first arrival, so a pool may start a lease before it is
submitted; deadlines stay absolute. ``arrivals=True`` gives the earlier, tighter reading, in
which a lease starts no earlier than its submit time (not a bound of the paper: a policy can
beat it, as GMP does by 0.7% at 100% high urgency).
TWL += n x e; TCE += r x (COP+1)/COP x P(f_opt) x n x T(f_opt); TP += the lease's profit with
its energy at f_opt. The bounds are TCE / TWL and TP / TWL (per CPU-hour).

P(f_opt) x T(f_opt) is the least energy per unit of work: at the continuous f_opt =
(beta / (2 alpha))^(1/3) clamped to [f_min, f_max] for a site given by ``cubic-law`` (one node
group), otherwise at the site's best level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from lease_manager import lease_gamma, stretch

from .economics import JOULES_PER_KWH, Prices, SiteEconomics, f_opt, lease_data_gb, mean_over

if TYPE_CHECKING:
    from lease_manager import Lease


@attrs.frozen
class BoundSite:
    """What the bounds need of a site: its economics, CPUs and least energy per CPU-second
    of work (W, at f_opt) as a function of gamma."""

    econ: SiteEconomics
    cpus: float
    beta_alpha: tuple[float, float, float, float] | None   # beta, alpha, f_min, f_max

    def least_power_time(self, gamma: float) -> float:
        """min over f of P(f) x T(f) / T(f_max), in watts per CPU."""
        if self.beta_alpha is not None:
            beta, alpha, fmin, fmax = self.beta_alpha
            f = f_opt(beta, alpha, fmin, fmax)
            return (beta + alpha * f ** 3) * (gamma * (fmax / f - 1.0) + 1.0)
        model = self.econ.model
        return float(min(self.econ.watts_per_cpu[k] * stretch(model, k, gamma)
                         for k in range(model.levels)))


def parse_cubic_law(text: str) -> tuple[float, float, float, float] | None:
    """``BETA:ALPHA:FMIN:FMAX:LEVELS`` of a one-group site (None otherwise)."""
    if not text or ";" in text:
        return None
    parts = text.split(":")
    if len(parts) != 5:
        return None
    beta, alpha, fmin, fmax = (float(p) for p in parts[:4])
    return beta, alpha, fmin, fmax


@attrs.frozen
class Bound:
    """One bound's totals: the workload it fits (CPU-hours), and its carbon (kg) and profit
    ($) per CPU-hour; ``site_cpu_hours``, the workload it maps to each site (by name)."""

    workload_cpu_hours: float
    per_cpu_hour: float
    site_cpu_hours: dict[str, float] = attrs.field(factory=dict)


def bound(leases: Sequence[Lease], sites: Sequence[BoundSite], prices: Prices,
          objective: str, now: float = 0.0, arrivals: bool = False) -> Bound:
    """The lower bound on carbon (``objective="carbon"``) or the upper bound on profit
    (``"profit"``) per CPU-hour of work for ``leases`` on ``sites`` (section 4.3): every lease
    in one cycle at the first submit time; with ``arrivals``, none before its submit time."""
    rate = "carbon" if objective == "carbon" else "price"
    order = sorted(range(len(sites)), key=lambda i: (sites[i].econ.index(rate, now), i))
    cycle = min((lease.submit for lease in leases), default=0.0)
    drains = [cycle] * len(sites)
    work = total = 0.0
    per_site = [0.0] * len(sites)
    for lease in sorted(leases, key=lambda x: (math.inf if x.deadline is None else x.deadline,
                                                x.submit, x.id)):
        data = lease_data_gb(lease)
        if isinstance(data, str) or isinstance(lease_gamma(lease, 1.0), str):
            continue   # rejected in the run too
        n = float(lease.vms.total[sites[0].econ.model.cpu])
        e = lease.run_duration
        deadline = math.inf if lease.deadline is None else lease.deadline
        for i in order:
            site = sites[i]
            start = max(drains[i], lease.submit) if arrivals else drains[i]
            end = start + n * e / site.cpus
            if end <= deadline + 1e-9:
                break
        else:
            continue   # no site meets its deadline even molded: dropped
        drains[i] = end
        econ = site.econ
        gamma = float(lease_gamma(lease, econ.gamma))
        kwh = econ.model.cooling_factor * site.least_power_time(gamma) * n * e / JOULES_PER_KWH
        work += n * e
        per_site[i] += n * e
        if objective == "carbon":
            total += mean_over(econ.model.carbon, start, end) * kwh
        else:
            cost = mean_over(econ.model.price, start, end) * kwh
            cost_gb = prices.data_cost.get(econ.name, prices.data_cost.get("*", 0.0))
            total += n * e / 3600.0 * prices.cpu_hour - cost + data * (prices.data - cost_gb)
    hours = work / 3600.0
    return Bound(hours, total / hours if hours > 0 else 0.0,
                 {site.econ.name: w / 3600.0 for site, w in zip(sites, per_site)})
