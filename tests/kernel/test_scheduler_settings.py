"""The scheduler's settings, written out by hand (attrs made it at start-up, ~2 ms), behave as
the ``attrs.frozen`` class they were: the reference below is that class, as it was."""

from __future__ import annotations

import copy
import pickle
import weakref
from typing import Any

import attrs
import pytest

from lease_manager.kernel.scheduler import SchedulerSettings, SuspendResume
from lease_manager.kernel.scheduler.settings import FIELDS


def _no_suspend_resume_model() -> SuspendResume:
    return SuspendResume(None, 1.0, 1.0)


@attrs.frozen
class AttrsSettings:
    """SchedulerSettings as an attrs class (its definition before it was written out)."""

    backfilling: str = "aggressive"
    backfilling_reservations: int = 1
    suspension: str = "all"
    suspend_resume: SuspendResume = attrs.field(factory=_no_suspend_resume_model)
    shutdown: float = 0.0
    shutdown_per_vm: float = 0.0
    shutdown_after_early_end: bool = True
    migration_bandwidth: float | None = None
    threshold_factor: float = 1.0
    forced_threshold: float | None = None
    reevaluation: str = "auto"
    predicted_ends: bool = False
    preemption_order: str = "most-preemptable-first"
    haizea_planning: bool = False


MODEL = SuspendResume(2, 10.0, 20.0, "global", 1.5, suspend_override=3.0)
#: a value for each field other than its default, in order
OTHERS: tuple[Any, ...] = ("conservative", 4, "none", MODEL, 30.0, 2.5, False, 100.0, 2.0,
                           60.0, "replan", True, "least-preemptable-first", True)


def _model(model: SuspendResume) -> dict:
    return vars(model)


def test_the_fields_are_the_attrs_class_fields_in_order() -> None:
    assert FIELDS == tuple(a.name for a in attrs.fields(AttrsSettings))
    assert SchedulerSettings.__match_args__ == AttrsSettings.__match_args__


def test_the_defaults_are_the_attrs_class_defaults() -> None:
    ours, theirs = SchedulerSettings(), AttrsSettings()
    for name in FIELDS:
        if name == "suspend_resume":
            assert _model(ours.suspend_resume) == _model(theirs.suspend_resume)
        else:
            assert getattr(ours, name) == getattr(theirs, name), name
    # each value gets a model of its own (attrs' factory)
    assert SchedulerSettings().suspend_resume is not SchedulerSettings().suspend_resume
    # an explicit None is kept, as attrs kept it
    assert SchedulerSettings(suspend_resume=None).suspend_resume is None  # type: ignore[arg-type]


def test_positional_and_keyword_arguments_and_repr() -> None:
    by_position = SchedulerSettings(*OTHERS)
    by_keyword = SchedulerSettings(**dict[str, Any](zip(FIELDS, OTHERS)))
    theirs = AttrsSettings(*OTHERS)
    assert by_position == by_keyword
    assert [getattr(by_position, n) for n in FIELDS] == list(OTHERS)
    assert repr(by_position) == repr(theirs).replace("AttrsSettings", "SchedulerSettings")
    assert repr(SchedulerSettings(suspend_resume=MODEL)) == repr(
        AttrsSettings(suspend_resume=MODEL)).replace("AttrsSettings", "SchedulerSettings")
    with pytest.raises(TypeError):
        SchedulerSettings(*OTHERS, "one too many")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        SchedulerSettings(backfiling="off")  # type: ignore[call-arg]


def test_equality_and_hash_as_attrs() -> None:
    a, b = SchedulerSettings(*OTHERS), SchedulerSettings(*OTHERS)
    assert a == b and not a != b and hash(a) == hash(b)
    for k, name in enumerate(FIELDS):
        changed: list[Any] = list(OTHERS)
        changed[k] = SuspendResume(2, 10.0, 20.0) if name == "suspend_resume" else None
        c = SchedulerSettings(*changed)
        ra, rc = AttrsSettings(*OTHERS), AttrsSettings(*changed)
        assert (a == c, a != c) == (ra == rc, ra != rc) == (False, True), name
    assert (a == AttrsSettings(*OTHERS)) is False
    assert a.__eq__(object()) is NotImplemented
    assert len({a, b, SchedulerSettings()}) == 2


def test_it_is_frozen_and_slotted() -> None:
    settings = SchedulerSettings()
    for action in (lambda: setattr(settings, "backfilling", "off"),
                   lambda: setattr(settings, "new", 1),
                   lambda: delattr(settings, "shutdown")):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            action()
    assert settings.backfilling == "aggressive" and settings.shutdown == 0.0
    assert not hasattr(settings, "__dict__")
    assert weakref.ref(settings)() is settings


def test_pickle_and_copy_as_attrs() -> None:
    ours, theirs = SchedulerSettings(*OTHERS), AttrsSettings(*OTHERS)
    back = pickle.loads(pickle.dumps(ours))
    assert [getattr(back, n) for n in FIELDS if n != "suspend_resume"] == \
        [getattr(ours, n) for n in FIELDS if n != "suspend_resume"]
    assert _model(back.suspend_resume) == _model(MODEL)
    assert copy.copy(ours) == ours and (copy.copy(theirs) == theirs)
    # the model compares by identity: a deep copy is a new model, with attrs as here
    assert (copy.deepcopy(ours) == ours) == (copy.deepcopy(theirs) == theirs) == False  # noqa: E712
