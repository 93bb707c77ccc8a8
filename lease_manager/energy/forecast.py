"""Green production forecasts revised as time passes (``[power] green-forecast``).

A forecast file has a header line and ``issued,time,watts`` rows: the forecast issued at
``issued`` says the site will produce ``watts`` from ``time`` until that forecast's next time
(times in seconds on the run's clock). Rows are grouped by ``issued``, in increasing order, and
each issue's times increase. At any instant the forecast in force is the latest issued at or
before it (before the first issue, the first). Policies read it as ``ctx.power.forecast``;
the actual production stays ``[power] green-production``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from pathlib import Path

import numpy as np

from lease_manager.energy.series import MAX_TIME, StepSeries
from lease_manager.errors import InputError
from lease_manager.input_files import csv_rows, input_problem
from lease_manager.numbers import parse_float


class GreenForecast:
    """Forecasts of green production (watts), one :class:`StepSeries` per issue time."""

    def __init__(self, issues: list[tuple[float, StepSeries]]) -> None:
        if not issues:
            raise ValueError("a forecast needs at least one issue")
        self.issued = [t for t, _ in issues]
        self.series = [s for _, s in issues]

    def at(self, now: float) -> StepSeries:
        """The forecast in force at ``now``."""
        return self.series[max(bisect_right(self.issued, now) - 1, 0)]

    def next_issue(self, now: float) -> float:
        """The first issue time after ``now`` (inf: none)."""
        i = bisect_right(self.issued, now)
        return self.issued[i] if i < len(self.issued) else math.inf

    def scaled(self, factor: float) -> GreenForecast:
        """The same forecasts times ``factor``."""
        return GreenForecast([(t, StepSeries(s.times, s.values * factor))
                              for t, s in zip(self.issued, self.series)])


def read_forecast(path: str | Path, *, maximum: float) -> GreenForecast:
    """Read an ``issued,time,watts`` CSV file; raise :class:`InputError` naming the file, line
    and field of the first bad value."""
    path = Path(path)
    problem = input_problem(path)
    if problem:
        raise InputError(f"the forecast {problem}", file=str(path))
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"cannot read the forecast: {exc.strerror or exc}",
                         file=str(path)) from None
    rows = csv_rows(text.splitlines(),
                    lambda message, line: InputError(message, file=str(path), line=line))
    if next(rows, None) is None:
        raise InputError("empty file: expected a header and issued,time,watts rows",
                         file=str(path))
    issues: list[tuple[float, list[float], list[float]]] = []
    for number, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != 3:
            raise InputError(f"expected 3 fields (issued,time,watts), found {len(row)}",
                             file=str(path), line=number)
        issued = _number(row[0], path, number, "issued", MAX_TIME)
        t = _number(row[1], path, number, "time", MAX_TIME)
        watts = _number(row[2], path, number, "watts", maximum)
        if issues and issued < issues[-1][0]:
            raise InputError(f"{row[0].strip()} is before the previous row's issue time "
                             f"{issues[-1][0]:g}", file=str(path), line=number, field="issued")
        if not issues or issued > issues[-1][0]:
            issues.append((issued, [], []))
        times, values = issues[-1][1], issues[-1][2]
        if times and t <= times[-1]:
            raise InputError(f"{row[1].strip()} is not after the previous time {times[-1]:g} "
                             f"of the forecast issued at {issued:g}", file=str(path),
                             line=number, field="time")
        times.append(t)
        values.append(watts)
    if not issues:
        raise InputError("no rows: expected issued,time,watts rows after the header",
                         file=str(path))
    return GreenForecast([(i, StepSeries(np.array(ts), np.array(vs))) for i, ts, vs in issues])


def _number(text: str, path: Path, line: int, field: str, high: float) -> float:
    try:
        value = parse_float(text)
    except ValueError as exc:
        raise InputError(str(exc), file=str(path), line=line, field=field) from None
    if not math.isfinite(value) or not (0.0 <= value <= high):
        raise InputError(f"{text.strip()} is not in [0, {high:g}]", file=str(path), line=line,
                         field=field)
    return value
