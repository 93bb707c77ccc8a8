"""The Gantt chart of one run, from its ``leases.csv``.

Time runs across (hours), node index up. A lease is one colour, the colour of its type; its
state shows as a hatch (none for a lease that finished). A lease on nodes that are not
consecutive is drawn as one bar per block of consecutive nodes, joined by a thin line, so that
one lease still reads as one lease. Leases sharing a multi-core node overlap (the bars are
translucent).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HOUR = 3600.0
#: a colour per lease type (colour-blind safe: Okabe and Ito's palette)
TYPE_COLOURS = {"best-effort": "#56b4e9", "advance-reservation": "#e69f00",
                "immediate": "#009e73", "deadline": "#cc79a7"}
OTHER_TYPE_COLOUR = "#999999"
#: a hatch per final state; a lease still running when the run stopped is "unfinished"
STATE_HATCHES = {"done": "", "failed": "xxx", "cancelled": "///", "unfinished": "..."}


def read_leases(run_dir: Path) -> list[dict[str, str]]:
    """The rows of ``run_dir/leases.csv``."""
    with (Path(run_dir) / "leases.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def number(text: str | None) -> float | None:
    """A finite number from a CSV cell, or None (empty, not a number, infinite)."""
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def blocks(nodes: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted node indices as runs of consecutive ones: [(first, count), ...]."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(nodes)):
        if out and out[-1][0] + out[-1][1] == n:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((n, 1))
    return out


@attrs.frozen
class GanttLease:
    """A lease as a Gantt chart draws it."""

    id: str
    type: str
    state: str
    start: float
    end: float
    nodes: list[int]


def gantt_leases(rows: list[dict[str, str]], *, max_leases: int | None = 200,
                 max_hours: float | None = None) -> tuple[list[GanttLease], bool]:
    """The leases a Gantt chart draws: those that started on some nodes, in start order, the
    first ``max_leases`` within ``max_hours`` of the first start. A lease with no end (still
    running when the run stopped) ends at the last time of the table. Returns (leases, whether
    every lease that ran is among them)."""
    ends = [e for r in rows if (e := number(r.get("end"))) is not None]
    horizon = max(ends, default=0.0)
    leases = []
    for row in rows:
        start = number(row.get("start"))
        nodes = [int(n) for n in (row.get("nodes") or "").split()]
        if start is None or not nodes:
            continue
        end = number(row.get("end"))
        state = row.get("state", "")
        if end is None or state not in STATE_HATCHES:
            state = "unfinished" if state not in ("failed", "cancelled") else state
            end = max(horizon, start) if end is None else end
        leases.append(GanttLease(row["lease_id"], row.get("type", ""), state, start, end,
                                 nodes))
    leases.sort(key=lambda lease: (lease.start, int(lease.id)))
    if leases and max_hours is not None:
        limit = leases[0].start + max_hours * HOUR
        leases = [lease for lease in leases if lease.start < limit]
    shown_all = max_leases is None or len(leases) <= max_leases
    if max_leases is not None:
        leases = leases[:max_leases]
    return leases, shown_all


def gantt(run_dir: Path, *, max_leases: int | None = 200, max_hours: float | None = None,
          title: str | None = None) -> Figure:
    """The Gantt chart of the first ``max_leases`` leases to start (within ``max_hours`` of
    the first start), with a legend of the types and states drawn."""
    from matplotlib.collections import LineCollection, PatchCollection
    from matplotlib.patches import Patch, Rectangle

    from lease_manager.experiments.plots import figure

    leases, shown_all = gantt_leases(read_leases(run_dir), max_leases=max_leases,
                                     max_hours=max_hours)
    fig = figure(12, 6)
    ax = fig.add_subplot()
    by_style: dict[tuple[str, str], list[Rectangle]] = {}
    joins = []
    for lease in leases:
        x0, width = lease.start / HOUR, (lease.end - lease.start) / HOUR
        parts = blocks(lease.nodes)
        for first, count in parts:
            by_style.setdefault((lease.type, lease.state), []).append(
                Rectangle((x0, first - 0.4), width, count - 0.2))
        if len(parts) > 1:
            x = x0 + width / 2
            joins.append([(x, parts[0][0] + parts[0][1] - 0.6), (x, parts[-1][0] - 0.4)])
    for (kind, state), rects in by_style.items():
        ax.add_collection(PatchCollection(
            rects, facecolors=TYPE_COLOURS.get(kind, OTHER_TYPE_COLOUR), edgecolors="black",
            linewidths=0.3, alpha=0.8, hatch=STATE_HATCHES[state] or None))
    if joins:
        ax.add_collection(LineCollection(joins, colors="black", linewidths=0.6,
                                         linestyles="dotted"))
    if leases:
        if len(leases) <= 60:
            for lease in leases:
                first, count = blocks(lease.nodes)[0]
                ax.text((lease.start + lease.end) / 2 / HOUR, first + (count - 1) / 2,
                        lease.id, ha="center", va="center", fontsize=6, clip_on=True)
        ax.autoscale_view()
        types = [t for t in (*TYPE_COLOURS, *sorted({k for k, _ in by_style})) if
                 any(k == t for k, _ in by_style)]
        states = [s for s in STATE_HATCHES if any(st == s for _, st in by_style)]
        handles = [Patch(facecolor=TYPE_COLOURS.get(t, OTHER_TYPE_COLOUR), edgecolor="black",
                         label=t or "(no type)") for t in dict.fromkeys(types)]
        handles += [Patch(facecolor="white", edgecolor="black", hatch=STATE_HATCHES[s] or None,
                          label=s) for s in states]
        ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        ax.text(0.5, 0.5, "no lease ran", transform=ax.transAxes, ha="center")
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("node")
    what = f"{len(leases)} leases" + ("" if shown_all else " (the first to start)")
    ax.set_title(f"{title or Path(run_dir).name}: {what}")
    ax.grid(axis="x", alpha=0.3)
    return fig
