"""What the two slot tables share: a profile of rows over time and the reservations it holds.

Both :class:`~lease_manager.kernel.slottable.SlotTable` (free capacity per node) and
:class:`~lease_manager.kernel.count_table.CountTable` (free VM slots) keep sorted breakpoints
``_t[0] < _t[1] < ...``, the row ``k`` spanning ``[_t[k], _t[k+1])`` (the last one to
infinity), the reservations they hold by id, a heap of their ends, a version that changes with
every change, and the :class:`ChangeWatch` es that record changes. :class:`TableRows` holds
that state and the operations that read it the same way in both (rows of an instant or an
interval, ending a reservation early); each table says how a reservation takes and gives back
its rows.
"""

from __future__ import annotations

import heapq
import math
from abc import abstractmethod
from bisect import bisect_left, bisect_right

from lease_manager.kernel.reservation import Reservation


class ChangeWatch:
    """What changed in a slot table since :meth:`reset` (from :meth:`TableRows.watch`): the
    span of times its changes cover, and whether any of them gave capacity back."""

    def __init__(self) -> None:
        self.lo, self.hi, self.freed = math.inf, -math.inf, False

    def reset(self) -> None:
        self.lo, self.hi, self.freed = math.inf, -math.inf, False

    def record(self, lo: float, hi: float, freed: bool) -> None:
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        self.freed = self.freed or freed

    def untouched(self, start: float, end: float) -> bool:
        """Is every answer about ``[start, end)`` still true? Yes if nothing changed, or if
        the changes only took capacity, none of it during ``[start, end)``: what fitted
        there still fits, and what did not fit anywhere still does not."""
        return self.lo > self.hi or (not self.freed and (self.hi <= start or self.lo >= end))


class TableRows:
    """Breakpoints over time and the reservations held on them (the base of both tables).

    A subclass keeps what each row has free and says how a reservation changes it
    (:meth:`_apply`), how a breakpoint is made and referenced (:meth:`_split`, :meth:`_ref`,
    :meth:`_unref`), how a reservation is cancelled (:meth:`remove`) and what else follows
    when one ends early (:meth:`_truncated`).
    """

    def __init__(self, origin: float) -> None:
        #: breakpoint times (each subclass keeps its rows beside them)
        self._t: list[float] = [origin]
        #: how many reservation starts, ends and capacity steps sit on each breakpoint
        self._refs: dict[float, int] = {}
        self._reservations: dict[int, Reservation] = {}
        self._ends: list[tuple[float, int]] = []  # heap of (end, reservation id), lazily cleaned
        self._version = 0
        self._watches: list[ChangeWatch] = []

    # ----------------------------------------------------------------- what subclasses give
    @abstractmethod
    def _split(self, t: float) -> int:
        """Make ``t`` a breakpoint (if it is not one) and return its row."""

    @abstractmethod
    def _ref(self, t: float, grows: bool) -> None:
        """Reference breakpoint ``t``: a reservation's end or a capacity step (``grows``),
        or a reservation's start."""

    @abstractmethod
    def _unref(self, t: float, grows: bool) -> None:
        """Drop a reference to breakpoint ``t``; merge its row away when none is left."""

    @abstractmethod
    def _apply(self, res: Reservation, ks: int, ke: int, sign: int) -> None:
        """Take (``sign=-1``) or give back (``+1``) ``res``'s resources in rows ``ks:ke``."""

    @abstractmethod
    def remove(self, res: Reservation) -> None:
        """Cancel ``res`` entirely (use :meth:`truncate` for one that has started)."""

    @abstractmethod
    def _truncated(self, res: Reservation, old_end: float) -> None:
        """What else follows when ``res`` ended early, at its new ``res.end``, not ``old_end``."""

    # ----------------------------------------------------------------------------- rows
    @property
    def horizon(self) -> float:
        """The earliest time the table still knows about (everything before is forgotten)."""
        return self._t[0]

    @property
    def version(self) -> int:
        """A number that changes whenever the table changes (for caching answers)."""
        return self._version

    @property
    def breakpoints(self) -> int:
        """Number of rows in the profile."""
        return len(self._t)

    def _row(self, t: float) -> int:
        if t < self._t[0]:
            raise ValueError(f"time {t} is before the slot table's horizon {self._t[0]}")
        return bisect_right(self._t, t) - 1

    def _span(self, start: float, end: float) -> tuple[int, int]:
        """Rows ``ks:ke`` covering ``[start, end)``, start clipped to the horizon (``ks == ke``
        when nothing of the interval is left)."""
        ks = 0 if start <= self._t[0] else self._row(start)
        if end <= max(start, self._t[0]):
            return ks, ks
        ke = len(self._t) if math.isinf(end) else bisect_left(self._t, end, ks)
        return ks, ke

    def watch(self) -> ChangeWatch:
        """A :class:`ChangeWatch` that records every later change of the table (a policy
        keeps one and resets it; it lives as long as the table)."""
        watch = ChangeWatch()
        self._watches.append(watch)
        return watch

    def __contains__(self, res: object) -> bool:
        """Does the table hold reservation ``res``?"""
        return isinstance(res, Reservation) and self._reservations.get(res.id) is res

    def __len__(self) -> int:
        """Number of reservations the table holds (current and future)."""
        return len(self._reservations)

    # ----------------------------------------------------------------------------- changes
    def truncate(self, res: Reservation, new_end: float) -> None:
        """End ``res`` early at ``new_end`` (a premature end, a preemption, a shrink)."""
        if res.id not in self._reservations:
            raise KeyError(f"{res!r} is not in the slot table")
        if new_end >= res.end:
            return
        if new_end <= res.start:
            self.remove(res)
            res.end = new_end
            return
        ks = self._split(new_end)
        self._ref(new_end, True)
        ke = len(self._t) if math.isinf(res.end) else bisect_left(self._t, res.end, ks + 1)
        self._apply(res, ks, ke, +1)
        old_end = res.end
        res.end = new_end
        if not math.isinf(old_end):
            self._unref(old_end, True)
        heapq.heappush(self._ends, (new_end, res.id))
        self._truncated(res, old_end)
