"""``lease-manager explain DIR LEASE``: one lease's story in plain words.

From the run's ``leases.csv`` (what happened) and, when the run wrote one, its
``decisions.jsonl`` (why: ``simulate --log-level debug``): when it was submitted, each decision
about it, how long it waited, and which leases held the nodes it ended up on while it waited.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from lease_manager.errors import LeaseManagerError
from lease_manager.observers.decisions import DECISIONS_FILE


def _s(seconds: float) -> str:
    return f"{seconds:,.0f} s"


def _nodes(nodes: list[int]) -> str:
    shown = ", ".join(f"node-{n + 1}" for n in nodes[:8])
    return shown + (f" and {len(nodes) - 8} more" if len(nodes) > 8 else "")


def _read_leases(path: Path) -> dict[int, dict[str, str]]:
    try:
        with path.open(newline="") as fh:
            return {int(row["lease_id"]): row for row in csv.DictReader(fh)}
    except FileNotFoundError:
        raise LeaseManagerError(f"{path.parent}: no leases.csv (not a run's folder?)") from None
    except (OSError, KeyError, ValueError) as exc:
        raise LeaseManagerError(f"{path}: cannot read it ({exc})") from None


def _decisions(path: Path, lease_id: int) -> list[dict[str, Any]] | None:
    if not path.is_file():
        return None
    found = []
    with path.open() as fh:
        for number, line in enumerate(fh, 1):
            try:
                record = json.loads(line)
            except ValueError:
                raise LeaseManagerError(f"{path}:{number}: not a JSON line") from None
            if record.get("lease") == lease_id:
                found.append(record)
    return found


def say_decision(record: dict[str, Any]) -> str:
    d = record["decision"]
    if d == "submitted":
        return f"submitted ({record['type']}, {record['vms']} VMs)"
    if d == "rejected":
        return f"rejected: {record['reason']}"
    where = _nodes(record["nodes"]) if record.get("nodes") else \
        "its VMs (the nodes are chosen when it starts: placement at-start)"
    if d == "reserved":
        return f"reserved {where} from {_s(record['start'])} to {_s(record['end'])}"
    if d in ("moved-earlier", "moved-later"):
        return (f"moved {d.split('-')[1]}: now from {_s(record['start'])} for {where} (it was "
                f"planned at {_s(record['was'])})")
    if d == "started":
        text = f"started on {_nodes(record['nodes'])}"
        past = record.get("backfilled-past")
        if past:
            text += (", backfilled ahead of lease(s) " + ", ".join(map(str, past[:8]))
                     + (" and more" if len(past) > 8 else "") + " submitted before it")
        return text
    if d == "preempted":
        during = record.get("during")
        return "preempted" + (f" for lease {during}" if during is not None else "")
    if d == "resized":
        return f"resized to {record['vms']} VMs (from {record['was']})"
    if d == "ended":
        why = f" ({record['reason']})" if record.get("reason") else ""
        return f"ended: {record['state']}{why}"
    return f"{d} (from {record.get('from', '?')})"


def _holders(leases: dict[int, dict[str, str]], me: dict[str, str]) -> list[str]:
    """The leases on the nodes ``me`` started on while it waited, latest release first."""
    nodes = {int(n) for n in me["nodes"].split()} if me.get("nodes") else set()
    submit, start = float(me["submit"]), float(me["start"])
    held = []
    for other_id, row in leases.items():
        if other_id == int(me["lease_id"]) or not row.get("start") or not row.get("end"):
            continue
        shared = nodes & {int(n) for n in row["nodes"].split()} if row.get("nodes") else set()
        if shared and float(row["start"]) < start and float(row["end"]) > submit:
            held.append((float(row["end"]), other_id, len(shared)))
    held.sort(reverse=True)
    return [f"lease {i} held {k} of them until {_s(end)}" for end, i, k in held[:10]] + \
        ([f"and {len(held) - 10} more"] if len(held) > 10 else [])


def explain(run_dir: str | Path, lease_id: int) -> str:
    """The story of lease ``lease_id`` of the run in ``run_dir``."""
    run_dir = Path(run_dir)
    leases = _read_leases(run_dir / "leases.csv")
    me = leases.get(lease_id)
    if me is None:
        raise LeaseManagerError(f"{run_dir}: no lease {lease_id} in leases.csv (ids "
                                f"{min(leases, default=0)} to {max(leases, default=0)})")
    lines = [f"lease {lease_id} ({me['type']}, {me['vms']} VMs, requested "
             f"{me['requested']} s; trace id {me['source_id'] or '-'}): {me['state']}"]
    records = _decisions(run_dir / DECISIONS_FILE, lease_id)
    if records is None:
        lines.append(f"  (no {DECISIONS_FILE}: run it with `simulate --log-level debug` for "
                     "each decision)")
    else:
        lines += [f"  {_s(r['t']):>14}  {say_decision(r)}" for r in records]
    if me.get("start"):
        wait = float(me["start"]) - float(me["submit"])
        lines.append(f"It waited {_s(wait)}, from {_s(float(me['submit']))} to "
                     f"{_s(float(me['start']))}.")
        holders = _holders(leases, me) if wait > 0 else []
        if holders:
            lines.append("Meanwhile, on the nodes it started on:")
            lines += [f"  {h}" for h in holders]
    elif me.get("reason"):
        lines.append(f"It never started: {me['reason']}")
    return "\n".join(lines) + "\n"
