"""Resizing a running malleable lease from now on (see :mod:`lease_manager.kernel.malleable`).

The running VM reservation is truncated at ``now`` and a new one, with the new VMs, starts at
``now`` and lasts for the rest of the lease's requested work at the new rate (plus the
migration pause when VMs move, plus the shutdown). Both changes go through one
:class:`~lease_manager.kernel.scheduler.transaction.PlanChange`, so a resize that does not fit
changes nothing. The lease's current nodes are tried first, so a shrink keeps VMs where they
are and a grow adds nodes to them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import Lease, LeaseState
from lease_manager.kernel.malleable import Allocation, progress
from lease_manager.kernel.mapper import place
from lease_manager.kernel.scheduler.transaction import PlanChange
from lease_manager.kernel.slottable import ReservationKind

if TYPE_CHECKING:
    from lease_manager.kernel.malleable import Malleability
    from lease_manager.kernel.policy_protocols import HostSelectionProtocol
    from lease_manager.kernel.scheduler.seams import Enactment, PowerGate
    from lease_manager.kernel.scheduler.settings import SchedulerSettings
    from lease_manager.kernel.slottable import Reservation, SlotTable
    from lease_manager.kernel.table_view import SlotTableView

S = members(LeaseState)
K = members(ReservationKind)


def _record(m: Malleability, new: Reservation, allocation: Allocation, now: float,
            pause: float, migration_joules: float) -> None:
    """Keep the resize to ``new`` in the lease's record of its allocations."""
    m.rate = allocation.rate
    m.segments[new.id] = (allocation.rate, now + pause)
    m.history.append((now, len(new.nodes), allocation.vms.count, allocation.rate))
    m.resizes += 1
    if pause > 0:
        m.migration_seconds += pause
        m.migration_joules += migration_joules


def _not_resizable(lease: Lease, now: float) -> str:
    """Why ``lease`` cannot be resized now (empty if it can)."""
    if lease.malleable is None:
        return "not a malleable lease"
    if (lease.state is not S.ACTIVE or len(lease.reservations) != 1
            or lease.reservations[0].kind != K.VM or lease.reservations[0].start > now):
        return f"not running in one allocation (state {lease.state.value})"
    if now >= lease.reservations[0].end:
        return "its reservation is over"
    return ""


class CapHolder(Protocol):
    """Who holds the site's power cap (the scheduler: the cap is attached after it is made)."""

    @property
    def power(self) -> PowerGate | None: ...


class Resizer:
    """Resizes one scheduler's running malleable leases (the scheduler's ``resize``)."""

    __slots__ = ("_table", "_view", "_hosts", "_settings", "_enactment", "_emit", "_cap")

    def __init__(self, table: SlotTable, view: SlotTableView, hosts: HostSelectionProtocol,
                 settings: SchedulerSettings, enactment: Enactment,
                 emit: Callable[..., None], cap: CapHolder) -> None:
        self._table, self._view, self._hosts = table, view, hosts
        self._settings, self._enactment, self._emit = settings, enactment, emit
        self._cap = cap

    def resize(self, lease: Lease, now: float, allocation: Allocation, *,
               migration_time: float = 0.0, migration_energy: float = 0.0) -> str:
        """Give running malleable ``lease`` ``allocation`` from ``now`` on; return why not
        (empty if done). ``migration_time``: seconds without progress at the start of the new
        allocation when any VM changes node (or VMs are added or removed);
        ``migration_energy``: joules per node gained or lost (GreenPar's ME(|n' - n|)), drawn
        evenly over the pause on the lease's new nodes."""
        m = lease.malleable
        why = _not_resizable(lease, now)
        if why or m is None:
            return why
        old = lease.reservations[0]
        if migration_energy > 0 and migration_time <= 0:
            raise ValueError("migration energy needs a migration time to be drawn over")
        done = lease.work_done + progress(lease, old, now)
        stretch = m.stretch_at(allocation.rate)
        vms = allocation.vms
        # VMs on the old nodes first: a shrink packs them there, a grow keeps them
        order = np.asarray(self._hosts.order_hosts(lease, now, old.end, self._view),
                           dtype=np.intp)
        order = np.concatenate([old.nodes, order[~np.isin(order, old.nodes)]])
        power = self._cap.power
        change = PlanChange(self._table)
        change.truncate(old, now)
        rest = (lease.requested_duration - done) * stretch + self._settings.shutdown
        placement = place(self._table, vms, now, now + rest, order)
        pause = 0.0
        if (placement is not None and migration_time > 0
                and _moves(placement.vm_nodes, old.vm_nodes)):
            # the migration pause lengthens the reservation: place it again for that long
            placement = place(self._table, vms, now, now + migration_time + rest, order)
            if placement is not None and _moves(placement.vm_nodes, old.vm_nodes):
                pause = migration_time
        if placement is None:
            change.rollback()
            return "the new allocation does not fit from now on"
        new = placement.reservation(lease, now, now + pause + rest)
        migration_joules = (migration_energy * abs(len(new.nodes) - len(old.nodes)) if pause
                            else 0.0)
        if migration_joules > 0:
            new.overhead = (now + pause, migration_joules / pause)
        if power is not None and not power.admits([new]):
            change.rollback()
            return "the power cap has no room for the new allocation"
        change.add(new)
        change.keep()
        if old.end > old.start:
            lease.allocations.append(old)
        old_nodes, old_vms = len(old.nodes), lease.vms.count
        lease.reservations = [new]
        lease.work_done = done
        lease.vms = vms
        lease.stretch = stretch
        _record(m, new, allocation, now, pause, migration_joules)
        if power is not None:
            power.sync(now)
        self._enactment.resize(lease, new, now + pause + (lease.remaining_actual * stretch)
                               + self._settings.shutdown)
        self._emit("lease_resized", lease=lease, old_nodes=old_nodes, old_vms=old_vms, now=now)
        return ""


def _moves(new: tuple[int, ...], old: tuple[int, ...]) -> bool:
    """Does going from VMs on ``old`` nodes to VMs on ``new`` nodes move or add any VM?"""
    return len(new) != len(old) or any(a != b for a, b in zip(new, old))
