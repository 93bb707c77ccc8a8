"""The figures of ``report --plots`` as Plotly figures (plain JSON dicts) for ``report --html``.

The data come from the same functions as the PNG figures
(:mod:`lease_manager.experiments.plots`: :func:`~lease_manager.experiments.plots.usage_from_leases`,
:func:`~lease_manager.experiments.plots.busy_nodes_from_leases`,
:func:`~lease_manager.experiments.plots.bounded_slowdowns`,
:func:`~lease_manager.experiments.plots.read_power`...), so a page and the PNG files of one run
show the same numbers. Each function returns ``{"data": [...], "layout": {...}}`` (and a
``note`` for under the chart) or None when the run holds nothing to draw. Time runs in
hours, as on the PNG figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lease_manager.experiments import plots
from lease_manager.experiments.gantt import read_leases
from lease_manager.observers.accounting import SLOWDOWN_BOUND

HOUR = 3600.0
Figure = dict[str, Any]
#: Plotly's trace type for a line of this many points or more: WebGL (SVG is slow past it)
GL_POINTS = 20_000
FONT = {"family": "Helvetica, Arial, sans-serif", "size": 13}


def _list(values: np.ndarray | Sequence[float], digits: int = 5) -> list[float | None]:
    """Numbers for JSON, rounded to ``digits`` decimals (hours: to 0.04 s; the page is several
    times smaller than with every digit); nan and infinities as null (a gap)."""
    array = np.round(np.asarray(values, dtype=float), digits)
    return [float(v) if math.isfinite(v) else None for v in array]


def _line(x: np.ndarray, y: np.ndarray, name: str, *, step: bool = True,
          **extra: Any) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "type": "scattergl" if x.size >= GL_POINTS else "scatter", "mode": "lines",
        "x": _list(x), "y": _list(y, 6), "name": name,
        "line": {"shape": "hv" if step else "linear", "width": 1.4, **extra.pop("line", {})},
    }
    trace.update(extra)
    return trace


def layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    """A white layout with a grid, a legible font and the legend on top."""
    out: dict[str, Any] = {
        "title": {"text": title, "x": 0.01, "xanchor": "left", "yref": "container", "y": 1,
                  "yanchor": "top", "pad": {"t": 10}},
        "font": FONT, "height": 440, "margin": {"l": 70, "r": 20, "t": 96, "b": 60},
        "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff",
        "xaxis": {"title": {"text": x_title}, "gridcolor": "#e5e5e5", "zeroline": False},
        "yaxis": {"title": {"text": y_title}, "gridcolor": "#e5e5e5", "zeroline": False,
                  "rangemode": "tozero"},
        "legend": {"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom",
                   "font": {"size": 12}},
        "hovermode": "closest", "showlegend": True,
    }
    out.update(extra)
    return out


def _mean_text(times: np.ndarray, values: np.ndarray, unit: str) -> str:
    return f"mean {plots.time_mean(times, values):,.1f}{unit}"


def usage(runs: Mapping[str, Path], *, title: str) -> Figure | None:
    """Utilisation (%) above and leases waiting below, one line per profile: the ``usage``
    probe's series, else rebuilt from ``leases.csv`` as :func:`plots.usage` does (the share
    of the site's nodes running a lease, :func:`plots.busy_nodes_from_leases`)."""
    cpu = plots._load(runs, "utilization")
    queue = plots._load(runs, "queue_length")
    nodes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    sizes: list[str] = []
    for profile, run_dir in runs.items():
        if (profile in cpu and profile in queue) or not (Path(run_dir) / "leases.csv").is_file():
            continue
        rows = read_leases(run_dir)
        if profile not in queue:
            queue[profile] = plots.usage_from_leases(rows)["queue_length"]
        if profile not in cpu:
            total, exact = plots.site_node_count(run_dir, rows)
            times, busy = plots.busy_nodes_from_leases(rows)
            nodes[profile] = (times, busy / total)
            sizes.append(f"{total:,}" if exact else f"at least {total:,}")
    if not cpu and not nodes and not queue:
        return None
    label = "utilisation (% of CPU)"
    if nodes:
        label = "utilisation (% of CPU or of nodes)" if cpu else "utilisation (% of nodes busy)"
    data = []
    colours = {p: i for i, p in enumerate(runs)}
    for source, suffix in ((cpu, ""), (nodes, " (nodes busy)" if cpu else "")):
        for profile, (times, values) in source.items():
            data.append(_line(times / HOUR, values * 100, f"{profile}{suffix}: "
                              f"{_mean_text(times, values * 100, ' %')}",
                              legendgroup=profile,
                              line={"color": _colour(colours[profile])}))
    for profile, (times, values) in queue.items():
        data.append(_line(times / HOUR, values, f"{profile}: waiting, "
                          f"{_mean_text(times, values, '')}", legendgroup=profile,
                          xaxis="x2", yaxis="y2",
                          line={"color": _colour(colours[profile]), "dash": "dot"}))
    out = layout(title, "", label, height=560)
    out["xaxis"].update({"matches": "x2", "showticklabels": False})
    out["yaxis"].update({"domain": [0.55, 1.0], "range": [0, 102]})
    out["xaxis2"] = {"title": {"text": "time (hours)"}, "gridcolor": "#e5e5e5",
                     "anchor": "y2", "zeroline": False}
    out["yaxis2"] = {"title": {"text": "leases waiting"}, "gridcolor": "#e5e5e5",
                     "domain": [0.0, 0.45], "anchor": "x2", "rangemode": "tozero",
                     "zeroline": False}
    figure: Figure = {"data": data, "layout": out}
    if nodes:
        figure["note"] = (f"utilisation rebuilt from leases.csv: the share of the site's "
                          f"{', '.join(dict.fromkeys(sizes))} nodes that run a lease; for the "
                          "CPU in use, set '[accounting] probes = usage'")
    return figure


#: Plotly's default colour sequence, so that a profile has one colour in every figure
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


def _colour(i: int) -> str:
    return COLOURS[i % len(COLOURS)]


def _cdf_trace(values: Sequence[float] | np.ndarray, scale: float, name: str, colour: str,
               floor: float) -> dict[str, Any] | None:
    """The empirical CDF of ``values / scale`` as a step line (one point a distinct value),
    values below ``floor`` drawn at ``floor`` (a logarithmic axis has no zero)."""
    data = np.asarray(values, dtype=float) / scale
    if data.size == 0:
        return None
    distinct, counts = np.unique(data, return_counts=True)
    frac = np.cumsum(counts) / data.size
    x = np.concatenate([[max(distinct[0], floor)], np.maximum(distinct, floor)])
    y = np.concatenate([[0.0], frac])
    return _line(x, y, name, line={"color": colour},
                 hovertemplate="%{x:.4g}: %{y:.1%} of leases<extra>" + name + "</extra>")


def waits(waits_by_profile: Mapping[str, Sequence[float]], *, title: str) -> Figure:
    """The cumulative distribution of lease waits (hours, logarithmic axis; waits under a
    second drawn at one second), one line per profile with its mean and share without
    wait, as :func:`plots.waits`."""
    floor = 1.0 / HOUR
    data = []
    for i, (profile, values) in enumerate(waits_by_profile.items()):
        array = np.asarray(values, dtype=float)
        if array.size == 0:
            continue
        name = (f"{profile} (mean {array.mean() / HOUR:.2f} h; "
                f"{np.mean(array <= 0):.0%} without wait)")
        trace = _cdf_trace(array, HOUR, name, _colour(i), floor)
        if trace is not None:
            data.append(trace)
    out = layout(title, "wait (hours, logarithmic; waits under 1 s drawn at 1 s)",
                 "fraction of leases waiting at most this long")
    out["xaxis"]["type"] = "log"
    out["yaxis"].update({"range": [0, 1.02], "rangemode": "normal"})
    return {"data": data, "layout": out}


def slowdowns(slowdowns_by_profile: Mapping[str, Sequence[float]], *, title: str) -> Figure:
    """The cumulative distribution of the bounded slowdowns of finished leases, one line per
    profile (logarithmic axis from 1), as :func:`plots.slowdowns`."""
    data = []
    for i, (profile, values) in enumerate(slowdowns_by_profile.items()):
        array = np.asarray(values, dtype=float)
        if array.size == 0:
            continue
        name = f"{profile} (mean {array.mean():.2f}; {np.mean(array <= 1):.0%} not slowed)"
        trace = _cdf_trace(array, 1.0, name, _colour(i), 1.0)
        if trace is not None:
            data.append(trace)
    out = layout(title, f"bounded slowdown: max(1, (wait + run) / max(run, "
                        f"{SLOWDOWN_BOUND:g} s)), logarithmic",
                 "fraction of finished leases at most this slowed")
    out["xaxis"]["type"] = "log"
    out["yaxis"].update({"range": [0, 1.02], "rangemode": "normal"})
    return {"data": data, "layout": out}


def power(runs: Mapping[str, Path], *, title: str) -> Figure | None:
    """The site's total power (kW) over time, one line per profile with its green production
    and power cap (``series/power.csv``, :func:`plots.read_power`); None without a power
    model."""
    profiles = {p: d for p, run in runs.items() if (d := plots.read_power(run)) is not None}
    if not profiles:
        return None
    traces = []
    for i, (profile, data) in enumerate(profiles.items()):
        hours, kw = data["time"] / HOUR, data["total_watts"] / 1000
        colour = _colour(i)
        traces.append(_line(hours, kw, f"{profile}: total power, mean "
                            f"{plots.time_mean(data['time'], kw):,.1f} kW, highest "
                            f"{kw.max():,.1f} kW", legendgroup=profile, line={"color": colour}))
        if (data["green_watts"] > 0).any():
            traces.append(_line(hours, data["green_watts"] / 1000,
                                f"{profile}: green production", legendgroup=profile,
                                line={"color": "#009e73", "dash": "dot"}))
        if not np.isnan(data["cap_watts"]).all():
            traces.append(_line(hours, data["cap_watts"] / 1000, f"{profile}: power cap",
                                legendgroup=profile, line={"color": "#000000", "dash": "dash"}))
    return {"data": traces, "layout": layout(title, "time (hours)", "power (kW)")}


def node_states(run_dir: Path, *, title: str,
                window: tuple[float, float] | None = None) -> Figure | None:
    """Every node's power state over time (``node_states.csv``), one filled path a state in
    the colours of :data:`plots.STATE_COLOURS`, as :func:`plots.node_states` (``window``: only
    the hours (from, to)); None without the file."""
    read = plots.read_node_states(run_dir)
    if read is None:
        return None
    rows, nodes = read
    low, high = window if window is not None else (-math.inf, math.inf)
    by_state: dict[str, list[tuple[float, float, int]]] = {}
    for r in rows:
        start, end, n = float(r["start"]) / HOUR, float(r["end"]) / HOUR, int(r["node"])
        if end <= low or start >= high:
            continue
        by_state.setdefault(r["state"], []).append(
            (round(max(start, low), 5), round(min(end, high), 5), n))
    order = plots.states_in_order(by_state)
    # "rects" [[from, to, node], ...]: report.js makes them the trace's x and y (a closed
    # rectangle a state interval, 0.8 of a row high), a quarter of the page's size
    data = [{"type": "scatter", "mode": "none", "fill": "toself", "rects": by_state[s],
             "name": s, "hoverinfo": "skip",
             "fillcolor": plots.STATE_COLOURS.get(s, "#5b8bd0")} for s in order]
    out = layout(title, "time (hours)", "node",
                 height=min(900, max(360, 160 + 8 * nodes)))
    out["yaxis"].update({"range": [nodes - 0.5, -0.5], "rangemode": "normal"})
    return {"data": data, "layout": out}


def series(name: str, runs: Mapping[str, Path], *, title: str) -> Figure:
    """Series ``name`` over time, one line per profile, labelled with its unit
    (:func:`plots.series_axis_label`)."""
    loaded = plots._load(runs, name)
    colours = {p: i for i, p in enumerate(runs)}
    data = [_line(t / HOUR, v, f"{p}: {_mean_text(t, v, '')}", line={"color": _colour(colours[p])})
            for p, (t, v) in loaded.items()]
    return {"data": data,
            "layout": layout(title, "time (hours)", plots.series_axis_label(name, runs))}


def series_names(runs: Mapping[str, Path]) -> list[str]:
    """The series other than those drawn by :func:`usage` and :func:`power`, as the PNG
    report picks them."""
    return sorted({p.stem for d in runs.values() for p in (Path(d) / "series").glob("*.csv")}
                  - set(plots.USAGE_SERIES) - set(plots.OWN_SERIES) - {plots.UNITS_STEM})


def comparison(table: Mapping[str, Mapping[str, Any]], metrics: Sequence[str], *,
               title: str) -> Figure:
    """A bar a profile for each metric (its mean over the seeds, the standard deviation as an
    error bar), one small chart a metric: ``table`` is ``{profile: {metric: Stat | None}}``."""
    columns = 2 if len(metrics) > 1 else 1
    rows = math.ceil(len(metrics) / columns)
    gap_x, gap_y = 0.12, 0.5 / max(rows, 1) * 0.4
    width = (1 - gap_x * (columns - 1)) / columns
    height = (1 - gap_y * (rows - 1)) / max(rows, 1)
    data: list[dict[str, Any]] = []
    out = layout(title, "", "", height=max(300, 260 * rows), showlegend=False)
    out.pop("xaxis")
    out.pop("yaxis")
    annotations = []
    profiles = list(table)
    for k, metric in enumerate(metrics):
        row, col = divmod(k, columns)
        axis = "" if k == 0 else str(k + 1)
        x0 = col * (width + gap_x)
        y1 = 1 - row * (height + gap_y)
        stats = [table[p].get(metric) for p in profiles]
        data.append({
            "type": "bar", "x": profiles, "name": metric,
            "y": [s.mean if s is not None else None for s in stats],
            "error_y": {"type": "data", "visible": True,
                        "array": [s.std if s is not None else None for s in stats]},
            "marker": {"color": [_colour(i) for i in range(len(profiles))]},
            "xaxis": f"x{axis}", "yaxis": f"y{axis}",
            "hovertemplate": "%{x}: %{y:.4g} ± %{error_y.array:.3g}<extra>" + metric
                             + "</extra>"})
        out[f"xaxis{axis}"] = {"domain": [x0, x0 + width], "anchor": f"y{axis}",
                               "automargin": True}
        out[f"yaxis{axis}"] = {"domain": [y1 - height, y1], "anchor": f"x{axis}",
                               "gridcolor": "#e5e5e5", "rangemode": "tozero"}
        annotations.append({"text": f"<b>{metric}</b>", "xref": "paper", "yref": "paper",
                            "x": x0, "y": y1, "xanchor": "left", "yanchor": "bottom",
                            "showarrow": False})
    out["annotations"] = annotations
    return {"data": data, "layout": out}
