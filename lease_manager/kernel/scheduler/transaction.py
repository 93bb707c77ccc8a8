"""A slot-table transaction: the one way every re-planning path changes reservations.

Re-planning follows one pattern: take reservations off the table, try a new plan, and either
put everything back (the plan failed) or keep the new plan. :class:`PlanChange` makes the
changes to the table as it is told (add, remove, truncate) and remembers their net effect, so
that :meth:`PlanChange.rollback` restores the table as it was: it takes off what was added,
gives truncated reservations back their ends, and puts back what was removed, each in the order
the changes were made. Leaving its ``with`` block by an exception rolls back too. The operations
are generic, so plans of any kind of reservation (VMs, suspensions, node power states) and
changes to running reservations (truncated, then continued by a new one) go through the same
mechanism.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lease_manager.kernel.slottable import Reservation, SlotTable


class PlanChange:
    """Changes to ``table`` that are undone unless kept (see the module docstring)."""

    __slots__ = ("table", "_added", "_removed", "_truncated")

    def __init__(self, table: SlotTable) -> None:
        self.table = table
        self._added: dict[int, Reservation] = {}
        self._removed: dict[int, Reservation] = {}
        #: reservations truncated here: their ends before, and whether the table dropped them
        self._truncated: dict[int, tuple[Reservation, float, bool]] = {}

    def add(self, res: Reservation) -> None:
        """Put ``res`` in the table."""
        self.table.add(res)
        if self._removed.pop(res.id, None) is None:
            self._added[res.id] = res

    def remove(self, res: Reservation) -> None:
        """Take ``res`` off the table."""
        self.table.remove(res)
        if self._added.pop(res.id, None) is None:
            self._removed[res.id] = res

    def truncate(self, res: Reservation, end: float) -> None:
        """End ``res`` at ``end`` instead (earlier than it ends now)."""
        if end >= res.end:
            return
        if res.id not in self._truncated and res.id not in self._added:
            self._truncated[res.id] = (res, res.end, end <= res.start)
        self.table.truncate(res, end)

    def rollback(self) -> None:
        """Restore the table as it was before this change."""
        table = self.table
        for res in self._added.values():
            table.remove(res)
        for res, end, dropped in self._truncated.values():
            if res.id in self._removed:
                res.end = end     # put back whole below
                continue
            if dropped:
                res.end = end
                table.add(res)
            else:   # extended back (it may have started before the table's horizon)
                table.extend(res, end)
        for res in self._removed.values():
            table.add(res)
        self.keep()

    def keep(self) -> None:
        """Keep the changes made so far (they can no longer be rolled back)."""
        self._added.clear()
        self._removed.clear()
        self._truncated.clear()

    def __enter__(self) -> PlanChange:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is not None:
            self.rollback()
