"""The ``lease_columns`` hook: a plugin's ``leases.csv`` columns follow the core's own (energy's),
each lease's values computed when it is accounted for; sparse columns are written only if some
lease has a value; a name given twice is an error."""

from __future__ import annotations

import csv

import pytest

from lease_manager import AllocationPolicy
from lease_manager.errors import LeaseManagerError
from lease_manager.hookspecs import hookimpl
from lease_manager.observers.accounting import Accounting
from lease_manager.observers.leases_csv import COLUMNS, LeaseColumns
from lease_manager.plugins import Plugins

from support import HOUR, be, simulate

POWER = ("power.pstates=1.0:100:200", "power.off-watts=5",
         "scheduling.policy-host-selection=no-policy")


class _Columns:
    """Adds ``doubled_vms`` (2 x the lease's VMs) and, sparse, ``odd`` (the id of an odd
    lease, None for an even one; or None for every lease)."""

    def __init__(self, odd: bool = True, name: str = "doubled_vms") -> None:
        self.odd = odd
        self.name = name

    @hookimpl
    def lease_columns(self, ctx):
        odd = self.odd
        return [LeaseColumns((self.name,), lambda lease: (2 * lease.vms.count,)),
                LeaseColumns(("odd",), lambda lease: (lease.id if odd and lease.id % 2
                                                      else None,), sparse=True)]


def _rows(run, tmp_path):
    run.write(tmp_path)
    with (tmp_path / "leases.csv").open() as fh:
        return list(csv.reader(fh))


def test_a_plugins_columns_follow_energys_and_sparse_ones_come_last(tmp_path):
    """4 nodes, a power model: leases 1 (1 VM) and 2 (3 VMs) run from 0:00 to 1:00 at the top
    level (1.0 GHz); a lease's energy is that of the cores it held, 200 W each at that level:
    720 kJ and 2160 kJ. The plugin's
    ``doubled_vms`` comes after energy's four columns; its sparse ``odd`` (a value for lease 1
    only) after every other."""
    plugins = Plugins(entry_points=False, extra=[_Columns()])
    run = simulate([be(1, 1, HOUR, 0), be(2, 3, HOUR, 0)], *POWER, plugins=plugins)
    header, one, two = _rows(run, tmp_path)
    assert header == [*COLUMNS, "level", "ghz", "stretched_requested", "energy_joules",
                      "doubled_vms", "odd"]
    assert one[len(COLUMNS):] == ["0", "1", "3600", "720000", "2", "1"]
    assert two[len(COLUMNS):] == ["0", "1", "3600", "2160000", "6", ""]


def test_a_sparse_column_no_lease_has_a_value_for_is_left_out(tmp_path):
    plugins = Plugins(entry_points=False, extra=[_Columns(odd=False)])
    run = simulate([be(1, 1, HOUR, 0)], plugins=plugins)
    header, one = _rows(run, tmp_path)
    assert header == [*COLUMNS, "doubled_vms"]
    assert one[-1] == "2"


def test_a_column_given_twice_is_an_error():
    plugins = Plugins(entry_points=False, extra=[_Columns(name="energy_joules")])
    with pytest.raises(LeaseManagerError, match="energy_joules twice"):
        simulate([be(1, 1, HOUR, 0)], *POWER, plugins=plugins)


def test_columns_added_in_two_calls_keep_their_order():
    """The accountant joins what it is given after what it had: names and values alike."""
    accounting = Accounting(["CPU"])
    accounting.add_columns([LeaseColumns(("a",), lambda lease: (1,))])
    accounting.add_columns([LeaseColumns(("b", "c"), lambda lease: (2, 3)),
                            LeaseColumns(("d",), lambda lease: (4,))])
    assert accounting.extra_columns == ("a", "b", "c", "d")
    assert accounting.extra_values is not None
    assert accounting.extra_values(be(1, 1, HOUR, 0)) == (1, 2, 3, 4)


class _Rigid(AllocationPolicy):
    """Leaves every lease rigid (an allocation policy that never decides)."""

    name = "test-rigid"


class _RigidPlugin:
    @hookimpl
    def register_policies(self):
        return [_Rigid]


def test_malleable_columns_follow_energys(tmp_path):
    """With a power model and an allocation policy, the malleable columns come after energy's
    (the order of the leases.csv of main f6ac255); a rigid lease has 0 resizes and empty
    histories."""
    plugins = Plugins(entry_points=False, extra=[_RigidPlugin()])
    run = simulate([be(1, 1, HOUR, 0)], *POWER, "malleable.policy-allocation=test-rigid",
                   plugins=plugins)
    header, one = _rows(run, tmp_path)
    assert header == [*COLUMNS, "level", "ghz", "stretched_requested", "energy_joules",
                      "resizes", "allocations", "work_single_server"]
    assert one[len(COLUMNS) + 4:] == ["0", "", ""]
