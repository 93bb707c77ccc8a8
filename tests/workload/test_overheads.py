"""Haizea's trace overheads (workload/overheads.py): ``runtime-slowdown-overhead`` as
lease_manager applies it (the lease runs slower: requested and actual durations grow) and as
Haizea does (``runtime-slowdown-as = haizea``: the requested duration only, rounded up from the
floating-point product, so 3,600 s at 10 % is 3,961 s), and ``bootshutdown-overhead``."""

from __future__ import annotations

import pytest

from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.workload.overheads import with_overheads

from support import simulate


def be(lease_id: int, requested: float, actual: float) -> Lease:
    return Lease(lease_id, LeaseType.BEST_EFFORT, 0.0, VMRequest.uniform(1, [1, 0]), requested,
                 actual)


@pytest.mark.parametrize("how, boot, requested, actual", [
    ("lease-manager", 0, 3960, 3300),       # both 10 % longer: 3,600 x 1.1, 3,000 x 1.1
    ("haizea", 0, 3961, 3000),              # 3,600 x 1.1 = 3,960.0000000000005 -> 3,961
    ("lease-manager", 20, 3980, 3320),
    ("haizea", 20, 3981, 3020),
])
def test_the_two_ways_of_slowing_down(how, boot, requested, actual):
    lease, = with_overheads([be(1, 3600, 3000)], add="all", slowdown_percent=10, boot=boot,
                            memory=-1, memory_index=None, slowdown_as=how)
    assert (lease.requested_duration, lease.actual_duration) == (requested, actual)


def test_a_haizea_slowdown_ends_the_lease_after_its_real_run_time():
    """One node, two leases of requested 3,600 s, really 3,000 s, at 10 %::

        haizea:         #1 0-3000 | #2 3000-6000      (requested 3,961 s each, reserved so)
        lease-manager:  #1 0-3300 | #2 3300-6600
    """
    for how, ends in (("haizea", [3000, 6000]), ("lease-manager", [3300, 6600])):
        leases = [be(1, 3600, 3000), be(2, 3600, 3000)]
        overheads = list(with_overheads(leases, add="all", slowdown_percent=10, boot=0,
                                        memory=-1, memory_index=None, slowdown_as=how))
        simulate(overheads, resources="1 CPU:1 Memory:1024")
        assert [x.end for x in overheads] == ends, how
