"""The decision log: one JSON line per scheduling decision, in ``DIR/decisions.jsonl``.

Written when ``[accounting] decision-log = yes`` (``simulate --log-level debug``; a Haizea file's
``loglevel: DEBUG`` or ``VDEBUG``), as Haizea users debug with its per-decision log. Each line
holds ``t`` (seconds), ``lease`` and ``decision``, and what the decision needs:

- ``submitted`` (``type``, ``vms``); ``rejected`` (``reason``);
- ``queued``, ``held``, ``suspended``, ``resumed``... every change of state (``from``, ``to``);
- ``reserved`` (``start``, ``end``, ``nodes``), or ``moved-earlier`` / ``moved-later`` when
  the plan changes before the lease starts (``was``: the old start);
- ``started`` (``nodes``; ``backfilled-past``: the leases submitted before it that still
  wait); ``preempted`` (``during``: the lease being admitted at that moment, if one was);
- ``resized`` (``vms``, ``was``); ``ended`` (``state``; ``reason`` too for a lease that
  failed or was cancelled with one).

With a ``[power]`` model, ``started`` also holds the lease's DVFS ``level`` (its operating
point), and each node's switches are lines of their own, with ``node`` and ``lease`` null:
``switch-off`` and ``boot`` at the instant the shutdown or the boot begins (``until``: when it
is over; ``site`` in a run with several), taken from the node states that ran, so that both
placements log them alike (a boot planned and moved before it began is no decision).

``lease-manager explain DIR LEASE`` tells one lease's story from it. Nothing is registered when
the log is off, so it costs nothing then.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lease_manager.hookspecs import hookimpl

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.kernel.lease import Lease, LeaseState

DECISIONS_FILE = "decisions.jsonl"
#: states whose entry :meth:`DecisionLog.lease_state_changed` does not log: another hook does
_ANNOUNCED = ("rejected", "active", "done", "cancelled", "failed", "scheduled")
#: the node states whose start is a decision of the log, and its name
_SWITCHES = {"switching-off": "switch-off", "switching-on": "boot"}


def _nodes(lease: Lease) -> list[int]:
    return sorted({int(n) for r in lease.reservations[:1] for n in r.nodes.tolist()})


class DecisionLog:
    """Records the run's decisions (a per-run plugin, registered only when the log is on)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        #: leases submitted and not started yet: id -> submit time (for ``backfilled-past``)
        self._waiting: dict[int, float] = {}
        self._planned: dict[int, float] = {}      # the start each waiting lease is planned at
        self._admitting: tuple[int, float] | None = None

    def _log(self, now: float, lease: Lease, decision: str, **detail: Any) -> None:
        self.lines.append(json.dumps({"t": now, "lease": lease.id, "decision": decision,
                                      **detail}, separators=(",", ":")))

    @hookimpl
    def lease_submitted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self._waiting[lease.id] = lease.submit
        self._admitting = (lease.id, now)
        self._log(now, lease, "submitted", type=lease.type.value, vms=lease.vms.count)

    @hookimpl
    def lease_rejected(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self._waiting.pop(lease.id, None)
        self._log(now, lease, "rejected", reason=lease.reason)

    @hookimpl
    def lease_scheduled(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if not lease.reservations:
            return
        first = lease.reservations[0]
        was = self._planned.get(lease.id)
        self._planned[lease.id] = first.start
        detail = {"start": first.start, "end": lease.reservations[-1].end,
                  "nodes": _nodes(lease)}
        if was is None or was == first.start:
            self._log(now, lease, "reserved", **detail)
        else:
            self._log(now, lease, "moved-earlier" if first.start < was else "moved-later",
                      was=was, **detail)

    @hookimpl
    def lease_state_changed(self, ctx: RunContext, lease: Lease, old: LeaseState,
                            now: float) -> None:
        new = lease.state.value
        if new in _ANNOUNCED:
            return
        if new == "queued":
            self._planned.pop(lease.id, None)    # its plan, if it had one, is void
        self._log(now, lease, new, **{"from": old.value})

    @hookimpl
    def lease_started(self, ctx: RunContext, lease: Lease, now: float) -> None:
        submit = self._waiting.pop(lease.id, None)
        self._planned.pop(lease.id, None)
        detail: dict[str, Any] = {"nodes": _nodes(lease)}
        if submit is not None:
            past = sorted(i for i, t in self._waiting.items() if t < submit)
            if past:
                detail["backfilled-past"] = past
        if lease.level is not None and ctx.power is not None:
            detail["level"] = lease.level
        self._log(now, lease, "started", **detail)

    @hookimpl
    def lease_preempted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        detail = {}
        if self._admitting is not None and self._admitting[1] == now:
            detail["during"] = self._admitting[0]
        self._log(now, lease, "preempted", **detail)

    @hookimpl
    def lease_resized(self, ctx: RunContext, lease: Lease, old_nodes: int, old_vms: int,
                      now: float) -> None:
        self._log(now, lease, "resized", vms=len(lease.reservations[0].vm_nodes)
                  if lease.reservations else None, was=old_vms)

    @hookimpl
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        self._waiting.pop(lease.id, None)
        self._planned.pop(lease.id, None)
        if lease.reason and lease.state.value in ("failed", "cancelled"):
            self._log(now, lease, "ended", state=lease.state.value, reason=lease.reason)
        else:
            self._log(now, lease, "ended", state=lease.state.value)

    def add_node_switches(self, rows: Iterable[tuple[int, str, float, float]],
                          site: str | None = None) -> None:
        """Log every shutdown and boot among a site's node state intervals ``rows`` (``(node,
        state, from, to)``), each at its start, in time order among the other lines."""
        where = {} if site is None else {"site": site}
        found = []
        for node, state, start, end in rows:
            decision = _SWITCHES.get(state)
            if decision is not None:
                found.append((start, json.dumps(
                    {"t": start, "lease": None, "decision": decision, "node": node,
                     "until": end, **where}, separators=(",", ":"))))
        if not found:
            return
        timed = [(json.loads(line)["t"], line) for line in self.lines]
        timed += found
        timed.sort(key=lambda item: item[0])   # (stable: a step's lines keep their order)
        self.lines = [line for _, line in timed]

    def write(self, path: Path) -> None:
        path.write_text("".join(line + "\n" for line in self.lines))
