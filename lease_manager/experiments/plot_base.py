"""What every figure of :mod:`lease_manager.experiments.plots` is drawn with: an empty
figure without pyplot, recorded series as arrays, step lines, time-weighted and daily means."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lease_manager.errors import LeaseManagerError
from lease_manager.observers.metrics import read_units

if TYPE_CHECKING:
    from matplotlib.figure import Figure


HOUR = 3600.0


DAY = 24 * HOUR


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


def time_mean(times: np.ndarray, values: np.ndarray) -> float:
    """The time-weighted mean of a step function (``values[i]`` from ``times[i]`` to
    ``times[i + 1]``; the last value marks the end) over its span; nan when it spans no time."""
    span = times[-1] - times[0] if times.size else 0.0
    if span <= 0:
        return math.nan
    return float(np.sum(np.diff(times) * values[:-1]) / span)


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


def _mean_text(times: np.ndarray, values: np.ndarray, unit: str) -> str:
    return f"mean {time_mean(times, values):,.1f}{unit}"


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
