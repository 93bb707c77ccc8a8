"""lm_dvfs: DVFS and carbon/profit-aware meta-scheduling across data centres (Garg et al.).

A lease_manager plugin (entry point ``dvfs`` in the ``lease_manager`` group):

- operating-point policies ``our-dvs``, ``prev-dvs``, ``without-dvs``
  (:mod:`.operating_point`);
- site-selection policies ``gmce``, ``gmp``, ``mce-mce``, ``mp-mp``, ``mce-mp``, ``mp-mce``
  and ``edf-est`` (:mod:`.meta`), meant for ``[simulation] site-selection-cycle = 50``;
- probe ``garg-accounting`` (:mod:`.accounting`): energy, cost, carbon, profit and workload
  per site and in total (eqs 3-9);
- :mod:`.economics`: the per-site quantities, and f_opt.

Options live in the ``[dvfs]`` section.
"""

from __future__ import annotations

__version__ = "0.1.0"

import math

from lease_manager import FLOAT, STRING, Option, OptionType, hookimpl

from .accounting import GargAccounting
from .economics import Outcome, Prices, SiteEconomics, f_opt
from .meta import GMCE, GMP, EdfEst, MceMce, MceMp, MpMce, MpMp
from .operating_point import OurDVS, PrevDVS, WithoutDVS
from .workload import GargWorkload

__all__ = ["__version__", "GargAccounting", "Outcome", "Prices", "SiteEconomics", "f_opt",
           "GMCE", "GMP", "EdfEst", "MceMce", "MceMp", "MpMce", "MpMp", "OurDVS", "PrevDVS",
           "WithoutDVS", "GargWorkload", "SITE_PRICES", "MEAN_VARIANCE"]

MAX_PRICE = 1e6


def _parse_site_prices(text: str) -> tuple[tuple[str, float], ...]:
    pairs: list[tuple[str, float]] = []
    for item in text.replace(",", " ").split():
        name, sep, value = item.rpartition(":")
        if not sep:
            name = "*"   # every site not named
        elif not name:
            raise ValueError(f"{item!r} is not SITE:PRICE or PRICE")
        try:
            price = float(value)
        except ValueError:
            raise ValueError(f"{item!r}: {value!r} is not a number") from None
        if not (math.isfinite(price) and 0 <= price <= MAX_PRICE):
            raise ValueError(f"{item!r}: the price must be in [0, {MAX_PRICE:g}]")
        if any(name == other for other, _ in pairs):
            raise ValueError(f"site {name!r} is given twice" if name != "*"
                             else "two prices for every site")
        pairs.append((name, price))
    return tuple(pairs)


#: an option type: a price per site, "SITE:PRICE ..."
SITE_PRICES = OptionType("prices per site (e.g. 'new-york:0.05 texas:0.1', or '0.05' for all)",
                         _parse_site_prices, lambda v: " ".join(f"{n}:{p:g}" for n, p in v))


def _parse_mean_variance(text: str) -> tuple[float, float]:
    parts = text.replace(",", " ").split()
    if len(parts) != 2:
        raise ValueError(f"{text.strip()!r} is not two numbers 'MEAN VARIANCE'")
    try:
        mean, variance = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not two numbers 'MEAN VARIANCE'") from None
    if not (math.isfinite(mean) and math.isfinite(variance) and 1 <= mean <= 1e6
            and 0 <= variance <= 1e6):
        raise ValueError(f"{text.strip()!r}: need 1 <= MEAN <= 1e6 and 0 <= VARIANCE <= 1e6")
    return mean, variance


#: an option type: a Normal distribution's "MEAN VARIANCE"
MEAN_VARIANCE = OptionType("mean and variance (two numbers: MEAN VARIANCE)",
                           _parse_mean_variance, lambda v: f"{v[0]:g} {v[1]:g}")


@hookimpl
def register_policies():
    return [OurDVS, PrevDVS, WithoutDVS, GMCE, GMP, MceMce, MpMp, MceMp, MpMce, EdfEst,
            GargAccounting, GargWorkload]


@hookimpl
def register_options():
    return [
        Option("dvfs", "cpu-price", FLOAT, 0.40, minimum=0, maximum=MAX_PRICE, doc="""
            p^c: what users pay per CPU-hour of work (at f_max: a lease slowed down by DVS
            pays for its work, not for its longer run), in the profit of the meta-schedulers
            and of `garg-accounting` (Garg et al. use $0.40)."""),
        Option("dvfs", "data-price", FLOAT, 0.0, minimum=0, maximum=MAX_PRICE, doc="""
            p^DTU: what users pay per GB of a lease's data (its `data-gb` attribute) sent to
            a site (Garg et al.'s section 6.2 uses $0.17)."""),
        Option("dvfs", "arrival-rate", FLOAT, 1.0, minimum=1e-6, maximum=1e9, doc="""
            Annotator `garg-workload`: trace submit times are divided by this factor (Garg et
            al.: 10, 100 (their medium rate), 1000, 10000)."""),
        Option("dvfs", "urgent-share", FLOAT, 0.4, minimum=0, maximum=1, doc="""
            Annotator `garg-workload`: the probability that a lease is of high urgency (Garg
            et al. sweep 0 to 1; 0.4 in their other experiments)."""),
        Option("dvfs", "high-urgency", MEAN_VARIANCE, (4.0, 2.0), doc="""
            Annotator `garg-workload`: the Normal distribution of a high-urgency lease's
            deadline over its run time (Irwin et al., as Garg et al. use it: mean 4,
            variance 2), cut at 1."""),
        Option("dvfs", "low-urgency", MEAN_VARIANCE, (12.0, 2.0), doc="""
            Annotator `garg-workload`: the same for low urgency (mean 12; the paper gives no
            variance: 2, as for high urgency)."""),
        Option("dvfs", "slot-fit", STRING, "profile", choices=("profile", "one-slot"), doc="""
            How a site's operating-point policy (`our-dvs`, `prev-dvs`, `without-dvs`) finds
            a lease's slot: `profile`, anywhere its VMs fit in the free capacity all through
            (conservative backfilling); `one-slot`, inside one of the site's free time slots
            (t_s, t_e, n), the free capacity cut wherever a reservation starts or ends (a
            reading of Garg et al.'s slots "based on Singh et al."), at the slot's start."""),
        Option("dvfs", "promise-horizon", FLOAT, math.inf, minimum=0, maximum=1e10,
               unlimited=True, doc="""
            Garg et al.'s meta-schedulers: how far ahead (s) of its decision a site may
            promise to start a lease; a later plan counts as infeasible at that site. The
            paper sets the time horizon to infinity (the default); a finite one is a
            sensitivity test, not the paper's setup."""),
        Option("dvfs", "data-tb", FLOAT, 0.0, minimum=0, maximum=1e6, doc="""
            Annotator `garg-workload`: each lease's data to transfer is drawn uniformly in
            [0, data-tb] TB (Garg et al.'s section 6.2: 10); 0: no data."""),
        Option("dvfs", "data-cost", SITE_PRICES, (), doc="""
            p^DT: what a GB of data transfer costs the provider at each site, as
            `SITE:PRICE` pairs, and `PRICE` alone for every site not named (default 0)."""),
    ]
