"""Reservations: resources held on some nodes over an interval, for one of a few purposes."""

from __future__ import annotations

import enum
import itertools
from typing import TYPE_CHECKING

import attrs
import numpy as np

if TYPE_CHECKING:
    from lease_manager.kernel.lease import Lease

_ids = itertools.count(1)


class ReservationKind(enum.StrEnum):
    """What a reservation holds resources for. Values are the strings written to outputs, and
    compare equal to them (``res.kind == "vm"``)."""

    VM = "vm"                #: the lease's VMs run
    SUSPEND = "suspend"      #: the VMs' memory is written out
    RESUME = "resume"        #: the VMs' memory is read back
    MIGRATE = "migrate"      #: memory images move to other nodes before a resumption
    IMAGE = "image"          #: memory images of a suspended lease (a record, not in the table)
    OFF = "off"              #: the node is off (its whole capacity is held)
    SWITCHING_ON = "switching-on"    #: the node boots
    SWITCHING_OFF = "switching-off"  #: the node shuts down
    #: the site's power held for a node that is (or will be) on, under a power cap (no cores)
    POWER_HOLD = "power-hold"
    #: a disk image sent from the image repository to the nodes (no cores, no memory)
    TRANSFER = "transfer"


#: the kinds that hold a whole node for its power state, not for a lease
POWER_KINDS = frozenset({ReservationKind.OFF, ReservationKind.SWITCHING_ON,
                         ReservationKind.SWITCHING_OFF})


@attrs.define(eq=False, repr=False, slots=True)
class Reservation:
    """Resources held on some nodes over ``[start, end)``.

    ``nodes`` are distinct node indices and ``amounts[i]`` is what the reservation holds on
    ``nodes[i]`` (all of a lease's VMs on that node together). ``site_amount`` is what it draws
    from the site-wide resources, if the site has any. ``kind`` tells what the resources are held
    for (:class:`ReservationKind`).
    """

    lease: Lease | None
    start: float
    end: float
    nodes: np.ndarray
    amounts: np.ndarray
    site_amount: np.ndarray | None = None
    kind: ReservationKind = ReservationKind.VM
    #: which node each of the lease's VMs is on, when the reservation holds VMs
    vm_nodes: tuple[int, ...] = ()
    #: ``vector.tobytes()`` when every VM of the reservation has that one shape
    vm_shape: bytes | None = None
    #: VMs not placed on nodes yet: a future reservation of a table that counts VMs
    #: (``placement = at-start``; no nodes until it starts)
    pending: int = 0
    #: ``(until, watts)``: power drawn on top of the cores' from the start until ``until``,
    #: spread evenly over the nodes (a malleable lease's migration)
    overhead: tuple[float, float] | None = None
    id: int = attrs.field(factory=_ids.__next__)   # (a C call: one reservation per lease)

    def amount_on(self, node: int) -> np.ndarray:
        """What the reservation holds on ``node`` (zeros if it is not there)."""
        hit = np.flatnonzero(self.nodes == node)
        if hit.size == 0:
            return np.zeros(self.amounts.shape[1])
        return self.amounts[hit[0]]

    @property
    def duration(self) -> float:
        return self.end - self.start

    def __repr__(self) -> str:
        lease = getattr(self.lease, "id", None)
        return (f"<Reservation {self.id} {self.kind} lease={lease} [{self.start}, {self.end}) "
                f"nodes={self.nodes.tolist()}>")


def bad_interval(res: Reservation, horizon: float) -> str:
    """What is wrong with ``res``'s interval for a table whose horizon is ``horizon``, naming
    its lease (a plan reaching the table so is the scheduler's bug: it must reject first)."""
    whose = f"lease {res.lease.id}: " if res.lease is not None else ""
    if not res.end > res.start:
        return f"{whose}empty or reversed interval [{res.start}, {res.end})"
    return f"{whose}reservation starts at {res.start}, before the horizon {horizon}"
