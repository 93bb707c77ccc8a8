"""How the JSON API shows a lease: its database row as JSON (times as ISO 8601 instants,
nodes by name, the request as the client gave it, normalised)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lease_manager.daemon.lease_requests import groups_of
from lease_manager.kernel.timeutil import format_instant


def lease_view(row: Any, names: Sequence[str]) -> dict[str, Any]:
    """A lease as the API shows it, from its database row."""
    try:
        req = json.loads(row["request"])
        request = _request_view(req)
        name = req.get("name")
    except (ValueError, KeyError, TypeError, AttributeError):
        # a damaged row (restore failed its lease): shown, not a 500
        request, name = {"invalid": "the stored request could not be read"}, None
    return {
        "id": row["id"],
        "name": name,
        "type": row["type"],
        "state": row["state"],
        "reason": row["reason"],
        "submitted": format_instant(row["submit"]),
        "start": format_instant(row["start"]),
        "end": format_instant(row["end"]),
        "request": request,
        "price": row["price"],
        "work_done": row["work_done"],
        "preemptions": row["preemptions"],
        "suspensions": row["suspensions"],
        "time_suspended": row["time_suspended"],
        "plan": [{"kind": seg["kind"], "start": format_instant(seg["start"]),
                  "end": format_instant(seg["end"]) if seg["end"] is not None else None,
                  "nodes": [_node_name(names, n) for n in seg["vm_nodes"]]}
                 for seg in json.loads(row["plan"])],
    }


def _node_name(names: Sequence[str], node: int) -> str:
    """A node's name; a node a lease held before the daemon restarted on fewer nodes has none
    any more."""
    return names[node] if 0 <= node < len(names) else f"#{node + 1} (no longer in the site)"


def _request_view(req: dict[str, Any]) -> dict[str, Any]:
    """A stored request as the API shows it."""
    duration = req["duration"]
    return {
        "start": format_instant(req["start"]),
        "deadline": format_instant(req["deadline"]),
        "duration": "unlimited" if duration is None else duration,
        "nodes": req["nodes"],
        "resources": req["resources"],
        "command": req["command"],
        "workdir": req.get("workdir"),
        "groups": groups_of(req),
        "max_price": req["max_price"],
        "extra": req["extra"],
    }


def amounts_by_name(types: tuple[str, ...], vector: Any) -> dict[str, float]:
    """A vector of amounts by resource name."""
    return {name: float(v) for name, v in zip(types, vector)}
