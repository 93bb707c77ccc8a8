"""A lease's own dynamic power: watts per VM, overriding the node model's dynamic part.

Kassab et al.'s tasks each draw their own power phi on top of the static power of the machine
they run on, whatever the machine's CPU share. A lease says so with the attribute ``watts``
(an LWF ``<extra>`` attribute, a column of a task file, or an annotator's draw): each of its
VMs then draws ``watts`` above the node's idle power, instead of ``share x (full - idle)``.
The power cap (:mod:`~lease_manager.energy.power_cap`) and the energy accounting
(:mod:`~lease_manager.energy.energy_accounting`) both use it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.reservation import Reservation

#: the attribute (``lease.extra``) that gives a lease's dynamic power per VM, in watts
WATTS_ATTRIBUTE = "watts"
#: the largest dynamic power a VM may be declared to draw
MAX_LEASE_WATTS = 1e9


def lease_watts(lease: Lease) -> float | None:
    """The lease's own dynamic power per VM (W), or None if it has none (or a bad one: the
    scheduler rejects those, see :func:`bad_watts`)."""
    text = lease.extra.get(WATTS_ATTRIBUTE)
    if text is None:
        return None
    try:
        watts = float(text)
    except (TypeError, ValueError):
        return None
    return watts if 0.0 <= watts <= MAX_LEASE_WATTS else None


def bad_watts(lease: Lease) -> str:
    """Why the lease's ``watts`` attribute is not a power (empty if it is, or if it has none)."""
    text = lease.extra.get(WATTS_ATTRIBUTE)
    if text is None:
        return ""
    try:
        watts = float(text)
    except (TypeError, ValueError):
        return f"bad attribute: watts {text!r} is not a number"
    if not (math.isfinite(watts) and 0.0 <= watts <= MAX_LEASE_WATTS):
        return f"bad attribute: watts {text!r} is not in [0, {MAX_LEASE_WATTS:g}]"
    return ""


def vms_per_node(res: Reservation) -> np.ndarray:
    """How many of the lease's VMs ``res`` holds on each of its nodes (``res.nodes`` order)."""
    if res.vm_nodes:
        counts = {int(n): 0 for n in res.nodes.tolist()}
        for node in res.vm_nodes:
            counts[node] += 1
        return np.array([counts[int(n)] for n in res.nodes.tolist()], dtype=float)
    lease = res.lease
    assert lease is not None, "a lease's reservation"
    per_vm = lease.vms.total / max(lease.vms.count, 1)
    used = np.flatnonzero(per_vm > 0)
    if used.size == 0:
        return np.zeros(len(res.nodes))
    k = int(used[0])
    return np.rint(res.amounts[:, k] / per_vm[k])
