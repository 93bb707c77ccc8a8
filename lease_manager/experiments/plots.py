"""Figures of a sweep's runs (matplotlib, the ``plots`` extra), written as PNG files.

- ``gantt-RUN.png``: a Gantt chart of one run (:mod:`lease_manager.experiments.gantt`),
  coloured by lease type, hatched by state, with a legend;
- ``usage-TRACE-seed-N.png``: utilisation and queue length over time, one line per profile
  (the ``usage`` probe's ``series/utilization.csv`` and ``series/queue_length.csv``);
- ``waits-TRACE.png`` and ``slowdowns-TRACE.png``: the distributions of lease waits and of
  bounded slowdowns per profile (all seeds pooled);
- ``series-NAME-TRACE-seed-N.png``: every other time series a run recorded (a plugin's
  resource contention...), one line per profile, labelled with the unit the recording policy
  declared (``series/units.csv``), integer ticks for counts;
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
from lease_manager.experiments.gantt import blocks as _blocks  # noqa: F401 - for callers
from lease_manager.experiments.gantt import gantt, read_leases
from lease_manager.experiments.gantt import number as _float
from lease_manager.observers.accounting import SLOWDOWN_BOUND
from lease_manager.observers.metrics import UNITS_FILE, read_units

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lease_manager.experiments.results import Results

HOUR = 3600.0
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


def usage(runs: Mapping[str, Path], *, title: str = "",
          from_leases: bool = False) -> Figure | None:
    """Utilisation (%) and queue length over time, one line per profile (the ``usage``
    probe's series). With ``from_leases``, a run without them gets its queue length and running
    leases rebuilt from ``leases.csv`` (utilisation needs the probe). None when there is
    nothing to draw."""
    utilisation = _load(runs, "utilization")
    queue = _load(runs, "queue_length")
    running: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if from_leases:
        for profile, run_dir in runs.items():
            if profile not in queue and (Path(run_dir) / "leases.csv").is_file():
                rebuilt = usage_from_leases(read_leases(run_dir))
                queue[profile] = rebuilt["queue_length"]
                running[profile] = rebuilt["running_leases"]
    if not utilisation and not queue:
        return None
    fig = figure(12, 6.5)
    top, bottom = fig.subplots(2, 1, sharex=True)
    if utilisation:
        _step_lines(top, utilisation, scale=100.0)
        top.set_ylabel("utilisation (% of CPU)")
        top.set_ylim(bottom=0)
    else:
        _step_lines(top, running)
        top.set_ylabel("leases running")
        top.set_ylim(bottom=0)
        top.text(0.01, 0.97, "utilisation needs '[accounting] probes = usage'; rebuilt from "
                 "leases.csv", transform=top.transAxes, va="top", fontsize=7, color="dimgray")
    _step_lines(bottom, queue)
    bottom.set_ylabel("leases waiting")
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel("time (hours)")
    top.set_title(title or ("utilisation and queue length" if utilisation
                            else "running leases and queue length"))
    return fig


def _cdf(ax, values_by_profile: Mapping[str, Sequence[float]], scale: float,
         mean_unit: str, origin: float) -> None:
    """Empirical CDFs, each starting at ``origin`` (the smallest possible value)."""
    for profile, values in values_by_profile.items():
        data = np.sort(np.asarray(values, dtype=float)) / scale
        if data.size == 0:
            continue
        frac = np.arange(1, data.size + 1) / data.size
        ax.step(np.concatenate([[origin], data]), np.concatenate([[0.0], frac]), where="post",
                label=f"{profile} (mean {data.mean():.2f}{mean_unit})", linewidth=1.2)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    if ax.has_data():
        ax.legend(fontsize=8, loc="lower right")


def waits(waits_by_profile: Mapping[str, Sequence[float]], *, title: str = "") -> Figure:
    """The cumulative distribution of lease waits, one line per profile (a log-like time
    axis that keeps zero waits)."""
    fig = figure(10, 5.5)
    ax = fig.add_subplot()
    _cdf(ax, waits_by_profile, HOUR, " h", 0.0)
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
    _cdf(ax, slowdowns_by_profile, 1.0, "", 1.0)
    ax.set_xscale("log")
    ax.set_xlim(left=1)
    ax.set_xlabel(f"bounded slowdown: max(1, (wait + run) / max(run, {SLOWDOWN_BOUND:g} s))")
    ax.set_ylabel("fraction of finished leases at most this slowed")
    ax.set_title(title or "bounded-slowdown distribution")
    return fig


def series(name: str, runs: Mapping[str, Path], *, title: str = "") -> Figure:
    """Series ``name`` over time, one line per profile, labelled with its unit."""
    fig = figure(12, 5)
    ax = fig.add_subplot()
    _step_lines(ax, _load(runs, name))
    ax.set_xlabel("time (hours)")
    ax.set_ylabel(series_axis_label(name, runs))
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
    fig = figure(12, 5)
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
    fig = figure(12, min(2 + nodes * 0.08, 12))
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

        power_fig = power(runs, title=f"site power: {label}")
        if power_fig is not None:
            written.append(_save(power_fig,
                                 plots / f"power-{_slug(trace)}-seed-{trace_seed}.png"))
        names = sorted({p.stem for d in runs.values() for p in (d / "series").glob("*.csv")}
                       - set(USAGE_SERIES) - set(OWN_SERIES) - {UNITS_STEM})
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
    """Draw one run's figures into ``run_dir/plots``: its Gantt chart, utilisation (or running
    leases) and queue length, the distributions of wait and bounded slowdown, its recorded
    series, and with a power model its power and node states."""
    run_dir = Path(run_dir)
    plots = run_dir / "plots"
    name = run_dir.resolve().name
    written = [_save(gantt(run_dir, max_leases=gantt_leases, max_hours=gantt_hours,
                           title=name), plots / "gantt.png")]
    runs = {name: run_dir}
    usage_fig = usage(runs, title=f"{name}", from_leases=True)
    if usage_fig is not None:
        written.append(_save(usage_fig, plots / "usage.png"))
    leases = read_leases(run_dir)
    written.append(_save(waits({name: [v for x in leases if (v := _float(x["wait"])) is not None]},
                               title=f"wait-time distribution: {name}"), plots / "waits.png"))
    written.append(_save(slowdowns({name: bounded_slowdowns(leases)},
                                   title=f"bounded-slowdown distribution: {name}"),
                         plots / "slowdowns.png"))
    power_fig = power(runs, title=f"site power: {name}")
    if power_fig is not None:
        written.append(_save(power_fig, plots / "power.png"))
    states_fig = node_states(run_dir, max_hours=gantt_hours,
                             title=f"node power states: {name}")
    if states_fig is not None:
        written.append(_save(states_fig, plots / "node-states.png"))
    names = sorted({p.stem for p in (run_dir / "series").glob("*.csv")}
                   - set(USAGE_SERIES) - set(OWN_SERIES) - {UNITS_STEM})
    for series_name in names:
        written.append(_save(series(series_name, runs, title=f"{series_name}: {name}"),
                             plots / f"series-{_slug(series_name)}.png"))
    return written
