"""Figures of a sweep's runs (matplotlib, the ``plots`` extra), written as PNG files.

- ``gantt-RUN.png``: a Gantt chart of one run (:mod:`lease_manager.experiments.gantt`),
  coloured by wait, size or lease type, hatched by state, with a colour bar or a legend;
- ``usage-TRACE-seed-N.png``: utilisation and queue length over time, one line per profile
  (the ``usage`` probe's ``series/utilization.csv`` and ``series/queue_length.csv``; without
  them, rebuilt from ``leases.csv``, the utilisation as the share of nodes running a lease);
- ``waits-TRACE.png`` and ``slowdowns-TRACE.png``: the distributions of lease waits and of
  bounded slowdowns per profile (all seeds pooled);
- ``series-NAME-TRACE-seed-N.png``: every other time series a run recorded (a plugin's
  resource contention...), one line per profile, labelled with the unit the recording policy
  declared (``series/units.csv``), integer ticks for counts;
- with a ``[power]`` model: ``power-TRACE-seed-N.png``, the site's total power over time
  (``series/power.csv``), one panel per profile with its green production and power cap, or
  each profile's daily mean and range on one axis; and ``node-states-RUN.png``, a timeline of
  every node's power state (``node_states.csv``) in the run with the most node switch-ons, or
  a chosen one, over the whole run or a window of hours.

:func:`make_run_plots` draws one run's figures (``report RUN-DIR --plots``). Both record the
files they write in ``plots/report-plots.txt`` and, run again, replace those files and only
those (other tools' figures in ``plots/`` stay).

Every drawing function returns its :class:`matplotlib.figure.Figure` (no pyplot, no global
state) so callers and tests can inspect the axes.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.gantt import blocks as _blocks  # noqa: F401 - for callers
from lease_manager.experiments.gantt import gantt, read_leases
from lease_manager.experiments.gantt import number as _float
from lease_manager.experiments.plot_options import TIME_PLOTS
from lease_manager.observers.accounting import SLOWDOWN_BOUND
from lease_manager.observers.metrics import UNITS_FILE, read_units

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lease_manager.experiments.results import Results

HOUR = 3600.0
DAY = 24 * HOUR
USAGE_SERIES = ("utilization", "queue_length")
#: series files with columns of their own, drawn by their own figures
OWN_SERIES = ("power",)
UNITS_STEM = Path(UNITS_FILE).stem
STATE_COLOURS = {"on": "#4c9f38", "off": "#b0b0b0", "switching-on": "#f2a900",
                 "switching-off": "#d9534f"}
INSTALL_HINT = "pip install 'lease-manager[plots]'"


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise LeaseManagerError(f"plots need matplotlib, which is not installed: "
                                f"{INSTALL_HINT}") from None


def figure(width: float = 10, height: float = 5) -> Figure:
    """An empty figure (constrained layout), without pyplot's global state."""
    require_matplotlib()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_")


# ---------------------------------------------------------------------------------- inputs
def read_series(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A ``series/NAME.csv`` file as (times, values)."""
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if data.size == 0:
        return np.empty(0), np.empty(0)
    return data[:, 0], data[:, 1]


def series_axis_label(name: str, runs: Mapping[str, Path]) -> str:
    """The axis label of series ``name``: its label and unit from the first run's
    ``series/units.csv``, else its name."""
    for run_dir in runs.values():
        unit, label = read_units(Path(run_dir) / "series").get(name, ("", ""))
        if unit or label:
            text = label or name
            return f"{text} ({unit})" if unit and unit not in text else text
    return name


def _integer_ticks_if_counts(ax, values: Iterable[np.ndarray]) -> None:
    """Integer ticks on the y axis when every value drawn is a whole number (a count)."""
    from matplotlib.ticker import MaxNLocator

    arrays = [np.asarray(v) for v in values]
    if arrays and all(a.size == 0 or np.array_equal(a, np.round(a)) for a in arrays):
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))


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


def time_mean(times: np.ndarray, values: np.ndarray) -> float:
    """The time-weighted mean of a step function (``values[i]`` from ``times[i]`` to
    ``times[i + 1]``; the last value marks the end) over its span; nan when it spans no time."""
    span = times[-1] - times[0] if times.size else 0.0
    if span <= 0:
        return math.nan
    return float(np.sum(np.diff(times) * values[:-1]) / span)


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


# --------------------------------------------------------------------------------- figures
def _load(runs: Mapping[str, Path], name: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Series ``name`` of every run that recorded it, by profile."""
    out = {}
    for profile, run_dir in runs.items():
        path = Path(run_dir) / "series" / f"{name}.csv"
        if path.is_file():
            times, values = read_series(path)
            if times.size:
                out[profile] = (times, values)
    return out


def _step_lines(ax, data: Mapping[str, tuple[np.ndarray, np.ndarray]],
                scale: float = 1.0) -> int:
    """One step line per profile; integer ticks when every value is a count; returns how
    many lines were drawn."""
    for profile, (times, values) in data.items():
        ax.plot(times / HOUR, values * scale, drawstyle="steps-post", linewidth=0.9,
                label=profile)
    if data:
        ax.legend(fontsize=8, loc="best")
        _integer_ticks_if_counts(ax, (v * scale for _, v in data.values()))
    ax.grid(alpha=0.3)
    return len(data)


#: a quantity over time: (axis label, {profile: (times, values)}, scale, unit of the mean)
Quantity = tuple[str, Mapping[str, tuple[np.ndarray, np.ndarray]], float, str]


def _mean_text(times: np.ndarray, values: np.ndarray, unit: str) -> str:
    return f"mean {time_mean(times, values):,.1f}{unit}"


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


def read_power(run_dir: Path) -> dict[str, np.ndarray] | None:
    """A run's ``series/power.csv`` as arrays (``cap_watts`` nan where there is no cap), or
    None when it has none."""
    path = Path(run_dir) / "series" / "power.csv"
    if not path.is_file():
        return None
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    columns = ("time", "it_watts", "total_watts", "green_watts", "cap_watts")
    return {c: np.array([float(r[c]) if r[c] else math.nan for r in rows]) for c in columns}


def daily(times: np.ndarray, values: np.ndarray, day: float = DAY) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A step function (``values[i]`` from ``times[i]`` to ``times[i + 1]``; the last value
    marks the end) summarised per day of the run's clock: (day numbers, time-weighted means,
    minima, maxima), for the days it covers (a partial day over its covered part)."""
    if times.size < 2:
        return (np.empty(0),) * 4
    cuts = np.arange(math.floor(times[0] / day) + 1, math.ceil(times[-1] / day)) * day
    edges = np.union1d(times, cuts)
    levels = values[np.searchsorted(times, edges[:-1], side="right") - 1]
    widths = np.diff(edges)
    keep = widths > 0
    days = np.floor(edges[:-1][keep] / day).astype(int)
    levels, widths = levels[keep], widths[keep]
    numbers, first = np.unique(days, return_index=True)
    means = np.add.reduceat(levels * widths, first) / np.add.reduceat(widths, first)
    return (numbers.astype(float), means, np.minimum.reduceat(levels, first),
            np.maximum.reduceat(levels, first))


def _power_panels(profiles: Mapping[str, dict[str, np.ndarray]], title: str) -> Figure:
    """One panel per profile, shared axes: every step of the total power, with that run's
    green production and cap."""
    fig = figure(12, min(1.2 + 2.1 * len(profiles), 18))
    axes = fig.subplots(len(profiles), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    for ax, (profile, data) in zip(axes, profiles.items()):
        hours, kw = data["time"] / HOUR, data["total_watts"] / 1000
        ax.plot(hours, kw, drawstyle="steps-post", linewidth=0.7, color="#0072b2",
                label="total power")
        if (data["green_watts"] > 0).any():
            ax.plot(hours, data["green_watts"] / 1000, drawstyle="steps-post", color="#009e73",
                    linewidth=0.8, label="green production")
        if not np.isnan(data["cap_watts"]).all():
            ax.plot(hours, data["cap_watts"] / 1000, drawstyle="steps-post", color="black",
                    linestyle="--", linewidth=0.8, label="power cap")
        ax.set_title(f"{profile}: mean {time_mean(data['time'], kw):,.1f} kW, lowest "
                     f"{kw[:-1].min() if kw.size > 1 else math.nan:,.1f} kW, highest "
                     f"{kw.max():,.1f} kW", loc="left", fontsize=9)
        ax.set_ylabel("power (kW)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if len(ax.lines) > 1:
            ax.legend(fontsize=7, loc="lower right", ncols=3)
    axes[-1].set_xlabel("time (hours)")
    fig.suptitle(title or "site power")
    return fig


def _power_daily(profiles: Mapping[str, dict[str, np.ndarray]], title: str) -> Figure:
    """One line per profile: the daily mean of the total power, in a band from the day's
    lowest to its highest power."""
    fig = figure(12, 5.5)
    ax = fig.add_subplot()
    for i, (profile, data) in enumerate(profiles.items()):
        days, means, lows, highs = daily(data["time"], data["total_watts"] / 1000)
        colour = f"C{i % 10}"
        mean = time_mean(data["time"], data["total_watts"]) / 1000
        ax.plot(days + 0.5, means, color=colour, marker="o", markersize=3, linewidth=1.4,
                label=f"{profile}: mean {mean:,.1f} kW")
        # the range as two thin lines: filled bands of several profiles hide each other
        ax.plot(days + 0.5, lows, color=colour, linewidth=0.7, linestyle="--")
        ax.plot(days + 0.5, highs, color=colour, linewidth=0.7, linestyle=":")
    first = next(iter(profiles.values()))
    if (first["green_watts"] > 0).any():
        days, means, _, _ = daily(first["time"], first["green_watts"] / 1000)
        ax.plot(days + 0.5, means, color="green", linestyle=":", linewidth=1.2,
                label="green production (daily mean)")
    from matplotlib.lines import Line2D

    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="gray", linewidth=0.7, linestyle="--",
                       label="the day's lowest power"),
                Line2D([], [], color="gray", linewidth=0.7, linestyle=":",
                       label="the day's highest power")]
    ax.set_xlabel("day of the run (a point: the day's time-weighted mean power)")
    ax.set_ylabel("power (kW)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title or "site power, daily")
    return fig


def power(runs: Mapping[str, Path], *, title: str = "", mode: str = "panels") -> Figure | None:
    """The site's total power (kW) over time: ``panels``, one panel per profile with every
    step, its green production and power cap; or ``daily``, each profile's daily mean with the
    day's range, on one axis. None when no run has a power model."""
    if mode not in TIME_PLOTS:
        raise LeaseManagerError(f"--time-plot {mode}: expected one of {', '.join(TIME_PLOTS)}")
    profiles = {p: data for p, d in runs.items() if (data := read_power(d)) is not None}
    if not profiles:
        return None
    return _power_panels(profiles, title) if mode == "panels" else _power_daily(profiles, title)


def read_node_states(run_dir: Path) -> tuple[list[dict[str, str]], int] | None:
    """The rows of a run's ``node_states.csv`` and its number of nodes, or None without one."""
    path = Path(run_dir) / "node_states.csv"
    if not path.is_file():
        return None
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return rows, max((int(r["node"]) for r in rows), default=0) + 1


def states_in_order(states: Iterable[str]) -> list[str]:
    """``states`` in the order of :data:`STATE_COLOURS`, then any other by name."""
    present = set(states)
    return [s for s in STATE_COLOURS if s in present] + sorted(present - set(STATE_COLOURS))


def node_states(run_dir: Path, *, window: tuple[float, float] | None = None,
                title: str = "") -> Figure | None:
    """Every node's power state over time (``node_states.csv``), or None without one;
    ``window``: only the hours (from, to) of the run's clock."""
    read = read_node_states(run_dir)
    if read is None:
        return None
    rows, nodes = read
    from matplotlib.collections import PolyCollection

    low, high = window if window is not None else (-math.inf, math.inf)
    fig = figure(12, min(2 + nodes * 0.08, 12))
    ax = fig.add_subplot()
    by_state: dict[str, list[tuple[float, float, int]]] = {}
    for r in rows:
        start, end = float(r["start"]) / HOUR, float(r["end"]) / HOUR
        if end <= low or start >= high:
            continue
        start, end = max(start, low), min(end, high)
        by_state.setdefault(r["state"], []).append((start, end - start, int(r["node"])))
    for state in states_in_order(by_state):
        colour = STATE_COLOURS.get(state, "#5b8bd0")
        ax.add_collection(PolyCollection(   # one collection a state: 78,000 bars in seconds
            [[(s, n - 0.4), (s + w, n - 0.4), (s + w, n + 0.4), (s, n + 0.4)]
             for s, w, n in by_state[state]], facecolors=colour, linewidths=0))
        ax.plot([], [], color=colour, linewidth=6, label=state)
    ax.autoscale_view()
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("node")
    ax.set_ylim(-0.5, nodes - 0.5)
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if window is not None:
        ax.set_xlim(low, high)
    if by_state:
        ax.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=4)
    else:
        ax.text(0.5, 0.5, "no state in this window", transform=ax.transAxes, ha="center")
    ax.set_title(title or "node power states", loc="left")
    return fig


def most_switch_ons(rows: Iterable[Mapping[str, object]]) -> Mapping[str, object] | None:
    """The result row with the most ``node_switch_ons`` (the first on a tie), or None when
    no row has that field (no power model)."""
    best: Mapping[str, object] | None = None
    for row in rows:
        value = row.get("node_switch_ons")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if best is None or value > best["node_switch_ons"]:   # type: ignore[operator]
            best = row
    return best


# ------------------------------------------------------------------- writing and replacing
#: the list of the files ``report --plots`` wrote into a ``plots/`` folder, one name a line
MANIFEST = "report-plots.txt"


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def previous_plots(plots: Path) -> list[str]:
    """The file names the last ``report --plots`` wrote into ``plots`` (its manifest)."""
    try:
        lines = (Path(plots) / MANIFEST).read_text().splitlines()
    except OSError:
        return []
    return [line for line in lines if line and not line.startswith("#") and "/" not in line]


def replace_previous(plots: Path, written: Sequence[Path], previous: Sequence[str]) -> str:
    """Remove the files of ``previous`` (an earlier report's manifest) that were not written
    again, record ``written`` as the new manifest, and say so in one line (without the PNG
    files there that another tool wrote)."""
    plots = Path(plots)
    names = [p.name for p in written]
    stale = [n for n in previous if n not in names and (plots / n).is_file()]
    for name in stale:
        (plots / name).unlink()
    plots.mkdir(parents=True, exist_ok=True)
    (plots / MANIFEST).write_text("# written by 'lease-manager report --plots', which replaces "
                                  "these files (and only these) when run again\n"
                                  + "".join(f"{n}\n" for n in names))
    others = sorted(p.name for p in plots.glob("*.png") if p.name not in names)
    line = f"plots: {len(names)} PNG files in {plots}/"
    if previous:
        line += f", replacing the {len(previous)} the previous report wrote"
        if stale:
            line += f" ({len(stale)} no longer drawn: removed)"
    if others:
        line += (f"; {len(others)} other PNG file{'s' if len(others) > 1 else ''} there, not "
                 f"in its {MANIFEST}, left alone")
    return line


# -------------------------------------------------------------------------------- a sweep
def _states_run(done: Sequence[Mapping[str, object]], states_run: str | None,
                seed: int | None) -> tuple[str, str]:
    """The run whose node states a sweep's report draws, and why it is that one."""
    if states_run is not None:
        if states_run not in [r["run_id"] for r in done]:
            raise LeaseManagerError(f"--states-run {states_run}: no finished run with this id "
                                    f"(e.g. {done[0]['run_id']})")
        return states_run, "chosen"
    pool = [r for r in done if seed is None or r["seed"] == seed]
    best = most_switch_ons(pool)
    if best is None:
        return str(pool[0]["run_id"]), "the first run"
    return (str(best["run_id"]), f"{best['node_switch_ons']:,.0f} switch-ons, the most of "
                                 f"the {len(pool)} runs")


# Longer than ~50 lines on purpose: a list of the figures of a report, in the order they are
# written.
def runs_at_one_seed(results: Results, done: Sequence[Mapping[str, Any]], directory: Path,
                     trace: str, seed: int | None) -> tuple[dict[str, Path], int] | None:
    """Each profile's run folder of ``trace`` at ``seed`` (None: the lowest seed with a
    finished run), and that seed; None when no run of ``trace`` finished."""
    rows = [r for r in done if r["trace"] == trace]
    if not rows:
        return None
    trace_seed = seed if seed is not None else min(r["seed"] for r in rows)
    runs = {p: directory / r["run_id"] for p in results.profiles for r in rows
            if r["profile"] == p and r["seed"] == trace_seed}
    return runs, trace_seed


def make_plots(results: Results, directory: Path, *, gantt_run: str | None = None,
               gantt_leases: int | None = 200, gantt_hours: float | None = None,
               seed: int | None = None, colour_by: str = "auto", time_plot: str = "panels",
               states_run: str | None = None,
               states_window: tuple[float, float] | None = None,
               ) -> tuple[list[Path], list[str], str]:
    """Draw every figure of a sweep into ``directory/plots``, replacing those of the previous
    report; returns (PNG paths, notes, a line that says what was written and replaced)."""
    directory = Path(directory)
    plots = directory / "plots"
    done = results.done()
    written: list[Path] = []
    notes: list[str] = []
    if not done:
        return written, ["no finished run to plot"], "plots: none drawn"
    if time_plot not in TIME_PLOTS:
        raise LeaseManagerError(f"--time-plot {time_plot}: expected one of "
                                f"{', '.join(TIME_PLOTS)}")
    seeds = sorted({r["seed"] for r in done})
    if seed is not None and seed not in seeds:
        raise LeaseManagerError(f"--seed {seed}: no finished run has this seed "
                                f"(seeds: {', '.join(map(str, seeds))})")
    previous = previous_plots(plots)

    # the Gantt chart of one run
    run_ids = [r["run_id"] for r in done]
    if gantt_run is not None and gantt_run not in run_ids:
        raise LeaseManagerError(f"--gantt {gantt_run}: no finished run with this id "
                                f"(e.g. {run_ids[0]})")
    gantt_id = gantt_run or run_ids[0]
    fig = gantt(directory / gantt_id, max_leases=gantt_leases, max_hours=gantt_hours,
                title=f"{gantt_id}", colour_by=colour_by)
    written.append(_save(fig, plots / f"gantt-{_slug(gantt_id)}.png"))
    states_id, why = _states_run(done, states_run, seed)
    states_fig = node_states(directory / states_id, window=states_window,
                             title=f"node power states: {states_id} ({why})")
    if states_fig is not None:
        written.append(_save(states_fig, plots / f"node-states-{_slug(states_id)}.png"))

    for trace in results.traces:
        one_seed = runs_at_one_seed(results, done, directory, trace, seed)
        if one_seed is None:
            continue
        runs, trace_seed = one_seed
        rows = [r for r in done if r["trace"] == trace]
        label = f"{trace}, seed {trace_seed}"

        usage_fig = usage(runs, title=f"utilisation and queue length: {label}",
                          from_leases=True, mode=time_plot)
        if usage_fig is not None:
            written.append(_save(usage_fig,
                                 plots / f"usage-{_slug(trace)}-seed-{trace_seed}.png"))

        by_profile: dict[str, list[float]] = {}
        slowed: dict[str, list[float]] = {}
        for r in rows:
            leases = read_leases(directory / r["run_id"])
            values = [_float(x["wait"]) for x in leases]
            by_profile.setdefault(r["profile"], []).extend(v for v in values if v is not None)
            slowed.setdefault(r["profile"], []).extend(bounded_slowdowns(leases))
        fig = waits({p: by_profile[p] for p in results.profiles if p in by_profile},
                    title=f"wait-time distribution: {trace} (all seeds)")
        written.append(_save(fig, plots / f"waits-{_slug(trace)}.png"))
        fig = slowdowns({p: slowed[p] for p in results.profiles if p in slowed},
                        title=f"bounded-slowdown distribution: {trace} (all seeds)")
        written.append(_save(fig, plots / f"slowdowns-{_slug(trace)}.png"))

        power_fig = power(runs, title=f"site power: {label}", mode=time_plot)
        if power_fig is not None:
            written.append(_save(power_fig,
                                 plots / f"power-{_slug(trace)}-seed-{trace_seed}.png"))
        names = sorted({p.stem for d in runs.values() for p in (d / "series").glob("*.csv")}
                       - set(USAGE_SERIES) - set(OWN_SERIES) - {UNITS_STEM})
        for name in names:
            fig = series(name, runs, title=f"{name}: {label}", mode=time_plot)
            written.append(_save(fig, plots / f"series-{_slug(name)}-{_slug(trace)}"
                                              f"-seed-{trace_seed}.png"))
    return written, notes, replace_previous(plots, written, previous)


def make_run_plots(run_dir: Path, *, gantt_leases: int | None = 200,
                   gantt_hours: float | None = None, colour_by: str = "auto",
                   time_plot: str = "panels",
                   states_window: tuple[float, float] | None = None) -> tuple[list[Path], str]:
    """Draw one run's figures into ``run_dir/plots``, replacing those of the previous report:
    its Gantt chart, utilisation and queue length (rebuilt from ``leases.csv`` without the
    ``usage`` probe), the distributions of wait and bounded slowdown, its recorded series,
    and with a power model its power and node states. Returns (PNG paths, a line that says
    what was written and replaced)."""
    run_dir = Path(run_dir)
    plots = run_dir / "plots"
    previous = previous_plots(plots)
    name = run_dir.resolve().name
    written = [_save(gantt(run_dir, max_leases=gantt_leases, max_hours=gantt_hours,
                           title=name, colour_by=colour_by), plots / "gantt.png")]
    runs = {name: run_dir}
    usage_fig = usage(runs, title=f"utilisation and queue length: {name}", from_leases=True,
                      mode=time_plot)
    if usage_fig is not None:
        written.append(_save(usage_fig, plots / "usage.png"))
    leases = read_leases(run_dir)
    written.append(_save(waits({name: [v for x in leases if (v := _float(x["wait"])) is not None]},
                               title=f"wait-time distribution: {name}"), plots / "waits.png"))
    written.append(_save(slowdowns({name: bounded_slowdowns(leases)},
                                   title=f"bounded-slowdown distribution: {name}"),
                         plots / "slowdowns.png"))
    power_fig = power(runs, title=f"site power: {name}", mode=time_plot)
    if power_fig is not None:
        written.append(_save(power_fig, plots / "power.png"))
    states_fig = node_states(run_dir, window=states_window,
                             title=f"node power states: {name}")
    if states_fig is not None:
        written.append(_save(states_fig, plots / "node-states.png"))
    names = sorted({p.stem for p in (run_dir / "series").glob("*.csv")}
                   - set(USAGE_SERIES) - set(OWN_SERIES) - {UNITS_STEM})
    for series_name in names:
        written.append(_save(series(series_name, runs, title=f"{series_name}: {name}",
                                    mode=time_plot),
                             plots / f"series-{_slug(series_name)}.png"))
    return written, replace_previous(plots, written, previous)
