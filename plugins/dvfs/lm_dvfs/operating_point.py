"""Operating-point policies of Garg et al. (section 4.2): ``our-dvs``, ``prev-dvs`` and
``without-dvs``.

``our-dvs`` starts at the level of least energy per unit of work (the level next to
f_opt = (beta / (2 alpha))^(1/3)); if the lease cannot finish by its deadline there (a what-if
plan on the site, which changes nothing), it steps up one level at a time. ``prev-dvs`` does
the same from the lowest level. ``without-dvs`` runs everything at f_max. A lease no level can
finish in time gets f_max, and the site rejects it for its deadline.

With ``[dvfs] slot-fit = one-slot`` (:mod:`.slots`) a level is feasible only if the lease fits
inside one of the site's free slots by its deadline; the policy then asks the site to start
the lease at that slot's start (its ``start_request``, which the policy owns in this mode).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lease_manager import OperatingPointPolicy

from .economics import SiteEconomics
from .slots import one_slot_start

if TYPE_CHECKING:
    from lease_manager import Lease


class _SlotFit(OperatingPointPolicy):
    """What the policies share: the first level, of those given, that meets the deadline in
    one free slot (``slot-fit = one-slot``)."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.one_slot = ctx.config.get("dvfs", "slot-fit") == "one-slot"

    def first_in_one_slot(self, lease: Lease, now: float, levels: Sequence[int]) -> int:
        """The first of ``levels`` at which ``lease`` fits inside one free slot by its
        deadline; the lease is asked to start at that slot's start. If none: the last level,
        and a start request no slot meets (the site rejects the lease for its deadline).
        A lease of several VM shapes is fitted in the profile, as without the option."""
        lease.start_request = None
        vms = lease.vms
        deadline = math.inf if lease.deadline is None else lease.deadline
        for level in levels:
            plan = self.ctx.scheduler.what_if(lease, now, level)
            if plan is None:
                continue   # not even in the union of the free capacity
            if len(vms.counts) != 1:
                return level
            length = plan[2] - plan[1]
            start = one_slot_start(self.ctx.table, vms, length, now, deadline - length)
            if start is not None:
                lease.start_request = start
                return level
        if lease.deadline is not None:
            lease.start_request = math.inf
        return levels[-1]


class _SteppingUp(_SlotFit):
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
        if self.one_slot:
            return self.first_in_one_slot(lease, now, range(first, top + 1))
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


class WithoutDVS(_SlotFit):
    """No DVS: every lease at f_max (the core's ``highest``, under the paper's name)."""

    name = "without-dvs"

    def level(self, lease: Lease, now: float) -> int:
        model = self.ctx.power
        top = 0 if model is None else model.top_level
        if self.one_slot and model is not None:
            return self.first_in_one_slot(lease, now, [top])
        return top
