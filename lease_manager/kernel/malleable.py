"""Malleable leases: a running lease whose allocation (nodes, VMs per node) changes.

A malleable lease's work is kept in *single-server seconds*: what one server would take to do
it. It progresses at ``rate`` single-server seconds per second, the speedup of its current
allocation (GreenPar's SP(n, v)). The lease's durations (``requested_duration``,
``actual_duration``) are those of its *reference* allocation, the one the trace measured,
whose rate is ``reference_rate``; so its work is ``run_duration x reference_rate``
single-server seconds. The core keeps ``work_done`` in seconds at the reference allocation and
makes the lease take ``stretch = base_stretch x reference_rate / rate`` seconds per such second,
the same way a DVFS level stretches a rigid lease (``base_stretch`` is that DVFS stretch).

A resize (:meth:`~lease_manager.kernel.scheduler.resize.Resizer.resize`) truncates the running
reservation at *now* and adds one with the new VMs from *now* on; when VMs move, the lease
makes no progress for the migration time at the start of the new reservation and draws the
migration energy over it. Every VM reservation's rate and migration pause are recorded
(:attr:`Malleability.segments`), so that the invariant checker can redo the sum of the work
from the reservations as they ended.
"""

from __future__ import annotations

import math

import attrs

from lease_manager.kernel.lease import Lease, VMRequest
from lease_manager.kernel.reservation import Reservation


@attrs.frozen(eq=False)
class Allocation:
    """What an allocation policy gives a malleable lease: its VMs (count and per-VM amounts,
    hence how many fit on a node) and the rate its work progresses at with them, in
    single-server seconds per second. At arrival, ``reference_rate`` is the rate of the
    allocation the lease's durations describe (None: ``rate``)."""

    vms: VMRequest
    rate: float
    reference_rate: float | None = None

    def __attrs_post_init__(self) -> None:
        for name in ("rate", "reference_rate"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"an allocation's {name} must be a positive number, "
                                 f"not {value!r}")


@attrs.define(eq=False)
class Malleability:
    """A malleable lease's speed and the history of its allocations."""

    #: single-server seconds per second at the allocation the lease's durations describe
    reference_rate: float
    #: single-server seconds per second now
    rate: float
    #: the lease's stretch at its reference rate (its DVFS stretch)
    base_stretch: float = 1.0
    #: VM reservation id -> (rate, progress starts at): every VM reservation the lease had
    segments: dict[int, tuple[float, float]] = attrs.field(factory=dict)
    #: (time, nodes, VMs, rate) of every allocation, the first when the lease started
    history: list[tuple[float, int, int, float]] = attrs.field(factory=list)
    resizes: int = 0
    #: joules drawn by migrations
    migration_joules: float = 0.0
    #: seconds of migration pauses
    migration_seconds: float = 0.0

    def stretch_at(self, rate: float) -> float:
        """The lease's seconds per second of reference work at ``rate``."""
        return self.base_stretch * self.reference_rate / rate

    def rate_of(self, res: Reservation) -> tuple[float, float]:
        """The rate of VM reservation ``res`` and when its progress starts."""
        return self.segments.get(res.id, (self.rate, res.start))

    def single_server(self, reference_seconds: float) -> float:
        """Reference seconds of work as single-server seconds."""
        return reference_seconds * self.reference_rate


def make_malleable(lease: Lease, allocation: Allocation) -> None:
    """Give ``lease`` (not started) the VMs and speed of ``allocation``."""
    reference = allocation.reference_rate or allocation.rate
    m = Malleability(reference, allocation.rate, base_stretch=lease.stretch)
    lease.vms = allocation.vms
    lease.malleable = m
    lease.stretch = m.stretch_at(allocation.rate)


def progress(lease: Lease, res: Reservation, now: float) -> float:
    """Reference seconds of work ``lease`` did in its running reservation ``res`` up to ``now``
    (none during a migration pause)."""
    m = lease.malleable
    begin = res.start if m is None else max(res.start, m.rate_of(res)[1])
    return max(0.0, now - begin) / lease.stretch


def work_of(lease: Lease, shutdown: float = 0.0) -> float:
    """The single-server seconds of work ``lease``'s VM reservations did, from their rates and
    pauses and their starts and ends as they turned out (the invariant checker's sum); the
    last ``shutdown`` seconds of a finished lease are its VMs shutting down, not work."""
    m = lease.malleable
    if m is None:
        return 0.0
    total = 0.0
    pieces = [r for r in (*lease.allocations, *lease.reservations) if r.kind == "vm"]
    for i, res in enumerate(pieces):
        rate, begin = m.rate_of(res)
        end = min(res.end, lease.end) if lease.end is not None else res.end
        if i == len(pieces) - 1 and lease.state.value == "done":
            end -= shutdown
        total += rate * max(0.0, end - max(res.start, begin)) / m.base_stretch
    return total
