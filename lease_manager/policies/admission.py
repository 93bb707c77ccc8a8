"""Admission policies ``no-ARs`` and ``utilization-threshold``.

``[scheduling] policy-admission`` selects one; ``accept-all`` (the default) is in
:mod:`lease_manager.policies.defaults`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lease_manager.config.schema import FLOAT, Option
from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import LeaseType
from lease_manager.policies import AdmissionPolicy
from lease_manager.policies.utilization import cpu_index, projected_utilization

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease


class NoARs(AdmissionPolicy):
    """Reject advance reservations; accept every other lease (Haizea's ``no-ARs``)."""

    name = "no-ARs"

    def admit(self, lease: Lease, now: float) -> str | None:
        if lease.type is LeaseType.ADVANCE_RESERVATION:
            return "advance reservations are not accepted"
        return None


class UtilizationThreshold(AdmissionPolicy):
    """Reject a lease if the site's projected CPU utilisation over the lease's interval, with
    the lease, would exceed ``[admission] threshold``.

    The interval is ``[start, start + requested duration)`` from the requested start (advance
    reservations, the earliest start of deadline leases) or from now (best-effort and
    immediate leases). The projection is the CPU reserved over the interval (from the slot
    table) plus the lease's own CPU, over the site's CPU times the interval's length; for an
    unlimited lease, what is reserved for ever plus the lease's CPU, over the site's CPU.
    """

    name = "utilization-threshold"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.threshold = float(ctx.config.get("admission", "threshold"))
        self._cpu = cpu_index(ctx.site.types)

    def admit(self, lease: Lease, now: float) -> str | None:
        p = projected_utilization(self.ctx.table, lease, now, self._cpu)
        if p.utilization > self.threshold:
            return (f"projected utilization {p.utilization:.2%} over [{p.start:g}, {p.end:g}) "
                    f"would exceed the threshold {self.threshold:.2%}")
        return None


@hookimpl
def register_options():
    return [
        Option("admission", "threshold", FLOAT, 0.9, minimum=0.0, maximum=1e6, doc="""
            `utilization-threshold` admission: the highest projected CPU utilisation (a
            fraction of the site's CPU, over the lease's interval, the lease included) at which
            a lease is still accepted."""),
    ]


@hookimpl
def register_policies():
    return [NoARs, UtilizationThreshold]
