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

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lease_manager.errors import LeaseManagerError
from lease_manager.experiments.gantt import blocks as _blocks
from lease_manager.experiments.gantt import gantt, read_leases
from lease_manager.experiments.gantt import number as _float
from lease_manager.experiments.plot_base import (
    DAY,
    HOUR,
    INSTALL_HINT,
    _load,
    daily,
    figure,
    read_series,
    require_matplotlib,
    series_axis_label,
    time_mean,
)
from lease_manager.experiments.plot_options import TIME_PLOTS
from lease_manager.experiments.power_plots import (
    STATE_COLOURS,
    most_switch_ons,
    node_states,
    power,
    read_node_states,
    read_power,
    states_in_order,
)
from lease_manager.experiments.usage_plots import (
    OWN_SERIES,
    UNITS_STEM,
    USAGE_SERIES,
    bounded_slowdowns,
    busy_nodes_from_leases,
    over_time,
    series,
    site_node_count,
    slowdowns,
    usage,
    usage_from_leases,
    waits,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lease_manager.experiments.results import Results

#: the drawing functions live in modules by family (:mod:`~lease_manager.experiments.plot_base`,
#: :mod:`~lease_manager.experiments.usage_plots`, :mod:`~lease_manager.experiments.power_plots`,
#: :mod:`~lease_manager.experiments.gantt`); their names stay importable from here
__all__ = ["DAY", "HOUR", "INSTALL_HINT", "MANIFEST", "OWN_SERIES", "STATE_COLOURS",
           "UNITS_STEM", "USAGE_SERIES", "_blocks", "_float", "_load", "bounded_slowdowns",
           "busy_nodes_from_leases", "daily", "figure", "gantt", "make_plots",
           "make_run_plots", "most_switch_ons", "node_states", "over_time", "power",
           "previous_plots", "read_leases", "read_node_states", "read_power", "read_series",
           "replace_previous", "require_matplotlib", "runs_at_one_seed", "series",
           "series_axis_label", "site_node_count", "slowdowns", "states_in_order",
           "time_mean", "usage", "usage_from_leases", "waits"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_")


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
        written += _trace_figures(results, done, directory, trace, seed, time_plot)
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


def _trace_figures(results: Results, done: Sequence[Mapping[str, Any]], directory: Path,
                   trace: str, seed: int | None, time_plot: str) -> list[Path]:
    """The figures of one trace of a sweep: usage, power and series at one seed, the wait and
    slowdown distributions over all seeds; returns the PNG paths written."""
    plots = directory / "plots"
    written: list[Path] = []
    one_seed = runs_at_one_seed(results, done, directory, trace, seed)
    if one_seed is None:
        return written
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
    return written
