"""Time series that policies and probes record during a run (written to ``series/``)."""

from __future__ import annotations

import csv
from pathlib import Path


class Metrics:
    """Named time series of ``(time, value)`` points: ``run.metrics.record("rc", now, 12.5)``."""

    def __init__(self) -> None:
        self.series: dict[str, tuple[list[float], list[float]]] = {}

    def record(self, name: str, time: float, value: float) -> None:
        times, values = self.series.setdefault(name, ([], []))
        if times and times[-1] == time:
            values[-1] = value   # one point per instant: the last word counts
        else:
            times.append(time)
            values.append(value)

    def write(self, directory: Path) -> list[Path]:
        """Write every series as ``directory/NAME.csv`` (columns ``time,value``)."""
        written = []
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
        return written
