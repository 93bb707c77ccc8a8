"""Why the daemon refuses a request, shared by the engine and both front ends (the JSON API
of :mod:`lease_manager.daemon.api` and Haizea's XML-RPC of
:mod:`lease_manager.daemon.haizea_rpc`): the daemon is stopping, an error with an HTTP status,
and the limits on a submission's VMs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lease_manager.daemon.lease_requests import groups_of
from lease_manager.errors import LeaseManagerError

if TYPE_CHECKING:
    from lease_manager.daemon.service import Daemon


class DaemonStopping(LeaseManagerError):
    """The daemon is shutting down and takes no more requests."""


class HTTPError(Exception):
    """A refused request: the HTTP status to answer with, the message, the field at fault."""

    def __init__(self, status: int, message: str, field: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.headers = headers or {}


def check_vm_limits(daemon: Daemon, requests: list[dict[str, Any]]) -> None:
    """Refuse a lease with more VMs than the site's nodes x ``max-vms-per-node``, a
    submission with more than that in all, and VMs smaller than 1/``max-vms-per-node`` of
    a node in every resource (each VM may be a process)."""
    d = daemon
    per_node = d.config.get("daemon", "max-vms-per-node")
    capacity = d.run.nodes.capacity
    limit = capacity.shape[0] * per_node
    smallest = capacity.max(axis=0) / per_node
    names = d.run.nodes.types.names
    total = 0
    for i, request in enumerate(requests):
        where = "" if len(requests) == 1 else f"[{i}]."
        groups = groups_of(request)
        count = sum(g["nodes"] for g in groups)
        if count > limit:
            raise HTTPError(400, f"{where}nodes: {count} VMs is more than a lease may have "
                                 f"on this site ({capacity.shape[0]} nodes x "
                                 f"{per_node} VMs, [daemon] max-vms-per-node)",
                            field=f"{where}nodes")
        for group in groups:
            amounts = [group["resources"].get(n, 0.0) for n in names]
            if not any(a >= m for a, m in zip(amounts, smallest)):
                raise HTTPError(400, f"{where}resources: a VM must need at least "
                                     f"1/{per_node} of a node's amount of some resource "
                                     "(" + ", ".join(f"{n}:{m:g}" for n, m in
                                                     zip(names, smallest)) + "; [daemon] "
                                     "max-vms-per-node)", field=f"{where}resources")
        total += count
    if total > limit:
        raise HTTPError(400, f"the submission asks for {total} VMs in all, more than "
                             f"{limit} ({capacity.shape[0]} nodes x {per_node}, [daemon] "
                             "max-vms-per-node): send it in parts", field="nodes")
