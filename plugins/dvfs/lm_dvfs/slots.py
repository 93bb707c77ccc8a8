"""Free time slots (t_s, t_e, n) of a site, and the one-slot fit (``[dvfs] slot-fit =
one-slot``).

Garg et al. (section 3.1): each local scheduler supplies its free time slots (t_s, t_e, n) to
the meta-scheduler, "obtained based on the approach used by Singh et al."; "the end time of a
free time slot is either the end time of a job in the waiting queue or the planning horizon"
(infinite). We read the slots as the partition of the site's free capacity into intervals of
constant free count: a slot ends wherever a reservation starts or ends, and the last one never
ends. Under ``one-slot`` a lease must fit inside one slot (n >= its VMs, t_e - t_s >= its
length), not merely in the union of the free capacity as conservative backfilling allows
(``profile``, the default).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from lease_manager import SlotTableView, VMRequest

EPS = 1e-9


def free_slots(table: SlotTableView, vector: np.ndarray, after: float,
               until: float = math.inf) -> list[tuple[float, float, float]]:
    """The free slots (t_s, t_e, n) of ``table`` from ``after`` on (the first starts at
    ``after``), n counted in VMs of shape ``vector``; a slot that reaches ``until`` (or the
    last one) ends at inf."""
    points = [after, *table.change_points(after, until)]
    slots: list[tuple[float, float, float]] = []
    for t in points:
        n = table.room_at(vector, t)
        if slots and slots[-1][2] == n:
            continue   # the free count did not change: the same slot goes on
        if slots:
            slots[-1] = (slots[-1][0], t, slots[-1][2])
        slots.append((t, math.inf, n))
    return slots


def one_slot_start(table: SlotTableView, vms: VMRequest, length: float, after: float,
                   latest: float) -> float | None:
    """The start of the first free slot, from ``after`` on, that holds ``vms`` (one shape) for
    ``length`` and starts by ``latest``; None if there is none. A slot counts CPUs, not nodes:
    its start must also be one at which the site can place the VMs (the same nodes all
    through), else the next slot is tried."""
    if latest < after - EPS:
        return None
    for start, end, n in free_slots(table, vms.vectors[0], after, latest + length):
        if start > latest + EPS:
            return None
        if n >= vms.count and end - start >= length - EPS and table.fits_at(vms, length, start):
            return start
    return None
