"""Pricing policies ``constant``, ``maximum`` and ``adaptive``: a rate per CPU-hour.

``[scheduling] policy-pricing`` selects one (``free``, the default, is in
:mod:`lease_manager.policies.defaults`). Every policy here prices a lease when it is admitted::

    price = rate x CPUs x requested hours

where CPUs = the lease's total ``CPU`` amount (over all its VMs) / ``[pricing] cpu-unit``
(Haizea counted ``CPU:100`` per core: set ``cpu-unit = 100``), and the rate depends on the
policy. A lease of unlimited duration costs ``math.inf`` (with a positive rate): it cannot be
priced up front, and a lease with a ``max_price`` is then rejected by the core.

Suspension surcharge: :meth:`CPUHourPricing.surcharge` gives what a lease owes for the time it
spent suspending, suspended and resuming: ``[pricing] suspension-surcharge`` per CPU-hour of
that time (0 by default). The core calls it when a lease ends, with the seconds the lease
spent so, and adds it to the lease's price. The core (not the policy) rejects a lease whose
price exceeds its ``max_price``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lease_manager.config.schema import FLOAT, STRING, Option, OptionType
from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.extra_attributes import USER_RATE
from lease_manager.numbers import parse_float
from lease_manager.policies import PricingPolicy
from lease_manager.policies.utilization import cpu_index, projected_utilization

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease

HOUR = 3600.0


#: the highest price of one CPU-hour (prices are finite, so revenues add up)
MAX_RATE = 1e9


def _parse_rates(text: str) -> tuple[float, ...]:
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise ValueError("give at least one rate (e.g. '0.5, 1.0, 2.0')")
    rates = []
    for part in parts:
        try:
            rate = parse_float(part)
        except ValueError:
            raise ValueError(f"{part!r} in {text.strip()!r} is not a finite number") from None
        if not 0 <= rate <= MAX_RATE:
            raise ValueError(f"{part!r} in {text.strip()!r} is not in [0, {MAX_RATE:g}]")
        rates.append(rate)
    return tuple(rates)


RATES = OptionType("list of numbers (e.g. '0.5, 1.0, 2.0')", _parse_rates,
                   lambda v: ", ".join(f"{x:g}" for x in v))


class CPUHourPricing(PricingPolicy):
    """Base of the rate-per-CPU-hour policies: subclasses give :meth:`rate`."""

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        cfg = ctx.config
        self.cpu_unit = float(cfg.get("pricing", "cpu-unit"))
        self.suspension_rate = float(cfg.get("pricing", "suspension-surcharge"))
        self.per_node = cfg.get("pricing", "unit") == "node-hour"
        self._cpu = cpu_index(ctx.site.types)

    def cpus(self, lease: Lease) -> float:
        """What the rate multiplies: the lease's CPUs (its total CPU amount over ``[pricing]
        cpu-unit``), or with ``[pricing] unit = node-hour`` its VMs (Haizea's nodes)."""
        if self.per_node:
            return float(lease.vms.count)
        return float(lease.vms.total[self._cpu]) / self.cpu_unit

    def rate(self, lease: Lease, now: float) -> float:
        """The price of one CPU-hour of ``lease``."""
        raise NotImplementedError

    def price(self, lease: Lease, now: float) -> float:
        return self.base_price(lease, self.rate(lease, now))

    def base_price(self, lease: Lease, rate: float) -> float:
        """``lease``'s price at ``rate`` per CPU-hour (Haizea 1.1's ``get_base_price``)."""
        cpus = self.cpus(lease)
        if rate == 0 or cpus == 0:   # not nan for an unlimited lease
            return 0.0
        return float(rate * cpus * lease.requested_duration / HOUR)

    def users_maximum(self, lease: Lease) -> float | None:
        """The most the user pays: Haizea 1.1's ``simul_userrate`` attribute is a rate per
        CPU-hour, and the user rejects a price above the lease's price at that rate."""
        rate = lease.extra.get(USER_RATE)
        return None if rate is None else self.base_price(lease, float(rate))

    def surcharge(self, lease: Lease, seconds_suspended: float) -> float:
        """What ``lease`` owes for ``seconds_suspended`` seconds spent suspending, suspended
        and resuming: ``[pricing] suspension-surcharge`` per CPU-hour. Called by the core when
        the lease ends; the result is added to the lease's price."""
        if seconds_suspended <= 0 or self.suspension_rate == 0:
            return 0.0
        return float(self.suspension_rate * self.cpus(lease) * seconds_suspended / HOUR)


class Constant(CPUHourPricing):
    """``[pricing] rate`` per CPU-hour of the requested duration."""

    name = "constant"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self._rate = float(ctx.config.get("pricing", "rate"))

    def rate(self, lease: Lease, now: float) -> float:
        return self._rate


class Maximum(CPUHourPricing):
    """The highest rate of ``[pricing] rates`` per CPU-hour of the requested duration.

    Haizea's ``maximum`` policy (``MaxMultipleOfFairPricePolicy``) was a device for
    experiments on price acceptance: it charged every lease the most its (simulated) user would
    pay, the fair price (fair rate x nodes x hours) times the markup the lease's
    ``simul_pricemarkup`` attribute gave. Here ``maximum`` charges the highest rate of a rate
    table (peak pricing); an LWF lease's ``simul_pricemarkup`` is in ``lease.extra`` for a
    policy that wants Haizea's behaviour.
    """

    name = "maximum"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self._rate = max(ctx.config.get("pricing", "rates"))

    def rate(self, lease: Lease, now: float) -> float:
        return self._rate


class Adaptive(CPUHourPricing):
    """``[pricing] rate`` x (1 + ``[pricing] adaptive-factor`` x U) per CPU-hour, where U is
    the projected CPU utilisation of the lease's interval with the lease (the projection of
    the ``utilization-threshold`` admission policy): the busier the site, the dearer.

    (Haizea's ``adaptive`` policy learned a markup from users' past acceptances and
    rejections; this one follows the load.)
    """

    name = "adaptive"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self._rate = float(ctx.config.get("pricing", "rate"))
        self.factor = float(ctx.config.get("pricing", "adaptive-factor"))

    def rate(self, lease: Lease, now: float) -> float:
        if self._rate == 0 or self.factor == 0:
            return self._rate
        projection = projected_utilization(self.ctx.table, lease, now, self._cpu)
        return self._rate * (1.0 + self.factor * projection.utilization)


@hookimpl
def register_options():
    return [
        Option("pricing", "rate", FLOAT, 1.0, minimum=0.0, maximum=MAX_RATE, doc="""
            `constant` and `adaptive` pricing: price of one CPU-hour (see `cpu-unit`) of a
            lease's requested duration."""),
        Option("pricing", "rates", RATES, (1.0,), doc="""
            `maximum` pricing: the rate table (prices of one CPU-hour); a lease is priced at
            the highest."""),
        Option("pricing", "cpu-unit", FLOAT, 1.0, minimum=1e-9, maximum=1e9, doc="""
            The `CPU` amount that counts as one CPU in prices (Haizea's sites give `CPU:100`
            per core: set 100)."""),
        Option("pricing", "unit", STRING, "cpu-hour", choices=("cpu-hour", "node-hour"), doc="""
            What a rate is the price of: one CPU-hour (see `cpu-unit`), or one node-hour,
            a VM for an hour whatever its size (Haizea 1.1's prices: rate x nodes x hours;
            Haizea files set this)."""),
        Option("pricing", "adaptive-factor", FLOAT, 1.0, minimum=0.0, maximum=1e6, doc="""
            `adaptive` pricing: the rate is `rate` x (1 + factor x U), U the projected CPU
            utilisation of the lease's interval (0 to 1) with the lease."""),
        Option("pricing", "suspension-surcharge", FLOAT, 0.0, minimum=0.0, maximum=MAX_RATE,
               doc="""
            Price of one CPU-hour a lease spends suspending, suspended or resuming, added to
            its price when it ends (`constant`, `maximum` and `adaptive` pricing)."""),
    ]


@hookimpl
def register_policies():
    return [Constant, Maximum, Adaptive]
