"""Built-in site selection: ``earliest-start``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lease_manager.hookspecs import hookimpl
from lease_manager.policies import SiteSelectionPolicy

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease
    from lease_manager.multisite import SiteView


class EarliestStart(SiteSelectionPolicy):
    """The site where the lease could start earliest (a what-if earliest fit on each site's
    slot table now, which changes nothing); among those, the one with the fewest leases
    waiting (arrivals of the same instant are planned only once all have arrived), then the
    one listed first."""

    name = "earliest-start"

    def select(self, lease: Lease, sites: Sequence[SiteView], length: float, now: float) -> int:
        after = now if lease.start_request is None else max(now, lease.start_request)
        best, best_key = 0, (math.inf, math.inf)
        for i, site in enumerate(sites):
            start = site.table.earliest_fit(lease.vms, length, after)
            key = (math.inf if start is None else start, site.n_waiting)
            if key < best_key:
                best, best_key = i, key
        return best


@hookimpl
def register_policies():
    return [EarliestStart]
