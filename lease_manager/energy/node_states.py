"""Node power states as slot-table reservations: off, switching on, switching off.

A node is **on** whenever no power-state reservation holds it. A power-state reservation
holds the node's whole capacity, so no lease can be planned on a node while it is off or
switching. How the states are kept in the table:

- Switched off at ``t``: *switching off* ``[t, t + Toff)``, then *off*.
- An off node is held *off* until ``max(off start, now) + Ton``, extended at every step
  (:meth:`NodePowerStates.before_step`): the earliest-fit search plans a lease on an off node
  no earlier than a boot started now would allow, and prefers nodes that are on when they are
  free as early. A lease that waits only for such a boot counts as starting now, not as a
  future reservation (the scheduler's ``bootable`` nodes).
- Once a lease is planned on an off node at ``s`` (:meth:`NodePowerStates.after_step`, in the
  same step), the node is *switching on* over ``[s - Ton, s)``; before that it stays off
  (the table holds it only as far as the rolling ``now + Ton``, so a shorter lease may still
  be planned on it in between, which moves the boot earlier). If the plan goes away or moves
  before the boot starts, the boot is cancelled or moved with it. When re-evaluation tries
  to move a plan earlier, the boots planned for it are out of the table meanwhile (its nodes
  held off only as far as ``now + Ton``): they would otherwise sit inside every earlier slot
  of a plan longer than the gap to them, and keep it where it is (issue 38).
- After each step the node-power policy may switch off idle nodes; the core does so only
  when no lease is planned on the node before ``now + Toff + Ton``.

The nodes' state intervals are kept (:meth:`NodePowerStates.intervals`) for the energy
accounting and ``node_states.csv``. Batsim differs: there a scheduler asks for each switch
explicitly; here a node is booted for whatever plan needs it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, KeysView, Mapping
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.energy.power_cap import PowerCap
from lease_manager.kernel.reservation import POWER_KINDS, Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.energy.series import StepSeries
    from lease_manager.kernel.scheduler import Enactment
    from lease_manager.kernel.table_protocol import PlannedTable
    from lease_manager.policies import NodePowerPolicy

K = ReservationKind


class NodePowerStates:
    """Keeps every node's power state in the slot table, driven by the engine's steps."""

    def __init__(self, table: PlannedTable, model: PowerModel, policy: NodePowerPolicy, *,
                 origin: float, initially_off: bool,
                 enactment: Enactment | None = None,
                 call_at: Callable[[float, Callable[[float], None]], None] | None = None,
                 cap: StepSeries | None = None) -> None:
        self.table = table
        #: told when a node starts shutting down or booting (real time), with ``call_at`` to
        #: be woken when a planned boot starts
        self._enactment = enactment if enactment is not None and enactment.power_calls else None
        self._call_at = call_at
        #: nodes that are off with no boot planned, and the earliest start on each (the
        #: scheduler's ``bootable``: one dict, changed in place)
        self.bootable: dict[int, float] = {}
        #: the latest of those starts (-inf: none), as of the last step
        self.boot_until = -math.inf
        self.model = model
        self.policy = policy
        n = table.capacity.shape[0]
        #: every power-state reservation each node has had (start and end as they turned out)
        self._records: list[list[Reservation]] = [[] for _ in range(n)]
        #: the OFF reservation of each node that is off (or will be), by node
        self._off: dict[int, Reservation] = {}
        #: the planned or running boot of each node whose boot is pinned, by node
        self._boot: dict[int, Reservation] = {}
        #: the nodes that are off: shutting down, off, or booting until their boot is over
        #: (a read-only view, kept up to date)
        self.off_nodes: KeysView[int] = self._off.keys()
        #: each node's boot, planned or under way, by node (read-only: a ``Mapping`` of the
        #: states' own, kept up to date; no proxy, as the cap reads it per node and step)
        self.boots: Mapping[int, Reservation] = self._boot
        #: nodes on and holding nothing, and since when (nan: not idle)
        self.idle_since = np.full(n, math.nan)
        self._on = np.ones(n, dtype=bool)
        self._checks: set[float] = set()
        self._touched: set[int] = set()
        table.touched = self._touched
        #: the time of the current step
        self.now = origin
        #: the power envelope, if the site has one (it watches the table's changes too)
        self.cap = PowerCap(self, cap, origin) if cap is not None else None
        if initially_off:
            for node in range(n):
                self._go_off(node, origin, origin, switching=False)
        if self.cap is not None:
            self.cap.start(origin)

    # ------------------------------------------------------------------------ the steps
    def before_step(self, now: float) -> None:
        """Keep every off node held until a boot started now could end (or its planned boot
        starts, if that is sooner)."""
        self.now = now
        on_seconds = self.model.on_seconds
        together: dict[tuple[float, float], list[Reservation]] = {}
        for node, off in self._off.items():
            boot = self._boot.get(node)
            until = max(off.start, now) + on_seconds[node]
            if boot is not None:
                until = min(until, boot.start)
            if off.end > off.start and until > off.end:   # the usual case: one extension
                together.setdefault((off.end, until), []).append(off)
            else:
                self._hold_until(off, until)
        for (_, until), group in together.items():
            self.table.extend_all(group, until)
        for node, off in self._off.items():
            boot = self._boot.get(node)
            if boot is None or boot.start > now:
                self.bootable[node] = off.end
        self._publish()
        self._touched.clear()

    def _publish(self) -> None:
        self.boot_until = max(self.bootable.values(), default=-math.inf)

    def after_step(self, now: float) -> None:
        """Plan, move or cancel boots for the plans made in this step; finish boots that are
        over; let the policy switch idle nodes off."""
        if self._off:
            # only nodes whose reservations changed in this step can have a new plan
            touched = self._touched
            for node in [n for n in self._off if n in touched or n in self._boot]:
                self.follow_plan(node, now)
        if self.policy.switches_off:
            self._switch_off_idle(now)
        if self.cap is not None:
            self.cap.sync(now)
        self._publish()

    def next_wake(self) -> float:
        """The next time the policy wants to look at idle nodes (inf: none); the engine steps
        then only while something else is still to come."""
        wake = min(self._checks, default=math.inf)
        return wake if self.cap is None else min(wake, self.cap.next_wake(self.now))

    # ---------------------------------------------------------------------- mechanisms
    def _go_off(self, node: int, t: float, now: float, *, switching: bool = True) -> None:
        """Switch ``node`` off from ``t`` (shutting down first unless ``switching`` is False)."""
        full = self.table.capacity[node][None, :]
        nodes = np.array([node])
        start = t
        if switching and self.model.off_seconds[node] > 0:
            down = Reservation(None, t, t + self.model.off_seconds[node], nodes, full,
                               kind=K.SWITCHING_OFF)
            self.table.add(down)
            self._records[node].append(down)
            start = down.end
        off = Reservation(None, start, max(start, now) + self.model.on_seconds[node], nodes,
                          full, kind=K.OFF)
        self.table.add(off)
        self._records[node].append(off)
        self._off[node] = off
        self._on[node] = False
        self.idle_since[node] = math.nan
        if switching and self._enactment is not None:
            self._enactment.power_off(node, t)
        self.follow_plan(node, now)

    def follow_plan(self, node: int, now: float) -> None:
        """Boot ``node``, which is off (:attr:`off_nodes`), in time for the first lease
        planned on it (moving or cancelling a boot planned for a plan that changed); mark it
        on once its boot is over. The table raises
        :class:`~lease_manager.errors.OvercommitError` if a boot does not fit (under a cap)."""
        off = self._off[node]
        boot = self._boot.get(node)
        if boot is not None and boot.start <= now:     # booting, or booted
            if boot.end <= now:
                del self._off[node], self._boot[node]
                self._on[node] = True
            self.bootable.pop(node, None)
            return
        first = self.table.next_start_on(node, off.start, POWER_KINDS)
        if boot is not None:
            if first == boot.end:
                return
            self.table.remove(boot)            # the plan it was for moved or went away
            self._records[node].remove(boot)
            del self._boot[node]
        boot_start = first - self.model.on_seconds[node]
        self._hold_until(off, min(max(off.start, now) + self.model.on_seconds[node],
                                  boot_start))
        if not math.isinf(first):
            boot = Reservation(None, boot_start, first, off.nodes, off.amounts,
                               kind=K.SWITCHING_ON)
            self.table.add(boot)
            self._boot[node] = boot
            self._records[node].append(boot)
            if self._enactment is not None and self._call_at is not None:
                self._call_at(boot.start, functools.partial(self._boot_starts, node, boot))
        self.bootable[node] = off.end

    # ------------------------------------------------------------ what the power cap asks
    @property
    def touched_nodes(self) -> set[int]:
        """The nodes whose reservations changed in this step (the table records into it;
        cleared after :meth:`before_step`): a watcher of the table's changes, such as the
        power cap, records into this set as well."""
        return self._touched

    def switch_off(self, node: int, now: float) -> None:
        """Switch ``node`` off at ``now``, shutting down first (the table raises
        :class:`~lease_manager.errors.OvercommitError` if the shutdown does not fit)."""
        self._go_off(node, now, now)

    def check_at(self, time: float) -> None:
        """Wake at ``time`` to look at the idle nodes again (:meth:`next_wake`)."""
        self._checks.add(time)

    # ------------------------------------------------------- boots of a plan that moves
    def own_boots(self, res: Reservation, now: float) -> list[Reservation]:
        """The boots not begun by ``now`` that were planned for ``res`` (each ending at its
        start, on one of its nodes)."""
        if not self._boot:
            return []
        boots = []
        for node in res.nodes.tolist():
            boot = self._boot.get(node)
            if boot is not None and boot.end == res.start and boot.start > now:
                boots.append(boot)
        return boots

    def lift(self, boots: list[Reservation],
             now: float) -> list[tuple[Reservation, float, float]]:
        """Take ``boots`` out of the table, each node held off again only until a boot
        started now could end (as if no plan needed it), so that the plan they were for can
        move earlier; returns the boots with their nodes' old off ends and earliest starts,
        for :meth:`put_back`. After a move, :meth:`after_step` plans the boots the new plan
        needs (its nodes are touched)."""
        lifted = []
        for boot in boots:
            node = int(boot.nodes[0])
            off = self._off[node]
            lifted.append((boot, off.end, self.bootable.get(node, off.end)))
            self.table.remove(boot)
            self._records[node].remove(boot)
            del self._boot[node]
            self._hold_until(off, max(off.start, now) + self.model.on_seconds[node])
            self.bootable[node] = off.end
        if lifted:
            self._publish()
        return lifted

    def put_back(self, lifted: list[tuple[Reservation, float, float]]) -> None:
        """Undo :meth:`lift`: the plan did not move, its boots stay as they were."""
        for boot, off_end, bootable in lifted:
            node = int(boot.nodes[0])
            off = self._off[node]
            self._hold_until(off, off_end)
            self.table.add(boot)
            self._records[node].append(boot)
            self._boot[node] = boot
            self.bootable[node] = bootable
        self._publish()

    def _boot_starts(self, node: int, boot: Reservation, now: float) -> None:
        """A planned boot's start: switch the node on, unless the boot was moved or cancelled
        since it was planned."""
        if self._boot.get(node) is boot and self._enactment is not None:
            self._enactment.power_on(node, now)

    def _hold_until(self, off: Reservation, until: float) -> None:
        """Make ``off`` hold its node until ``until`` (nothing at all if that is not after its
        start: it is then out of the table, with ``end == start``)."""
        if off.end <= off.start:                 # out of the table
            if until > off.start:
                off.end = until
                self.table.add(off)
        elif until > off.end:
            self.table.extend(off, until)
        elif until < off.end:
            if until > off.start:
                self.table.truncate(off, until)
            else:
                self.table.remove(off)
                off.end = off.start

    def _switch_off_idle(self, now: float) -> None:
        busy = self.table.lease_counts_at(now) > 0
        since = self.idle_since
        since[busy | ~self._on] = math.nan
        fresh = ~busy & self._on & np.isnan(since)
        if fresh.any():
            since[fresh] = now
            check = self.policy.next_check(now)
            if check is not None and check > now:
                self._checks.add(check)
        self._checks = {t for t in self._checks if t > now}
        idle = np.flatnonzero(~np.isnan(since))
        if idle.size == 0:
            return
        model = self.model
        for node in self.policy.switch_off(idle, since[idle], now):
            node = int(node)
            if np.isnan(since[node]):
                raise ValueError(f"the node-power policy switched off node {node}, which is "
                                 f"not idle")
            next_start = self.table.next_start_on(node, now)
            if self.cap is not None:
                if not math.isinf(next_start):
                    continue   # under a cap a node stays on until its last planned lease
            elif self.policy.stays_on(now, next_start, float(model.off_seconds[node]),
                                      float(model.on_seconds[node])):
                continue   # a lease is planned on it sooner than it could come back
            if self.cap is not None:
                self.cap.switch_off(node, now)
            else:
                self._go_off(node, now, now)

    # ------------------------------------------------------------------------- results
    def current(self, now: float) -> Iterator[tuple[int, ReservationKind, float, float]]:
        """The power-state reservations ``(node, kind, start, end)`` that hold a node now or
        later (an off node's end moves on with the clock until a boot is planned)."""
        for node, records in enumerate(self._records):
            for res in records[-3:]:       # at most shutting down, off, then booting
                if res.end > now or (res.kind is K.OFF and self._off.get(node) is res):
                    yield node, res.kind, res.start, res.end

    def intervals(self, start: float, end: float) -> Iterator[tuple[int, str, float, float]]:
        """Every node's state intervals ``(node, state, from, to)`` tiling ``[start, end]``,
        in node and time order (``on`` wherever no power state holds the node)."""
        for node, records in enumerate(self._records):
            t = start
            for res in sorted(records, key=lambda r: r.start):
                a, b = max(res.start, start), min(res.end, end)
                if b <= a:
                    continue
                if a > t:
                    yield node, "on", t, a
                yield node, res.kind.value, a, b
                t = b
            if end > t:
                yield node, "on", t, end
