"""A third-party lease_manager plugin: visit hosts from the highest node index down."""

import numpy as np

import lease_manager
from lease_manager import HostSelectionPolicy, Option


class ReverseHosts(HostSelectionPolicy):
    """Highest node index first (optionally skipping the first ``skip`` nodes of that order)."""

    name = "reverse"

    def order_hosts(self, lease, start, end, table):
        skip = self.ctx.config.get("reverse-hosts", "skip")
        return np.arange(table.capacity.shape[0])[::-1][skip:]


@lease_manager.hookimpl
def register_policies():
    return [ReverseHosts]


@lease_manager.hookimpl
def register_options():
    return [Option("reverse-hosts", "skip", lease_manager.INTEGER, 0, minimum=0,
                   doc="How many of the highest nodes never to use.")]


@lease_manager.hookimpl
def lease_started(ctx, lease, now):
    ctx.metrics.record("reverse_hosts_starts", now, 1)
