"""Figures of how a run used its site, one line per profile: utilisation and queue length
over time (recorded, or rebuilt from ``leases.csv``), the distributions of waits and bounded
slowdowns, and every other recorded time series."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.gantt import number as _float
from lease_manager.experiments.gantt import read_leases
from lease_manager.experiments.plot_base import (
    HOUR,
    _integer_ticks_if_counts,
    _load,
    _mean_text,
    _step_lines,
    daily,
    figure,
    series_axis_label,
)
from lease_manager.experiments.plot_options import TIME_PLOTS
from lease_manager.observers.accounting import SLOWDOWN_BOUND
from lease_manager.observers.metrics import UNITS_FILE

if TYPE_CHECKING:
    from matplotlib.figure import Figure


USAGE_SERIES = ("utilization", "queue_length")


#: series files with columns of their own, drawn by their own figures
OWN_SERIES = ("power",)


UNITS_STEM = Path(UNITS_FILE).stem


def bounded_slowdowns(rows: Iterable[Mapping[str, str]]) -> list[float]:
    """The bounded slowdown of every lease that finished: ``max(1, (wait + run) /
    max(run, 10 s))``, the summary's ``avg_bounded_slowdown`` term by term."""
    out = []
    for row in rows:
        if row.get("state") != "done":
            continue
        start, end, wait = (_float(row.get(k)) for k in ("start", "end", "wait"))
        if start is None or end is None or wait is None:
            continue
        run = end - start
        out.append(max(1.0, (wait + run) / max(run, SLOWDOWN_BOUND)))
    return out


def usage_from_leases(rows: Iterable[Mapping[str, str]]) -> dict[str, tuple[np.ndarray,
                                                                                np.ndarray]]:
    """``queue_length`` (leases submitted and not yet started) and ``running_leases`` over
    time, rebuilt exactly from ``leases.csv`` for a run that recorded no series. A lease
    rejected or cancelled before it started leaves the queue at its ``end`` time if it has
    one, else at its submission."""
    queue: list[tuple[float, int]] = []
    running: list[tuple[float, int]] = []
    last = 0.0
    for row in rows:
        submit, start, end = (_float(row.get(k)) for k in ("submit", "start", "end"))
        if submit is None:
            continue
        last = max(last, submit, start or 0.0, end or 0.0)
        if start is not None:
            queue += [(submit, 1), (start, -1)]
            running.append((start, 1))
            if end is not None:
                running.append((end, -1))
        elif end is not None:
            queue += [(submit, 1), (end, -1)]
    out = {}
    for name, events in (("queue_length", queue), ("running_leases", running)):
        events.sort()
        times = np.array([0.0] + [t for t, _ in events] + [last])
        values = np.cumsum([0] + [d for _, d in events])
        values = np.append(values, values[-1])
        keep = np.append(times[1:] != times[:-1], True)   # the last value at each instant
        out[name] = (times[keep], values[keep].astype(float))
    return out


def busy_nodes_from_leases(rows: Iterable[Mapping[str, str]]) -> tuple[np.ndarray,
                                                                         np.ndarray]:
    """The number of nodes running at least one lease over time, rebuilt exactly from
    ``leases.csv`` (times from the first submission to the last time of the table, counts; a
    step function). A node that several leases share counts
    once; nodes of different sites (the ``site`` column) are different nodes; a lease with no
    end (still running when the run stopped) runs to the last time of the table."""
    rows = list(rows)
    last = max((v for r in rows for k in ("submit", "start", "end")
                if (v := _float(r.get(k))) is not None), default=0.0)
    events: list[tuple[float, int, tuple[str, int]]] = []
    for row in rows:
        start = _float(row.get("start"))
        nodes = {int(n) for n in (row.get("nodes") or "").split()}
        if start is None or not nodes:
            continue
        end = _float(row.get("end"))
        end = max(last, start) if end is None else end
        site = row.get("site") or ""
        for index in nodes:
            events += [(start, 1, (site, index)), (end, -1, (site, index))]
    events.sort(key=lambda e: (e[0], e[1]))   # a lease ending frees its node first
    leases_on: dict[tuple[str, int], int] = {}
    first = min((v for r in rows if (v := _float(r.get("submit"))) is not None), default=0.0)
    times, counts = [first], [0]
    busy = 0
    for time, delta, node in events:
        before = leases_on.get(node, 0)
        leases_on[node] = before + delta
        busy += int(before == 0) - int(before + delta == 0)
        if times[-1] == time:
            counts[-1] = busy
        else:
            times.append(time)
            counts.append(busy)
    if times[-1] < last:
        times.append(last)
        counts.append(busy)
    return np.array(times), np.array(counts, dtype=float)


def _run_meta(run_dir: Path) -> dict:
    try:
        meta = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def site_node_count(run_dir: Path, rows: Iterable[Mapping[str, str]]) -> tuple[int, bool]:
    """The run's number of nodes, all sites together, and whether it is exact: from
    ``run.json`` (the ``resources`` of the run or of each site), else from ``nodes.csv`` (a
    power model's table of nodes), else the highest node index in ``leases.csv`` plus one (per
    site: a lower bound, as idle nodes never appear there)."""
    from lease_manager.kernel.resources import parse_site

    meta = _run_meta(run_dir)
    sites = meta.get("sites")
    if isinstance(sites, dict) and sites:
        texts = [o.get("resources") if isinstance(o, dict) else None for o in sites.values()]
    else:
        texts = [((meta.get("effective") or {}).get("simulation") or {}).get("resources")
                 or (meta.get("settings") or {}).get("simulation.resources")]
    if all(isinstance(t, str) for t in texts):
        try:
            return sum(parse_site(str(t)).count for t in texts), True
        except ValueError:   # a site named elsewhere (in-tracefile, file:...)
            pass
    nodes_csv = Path(run_dir) / "nodes.csv"
    if nodes_csv.is_file():
        with nodes_csv.open(newline="") as fh:
            count = sum(1 for _ in csv.DictReader(fh))
        if count:
            return count, True
    highest: dict[str, int] = {}
    for row in rows:
        for n in (row.get("nodes") or "").split():
            site = row.get("site") or ""
            highest[site] = max(highest.get(site, -1), int(n))
    return max(sum(h + 1 for h in highest.values()), 1), False


#: a quantity over time: (axis label, {profile: (times, values)}, scale, unit of the mean)
Quantity = tuple[str, Mapping[str, tuple[np.ndarray, np.ndarray]], float, str]


def over_time(quantities: Sequence[Quantity], *, mode: str = "panels",
              title: str = "") -> Figure:
    """Quantities over time (one column or row each) for one or several profiles: ``panels``
    (every step; with several profiles, one row each, shared axes) or ``daily`` (each
    profile's daily mean on one axis per quantity)."""
    if mode not in TIME_PLOTS:
        raise LeaseManagerError(f"--time-plot {mode}: expected one of {', '.join(TIME_PLOTS)}")
    profiles = list(dict.fromkeys(p for _, data, _, _ in quantities for p in data))
    if mode == "panels" and len(profiles) > 1:
        fig = figure(12 if len(quantities) == 1 else 14, min(1.2 + 1.9 * len(profiles), 18))
        grid = fig.subplots(len(profiles), len(quantities), sharex=True, sharey="col",
                            squeeze=False)
        for i, profile in enumerate(profiles):
            for j, (label, data, scale, unit) in enumerate(quantities):
                ax = grid[i, j]
                if profile in data:
                    times, values = data[profile]
                    ax.plot(times / HOUR, values * scale, drawstyle="steps-post",
                            linewidth=0.7, color=f"C{i % 10}")
                    ax.set_title(f"{profile}: {_mean_text(times, values * scale, unit)}",
                                 loc="left", fontsize=9)
                    _integer_ticks_if_counts(ax, [values * scale])
                ax.set_ylabel(label, fontsize=8)
                ax.set_ylim(bottom=0)
                ax.grid(alpha=0.3)
        for ax in grid[-1]:
            ax.set_xlabel("time (hours)")
    elif mode == "daily" and profiles:
        fig = figure(12, 1.5 + 3.2 * len(quantities))
        axes = fig.subplots(len(quantities), 1, sharex=True, squeeze=False)[:, 0]
        for ax, (label, data, scale, unit) in zip(axes, quantities):
            for i, profile in enumerate(profiles):
                if profile in data:
                    times, values = data[profile]
                    days, means, _, _ = daily(times, values * scale)
                    ax.plot(days + 0.5, means, color=f"C{i % 10}", marker="o", markersize=3,
                            linewidth=1.2,
                            label=f"{profile} ({_mean_text(times, values * scale, unit)})")
            ax.set_ylabel(f"{label}\n(daily mean)", fontsize=9)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        axes[-1].set_xlabel("day of the run (a point: the day's time-weighted mean)")
    else:
        fig = figure(12, 1.5 + 2.5 * len(quantities))
        axes = fig.subplots(len(quantities), 1, sharex=True, squeeze=False)[:, 0]
        for ax, (label, data, scale, unit) in zip(axes, quantities):
            _step_lines(ax, {f"{p} ({_mean_text(t, v * scale, unit)})": (t, v)
                             for p, (t, v) in data.items()}, scale=scale)
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
        axes[-1].set_xlabel("time (hours)")
    fig.suptitle(title)
    return fig


def usage(runs: Mapping[str, Path], *, title: str = "", from_leases: bool = False,
          mode: str = "panels") -> Figure | None:
    """Utilisation (%) and queue length over time, one line per profile: the ``usage``
    probe's series (CPU in use). With ``from_leases``, a run without them gets its queue length
    and its utilisation rebuilt from ``leases.csv``, the utilisation as the share of the site's
    nodes that run a lease (:func:`busy_nodes_from_leases`; the CPU share on one-core nodes).
    None when there is nothing to draw."""
    cpu = _load(runs, "utilization")
    queue = _load(runs, "queue_length")
    nodes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    counts: list[str] = []
    if from_leases:
        for profile, run_dir in runs.items():
            if (profile in cpu and profile in queue) \
                    or not (Path(run_dir) / "leases.csv").is_file():
                continue
            rows = read_leases(run_dir)
            if profile not in queue:
                queue[profile] = usage_from_leases(rows)["queue_length"]
            if profile not in cpu:
                total, exact = site_node_count(run_dir, rows)
                times, busy = busy_nodes_from_leases(rows)
                nodes[profile] = (times, busy / total)
                counts.append(f"{total:,}" if exact else f"at least {total:,}")
    if not cpu and not nodes and not queue:
        return None
    both = bool(cpu) and bool(nodes)
    utilisation = {**cpu, **{f"{p} (nodes busy)" if both else p: v for p, v in nodes.items()}}
    label = "utilisation (% of CPU)"
    if nodes:
        label = "utilisation (% of CPU or of nodes)" if both else "utilisation (% of nodes busy)"
    fig = over_time([(label, utilisation, 100.0, "%"), ("leases waiting", queue, 1.0, "")],
                    mode=mode, title=title or "utilisation and queue length")
    for ax in fig.axes:
        if ax.get_ylabel().startswith("utilisation"):
            ax.set_ylim(0, 102)
    if nodes:
        sizes = ", ".join(dict.fromkeys(counts))
        fig.supxlabel(f"utilisation rebuilt from leases.csv: the share of the site's {sizes} "
                      "nodes that run a lease; for the CPU in use, set '[accounting] probes "
                      "= usage'", fontsize=8, color="dimgray")
    return fig


def _cdf(ax, values_by_profile: Mapping[str, Sequence[float]], scale: float,
         mean_unit: str, origin: float, at_origin: str) -> None:
    """Empirical CDFs, each starting at ``origin`` (the smallest possible value); the legend
    gives each mean and the share of values at the origin (a jump on the y axis, easy to
    miss), described by ``at_origin``."""
    for profile, values in values_by_profile.items():
        data = np.sort(np.asarray(values, dtype=float)) / scale
        if data.size == 0:
            continue
        frac = np.arange(1, data.size + 1) / data.size
        ax.step(np.concatenate([[origin], data]), np.concatenate([[0.0], frac]), where="post",
                label=f"{profile} (mean {data.mean():.2f}{mean_unit}; "
                      f"{np.mean(data <= origin):.0%} {at_origin})", linewidth=1.2)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    if ax.has_data():
        ax.legend(fontsize=8, loc="lower right")


def waits(waits_by_profile: Mapping[str, Sequence[float]], *, title: str = "") -> Figure:
    """The cumulative distribution of lease waits, one line per profile (a log-like time
    axis that keeps zero waits)."""
    fig = figure(10, 5.5)
    ax = fig.add_subplot()
    _cdf(ax, waits_by_profile, HOUR, " h", 0.0, "without wait")
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlim(left=0)
    ax.set_xlabel("wait (hours; linear below 0.1 h, logarithmic above)")
    ax.set_ylabel("fraction of leases waiting at most this long")
    ax.set_title(title or "wait-time distribution")
    return fig


def slowdowns(slowdowns_by_profile: Mapping[str, Sequence[float]], *,
              title: str = "") -> Figure:
    """The cumulative distribution of the bounded slowdowns of finished leases (10 s bound),
    one line per profile, on a logarithmic axis (the smallest is 1)."""
    fig = figure(10, 5.5)
    ax = fig.add_subplot()
    _cdf(ax, slowdowns_by_profile, 1.0, "", 1.0, "not slowed")
    ax.set_xscale("log")
    ax.set_xlim(left=1)
    ax.set_xlabel(f"bounded slowdown: max(1, (wait + run) / max(run, {SLOWDOWN_BOUND:g} s))")
    ax.set_ylabel("fraction of finished leases at most this slowed")
    ax.set_title(title or "bounded-slowdown distribution")
    return fig


def series(name: str, runs: Mapping[str, Path], *, title: str = "",
           mode: str = "panels") -> Figure:
    """Series ``name`` over time per profile (:func:`over_time`), labelled with its unit."""
    return over_time([(series_axis_label(name, runs), _load(runs, name), 1.0, "")], mode=mode,
                     title=title or name)
