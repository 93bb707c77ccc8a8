"""A lease planned to run now, alone on its nodes, starts through ``_start_at_once`` instead
of the general commit (``_commit``, ``_adopt``, ``segment_started``): both must call every
hook in the same order with the same lease state, and give the same schedule in as many
engine steps (no event more or less)."""

from __future__ import annotations

import random

import pytest

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.plugins import Plugins

from support import simulate


class _Hooks:
    """Records every lease hook with what the lease and the scheduler look like then."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def _record(self, hook, ctx, lease, now, *more):
        self.calls.append((hook, lease.id, lease.state.value, now, lease.start,
                           lease.promised_start, lease.preemptions,
                           [(r.kind.value, r.start, r.end, r.nodes.tolist())
                            for r in lease.reservations],
                           sorted(l.id for l in ctx.scheduler.planned()),
                           sorted(l.id for l in ctx.scheduler.running()), *more))

    @hookimpl
    def lease_scheduled(self, ctx, lease, now):
        self._record("scheduled", ctx, lease, now)

    @hookimpl
    def lease_started(self, ctx, lease, now):
        self._record("started", ctx, lease, now)

    @hookimpl
    def lease_state_changed(self, ctx, lease, old, now):
        self._record("state", ctx, lease, now, old.value)

    @hookimpl
    def lease_preempted(self, ctx, lease, now):
        self._record("preempted", ctx, lease, now)

    @hookimpl
    def lease_ended(self, ctx, lease, now):
        self._record("ended", ctx, lease, now)


def _leases(seed: int) -> list[Lease]:
    """120 best-effort leases of 1-4 one-core VMs (some ending early), with a few advance
    reservations that queued leases may run in front of and suspend before."""
    rng = random.Random(seed)
    made: list[Lease] = []
    t = 0.0
    for i in range(1, 121):
        t += rng.choice([0, 0, 30, 200, 900])
        requested = rng.choice([120.0, 600.0, 1800.0])
        if rng.random() < 0.06:
            made.append(Lease(i, LeaseType.ADVANCE_RESERVATION, t,
                              VMRequest.uniform(rng.randint(1, 3), [1, 0]), requested,
                              requested, start_request=t + rng.choice([300.0, 1200.0])))
            continue
        made.append(Lease(i, LeaseType.BEST_EFFORT, t, VMRequest.uniform(rng.randint(1, 4),
                                                                         [1, 0]),
                          requested, requested * rng.choice([0.4, 1.0])))
    return made


@pytest.mark.parametrize("placement", ["when-planned", "at-start"])
@pytest.mark.parametrize("mode", ["off", "aggressive"])
def test_starting_at_once_calls_the_hooks_of_the_general_commit(monkeypatch, placement,
                                                                 mode):
    from lease_manager.kernel.scheduler import placing, queue

    outcomes = {}
    for at_once in (True, False):
        monkeypatch.setattr(queue, "START_AT_ONCE", at_once)
        calls_at_once = []
        real = placing.Placer.start_at_once

        def counting(self, lease, plan, now, real=real, calls=calls_at_once):
            calls.append(lease.id)
            real(self, lease, plan, now)

        monkeypatch.setattr(placing.Placer, "start_at_once", counting)
        runs = []
        for seed in (1, 2, 3):
            hooks = _Hooks()
            leases = _leases(seed)
            settings = [f"scheduling.backfilling={mode}", "tracefile.vm-resources=CPU:1 Memory:0"]
            if placement == "at-start":   # (advance reservations need when-planned)
                leases = [l for l in leases if l.type is LeaseType.BEST_EFFORT]
                settings.append("scheduling.placement=at-start")
            run = simulate(leases, *settings, resources="6 CPU:1 Memory:1024",
                           plugins=Plugins(entry_points=False, extra=[hooks]))
            runs.append((hooks.calls, [(l.state.value, l.start, l.end, l.preemptions)
                                       for l in leases], run.engine.steps))
        outcomes[at_once] = runs
        assert bool(calls_at_once) == at_once
        if at_once:
            assert len(calls_at_once) > 150
    assert outcomes[True] == outcomes[False]
    if placement == "when-planned":   # (some lease ran in front of an AR and yielded)
        assert any(call[0] == "preempted" for calls, _, _ in outcomes[True] for call in calls)
