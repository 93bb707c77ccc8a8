"""Figures of a sweep's runs (matplotlib, the ``plots`` extra), written as PNG files.

- ``gantt-RUN.png``: a Gantt chart of one run: time across, node index up, one bar per lease on
  the nodes it ran on (from ``leases.csv``);
- ``usage-TRACE-seed-N.png``: utilisation and queue length over time, one line per profile
  (the ``usage`` probe's ``series/utilization.csv`` and ``series/queue_length.csv``);
- ``waits-TRACE.png``: the distribution of lease waits per profile (all seeds pooled);
- ``series-NAME-TRACE-seed-N.png``: every other time series a run recorded (a plugin's
  resource contention...), one line per profile;
- with a ``[power]`` model: ``power-TRACE-seed-N.png``, the site's total power over time, one
  line per profile, with the green production and the power cap when there are any
  (``series/power.csv``), and ``node-states-RUN.png``, a timeline of every node's power state
  in the Gantt chart's run (``node_states.csv``).

:func:`make_run_plots` draws one run's figures (``report RUN-DIR --plots``).

Every drawing function returns its :class:`matplotlib.figure.Figure` (no pyplot, no global
state) so callers and tests can inspect the axes.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.errors import LeaseManagerError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lease_manager.experiments.results import Results

HOUR = 3600.0
USAGE_SERIES = ("utilization", "queue_length")
#: series files with columns of their own, drawn by their own figures
OWN_SERIES = ("power",)
STATE_COLOURS = {"on": "#4c9f38", "off": "#b0b0b0", "switching-on": "#f2a900",
                 "switching-off": "#d9534f"}
INSTALL_HINT = "pip install 'lease-manager[plots]'"


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise LeaseManagerError(f"plots need matplotlib, which is not installed: "
                                f"{INSTALL_HINT}") from None


def _figure(width: float = 10, height: float = 5) -> Figure:
    require_matplotlib()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_")


# ---------------------------------------------------------------------------------- inputs
def read_leases(run_dir: Path) -> list[dict[str, str]]:
    with (Path(run_dir) / "leases.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def read_series(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A ``series/NAME.csv`` file as (times, values)."""
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if data.size == 0:
        return np.empty(0), np.empty(0)
    return data[:, 0], data[:, 1]


def _float(text: str | None) -> float | None:
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _blocks(nodes: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted node indices as runs of consecutive ones: [(first, count), ...]."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(nodes)):
        if out and out[-1][0] + out[-1][1] == n:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((n, 1))
    return out


# --------------------------------------------------------------------------------- figures
def gantt(run_dir: Path, *, max_leases: int | None = 200, max_hours: float | None = None,
          title: str | None = None) -> Figure:
    """One bar per lease, from its start to its end on each node it ran on (the first
    ``max_leases`` leases to start, within ``max_hours`` of the first start). Leases that share
    a multi-core node overlap (the bars are translucent)."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    leases = []
    for row in read_leases(run_dir):
        start, end = _float(row.get("start")), _float(row.get("end"))
        nodes = [int(n) for n in (row.get("nodes") or "").split()]
        if start is None or end is None or not nodes:
            continue
        leases.append((start, end, nodes, row["lease_id"]))
    leases.sort(key=lambda lease: (lease[0], int(lease[3])))
    if leases and max_hours is not None:
        limit = leases[0][0] + max_hours * HOUR
        leases = [lease for lease in leases if lease[0] < limit]
    shown_all = max_leases is None or len(leases) <= max_leases
    if max_leases is not None:
        leases = leases[:max_leases]

    fig = _figure(12, 6)
    ax = fig.add_subplot()
    rects, colors = [], []
    cmap = _colormap("tab20")
    for start, end, nodes, lease_id in leases:
        for first, count in _blocks(nodes):
            rects.append(Rectangle((start / HOUR, first - 0.4), (end - start) / HOUR,
                                   count - 0.2))
            colors.append(cmap(int(lease_id) % 20))
    if rects:
        ax.add_collection(PatchCollection(rects, facecolors=colors, edgecolors="black",
                                          linewidths=0.3, alpha=0.75))
        if len(leases) <= 60:
            for start, end, nodes, lease_id in leases:
                first, count = _blocks(nodes)[0]
                ax.text((start + end) / 2 / HOUR, first + (count - 1) / 2, lease_id,
                        ha="center", va="center", fontsize=6, clip_on=True)
        ax.autoscale_view()
    else:
        ax.text(0.5, 0.5, "no lease ran", transform=ax.transAxes, ha="center")
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("node")
    what = f"{len(leases)} leases" + ("" if shown_all else " (the first to start)")
    ax.set_title(f"{title or Path(run_dir).name}: {what}")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _colormap(name: str):
    from matplotlib import colormaps

    return colormaps[name]


def _step_lines(ax, runs: Mapping[str, Path], name: str, scale: float = 1.0) -> int:
    """One step line per profile of series ``name``; returns how many were drawn."""
    drawn = 0
    for profile, run_dir in runs.items():
        path = Path(run_dir) / "series" / f"{name}.csv"
        if not path.is_file():
            continue
        times, values = read_series(path)
        if times.size == 0:
            continue
        ax.plot(times / HOUR, values * scale, drawstyle="steps-post", linewidth=0.9,
                label=profile)
        drawn += 1
    if drawn:
        ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    return drawn


def usage(runs: Mapping[str, Path], *, title: str = "") -> Figure | None:
    """Utilisation (%) and queue length over time, one line per profile; None when no run
    recorded them (they need ``[accounting] probes = usage``)."""
    if not any((Path(d) / "series" / f"{n}.csv").is_file() for d in runs.values()
               for n in USAGE_SERIES):
        return None
    fig = _figure(12, 6.5)
    top, bottom = fig.subplots(2, 1, sharex=True)
    _step_lines(top, runs, "utilization", scale=100.0)
    top.set_ylabel("utilisation (%)")
    top.set_ylim(bottom=0)
    _step_lines(bottom, runs, "queue_length")
    bottom.set_ylabel("leases waiting")
    bottom.set_xlabel("time (hours)")
    top.set_title(title or "utilisation and queue length")
    return fig


def waits(waits_by_profile: Mapping[str, Sequence[float]], *, title: str = "") -> Figure:
    """The cumulative distribution of lease waits, one line per profile (a log-like time
    axis that keeps zero waits)."""
    fig = _figure(10, 5.5)
    ax = fig.add_subplot()
    for profile, values in waits_by_profile.items():
        data = np.sort(np.asarray(values, dtype=float)) / HOUR
        if data.size == 0:
            continue
        frac = np.arange(1, data.size + 1) / data.size
        ax.step(np.concatenate([[0.0], data]), np.concatenate([[0.0], frac]), where="post",
                label=f"{profile} (mean {data.mean():.2f} h)", linewidth=1.2)
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlim(left=0)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("wait (hours; linear below 0.1 h, logarithmic above)")
    ax.set_ylabel("fraction of leases waiting at most this long")
    ax.set_title(title or "wait-time distribution")
    ax.grid(alpha=0.3)
    if ax.has_data():
        ax.legend(fontsize=8, loc="lower right")
    return fig


def series(name: str, runs: Mapping[str, Path], *, title: str = "") -> Figure:
    """Series ``name`` over time, one line per profile."""
    fig = _figure(12, 5)
    ax = fig.add_subplot()
    _step_lines(ax, runs, name)
    ax.set_xlabel("time (hours)")
    ax.set_ylabel(name)
    ax.set_title(title or name)
    return fig


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


def power(runs: Mapping[str, Path], *, title: str = "") -> Figure | None:
    """The site's total power (kW) over time, one line per profile, with the green production
    and the power cap of the first run that has them; None when no run has a power model."""
    profiles = {p: data for p, d in runs.items() if (data := read_power(d)) is not None}
    if not profiles:
        return None
    fig = _figure(12, 5)
    ax = fig.add_subplot()
    for profile, data in profiles.items():
        ax.plot(data["time"] / HOUR, data["total_watts"] / 1000, drawstyle="steps-post",
                linewidth=0.9, label=f"{profile}: total power")
    first = next(iter(profiles.values()))
    if (first["green_watts"] > 0).any():
        ax.plot(first["time"] / HOUR, first["green_watts"] / 1000, drawstyle="steps-post",
                color="green", linewidth=0.9, label="green production")
    if not np.isnan(first["cap_watts"]).all():
        ax.plot(first["time"] / HOUR, first["cap_watts"] / 1000, drawstyle="steps-post",
                color="black", linestyle="--", linewidth=0.9, label="power cap")
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("power (kW)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    ax.set_title(title or "site power")
    return fig


def node_states(run_dir: Path, *, max_hours: float | None = None,
                title: str = "") -> Figure | None:
    """Every node's power state over time (``node_states.csv``), or None without one."""
    path = Path(run_dir) / "node_states.csv"
    if not path.is_file():
        return None
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    nodes = max((int(r["node"]) for r in rows), default=0) + 1
    fig = _figure(12, min(2 + nodes * 0.08, 12))
    ax = fig.add_subplot()
    by_state: dict[str, list[tuple[float, float, int]]] = {}
    for r in rows:
        start, end = float(r["start"]) / HOUR, float(r["end"]) / HOUR
        if max_hours is not None and start >= max_hours:
            continue
        by_state.setdefault(r["state"], []).append((start, end - start, int(r["node"])))
    for state, bars in sorted(by_state.items()):
        colour = STATE_COLOURS.get(state, "#5b8bd0")
        for node in sorted({b[2] for b in bars}):
            ax.broken_barh([(s, w) for s, w, n in bars if n == node], (node - 0.4, 0.8),
                           facecolors=colour, linewidth=0)
        ax.plot([], [], color=colour, linewidth=6, label=state)
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("node")
    ax.set_ylim(-0.5, nodes - 0.5)
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if max_hours is not None:
        ax.set_xlim(right=max_hours)
    ax.legend(fontsize=8, loc="upper right", ncols=4)
    ax.set_title(title or "node power states")
    return fig


# -------------------------------------------------------------------------------- a sweep
def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


# Longer than ~50 lines on purpose: a list of the figures of a report, in the order they are
# written.
def make_plots(results: Results, directory: Path, *, gantt_run: str | None = None,
               gantt_leases: int | None = 200, gantt_hours: float | None = None,
               seed: int | None = None) -> tuple[list[Path], list[str]]:
    """Draw every figure of a sweep into ``directory/plots``; returns (PNG paths, notes)."""
    directory = Path(directory)
    plots = directory / "plots"
    done = results.done()
    written: list[Path] = []
    notes: list[str] = []
    if not done:
        return written, ["no finished run to plot"]

    # the Gantt chart of one run
    run_ids = [r["run_id"] for r in done]
    if gantt_run is not None and gantt_run not in run_ids:
        raise LeaseManagerError(f"--gantt {gantt_run}: no finished run with this id "
                                f"(e.g. {run_ids[0]})")
    gantt_id = gantt_run or run_ids[0]
    fig = gantt(directory / gantt_id, max_leases=gantt_leases, max_hours=gantt_hours,
                title=f"{gantt_id}")
    written.append(_save(fig, plots / f"gantt-{_slug(gantt_id)}.png"))
    states_fig = node_states(directory / gantt_id, max_hours=gantt_hours,
                             title=f"node power states: {gantt_id}")
    if states_fig is not None:
        written.append(_save(states_fig, plots / f"node-states-{_slug(gantt_id)}.png"))

    seeds = sorted({r["seed"] for r in done})
    if seed is not None and seed not in seeds:
        raise LeaseManagerError(f"--seed {seed}: no finished run has this seed "
                                f"(seeds: {', '.join(map(str, seeds))})")
    usage_missing = False
    for trace in results.traces:
        rows = [r for r in done if r["trace"] == trace]
        if not rows:
            continue
        trace_seed = seed if seed is not None else min(r["seed"] for r in rows)
        runs = {p: directory / r["run_id"] for p in results.profiles for r in rows
                if r["profile"] == p and r["seed"] == trace_seed}
        label = f"{trace}, seed {trace_seed}"

        usage_fig = usage(runs, title=f"utilisation and queue length: {label}")
        if usage_fig is None:
            usage_missing = True
        else:
            written.append(_save(usage_fig,
                                 plots / f"usage-{_slug(trace)}-seed-{trace_seed}.png"))

        by_profile: dict[str, list[float]] = {}
        for r in rows:
            values = [_float(x["wait"]) for x in read_leases(directory / r["run_id"])]
            by_profile.setdefault(r["profile"], []).extend(v for v in values if v is not None)
        fig = waits({p: by_profile[p] for p in results.profiles if p in by_profile},
                    title=f"wait-time distribution: {trace} (all seeds)")
        written.append(_save(fig, plots / f"waits-{_slug(trace)}.png"))

        power_fig = power(runs, title=f"site power: {label}")
        if power_fig is not None:
            written.append(_save(power_fig,
                                 plots / f"power-{_slug(trace)}-seed-{trace_seed}.png"))
        names = sorted({p.stem for d in runs.values() for p in (d / "series").glob("*.csv")}
                       - set(USAGE_SERIES) - set(OWN_SERIES))
        for name in names:
            fig = series(name, runs, title=f"{name}: {label}")
            written.append(_save(fig, plots / f"series-{_slug(name)}-{_slug(trace)}"
                                              f"-seed-{trace_seed}.png"))
    if usage_missing:
        notes.append("no utilisation or queue-length series: add '[accounting] probes = usage' "
                     "to the sweep to plot them")
    return written, notes


def make_run_plots(run_dir: Path, *, gantt_leases: int | None = 200,
                   gantt_hours: float | None = None) -> list[Path]:
    """Draw one run's figures into ``run_dir/plots``: its Gantt chart, its recorded series,
    and with a power model its power and node states."""
    run_dir = Path(run_dir)
    plots = run_dir / "plots"
    name = run_dir.resolve().name
    written = [_save(gantt(run_dir, max_leases=gantt_leases, max_hours=gantt_hours,
                           title=name), plots / "gantt.png")]
    runs = {name: run_dir}
    usage_fig = usage(runs, title=f"utilisation and queue length: {name}")
    if usage_fig is not None:
        written.append(_save(usage_fig, plots / "usage.png"))
    power_fig = power(runs, title=f"site power: {name}")
    if power_fig is not None:
        written.append(_save(power_fig, plots / "power.png"))
    states_fig = node_states(run_dir, max_hours=gantt_hours,
                             title=f"node power states: {name}")
    if states_fig is not None:
        written.append(_save(states_fig, plots / "node-states.png"))
    names = sorted({p.stem for p in (run_dir / "series").glob("*.csv")}
                   - set(USAGE_SERIES) - set(OWN_SERIES))
    for series_name in names:
        written.append(_save(series(series_name, runs, title=f"{series_name}: {name}"),
                             plots / f"series-{_slug(series_name)}.png"))
    return written
