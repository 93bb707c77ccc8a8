"""A lease's DVFS level and how much it stretches the lease (Garg et al., eq. 2)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.energy.lease_power import bad_watts

if TYPE_CHECKING:
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.kernel.lease import Lease
    from lease_manager.policies import OperatingPointPolicy

#: the ``<extra>`` attribute (or annotation) that gives a lease its own gamma
GAMMA_ATTRIBUTE = "gamma"


def stretch(model: PowerModel, level: int, gamma: float) -> float:
    """T(f) / T(fmax) = gamma x (fmax / f - 1) + 1 at ``level``; with node groups of different
    frequencies, the largest (a lease's VMs go at the pace of the slowest)."""
    ratio = float((model.ghz[:, model.top_level] / model.ghz[:, level]).max())
    return gamma * (ratio - 1.0) + 1.0


def lease_gamma(lease: Lease, default: float) -> float | str:
    """The lease's gamma (its own ``gamma`` attribute, or ``default``), or why it is invalid."""
    text = lease.extra.get(GAMMA_ATTRIBUTE)
    if text is None:
        return default
    try:
        gamma = float(text)
    except (TypeError, ValueError):
        return f"gamma {text!r} is not a number"
    if not (0.0 <= gamma <= 1.0) or math.isnan(gamma):
        return f"gamma {text!r} is not in [0, 1]"
    return gamma


class OperatingPoints:
    """Sets each arriving lease's level (from the policy) and stretch (the scheduler's
    ``operating_point`` callback)."""

    def __init__(self, model: PowerModel, policy: OperatingPointPolicy, gamma: float) -> None:
        self.model = model
        self.policy = policy
        self.gamma = gamma

    def __call__(self, lease: Lease, now: float) -> str:
        bad = bad_watts(lease)   # checked here: every lease of a run with a power model
        if bad:
            return bad
        return self.set_level(lease, self.policy.level(lease, now))

    def set_level(self, lease: Lease, level: int) -> str:
        """Give ``lease`` DVFS ``level`` and its stretch; why not, if its gamma is invalid."""
        gamma = lease_gamma(lease, self.gamma)
        if isinstance(gamma, str):
            return f"bad operating point: {gamma}"
        if not (isinstance(level, (int, np.integer)) and 0 <= level < self.model.levels):
            raise ValueError(f"operating-point policy {self.policy.name!r} chose level "
                             f"{level!r} for lease {lease.id}; the levels are 0 to "
                             f"{self.model.levels - 1}")
        lease.level = int(level)
        lease.stretch = 1.0 if level == self.model.top_level else stretch(self.model, level, gamma)
        return ""
