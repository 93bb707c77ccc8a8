"""Time series that policies and probes record during a run (written to ``series/``)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

#: the file, beside the series, that gives their units and labels
UNITS_FILE = "units.csv"


class Metrics:
    """Named time series of ``(time, value)`` points: ``run.metrics.record("rc", now, 12.5)``."""

    def __init__(self) -> None:
        self.series: dict[str, tuple[list[float], list[float]]] = {}
        #: name -> (unit, what it counts or measures), from :meth:`describe`
        self.descriptions: dict[str, tuple[str, str]] = {}

    def describe(self, name: str, unit: str, label: str = "") -> None:
        """Say what series ``name`` measures, for plots and readers: its ``unit`` ("leases",
        "W", "" for a pure number) and a ``label`` for axes ("leases waiting"). Written to
        ``series/units.csv`` with the series."""
        self.descriptions[name] = (unit, label)

    def record(self, name: str, time: float, value: float) -> None:
        times, values = self.series.setdefault(name, ([], []))
        if times and times[-1] == time:
            values[-1] = value   # one point per instant: the last word counts
        else:
            times.append(time)
            values.append(value)

    def write(self, directory: Path) -> list[Path]:
        """Write every series as ``directory/NAME.csv`` (columns ``time,value``)."""
        written: list[Path] = []
        if not self.series:
            return written
        directory.mkdir(parents=True, exist_ok=True)
        for name, (times, values) in sorted(self.series.items()):
            path = directory / f"{name}.csv"
            with path.open("w", newline="") as fh:
                out = csv.writer(fh, lineterminator="\n")
                out.writerow(["time", "value"])
                out.writerows(zip(times, values))
            written.append(path)
        described = sorted(n for n in self.descriptions if n in self.series)
        if described:
            path = directory / UNITS_FILE
            with path.open("w", newline="") as fh:
                out = csv.writer(fh, lineterminator="\n")
                out.writerow(["series", "unit", "label"])
                out.writerows([n, *self.descriptions[n]] for n in described)
            written.append(path)
        return written


def read_units(directory: Path) -> dict[str, tuple[str, str]]:
    """``series/units.csv`` of a run as ``{series: (unit, label)}`` (empty without one)."""
    path = Path(directory) / UNITS_FILE
    if not path.is_file():
        return {}
    with path.open(newline="") as fh:
        return {row["series"]: (row["unit"], row["label"]) for row in csv.DictReader(fh)}


def read_series(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A series written to ``series/NAME.csv``: its times and values."""
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if data.size == 0:
        return np.zeros(0), np.zeros(0)
    return data[:, 0], data[:, 1]


def bin_means(times: np.ndarray, values: np.ndarray, width: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time-weighted means of a piecewise-constant series (each value holds until the next
    time) over bins of ``width``; also the cumulative integral at every point."""
    if len(times) < 2:
        return np.zeros(0), np.zeros(0), np.zeros(len(times))
    cum = np.concatenate([[0.0], np.cumsum(values[:-1] * np.diff(times))])
    edges = np.arange(times[0], times[-1] + width, width)
    at = np.interp(edges, times, cum)
    return edges[:-1] + width / 2, np.diff(at) / width, cum
