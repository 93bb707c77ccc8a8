"""Operating-point policies of Garg et al. (section 4.2): ``our-dvs``, ``prev-dvs`` and
``without-dvs``.

``our-dvs`` starts at the level of least energy per unit of work (the level next to
f_opt = (beta / (2 alpha))^(1/3)); if the lease cannot finish by its deadline there (a what-if
plan on the site, which changes nothing), it steps up one level at a time. ``prev-dvs`` does
the same from the lowest level. ``without-dvs`` runs everything at f_max. A lease no level can
finish in time gets f_max, and the site rejects it for its deadline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager import OperatingPointPolicy

from .economics import SiteEconomics

if TYPE_CHECKING:
    from lease_manager import Lease


class _SteppingUp(OperatingPointPolicy):
    """From a first level up, the first level at which the lease meets its deadline."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        model = ctx.power
        self.economics = None if model is None else SiteEconomics(
            "", model, ctx.site.capacity[:, model.cpu], ctx.config.get("power", "gamma"))

    def first_level(self, lease: Lease) -> int:
        raise NotImplementedError

    def level(self, lease: Lease, now: float) -> int:
        if self.economics is None:
            return 0
        try:
            first = self.first_level(lease)
        except ValueError:   # a bad gamma: the core rejects the lease with the reason
            return self.economics.model.top_level
        top = self.economics.model.top_level
        if lease.deadline is None:
            return first
        for level in range(first, top + 1):
            if self.ctx.scheduler.what_if(lease, now, level) is not None:
                return level
        return top


class OurDVS(_SteppingUp):
    """Garg et al.'s OurDVS: from the level of least energy up, until the deadline is met."""

    name = "our-dvs"

    def first_level(self, lease: Lease) -> int:
        assert self.economics is not None
        return self.economics.least_energy_level(lease)


class PrevDVS(_SteppingUp):
    """The previous DVS of the paper's comparison: from the lowest level up."""

    name = "prev-dvs"

    def first_level(self, lease: Lease) -> int:
        return 0


class WithoutDVS(OperatingPointPolicy):
    """No DVS: every lease at f_max (the core's ``highest``, under the paper's name)."""

    name = "without-dvs"

    def level(self, lease: Lease, now: float) -> int:
        model = self.ctx.power
        return 0 if model is None else model.top_level
