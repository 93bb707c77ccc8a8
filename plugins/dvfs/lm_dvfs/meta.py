"""Garg et al.'s meta-schedulers (section 4.1): site-selection policies that decide the leases
of each scheduling cycle (``[simulation] site-selection-cycle``; the paper's is 50 s).

Every policy plans on the sites with what-if queries, which change nothing: a site answers
with the level its operating-point policy picks (``our-dvs`` for the paper's DVS) and the
lease's earliest slot there that ends by its deadline. A lease no site can finish in time is
rejected: "no site can finish it by its deadline".

- ``gmce`` / ``gmp``: leases in EDF order; sites by r x (COP+1)/COP x P(f_max) (GMP: the
  electricity price in place of r); each lease goes to the first site that meets its deadline.
- ``mce-mce``, ``mp-mp``, ``mce-mp``, ``mp-mce``: min-min. (1) For every lease, its best
  feasible site by the first objective (least carbon, or most profit); (2) of those pairs,
  the best by the second objective is committed; (3) the committed site's what-ifs are asked
  again; repeat.
- ``edf-est``: leases in EDF order, each to the site where it can start earliest.

``[dvfs] promise-horizon`` (default inf, as in the paper: "the time horizon is set to inf")
limits how far ahead a site may promise a lease: a plan that starts more than that after the
decision counts as infeasible there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from lease_manager import SiteSelectionPolicy

from .economics import Outcome, Prices, SiteEconomics, lease_data_gb

if TYPE_CHECKING:
    from lease_manager import ChangeWatch, Lease, SiteView

NO_SITE = "no site can finish it by its deadline"


@attrs.frozen
class Candidate:
    """A lease's what-if plan on one site, and its outcome there."""

    site: int
    level: int | None
    start: float
    end: float
    outcome: Outcome | None   # None: the site has no power model


def edf_key(lease: Lease) -> tuple[float, float, int]:
    """Earliest deadline first (leases without one last), then arrival, then id."""
    deadline = math.inf if lease.deadline is None else lease.deadline
    return deadline, lease.submit, lease.id


def prices_from(config) -> Prices:
    pairs = config.get("dvfs", "data-cost")
    return Prices(config.get("dvfs", "cpu-price"), config.get("dvfs", "data-price"),
                  dict(pairs))


def valid(leases: Sequence[Lease], send: Callable[[Lease, int | str], None]) -> list[Lease]:
    """The leases whose ``data-gb`` is valid; the others are rejected with the reason."""
    out = []
    for lease in leases:
        data = lease_data_gb(lease)
        if isinstance(data, str):
            send(lease, f"bad attribute: {data}")
        else:
            out.append(lease)
    return out


class _MetaScheduler(SiteSelectionPolicy):
    """What the meta-schedulers share: what-if candidates and each site's economics."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.prices = prices_from(ctx.config)
        self.horizon = ctx.config.get("dvfs", "promise-horizon")
        self.no_site = NO_SITE if math.isinf(self.horizon) else (
            f"{NO_SITE} starting within the promise horizon ({self.horizon:g} s)")
        self._economics: dict[str, SiteEconomics | None] = {}

    def plan(self, site: SiteView, lease: Lease, now: float
             ) -> tuple[int | None, float, float] | None:
        """The site's what-if answer, None if it starts beyond the promise horizon."""
        plan = site.what_if(lease, now)
        if plan is not None and plan[1] > now + self.horizon:
            return None
        return plan

    def economics(self, site: SiteView) -> SiteEconomics | None:
        if site.name not in self._economics:
            model = site.power
            self._economics[site.name] = None if model is None else SiteEconomics(
                site.name, model, site.table.capacity[:, model.cpu],
                site.config.get("power", "gamma"))
        return self._economics[site.name]

    def candidate(self, lease: Lease, sites: Sequence[SiteView], i: int,
                  now: float) -> Candidate | None:
        plan = self.plan(sites[i], lease, now)
        if plan is None:
            return None
        level, start, end = plan
        econ = self.economics(sites[i])
        outcome = None
        if econ is not None:
            outcome = econ.outcome(lease, econ.model.top_level if level is None else level,
                                   start, self.prices)
        return Candidate(i, level, start, end, outcome)

    def select(self, lease: Lease, sites: Sequence[SiteView], length: float,
               now: float) -> int | str:
        chosen: list[int | str] = []
        self.select_batch([lease], sites, now, lambda _, choice: chosen.append(choice))
        return chosen[0]


class _Greedy(_MetaScheduler):
    """GMCE / GMP: EDF leases, each to the first site (by a static index) that meets its
    deadline."""

    rate = "carbon"

    def select_batch(self, leases: Sequence[Lease], sites: Sequence[SiteView], now: float,
                     send: Callable[[Lease, int | str], None]) -> None:
        order = sorted(range(len(sites)), key=lambda i: (self._index(sites[i], now), i))
        for lease in sorted(valid(leases, send), key=edf_key):
            for i in order:
                if self.plan(sites[i], lease, now) is not None:
                    send(lease, i)
                    break
            else:
                send(lease, self.no_site)

    def _index(self, site: SiteView, now: float) -> float:
        econ = self.economics(site)
        return math.inf if econ is None else econ.index(self.rate, now)


class GMCE(_Greedy):
    """Greedy Minimum Carbon Emission."""

    name = "gmce"
    rate = "carbon"


class GMP(_Greedy):
    """Greedy Maximum Profit (sites by electricity price)."""

    name = "gmp"
    rate = "price"


class EdfEst(_MetaScheduler):
    """EDF leases, each to the site where it can start earliest (ties: the site listed
    first)."""

    name = "edf-est"

    def select_batch(self, leases: Sequence[Lease], sites: Sequence[SiteView], now: float,
                     send: Callable[[Lease, int | str], None]) -> None:
        for lease in sorted(valid(leases, send), key=edf_key):
            best: tuple[float, int] | None = None
            for i, site in enumerate(sites):
                plan = self.plan(site, lease, now)
                if plan is not None and (best is None or (plan[1], i) < best):
                    best = (plan[1], i)
            send(lease, self.no_site if best is None else best[1])


def _carbon(c: Candidate) -> float:
    """Less is better."""
    return math.inf if c.outcome is None else c.outcome.carbon


def _loss(c: Candidate) -> float:
    """Negative profit: less is better."""
    return math.inf if c.outcome is None else -c.outcome.profit


class _MinMin(_MetaScheduler):
    """Min-min over (lease, site) pairs: ``first`` picks each lease's site, ``second`` the
    pair to commit (both: less is better; ties to the earlier deadline, then the site listed
    first)."""

    first: Callable[[Candidate], float] = staticmethod(_carbon)
    second: Callable[[Candidate], float] = staticmethod(_carbon)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._watches: dict[str, ChangeWatch] = {}

    def select_batch(self, leases: Sequence[Lease], sites: Sequence[SiteView], now: float,
                     send: Callable[[Lease, int | str], None]) -> None:
        unmapped = sorted(valid(leases, send), key=edf_key)
        # what-if candidates by lease id and site; only the committed site's change
        known: dict[int, list[Candidate | None]] = {
            lease.id: [self.candidate(lease, sites, i, now) for i in range(len(sites))]
            for lease in unmapped}
        while unmapped:
            best: list[tuple[Lease, Candidate]] = []
            for lease in unmapped:
                feasible = [c for c in known[lease.id] if c is not None]
                if not feasible:
                    send(lease, self.no_site)
                    continue
                best.append((lease, min(feasible, key=lambda c: (self.first(c), c.site))))
            if not best:
                return
            order = {lease.id: k for k, lease in enumerate(unmapped)}
            lease, chosen = min(best, key=lambda pair: (self.second(pair[1]),
                                                        order[pair[0].id]))
            site = sites[chosen.site]
            watch = self._watch(site)
            watch.reset()
            send(lease, chosen.site)
            unmapped = [other for other, _ in best if other is not lease]
            for other in unmapped:
                old = known[other.id][chosen.site]
                if not self._still(old, other, site, watch):
                    known[other.id][chosen.site] = self.candidate(other, sites, chosen.site,
                                                                  now)

    def _watch(self, site: SiteView) -> ChangeWatch:
        watch = self._watches.get(site.name)
        if watch is None:
            watch = self._watches[site.name] = site.table.watch()
        return watch

    @staticmethod
    def _still(old: Candidate | None, lease: Lease, site: SiteView, watch: ChangeWatch) -> bool:
        """Is ``old`` still the site's what-if answer for ``lease`` after the changes
        ``watch`` saw? When they only took capacity outside its window (an infeasible lease
        stays infeasible). Not under a power cap, whose answers look beyond the window, nor
        for a lease of several VM shapes, which the mapper places by trial."""
        if site.capped or len(lease.vms.counts) != 1:
            return False
        if old is None:
            return not watch.freed
        return watch.untouched(old.start, old.end)


class MceMce(_MinMin):
    """Minimum carbon emission in both steps."""

    name = "mce-mce"
    first = staticmethod(_carbon)
    second = staticmethod(_carbon)


class MpMp(_MinMin):
    """Maximum profit in both steps."""

    name = "mp-mp"
    first = staticmethod(_loss)
    second = staticmethod(_loss)


class MceMp(_MinMin):
    """Each lease's site by minimum carbon; the pair committed by maximum profit."""

    name = "mce-mp"
    first = staticmethod(_carbon)
    second = staticmethod(_loss)


class MpMce(_MinMin):
    """Each lease's site by maximum profit; the pair committed by minimum carbon."""

    name = "mp-mce"
    first = staticmethod(_loss)
    second = staticmethod(_carbon)
