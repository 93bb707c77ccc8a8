"""Invariants every schedule must keep, checked independently of the slot table.

The checker sweeps what leases really held (their final allocations) through time, node by
node: no node may ever hold more than its capacity. A lease's allocations are final when it
ends; every instant before the first start of the leases still running is then final too, so
the sweep moves on as leases end and keeps only what it has not passed yet, and the events it
passed until there are enough to apply together (its memory does not grow with the trace).
It also checks that no lease
starts twice without being preempted in between, that a best-effort lease that was never
preempted starts no later than the start it was first promised, that no lease starts before
the earliest start it requested, that no deadline lease completes after its deadline, and that
no lease is left
running when a run ends because nothing more was to happen (:func:`stranded`), and that a
malleable lease's allocations, at their rates, did its work exactly once.
"""

from __future__ import annotations

import heapq
import itertools
import math
import operator
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.enum_members import members
from lease_manager.kernel.lease import LeaseState, LeaseType
from lease_manager.kernel.malleable import work_of

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease

TOLERANCE = 1e-6
#: node rows (an allocation's start or end on one node) applied together, at least
_BATCH_ROWS = 4096
_IS_START, _NODES, _AMOUNTS = (operator.itemgetter(i) for i in (1, 3, 4))

S = members(LeaseState)
LT = members(LeaseType)

#: the states of a lease that holds resources and waits for an event to leave them
RUNNING_STATES = frozenset({S.ACTIVE, S.SUSPENDING, S.RESUMING, S.MIGRATING})


def stranded(leases: Iterable[Lease]) -> list[str]:
    """The leases of a run that ended because no event was left to happen which are still
    running: nothing would ever have ended them (a lost event, a bug)."""
    return [f"lease {lease.id} is {lease.state.value} at the end of the run with nothing "
            f"planned to end it" for lease in leases if lease.state in RUNNING_STATES]


class InvariantViolation(AssertionError):
    """The run broke an invariant: a bug in lease_manager or in a plugin."""


class _Waves:
    """How one batch's rows are added (:meth:`InvariantChecker._waves`): the nodes ranked by
    their rows (``by_rows``, ``most`` rows first), the number of nodes in each wave up to
    ``cut`` and where each wave starts among the rows, the ``hot`` nodes' rows after the
    waves (``tails``; None: no hot node), and the row of the batch at each place. (A plain
    class: an attrs class costs the start-up of every run more to build.)"""

    __slots__ = ("by_rows", "most", "wave", "cut", "hot", "offsets", "tails", "source")

    def __init__(self, by_rows: np.ndarray, most: np.ndarray, wave: np.ndarray, cut: int,
                 hot: int, offsets: np.ndarray, tails: np.ndarray | None,
                 source: np.ndarray) -> None:
        self.by_rows, self.most, self.wave, self.cut = by_rows, most, wave, cut
        self.hot, self.offsets, self.tails, self.source = hot, offsets, tails, source


class InvariantChecker:
    """A per-run plugin (``lease_manager.invariants``) watching lease hooks; :meth:`verify` at
    the end of the run."""

    def __init__(self, capacity: np.ndarray, *, only: str | None = None) -> None:
        self.capacity = capacity
        #: check only the leases of this site (a run with several), or all
        self.only = only
        self._running: set[int] = set()
        self.violations: list[str] = []
        #: what every node holds at the sweep's time, and the allocations' starts and ends
        #: not swept yet: (time, 0 end / 1 start, sequence, nodes, amounts)
        self._usage = np.zeros_like(capacity, dtype=float)
        self._limit = capacity + TOLERANCE * np.maximum(capacity, 1)
        #: every node has the same capacity (one row to compare with)
        self._uniform = bool(len(capacity)) and bool((capacity == capacity[0]).all())
        self._events: list[tuple[float, int, int, np.ndarray, np.ndarray]] = []
        self._seq = itertools.count()
        #: the events the sweep has passed, in its order, to be applied together (at most
        #: _batch node rows of them: memory bounded), and their node rows
        self._passed: list[tuple[float, int, int, np.ndarray, np.ndarray]] = []
        self._passed_rows = 0
        self._batch = max(_BATCH_ROWS, 16 * len(capacity))
        #: first start of every lease started and not ended (a heap; ended ones lazily)
        self._first_starts: list[tuple[float, int]] = []
        self._started: dict[int, float] = {}
        self._over: list[str] = []
        #: arrays _apply works in, kept for the next batch (as large as the largest yet):
        #: fresh pages cost as much as the arithmetic
        self._scratch: dict[str, np.ndarray] = {}

    @hookimpl(tryfirst=True)
    def lease_started(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if self.only is not None and lease.site != self.only:
            return
        lease_id = lease.id
        if lease_id in self._running:
            self.violations.append(f"lease {lease_id} started twice (at {now})")
        self._running.add(lease_id)
        if lease_id not in self._started:
            self._started[lease_id] = now
            heapq.heappush(self._first_starts, (now, lease_id))
        start_request = lease.start_request
        if start_request is not None and now < start_request - TOLERANCE:
            self.violations.append(f"lease {lease_id} started at {now}, before the earliest "
                                   f"start {start_request} it requested")
        if (lease.type is LT.BEST_EFFORT and lease.preemptions == 0
                and lease.promised_start is not None and now > lease.promised_start + TOLERANCE):
            self.violations.append(f"lease {lease_id} started at {now}, later than the "
                                   f"{lease.promised_start} it was promised")

    @hookimpl(tryfirst=True)
    def lease_preempted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self._running.discard(lease.id)

    @hookimpl(tryfirst=True)
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        lease_id = lease.id
        self._running.discard(lease_id)
        if self.only is not None and lease.site != self.only:
            return
        started = self._started
        started.pop(lease_id, None)
        state = lease.state
        if (lease.type is LT.DEADLINE and state is S.DONE
                and lease.deadline is not None and lease.end is not None
                and lease.end > lease.deadline + TOLERANCE):
            self.violations.append(f"deadline lease {lease_id} ended at {lease.end}, after its "
                                   f"deadline {lease.deadline}")
        m = lease.malleable
        if m is not None and state is S.DONE:
            # every single-server second of its work done once, at the rates of its
            # allocations as they really ran
            done = work_of(lease, ctx.config.get("scheduling", "shutdown-time"))
            work = m.single_server(lease.run_duration)
            if abs(done - work) > TOLERANCE * max(work, 1.0):
                self.violations.append(f"malleable lease {lease_id} did {done!r} single-server "
                                       f"seconds of work in its allocations, not {work!r}")
        events, seq, push = self._events, self._seq, heapq.heappush
        for res in lease.allocations:
            if res.end < res.start:
                self.violations.append(f"an allocation of lease {lease_id} ends before it "
                                       f"starts")
                continue
            nodes, amounts = res.nodes, res.amounts
            push(events, (res.start, 1, next(seq), nodes, amounts))
            push(events, (res.end, 0, next(seq), nodes, amounts))
        # every allocation not known yet starts no earlier than the first start of a lease
        # still running: the sweep may pass every instant before it
        heads = self._first_starts
        while heads and started.get(heads[0][1]) != heads[0][0]:
            heapq.heappop(heads)
        until = heads[0][0] if heads else math.inf
        if events and events[0][0] < until:   # (_sweep's own first test, without the call)
            self._sweep(until)

    def _sweep(self, until: float) -> None:
        """Pass the starts and ends before ``until`` in time order (ends first at an
        instant); they are applied, in that order, once enough have been passed
        (:meth:`_apply`)."""
        events = self._events
        if not events or not events[0][0] < until:
            return
        passed, pop = self._passed, heapq.heappop
        rows = self._passed_rows
        while events and events[0][0] < until:
            event = pop(events)
            passed.append(event)
            rows += len(event[3])
        self._passed_rows = rows
        if rows >= self._batch:
            self._apply()

    def _apply(self) -> None:
        """Apply the events passed, in order, to what every node holds, recording every node
        a start takes above its capacity: the additions the sweep would make one event at a
        time, made node by node (each node's rows in order, so each sum is the same), and
        every start's rows compared with the capacity.

        A node's r-th row of the batch is added in wave r: a wave holds at most one row per
        node, so it is one vector addition, and with the nodes ranked by their number of rows
        (most first) the nodes of wave r are the first ones, those with more than r rows. The
        few nodes with many more rows than most (the waves would be many and short) add the
        rest of theirs in turn (np.add.accumulate down their rows)."""
        passed = self._passed
        if not passed:
            return
        self._passed, self._passed_rows = [], 0
        gathered = self._gather(passed)
        if gathered is None:
            self._apply_one_by_one(passed)   # (anything unusual: as the sweep always did)
            return
        nodes, amounts, node_lists = gathered
        count, width = len(self._usage), amounts.shape[1]
        sizes = np.fromiter(map(len, node_lists), dtype=np.intp, count=len(passed))
        starts = np.fromiter(map(_IS_START, passed), dtype=bool, count=len(passed))
        event_of = np.repeat(np.arange(len(passed), dtype=np.int32), sizes)
        given = nodes   # (as the messages name them)
        if nodes.min() < 0:
            nodes = np.where(nodes < 0, nodes + count, nodes)
        # each node's rows, in the sweep's order (a stable sort: a radix sort on 16 bits)
        order = np.argsort(nodes.astype(np.int16) if count <= 2 ** 15 else nodes,
                           kind="stable")
        work, n = self._work, len(nodes)
        node_sorted = nodes.take(order, out=work("node_sorted", (n,), nodes.dtype), mode="clip")
        event_sorted = event_of.take(order, out=work("event_sorted", (n,), np.int32),
                                     mode="clip")
        twice = node_sorted[1:] == node_sorted[:-1]
        twice &= event_sorted[1:] == event_sorted[:-1]
        if twice.any():
            self._apply_one_by_one(passed)   # a node twice in one allocation
            return
        # an end takes its amounts away: x - a is x + (-a), exactly (amounts is a copy)
        flat = amounts.reshape(-1)
        np.negative(flat, out=flat, where=np.repeat(~starts, sizes * width))
        waves = self._waves(nodes, node_sorted, order)
        # (mode clip: the indices are valid, and out is not buffered)
        rows = amounts.take(waves.source, axis=0, out=work("rows", amounts.shape), mode="clip")
        found = self._add_waves(waves, rows, width)
        if found:
            self._report(found, passed, starts, event_of, given)

    def _gather(self, passed: list[tuple[float, int, int, np.ndarray, np.ndarray]]
                ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]] | None:
        """The node rows of the events passed and their amounts (one row each, floats, in
        a scratch array), and each event's nodes; None when they are not as the waves need
        them (nodes of another kind or out of range, amounts of another shape)."""
        usage = self._usage
        width = usage.shape[1] if usage.ndim == 2 else -1
        count = len(usage)
        nodes: np.ndarray | None = None
        amounts: np.ndarray | None = None
        node_lists = list(map(_NODES, passed))
        try:
            nodes = np.concatenate(node_lists)
            parts = list(map(_AMOUNTS, passed))
            try:
                if width >= 0:
                    amounts = np.concatenate(parts, out=self._work("amounts", (len(nodes),
                                                                               width)))
            except TypeError:   # (not cast to floats safely: as astype does)
                amounts = np.concatenate(parts).astype(float, copy=False)
        except ValueError:
            pass
        if (nodes is None or amounts is None or nodes.ndim != 1 or width < 0
                or amounts.shape != (len(nodes), width) or not len(nodes)
                or not np.issubdtype(nodes.dtype, np.integer)
                or nodes.min() < -count or nodes.max() >= count):
            return None
        return nodes, amounts, node_lists

    def _waves(self, nodes: np.ndarray, node_sorted: np.ndarray, order: np.ndarray
               ) -> _Waves:
        """Where each of the batch's rows goes in the waves (:meth:`_apply`): the nodes
        ranked by their rows, the waves' sizes and offsets, and the hot nodes' tails."""
        count, work, n = len(self._usage), self._work, len(nodes)
        small = np.dtype(np.int32 if n < 2 ** 31 else np.intp)   # (row numbers: half the bytes)
        lengths = np.bincount(nodes, minlength=count)
        # the nodes by their rows, most first, and each row's rank among its node's rows
        by_rows = np.argsort(-lengths, kind="stable")[:np.count_nonzero(lengths)]
        place = np.empty(count, dtype=small)
        place[by_rows] = np.arange(len(by_rows))
        most = lengths.take(by_rows)   # (descending)
        depth = int(most[0])
        firsts = (np.cumsum(lengths) - lengths).astype(small)
        rank = firsts.take(node_sorted, out=work("rank", (n,), small), mode="clip")
        index = self._scratch.get("index")
        if index is None or len(index) < n or index.dtype != small:
            index = self._scratch["index"] = np.arange(n, dtype=small)
        np.subtract(index[:n], rank, out=rank)
        node_place = place.take(node_sorted, out=work("node_place", (n,), small), mode="clip")
        # wave[r]: the nodes with more than r rows (wave[depth] is 0); waves up to `cut`
        # (each a few numpy calls), then the `hot` nodes with more rows add them in turn (a
        # few more each): the fewest calls
        wave = len(by_rows) - np.cumsum(np.bincount(most, minlength=depth + 1))
        cut = int(np.argmin(np.arange(depth + 1) + 3 * wave))
        hot = int(wave[cut])
        offsets = np.zeros(cut + 1, dtype=small)
        np.cumsum(wave[:cut], out=offsets[1:])
        # where each row goes (wave by wave, then each hot node's rest), and the rows there
        tails = None
        if hot:
            tails = np.zeros(hot + 1, dtype=small)
            np.cumsum(most[:hot] - cut, out=tails[1:])
            tails += offsets[cut] - cut
            dest = np.where(rank < cut, offsets.take(np.minimum(rank, cut)) + node_place,
                            tails.take(np.minimum(node_place, hot)) + rank)
        else:
            dest = offsets.take(rank, out=work("dest", (n,), small), mode="clip")
            dest += node_place
        source = work("source", (n,), small)
        source[dest] = order
        return _Waves(by_rows, most, wave, cut, hot, offsets, tails, source)

    def _add_waves(self, waves: _Waves, rows: np.ndarray, width: int
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Add the batch's ``rows`` (in their wave order) to what the nodes hold; the rows
        found above a capacity and what their nodes held then (while fewer than ten are
        known)."""
        by_rows, source, cut, hot = waves.by_rows, waves.source, waves.cut, waves.hot
        usage = self._usage
        held = usage.take(by_rows, axis=0)
        # (nodes alike: any rows of the limits are the same)
        limit = self._limit[:len(by_rows)] if self._uniform else self._limit.take(by_rows,
                                                                                   axis=0)
        check = len(self._over) < 10
        found: list[tuple[np.ndarray, np.ndarray]] = []   # (rows above, what they held)
        for k, lo in zip(waves.wave[:cut].tolist(), waves.offsets.tolist(), strict=False):
            now = held[:k]
            now += rows[lo:lo + k]
            if check and (now > limit[:k]).any():
                hit = np.flatnonzero((now > limit[:k]).any(axis=1))
                found.append((source[lo + hit], now[hit]))
        tails = waves.tails[:hot].tolist() if waves.tails is not None else ()
        for i, (lo, length) in enumerate(zip(tails, waves.most[:hot].tolist(), strict=True)):
            block = np.empty((length - cut + 1, width))
            block[0] = held[i]
            block[1:] = rows[lo + cut:lo + length]
            np.add.accumulate(block, axis=0, out=block)
            held[i] = block[-1]
            if check:
                hit = np.flatnonzero((block[1:] > limit[i]).any(axis=1))
                if len(hit):
                    found.append((source[lo + cut + hit], block[1 + hit]))
        usage[by_rows] = held
        return found

    def _report(self, found: list[tuple[np.ndarray, np.ndarray]],
                passed: list[tuple[float, int, int, np.ndarray, np.ndarray]],
                starts: np.ndarray, event_of: np.ndarray, given: np.ndarray) -> None:
        """Describe the starts among the rows ``found`` above a capacity, in the sweep's
        order (event by event, an event's nodes in its order), up to ten in all."""
        over = np.concatenate([row for row, _ in found])
        values = np.concatenate([value for _, value in found])
        is_start = starts[event_of[over]]   # (above after an end too: rare)
        over, values = over[is_start], values[is_start]
        for i in np.argsort(over, kind="stable")[:10 - len(self._over)].tolist():
            row = int(over[i])
            t, node = passed[int(event_of[row])][0], int(given[row])
            self._over.append(f"node {node} holds {values[i].tolist()} at time "
                              f"{t:g}, above its capacity {self.capacity[node].tolist()}")

    def _work(self, name: str, shape: tuple[int, ...], dtype: type | np.dtype = float,
              ) -> np.ndarray:
        """An array of ``shape`` to work in, reused from the last batch when it is large
        enough (its values are left over: to be written)."""
        size = math.prod(shape)
        buffer = self._scratch.get(name)
        if buffer is None or len(buffer) < size or buffer.dtype != dtype:
            buffer = self._scratch[name] = np.empty(size, dtype)
        return buffer[:size].reshape(shape)

    def _apply_one_by_one(self, passed: list[tuple[float, int, int, np.ndarray, np.ndarray]],
                          ) -> None:
        usage = self._usage
        limit = self._limit[0] if self._uniform else None
        for t, is_start, _, nodes, amounts in passed:
            if not is_start:
                usage[nodes] -= amounts
                continue
            held = usage[nodes]
            held += amounts
            usage[nodes] = held
            over = (held > (self._limit[nodes] if limit is None else limit)).any(axis=1)
            if over.any() and len(self._over) < 10:
                for i in np.flatnonzero(over)[:10 - len(self._over)].tolist():
                    node = int(nodes[i])
                    self._over.append(f"node {node} holds {usage[node].tolist()} at time "
                                      f"{t:g}, above its capacity {self.capacity[node].tolist()}")

    def over_commitments(self) -> list[str]:
        """Sweep what is left; describe the instants a node was over-committed (at most
        ten)."""
        self._sweep(math.inf)
        self._apply()
        self._scratch.clear()
        return list(self._over)

    def verify(self) -> None:
        """Raise :class:`InvariantViolation` listing what went wrong, if anything did."""
        problems = self.violations + self.over_commitments()
        if problems:
            more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
            raise InvariantViolation("; ".join(problems[:10]) + more)
