"""Haizea's trace overheads (``[tracefile] add-overhead``, ``runtime-slowdown-overhead``,
``bootshutdown-overhead``) and ``override-memory``, applied to leases as they are read."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np

from lease_manager.kernel.lease import Lease, LeaseType, VMRequest


def with_overheads(leases: Iterable[Lease], *, add: str, slowdown_percent: float,
                   boot: float, memory: float, memory_index: int | None) -> Iterator[Lease]:
    """Leases with Haizea's overheads added: the leases ``add`` names (``besteffort`` or
    ``all``) run ``slowdown_percent`` longer (requested and actual durations, rounded up to a
    second, as Haizea rounds), then ``boot`` seconds longer; with ``memory >= 0`` every VM
    needs that much ``Memory``."""
    factor = 1 + slowdown_percent / 100
    for lease in leases:
        if add == "all" or (add == "besteffort" and lease.type is LeaseType.BEST_EFFORT):
            if slowdown_percent:
                lease.requested_duration = _stretched(lease.requested_duration, factor)
                if lease.actual_duration is not None:
                    lease.actual_duration = _stretched(lease.actual_duration, factor)
            if boot:
                lease.requested_duration += boot
                if lease.actual_duration is not None:
                    lease.actual_duration += boot
        if memory >= 0 and memory_index is not None:
            vectors = lease.vms.vectors.copy()
            vectors[:, memory_index] = memory
            vectors.flags.writeable = False
            lease.vms = (VMRequest.uniform(lease.vms.counts[0], vectors[0])
                         if len(lease.vms.counts) == 1
                         else VMRequest(lease.vms.counts, np.asarray(vectors)))
        yield lease


def _stretched(seconds: float, factor: float) -> float:
    return seconds if math.isinf(seconds) else float(math.ceil(seconds * factor - 1e-9))
