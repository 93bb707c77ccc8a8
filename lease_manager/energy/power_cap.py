"""The power envelope (``[power] power-cap``): no plan may make the site's IT power exceed it.

The cap is a site-wide resource of the slot table, ``power``, whose capacity over time is the
cap minus what every node draws when it is off (``off-watts``): a node never draws less. On
top of that baseline, what draws power is held in the table like any other resource:

- a lease's reservations draw its dynamic power, ``share x (full[level] - idle)`` on each of
  its nodes (counted as 0 on a node where that is negative, so the table never holds less
  than is drawn);
- a boot draws ``switch-on`` watts minus ``off-watts`` over its seconds, a shutdown likewise;
- a node that is on, or will be once its planned boot is over, draws its idle power minus
  ``off-watts``: a *power hold* (a reservation of that power alone, no cores) from when it is
  on until the node-power policy would switch it off, followed by a hold for its shutdown.
  With ``always-on`` the hold never ends; with ``switch-off-idle`` it ends ``idle-timeout``
  after the last lease planned on the node, and moves as plans change.

A lease is placed only where the table has room for its own power and for what it implies:
booting the nodes it needs and keeping them on until the policy switches them off
(:meth:`PowerCap.admits`). Under a cap a node is switched off only when no lease is planned
on it, so a node's on-time is one hold from boot to shutdown; without a cap a node may also
be switched off between two planned leases.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.energy.lease_power import lease_watts, vms_per_node
from lease_manager.errors import OvercommitError
from lease_manager.kernel.fitting import EPS
from lease_manager.kernel.reservation import POWER_KINDS, Reservation, ReservationKind

if TYPE_CHECKING:
    from lease_manager.energy.node_states import NodePowerStates
    from lease_manager.energy.series import StepSeries
    from lease_manager.kernel.lease import Lease

K = ReservationKind
#: the site-wide resource of the slot table that carries the cap
POWER = "power"


class _Touched:
    """Records touched nodes into several sets (the slot table's ``touched``)."""

    def __init__(self, *sets: set[int]) -> None:
        self.sets = sets

    def update(self, nodes: Iterable[int]) -> None:
        nodes = list(nodes)
        for s in self.sets:
            s.update(nodes)


class PowerCap:
    """Keeps a site's power cap in its slot table (see the module docstring)."""

    def __init__(self, states: NodePowerStates, cap: StepSeries, origin: float) -> None:
        self.states = states
        self.table = table = states.table
        self.cap = cap
        model = self.model = states.model
        self._cpus = table.capacity[:, model.cpu]
        off = model.off_watts
        self._static = np.maximum(model.idle - off, 0.0)
        self._boot_watts = np.maximum(model.on_watts - off, 0.0)
        self._down_watts = np.maximum(model.off_switch_watts - off, 0.0)
        self.baseline = float(off.sum())
        self.index = table.add_site_resource(POWER, 0.0)
        steps = [(max(float(t), origin), float(v) - self.baseline)
                 for t, v in zip(cap.times, cap.values)]
        live = [(t, v) for (t, v), nxt in zip(steps, [*cap.times[1:].tolist(), math.inf])
                if nxt > origin]
        low = min(live, key=lambda step: step[1])
        if low[1] < -EPS:
            raise ValueError(f"the cap ({low[1] + self.baseline:g} W from {low[0]:g} s) is "
                             f"below what the nodes draw when off ({self.baseline:g} W)")
        table.set_site_capacity(POWER, [(t, max(v, 0.0)) for t, v in live])
        table.site_draw = self.draw
        #: each node's power hold while it is on, and its planned shutdown's
        self._hold: dict[int, Reservation] = {}
        self._down: dict[int, Reservation] = {}
        self._dirty: set[int] = set()
        table.touched = _Touched(states.touched_nodes, self._dirty)
        self._last_ends: dict[int, float] = {}
        self._view_key: tuple[int, float] | None = None
        self._view: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = (
            np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
        self._last_version = -1
        #: plans that could not be given their power (reported as invariant violations)
        self.unhonoured: list[str] = []

    def start(self, now: float) -> None:
        """Hold the power of the nodes that are on when the run starts."""
        for node in range(len(self._static)):
            if node not in self.states.off_nodes:
                self._set_hold(node, now, first=True)
        if self.unhonoured:
            raise ValueError(f"the cap cannot hold the nodes that are on at the start: "
                             f"{self.unhonoured[0]} (start them off: initial-state = off)")

    # ------------------------------------------------------------------- what draws power
    def draw(self, res: Reservation) -> np.ndarray:
        """What ``res`` draws from the site-wide resources (power at :attr:`index`)."""
        out = np.zeros(len(self.table.site_resources))
        nodes = res.nodes
        if res.kind is K.SWITCHING_ON:
            out[self.index] = self._boot_watts[nodes].sum()
        elif res.kind is K.SWITCHING_OFF:
            out[self.index] = self._down_watts[nodes].sum()
        elif res.kind not in POWER_KINDS and res.lease is not None:
            out[self.index] = self.dynamic(res)
        return out

    def dynamic(self, res: Reservation) -> float:
        """A lease reservation's dynamic power (negative parts counted as 0): its own
        ``watts`` per VM if it has them, else its CPU share of full minus idle power."""
        model = self.model
        lease = res.lease
        watts = None if lease is None else lease_watts(lease)
        if watts is not None:
            return float(watts * vms_per_node(res).sum())
        level = model.top_level if lease is None or lease.level is None else lease.level
        nodes = res.nodes
        share = res.amounts[:, model.cpu] / self._cpus[nodes]
        return float(np.maximum(share * (model.full[nodes, level] - model.idle[nodes]),
                                0.0).sum())

    # ------------------------------------------------------------------------- planning
    def _last_use(self, node: int, extra_end: float = -math.inf) -> float:
        """When the node was last needed: the end of the last lease planned on it (or of
        ``extra_end``), else when it went idle."""
        table = self.table
        if self._last_version != table.version:
            self._last_version = table.version
            self._last_ends.clear()
        last = self._last_ends.get(node)
        if last is None:
            last = max((r.end for r in table.reservations_between(table.horizon, math.inf,
                                                                  node)
                        if r.lease is not None and r.kind not in POWER_KINDS),
                       default=-math.inf)
            self._last_ends[node] = last
        last = max(last, extra_end)
        if math.isinf(last):
            since = self.states.idle_since[node]
            if not np.isnan(since):
                last = float(since)
        return last

    def _on_until(self, last: float, now: float) -> float:
        """Until when the policy keeps a node on, if nothing is planned on it after
        ``last``."""
        policy = self.states.policy
        if not policy.switches_off:
            return math.inf
        until = policy.next_check(last)
        if until is None:
            return math.inf
        if until <= now:
            later = policy.next_check(now)
            until = math.inf if later is None else max(later, now)
        return until

    def _on_from(self, node: int, now: float) -> float | None:
        """When ``node`` is (or will be) on, or None if it is off with no boot planned."""
        if node not in self.states.off_nodes:
            hold = self._hold.get(node)
            return hold.start if hold is not None else now
        boot = self.states.boots.get(node)
        return None if boot is None else boot.end

    @property
    def boot_seconds(self) -> float:
        """How long the site's slowest node takes to boot."""
        return float(self.model.on_seconds.max())

    def least_draw(self, lease: Lease) -> np.ndarray:
        """The least ``lease``'s reservations draw from the site-wide resources (its dynamic
        power on the most frugal nodes), to skip times the cap leaves too little room."""
        model = self.model
        out = np.zeros(len(self.table.site_resources))
        watts = lease_watts(lease)
        if watts is not None:
            out[self.index] = watts * lease.vms.count * (1 - 1e-9)
            return out
        level = model.top_level if lease.level is None else lease.level
        per_cpu = np.maximum(model.full[:, level] - model.idle, 0.0) / self._cpus
        out[self.index] = float(lease.vms.total[model.cpu]) * float(per_cpu.min()) * (1 - 1e-9)
        return out

    def refuses(self, lease: Lease) -> str | None:
        """Why ``lease`` can never run under the cap (None if it might): its dynamic power on
        the most frugal nodes, plus the idle power of as few nodes as could host it (less
        those on for good), is above the cap's largest value less what the nodes on for good
        draw."""
        forever = [n for n, hold in self._hold.items() if math.isinf(hold.end)]
        fewest = math.ceil(float(lease.vms.total[self.model.cpu]) / float(self._cpus.max())
                           - 1e-9)
        need = (float(self.least_draw(lease)[self.index])
                + max(fewest - len(forever), 0) * float(self._static.min()))
        room = self.cap.values - self.baseline - float(self._static[forever].sum())
        if need > room.max() + EPS:
            return (f"the power cap never has room for it: it needs {need:g} W and at most "
                    f"{max(float(room.max()), 0):g} W are ever left")
        length = lease.requested_duration * lease.stretch
        if self._longest_room(room, need) < length:
            return "the power cap never leaves it room for as long as it runs"
        return None

    def _longest_room(self, room: np.ndarray, need: float) -> float:
        """The longest stretch of time over which ``room`` (per cap step) stays at least
        ``need`` (inf if it does from some time on)."""
        enough = room >= need - EPS
        if enough[-1]:
            return math.inf
        spans = np.diff(self.cap.times)
        best = run = 0.0
        for ok, span in zip(enough[:-1].tolist(), spans.tolist()):
            run = run + span if ok else 0.0
            best = max(best, run)
        return best

    def _node_view(self, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray]:
        """Per node: when it is (or will be) on (nan: off, no boot planned), until when its
        power is held, and its planned boot's start and end (nan: none to come). Cached
        while the table does not change."""
        key = (self.table.version, now)
        if self._view_key != key:
            n = len(self._static)
            on_from = np.full(n, float(now))
            held = np.full(n, float(now))
            boot_start = np.full(n, math.nan)
            boot_end = np.full(n, math.nan)
            states = self.states
            off = list(states.off_nodes)
            on_from[off] = math.nan
            for node, boot in states.boots.items():
                on_from[node] = held[node] = boot.end
                if boot.start > now:
                    boot_start[node], boot_end[node] = boot.start, boot.end
            for node, hold in self._hold.items():
                on_from[node], held[node] = hold.start, max(hold.end, held[node])
            self._view = (on_from, held, boot_start, boot_end)
            self._view_key = key
        return self._view

    def admits(self, plan: Sequence[Reservation]) -> bool:
        """Would the table have room for ``plan`` (a lease's reservations, not in the table)
        and for booting its nodes and keeping them on as the policy would?

        Its nodes' holds already cover what is planned on them, so the plan needs more only
        where it ends later: until the policy would switch them off after its end. What the
        plan would give back (a boot or a shutdown that moves) is not counted: the plan is put
        in the table before its nodes' holds are brought up to date."""
        table = self.table
        spans = [(res.start, res.end, self.dynamic(res)) for res in plan]
        if table.site_room(spans, self.index) < -EPS:
            return False
        now = self.states.now
        start, end = plan[0].start, plan[-1].end
        until = self._on_until(end, now)
        nodes = np.unique(np.concatenate([res.nodes for res in plan]))
        on_from, held, boot_start, boot_end = (a[nodes] for a in self._node_view(now))
        static, boot_w = self._static[nodes], self._boot_watts[nodes]
        on_s, off_s, down_w = (self.model.on_seconds[nodes], self.model.off_seconds[nodes],
                               self._down_watts[nodes])
        off = np.isnan(on_from)
        # a node that is off boots for the plan; one whose boot comes later boots earlier
        boots = off | (boot_start > now) & (start < boot_end)
        held = np.where(off, start, held)
        starts = [start - on_s[boots], np.full(int(boots.sum()), start)]
        ends = [np.full(int(boots.sum()), start), np.where(off, start, boot_end)[boots]]
        watts = [boot_w[boots], np.where(off[boots], 0.0, static[boots])]
        longer = held < until
        starts.append(held[longer])
        ends.append(np.full(int(longer.sum()), until))
        watts.append(static[longer])
        if not math.isinf(until):
            starts.append(np.full(int(longer.sum()), until))
            ends.append(until + off_s[longer])
            watts.append(down_w[longer])
        a, b, w = np.concatenate(starts), np.concatenate(ends), np.concatenate(watts)
        keep = (b > a) & (w > 0)
        if not keep.any():
            return True
        spans += zip(a[keep].tolist(), b[keep].tolist(), w[keep].tolist())
        return table.site_room(spans, self.index) >= -EPS

    # ------------------------------------------------------------------- keeping holds
    def sync(self, now: float) -> None:
        """Bring the boots and power holds of the nodes whose plans changed up to date."""
        for _ in range(3):   # a boot planned here touches its node once more
            if not self._dirty:
                return
            nodes = sorted(self._dirty)
            self._dirty.clear()
            states = self.states
            for node in nodes:
                boot = states.boots.get(node)
                if node in states.off_nodes and (boot is None or boot.start > now):
                    try:
                        states.follow_plan(node, now)
                    except OvercommitError as exc:
                        self._unhonoured(node, now, str(exc))
                self._set_hold(node, now)

    def _set_hold(self, node: int, now: float, first: bool = False) -> None:
        """Make ``node``'s power hold cover it until the policy would switch it off, with
        its shutdown after. Holds only grow (a node's hold is cut when it switches off, and
        when a boot planned for it moves or goes away): a plan that ends early keeps the power
        held until its planned end, which never puts the table above the cap."""
        table = self.table
        hold, down = self._hold.get(node), self._down.get(node)
        if hold is not None and hold not in table:     # it ended: advance() forgot it
            del self._hold[node]
            hold = None
        if down is not None and down not in table:
            del self._down[node]
            down = None
        on_from = self._on_from(node, now)
        if on_from is None or (hold is not None and hold.start > now
                               and hold.start != on_from):   # off, or its boot moved
            self._end_hold(node, now)
            hold = down = None
            if on_from is None:
                return
        start = hold.start if hold is not None else max(on_from, now)
        until = self._on_until(self._last_use(node, start if first else -math.inf), now)
        if until <= (hold.end if hold is not None else start):
            return
        try:
            if hold is None:
                hold = self._power_hold(start, until, float(self._static[node]))
                table.add(hold)
                self._hold[node] = hold
            else:
                table.extend(hold, until)
            if down is not None:
                table.remove(down)
                del self._down[node]
            off_seconds = float(self.model.off_seconds[node])
            if not math.isinf(until) and off_seconds > 0 and self._down_watts[node] > 0:
                down = self._power_hold(until, until + off_seconds,
                                        float(self._down_watts[node]))
                table.add(down)
                self._down[node] = down
        except OvercommitError as exc:
            self._unhonoured(node, now, str(exc))

    def _power_hold(self, start: float, end: float, watts: float) -> Reservation:
        table = self.table
        amount = np.zeros(len(table.site_resources))
        amount[self.index] = watts
        return Reservation(None, start, end, np.zeros(0, dtype=np.intp),
                           np.zeros((0, table.capacity.shape[1])), amount, K.POWER_HOLD)

    def _end_hold(self, node: int, now: float) -> None:
        """``node`` stops being on at ``now``: end its holds there."""
        hold = self._hold.pop(node, None)
        if hold is not None and hold in self.table:
            if hold.start >= now:
                self.table.remove(hold)
            elif hold.end > now:
                self.table.truncate(hold, now)
        down = self._down.pop(node, None)
        if down is not None and down in self.table:
            self.table.remove(down)

    def switch_off(self, node: int, now: float) -> bool:
        """Switch ``node`` off at ``now`` if the cap has room for its shutdown there (its
        power hold ends at ``now``); if not, nothing changes, the node stays on and is looked
        at again when its hold ends, where its shutdown was planned."""
        table = self.table
        hold, down = self._hold.get(node), self._down.get(node)
        hold_end = hold.end if hold is not None else now
        if hold is not None and hold not in table:
            hold = None
        if down is not None and down not in table:
            down = None
        self._end_hold(node, now)
        try:
            self.states.switch_off(node, now)
        except OvercommitError:   # put the holds back as they were
            if hold is not None:
                if hold in table:
                    table.extend(hold, hold_end)
                else:
                    hold.end = hold_end
                    table.add(hold)
                self._hold[node] = hold
            if down is not None:
                table.add(down)
                self._down[node] = down
            if not math.isinf(hold_end):
                self.states.check_at(hold_end)
            return False
        self._hold.pop(node, None)
        self._down.pop(node, None)
        return True

    def _unhonoured(self, node: int, now: float, why: str) -> None:
        self.unhonoured.append(f"at {now:g} s, node {node}: {why}")

    def cap_at(self, times: np.ndarray) -> np.ndarray:
        """The cap (W) at each of ``times``."""
        return self.cap.at(times)

    def next_wake(self, now: float) -> float:
        """The next time the cap grows (queued leases may fit then)."""
        later = self.cap.times[self.cap.times > now]
        return float(later[0]) if len(later) else math.inf
