"""Enactment: carrying out leases on real resources (or pretending to, in tests).

A *backend* (kind ``enactment``, selected by ``[daemon] enactment``) starts, suspends, resumes
and stops the work of leases and reports what it really sees. The daemon's
:class:`~lease_manager.daemon.driver.EnactmentDriver` calls it as the schedule unfolds and
reconciles its reports with the plan. See :mod:`lease_manager.enactment.base`.
"""

from lease_manager.enactment.base import EnactmentBackend, EnactmentError, VMWork, Work, WorkStatus

__all__ = ["EnactmentBackend", "EnactmentError", "VMWork", "Work", "WorkStatus"]
