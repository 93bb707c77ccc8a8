"""The lease scheduler: admission, the wait queue, backfilling, preemption and every plan
(see :mod:`lease_manager.kernel.scheduler.core`)."""

from lease_manager.kernel.scheduler.core import Enactment, LeaseScheduler, max_future_reservations
from lease_manager.kernel.scheduler.settings import SchedulerSettings
from lease_manager.kernel.scheduler.suspension import SuspendResume
from lease_manager.kernel.scheduler.transaction import PlanChange

__all__ = ["Enactment", "LeaseScheduler", "PlanChange", "SchedulerSettings", "SuspendResume",
           "max_future_reservations"]
