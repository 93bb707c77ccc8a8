"""Figures of a run with a power model: the site's total power over time (with green
production and the power cap) and the timeline of every node's power state."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.plot_base import HOUR, daily, figure, time_mean
from lease_manager.experiments.plot_options import TIME_PLOTS

if TYPE_CHECKING:
    from matplotlib.figure import Figure


STATE_COLOURS = {"on": "#4c9f38", "off": "#b0b0b0", "switching-on": "#f2a900",
                 "switching-off": "#d9534f"}


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
