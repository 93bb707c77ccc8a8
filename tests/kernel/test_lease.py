"""The lease model: VM requests and the explicit state machine."""

from __future__ import annotations

import numpy as np
import pytest

from lease_manager.errors import IllegalTransition
from lease_manager.kernel.lease import (
    TERMINAL_STATES,
    TRANSITIONS,
    Lease,
    LeaseState,
    LeaseType,
    VMRequest,
)

S = LeaseState


def lease() -> Lease:
    return Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(2, [1, 512]), 100, 60)


def test_best_effort_life():
    l = lease()
    for state in (S.QUEUED, S.SCHEDULED, S.ACTIVE, S.DONE):
        l.transition(state)
    assert l.state is S.DONE and l.state.terminal


@pytest.mark.parametrize("path, bad", [
    ((), S.ACTIVE),                       # NEW cannot start without a plan
    ((S.QUEUED,), S.DONE),                # nor end without running
    ((S.REJECTED,), S.QUEUED),            # terminal states are final
    ((S.QUEUED, S.SCHEDULED, S.ACTIVE, S.DONE), S.CANCELLED),
    ((S.HELD,), S.SCHEDULED),             # a held lease goes through the queue
])
def test_illegal_transitions_raise(path, bad):
    l = lease()
    for state in path:
        l.transition(state)
    with pytest.raises(IllegalTransition, match=f"-> {bad.value}"):
        l.transition(bad)


def test_any_live_state_can_be_cancelled_and_terminal_states_go_nowhere():
    for state, targets in TRANSITIONS.items():
        if state in TERMINAL_STATES:
            assert not targets
        else:
            assert S.CANCELLED in targets


def test_vm_request_groups():
    r = VMRequest((2, 1), np.array([[1.0, 512], [4, 2048]]))
    assert r.count == 3
    assert r.total.tolist() == [6, 3072]
    assert r.per_vm().tolist() == [[1, 512], [1, 512], [4, 2048]]
    with pytest.raises(ValueError):
        VMRequest((0,), np.array([[1.0, 1]]))


def test_run_duration_is_capped_by_the_request():
    l = Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(1, [1, 0]), 100, 250)
    assert l.run_duration == 100
