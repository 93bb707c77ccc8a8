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

from lease_manager import FLOAT, Option, OptionType, hookimpl

from .accounting import GargAccounting
from .economics import Outcome, Prices, SiteEconomics, f_opt
from .meta import GMCE, GMP, EdfEst, MceMce, MceMp, MpMce, MpMp
from .operating_point import OurDVS, PrevDVS, WithoutDVS

__all__ = ["__version__", "GargAccounting", "Outcome", "Prices", "SiteEconomics", "f_opt",
           "GMCE", "GMP", "EdfEst", "MceMce", "MceMp", "MpMce", "MpMp", "OurDVS", "PrevDVS",
           "WithoutDVS", "SITE_PRICES"]

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


@hookimpl
def register_policies():
    return [OurDVS, PrevDVS, WithoutDVS, GMCE, GMP, MceMce, MpMp, MceMp, MpMce, EdfEst,
            GargAccounting]


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
        Option("dvfs", "data-cost", SITE_PRICES, (), doc="""
            p^DT: what a GB of data transfer costs the provider at each site, as
            `SITE:PRICE` pairs, and `PRICE` alone for every site not named (default 0)."""),
    ]
