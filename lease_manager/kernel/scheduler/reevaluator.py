"""Re-evaluation after resources free up early (a lease ending before its reservation does, a
cancellation): the collaborator that owns its mode and state, and decides when the future is
looked at again. The algorithms are :mod:`~lease_manager.kernel.scheduler.reevaluation`'s
(``move-earlier``, ``compress``) and :mod:`~lease_manager.kernel.scheduler.replan`'s
(Haizea's ``replan``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import LeaseState
from lease_manager.kernel.scheduler import reevaluation, replan
from lease_manager.kernel.slottable import ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler
    from lease_manager.kernel.slottable import Reservation

S = members(LeaseState)
K = members(ReservationKind)


class Reevaluator:
    """One scheduler's re-evaluation, in ``mode`` (``auto`` already resolved: see
    :func:`~lease_manager.kernel.scheduler.replan.by_mode`)."""

    __slots__ = ("mode", "at_each_end", "pending", "replanning", "replanning_lease", "moves",
                 "replanner", "_sched")

    def __init__(self, sched: LeaseScheduler, mode: str) -> None:
        self._sched = sched
        #: ``move-earlier`` and ``compress``
        self.moves = reevaluation.EarlierMoves(sched)
        #: ``replan`` (Haizea's)
        self.replanner = replan.Replanner(sched)
        #: ``move-earlier``, ``compress`` or ``replan``
        self.mode = mode
        #: whether it runs at each premature end as it happens (``compress``, ``replan``);
        #: ``move-earlier`` runs once per instant, at the cycle after the instant's ends
        self.at_each_end = mode in replan.AT_EACH_END
        #: resources were freed since the last cycle: the next one re-evaluates
        self.pending = False
        #: premature ends are being taken one by one (:meth:`premature_end`)
        self.replanning = False
        #: a re-plan is planning a suspended lease again (haizea_resumption.py reads it)
        self.replanning_lease = False

    def request(self) -> None:
        """Resources were freed: re-evaluate at the next cycle."""
        self.pending = True

    def at_cycle(self, now: float) -> None:
        """The cycle's re-evaluation, if resources were freed since the last one."""
        self.pending = False
        if self._sched.future:   # (nothing planned: nothing to move)
            self.reevaluate(now)

    def reevaluate(self, now: float) -> None:
        """Re-evaluate the future after resources were freed (a cancellation, or an early end
        in the daemon), by the mode."""
        if self.mode == "replan":
            self.replanner.replan_future(now)
        elif self.mode == "compress":
            self.moves.compress(now)
        else:
            self.moves.reevaluate_future(now)

    def premature_end(self, res: Reservation, now: float) -> None:
        """``res``'s lease finished at ``now``, before ``res`` ends: end it, and every other
        lease a replay knows ends early at this instant, one by one in Haizea's order,
        re-planning (or compressing) the future reservations after each."""
        sched = self._sched
        batch = [res]
        if sched.settings.predicted_ends:   # a replay: the other leases ending now are known
            for lease in sched.running.values():
                other = lease.reservations[0] if lease.reservations else None
                if (other is None or other is res or lease.state is not S.ACTIVE
                        or other.kind != K.VM or not other.start <= now < other.end):
                    continue
                if sched.work_end(lease, other.start) == now:
                    batch.append(other)
        batch.sort(key=lambda r: (r.end, r.id))
        self.replanning = True
        try:
            for ended in batch:
                sched.work_finished(ended, now)
                self.pending = False
                if self.mode == "compress":
                    self.moves.compress(now)
                else:
                    self.replanner.replan_future(now)
        finally:
            self.replanning = False
