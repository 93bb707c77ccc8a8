"""Node power states on a table that counts VMs (``[scheduling] placement = at-start``).

With at-start, plans hold counts of VM slots, not nodes, so node states follow from those
counts, and a node is chosen when it must switch:

- A node that is off (or shutting down) is held by one reservation of the table, pinned on
  it, from its shutdown on. Without a boot, the hold ends where a boot started now could
  end, ``max(off start, now) + Ton``, and rolls on with the clock (as
  :class:`~lease_manager.energy.node_states.NodePowerStates` holds an off node): the
  earliest-fit search counts the slot of an off node as free from then on.
- After every step, boots follow the plans (:meth:`CountedPowerStates.after_step`). The off
  nodes are taken in turn (earliest possible boot end first, then by index); each must be on
  from the first instant ``T`` at which the profile, with the nodes already left off taken
  out, has no free slot: its hold is made to end at ``T``, a boot ``[T - Ton, T)``. A node
  that no plan needs stays off (its slot is left out for the next nodes).
- A boot that has not begun when the next step starts is cancelled there: the plans of that
  step see the slot free from the rolling end, as a plan on an off node whose boot is still
  to come sees it in :class:`NodePowerStates`; the boots are planned again after the step.
- The node-power policy picks idle nodes to switch off; one goes off only if, with it off,
  the profile keeps a free slot until it could shut down and boot again (the policy's
  ``stays_on`` is asked with the first instant its slot is needed as the next start).

The state intervals (:meth:`CountedPowerStates.intervals`) feed the energy accounting and its
invariants (states tile the run; no lease on a node that is not on).
"""

from __future__ import annotations

import functools
import heapq
import math
from bisect import bisect_right, insort
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.kernel.reservation import Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.kernel.count_table import CountTable
    from lease_manager.kernel.scheduler import Enactment
    from lease_manager.policies import NodePowerPolicy

K = ReservationKind
OFF, SWITCHING_ON, SWITCHING_OFF = K.OFF.value, K.SWITCHING_ON.value, K.SWITCHING_OFF.value


class CountedPowerStates:
    """Every node's power state on a :class:`~lease_manager.kernel.count_table.CountTable`,
    driven by the engine's steps (the interface of
    :class:`~lease_manager.energy.node_states.NodePowerStates` that the energy accounting
    reads)."""

    #: no per-node cap with at-start (a cap it counts is a bound on the VMs running:
    #: :mod:`~lease_manager.energy.counted_cap`)
    cap = None

    def __init__(self, table: CountTable, model: PowerModel, policy: NodePowerPolicy, *,
                 origin: float, initially_off: bool,
                 enactment: Enactment | None = None,
                 call_at: Callable[[float, Callable[[float], None]], None] | None = None
                 ) -> None:
        self.table = table
        self.model = model
        self.policy = policy
        self._enactment = enactment if enactment is not None and enactment.power_calls else None
        self._call_at = call_at
        #: off nodes with no boot (the values are when each became so: the scheduler reads
        #: only which nodes are there, and ``boot_until``; one dict, changed in place)
        self.bootable: dict[int, float] = {}
        #: the latest end of the off nodes' holds (-inf: none), as of the last step
        self.boot_until = -math.inf
        n = len(table.slots)
        self._on_seconds = [float(s) for s in model.on_seconds]
        self._off_seconds = [float(s) for s in model.off_seconds]
        #: the power-state intervals of each node that are over: (state, from, to)
        self._records: list[list[tuple[str, float, float]]] = [[] for _ in range(n)]
        #: the table reservation holding each node that is not on (None: the node hosts no
        #: VM of the site's shape, and is never needed)
        self._hold: dict[int, Reservation | None] = {}
        #: when each node that is not on began to shut down, and when it is off
        self._down: dict[int, float] = {}
        self._off_from: dict[int, float] = {}
        #: the start of each planned boot (begun or not), by node
        self._boot: dict[int, float] = {}
        #: the off nodes with no boot, by their hold's (rolling) end, boot time and VM slots
        self._waiting: dict[tuple[float, float, int], dict[int, Reservation]] = {}
        #: nodes on and holding nothing, and since when (nan: not idle)
        self.idle_since = np.full(n, math.nan)
        self._on = np.ones(n, dtype=bool)
        #: when the policy wants to look again (a heap; entries before now are dropped)
        self._checks: list[float] = []
        #: with one VM slot on every node: the nodes idle (free) at the last look, as a set,
        #: as the table's list was then (None: look again) and as an array (read-only)
        self._idle: set[int] = set()
        self._idle_list: list[int] | None = None
        self._idle_array = self._idle_since = np.empty(0, dtype=np.intp)
        #: each node's ``nodes`` and ``amounts`` arrays for its off holds (read-only)
        self._hold_arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._slotted = bool((table.slots >= 1).all())
        #: each node's VM slots, as Python numbers, and their one number if it is the same
        #: for every node (None: not)
        self._slots: list[int] = table.slots.tolist()
        self._same_slots = self._slots[0] if self._slots and len(set(self._slots)) == 1 \
            else None
        self.now = origin
        #: the table's version when the step's plans began (-1: plan the boots again)
        self._settled = -1
        if initially_off:
            for node in range(n):
                self._go_off(node, origin, switching=False)
                self._wait(node)
            self._plan_boots(origin)
            self._publish()

    # ------------------------------------------------------------------------ the steps
    def before_step(self, now: float) -> None:
        """Nodes whose boot is over are on; boots not begun are cancelled (planned again after
        the step); every off node without a boot is held until a boot begun now could end."""
        self.now = now
        table = self.table
        cancelled = False
        boot = self._boot
        if boot:
            on_seconds, holds, off_from = self._on_seconds, self._hold, self._off_from
            cancel: dict[tuple[float, float, float], list[int]] = {}
            for node, start in list(boot.items()):
                ton = on_seconds[node]
                if start + ton <= now:
                    self._come_on(node, start + ton)
                elif start > now:
                    del boot[node]
                    hold = holds[node]
                    assert hold is not None
                    rolling = max(off_from[node], now) + ton
                    key = (hold.end, rolling, ton)
                    nodes = cancel.get(key)
                    if nodes is None:
                        cancel[key] = [node]
                    else:
                        nodes.append(node)
            for (_, rolling, ton), nodes in cancel.items():
                cancelled_holds = [holds[node] for node in nodes]
                table.move_group_end(cancelled_holds, rolling)  # type: ignore[arg-type]
                self._wait_group(nodes, cancelled_holds, rolling, ton)  # type: ignore[arg-type]
                cancelled = True
        waiting = self._waiting
        for key in [key for key in waiting if key[0] < now + key[1]]:
            ton = key[1]
            group = waiting.pop(key)
            table.move_group_end(list(group.values()), now + ton, rolling=True)
            waiting.setdefault((now + ton, ton, key[2]), {}).update(group)
        self._settled = -1 if cancelled else table.version
        self._publish()

    def after_step(self, now: float) -> None:
        """Plan the boots the plans need; let the policy switch idle nodes off."""
        if self._waiting and self.table.version != self._settled:
            self._plan_boots(now)
        if self.policy.switches_off:
            self._switch_off_idle(now)
        self._publish()

    def next_wake(self) -> float:
        """The next time the policy wants to look at idle nodes (inf: none)."""
        return self._checks[0] if self._checks else math.inf

    def _publish(self) -> None:
        # (the largest key has the latest end: ends come first in a key)
        self.boot_until = max(self._waiting)[0] if self._waiting else -math.inf

    # ---------------------------------------------------------------------- mechanisms
    def _wait(self, node: int) -> None:
        """``node`` (off, held) waits with no boot."""
        self._wait_all((node,))

    def _wait_group(self, nodes: list[int], holds: list[Reservation], end: float,
                    ton: float) -> None:
        """:meth:`_wait_all` for ``nodes`` whose ``holds`` all end at ``end``, booting in
        ``ton`` seconds."""
        if self._same_slots is None:
            self._wait_all(nodes)
            return
        key = (end, ton, self._same_slots)
        group = self._waiting.get(key)
        if group is None:
            self._waiting[key] = dict(zip(nodes, holds))
        else:
            group.update(zip(nodes, holds))
        self.bootable.update(dict.fromkeys(nodes, end))

    def _wait_all(self, nodes: Iterable[int]) -> None:
        """Each of ``nodes`` (off, held) waits with no boot."""
        holds, on_seconds, slots = self._hold, self._on_seconds, self._slots
        waiting, bootable = self._waiting, self.bootable
        for node in nodes:
            hold = holds[node]
            if hold is None:
                continue
            key = (hold.end, on_seconds[node], slots[node])
            group = waiting.get(key)
            if group is None:
                waiting[key] = {node: hold}
            else:
                group[node] = hold
            bootable[node] = hold.end

    def _go_off(self, node: int, now: float, *, switching: bool = True) -> None:
        """Switch ``node`` off now (shutting down first unless ``switching`` is False)."""
        table = self.table
        off_from = now + (self._off_seconds[node] if switching else 0.0)
        self._down[node] = now
        self._off_from[node] = off_from
        slots = self._slots[node]
        hold = None
        if slots > 0:
            arrays = self._hold_arrays.get(node)
            if arrays is None:
                arrays = self._hold_arrays[node] = (np.array([node]),
                                                    (table.vector * slots)[None, :])
                for array in arrays:
                    array.flags.writeable = False
            hold = Reservation(None, now, off_from + self._on_seconds[node], *arrays,
                               kind=K.OFF, vm_nodes=(node,) * slots, vm_shape=table.shape_key)
            table.add(hold)
            table.keep_held(hold)
        self._hold[node] = hold
        self._on[node] = False
        self.idle_since[node] = math.nan
        self._idle.discard(node)
        self._idle_list = None
        if switching and self._enactment is not None:
            self._enactment.power_off(node, now)

    def _come_on(self, node: int, end: float) -> None:
        """``node``'s boot ended at ``end``: keep its intervals, mark it on."""
        down, off_from, boot = self._down.pop(node), self._off_from.pop(node), \
            self._boot.pop(node)
        del self._hold[node]
        records = self._records[node]
        if off_from > down:
            records.append((SWITCHING_OFF, down, off_from))
        if boot > off_from:
            records.append((OFF, off_from, boot))
        if end > boot:
            records.append((SWITCHING_ON, boot, end))
        self._on[node] = True

    def _boots(self, nodes: list[int], end: float, now: float,
               ton: float | None = None) -> None:
        """Boot ``nodes`` (off, held, with no boot) so that they are on at ``end`` (``ton``:
        the boot time of every one of them, if known)."""
        held, bootable = self._hold, self.bootable
        holds = [held[node] for node in nodes]
        for node in nodes:
            bootable.pop(node, None)
        self.table.move_group_end(holds, end, final=True)  # type: ignore[arg-type]
        boot, on_seconds = self._boot, self._on_seconds
        enacted = self._enactment is not None and self._call_at is not None
        if ton is not None and not enacted:
            boot.update(dict.fromkeys(nodes, end - ton))
            return
        for node in nodes:
            start = end - on_seconds[node]
            boot[node] = start
            if enacted:
                assert self._enactment is not None and self._call_at is not None
                if start <= now:
                    self._enactment.power_on(node, now)
                else:
                    self._call_at(start, functools.partial(self._boot_starts, node, start))

    def _boot_starts(self, node: int, start: float, now: float) -> None:
        """A planned boot's start: switch the node on, unless it was cancelled since."""
        if self._boot.get(node) == start and self._enactment is not None:
            self._enactment.power_on(node, now)

    def _plan_boots(self, now: float) -> None:
        """Boot the off nodes the plans need, each as late as they allow, the lowest nodes
        first (see the module): a group of nodes held until one time at once."""
        waiting = self._waiting
        need_times = self.table.need_times
        left = 0   # slots of the nodes left off so far (all free from before the next group)
        for key in sorted(waiting):
            end, _, slots = key
            group = waiting[key]
            needs = need_times(end, len(group), left, slots)
            left += slots * (len(group) - len(needs))
            if not needs:
                continue
            chosen = sorted(group)[:len(needs)]
            for node in chosen:
                del group[node]
            at = 0
            while at < len(chosen):   # (needs are sorted: the nodes of each time in a row)
                need, till = needs[at], at + 1
                while till < len(chosen) and needs[till] == need:
                    till += 1
                self._boots(chosen[at:till], need, now, key[1])
                at = till
            if not group:
                del waiting[key]

    def _first_need(self, after: float, left: list[float], slots: int = 1) -> float:
        """The first time from ``after`` on at which the profile, without the slots of the
        nodes left off (one free from each time of ``left``, sorted), has fewer than
        ``slots`` free slots: a node of ``slots`` slots is needed then."""
        table = self.table
        if not left or left[-1] <= after:
            return table.first_short(after, len(left) + slots)
        times, room = table.profile_lists(after)
        times[0] = after
        gone, n = bisect_right(left, after), len(left)   # left[:gone]: off until then
        for t, r in zip(times, room):
            while gone < n and left[gone] <= t:
                gone += 1
            if r - gone < slots:
                return t
        return math.inf

    def _idle_nodes(self, now: float) -> np.ndarray:
        """The nodes on and holding nothing now, their ``idle_since`` brought up to date (and
        the policy's next look asked for, if some just became idle)."""
        table = self.table
        since = self.idle_since
        if table.one_per_node and self._slotted:
            # the free nodes are exactly the idle ones (a node not on is held): follow the
            # changes of that list instead of recomputing every node's state (nothing to do
            # while it is the list of the last look, and no node went off since)
            free = table.free_nodes()
            if free != self._idle_list:
                current = set(free)
                known = self._idle
                gone, fresh = known - current, current - known
                for node in gone:   # (a few: one by one costs less than an index array)
                    since[node] = math.nan
                self._idle = current
                self._idle_list = list(free)
                idle = np.array(free, dtype=np.intp)   # (the list is sorted)
                if fresh:
                    for node in fresh:
                        since[node] = now
                    self._look_again(now)
                self._set_idle(idle)
            self._drop_checks(now)
            return self._idle_array
        busy = table.lease_counts_at(now) > 0
        since[busy | ~self._on] = math.nan
        fresh_nodes = ~busy & self._on & np.isnan(since)
        if fresh_nodes.any():
            since[fresh_nodes] = now
            self._look_again(now)
        self._drop_checks(now)
        self._set_idle(np.flatnonzero(~np.isnan(since)))
        return self._idle_array

    def _set_idle(self, idle: np.ndarray) -> None:
        """Keep ``idle`` and their ``idle_since`` (read-only: the policy is given them)."""
        self._idle_array, self._idle_since = idle, self.idle_since[idle]
        idle.flags.writeable = self._idle_since.flags.writeable = False

    def _look_again(self, now: float) -> None:
        check = self.policy.next_check(now)
        if check is not None and check > now:
            heapq.heappush(self._checks, check)

    def _drop_checks(self, now: float) -> None:
        """Forget the looks asked for until ``now``."""
        checks = self._checks
        while checks and checks[0] <= now:
            heapq.heappop(checks)

    def _switch_off_idle(self, now: float) -> None:
        since = self.idle_since
        idle = self._idle_nodes(now)
        if idle.size == 0:
            return
        left: list[float] | None = None   # the ends of the nodes left off, sorted
        for node in self.policy.switch_off(idle, self._idle_since, now):
            node = int(node)
            if np.isnan(since[node]):
                raise ValueError(f"the node-power policy switched off node {node}, which is "
                                 f"not idle")
            if left is None:
                left = sorted(key[0] for key, group in self._waiting.items()
                              for _ in range(key[2] * len(group)))
            off, on = self._off_seconds[node], self._on_seconds[node]
            slots = self._slots[node]
            needed = self._first_need(now, left, slots) if slots > 0 else math.inf
            if needed < now + off + on or self.policy.stays_on(now, needed, off, on):
                continue   # its slot is needed sooner than it could come back
            self._go_off(node, now)
            hold = self._hold[node]
            if hold is None:
                continue
            need = self._first_need(hold.end, left, slots)
            if math.isinf(need):
                for _ in range(slots):
                    insort(left, hold.end)
                self._wait(node)
            else:
                self._boots([node], need, now)

    # ------------------------------------------------------------------------- results
    def intervals(self, start: float, end: float) -> Iterator[tuple[int, str, float, float]]:
        """Every node's state intervals ``(node, state, from, to)`` tiling ``[start, end]``,
        in node and time order (``on`` wherever the node is in no other state)."""
        for node, records in enumerate(self._records):
            spans = list(records)
            if node in self._down:
                down, off_from = self._down[node], self._off_from[node]
                hold = self._hold[node]
                boot = self._boot.get(node)
                last = (boot + self._on_seconds[node] if boot is not None
                        else hold.end if hold is not None
                        else max(off_from, self.now) + self._on_seconds[node])
                boot_start = boot if boot is not None else last
                spans += [(SWITCHING_OFF, down, off_from), (OFF, off_from, boot_start),
                          (SWITCHING_ON, boot_start, last)]
            t = start
            for state, a0, b0 in spans:
                a, b = max(a0, start), min(b0, end)
                if b <= a:
                    continue
                if a > t:
                    yield node, "on", t, a
                yield node, state, a, b
                t = b
            if end > t:
                yield node, "on", t, end
