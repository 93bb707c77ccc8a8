"""The wait queue: QUEUED leases in the queue policy's order, with arrays beside them (each
lease's VM count, VM shape id and reservation length) so that a scheduling cycle finds the
leases that may start now with array operations. Its one owner of that state: the scheduler
changes it only through these methods and reads it through the attributes."""

from __future__ import annotations

import collections
from array import array
from bisect import bisect_right
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from lease_manager.kernel.lease import Lease


class WaitQueue:
    """One scheduler's queued leases, ordered by ``sort_key`` (the queue policy's); ``length``
    is how long a lease's reservation would last (constant while it is queued)."""

    __slots__ = ("leases", "keys", "counts", "shapes", "lengths", "census", "shape_vectors",
                 "_shape_ids", "_sort_key", "_length")

    def __init__(self, sort_key: Callable[[Lease], Any],
                 length: Callable[[Lease], float]) -> None:
        #: QUEUED leases, in queue order (changed in place only: one list for its lifetime)
        self.leases: list[Lease] = []
        #: each lease's sort key
        self.keys: list[Any] = []
        #: parallel to ``leases``: each lease's VM count and the id of its VM shape (-1: no
        #: single shape, or a memory image to resume: room is not counted for it)
        self.counts: array[int] = array("q")
        self.shapes: array[int] = array("q")
        #: and how long each would hold its reservation
        self.lengths: array[float] = array("d")
        #: how many queued leases have each shape id
        self.census: collections.Counter[int] = collections.Counter()
        #: each shape id's VM vector
        self.shape_vectors: list[np.ndarray] = []
        #: VM shape (``VMRequest.shape_key``) -> id
        self._shape_ids: dict[bytes, int] = {}
        self._sort_key = sort_key
        self._length = length

    def __len__(self) -> int:
        return len(self.leases)

    def push(self, lease: Lease) -> None:
        """Put ``lease`` where the sort key orders it (after those with the same key)."""
        key = self._sort_key(lease)
        at = bisect_right(self.keys, key)
        self.keys.insert(at, key)
        self.leases.insert(at, lease)
        shape_id = self.shape_id(lease)
        self.counts.insert(at, lease.vms.count)
        self.shapes.insert(at, shape_id)
        self.lengths.insert(at, self._length(lease))
        self.census[shape_id] += 1

    def pop_at(self, i: int) -> None:
        """Take ``leases[i]`` out of the queue."""
        del self.leases[i]
        del self.keys[i]
        del self.counts[i]
        del self.lengths[i]
        self.census[self.shapes.pop(i)] -= 1

    def pop_head(self, n: int) -> None:
        """Take the first ``n`` leases out of the queue."""
        census, shapes = self.census, self.shapes
        for j in range(n):
            census[shapes[j]] -= 1
        del self.leases[:n]
        del self.keys[:n]
        del self.counts[:n]
        del self.shapes[:n]
        del self.lengths[:n]

    def pop_all(self, done: Collection[int], few: int) -> None:
        """Take the leases at positions ``done`` out of the queue: in place, one deletion
        each, if there are at most ``few``; else by keeping the rest."""
        census, shapes = self.census, self.shapes
        for j in done:
            census[shapes[j]] -= 1
        leases, keys, counts, lengths = self.leases, self.keys, self.counts, self.lengths
        if len(done) > few:
            keep = [j for j in range(len(leases)) if j not in done]
            leases[:] = [leases[j] for j in keep]
            keys[:] = [keys[j] for j in keep]
            counts[:] = array("q", [counts[j] for j in keep])
            shapes[:] = array("q", [shapes[j] for j in keep])
            lengths[:] = array("d", [lengths[j] for j in keep])
        else:   # a few leases left a long queue: a memmove each
            for j in sorted(done, reverse=True):
                del leases[j]
                del keys[j]
                del counts[j]
                del shapes[j]
                del lengths[j]

    def shape_id(self, lease: Lease) -> int:
        """The id of the lease's single VM shape, or -1 (several shapes, or a memory image
        to resume where it is: the site's room for the shape says nothing about it). A
        lease's VMs and image do not change while it is queued."""
        shape = lease.vms.shape_key
        if shape is None or lease.image_nodes:
            return -1
        ids = self._shape_ids
        shape_id = ids.get(shape)
        if shape_id is None:
            shape_id = ids[shape] = len(self.shape_vectors)
            self.shape_vectors.append(lease.vms.vectors[0])
        return shape_id
