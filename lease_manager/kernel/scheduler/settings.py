"""The scheduler's settings: one frozen value, made once (from the configuration, by the run)
and never changed; the scheduler and its collaborators only read it.

Written out by hand rather than with ``attrs.frozen``: attrs generates and compiles a class's
methods when the class is made, about 6 M instructions (2 ms) of every run's start-up for this
one. It behaves as the attrs class did (positional and keyword arguments, defaults, repr,
equality and hash over the fields in order, no new attributes, every change refused with
attrs' ``FrozenInstanceError``, pickling and copying); tests/kernel/test_scheduler_settings.py
compares the two. It is not an attrs class: ``attrs.evolve``/``attrs.fields`` do not apply.
"""

from __future__ import annotations

from typing import Any, NoReturn

from lease_manager.kernel.scheduler.suspension import SuspendResume


class _Default:
    def __repr__(self) -> str:
        return "NOTHING"


#: ``suspend_resume`` not given: a model in which suspending and resuming take no time
_NO_MODEL: Any = _Default()


class SchedulerSettings:
    """How one site's scheduler plans (``[scheduling]`` options, as the run reads them)."""

    #: the fields, in order (that of the constructor's arguments, the repr and the comparisons)
    __match_args__ = ("backfilling", "backfilling_reservations", "suspension", "suspend_resume",
                      "shutdown", "shutdown_per_vm", "shutdown_after_early_end",
                      "migration_bandwidth", "threshold_factor", "forced_threshold",
                      "reevaluation", "predicted_ends", "preemption_order", "haizea_planning")
    __slots__ = (*__match_args__, "__weakref__")

    #: ``off``, ``aggressive``, ``intermediate`` or ``conservative`` (queue.py)
    backfilling: str
    #: how many future reservations ``intermediate`` allows
    backfilling_reservations: int
    #: which leases may be suspended: ``all``, ``none`` (suspension.py)
    suspension: str
    #: how long suspending and resuming take (Haizea's model: its subclass)
    suspend_resume: SuspendResume
    #: seconds to shut VMs down (added to non-AR reservations, carved out of ARs)
    shutdown: float
    #: seconds added to the shutdown per VM (Haizea spends its enactment overhead there)
    shutdown_per_vm: float
    #: whether a lease whose work ends early still spends its shutdown time (Haizea's does
    #: not: its premature end removes the shutdown)
    shutdown_after_early_end: bool
    #: MB/s for moving memory images (None: suspended leases resume where they were)
    migration_bandwidth: float | None
    #: a slot ending in a suspension must last (1 + factor) x (suspend + resume time)
    threshold_factor: float
    #: a fixed shortest slot instead (Haizea's force-scheduling-threshold; None: factor)
    forced_threshold: float | None
    #: what happens to future reservations when resources free up early: ``move-earlier``
    #: or ``compress`` (reevaluation.py), Haizea's ``replan`` (replan.py), or ``auto``: the
    #: default of the backfilling mode and placement
    reevaluation: str
    #: whether every lease's END event is known in advance (a replay), so that the leases
    #: ending early at one instant can be taken in Haizea's order (replan.py)
    predicted_ends: bool
    #: the order an advance reservation takes its victims in (preemption.py)
    preemption_order: str
    #: plan best-effort leases as Haizea does (haizea_asap.py; with Haizea's model)
    haizea_planning: bool

    def __init__(self, backfilling: str = "aggressive", backfilling_reservations: int = 1,
                 suspension: str = "all", suspend_resume: SuspendResume = _NO_MODEL,
                 shutdown: float = 0.0, shutdown_per_vm: float = 0.0,
                 shutdown_after_early_end: bool = True,
                 migration_bandwidth: float | None = None, threshold_factor: float = 1.0,
                 forced_threshold: float | None = None, reevaluation: str = "auto",
                 predicted_ends: bool = False,
                 preemption_order: str = "most-preemptable-first",
                 haizea_planning: bool = False) -> None:
        values = (backfilling, backfilling_reservations, suspension,
                  SuspendResume(None, 1.0, 1.0) if suspend_resume is _NO_MODEL
                  else suspend_resume,
                  shutdown, shutdown_per_vm, shutdown_after_early_end, migration_bandwidth,
                  threshold_factor, forced_threshold, reevaluation, predicted_ends,
                  preemption_order, haizea_planning)
        for name, value in zip(FIELDS, values):
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in FIELDS)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in FIELDS)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        from attrs.exceptions import FrozenInstanceError

        raise FrozenInstanceError

    def __delattr__(self, name: str) -> NoReturn:
        from attrs.exceptions import FrozenInstanceError

        raise FrozenInstanceError

    def __reduce__(self) -> tuple[type[SchedulerSettings], tuple[Any, ...]]:
        return (type(self), self._values())


#: the settings' fields, in order
FIELDS = SchedulerSettings.__match_args__
