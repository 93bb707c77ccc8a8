"""What policies and plugins see of a slot table: its queries, not its changes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from lease_manager.kernel.reservation import ReservationKind
    from lease_manager.kernel.table_protocol import NodePlan, Table


class SlotTableView:
    """The slot table's queries, without its changes (``add``, ``remove``, ``truncate``...).

    Each query is the table's own bound method, so a view costs nothing per call. The queries
    of a node's future plan (:class:`~lease_manager.kernel.table_protocol.NodePlan`)
    are answered by a table that plans on nodes (``placement = when-planned``); on a table
    that counts VMs they raise :class:`NotImplementedError`, which the run reports in one line
    (a policy written for planned nodes, asked to run with ``placement = at-start``).
    """

    QUERIES = ("free_at", "site_free_at", "site_capacity_at", "min_free", "vm_fits",
               "lease_counts_at", "capacity_lasts_until", "reservations_at",
               "reservations_between", "next_start_on", "change_points", "earliest_fit",
               "earliest_fit_on", "earlier_start", "iter_fit_starts", "may_fit_before",
               "fits_at", "room_at", "site_room", "watch")

    def __init__(self, table: Table) -> None:
        self._table = table
        self.nodes = table.nodes
        self.capacity = table.capacity
        #: whether the table counts VMs (``placement = at-start``): future reservations have
        #: no nodes, and per-node answers are for now only
        self.counted = table.counted
        self.free_at = table.free_at
        self.site_free_at = table.site_free_at
        self.site_capacity_at = table.site_capacity_at
        self.min_free = table.min_free
        self.vm_fits = table.vm_fits
        self.lease_counts_at = table.lease_counts_at
        self.capacity_lasts_until = table.capacity_lasts_until
        self.reservations_at = table.reservations_at
        self.reservations_between = table.reservations_between
        self.earliest_fit = table.earliest_fit
        self.earlier_start = table.earlier_start
        self.iter_fit_starts = table.iter_fit_starts
        self.may_fit_before = table.may_fit_before
        self.fits_at = table.fits_at
        self.room_at = table.room_at
        self.watch = table.watch
        plan = table.planned()   # (not ``or``: an empty table is falsy)
        planned: NodePlan = _NoPlan(table) if plan is None else plan
        self.next_start_on = planned.next_start_on
        self.change_points = planned.change_points
        self.earliest_fit_on = planned.earliest_fit_on
        self.site_room = planned.site_room

    @property
    def version(self) -> int:
        """Changes whenever the table changes (a cheap test that nothing moved)."""
        return self._table.version

    @property
    def site_resources(self) -> tuple[str, ...]:
        return self._table.site_resources

    @property
    def horizon(self) -> float:
        return self._table.horizon

    if not TYPE_CHECKING:   # (mypy checks every name a plugin asks of the view)
        def __getattr__(self, name: str) -> Any:   # only reached for names not set above
            raise AttributeError(f"the slot table seen by plugins has no {name!r} "
                                 f"(it can be read, not changed)")


class _NoPlan:
    """The per-node plan queries of a table that keeps no plan on nodes (it counts VMs):
    every one but :meth:`change_points` over the whole site says so."""

    def __init__(self, table: Table) -> None:
        self._table = table

    @staticmethod
    def _refuse(reason: str = "with placement = at-start, nodes have no future plan"
                ) -> NotImplementedError:
        return NotImplementedError(reason)

    def change_points(self, after: float, until: float = math.inf,
                      node: int | None = None) -> list[float]:
        if node is not None:
            raise self._refuse()
        return self._table.change_points(after, until)

    def next_start_on(self, node: int, after: float,
                      skip: frozenset[ReservationKind] = frozenset()) -> float:
        raise self._refuse()

    def earliest_fit_on(self, nodes: np.ndarray, amounts: np.ndarray, duration: float,
                        after: float, not_after: float | None = None) -> float | None:
        raise self._refuse()

    def site_room(self, demands: Sequence[tuple[float, float, float]],
                  resource: int = 0) -> float:
        raise self._refuse("placement = at-start takes no site-wide resources")
