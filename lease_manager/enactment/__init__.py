"""Enactment: carrying out leases on real resources (or pretending to, in tests).

A *backend* (kind ``enactment``, selected by ``[daemon] enactment``) starts, suspends, resumes
and stops the work of leases and reports what it really sees. The daemon's
:class:`~lease_manager.daemon.driver.EnactmentDriver` calls it as the schedule unfolds and
reconciles its reports with the plan. See :mod:`lease_manager.enactment.base`.
"""

from typing import TYPE_CHECKING

from lease_manager.enactment.base import EnactmentBackend, EnactmentError

if TYPE_CHECKING:
    from lease_manager.enactment.work import VMWork, Work, WorkStatus

__all__ = ["EnactmentBackend", "EnactmentError", "VMWork", "Work", "WorkStatus"]


def __getattr__(name: str) -> object:
    # the work values load when first asked for (see lease_manager.enactment.base)
    if name in ("VMWork", "Work", "WorkStatus"):
        from lease_manager.enactment import work

        return getattr(work, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
