"""The scheduler's settings: one frozen value, made once (from the configuration, by the run)
and never changed; the scheduler and its collaborators only read it."""

from __future__ import annotations

import attrs

from lease_manager.kernel.scheduler.suspension import SuspendResume


def _no_suspend_resume_model() -> SuspendResume:
    return SuspendResume(None, 1.0, 1.0)


@attrs.frozen
class SchedulerSettings:
    """How one site's scheduler plans (``[scheduling]`` options, as the run reads them)."""

    #: ``off``, ``aggressive``, ``intermediate`` or ``conservative`` (queue.py)
    backfilling: str = "aggressive"
    #: how many future reservations ``intermediate`` allows
    backfilling_reservations: int = 1
    #: which leases may be suspended: ``all``, ``none`` (suspension.py)
    suspension: str = "all"
    #: how long suspending and resuming take (Haizea's model: its subclass)
    suspend_resume: SuspendResume = attrs.field(factory=_no_suspend_resume_model)
    #: seconds to shut VMs down (added to non-AR reservations, carved out of ARs)
    shutdown: float = 0.0
    #: seconds added to the shutdown per VM (Haizea spends its enactment overhead there)
    shutdown_per_vm: float = 0.0
    #: whether a lease whose work ends early still spends its shutdown time (Haizea's does
    #: not: its premature end removes the shutdown)
    shutdown_after_early_end: bool = True
    #: MB/s for moving memory images (None: suspended leases resume where they were)
    migration_bandwidth: float | None = None
    #: a slot ending in a suspension must last (1 + factor) x (suspend + resume time)
    threshold_factor: float = 1.0
    #: a fixed shortest slot instead (Haizea's force-scheduling-threshold; None: factor)
    forced_threshold: float | None = None
    #: what happens to future reservations when resources free up early: ``move-earlier``
    #: or ``compress`` (reevaluation.py), Haizea's ``replan`` (replan.py), or ``auto``: the
    #: default of the backfilling mode and placement
    reevaluation: str = "auto"
    #: whether every lease's END event is known in advance (a replay), so that the leases
    #: ending early at one instant can be taken in Haizea's order (replan.py)
    predicted_ends: bool = False
    #: the order an advance reservation takes its victims in (preemption.py)
    preemption_order: str = "most-preemptable-first"
    #: plan best-effort leases as Haizea does (haizea_asap.py; with Haizea's model)
    haizea_planning: bool = False
