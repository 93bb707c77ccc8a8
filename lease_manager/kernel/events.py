"""The timeline of future events the engine steps through."""

from __future__ import annotations

import enum
import heapq
import itertools
import math
from typing import Any


class EventKind(enum.IntEnum):
    """What happens at an instant, in the order it is handled: ends free resources before
    planned starts take them, and both before new requests are considered."""

    END = 0          # a lease's work finishes (payload: its running "vm" reservation)
    SEGMENT_END = 1  # a planned segment ends, e.g. a suspension completes (payload: reservation)
    START = 2        # a planned segment begins (payload: reservation)
    CALL = 3         # a callback at a decision point (payload: callable taking ``now``)


#: the kinds by value (an enum call per popped event costs more than the pop)
_KINDS = tuple(EventKind)


class Timeline:
    """A heap of ``(time, kind, seq, lease)``. Stale events are left in and skipped by whoever
    pops them (cheaper than deleting from the heap when a plan changes)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = itertools.count()

    def push(self, time: float, kind: EventKind, payload: Any = None) -> None:
        heapq.heappush(self._heap, (time, int(kind), next(self._seq), payload))

    def next_time(self) -> float:
        return self._heap[0][0] if self._heap else math.inf

    def pop_due(self, time: float) -> list[tuple[EventKind, Any]]:
        """Remove and return the events at ``time`` (or earlier), in handling order."""
        due = []
        heap = self._heap
        kinds = _KINDS
        while heap and heap[0][0] <= time:
            _, kind, _, payload = heapq.heappop(heap)
            due.append((kinds[kind], payload))
        return due

    def __len__(self) -> int:
        return len(self._heap)
