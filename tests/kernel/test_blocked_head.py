"""Without backfilling, a head of the queue that did not fit is not asked again until the
table changes or the clock leaves the row it asked about (``queue._start_head``): the same
schedule as asking at every scheduling cycle, with fewer questions."""

from __future__ import annotations

import random

import pytest

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.scheduler.core import LeaseScheduler
from lease_manager.plugins import Plugins
from lease_manager.policies import QueuePolicy

from support import simulate

VM = [1, 0]
SETTINGS = ("scheduling.backfilling=off", "tracefile.vm-resources=CPU:1 Memory:0")


def _be(lease_id: int, vms: int, submit: float, requested: float, actual: float) -> Lease:
    return Lease(lease_id, LeaseType.BEST_EFFORT, submit, VMRequest.uniform(vms, VM),
                 requested, actual)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, float]]:
    """Record every (lease, time) ``_schedule`` is asked about."""
    asked: list[tuple[int, float]] = []
    real = LeaseScheduler._schedule

    def schedule(self, lease, now, allow_future):
        asked.append((lease.id, now))
        return real(self, lease, now, allow_future)

    monkeypatch.setattr(LeaseScheduler, "_schedule", schedule)
    return asked


@pytest.mark.parametrize("placement", ["when-planned", "at-start"])
def test_a_blocked_head_is_asked_again_only_when_the_table_changes(monkeypatch, placement):
    """Two one-VM nodes. #1 (2 VMs, requested 100 s) runs from 0 and ends early, at 60. #2
    (1 VM, 50 s) arrives at 10 and waits; #3 (1 VM, 30 s) arrives at 20 behind it::

        time   0    10   20             60             90        110
        n0     [#1 ...........................)[#2 ........................)
        n1     [#1 ...........................)[#3 ............)
        queue       #2   #2 #3

    #2 is asked at 10 (no room); at 20 (a cycle for #3's arrival) the table is the same and
    the clock in the same row, so #2 is not asked and #3 waits behind it; at 60 #1's early
    end changes the table: #2 starts, then #3.
    """
    asked = _counting(monkeypatch)
    leases = [_be(1, 2, 0.0, 100.0, 60.0), _be(2, 1, 10.0, 50.0, 50.0),
              _be(3, 1, 20.0, 30.0, 30.0)]
    simulate(leases, *SETTINGS, f"scheduling.placement={placement}",
             resources="2 CPU:1 Memory:1024")
    assert [(l.start, l.end) for l in leases] == [(0.0, 60.0), (60.0, 110.0), (60.0, 90.0)]
    assert [a for a in asked if a[0] == 2] == [(2, 10.0), (2, 60.0)]
    assert (3, 20.0) not in asked


class _FewestVMsFirst(QueuePolicy):
    """A queue in which a lease that arrives may go ahead of the head."""

    name = "fewest-vms-first"

    def sort_key(self, lease):
        return (lease.vms.count, lease.submit, lease.id)


class _Plugin:
    @hookimpl
    def register_policies(self):
        return [_FewestVMsFirst]


def _leases(seed: int) -> list[Lease]:
    """150 best-effort leases of 1-4 one-core VMs, arriving in bursts, many ending early."""
    rng = random.Random(seed)
    made = []
    t = 0.0
    for i in range(1, 151):
        t += rng.choice([0, 0, 10, 30, 200, 900])
        requested = rng.choice([60.0, 120.0, 600.0, 1800.0])
        made.append(_be(i, rng.randint(1, 4), t, requested,
                        requested * rng.choice([0.3, 1.0, 1.0])))
    return made


@pytest.mark.parametrize("queue", ["fcfs", "fewest-vms-first"])
@pytest.mark.parametrize("placement", ["when-planned", "at-start"])
def test_the_schedule_is_that_of_asking_at_every_cycle(monkeypatch, placement, queue):
    """On seeded random workloads (6 one-core nodes), the same starts, ends and engine steps
    as a scheduler that asks the head at every cycle, also when an arriving lease can go
    ahead of the head; and some questions were saved."""
    asked = _counting(monkeypatch)
    outcomes = {}
    for remember in (True, False):
        if not remember:
            monkeypatch.setattr(LeaseScheduler, "_start_head",
                                lambda self, lease, now: self._schedule(lease, now, False))
        asked.clear()
        runs = []
        for seed in (1, 2, 3):
            leases = _leases(seed)
            run = simulate(leases, *SETTINGS, f"scheduling.placement={placement}",
                           f"scheduling.policy-queue={queue}", resources="6 CPU:1 Memory:1024",
                           plugins=Plugins(entry_points=False, extra=[_Plugin()]))
            runs.append(([(l.state.value, l.start, l.end) for l in leases], run.engine.steps))
        outcomes[remember] = (runs, len(asked))
    assert outcomes[True][0] == outcomes[False][0]
    assert outcomes[True][1] < outcomes[False][1]
