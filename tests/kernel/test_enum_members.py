"""members(): an enum's members read off a plain class, as the hot paths read them."""

import pytest

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.events import EventKind
from lease_manager.kernel.lease import LeaseState, LeaseType
from lease_manager.kernel.reservation import ReservationKind


@pytest.mark.parametrize("cls", [LeaseState, LeaseType, ReservationKind, EventKind])
def test_every_member_reads_as_itself(cls):
    fast = members(cls)
    names = [name for name in vars(fast) if not name.startswith("__")]
    assert sorted(names) == sorted(cls.__members__)
    for name, member in cls.__members__.items():
        assert getattr(fast, name) is member


def test_a_name_that_is_no_member_is_refused():
    with pytest.raises(AttributeError):
        members(LeaseState).RUNNING   # noqa: B018 (the read is the test)


def test_the_class_read_is_not_the_enums_metaclass():
    """The point of it: no ``EnumType.__getattr__`` on the way to a member."""
    assert type(members(LeaseState)) is type
