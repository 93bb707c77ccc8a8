"""How the client's commands print leases and hosts: plain-text tables (or, with ``--json``,
the API's JSON as it is)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def _nodes(view: dict) -> str:
    """The nodes of a lease's plan, at most four named."""
    plan = view.get("plan") or []
    names = sorted({n for seg in plan for n in seg["nodes"]})
    return ",".join(names) if len(names) <= 4 else f"{','.join(names[:3])},+{len(names) - 3}"


def short_instant(t: str | None) -> str:
    """An ISO 8601 instant as ``YYYY-MM-DD HH:MM:SS``; ``-`` for none."""
    return "-" if not t else t.replace("T", " ").rstrip("Z")


def table(rows: list[list[str]], header: list[str]) -> str:
    """``rows`` under ``header`` in left-aligned columns."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def lease_rows(views: list[dict]) -> list[list[str]]:
    """One row of :data:`LEASE_HEADER` per lease view of the API."""
    return [[str(v["id"]), v["type"], v["state"], str(v["request"]["nodes"]),
             short_instant(v["start"] or (v["plan"][0]["start"] if v["plan"] else None)),
             short_instant(v["end"] or (v["plan"][-1]["end"] if v["plan"] else None)), _nodes(v),
             v["reason"][:60]] for v in views]


LEASE_HEADER = ["ID", "TYPE", "STATE", "VMS", "START", "END", "NODES", "REASON"]


def show(args: argparse.Namespace, data: Any, human: str) -> int:
    """Print ``data`` as JSON with ``--json``, else ``human``."""
    print(json.dumps(data, indent=2) if args.json else human)
    return 0
