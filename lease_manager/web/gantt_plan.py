"""A run's leases as the ``plan`` that ``static/gantt.js`` draws (``LMGantt.draw``).

The plan is plain JSON: ``{"nodes": [label, ...], "now": seconds or None, "bars": [{"lease",
"node" (index into nodes), "start", "end", "kind", "type", "state", "hover"}, ...],
"colour_by": "type" | "state"}``, one bar a lease and node (the drawer merges a lease's
consecutive nodes into one rectangle). The leases are those
:func:`lease_manager.experiments.gantt.gantt_leases` picks for the PNG chart (those that
started on some nodes; one still running when the run stopped ends at the table's last time
and is ``unfinished``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from lease_manager.experiments.gantt import gantt_leases, number

#: the most leases a page's Gantt chart holds (the drawer's tested size: 10,000 leases)
MAX_PLAN_LEASES = 10_000


@functools.cache
def gantt_js() -> str:
    """The text of ``lease_manager/web/static/gantt.js`` (defines ``LMGantt.draw``)."""
    return resources.files("lease_manager.web").joinpath("static", "gantt.js").read_text(
        encoding="utf-8")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} s"


def _hover(row: Mapping[str, str], state: str, start: float, end: float,
           nodes: Sequence[str]) -> str:
    """A lease's details, one fact a line."""
    vms = number(row.get("vms"))
    lines = [f"lease {row['lease_id']} ({row.get('type') or 'no type'}, {state})",
             f"submitted {_seconds(number(row.get('submit')))}, waited "
             f"{_seconds(number(row.get('wait')))}",
             f"start {start:,.0f} s, end {end:,.0f} s (ran {end - start:,.0f} s)",
             (f"{vms:g} VMs on " if vms is not None else "on ")
             + (", ".join(nodes[:8]) + (f" and {len(nodes) - 8} more" if len(nodes) > 8
                                        else ""))]
    if row.get("reason"):
        lines.append(f"reason: {row['reason']}")
    return "\n".join(lines)


def _site_sizes(run_dir: Path | None) -> dict[str, int]:
    """Each site's number of nodes from ``run.json`` (the run's ``resources``; one unnamed
    site ``""`` for a run of one site), or {} when it does not say."""
    if run_dir is None:
        return {}
    from lease_manager.kernel.resources import parse_site

    try:
        meta = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(meta, dict):
        return {}
    sites = meta.get("sites")
    if isinstance(sites, dict) and sites:
        texts = {name: o.get("resources") if isinstance(o, dict) else None
                 for name, o in sites.items()}
    else:
        texts = {"": ((meta.get("effective") or {}).get("simulation") or {}).get("resources")}
    try:
        return {name: parse_site(text).count for name, text in texts.items()
                if isinstance(text, str)}
    except ValueError:   # a site described elsewhere (in the trace file, a file:...)
        return {}


def node_labels(rows: Sequence[Mapping[str, str]], run_dir: Path | None = None
                ) -> tuple[list[str], dict[tuple[str, int], int]]:
    """The plan's rows: every node of the run (``run.json``'s sites, else those leases ran
    on), ``node 0``... or ``SITE node 0``... with several sites; and the row of each
    (site, node index)."""
    sizes = _site_sizes(run_dir)
    for row in rows:
        site = row.get("site") or ""
        for text in (row.get("nodes") or "").split():
            sizes[site] = max(sizes.get(site, 0), int(text) + 1)
    labels: list[str] = []
    index: dict[tuple[str, int], int] = {}
    for site in sorted(sizes):
        for n in range(sizes[site]):
            index[(site, n)] = len(labels)
            labels.append(f"{site} node {n}" if site else f"node {n}")
    return labels, index


def plan_from_leases(rows: Sequence[Mapping[str, str]], *, run_dir: Path | None = None,
                     colour_by: str = "type", now: float | None = None,
                     max_leases: int | None = MAX_PLAN_LEASES,
                     max_hours: float | None = None) -> dict[str, Any]:
    """The plan of the leases of ``rows`` (``leases.csv``'s rows): a ``run`` bar a lease and
    node, the first ``max_leases`` leases to start (within ``max_hours`` of the first)."""
    if colour_by not in ("type", "state"):
        raise ValueError(f"colour_by must be 'type' or 'state', not {colour_by!r}")
    labels, index = node_labels(rows, run_dir)
    by_id = {row["lease_id"]: row for row in rows}
    leases, _ = gantt_leases([dict(r) for r in rows], max_leases=max_leases,
                             max_hours=max_hours)
    bars: list[dict[str, Any]] = []
    for lease in leases:
        row = by_id[lease.id]
        site = row.get("site") or ""
        rows_of = [index[(site, n)] for n in sorted(set(lease.nodes))]
        hover = _hover(row, lease.state, lease.start, lease.end, [labels[r] for r in rows_of])
        lease_id: int | str = int(lease.id) if lease.id.isdigit() else lease.id
        bars += [{"lease": lease_id, "node": r, "start": lease.start, "end": lease.end,
                  "kind": "run", "type": lease.type, "state": lease.state, "hover": hover}
                 for r in rows_of]
    return {"nodes": labels, "now": now, "bars": bars, "colour_by": colour_by}


def plan_of_run(run_dir: Path, **options: Any) -> dict[str, Any]:
    """:func:`plan_from_leases` of ``run_dir/leases.csv``, nodes from ``run_dir/run.json``."""
    from lease_manager.experiments.gantt import read_leases

    return plan_from_leases(read_leases(run_dir), run_dir=run_dir, **options)


#: the fields of a bar that a compact plan writes once for all the nodes of a lease's phase
COMPACT_KEYS = ("lease", "start", "end", "kind", "type", "state", "hover")


def compact(plan: Mapping[str, Any]) -> dict[str, Any]:
    """``plan`` with the bars of one lease and phase written once, with the list of their
    node rows: ``{"nodes", "now", "colour_by", "keys": COMPACT_KEYS, "items": [[lease, start,
    end, kind, type, state, hover, [rows...]], ...]}``; ``LMGantt.expand`` turns it back."""
    items: dict[tuple[Any, ...], list[int]] = {}
    for bar in plan["bars"]:
        items.setdefault(tuple(bar[k] for k in COMPACT_KEYS), []).append(bar["node"])
    return {"nodes": plan["nodes"], "now": plan.get("now"),
            "colour_by": plan.get("colour_by", "type"), "keys": list(COMPACT_KEYS),
            "items": [[*key, rows] for key, rows in items.items()]}
