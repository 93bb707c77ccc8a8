"""The scheduler's collaborators that interrupt or change running leases: suspension and
resumption (:class:`~.suspension.Suspender`, Haizea's :class:`~.haizea_resumption.
HaizeaSuspender`), preemption (:class:`~.preemption.Preemptor`), deadline leases preempting
(:class:`~.deadline_preemption.DeadlinePreemptor`) and resizing malleable leases
(:class:`~.resize.Resizer`), made together for one scheduler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.kernel.scheduler.deadline_preemption import DeadlinePreemptor
from lease_manager.kernel.scheduler.haizea_resumption import suspender_for
from lease_manager.kernel.scheduler.preemption import Preemptor
from lease_manager.kernel.scheduler.resize import Resizer

if TYPE_CHECKING:
    from lease_manager.kernel.scheduler.core import LeaseScheduler
    from lease_manager.kernel.scheduler.suspension import Suspender


def compose(sched: LeaseScheduler) -> tuple[Suspender, Preemptor, DeadlinePreemptor, Resizer]:
    """``sched``'s suspender, preemptor, deadline preemptor and resizer. Called in its
    constructor once its table, settings, policies, enactment, hook relay and plan book are
    set; what they read later (the power cap, the running leases, the placing methods) they
    read through the scheduler, typed by their own protocols."""
    settings, table = sched.settings, sched.table
    suspender = suspender_for(sched)
    preemptor = Preemptor(sched, suspender, policy=sched.preemption, table=table,
                          timeline=sched.timeline, settings=settings, plans=sched.plans,
                          enactment=sched._enactment, emit=sched._emit)
    deadline = DeadlinePreemptor(preemptor, suspender, table, settings)
    resizer = Resizer(table, sched.table_view, sched.host_selection, settings,
                      sched._enactment, sched._emit, sched)
    return suspender, preemptor, deadline, resizer
