"""Step time series read from CSV files: green production, electricity prices, carbon rates.

A file has a header line and then ``time,value`` rows, times in seconds on the run's clock,
strictly increasing. Each value holds from its time until the next row's; the first value also
holds before the first row, and the last one for ever.
"""

from __future__ import annotations

import math
from pathlib import Path

import attrs
import numpy as np

from lease_manager.errors import InputError
from lease_manager.input_files import csv_rows, input_problem
from lease_manager.numbers import parse_float

#: the largest value a series may hold (watts, $/kWh or kg/kWh)
MAX_VALUE = 1e12
#: the latest time a series may name, in seconds (about 31,700 years)
MAX_TIME = 1e12


@attrs.frozen(eq=False)
class StepSeries:
    """Values over time, each holding until the next time."""

    times: np.ndarray
    values: np.ndarray

    @classmethod
    def constant(cls, value: float) -> StepSeries:
        return cls(np.array([0.0]), np.array([float(value)]))

    def at(self, t: np.ndarray | float) -> np.ndarray:
        """The value at each of ``t``."""
        i = np.searchsorted(self.times, t, side="right") - 1
        return self.values[np.maximum(i, 0)]

    def breakpoints(self, start: float, end: float) -> np.ndarray:
        """The times in ``(start, end)`` at which the value changes."""
        return self.times[(self.times > start) & (self.times < end)]


def read_step_series(path: str | Path, what: str, *, maximum: float = MAX_VALUE
                     ) -> StepSeries:
    """Read a ``time,value`` CSV file; raise :class:`InputError` naming the file, line and
    field of the first bad value (``what`` names the value: 'watts', 'price'...)."""
    path = Path(path)
    problem = input_problem(path)
    if problem:
        raise InputError(f"the {what} series {problem}", file=str(path))
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"cannot read the {what} series: {exc.strerror or exc}",
                         file=str(path)) from None
    times: list[float] = []
    values: list[float] = []
    rows = csv_rows(text.splitlines(),
                    lambda message, line: InputError(message, file=str(path), line=line))
    header = next(rows, None)
    if header is None:
        raise InputError(f"empty file: expected a header and time,{what} rows", file=str(path))
    for number, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != 2:
            raise InputError(f"expected 2 fields (time,{what}), found {len(row)}",
                             file=str(path), line=number)
        t = _number(row[0], path, number, "time", 0.0, MAX_TIME)
        v = _number(row[1], path, number, what, 0.0, maximum)
        if times and t <= times[-1]:
            raise InputError(f"{row[0].strip()} is not after the previous row's time "
                             f"{times[-1]:g}", file=str(path), line=number, field="time")
        times.append(t)
        values.append(v)
    if not times:
        raise InputError(f"no rows: expected time,{what} rows after the header", file=str(path))
    return StepSeries(np.array(times), np.array(values))


def _number(text: str, path: Path, line: int, field: str, low: float, high: float) -> float:
    try:
        value = parse_float(text)
    except ValueError as exc:
        raise InputError(str(exc), file=str(path), line=line, field=field) from None
    if not math.isfinite(value) or not (low <= value <= high):
        raise InputError(f"{text.strip()} is not in [{low:g}, {high:g}]", file=str(path),
                         line=line, field=field)
    return value
