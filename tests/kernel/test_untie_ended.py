"""Leases that ended and that nothing keeps are freed when their step is over, without the
garbage collector (a lease and its reservations refer to each other); a lease, or a
reservation of one, that anything else keeps is left as it was."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from lease_manager.config.schema import load_config
from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.plugins import Plugins
from lease_manager.run import Run

from support import HOUR, be


def _run(plugins: Plugins, leases: Iterator[Lease], *settings: str) -> Run:
    config = load_config(None, plugins.schema, ["simulation.resources=4 CPU:1 Memory:1024",
                                                *settings])
    run = Run(config, plugins, leases=leases)
    run.run()
    return run


@pytest.fixture
def no_collector():
    """Only reference counting frees objects while the test runs."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _stream(refs: list, count: int) -> Iterator[Lease]:
    """``count`` leases of 1-3 VMs, some ending early, made as the replay asks for them (the
    run keeps none); ``refs`` gets a weak reference to each."""
    for i in range(1, count + 1):
        lease = be(i, 1 + i % 3, HOUR, 60.0 * i, actual=HOUR / 2 if i % 4 == 0 else None)
        refs.append(weakref.ref(lease))
        yield lease


@pytest.mark.parametrize("placement", ["when-planned", "at-start"])
@pytest.mark.parametrize("mode", ["off", "aggressive"])
def test_ended_leases_nothing_keeps_are_freed_without_the_collector(no_collector, mode,
                                                                    placement):
    """The ends of 40 leases: each is freed once its step is over. (A lease that a
    re-evaluation moved earlier by more than its length is kept by the stale event of its
    old reservation until that event is due, so it is left to the collector: conservative
    backfilling moves many.)"""
    refs: list = []
    alive_at_cycle: list[int] = []

    class Count:
        @hookimpl
        def scheduling_cycle_end(self, ctx, now):
            alive_at_cycle.append(sum(ref() is not None and ref().state is LeaseState.DONE
                                      for ref in refs))

    run = _run(Plugins(entry_points=False, extra=[Count()]), _stream(refs, 40),
               f"scheduling.backfilling={mode}", f"scheduling.placement={placement}")
    assert run.summary["leases_completed"] == 40
    # at a cycle, the leases ended at that instant are still there (hooks may look at
    # them), none from an earlier step
    assert max(alive_at_cycle) <= 4
    del run
    assert all(ref() is None for ref in refs)


def test_a_lease_a_plugin_keeps_keeps_its_reservations_tied(no_collector):
    kept: list[Lease] = []

    class Keeper:
        @hookimpl
        def lease_ended(self, ctx, lease, now):
            if lease.id % 2:
                kept.append(lease)

    refs: list = []
    _run(Plugins(entry_points=False, extra=[Keeper()]), _stream(refs, 20))
    assert len(kept) == 10
    for lease in kept:
        assert lease.allocations and all(res.lease is lease for res in lease.allocations)
    assert [ref() is not None for ref in refs] == [i % 2 == 1 for i in range(1, 21)]


def test_a_reservation_a_plugin_keeps_still_names_its_lease(no_collector):
    """A plugin that keeps a reservation (not its lease) still reads its lease from it."""
    kept = []

    class Keeper:
        @hookimpl
        def lease_ended(self, ctx, lease, now):
            kept.append((lease.id, lease.allocations[-1]))

    refs: list = []
    _run(Plugins(entry_points=False, extra=[Keeper()]), _stream(refs, 12))
    assert [(i, res.lease.id, res.lease.state) for i, res in kept] == [
        (i, i, LeaseState.DONE) for i, _ in kept]
    assert all(ref() is not None for ref in refs)


def test_leases_the_caller_gave_as_a_list_keep_their_reservations_tied(no_collector):
    leases = [be(i, 2, HOUR, 0) for i in range(1, 6)]
    _run(Plugins(entry_points=False), iter(leases))
    assert all(res.lease is lease for lease in leases for res in lease.allocations)


def test_a_list_of_allocations_a_plugin_keeps_still_names_its_lease(no_collector):
    kept = []

    class Keeper:
        @hookimpl
        def lease_ended(self, ctx, lease, now):
            kept.append((lease.id, lease.allocations))

    _run(Plugins(entry_points=False, extra=[Keeper()]), _stream([], 12))
    assert len(kept) == 12
    assert [(i, [res.lease.id for res in allocations]) for i, allocations in kept] == [
        (i, [i]) for i, _ in kept]


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_a_lease_of_several_allocations_is_untied_only_if_none_is_kept(no_collector, parts):
    """``untie_ended`` itself, on a lease with ``parts`` allocations (a suspended and resumed
    lease has several): freed at once when nothing else refers to any of them; left whole
    when one allocation is kept elsewhere."""
    import types

    import numpy as np

    from lease_manager.kernel.reservation import Reservation
    from lease_manager.kernel.scheduler.lifecycle import Lifecycle

    def ended_lease() -> Lease:
        lease = be(1, 1, HOUR, 0)
        lease.allocations = [Reservation(lease, k * 10.0, k * 10.0 + 5, np.array([0]),
                                         np.array([[1.0, 0.0]])) for k in range(parts)]
        return lease

    life = Lifecycle(types.SimpleNamespace())
    life.ended.append(ended_lease())
    ref = weakref.ref(life.ended[0])
    life.untie_ended()
    assert ref() is None and life.ended == []

    life.ended.append(ended_lease())
    ref = weakref.ref(life.ended[0])
    kept = life.ended[0].allocations[-1]
    life.untie_ended()
    assert ref() is not None and kept.lease is ref()
    assert all(res.lease is ref() for res in ref().allocations)


def test_every_site_of_a_multi_site_run_lets_its_ended_leases_go(no_collector):
    """Two sites (``[site:NAME]``): the engine asks each site's scheduler, and an ended lease
    nothing keeps is freed whichever site ran it."""
    refs: list = []
    plugins = Plugins(entry_points=False)
    config = load_config(None, plugins.schema, [
        "site:a.resources=2 CPU:1 Memory:1024", "site:a.pstates=1.0:100:200",
        "site:b.resources=2 CPU:1 Memory:1024", "site:b.pstates=1.0:50:150"])
    run = Run(config, plugins, leases=_stream(refs, 16))
    run.run()
    # (leases of 3 VMs fit neither 2-node site: rejected)
    assert (run.summary["leases_completed"], run.summary["leases_rejected"]) == (11, 5)
    assert all(not site.scheduler.lifecycle.ended for site in run.sites)
    del run
    assert all(ref() is None for ref in refs)


def test_the_ended_leases_waiting_are_bounded_within_a_step(monkeypatch):
    """Ten leases end at one instant; with room for three waiting, the scheduler lets them go
    as they pile up, before the step is over."""
    from lease_manager.kernel.scheduler import lifecycle

    monkeypatch.setattr(lifecycle, "MAX_ENDED", 3)
    waiting: list[int] = []
    untie = lifecycle.Lifecycle.untie_ended

    def counted(self):
        waiting.append(len(self.ended))
        untie(self)

    monkeypatch.setattr(lifecycle.Lifecycle, "untie_ended", counted)
    _run(Plugins(entry_points=False), (be(i, 1, HOUR, 0) for i in range(1, 11)),
         "simulation.resources=10 CPU:1 Memory:1024")
    assert max(waiting) == 4 and sum(waiting) == 10
