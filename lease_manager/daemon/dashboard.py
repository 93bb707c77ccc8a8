"""What the dashboard shows, built from the live scheduler on the engine thread.

:class:`SiteView` answers the page's one poll (``GET /dashboard/state``): the plan as Gantt
bars (the slot table's reservations, running and ahead, a bar per lease and node, and the
nodes' power states), the queue in order with each lease's reason for waiting, the nodes'
states, counters and, with ``[power]``, the site's power. The plan is sent only when it
changed since the version the page has; each lease's bars are encoded once and kept until its
plan or state changes, so an update costs little even with thousands of leases.
"""

from __future__ import annotations

import collections
import heapq
import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.kernel.lease import Lease, LeaseState, LeaseType
from lease_manager.kernel.reservation import ReservationKind
from lease_manager.kernel.timeutil import format_duration, format_instant

if TYPE_CHECKING:
    from lease_manager.daemon.service import Daemon

K = ReservationKind
S = LeaseState
#: the Gantt's name for each kind of reservation (a VM reservation not started yet is
#: ``reserved``)
BAR_KIND = {K.VM: "run", K.SUSPEND: "suspend", K.RESUME: "resume", K.MIGRATE: "migrate",
            K.TRANSFER: "transfer", K.OFF: "off", K.SWITCHING_ON: "boot",
            K.SWITCHING_OFF: "shutdown"}
#: what a node is doing, by the kind of power-state reservation holding it
NODE_STATE = {K.OFF: "off", K.SWITCHING_ON: "booting", K.SWITCHING_OFF: "shutting down"}
#: how many queued leases the page gets (the total is sent too)
QUEUE_SHOWN = 200
#: how many ended leases keep their bars in the Gantt (the most recent)
RECENT_LEASES = 500
#: the power series covers this much of the past and of the plan ahead (clock seconds)
POWER_PAST = 6 * 3600.0
POWER_AHEAD = 6 * 3600.0


def _when(t: float) -> str:
    """An instant for people: ``2026-11-28 10:44:16 UTC``."""
    text = format_instant(t) or "never"
    return text.replace("T", " ").split(".")[0].removesuffix("Z") + " UTC"


def _t(x: float) -> float | None:
    """A time for JSON: None for an open end."""
    return None if math.isinf(x) or math.isnan(x) else round(x, 3)


class SiteView:
    """The dashboard's view of one daemon (its methods run on the engine thread)."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        #: bumped at every change of a lease's state or plan (:meth:`changed`)
        self.changes = 0
        #: leases whose bars must be encoded again
        self._dirty: set[int] = set()
        #: lease id -> its bars and its description, as JSON text
        self._bars: dict[int, tuple[str, str]] = {}
        #: the leases that ended last, and their bars once encoded (on the first poll)
        self._recent: collections.OrderedDict[int, tuple[Lease, tuple[str, str] | None]] = \
            collections.OrderedDict()
        self._plan_key: str | None = None
        self._plan_json = ""
        self._counts_key = -1
        self._counts: dict[str, int] = {}
        #: the power chart's: each live lease's intervals, the leases to compute again, and
        #: the last profile (its plan version, its end, it, its energy at each step)
        self._intervals: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._power_dirty: set[int] = set()
        self._profile: tuple[str, float, Any, np.ndarray] | None = None

    # ---------------------------------------------------------------------- engine side
    def changed(self, lease: Lease) -> None:
        """``lease``'s state or plan changed (the daemon's observer calls this)."""
        self.changes += 1
        self._dirty.add(lease.id)
        self._power_dirty.add(lease.id)

    def lease_ended(self, lease: Lease) -> None:
        """Keep a lease that ended, or was rejected, if it ran (the Gantt shows the most
        recent ones); forget its bars."""
        self.changes += 1
        self._bars.pop(lease.id, None)
        self._dirty.discard(lease.id)
        self._power_dirty.discard(lease.id)
        if lease.allocations:
            self._recent[lease.id] = (lease, None)
            while len(self._recent) > RECENT_LEASES:
                self._recent.popitem(last=False)

    def state(self, now: float, since: str | None) -> dict[str, Any]:
        """Everything the page shows but the plan, and the plan (as JSON text) when its
        version is not ``since``."""
        run = self.daemon.run
        version = f"{self.changes}.{self._states_key(now)}"
        out: dict[str, Any] = {
            "now": now, "now_text": format_instant(now), "version": version,
            "speedup": getattr(self.daemon.clock, "speedup", 1.0),
            "queue": self.queue(now), "nodes": (nodes := self.nodes(now)),
            "counters": self.counters(now, nodes["state"]),
            "power": self.power(now, version) if run.power is not None else None,
        }
        out["plan"] = None if since == version else self._plan(now, version)
        return out

    def _states_key(self, now: float) -> int:
        """A number that changes when the nodes' power states (as drawn) change: an off
        node's end moves on with the clock until a boot is planned, and is drawn open."""
        states = getattr(self.daemon.run, "node_states", None)
        if states is None:
            return 0
        bootable = self.daemon.run.site_scheduler.bootable
        return hash(tuple((node, start, None if kind is K.OFF and node in bootable else end)
                          for node, kind, start, end in states.current(now)))

    # ------------------------------------------------------------------------ the plan
    def _plan(self, now: float, version: str) -> str:
        """The plan as JSON: ``nodes`` (names), ``leases`` (id -> type, state, and a
        description), ``bars`` (``[lease, node, start, end, kind]``, null for an open end)
        and ``node_bars`` (``[node, start, end, kind]`` of power states)."""
        if self._plan_key == version:
            return self._plan_json
        sched = self.daemon.run.site_scheduler
        live = {**sched.future, **sched.running}
        for lease in (*sched.queue, *sched.held.values()):
            if lease.allocations:        # suspended, or requeued after running a while
                live[lease.id] = lease
        bars = self._bars
        for lease_id in [i for i in bars if i not in live]:
            del bars[lease_id]
        dirty = self._dirty
        for lease_id, lease in live.items():
            if lease_id in dirty or lease_id not in bars:
                bars[lease_id] = self._encode(lease, (*lease.allocations, *lease.reservations),
                                              now)
        dirty.clear()
        recent = self._recent
        for lease_id, (lease, known) in recent.items():
            if known is None:
                recent[lease_id] = (lease, self._encode(lease, lease.allocations, -math.inf))
        encoded = [*(e for _, e in recent.values() if e is not None), *bars.values()]
        names = json.dumps(list(self.daemon.driver.names))
        self._plan_key = version
        self._plan_json = (
            f'{{"nodes":{names},"leases":{{{",".join(e[1] for e in encoded)}}},'
            f'"bars":[{",".join(e[0] for e in encoded if e[0])}],'
            f'"node_bars":{json.dumps(self._power_bars(now), separators=(",", ":"))}}}')
        return self._plan_json

    def _encode(self, lease: Lease, reservations: Any, now: float) -> tuple[str, str]:
        """``lease``'s bars (one per node of each of ``reservations``) and its entry in the
        plan's ``leases``, as JSON text."""
        out = []
        lid = lease.id
        for res in reservations:
            kind = BAR_KIND.get(res.kind)
            if kind is None or not len(res.nodes):
                continue
            if kind == "run" and res.start > now:
                kind = "reserved"
            tail = (f',{res.start:.3f},{"null" if math.isinf(res.end) else f"{res.end:.3f}"},'
                    f'"{kind}"]')
            out += [f"[{lid},{n}{tail}" for n in res.nodes.tolist()]
        info = json.dumps({"type": lease.type.value, "state": lease.state.value,
                           "name": lease.source_id, "what": self._describe(lease)},
                          separators=(",", ":"))
        return ",".join(out), f'"{lid}":{info}'

    def _describe(self, lease: Lease) -> str:
        types = self.daemon.run.nodes.types.names
        groups = " + ".join(
            f"{count} VM{'s' if count > 1 else ''} of "
            + " ".join(f"{t}:{v:g}" for t, v in zip(types, vector.tolist()) if v)
            for count, vector in zip(lease.vms.counts, lease.vms.vectors))
        length = ("unlimited" if lease.unlimited
                  else format_duration(lease.requested_duration))
        extra = ""
        if lease.deadline is not None:
            extra = f", deadline {_when(lease.deadline)}"
        return f"{groups} for {length}{extra}"

    def _power_bars(self, now: float) -> list[list[Any]]:
        """The nodes' power states (off, booting, shutting down), now and ahead, as
        ``[node, start, end, kind]`` (end null: off with no boot planned)."""
        states = getattr(self.daemon.run, "node_states", None)
        if states is None:
            return []
        bootable = self.daemon.run.site_scheduler.bootable
        return [[node, _t(start), None if kind is K.OFF and node in bootable else _t(end),
                 BAR_KIND[kind]] for node, kind, start, end in states.current(now)]

    # ----------------------------------------------------------------------- the queue
    def queue(self, now: float) -> dict[str, Any]:
        """The leases waiting, in scheduling order (held, queued, then planned by start),
        each with why it waits; at most :data:`QUEUE_SHOWN` of them."""
        sched = self.daemon.run.site_scheduler
        rooms: dict[bytes, float] = {}
        rows: list[dict[str, Any]] = []
        waiting = [*sched.held.values(), *sched.queue[:QUEUE_SHOWN]]
        # the leases holding the reservations ahead that the backfilling mode counts
        reserved = sorted(sched.plans.reserved)
        for position, lease in enumerate(waiting[:QUEUE_SHOWN], 1):
            rows.append(self._row(lease, position,
                                  self._reason(lease, position, rooms, reserved, now)))
        planned = heapq.nsmallest(
            max(0, QUEUE_SHOWN - len(rows)), sched.future.values(),
            key=lambda l: l.reservations[0].start if l.reservations else math.inf)
        for lease in planned:
            rows.append(self._row(lease, None, self._planned_reason(lease)))
        return {"rows": rows, "waiting": len(sched.held) + len(sched.queue),
                "planned": len(sched.future)}

    def _row(self, lease: Lease, position: int | None, reason: str) -> dict[str, Any]:
        return {"id": lease.id, "name": lease.source_id, "position": position,
                "type": lease.type.value, "state": lease.state.value, "vms": lease.vms.count,
                "submitted": format_instant(lease.submit), "reason": reason,
                "duration": "unlimited" if lease.unlimited
                else format_duration(lease.requested_duration)}

    def _reason(self, lease: Lease, position: int, rooms: dict[bytes, float],
                reserved: list[int], now: float) -> str:
        sched = self.daemon.run.site_scheduler
        if lease.state is S.HELD:
            return "held back by the queue policy"
        names = self.daemon.driver.names
        if lease.image_nodes:
            nodes = sorted(set(lease.image_nodes))
            return ("suspended: resumes on the nodes holding its memory images ("
                    + ", ".join(names[n] for n in nodes[:4])
                    + (" ..." if len(nodes) > 4 else "") + ") once they have room")
        if sched.backfilling == "off" and position > 1:
            return (f"behind lease {sched.queue[0].id} at the head of the queue "
                    "(backfilling off: the head blocks the rest)")
        key = lease.vms.shape_key
        if key is not None:
            room = rooms.get(key)
            if room is None:
                room = rooms[key] = self.daemon.run.table.room_at(lease.vms.vectors[0], now)
            if room < lease.vms.count:
                why = (f"waits for room: needs {lease.vms.count} VMs, the site has room for "
                       f"{room:g} of this size now")
            else:
                why = (f"room for its {lease.vms.count} VMs now, but not for all of its "
                       f"{format_duration(sched.length(lease))}: planned leases take the room "
                       "first" + (" (or the power cap has no room)"
                                  if sched.power is not None else ""))
        else:
            why = "waits for room for its VMs of several sizes"
        if sched.max_future and not math.isinf(sched.max_future) and reserved:
            why += (f"; no reservation ahead: backfilling ({sched.backfilling}) allows "
                    f"{sched.max_future:g}, held by lease " + ", ".join(map(str, reserved[:5])))
        return why

    def _planned_reason(self, lease: Lease) -> str:
        first = lease.reservations[0] if lease.reservations else None
        if first is None:
            return "planned"
        when = _when(first.start)
        if lease.type is LeaseType.ADVANCE_RESERVATION:
            return f"advance reservation: starts at {when}"
        if lease.state is S.SCHEDULED and lease.image_nodes:
            return f"suspended: resumes at {when}"
        return f"reserved: starts at {when}"

    # ------------------------------------------------------------------------ the nodes
    def nodes(self, now: float) -> dict[str, Any]:
        """Each node's state now (on, off, booting, shutting down) and whether leases use
        it."""
        run = self.daemon.run
        n = len(self.daemon.driver.names)
        state = ["on"] * n
        states = getattr(run, "node_states", None)
        if states is not None:
            for node, kind, start, end in states.current(now):
                if start <= now < end or (kind is K.OFF and start <= now):
                    state[node] = NODE_STATE[kind]
        # a node in use: on, and some of its resources held (by leases: a power state holds
        # a whole node, a power hold none)
        used = (run.nodes.capacity - run.table.free_at(now) > 1e-9).any(axis=1).tolist()
        busy = [u and s == "on" for u, s in zip(used, state)]
        counts = collections.Counter(state)
        return {"names": list(self.daemon.driver.names), "state": state, "busy": busy,
                "counts": {s: counts.get(s, 0) for s in ("on", "off", "booting",
                                                         "shutting down")}}

    # --------------------------------------------------------------------- the counters
    def counters(self, now: float, node_state: list[str]) -> dict[str, Any]:
        """Leases by state, and the share of each resource of the site that leases use now
        (on the nodes that are on: a power state holds a node's whole capacity)."""
        if self._counts_key != self.changes:
            self._counts = self.daemon.store.counts()
            self._counts_key = self.changes
        run = self.daemon.run
        on = np.array([s == "on" for s in node_state])
        capacity = run.nodes.capacity.sum(axis=0)
        used = (run.nodes.capacity - run.table.free_at(now))[on].sum(axis=0)
        types = run.nodes.types.names
        use = {t: (float(u / c) if c > 0 else 0.0) for t, u, c in zip(types, used, capacity)}
        return {"leases": self._counts, "utilisation": use}

    # ------------------------------------------------------------------------ the power
    def power(self, now: float, version: str) -> dict[str, Any] | None:
        """The site's power (W) over the last hours and the plan ahead, the cap and the green
        production over the same times, and the IT energy since the daemon started. The
        profile is computed again only when the plan changed (or the clock passed the end of
        the one computed), each live lease's intervals only when it changed."""
        run = self.daemon.run
        energy = getattr(run, "energy", None)
        if energy is None or not hasattr(energy, "profile_until"):
            return None
        origin = run.started_at
        if self._profile is None or self._profile[0] != version or \
                self._profile[1] < now + POWER_AHEAD:
            sched = run.site_scheduler
            live = {**sched.future, **sched.running}
            cache = self._intervals
            for lease_id in [i for i in cache if i not in live]:
                del cache[lease_id]
            for lease_id, lease in live.items():
                if lease_id in self._power_dirty or lease_id not in cache:
                    cache[lease_id] = energy.lease_intervals(lease)
            self._power_dirty.clear()
            states = energy.states
            held = list(states.current(now))
            # off with no boot planned: a node whose boot is planned (even one the engine
            # has not begun yet) is drawn booting, as nodes() shows it
            booting = {node for node, kind, _, _ in held if kind is K.SWITCHING_ON}
            off_from = {node: start for node, kind, start, _ in held
                        if kind is K.OFF and node in sched.bootable and node not in booting}
            until = now + 2 * POWER_AHEAD
            profile = energy.profile_until(origin, until, list(cache.values()), off_from)
            joules = np.concatenate([[0.0], np.cumsum(profile.watts[:-1]
                                                      * np.diff(profile.times))])
            self._profile = (version, until, profile, joules)
        _, _, profile, joules = self._profile
        i = max(int(np.searchsorted(profile.times, now, side="right")) - 1, 0)
        so_far = float(joules[i] + profile.watts[i] * (now - profile.times[i]))
        start, end = max(origin, now - POWER_PAST), now + POWER_AHEAD
        keep = (profile.times > start) & (profile.times < end)
        times = np.concatenate([[start], profile.times[keep], [end]])
        watts = profile.at(times)
        model = run.power
        assert model is not None
        series: dict[str, Any] = {"times": times.round(3).tolist(),
                                  "watts": watts.round(3).tolist()}
        cap = getattr(energy.states, "cap", None)
        envelope = cap.cap if cap is not None else None
        if envelope is not None or model.green is not None:
            grid = np.union1d(times, np.concatenate([
                s.breakpoints(start, end) for s in (envelope, model.green) if s is not None]))
            series["grid"] = grid.round(3).tolist()
            if envelope is not None:
                series["cap"] = envelope.at(grid).tolist()
            if model.green is not None:
                series["green"] = model.green.at(grid).tolist()
        series["energy_joules"] = so_far
        series["now_watts"] = float(profile.at(np.array([now]))[0])
        return series
