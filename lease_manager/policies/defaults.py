"""Built-in admission, pricing and queue policies: ``accept-all``, ``free`` and ``fcfs``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.hookspecs import hookimpl
from lease_manager.policies import AdmissionPolicy, PricingPolicy, QueuePolicy

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease


class AcceptAll(AdmissionPolicy):
    """Accept every lease the site could ever host."""

    name = "accept-all"

    def admit(self, lease: Lease, now: float) -> str | None:
        return None


class Free(PricingPolicy):
    """Every lease costs nothing."""

    name = "free"

    def price(self, lease: Lease, now: float) -> float:
        return 0.0


class FCFS(QueuePolicy):
    """First come, first served: queue every lease at once, in order of arrival."""

    name = "fcfs"


@hookimpl
def register_policies():
    return [AcceptAll, Free, FCFS]
