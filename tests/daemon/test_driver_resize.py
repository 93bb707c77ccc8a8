"""The daemon's enactment driver passes a malleable lease's resize to its backend: the new
VMs and nodes as one ``Work``, its new END event on the timeline; a backend that refuses
fails the lease with the reason (on the engine's next step)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from lease_manager.daemon.driver import EnactmentDriver
from lease_manager.enactment.base import EnactmentError
from lease_manager.kernel.events import Timeline
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.resources import parse_site
from lease_manager.kernel.slottable import Reservation


class Backend:
    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.works = []

    def resize(self, work):
        if self.refuse:
            raise EnactmentError("cannot resize running lease 3: no")
        self.works.append(work)


def driver(backend):
    posted = []
    failed = []
    run = SimpleNamespace(nodes=parse_site("4 CPU:2 Memory:1024"), timeline=Timeline(),
                          engine=SimpleNamespace(post=posted.append),
                          site_scheduler=SimpleNamespace(
                              fail=lambda l, now, why: failed.append(why)))
    return EnactmentDriver(run, backend, ("a", "b", "c", "d")), run, posted, failed


def lease_on(nodes: list[int]) -> tuple[Lease, Reservation]:
    lease = Lease(3, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(4, [1.0, 0.0]), 100, 50,
                  extra={"command": "sleep 1"})
    vm_nodes = tuple(n for n in nodes for _ in range(4 // len(nodes)))
    res = Reservation(lease, 10, 90, np.array(nodes), np.ones((len(nodes), 2)),
                      vm_nodes=vm_nodes)
    return lease, res


def test_resize_goes_to_the_backend_with_the_new_nodes():
    backend = Backend()
    d, run, _, failed = driver(backend)
    lease, res = lease_on([0, 2])
    d.resize(lease, res, 60)
    (work,) = backend.works
    assert [(vm.index, vm.node_name) for vm in work.vms] == [(0, "a"), (1, "a"), (2, "c"),
                                                             (3, "c")]
    assert (work.start, work.end, work.command) == (10, 90, "sleep 1")
    assert run.timeline.next_time() == 60 and not failed


def test_a_backend_that_refuses_fails_the_lease_with_its_reason():
    d, _, posted, failed = driver(Backend(refuse=True))
    lease, res = lease_on([1])
    d.resize(lease, res, 60)
    for call in posted:
        call(20.0)
    assert failed == ["resizing its work failed: cannot resize running lease 3: no"]
