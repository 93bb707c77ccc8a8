"""The scheduler's seams: what plugins see of a scheduler (its leases, by where they are) and
what the engine drives (:class:`~lease_manager.kernel.scheduler.LeaseScheduler` and
:class:`~lease_manager.multisite.SiteSchedulers`, every site's as one, both have them; mypy
checks it, here and in multisite.py); what the scheduler asks of the energy parts and of the
reallocation plugin, all given to its constructor; and what it tells whoever carries leases
out (:class:`Enactment`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.malleable import Allocation
    from lease_manager.kernel.scheduler.core import LeaseScheduler
    from lease_manager.kernel.slottable import Reservation


class ScheduledLeases(Protocol):
    """The scheduler as plugins see it: every lease it has not finished, by where it is."""

    @property
    def queue(self) -> Sequence[Lease]:
        """QUEUED leases, in queue order."""

    @property
    def held(self) -> Mapping[int, Lease]:
        """HELD leases (held back by the queue policy), by id."""

    @property
    def future(self) -> Mapping[int, Lease]:
        """Leases whose plan has not started yet, by id, in scheduling order."""

    @property
    def running(self) -> Mapping[int, Lease]:
        """Leases running, suspending or resuming, by id."""

    def active_leases(self) -> list[Lease]:
        """Every lease that is not finished: held, queued, planned or running."""


@runtime_checkable
class WhatIfScheduler(Protocol):
    """One site's scheduler, asked where a lease would be planned (not every site's together:
    checked once, when a context's view is bound)."""

    def what_if(self, lease: Lease, now: float, level: int | None = None
                ) -> tuple[int | None, float, float] | None:
        """Where ``lease`` would be planned if it arrived now, changing nothing: ``(level,
        start, end)`` of its first reservation; None if it cannot be."""


class SteppedScheduler(ScheduledLeases, Protocol):
    """The scheduler as the engine drives it, step by step."""

    def submit(self, lease: Lease, now: float) -> None:
        """A lease arrives."""

    def cycle(self, now: float) -> None:
        """One scheduling cycle, after the instant's ends, starts and arrivals."""

    def work_finished(self, res: Reservation, now: float) -> None:
        """A lease's work ended in ``res`` (its END event)."""

    def segment_started(self, res: Reservation, now: float) -> None:
        """Planned reservation ``res`` starts (its START event)."""

    def segment_ended(self, res: Reservation, now: float) -> None:
        """Reservation ``res`` ends as planned (its SEGMENT_END event)."""

    def release_all_held(self, now: float) -> int:
        """Queue every held lease; how many there were."""

    def untie_ended(self) -> None:
        """Let the leases that ended in this step go (when the step is over)."""


class PowerGate(Protocol):
    """A site's power cap, as the scheduler sees it (:class:`~lease_manager.energy.power_cap.
    PowerCap`)."""

    def admits(self, plan: Sequence[Reservation]) -> bool:
        """Is there power for ``plan`` and for booting and keeping on its nodes?"""

    def refuses(self, lease: Lease) -> str | None:
        """Why ``lease`` could never get the power it needs (None if it could)."""

    def least_draw(self, lease: Lease) -> np.ndarray:
        """The least ``lease``'s reservations draw from the site-wide resources."""

    @property
    def boot_seconds(self) -> float:
        """How long the site's slowest node takes to boot."""

    def sync(self, now: float) -> None:
        """Boot the nodes of the plans just made and hold the power they will draw."""


class Resizing(Protocol):
    """What the reallocation plugin asks of the scheduler it serves."""

    def oversize_reason(self, lease: Lease) -> str:
        """Why the empty site could not host ``lease`` (empty if it could)."""

    def resize(self, lease: Lease, now: float, allocation: Allocation, *,
               migration_time: float = 0.0, migration_energy: float = 0.0) -> str:
        """Give running malleable ``lease`` ``allocation`` from ``now`` on (why not, if
        refused)."""


class ArrivalAllocator(Protocol):
    """Makes arriving leases malleable (:class:`~lease_manager.reallocation.
    Reallocation`)."""

    def bind(self, scheduler: Resizing) -> None:
        """Serve ``scheduler`` (the scheduler's constructor calls it, once: the two need each
        other)."""

    def arrived(self, lease: Lease, now: float) -> str:
        """Give ``lease`` its first allocation if the allocation policy makes it malleable
        (why not, if it cannot run)."""


class BootableNodes(Protocol):
    """The nodes that are off and could be booted (:class:`~lease_manager.energy.node_states.
    NodePowerStates`' and :class:`~lease_manager.energy.counted_states.CountedPowerStates`'),
    kept up to date by them at every step."""

    @property
    def bootable(self) -> Mapping[int, float]:
        """The nodes off with no boot planned, with the earliest time a lease could start on
        each (one mapping, changed in place)."""

    @property
    def boot_until(self) -> float:
        """The latest of those times (-inf: none)."""


class AllNodesOn:
    """:class:`BootableNodes` of a site without node power states: every node is on."""

    def __init__(self) -> None:
        self.bootable: dict[int, float] = {}
        self.boot_until = -math.inf


class PlannedBoots(Protocol):
    """The boots planned ahead for leases (:class:`~lease_manager.energy.node_states.
    NodePowerStates`), as re-evaluation sees them."""

    def own_boots(self, res: Reservation, now: float) -> list[Reservation]:
        """The boots not begun by ``now`` that were planned for ``res`` (each ending at its
        start, on one of its nodes)."""

    def lift(self, boots: list[Reservation],
             now: float) -> list[tuple[Reservation, float, float]]:
        """Take ``boots`` out of the table (their nodes held off only until a boot started
        now could end), so that the plan they were for can move; what to put back."""

    def put_back(self, lifted: list[tuple[Reservation, float, float]]) -> None:
        """Undo :meth:`lift` (the plan did not move)."""


class LevelSetter(Protocol):
    """Sets a lease's DVFS level and stretch (:class:`~lease_manager.energy.operating_points.
    OperatingPoints`)."""

    def __call__(self, lease: Lease, now: float) -> str:
        """The operating-point policy's level for ``lease`` (why not, if it cannot have one)."""

    def set_level(self, lease: Lease, level: int) -> str:
        """Give ``lease`` ``level`` (why not, if it cannot have one)."""


class Enactment:
    """What the scheduler tells whoever carries leases out (a simulation, or a daemon's
    backend). ``start`` is called when a lease's VMs start running in reservation ``res`` (first
    start or after a resumption) with the time its work will end at the latest; ``suspend``
    when a suspension begins; ``stop`` when the lease's work must end for good (it finished,
    was cancelled or failed) or is thrown away (preempted without suspension)."""

    def start(self, lease: Lease, res: Reservation, end: float) -> None:
        """``lease``'s VMs run in ``res`` from now; its work ends at ``end`` at the latest."""

    def suspend(self, lease: Lease, now: float) -> None:
        """``lease``'s running work is suspended from ``now``."""

    def stop(self, lease: Lease, now: float) -> None:
        """``lease``'s work ends at ``now`` (any state it has is discarded)."""

    def resize(self, lease: Lease, res: Reservation, end: float) -> None:
        """Malleable ``lease``'s VMs run in ``res`` from now on, in place of its previous
        reservation (VMs may have been added, removed or moved); its work ends at ``end`` at
        the latest."""

    #: whether :meth:`power_off` and :meth:`power_on` should be called (a replay needs none)
    power_calls = False

    def power_off(self, node: int, now: float) -> None:
        """Node ``node`` starts shutting down at ``now`` (with a ``[power]`` model)."""

    def power_on(self, node: int, now: float) -> None:
        """Node ``node`` starts booting at ``now``, in time for a lease planned on it."""


if TYPE_CHECKING:   # the scheduler has both seams (mypy checks it; multisite.py checks its own)
    def _one_site(scheduler: LeaseScheduler) -> SteppedScheduler:
        return scheduler
