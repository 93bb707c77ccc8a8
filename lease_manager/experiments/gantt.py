"""The Gantt chart of one run, from its ``leases.csv``.

Time runs across (hours), node index up. A lease's colour says its wait, its size (VMs) or its
type (``colour_by``; by default its type when the chart holds several types, else its wait, as
in a trace replay where every lease is best-effort), with a colour bar for wait and size; its
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
from typing import TYPE_CHECKING, Any

import attrs

from lease_manager.experiments.plot_options import COLOUR_BY

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HOUR = 3600.0
#: a colour per lease type (colour-blind safe: Okabe and Ito's palette)
TYPE_COLOURS = {"best-effort": "#56b4e9", "advance-reservation": "#e69f00",
                "immediate": "#009e73", "deadline": "#cc79a7"}
OTHER_TYPE_COLOUR = "#999999"
#: a hatch per final state; a lease still running when the run stopped is "unfinished"
STATE_HATCHES = {"done": "", "failed": "xxx", "cancelled": "///", "unfinished": "..."}
MINUTE, DAY = 60.0, 86400.0
#: the wait classes (seconds, upper bounds) and their labels: equal steps on the colour bar
WAIT_CLASSES = ((0.0, "0"), (MINUTE, "< 1 min"), (10 * MINUTE, "1-10 min"),
                (HOUR, "10 min-1 h"), (4 * HOUR, "1-4 h"), (12 * HOUR, "4-12 h"),
                (DAY, "12 h-1 day"), (math.inf, "> 1 day"))


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
    wait: float | None = None
    vms: float | None = None


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
                                 nodes, number(row.get("wait")), number(row.get("vms"))))
    leases.sort(key=lambda lease: (lease.start, int(lease.id)))
    if leases and max_hours is not None:
        limit = leases[0].start + max_hours * HOUR
        leases = [lease for lease in leases if lease.start < limit]
    shown_all = max_leases is None or len(leases) <= max_leases
    if max_leases is not None:
        leases = leases[:max_leases]
    return leases, shown_all


def wait_class(wait: float) -> int:
    """The index of ``wait``'s class in :data:`WAIT_CLASSES`: 0 for no wait, else the first
    class whose upper bound is above it."""
    if wait <= 0:
        return 0
    return next(i for i, (upper, _) in enumerate(WAIT_CLASSES) if i and wait < upper)


def size_classes(largest: float) -> list[tuple[float, str]]:
    """Classes of lease sizes (VMs) in powers of two up to ``largest``: (upper bound, label)
    for 1, 2, 3-4, 5-8..."""
    out = [(1.0, "1")]
    while out[-1][0] < largest:
        upper = out[-1][0] * 2
        low, high = int(out[-1][0]) + 1, int(math.ceil(min(upper, largest)))
        out.append((upper, f"{low}" if low == high else f"{low}-{high}"))
    return out


def resolve_colour_by(colour_by: str, leases: Iterable[GanttLease]) -> str:
    """``auto`` as ``type`` when the leases are of several types, else ``wait``."""
    if colour_by not in COLOUR_BY:
        raise ValueError(f"colour_by must be one of {', '.join(COLOUR_BY)}, not {colour_by!r}")
    if colour_by != "auto":
        return colour_by
    return "type" if len({lease.type for lease in leases}) > 1 else "wait"


def lease_classes(leases: list[GanttLease], colour_by: str) -> tuple[list[int], list[str]]:
    """Each lease's class index for ``colour_by`` (``wait`` or ``size``), and the classes'
    labels from the first to the last one any lease is in (a lease without the value counts
    as 0 wait, 1 VM)."""
    if colour_by == "wait":
        classes = [(u, label) for u, label in WAIT_CLASSES]
        index = [wait_class(max(lease.wait or 0.0, 0.0)) for lease in leases]
    else:
        sizes = [max(lease.vms or 1.0, 1.0) for lease in leases]
        classes = size_classes(max(sizes, default=1.0))
        index = [next(i for i, (u, _) in enumerate(classes) if s <= u) for s in sizes]
    last = max(index, default=0)
    return index, [label for _, label in classes[:last + 1]]


#: the colour maps of the classes (sequential, readable in grey and by colour-blind readers)
CLASS_MAPS = {"wait": "YlOrRd", "size": "viridis"}
COLOUR_BAR_LABELS = {"wait": "wait before start", "size": "size (VMs)"}


def gantt(run_dir: Path, *, max_leases: int | None = 200, max_hours: float | None = None,
          title: str | None = None, colour_by: str = "auto") -> Figure:
    """The Gantt chart of the first ``max_leases`` leases to start (within ``max_hours`` of
    the first start), coloured by ``colour_by`` (:data:`COLOUR_BY`) with a colour bar (wait,
    size) or a legend (type), and a legend of the states drawn."""
    from matplotlib.ticker import MaxNLocator

    from lease_manager.experiments.plot_base import figure

    leases, shown_all = gantt_leases(read_leases(run_dir), max_leases=max_leases,
                                     max_hours=max_hours)
    colour_by = resolve_colour_by(colour_by, leases)
    fig = figure(12, 6)
    ax = fig.add_subplot()
    keys, colours, labels = _lease_colours(leases, colour_by)
    states = _draw_leases(ax, leases, keys, colours)
    if leases:
        if len(leases) <= 60:
            _number_leases(ax, leases, keys, colours)
        ax.autoscale_view()
        _legends(fig, ax, colour_by, keys, labels, states)
    else:
        ax.text(0.5, 0.5, "no lease ran", transform=ax.transAxes, ha="center")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("node")
    what = f"{len(leases)} leases" + ("" if shown_all else " (the first to start)")
    ax.set_title(f"{title or Path(run_dir).name}: {what}, coloured by {colour_by}")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _class_map(colour_by: str, n: int) -> Any:
    """The colour map of ``n`` classes of ``colour_by`` (wait or size)."""
    import matplotlib
    import numpy as np
    from matplotlib.colors import ListedColormap

    # from a fifth into the map: its first colours are too pale to read on white
    return ListedColormap(matplotlib.colormaps[CLASS_MAPS[colour_by]](
        np.linspace(0.2, 1.0, n) if n > 1 else [0.5]))


def _lease_colours(leases: list[GanttLease], colour_by: str) -> tuple[list[str], dict[str, Any],
                                                                      list[str]]:
    """Each lease's colour key, the colour of each key, and the classes' labels (none when
    coloured by type)."""
    if colour_by == "type":
        keys = [lease.type for lease in leases]
        return keys, {k: TYPE_COLOURS.get(k, OTHER_TYPE_COLOUR) for k in keys}, []
    index, labels = lease_classes(leases, colour_by)
    cmap = _class_map(colour_by, len(labels))
    return [str(i) for i in index], {str(i): cmap(i) for i in range(len(labels))}, labels


def _draw_leases(ax: Any, leases: list[GanttLease], keys: list[str],
                 colours: dict[str, Any]) -> list[str]:
    """A bar per block of contiguous nodes of each lease (hatched by its state), blocks of
    one lease joined by a dotted line; returns the states drawn, in legend order."""
    from matplotlib.collections import LineCollection, PatchCollection
    from matplotlib.patches import Rectangle

    by_style: dict[tuple[str, str], list[Rectangle]] = {}
    joins = []
    for lease, key in zip(leases, keys):
        x0, width = lease.start / HOUR, (lease.end - lease.start) / HOUR
        parts = blocks(lease.nodes)
        for first, count in parts:
            by_style.setdefault((key, lease.state), []).append(
                Rectangle((x0, first - 0.4), width, count - 0.2))
        if len(parts) > 1:
            x = x0 + width / 2
            joins.append([(x, parts[0][0] + parts[0][1] - 0.6), (x, parts[-1][0] - 0.4)])
    for (key, state), rects in by_style.items():
        ax.add_collection(PatchCollection(
            rects, facecolors=colours[key], edgecolors="black",
            linewidths=0.3, alpha=0.8, hatch=STATE_HATCHES[state] or None))
    if joins:
        ax.add_collection(LineCollection(joins, colors="black", linewidths=0.6,
                                         linestyles="dotted"))
    return [s for s in STATE_HATCHES if any(st == s for _, st in by_style)]


def _number_leases(ax: Any, leases: list[GanttLease], keys: list[str],
                   colours: dict[str, Any]) -> None:
    """Each lease's id on its first block, in white on a dark colour."""
    from matplotlib.colors import to_rgb

    for lease, key in zip(leases, keys):
        first, count = blocks(lease.nodes)[0]
        red, green, blue = to_rgb(colours[key])
        dark = 0.3 * red + 0.6 * green + 0.1 * blue < 0.45
        ax.text((lease.start + lease.end) / 2 / HOUR, first + (count - 1) / 2,
                lease.id, ha="center", va="center", fontsize=7, clip_on=True,
                color="white" if dark else "black")


def _legends(fig: Figure, ax: Any, colour_by: str, keys: list[str], labels: list[str],
             states: list[str]) -> None:
    """The legend of the types, or the colour bar of the classes; the legend of the states."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.patches import Patch

    handles = []
    if colour_by == "type":
        types = [t for t in (*TYPE_COLOURS, *sorted(set(keys))) if t in set(keys)]
        handles = [Patch(facecolor=TYPE_COLOURS.get(t, OTHER_TYPE_COLOUR),
                         edgecolor="black", label=t or "(no type)")
                   for t in dict.fromkeys(types)]
    else:
        n = len(labels)
        mappable = ScalarMappable(Normalize(-0.5, n - 0.5), _class_map(colour_by, n))
        bar = fig.colorbar(mappable, ax=ax, ticks=range(n), pad=0.01, aspect=30)
        bar.ax.set_yticklabels(labels, fontsize=8)
        bar.set_label(COLOUR_BAR_LABELS[colour_by])
    handles += [Patch(facecolor="white", edgecolor="black", hatch=STATE_HATCHES[s] or None,
                      label=s) for s in states]
    if colour_by == "type":
        ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    elif states != ["done"]:   # the colour bar holds the right: states under the axis
        ax.legend(handles=handles, fontsize=8, loc="upper right",
                  bbox_to_anchor=(1.0, -0.08), ncols=len(handles), title="state",
                  title_fontsize=8)
