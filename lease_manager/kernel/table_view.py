"""What policies and plugins see of a slot table: its queries, not its changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lease_manager.kernel.slottable import SlotTable


class SlotTableView:
    """The slot table's queries, without its changes (``add``, ``remove``, ``truncate``...).

    Each query is the table's own bound method, so a view costs nothing per call.
    """

    QUERIES = ("free_at", "site_free_at", "site_capacity_at", "min_free", "vm_fits",
               "lease_counts_at", "capacity_lasts_until", "reservations_at",
               "reservations_between", "next_start_on", "change_points", "earliest_fit",
               "earliest_fit_on", "earlier_start", "iter_fit_starts", "may_fit_before",
               "fits_at", "room_at", "site_room", "watch")

    def __init__(self, table: SlotTable) -> None:
        self._table = table
        self.nodes = table.nodes
        self.capacity = table.capacity
        for name in self.QUERIES:
            setattr(self, name, getattr(table, name))

    @property
    def version(self) -> int:
        """Changes whenever the table changes (a cheap test that nothing moved)."""
        return self._table.version

    @property
    def counted(self) -> bool:
        """Whether the table counts VMs (``placement = at-start``): future reservations have
        no nodes, and per-node answers are for now only."""
        return self._table.counted

    @property
    def site_resources(self) -> tuple[str, ...]:
        return self._table.site_resources

    @property
    def horizon(self) -> float:
        return self._table.horizon

    def __getattr__(self, name: str) -> Any:   # only reached for names not set above
        raise AttributeError(f"the slot table seen by plugins has no {name!r} "
                             f"(it can be read, not changed)")
