"""A power cap with ``placement = at-start``: a bound on the VMs that run at any instant.

Under a cap, when-planned holds each node's static power from when it is on until the
node-power policy would switch it off after the last lease planned *on that node*
(:mod:`~lease_manager.energy.power_cap`), so which node a plan is pinned on decides the power
held. Counting has no such pins, so a cap is counted only where the site's power does not
depend on them:

- nodes that never switch (a node-power policy that does not switch off, ``initial-state =
  on``): every node draws its idle power for the whole run;
- identical nodes (same capacity, same power model) and one operating point for every lease
  (``highest`` or ``lowest``), and no lease with its own ``watts``: each running VM draws the
  same dynamic power ``d``, on whichever node it runs;
- a constant cap (a number of watts, no ``power-cap-window``).

The site's IT power is then ``N x idle + d x (VMs running)``, and the cap is exactly a bound
on the VMs that run at once: ``K = floor((cap - N x idle) / d)`` (with the table's tolerance),
which the counting table holds as its whole capacity (:meth:`CountTable.cap_vms
<lease_manager.kernel.count_table.CountTable.cap_vms>`). A lease the bound can never admit
is rejected with when-planned's reason (:meth:`CountedCap.refuses`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.energy.lease_power import lease_watts
from lease_manager.kernel.fitting import EPS

if TYPE_CHECKING:
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.reservation import Reservation


class CountedCap:
    """A constant power cap as a bound on the VMs running at once (see the module
    docstring); the scheduler's :class:`~lease_manager.kernel.scheduler.seams.PowerGate`."""

    def __init__(self, model: PowerModel, watts: float, vector: np.ndarray,
                 capacity: np.ndarray, level: int) -> None:
        self.model = model
        self.watts = float(watts)
        cpu = model.cpu
        #: what the nodes draw, all on and idle (a node never draws less than off-watts,
        #: and the policy never switches one off)
        static = np.maximum(model.idle - model.off_watts, 0.0)
        self.baseline = float(model.off_watts.sum())
        #: what is left of the cap for the leases' dynamic power
        self.room = self.watts - self.baseline - float(static.sum())
        #: the dynamic power of one VM (as when-planned counts it: its CPU share of full
        #: minus idle power, 0 where that is negative)
        share = float(vector[cpu]) / float(capacity[0, cpu])
        self.per_vm = max(share * float(model.full[0, level] - model.idle[0]), 0.0)
        #: each level's dynamic power per CPU (as when-planned's least draw)
        self._per_cpu = (np.maximum(model.full[0] - model.idle[0], 0.0)
                         / float(capacity[0, cpu]))

    def vm_limit(self) -> int | None:
        """The most VMs that may run at once (None: no bound, VMs draw no dynamic power)."""
        if self.room < -EPS:
            raise ValueError(f"the cap ({self.watts:g} W) cannot hold the nodes that are on at "
                             f"the start: they draw {self.watts - self.room:g} W idle (start "
                             f"them off: initial-state = off)")
        if self.per_vm <= 0:
            return None
        return max(int(math.floor((self.room + EPS) / self.per_vm)), 0)

    def admits(self, plan: Sequence[Reservation]) -> bool:
        """The counting table holds the bound: every plan it gives is within the cap."""
        return True

    def refuses(self, lease: Lease) -> str | None:
        """Why ``lease`` can never run under the cap: when-planned's reason (its dynamic
        power above what the cap leaves over the idle nodes), or its own ``watts``, which
        counting cannot hold."""
        if lease_watts(lease) is not None:
            return ("a lease's own watts under a power cap needs placement = when-planned "
                    "(counting holds one dynamic power per VM)")
        level = self.model.top_level if lease.level is None else lease.level
        need = (float(lease.vms.total[self.model.cpu]) * float(self._per_cpu[level])
                * (1 - 1e-9))
        if need > self.room + EPS:
            return (f"the power cap never has room for it: it needs {need:g} W and at most "
                    f"{max(self.room, 0):g} W are ever left")
        return None

    def least_draw(self, lease: Lease) -> np.ndarray:
        """Nothing beyond the count (the table has no site-wide resources)."""
        return np.zeros(0)

    @property
    def boot_seconds(self) -> float:
        return float(self.model.on_seconds.max())

    def sync(self, now: float) -> None:
        """Nothing to hold: no node boots or switches off."""
