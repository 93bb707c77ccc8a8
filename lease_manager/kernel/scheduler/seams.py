"""The scheduler's seams, as protocols: what plugins see of a scheduler (its leases, by where
they are), and what the engine drives. :class:`~lease_manager.kernel.scheduler.LeaseScheduler`
and :class:`~lease_manager.multisite.SiteSchedulers` (every site's, as one) both have them;
mypy checks it (below)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease
    from lease_manager.kernel.scheduler.core import LeaseScheduler
    from lease_manager.kernel.slottable import Reservation
    from lease_manager.multisite import SiteSchedulers


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


if TYPE_CHECKING:   # both schedulers have both seams (mypy checks these)
    def _one_site(scheduler: LeaseScheduler) -> SteppedScheduler:
        return scheduler

    def _sites(scheduler: SiteSchedulers) -> SteppedScheduler:
        return scheduler
